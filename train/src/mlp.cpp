// MLP forward/backward on kernels::gemm. Layer l: Z = A·Wᵀ + b, A' = relu(Z) (not on the last).
#include <fmt/format.h>

#include "clbo/core/error.hpp"
#include "clbo/train/model.hpp"
#include "eigen_types.hpp"

namespace clbo::train {

namespace {

template <class T>
class Mlp final : public Model<T> {
 public:
  explicit Mlp(std::vector<size_t> sizes) : sizes_(std::move(sizes)) {
    if (sizes_.size() < 2) throw Error("an MLP needs at least an input and an output size");
    for (size_t l = 0; l + 1 < sizes_.size(); ++l) {
      const auto in = static_cast<int64_t>(sizes_[l]), out = static_cast<int64_t>(sizes_[l + 1]);
      this->layout_.add(fmt::format("fc{}.weight", l + 1), sizes_[l] * sizes_[l + 1], {out, in});
      this->layout_.add(fmt::format("fc{}.bias", l + 1), sizes_[l + 1], {out});
      this->fan_in_.push_back(sizes_[l]);
      this->fan_in_.push_back(0);
    }
  }
  std::string name() const override { return "mlp"; }
  size_t input_size() const override { return sizes_.front(); }
  size_t num_classes() const override { return sizes_.back(); }

  void forward(const T* params, const T* x, size_t batch, T* logits) const override {
    std::vector<Mat<T>>& acts = scratch().acts;
    run_forward(params, x, batch, acts);
    std::copy(acts.back().data(), acts.back().data() + acts.back().size(), logits);
  }

  double loss_and_grad(const T* params, const T* x, const uint8_t* labels, size_t batch,
                       T* grad) const override {
    const auto B = static_cast<Eigen::Index>(batch);
    Scratch& s = scratch();
    std::vector<Mat<T>>& acts = s.acts;  // acts[l] = input of layer l+1; acts.back() = logits
    run_forward(params, x, batch, acts);
    const size_t layers = sizes_.size() - 1;
    s.dz.resize(layers);  // dz[l]: loss gradient w.r.t. layer l+1's output (fixed shape)
    s.da.resize(layers);
    s.dz[layers - 1].resize(B, static_cast<Eigen::Index>(sizes_.back()));
    const double loss =
        softmax_xent(acts.back().data(), labels, batch, sizes_.back(), s.dz[layers - 1].data());
    for (size_t l = layers; l-- > 0;) {
      const TensorSpec& w = this->layout_[2 * l];
      const TensorSpec& b = this->layout_[2 * l + 1];
      const auto in = static_cast<Eigen::Index>(sizes_[l]);
      const Mat<T>& dz = s.dz[l];
      const T* input = l == 0 ? x : acts[l - 1].data();
      mul_atb(dz.data(), input, sizes_[l + 1], sizes_[l], batch, grad + w.offset);
      column_sums(dz, grad + b.offset);
      if (l == 0) break;
      Mat<T>& da = s.da[l];
      da.resize(B, in);
      mul_ab(dz.data(), params + w.offset, batch, sizes_[l], sizes_[l + 1], da.data());
      // relu'(z) is 1 where the activation is positive.
      s.dz[l - 1] = (acts[l - 1].array() > T(0)).select(da, T(0));
    }
    return loss;
  }

 private:
  // Activations and backward buffers, kept per thread between calls: a training run calls
  // the model thousands of times with the same shapes, and fresh half-megabyte matrices cost
  // page faults and zeroing each time. Eigen aligns every Mat the same way, and no result
  // depends on a buffer's address (see test_models' offset test), so reuse changes no bit.
  struct Scratch {
    std::vector<Mat<T>> acts, dz, da;  // one per layer, so shapes stay put between calls
  };
  static Scratch& scratch() {
    thread_local Scratch s;
    return s;
  }

  // acts[l] (l < layers−1) = relu output of layer l+1; acts[layers−1] = logits.
  void run_forward(const T* params, const T* x, size_t batch, std::vector<Mat<T>>& acts) const {
    const auto B = static_cast<Eigen::Index>(batch);
    const size_t layers = sizes_.size() - 1;
    acts.resize(layers);
    for (size_t l = 0; l < layers; ++l) {
      const auto out = static_cast<Eigen::Index>(sizes_[l + 1]);
      ConstRowVecMap<T> b(params + this->layout_[2 * l + 1].offset, out);
      Mat<T>& z = acts[l];
      z.resize(B, out);
      const T* input = l == 0 ? x : acts[l - 1].data();
      mul_abt(input, params + this->layout_[2 * l].offset, batch, sizes_[l + 1], sizes_[l],
              z.data());
      z.rowwise() += b;
      if (l + 1 < layers) z = z.cwiseMax(T(0));
    }
  }

  std::vector<size_t> sizes_;
};

}  // namespace

template <class T>
std::unique_ptr<Model<T>> make_mlp(const std::vector<size_t>& sizes) {
  return std::make_unique<Mlp<T>>(sizes);
}

template std::unique_ptr<Model<float>> make_mlp<float>(const std::vector<size_t>&);
template std::unique_ptr<Model<double>> make_mlp<double>(const std::vector<size_t>&);

}  // namespace clbo::train
