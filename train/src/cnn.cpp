// Small CNN: conv(k1) → ReLU → maxpool2 → conv(k2) → ReLU → maxpool2 → FC, NHWC activations.
// Convolutions run as im2col + one kernels::gemm over the whole batch; the column index of the
// unfolded input is (c·k + ky)·k + kx, matching PyTorch's weight layout [out, in, k, k].
#include <fmt/format.h>

#include "clbo/core/error.hpp"
#include "clbo/train/model.hpp"
#include "eigen_types.hpp"

namespace clbo::train {

namespace {

struct Plane {
  size_t batch, h, w, c;
};

// cols: (batch·h·w) x (c·k·k), zero where the "same"-padded window leaves the image.
template <class T>
void im2col(const T* in, const Plane& s, size_t k, T* cols) {
  const long pad = static_cast<long>(k / 2);
  const size_t width = s.c * k * k;
  for (size_t b = 0; b < s.batch; ++b)
    for (size_t y = 0; y < s.h; ++y)
      for (size_t x = 0; x < s.w; ++x) {
        T* row = cols + ((b * s.h + y) * s.w + x) * width;
        for (size_t c = 0; c < s.c; ++c)
          for (size_t ky = 0; ky < k; ++ky) {
            const long iy = static_cast<long>(y + ky) - pad;
            for (size_t kx = 0; kx < k; ++kx) {
              const long ix = static_cast<long>(x + kx) - pad;
              const bool inside =
                  iy >= 0 && iy < static_cast<long>(s.h) && ix >= 0 && ix < static_cast<long>(s.w);
              row[(c * k + ky) * k + kx] =
                  inside
                      ? in[((b * s.h + static_cast<size_t>(iy)) * s.w + static_cast<size_t>(ix)) *
                               s.c +
                           c]
                      : T(0);
            }
          }
      }
}

// The adjoint of im2col: din (zeroed here) accumulates every column entry it fed.
template <class T>
void col2im_add(const T* cols, const Plane& s, size_t k, T* din) {
  const long pad = static_cast<long>(k / 2);
  const size_t width = s.c * k * k;
  std::fill(din, din + s.batch * s.h * s.w * s.c, T(0));
  for (size_t b = 0; b < s.batch; ++b)
    for (size_t y = 0; y < s.h; ++y)
      for (size_t x = 0; x < s.w; ++x) {
        const T* row = cols + ((b * s.h + y) * s.w + x) * width;
        for (size_t c = 0; c < s.c; ++c)
          for (size_t ky = 0; ky < k; ++ky) {
            const long iy = static_cast<long>(y + ky) - pad;
            if (iy < 0 || iy >= static_cast<long>(s.h)) continue;
            for (size_t kx = 0; kx < k; ++kx) {
              const long ix = static_cast<long>(x + kx) - pad;
              if (ix < 0 || ix >= static_cast<long>(s.w)) continue;
              din[((b * s.h + static_cast<size_t>(iy)) * s.w + static_cast<size_t>(ix)) * s.c +
                  c] += row[(c * k + ky) * k + kx];
            }
          }
      }
}

// 2x2 max pooling, stride 2; argmax[j] is the flat input index of output j (first maximum
// in window order wins, so ties are deterministic).
template <class T>
void maxpool2(const T* in, const Plane& s, T* out, uint32_t* argmax) {
  const size_t oh = s.h / 2, ow = s.w / 2;
  for (size_t b = 0; b < s.batch; ++b)
    for (size_t y = 0; y < oh; ++y)
      for (size_t x = 0; x < ow; ++x)
        for (size_t c = 0; c < s.c; ++c) {
          size_t best = ((b * s.h + 2 * y) * s.w + 2 * x) * s.c + c;
          for (size_t dy = 0; dy < 2; ++dy)
            for (size_t dx = 0; dx < 2; ++dx) {
              const size_t i = ((b * s.h + 2 * y + dy) * s.w + 2 * x + dx) * s.c + c;
              if (in[i] > in[best]) best = i;
            }
          const size_t o = ((b * oh + y) * ow + x) * s.c + c;
          out[o] = in[best];
          argmax[o] = static_cast<uint32_t>(best);
        }
}

template <class T>
class Cnn final : public Model<T> {
 public:
  explicit Cnn(const CnnShape& s) : s_(s) {
    if (s.height % 4 || s.width % 4 || s.height == 0 || s.width == 0)
      throw Error(fmt::format("CNN input {}x{}: height and width must be positive multiples of 4",
                              s.height, s.width));
    if (s.conv1_kernel % 2 == 0 || s.conv2_kernel % 2 == 0)
      throw Error("CNN kernels must be odd (\"same\" padding)");
    auto& L = this->layout_;
    const auto i64 = [](size_t v) { return static_cast<int64_t>(v); };
    L.add("conv1.weight", s.conv1_channels * s.in_channels * s.conv1_kernel * s.conv1_kernel,
          {i64(s.conv1_channels), i64(s.in_channels), i64(s.conv1_kernel), i64(s.conv1_kernel)});
    L.add("conv1.bias", s.conv1_channels, {i64(s.conv1_channels)});
    L.add("conv2.weight", s.conv2_channels * s.conv1_channels * s.conv2_kernel * s.conv2_kernel,
          {i64(s.conv2_channels), i64(s.conv1_channels), i64(s.conv2_kernel), i64(s.conv2_kernel)});
    L.add("conv2.bias", s.conv2_channels, {i64(s.conv2_channels)});
    L.add("fc.weight", s.classes * fc_inputs(), {i64(s.classes), i64(fc_inputs())});
    L.add("fc.bias", s.classes, {i64(s.classes)});
    this->fan_in_ = {s.in_channels * s.conv1_kernel * s.conv1_kernel,
                     0,
                     s.conv1_channels * s.conv2_kernel * s.conv2_kernel,
                     0,
                     fc_inputs(),
                     0};
  }
  std::string name() const override { return "cnn"; }
  size_t input_size() const override { return s_.height * s_.width * s_.in_channels; }
  size_t num_classes() const override { return s_.classes; }

