// Straightforward re-implementations of docs/reference/algorithms.md §3–§7, one rank each, written
// from the spec with plain loops and no clbo kernels: dense averages are plain means of every
// rank's gradient (the reference knows them all), norms are plain double sums, and the
// SLAMB mask is drawn from core's Philox directly. Compressed phases call the same
// collectives as the optimizers (compressed_allreduce, sparse_allreduce_sum), as the tests
// compare arithmetic, not the collectives, which have their own tests.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include "clbo/collectives/algorithms.hpp"
#include "clbo/core/layout.hpp"
#include "clbo/core/philox.hpp"

namespace clbo::test::ref {

struct Hyper {
  float lr = 0.01f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f, wd = 0.0f;
};

inline std::vector<float> mean_of(const std::vector<std::vector<float>>& grads) {
  std::vector<float> g(grads[0].size());
  for (size_t i = 0; i < g.size(); ++i) {
    double s = 0;
    for (const auto& x : grads) s += x[i];
    g[i] = static_cast<float>(s / static_cast<double>(grads.size()));
  }
  return g;
}

inline double sumsq(const float* x, size_t begin, size_t end) {
  double s = 0;
  for (size_t i = begin; i < end; ++i) s += double(x[i]) * double(x[i]);
  return s;
}

// LAMB-style trust: clamp(a/b) or 1 when a norm is 0.
inline float trust(double w2, double u2, float lo, float hi) {
  if (w2 == 0 || u2 == 0) return 1.0f;
  return std::min(std::max(static_cast<float>(std::sqrt(w2) / std::sqrt(u2)), lo), hi);
}

// §7 Adam (decoupled decay) and LAMB, bias correction optional. Also the warmup of §3/§4.
struct Dense {
  Hyper h;
  bool lamb = false, bias_correction = true;
  bool l2 = false;  // Adam with adam_w_mode off: λθ joins the gradient, no decay term
  float min_coeff = 0.01f, max_coeff = 10.0f;
  std::vector<float> m, v;
  int64_t t = 0;
  std::vector<float> last_trust;

  void step(const ParamLayout& l, float* w, const std::vector<float>& g) {
    ++t;
    const size_t n = l.total();
    if (m.empty()) m.assign(n, 0.0f), v.assign(n, 0.0f);
    const auto correction = [&](float beta) {
      return bias_correction ? float(1.0 - std::pow(double(beta), double(t))) : 1.0f;
    };
    const float bc1 = correction(h.b1), bc2 = correction(h.b2);
    std::vector<float> u(n);
    for (size_t i = 0; i < n; ++i) {
      const float gi = l2 ? g[i] + h.wd * w[i] : g[i];
      m[i] = h.b1 * m[i] + (1.0f - h.b1) * gi;
      v[i] = h.b2 * v[i] + (1.0f - h.b2) * gi * gi;
      u[i] = (m[i] / bc1) / (std::sqrt(v[i] / bc2) + h.eps) + (l2 ? 0.0f : h.wd * w[i]);
    }
    last_trust.assign(l.num_tensors(), 1.0f);
    for (size_t k = 0; k < l.num_tensors(); ++k) {
      const size_t b = l[k].offset, e = b + l[k].size;
      if (lamb) last_trust[k] = trust(sumsq(w, b, e), sumsq(u.data(), b, e), min_coeff, max_coeff);
      for (size_t i = b; i < e; ++i) w[i] -= h.lr * last_trust[k] * u[i];
    }
  }
};

// §3 1-bit Adam; without error feedback (OneBitAdamNoErrorFeedback) the error buffers are
// zeroed before every compressed call.
struct OneBitAdam {
  Hyper h;
  int64_t warmup = 0;
  bool per_tensor = false;  // one compressed call per tensor instead of one over all
  bool error_feedback = true;
  std::vector<float> m, v;
  std::vector<OnebitState> errs;
  int64_t t = 0;

