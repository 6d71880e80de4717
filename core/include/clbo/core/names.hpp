// Enum <-> string tables. Each enum that appears in a config file or a result has exactly one
// NameTable, declared next to the enum in the module that owns it; printing (`name`) and
// parsing (`ConfigReader::choice`, `find`) both go through it, so a spelling is written once
// and an unknown one gets the same "one of ...; did you mean" error everywhere.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace clbo {

template <class E>
struct Named {
  E value;
  const char* name;
};

template <class E, size_t N>
struct NameTable {
  std::array<Named<E>, N> entries;

  // The spelling of `v`; "?" for a value the table lacks (a table is complete by
  // construction, so this shows up only for a corrupted enum value).
  constexpr const char* name(E v) const {
    for (const auto& e : entries)
      if (e.value == v) return e.name;
    return "?";
  }
  // The value spelled `s` exactly (case matters, as in the configs and results).
  constexpr std::optional<E> find(std::string_view s) const {
    for (const auto& e : entries)
      if (s == e.name) return e.value;
    return std::nullopt;
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : entries) out.emplace_back(e.name);
    return out;
  }
};

// `constexpr auto kNames = name_table<Algo>({{Algo::kRing, "ring"}, ...});`
template <class E, size_t N>
constexpr NameTable<E, N> name_table(const Named<E> (&entries)[N]) {
  NameTable<E, N> t{};
  for (size_t i = 0; i < N; ++i) t.entries[i] = entries[i];
  return t;
}

}  // namespace clbo