  void forward(const T* params, const T* x, size_t batch, T* logits) const override {
    Activations& a = scratch().act;
    run_forward(params, x, batch, a);
    std::copy(a.logits.data(), a.logits.data() + a.logits.size(), logits);
  }

  double loss_and_grad(const T* params, const T* x, const uint8_t* labels, size_t batch,
                       T* grad) const override {
    Scratch& s = scratch();
    Activations& a = s.act;
    run_forward(params, x, batch, a);
    const auto B = static_cast<Eigen::Index>(batch);
    const auto& L = this->layout_;
    const Plane p1{batch, s_.height, s_.width, s_.conv1_channels};
    const Plane p2{batch, s_.height / 2, s_.width / 2, s_.conv2_channels};
    const auto F = static_cast<Eigen::Index>(fc_inputs());
    const auto K = static_cast<Eigen::Index>(s_.classes);

    Mat<T>& dlogits = s.dlogits;
    dlogits.resize(B, K);
    const double loss = softmax_xent(a.logits.data(), labels, batch, s_.classes, dlogits.data());

    // FC.
    ConstMatMap<T> pooled2(a.pool2.data(), B, F);
    mul_atb(dlogits.data(), pooled2.data(), s_.classes, fc_inputs(), batch, grad + L[4].offset);
    column_sums(dlogits, grad + L[5].offset);
    Mat<T>& dpool2 = s.dpool2;
    dpool2.resize(B, F);
    mul_ab(dlogits.data(), params + L[4].offset, batch, fc_inputs(), s_.classes, dpool2.data());

    // conv2: unpool, ReLU mask, weight/bias grads, then back to the pooled conv1 output.
    const auto rows2 = static_cast<Eigen::Index>(batch * p2.h * p2.w);
    const auto c2 = static_cast<Eigen::Index>(s_.conv2_channels);
    const auto w2 =
        static_cast<Eigen::Index>(s_.conv1_channels * s_.conv2_kernel * s_.conv2_kernel);
    Mat<T>& dz2 = s.dz2;
    dz2.setZero(rows2, c2);
    for (Eigen::Index j = 0; j < dpool2.size(); ++j) dz2.data()[a.arg2[j]] += dpool2.data()[j];
    dz2 = (a.z2.array() > T(0)).select(dz2, T(0));
    mul_atb(dz2.data(), a.cols2.data(), size_t(c2), size_t(w2), size_t(rows2), grad + L[2].offset);
    column_sums(dz2, grad + L[3].offset);
    Mat<T>& dcols2 = s.dcols2;
    dcols2.resize(rows2, w2);
    mul_ab(dz2.data(), params + L[2].offset, size_t(rows2), size_t(w2), size_t(c2), dcols2.data());
    const Plane pooled1{batch, p2.h, p2.w, s_.conv1_channels};
    Mat<T>& dpool1 = s.dpool1;  // col2im_add zeroes it first
    dpool1.resize(static_cast<Eigen::Index>(batch * p2.h * p2.w),
                  static_cast<Eigen::Index>(s_.conv1_channels));
    col2im_add(dcols2.data(), pooled1, s_.conv2_kernel, dpool1.data());

    // conv1.
    const auto rows1 = static_cast<Eigen::Index>(batch * p1.h * p1.w);
    const auto c1 = static_cast<Eigen::Index>(s_.conv1_channels);
    const auto w1 = static_cast<Eigen::Index>(s_.in_channels * s_.conv1_kernel * s_.conv1_kernel);
    Mat<T>& dz1 = s.dz1;
    dz1.setZero(rows1, c1);
    for (Eigen::Index j = 0; j < dpool1.size(); ++j) dz1.data()[a.arg1[j]] += dpool1.data()[j];
    dz1 = (a.z1.array() > T(0)).select(dz1, T(0));
    mul_atb(dz1.data(), a.cols1.data(), size_t(c1), size_t(w1), size_t(rows1), grad + L[0].offset);
    column_sums(dz1, grad + L[1].offset);
    return loss;
  }