  void step(Communicator& comm, const ParamLayout& l, float* w, const std::vector<float>& local,
            const std::vector<float>& mean) {
    ++t;
    const size_t n = l.total();
    if (m.empty()) m.assign(n, 0.0f), v.assign(n, 0.0f);
    if (t <= warmup) {
      for (size_t i = 0; i < n; ++i) {
        m[i] = h.b1 * m[i] + (1.0f - h.b1) * mean[i];
        v[i] = h.b2 * v[i] + (1.0f - h.b2) * mean[i] * mean[i];
      }
    } else {
      for (size_t i = 0; i < n; ++i) m[i] = h.b1 * m[i] + (1.0f - h.b1) * local[i];
      if (!error_feedback)
        for (OnebitState& e : errs) e.zero();
      if (!per_tensor) {
        errs.resize(1);
        compressed_allreduce(comm, errs[0], m.data(), n);
      } else {
        errs.resize(l.num_tensors());
        for (size_t j = 0; j < l.num_tensors(); ++j)
          compressed_allreduce(comm, errs[j], m.data() + l[j].offset, l[j].size);
      }
    }
    for (size_t i = 0; i < n; ++i) w[i] -= h.lr * (m[i] / (std::sqrt(v[i]) + h.eps) + h.wd * w[i]);
  }
};

// The naive error-compensated 1-bit Adam (docs/reference/algorithms.md §9.2): after
// `dense` dense steps, Adam without bias correction on the 1-bit allreduced gradient, m and
// v both updated from it.
struct NaiveOneBitAdam {
  Hyper h;
  int64_t dense = 0;
  std::vector<float> m, v;
  OnebitState err;
  int64_t t = 0;

  void step(Communicator& comm, const ParamLayout& l, float* w, const std::vector<float>& local,
            const std::vector<float>& mean) {
    ++t;
    const size_t n = l.total();
    if (m.empty()) m.assign(n, 0.0f), v.assign(n, 0.0f);
    std::vector<float> g = t <= dense ? mean : local;
    if (t > dense) compressed_allreduce(comm, err, g.data(), n);
    for (size_t i = 0; i < n; ++i) {
      m[i] = h.b1 * m[i] + (1.0f - h.b1) * g[i];
      v[i] = h.b2 * v[i] + (1.0f - h.b2) * g[i] * g[i];
      w[i] -= h.lr * (m[i] / (std::sqrt(v[i]) + h.eps) + h.wd * w[i]);
    }
  }
};

// The naive 1-bit LAMB (docs/reference/algorithms.md §9.3): 1-bit LAMB's warmup
// without the coefficient EMA, then v frozen, the momentum 1-bit allreduced, and LAMB's
// trust ratio recomputed from it every step.
struct NaiveOneBitLamb {
  Hyper h;
  int64_t warmup = 0;
  float min_coeff = 0.01f, max_coeff = 10.0f;
  std::vector<float> m, v;
  OnebitState err;
  int64_t t = 0;

  void step(Communicator& comm, const ParamLayout& l, float* w, const std::vector<float>& local,
            const std::vector<float>& mean) {
    ++t;
    const size_t n = l.total();
    if (m.empty()) m.assign(n, 0.0f), v.assign(n, 0.0f);
    if (t <= warmup) {
      for (size_t i = 0; i < n; ++i) {
        m[i] = h.b1 * m[i] + (1.0f - h.b1) * mean[i];
        v[i] = h.b2 * v[i] + (1.0f - h.b2) * mean[i] * mean[i];
      }
    } else {
      for (size_t i = 0; i < n; ++i) m[i] = h.b1 * m[i] + (1.0f - h.b1) * local[i];
      compressed_allreduce(comm, err, m.data(), n);
    }
    std::vector<float> u(n);
    for (size_t i = 0; i < n; ++i) u[i] = m[i] / (std::sqrt(v[i]) + h.eps) + h.wd * w[i];
    for (size_t k = 0; k < l.num_tensors(); ++k) {
      const size_t b = l[k].offset, e = b + l[k].size;
      const float tr = trust(sumsq(w, b, e), sumsq(u.data(), b, e), min_coeff, max_coeff);
      for (size_t i = b; i < e; ++i) w[i] -= h.lr * tr * u[i];
    }
  }
};

// §4 1-bit LAMB, optionally with DeepSpeed's padding tail kept in the fused buffer.
struct OneBitLamb {
  Hyper h;
  int64_t warmup = 0;
  float min_coeff = 0.01f, max_coeff = 10.0f;
  double coeff_beta = 0.9, factor_max = 4.0, factor_min = 0.5, factor_threshold = 0.1;
  bool keep_tail = false;
  std::vector<float> m, v, v_fresh, fused;
  std::vector<double> coeff_freeze, last_factor, scaling;
  OnebitState err;
  int64_t t = 0;

