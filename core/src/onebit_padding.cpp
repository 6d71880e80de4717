#include "clbo/core/onebit_padding.hpp"

#include <numeric>
#include <stdexcept>
#include <string>

namespace clbo {

size_t onebit_padded_size(size_t n, int p) {
  if (p < 1)
    throw std::invalid_argument("onebit_padded_size: p must be >= 1, got " + std::to_string(p));
  const size_t pp = static_cast<size_t>(p);
  const size_t unit = pp * std::lcm(pp, size_t{8});
  return (n + unit - 1) / unit * unit;
}

}  // namespace clbo
