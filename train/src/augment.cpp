#include "clbo/train/augment.hpp"

#include <stdexcept>
#include <string>

#include "clbo/core/philox.hpp"

namespace clbo::train {

namespace {
// A stream of its own: no other Philox user in clbo has this word in its counter (exactly so
// for steps below 2^32, where the step's high word XORed into it is 0).
constexpr uint32_t kShiftStream = 0x73686674u;  // "shft"
}  // namespace

PixelShift random_pixel_shift(uint64_t seed, uint64_t step, uint64_t batch_position,
                              int max_shift) {
  if (max_shift < 0 || max_shift > kMaxPixelShift)
    throw std::invalid_argument("random_pixel_shift: max_shift " + std::to_string(max_shift) +
                                " is outside 0.." + std::to_string(kMaxPixelShift));
  if (max_shift == 0) return {};
  const Philox4x32 r = philox4x32_10(
      static_cast<uint32_t>(batch_position), static_cast<uint32_t>(batch_position >> 32),
      static_cast<uint32_t>(step), kShiftStream ^ static_cast<uint32_t>(step >> 32),
      static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  // 2·8 + 1 = 17 values: the modulo bias is below 17/2^32, far below anything measured.
  const auto span = static_cast<uint32_t>(2 * max_shift + 1);
  return {static_cast<int>(r.v[0] % span) - max_shift, static_cast<int>(r.v[1] % span) - max_shift};
}

void shift_image(const float* in, size_t rows, size_t cols, PixelShift s, float fill, float* out) {
  const auto R = static_cast<long>(rows), C = static_cast<long>(cols);
  for (long i = 0; i < R; ++i) {
    const long si = i - s.dy;
    for (long j = 0; j < C; ++j) {
      const long sj = j - s.dx;
      out[i * C + j] = (si >= 0 && si < R && sj >= 0 && sj < C) ? in[si * C + sj] : fill;
    }
  }
}

}  // namespace clbo::train
