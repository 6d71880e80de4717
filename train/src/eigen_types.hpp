// Eigen views over the flat buffers the models work on (private to clbo_train).
#pragma once
#include <Eigen/Core>
#include <algorithm>

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