  void step(Communicator& comm, const ParamLayout& l, float* w, const std::vector<float>& local,
            const std::vector<float>& mean) {
    ++t;
    const size_t n = l.total(), k = l.num_tensors();
    if (m.empty()) {
      m.assign(n, 0.0f), v.assign(n, 0.0f), v_fresh.assign(n, 0.0f);
      coeff_freeze.assign(k, 0.0), last_factor.assign(k, 1.0);
    }
    if (t <= warmup) {
      Dense d;  // LAMB without bias correction, one step from our moments
      d.h = h, d.lamb = true, d.bias_correction = false, d.min_coeff = min_coeff,
      d.max_coeff = max_coeff, d.m = m, d.v = v;
      d.step(l, w, mean);
      m = d.m, v = d.v;
      for (size_t j = 0; j < k; ++j)
        if (d.last_trust[j] != 1.0f)
          coeff_freeze[j] = coeff_beta * coeff_freeze[j] + (1 - coeff_beta) * d.last_trust[j];
      if (t == warmup) v_fresh = v;
      return;
    }
    if (scaling.empty()) {
      std::vector<double> rms(k);
      double mean_rms = 0;
      for (size_t j = 0; j < k; ++j) {
        rms[j] = std::sqrt(sumsq(m.data(), l[j].offset, l[j].offset + l[j].size)) /
                 std::sqrt(double(l[j].size));
        mean_rms += rms[j] / double(k);
      }
      for (size_t j = 0; j < k; ++j) scaling.push_back(rms[j] > 0 ? mean_rms / rms[j] : 1.0);
    }
    const std::vector<float> m_last = m;
    const size_t len = keep_tail ? onebit_padded(n, comm.size()) : n;
    if (fused.size() != len) fused.assign(len, 0.0f);
    for (size_t j = 0; j < k; ++j)
      for (size_t i = l[j].offset; i < l[j].offset + l[j].size; ++i)
        fused[i] = (h.b1 * m[i] + (1.0f - h.b1) * local[i]) * float(scaling[j]);
    compressed_allreduce(comm, err, fused.data(), len);
    std::vector<float> u(n);
    for (size_t j = 0; j < k; ++j) {
      const size_t b = l[j].offset, e = b + l[j].size;
      float fmax = 0;
      double up2 = 0, u2 = 0;
      for (size_t i = b; i < e; ++i) {
        m[i] = fused[i] / float(scaling[j]);
        const float ghat = (m[i] - h.b1 * m_last[i]) / (1.0f - h.b1);
        v_fresh[i] = h.b2 * v_fresh[i] + (1.0f - h.b2) * ghat * ghat;
        const float denom = std::sqrt(v[i]) + h.eps;
        const float upre = m[i] / denom;
        u[i] = h.wd > 0 ? upre + h.wd * w[i] : upre;
        fmax = std::max(fmax, denom / (std::sqrt(v_fresh[i]) + h.eps));
        up2 += double(upre) * upre, u2 += double(u[i]) * u[i];
      }
      double factor = fmax;
      if (h.wd > 0) {
        const double rr = std::min(1.0, std::sqrt(up2) / std::sqrt(u2));
        factor = factor * rr + (1 - rr);
      }
      factor = std::clamp(factor, factor_min, factor_max);
      factor = std::clamp(factor, last_factor[j] * (1 - factor_threshold),
                          last_factor[j] * (1 + factor_threshold));
      last_factor[j] = factor;
      const float c = float(coeff_freeze[j] * factor);
      for (size_t i = b; i < e; ++i) w[i] -= h.lr * c * u[i];
    }
  }

  static size_t onebit_padded(size_t n, int p) {
    const size_t unit = size_t(p) * std::lcm(size_t(p), size_t(8));
    return (n + unit - 1) / unit * unit;
  }
};

// §5 0/1 Adam with DeepSpeed's counters.
struct ZeroOneAdam {
  Hyper h;
  int64_t var_freeze_step = 0, kappa = 16, local_scaler = 32768, local_clipper = 16, offset = 0;
  std::vector<float> m, v, u;
  OnebitState err;
  double lrs = 0;
  int64_t t = 0, var_interval = 1, var_counter = 0, local_interval = 1, local_counter = 0;

