// The synthetic problem behind `clbo demo`: a multi-head linear regression whose parameters
// form a realistic multi-tensor layout (one 1-D bias tensor and three weight matrices of
// different shapes), with per-rank noisy minibatch gradients. Everything is drawn from
// Philox (core/philox.hpp) keyed by the seed, so a run is reproducible bit for bit and each
// rank draws its own samples without any shared state.
//
// Head k maps an input x ∈ R^{c_k} to y = W_k x + b_k. Targets are y* = W*_k x + b*_k + σ·ε
// with x and ε independent, zero-mean, unit-variance (uniform) noise. Rank r's gradient at
// step t is that of the mean squared error ½·|y − y*|² over its own B samples. Because
// E[x xᵀ] = I, the expected (population) loss has a closed form,
//   L(θ) = ½·Σ_k (‖W_k − W*_k‖² + ‖b_k − b*_k‖²) + ½·σ²·(number of outputs),
// and loss() reports L without the constant noise term, so the optimum is exactly 0.
#pragma once
#include <fmt/format.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "clbo/core/error.hpp"
#include "clbo/core/layout.hpp"
#include "clbo/core/philox.hpp"

namespace clbo::cli::demo {

// Zero-mean, unit-variance uniform values from Philox4x32-10: counter {i, a, b, stream},
// key {lo32(seed), hi32(seed)}; each counter yields four values.
class UnitNoise {
 public:
  UnitNoise(uint64_t seed, uint32_t stream, uint32_t a, uint32_t b)
      : k0_(static_cast<uint32_t>(seed)),
        k1_(static_cast<uint32_t>(seed >> 32)),
        stream_(stream),
        a_(a),
        b_(b) {}
  float next() {
    if (used_ == 4) {
      block_ = philox4x32_10(counter_++, a_, b_, stream_, k0_, k1_);
      used_ = 0;
    }
    // (w + 0.5)/2^32 is uniform on (0, 1); centre it and scale by √12 for unit variance.
    const double u = (static_cast<double>(block_.v[used_++]) + 0.5) * 0x1p-32;
    return static_cast<float>((u - 0.5) * 3.4641016151377544);
  }

 private:
  uint32_t k0_, k1_, stream_, a_, b_;
  uint32_t counter_ = 0, used_ = 4;
  Philox4x32 block_{};
};

class RegressionProblem {
 public:
  struct Head {
    size_t rows = 0, cols = 0;
    size_t w_offset = 0;  // W_k, row-major [rows, cols], in the flat buffer
    size_t b_offset = 0;  // b_k, a slice of the shared bias tensor
  };

  // n_target: the approximate parameter count (rounded down to whole matrix rows).
  RegressionProblem(size_t n_target, uint64_t seed, size_t batch, float noise)
      : seed_(seed), batch_(batch), noise_(noise) {
    if (n_target < 1024)
      throw InputError("<command line>", "--n", std::to_string(n_target), "must be >= 1024");
    if (batch == 0) throw InputError("<command line>", "batch", "0", "must be positive");
    // Three heads of different widths take 50%, 30% and 20% of the parameters; a row of
    // head k costs its c_k weights plus one bias.
    const size_t cols[3] = {64, 32, 16};
    const double share[3] = {0.5, 0.3, 0.2};
    size_t outputs = 0;
    for (int k = 0; k < 3; ++k) {
      Head h;
      h.cols = cols[k];
      h.rows = static_cast<size_t>(share[k] * static_cast<double>(n_target)) / (cols[k] + 1);
      h.b_offset = outputs;
      outputs += h.rows;
      heads_.push_back(h);
    }
    layout_.add("bias", outputs, {static_cast<int64_t>(outputs)});
    const char* names[3] = {"w_in", "w_mid", "w_out"};
    for (int k = 0; k < 3; ++k) {
      heads_[k].w_offset = layout_.total();
      layout_.add(names[k], heads_[k].rows * heads_[k].cols,
                  {static_cast<int64_t>(heads_[k].rows), static_cast<int64_t>(heads_[k].cols)});
    }
    target_ = draw_params(/*stream=*/1, /*w_scale=*/1.0f, /*b_scale=*/0.5f);
  }

  const ParamLayout& layout() const { return layout_; }
  size_t n() const { return layout_.total(); }
  const std::vector<Head>& heads() const { return heads_; }
  size_t batch() const { return batch_; }
  float noise() const { return noise_; }

