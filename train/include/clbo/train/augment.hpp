// Random-shift augmentation of the training images (experiment field "random_shift").
//
// Contract: an image is rows x cols floats, row-major. shift_image writes out[i][j] =
// in[i - dy][j - dx] where that pixel exists and `fill` elsewhere, so (dx, dy) = (1, 0) moves
// the picture one pixel right and fills column 0, and dy = 1 moves it one row down. `in` and `out`
// must not overlap. The offset of one example is a pure function of (seed, step, position in the
// global batch), drawn from Philox4x32-10, so it does not depend on the thread count, the process
// that computes the worker or the CPU (docs/convergence.md, "Experiment files").
#pragma once
#include <cstddef>
#include <cstdint>

namespace clbo::train {

struct PixelShift {
  int dx = 0, dy = 0;
};

constexpr int kMaxPixelShift = 8;

// Uniform over [-max_shift, max_shift]^2; max_shift outside 0..kMaxPixelShift is an
// std::invalid_argument (the experiment reader refuses it first, by name).
PixelShift random_pixel_shift(uint64_t seed, uint64_t step, uint64_t batch_position, int max_shift);

void shift_image(const float* in, size_t rows, size_t cols, PixelShift s, float fill, float* out);

}  // namespace clbo::train