 private:
  struct Activations {
    Mat<T> cols1, z1, pool1, cols2, z2, pool2, logits;  // z after ReLU
    std::vector<uint32_t> arg1, arg2;
  };
  // Per-thread buffers kept between calls, as in the MLP: the im2col matrices alone are
  // megabytes per chunk, and fresh ones cost page faults and zeroing on every call. No
  // result depends on a buffer's address, so reuse changes no bit.
  struct Scratch {
    Activations act;
    Mat<T> dlogits, dpool2, dz2, dcols2, dpool1, dz1;
  };
  static Scratch& scratch() {
    thread_local Scratch s;
    return s;
  }

  size_t fc_inputs() const { return (s_.height / 4) * (s_.width / 4) * s_.conv2_channels; }

  void run_forward(const T* params, const T* x, size_t batch, Activations& a) const {
    const auto& L = this->layout_;
    const Plane in{batch, s_.height, s_.width, s_.in_channels};
    const Plane p1{batch, s_.height, s_.width, s_.conv1_channels};
    const Plane pooled1{batch, s_.height / 2, s_.width / 2, s_.conv1_channels};
    const Plane p2{batch, s_.height / 2, s_.width / 2, s_.conv2_channels};
    const auto idx = [](size_t v) { return static_cast<Eigen::Index>(v); };

    const auto w1 = idx(s_.in_channels * s_.conv1_kernel * s_.conv1_kernel);
    a.cols1.resize(idx(batch * p1.h * p1.w), w1);
    im2col(x, in, s_.conv1_kernel, a.cols1.data());
    a.z1.resize(a.cols1.rows(), idx(s_.conv1_channels));
    mul_abt(a.cols1.data(), params + L[0].offset, size_t(a.cols1.rows()), s_.conv1_channels,
            size_t(w1), a.z1.data());
    a.z1.rowwise() += ConstRowVecMap<T>(params + L[1].offset, idx(s_.conv1_channels));
    a.z1 = a.z1.cwiseMax(T(0));
    a.pool1.resize(idx(batch * pooled1.h * pooled1.w), idx(s_.conv1_channels));
    a.arg1.resize(static_cast<size_t>(a.pool1.size()));
    maxpool2(a.z1.data(), p1, a.pool1.data(), a.arg1.data());

    const auto w2 = idx(s_.conv1_channels * s_.conv2_kernel * s_.conv2_kernel);
    a.cols2.resize(idx(batch * p2.h * p2.w), w2);
    im2col(a.pool1.data(), pooled1, s_.conv2_kernel, a.cols2.data());
    a.z2.resize(a.cols2.rows(), idx(s_.conv2_channels));
    mul_abt(a.cols2.data(), params + L[2].offset, size_t(a.cols2.rows()), s_.conv2_channels,
            size_t(w2), a.z2.data());
    a.z2.rowwise() += ConstRowVecMap<T>(params + L[3].offset, idx(s_.conv2_channels));
    a.z2 = a.z2.cwiseMax(T(0));
    a.pool2.resize(idx(batch * (p2.h / 2) * (p2.w / 2)), idx(s_.conv2_channels));
    a.arg2.resize(static_cast<size_t>(a.pool2.size()));
    maxpool2(a.z2.data(), p2, a.pool2.data(), a.arg2.data());

    // NHWC pooled output of one example is contiguous: it is the FC input row.
    const auto F = idx(fc_inputs()), K = idx(s_.classes);
    ConstMatMap<T> flat(a.pool2.data(), idx(batch), F);
    a.logits.resize(idx(batch), K);
    mul_abt(flat.data(), params + L[4].offset, batch, s_.classes, fc_inputs(), a.logits.data());
    a.logits.rowwise() += ConstRowVecMap<T>(params + L[5].offset, K);
  }

  CnnShape s_;
};

}  // namespace

template <class T>
std::unique_ptr<Model<T>> make_cnn(const CnnShape& shape) {
  return std::make_unique<Cnn<T>>(shape);
}

template std::unique_ptr<Model<float>> make_cnn<float>(const CnnShape&);
template std::unique_ptr<Model<double>> make_cnn<double>(const CnnShape&);

}  // namespace clbo::train