  // θ0: weights at half the target's scale, independent of it; a small nonzero bias. (A
  // zero tensor has trust ratio 1 in the LAMB family, and SLAMB's first step, averaged m
  // over a local v, is unbounded where a rank's gradient is near zero: from a zero bias it
  // can jump far away.)
  std::vector<float> initial_params() const { return draw_params(2, 0.5f, 0.1f); }

  // The population loss without its noise floor (see the file comment), in double.
  double loss(const float* theta) const {
    double s = 0;
    for (size_t i = 0; i < n(); ++i) {
      const double d = static_cast<double>(theta[i]) - target_[i];
      s += d * d;
    }
    return 0.5 * s;
  }

  // Rank `rank`'s minibatch gradient at step t (1-based) into grad[0, n).
  void gradient(const float* theta, int64_t t, int rank, float* grad) const {
    std::vector<float> delta(n());
    for (size_t i = 0; i < n(); ++i) delta[i] = theta[i] - target_[i];
    std::fill(grad, grad + n(), 0.0f);
    const float inv_b = 1.0f / static_cast<float>(batch_);
    std::vector<float> x, err;
    for (size_t s = 0; s < batch_; ++s) {
      UnitNoise rng = sample_noise(t, rank, s);
      for (const Head& h : heads_) {
        draw_sample(rng, h, x, err);
        // err = (W − W*)·x + (b − b*) − σ·ε, then ∂/∂W = err·xᵀ and ∂/∂b = err.
        for (size_t i = 0; i < h.rows; ++i) {
          const float* d = &delta[h.w_offset + i * h.cols];
          float e = delta[h.b_offset + i] - noise_ * err[i];
          for (size_t j = 0; j < h.cols; ++j) e += d[j] * x[j];
          const float scaled = e * inv_b;
          float* g = grad + h.w_offset + i * h.cols;
          for (size_t j = 0; j < h.cols; ++j) g[j] += scaled * x[j];
          grad[h.b_offset + i] += scaled;
        }
      }
    }
  }

  // The minibatch loss whose gradient gradient() returns, in double: tests check one
  // against the other by finite differences.
  double minibatch_loss(const float* theta, int64_t t, int rank) const {
    double total = 0;
    std::vector<float> x, err;
    for (size_t s = 0; s < batch_; ++s) {
      UnitNoise rng = sample_noise(t, rank, s);
      for (const Head& h : heads_) {
        draw_sample(rng, h, x, err);
        for (size_t i = 0; i < h.rows; ++i) {
          double e = static_cast<double>(theta[h.b_offset + i]) - target_[h.b_offset + i] -
                     static_cast<double>(noise_) * err[i];
          for (size_t j = 0; j < h.cols; ++j)
            e += (static_cast<double>(theta[h.w_offset + i * h.cols + j]) -
                  target_[h.w_offset + i * h.cols + j]) *
                 x[j];
          total += 0.5 * e * e;
        }
      }
    }
    return total / static_cast<double>(batch_);
  }

 private:
  UnitNoise sample_noise(int64_t t, int rank, size_t s) const {
    // Stream 3 + sample index keeps samples apart from the parameter streams 1 and 2.
    return UnitNoise(seed_, 3 + static_cast<uint32_t>(s), static_cast<uint32_t>(t),
                     static_cast<uint32_t>(rank));
  }
  static void draw_sample(UnitNoise& rng, const Head& h, std::vector<float>& x,
                          std::vector<float>& err) {
    x.resize(h.cols);
    err.resize(h.rows);
    for (auto& v : x) v = rng.next();
    for (auto& v : err) v = rng.next();
  }
  // Weights with variance w_scale²/cols (unit-variance outputs at w_scale 1), bias b_scale².
  std::vector<float> draw_params(uint32_t stream, float w_scale, float b_scale) const {
    std::vector<float> p(n());
    UnitNoise rng(seed_, stream, 0, 0);
    for (const Head& h : heads_) {
      const float s = w_scale / std::sqrt(static_cast<float>(h.cols));
      for (size_t i = 0; i < h.rows * h.cols; ++i) p[h.w_offset + i] = s * rng.next();
      for (size_t i = 0; i < h.rows; ++i) p[h.b_offset + i] = b_scale * rng.next();
    }
    return p;
  }

  uint64_t seed_;
  size_t batch_;
  float noise_;
  std::vector<Head> heads_;
  ParamLayout layout_;
  std::vector<float> target_;
};

}  // namespace clbo::cli::demo