  void step(Communicator& comm, const ParamLayout& l, float* w, const std::vector<float>& local,
            const std::vector<float>& mean) {
    ++t;
    const int64_t clock = t + offset;
    const size_t n = l.total();
    if (m.empty()) m.assign(n, 0.0f), v.assign(n, 0.0f), u.assign(n, 0.0f);
    if (t <= var_freeze_step) {
      if (clock % var_interval == 0) {
        for (size_t i = 0; i < n; ++i) {
          m[i] = h.b1 * m[i] + (1.0f - h.b1) * mean[i];
          v[i] = h.b2 * v[i] + (1.0f - h.b2) * mean[i] * mean[i];
        }
        if (++var_counter == kappa) var_counter = 0, var_interval *= 2;
      } else {
        std::vector<float> g = local;
        compressed_allreduce(comm, err, g.data(), n);
        for (size_t i = 0; i < n; ++i) m[i] = h.b1 * m[i] + (1.0f - h.b1) * g[i];
      }
      for (size_t i = 0; i < n; ++i)
        w[i] -= h.lr * (m[i] / (std::sqrt(v[i]) + h.eps) + h.wd * w[i]);
      if (t == var_freeze_step) err.zero();
      return;
    }
    lrs += h.lr;
    for (size_t i = 0; i < n; ++i) {
      m[i] = h.b1 * m[i] + (1.0f - h.b1) * local[i];
      const float d = m[i] / (std::sqrt(v[i]) + h.eps) + h.wd * w[i];
      w[i] -= h.lr * d;
      u[i] -= h.lr * d;
    }
    if (clock % local_interval == 0) {
      for (size_t i = 0; i < n; ++i) w[i] -= u[i], u[i] *= std::sqrt(v[i]) + h.eps;
      compressed_allreduce(comm, err, u.data(), n);
      for (size_t i = 0; i < n; ++i) {
        m[i] = -u[i] / float(lrs);
        w[i] += u[i] / (std::sqrt(v[i]) + h.eps);
        u[i] = 0;
      }
      lrs = 0;
    }
    if (++local_counter == local_scaler)
      local_counter = 0, local_interval = std::min(local_clipper, 2 * local_interval);
  }
};

// §6 SLAMB with the §7b mask drawn here from core's Philox.
struct Slamb {
  Hyper h;
  double k = 0.1, beta3 = 0.99, max_coeff = 1000, min_coeff = 0.01;
  int64_t local_steps = 100, thr = 9000;
  uint64_t seed = 0;
  DType wire = DType::kF16;
  std::vector<float> m, v, r;
  int64_t t = 0;

  bool keep(size_t i) const {
    const uint64_t q = i / 4;
    const Philox4x32 x = philox4x32_10(uint32_t(q), uint32_t(q >> 32), uint32_t(t), 0,
                                       uint32_t(seed), uint32_t(seed >> 32));
    return x.v[i % 4] < mask_threshold(k);
  }

  void step(Communicator& comm, const ParamLayout& l, float* w, const std::vector<float>& g) {
    ++t;
    const size_t n = l.total();
    const int p = comm.size();
    if (m.empty()) m.assign(n, 0.0f), v.assign(n, 0.0f), r.assign(n, 1.0f);
    std::vector<bool> sel(n);
    for (size_t j = 0; j < l.num_tensors(); ++j)
      for (size_t i = l[j].offset; i < l[j].offset + l[j].size; ++i)
        sel[i] = l.ndim(j) == 1 || l[j].size < size_t(thr) || keep(i);
    std::vector<uint8_t> bits((n + 7) / 8, 0);
    for (size_t i = 0; i < n; ++i) {
      m[i] = h.b1 * m[i] + (1.0f - h.b1) * g[i];
      v[i] = h.b2 * v[i] + (1.0f - h.b2) * g[i] * g[i];
      r[i] = float(beta3) * r[i];
      if (sel[i]) r[i] = 1.0f, bits[i / 8] |= uint8_t(0x80u >> (i % 8));
    }
    sparse_allreduce_sum(comm, m.data(), n, bits.data(), wire);
    for (size_t i = 0; i < n; ++i)
      if (sel[i]) m[i] /= float(p);
    const float debias = float(std::sqrt(1 - std::pow(double(h.b2), double(t))) /
                               (1 - std::pow(double(h.b1), double(t))));
    std::vector<float> u(n);
    for (size_t i = 0; i < n; ++i) u[i] = m[i] / (std::sqrt(v[i]) + h.eps) * debias;
    for (size_t j = 0; j < l.num_tensors(); ++j) {
      const size_t b = l[j].offset, e = b + l[j].size;
      double wf = 0, uf = 0, ws = 0, us = 0;
      for (size_t i = b; i < e; ++i) {
        if (r[i] == 1.0f)
          wf += double(w[i]) * w[i], uf += double(u[i]) * u[i];
        else
          ws += double(w[i]) * w[i], us += double(u[i]) * u[i];
      }
      const double pf = wf > 0 && uf > 0 ? std::sqrt(wf) / std::sqrt(uf) : 1.0;
      const double ps = ws > 0 && us > 0 ? std::sqrt(ws) / std::sqrt(us) : 0.0;
      const float phi_f = float(std::clamp(pf, min_coeff, max_coeff));
      const float phi_s = float(std::clamp(ps, 0.0, max_coeff));
      const float lr_s = float(double(h.lr) / std::sqrt(double(p)));
      for (size_t i = b; i < e; ++i) {
        const float ui = u[i] + h.wd * w[i];
        w[i] -= h.lr * phi_f * ui * r[i] + lr_s * phi_s * ui * (1.0f - r[i]);
      }
    }
    if ((t - 1) % local_steps == 0) ring_allreduce_mean(comm, w, n);
  }
};

}  // namespace clbo::test::ref
