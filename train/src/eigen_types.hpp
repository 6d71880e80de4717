// Eigen views over the flat buffers the models work on, and the matrix products (private to
// clbo_train). Eigen stores and maps the matrices; every product goes through kernels::gemm,
// whose bits do not depend on the CPU (Eigen's own GEMM picks its blocking from the cache
// sizes it finds at run time and its kernel from the build flags).
#pragma once
#include <Eigen/Core>
#include <algorithm>

#include "clbo/kernels/gemm.hpp"

namespace clbo::train {

template <class T>
using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using MatMap = Eigen::Map<Mat<T>>;
template <class T>
using ConstMatMap = Eigen::Map<const Mat<T>>;
template <class T>
using RowVecMap = Eigen::Map<Eigen::Matrix<T, 1, Eigen::Dynamic>>;
template <class T>
using ConstRowVecMap = Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>>;

}  // namespace clbo::train

namespace clbo::train {

// c (m×n) = a·bᵀ with a m×k and b n×k, all row-major and contiguous.
template <class T>
void mul_abt(const T* a, const T* b, size_t m, size_t n, size_t k, T* c) {
  kernels::gemm(kernels::Op::kN, kernels::Op::kT, m, n, k, a, k, b, k, c, n);
}
// c (m×n) = aᵀ·b with a k×m and b k×n.
template <class T>
void mul_atb(const T* a, const T* b, size_t m, size_t n, size_t k, T* c) {
  kernels::gemm(kernels::Op::kT, kernels::Op::kN, m, n, k, a, m, b, n, c, n);
}
// c (m×n) = a·b with a m×k and b k×n.
template <class T>
void mul_ab(const T* a, const T* b, size_t m, size_t n, size_t k, T* c) {
  kernels::gemm(kernels::Op::kN, kernels::Op::kN, m, n, k, a, k, b, n, c, n);
}

// out[c] = Σ_b m(b, c), summed over b in increasing order. Eigen's colwise().sum() picks its
// summation order from the destination's address alignment, which would make gradients
// depend on where a buffer happens to live; this loop does not.
template <class T>
void column_sums(const Mat<T>& m, T* out) {
  const Eigen::Index rows = m.rows(), cols = m.cols();
  std::fill(out, out + cols, T(0));
  for (Eigen::Index b = 0; b < rows; ++b) {
    const T* row = m.data() + b * cols;
    for (Eigen::Index c = 0; c < cols; ++c) out[c] += row[c];
  }
}

}  // namespace clbo::train
