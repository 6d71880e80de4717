// Optimized top-k: a radix-style selection. A histogram of the top bits of |x| finds the
// bin holding the k-th largest magnitude; everything in higher bins is selected outright,
// and only the elements of that one bin go through nth_element, on 64-bit keys that order
// by descending |x| and then ascending index — the reference's tie rule, so the selected set
// is identical. For non-negative floats (|x|, NaN excluded) the IEEE bit pattern orders like
// the value. A final pass in index order emits the selection already sorted.
#include <algorithm>
#include <bit>
#include <stdexcept>
#include <string>
#include <vector>

#include "clbo/kernels/topk.hpp"

namespace clbo::kernels {
namespace {

uint32_t magnitude_bits(float v) {
  return std::bit_cast<uint32_t>(v) & 0x7FFFFFFFu;
}

// Smaller key = larger |x|, then lower index.
uint64_t selection_key(uint32_t mag, size_t i) {
  return (uint64_t{~mag} << 32) | i;
}

}  // namespace

void topk_select(const float* x, size_t n, size_t k, uint32_t* idx, float* val) {
  if (k > n)
    throw std::invalid_argument("topk_select: k = " + std::to_string(k) +
                                " exceeds n = " + std::to_string(n));
  if (n > 0xFFFFFFFFull)
    throw std::invalid_argument("topk_select: n = " + std::to_string(n) +
                                " does not fit 32-bit indices");
  if (k == 0) return;
  constexpr int kShift = 16;  // bins = top 15 bits of the 31-bit magnitude (exponent + 7)
  std::vector<size_t> hist(size_t{1} << (31 - kShift), 0);
  for (size_t i = 0; i < n; ++i) ++hist[magnitude_bits(x[i]) >> kShift];
  // The boundary bin: fewer than k elements lie above it, at least k at or above it.
  size_t bin = hist.size() - 1, above = 0;
  while (above + hist[bin] < k) above += hist[bin--];
  const size_t from_bin = k - above;  // how many the boundary bin contributes
  std::vector<uint64_t> candidates;
  candidates.reserve(hist[bin]);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t mag = magnitude_bits(x[i]);
    if ((mag >> kShift) == bin) candidates.push_back(selection_key(mag, i));
  }
  auto last = candidates.begin() + static_cast<std::ptrdiff_t>(from_bin - 1);
  std::nth_element(candidates.begin(), last, candidates.end());
  const uint64_t last_key = *last;  // keys are unique, so exactly from_bin keys are <= it
  size_t j = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t mag = magnitude_bits(x[i]);
    const size_t b = mag >> kShift;
    if (b > bin || (b == bin && selection_key(mag, i) <= last_key)) {
      idx[j] = static_cast<uint32_t>(i);
      val[j] = x[i];
      ++j;
    }
  }
}

}  // namespace clbo::kernels
