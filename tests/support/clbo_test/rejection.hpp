// What a test asks of a call that must reject its input: the InputError it throws. A call
// that accepts the input is a test failure, reported where the test asked, not an exception
// that would end the test before its other checks.
#pragma once
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "clbo/core/error.hpp"

namespace clbo::test {

// The InputError `call()` throws, or nullopt (and a test failure) when it throws none.
template <class F>
std::optional<InputError> rejection(F&& call) {
  try {
    std::forward<F>(call)();
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << "the call accepted its input: no InputError";
  return std::nullopt;
}

// The message of the InputError `call()` throws ("" and a test failure when it throws none).
template <class F>
std::string rejection_message(F&& call) {
  const std::optional<InputError> e = rejection(std::forward<F>(call));
  return e ? e->what() : "";
}

inline bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

}  // namespace clbo::test
