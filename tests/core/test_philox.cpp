#include <gtest/gtest.h>

#include "clbo/core/philox.hpp"

namespace {

// Random123's known-answer vectors for philox4x32 with 10 rounds (kat_vectors).
struct Kat {
  uint32_t ctr[4], key[2], out[4];
};

TEST(Philox, KnownAnswerVectors) {
  const Kat kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const auto& k : kats) {
    const auto r = clbo::philox4x32_10(k.ctr[0], k.ctr[1], k.ctr[2], k.ctr[3], k.key[0], k.key[1]);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(r.v[i], k.out[i]) << "word " << i;
  }
}

TEST(Philox, ThresholdEdges) {
  EXPECT_EQ(clbo::mask_threshold(0.0), 0u);
  EXPECT_EQ(clbo::mask_threshold(1.0), uint64_t{1} << 32);
  EXPECT_EQ(clbo::mask_threshold(0.5), uint64_t{1} << 31);
  EXPECT_EQ(clbo::mask_threshold(0.1), 429496729u);  // floor(0.1 * 2^32)
}

}  // namespace
