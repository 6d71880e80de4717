#include <gtest/gtest.h>

#include "clbo/core/error.hpp"
#include "clbo/core/layout.hpp"

#include <nlohmann/json.hpp>

namespace {

using nlohmann::json;

TEST(Layout, FromJsonComputesOffsets) {
  json j = {
      {"tensors", {{{"name", "w"}, {"size", 6}, {"shape", {2, 3}}}, {{"name", "b"}, {"size", 3}}}}};
  auto l = clbo::ParamLayout::from_json(j, "layout.json");
  ASSERT_EQ(l.num_tensors(), 2u);
  EXPECT_EQ(l[1].offset, 6u);
  EXPECT_EQ(l.total(), 9u);
  EXPECT_EQ(l.ndim(0), 2u);
  EXPECT_EQ(l.ndim(1), 1u);
  EXPECT_NO_THROW(l.require_total(9, "x"));
  EXPECT_THROW(l.require_total(10, "x"), clbo::InputError);
}

TEST(Layout, ShapeSizeMismatchIsAnError) {
  json j = {{"tensors", {{{"name", "w"}, {"size", 5}, {"shape", {2, 3}}}}}};
  EXPECT_THROW(clbo::ParamLayout::from_json(j, "layout.json"), clbo::InputError);
}

TEST(Layout, UnknownFieldIsAnError) {
  json j = {{"tensors", {{{"name", "w"}, {"sise", 5}}}}};
  try {
    clbo::ParamLayout::from_json(j, "layout.json");
    FAIL();
  } catch (const clbo::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'size'"), std::string::npos) << e.what();
  }
}

TEST(Layout, RoundTripsThroughJson) {
  auto l = clbo::ParamLayout::from_sizes({3, 5, 7});
  auto back = clbo::ParamLayout::from_json(l.to_json(), "mem");
  ASSERT_EQ(back.num_tensors(), 3u);
  EXPECT_EQ(back[2].offset, 8u);
}

}  // namespace
