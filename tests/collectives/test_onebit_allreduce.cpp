// The 1-bit two-phase compressed allreduce (docs/reference/algorithms.md §2): the worked example,
// bytes against the plan and the closed form, bit-identical ranks, a central re-run of the same
// kernels, an independent float64 model, and the error-feedback telescoping identity.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "clbo/collectives/algorithms.hpp"
#include "clbo/kernels/onebit.hpp"
#include "clbo/plan/plan.hpp"
#include "coll_test_util.hpp"

namespace clbo {
namespace {

using Buffers = std::vector<std::vector<float>>;  // one per rank

// The same kernels in the same order as compressed_allreduce, run centrally for all ranks
// with no communication. The distributed result must match it bit for bit, which pins the
// routing of pieces, scales and chunks.
struct CentralOnebit {
  int p;
  size_t n, n_pad, c;
  Buffers worker_error, server_error;

  CentralOnebit(int p_, size_t n_) : p(p_), n(n_) {
    n_pad = clbo::onebit_padded_size(n, p);
    c = n_pad / static_cast<size_t>(p);
    worker_error.assign(static_cast<size_t>(p), std::vector<float>(n_pad, 0.f));
    server_error.assign(static_cast<size_t>(p), std::vector<float>(c, 0.f));
  }

  std::vector<float> step(const Buffers& x) {
    std::vector<std::vector<uint8_t>> packed(static_cast<size_t>(p));
    std::vector<float> scales(static_cast<size_t>(p));
    for (int r = 0; r < p; ++r) {
      packed[r].resize(n_pad / 8);
      const double ss = kernels::ef_sumsq(x[r].data(), n, worker_error[r].data(), n_pad);
      scales[r] = kernels::rms_scale(ss, n_pad);
      kernels::ef_sign_pack(x[r].data(), n, worker_error[r].data(), n_pad, scales[r],
                            packed[r].data());
    }
    std::vector<float> out(n);
    std::vector<uint8_t> chunk_signs(c / 8);
    for (int j = 0; j < p; ++j) {
      std::vector<const uint8_t*> pieces;
      for (int r = 0; r < p; ++r) pieces.push_back(packed[r].data() + j * (c / 8));
      const float s = kernels::server_step(pieces.data(), scales.data(), p, server_error[j].data(),
                                           c, chunk_signs.data());
      if (j * c < n) {
        kernels::unpack_scale(chunk_signs.data(), std::min(c, n - j * c), s, out.data() + j * c);
      }
    }
    return out;
  }
};

// An independent float64 model of §1–§2 written from the spec, not from the kernels.
// Returns the full padded output so the identity can be checked on the tail too.
struct Float64Onebit {
  int p;
  size_t n, n_pad, c;
  std::vector<std::vector<double>> worker_error;
  std::vector<double> server_error;  // all chunks concatenated

  Float64Onebit(int p_, size_t n_) : p(p_), n(n_) {
    n_pad = clbo::onebit_padded_size(n, p);
    c = n_pad / static_cast<size_t>(p);
    worker_error.assign(static_cast<size_t>(p), std::vector<double>(n_pad, 0.0));
    server_error.assign(n_pad, 0.0);
  }

  static double sgn(double v) { return v >= 0 ? 1.0 : -1.0; }

  std::vector<double> step(const Buffers& x) {
    std::vector<double> mean_q(n_pad, 0.0), out(n_pad);
    for (int r = 0; r < p; ++r) {
      std::vector<double> b(n_pad);
      double ss = 0;
      for (size_t i = 0; i < n_pad; ++i) {
        b[i] = (i < n ? x[r][i] : 0.0) + worker_error[r][i];
        ss += b[i] * b[i];
      }
      const double s = std::sqrt(ss / static_cast<double>(n_pad));
      for (size_t i = 0; i < n_pad; ++i) {
        const double q = s * sgn(b[i]);
        worker_error[r][i] = b[i] - q;
        mean_q[i] += q / p;
      }
    }
    for (size_t j = 0; j < n_pad; j += c) {
      double ss = 0;
      for (size_t i = j; i < j + c; ++i) {
        server_error[i] += mean_q[i];  // a = mean(q) + e_s, held in server_error for now
        ss += server_error[i] * server_error[i];
      }
      const double s = std::sqrt(ss / static_cast<double>(c));
      for (size_t i = j; i < j + c; ++i) {
        out[i] = s * sgn(server_error[i]);
        server_error[i] -= out[i];
      }
    }
    return out;
  }
};

Buffers inputs(int p, size_t n, uint64_t step) {
  Buffers x;
  for (int r = 0; r < p; ++r) x.push_back(test::random_floats(test::seed_of(p, r, n, step), n));
  return x;
}

// Runs `calls` compressed allreduces on p ranks; returns every rank's outputs per call.
std::vector<Buffers> run_calls(int p, size_t n, int calls, std::vector<test::Traffic>* traffic) {
  std::vector<Buffers> outs(static_cast<size_t>(calls), Buffers(static_cast<size_t>(p)));
  *traffic = test::run_counted(p, [&](CountingCommunicator& comm, int r) {
    OnebitState state;
    for (int t = 0; t < calls; ++t) {
      std::vector<float> buf = inputs(p, n, static_cast<uint64_t>(t))[r];
      if (t == calls - 1) comm.reset();  // count the last call alone
      compressed_allreduce(comm, state, buf.data(), n);
      outs[t][r] = std::move(buf);
    }
  });
  return outs;
}

TEST(CompressedAllreduce, WorkedExampleTwoRanksThirteenElements) {
  const int p = 2;
  const size_t n = 13;
  EXPECT_EQ(clbo::onebit_padded_size(n, p), 16u);  // n' = ceil(13/16)·16
  const size_t c = 16 / p;
  EXPECT_EQ(c, 8u);
  EXPECT_EQ(c / 8, 1u);                         // one packed byte per piece
  EXPECT_EQ(onebit_bytes_per_rank(n, p), 10u);  // (p−1)·n'/(4p) + 8(p−1) = 2 + 8

  const CommPlan plan = make_plan({CollKind::kCompressedAllreduce, n, DType::kF32, "m"}, p);
  EXPECT_EQ(plan.algorithm, "onebit_two_phase");
  EXPECT_EQ(plan.num_rounds(), 4);
  ASSERT_EQ(plan.transfers.size(), 8u);  // 4 phases × 2 ranks × 1 peer
  for (const Transfer& t : plan.transfers) EXPECT_EQ(t.bytes, t.round % 2 == 0 ? 1u : 4u);

  // Both ranks send all-ones: every worker scale is sqrt(13/16) (the padding counts in the
  // RMS), every vote agrees, so the server average is that scale again and so is the output.
  std::vector<std::vector<float>> out(2);
  std::vector<OnebitState> states(2);
  const auto traffic = test::run_counted(p, [&](CountingCommunicator& comm, int r) {
    std::vector<float> buf(n, 1.0f);
    compressed_allreduce(comm, states[r], buf.data(), n);
    out[r] = buf;
  });
  const float s = static_cast<float>(std::sqrt(13.0 / 16.0));
  for (int r = 0; r < p; ++r) {
    EXPECT_EQ(traffic[r].bytes_sent, 10u);
    EXPECT_EQ(traffic[r].messages_sent, 4u);
    EXPECT_EQ(states[r].worker_error.size(), 16u);
    EXPECT_EQ(states[r].server_error.size(), 8u);
    EXPECT_EQ(states[r].n, n);
    EXPECT_EQ(states[r].p, p);
    for (float v : out[r]) EXPECT_FLOAT_EQ(v, s);
    // Worker error: 1 − s on the data, 0 − s on the three padding elements.
    for (size_t i = 0; i < 16; ++i)
      EXPECT_FLOAT_EQ(states[r].worker_error[i], (i < n ? 1.f : 0.f) - s);
    for (float e : states[r].server_error) EXPECT_NEAR(e, 0.f, 1e-6f);
  }
  test::expect_traffic_matches(plan, traffic);
  std::printf(
      "[worked example] p=2 n=13: n'=16 c=8 piece=1 B, bytes sent per rank %llu, "
      "output %.9g (sqrt(13/16))\n",
      static_cast<unsigned long long>(traffic[0].bytes_sent), out[0][0]);
}

TEST(CompressedAllreduce, BytesEqualPlanAndClosedFormAndRanksAreBitIdentical) {
  for (int p : {1, 2, 3, 4, 8, 16}) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{13}, size_t{1001}}) {
      std::vector<test::Traffic> traffic;
      const auto outs = run_calls(p, n, 2, &traffic);
      const CommPlan plan = make_plan({CollKind::kCompressedAllreduce, n, DType::kF32, "m"}, p);
      test::expect_traffic_matches(plan, traffic);
      const uint64_t n_pad = clbo::onebit_padded_size(n, p);
      const uint64_t formula = n == 0 ? 0 : (p - 1) * n_pad / (4 * p) + 8 * (p - 1);
      EXPECT_EQ(onebit_bytes_per_rank(n, p), formula) << "p " << p << " n " << n;
      for (int r = 0; r < p; ++r) EXPECT_EQ(traffic[r].bytes_sent, formula);
      // Same bytes and scales everywhere: the outputs agree to the bit on every call.
      CentralOnebit central(p, n);
      for (const Buffers& call : outs) {
        for (int r = 1; r < p; ++r) EXPECT_TRUE(test::bit_identical(call[0], call[r]));
      }
      for (size_t t = 0; t < outs.size(); ++t) {
        EXPECT_TRUE(test::bit_identical(outs[t][0], central.step(inputs(p, n, t))))
            << "p " << p << " n " << n << " call " << t;
      }
    }
  }
}

TEST(CompressedAllreduce, SingleRankStillCompresses) {
  std::vector<float> buf = test::random_floats(7, 21);
  const std::vector<float> x = buf;
  OnebitState state;
  const auto traffic = test::run_counted(1, [&](CountingCommunicator& comm, int) {
    compressed_allreduce(comm, state, buf.data(), buf.size());
  });
  EXPECT_EQ(traffic[0].bytes_sent, 0u);
  EXPECT_EQ(traffic[0].messages_sent, 0u);
  // One rank: the server re-compresses the worker's ±s_w, whose RMS is s_w, so the output is
  // ±s_w with the input's signs, and the server error is (up to rounding) zero.
  const size_t n_pad = clbo::onebit_padded_size(21, 1);
  EXPECT_EQ(n_pad, 24u);
  double ss = 0;
  for (float v : x) ss += static_cast<double>(v) * v;
  const float s = static_cast<float>(std::sqrt(ss / n_pad));
  for (size_t i = 0; i < x.size(); ++i) EXPECT_FLOAT_EQ(buf[i], x[i] >= 0 ? s : -s) << i;
  EXPECT_EQ(state.server_error.size(), n_pad);
  CentralOnebit central(1, 21);
  EXPECT_TRUE(test::bit_identical(buf, central.step({x})));
}

TEST(CompressedAllreduce, StateIsResizedWhenTheLengthChanges) {
  run_local(2, [](Communicator& comm) {
    OnebitState state;
    std::vector<float> buf = test::random_floats(comm.rank(), 20);
    compressed_allreduce(comm, state, buf.data(), 13);
    EXPECT_EQ(state.worker_error.size(), 16u);
    const std::vector<float> after_first = state.worker_error;
    compressed_allreduce(comm, state, buf.data(), 13);  // same n: the error carries over
    EXPECT_NE(state.worker_error, after_first);
    compressed_allreduce(comm, state, buf.data(), 20);
    EXPECT_EQ(state.n, 20u);
    EXPECT_EQ(state.worker_error.size(), 32u);
    EXPECT_EQ(state.server_error.size(), 16u);
    state.zero();
    EXPECT_TRUE(std::all_of(state.worker_error.begin(), state.worker_error.end(),
                            [](float e) { return e == 0.f; }));
  });
}

// Σ_t out_t = Σ_t mean_r(x_r,t) − mean_r(e_w,r,T) − e_s,T over T = 100 calls, on the padded
// length. The padded tail's outputs are not visible through a call with length n, so every
// rank runs a twin call of length n' on the same data with explicit zero padding: its
// arithmetic is the same, which the test checks bit for bit (outputs on [0, n) and both
// error buffers), and its output covers the tail.
//
// Tolerance (float32). In exact arithmetic the identity holds for any scale values, because
// each error is defined as (what was there) − (what was sent). So only the rounding of the
// updates breaks it. With u = 2^−24, per call and element:
//   worker:  b = fl(x + e)                 error ≤ u·B      where B ≥ |x| + |e_w|
//            e_w = fl(b − q)               error ≤ u·2B     (|q| = s_w ≤ max|b| ≤ B)
//   server:  Σ_j q_j in fp32, p−1 adds     error ≤ (p−1)·u·B after the 1/p scaling
//            ·fl(1/p) and its product      error ≤ 2u·B
//            a = fl(· + e_s)               error ≤ u·(B + S)     where S ≥ |e_s|
//            e_s = fl(a − out)             error ≤ u·2(B + S)    (|out| = s_s ≤ max|a|)
// In total at most u·((p + 7)·B + 3·S) per call; the bound takes u·((p + 8)·B + 3·S)
// summed over calls, times 2 for second-order terms. The test's own sums are in float64
// (error ~1e−16 relative) and do not matter.
TEST(CompressedAllreduce, ErrorFeedbackTelescopesOverOneHundredCalls) {
  constexpr int kCalls = 100;
  for (int p : {1, 3, 5}) {
    const size_t n = 1001;
    const size_t n_pad = clbo::onebit_padded_size(n, p);
    ASSERT_GT(n_pad, n);  // there is a tail to check
    std::vector<std::vector<double>> sum_x(p, std::vector<double>(n_pad, 0.0));
    std::vector<std::vector<double>> sum_out(p, std::vector<double>(n_pad, 0.0));
    std::vector<std::vector<double>> bound_b(p, std::vector<double>(kCalls, 0.0));
    std::vector<std::vector<double>> bound_s(p, std::vector<double>(kCalls, 0.0));
    std::vector<OnebitState> final_state(static_cast<size_t>(p));
    run_local(p, [&](Communicator& comm) {
      const int r = comm.rank();
      OnebitState padded, twin;
      for (int t = 0; t < kCalls; ++t) {
        const std::vector<float> x = inputs(p, n, static_cast<uint64_t>(1000 + t))[r];
        double max_x = 0, max_ew = 0, max_es = 0;
        for (float v : x) max_x = std::max(max_x, std::fabs(static_cast<double>(v)));
        for (float e : twin.worker_error) max_ew = std::max(max_ew, std::fabs(double(e)));
        for (float e : twin.server_error) max_es = std::max(max_es, std::fabs(double(e)));
        bound_b[r][t] = max_x + max_ew;
        bound_s[r][t] = max_es;

        std::vector<float> buf(n_pad + 8, 12345.f);  // sentinels past n must survive
        std::copy(x.begin(), x.end(), buf.begin());
        compressed_allreduce(comm, padded, buf.data(), n);
        std::vector<float> full(n_pad, 0.f);
        std::copy(x.begin(), x.end(), full.begin());
        compressed_allreduce(comm, twin, full.data(), n_pad);

        ASSERT_TRUE(std::equal(buf.begin(), buf.begin() + n, full.begin()));
        ASSERT_TRUE(std::all_of(buf.begin() + n, buf.end(), [](float v) { return v == 12345.f; }));
        ASSERT_TRUE(test::bit_identical(padded.worker_error, twin.worker_error));
        ASSERT_TRUE(test::bit_identical(padded.server_error, twin.server_error));
        for (size_t i = 0; i < n; ++i) sum_x[r][i] += x[i];
        for (size_t i = 0; i < n_pad; ++i) sum_out[r][i] += full[i];
      }
      final_state[r] = twin;
    });

    double tol = 0;
    for (int t = 0; t < kCalls; ++t) {
      double b = 0, s = 0;
      for (int r = 0; r < p; ++r) {
        b = std::max(b, bound_b[r][t]);
        s = std::max(s, bound_s[r][t]);
      }
      tol += 0x1p-24 * ((p + 8) * b + 3 * s);
    }
    tol *= 2;

    const size_t c = n_pad / p;
    double worst = 0, error_terms = 0;
    for (size_t i = 0; i < n_pad; ++i) {
      double mean_x = 0, mean_ew = 0;
      for (int r = 0; r < p; ++r) {
        mean_x += sum_x[r][i] / p;
        mean_ew += static_cast<double>(final_state[r].worker_error[i]) / p;
        EXPECT_EQ(sum_out[r][i], sum_out[0][i]);  // ranks agree
      }
      const double es = final_state[i / c].server_error[i % c];
      const double residual = sum_out[0][i] - (mean_x - mean_ew - es);
      worst = std::max(worst, std::fabs(residual));
      error_terms = std::max(error_terms, std::fabs(mean_ew + es));
      ASSERT_LE(std::fabs(residual), tol)
          << "p " << p << " element " << i << (i >= n ? " (padding)" : "");
    }
    // The check has teeth: the error terms it accounts for are far above the tolerance.
    EXPECT_GT(error_terms, 100 * tol) << "p " << p;
    std::printf(
        "[telescoping] p=%d n=%zu n'=%zu calls=%d: max residual %.3g, tolerance %.3g, "
        "max |mean e_w + e_s| %.3g\n",
        p, n, n_pad, kCalls, worst, tol, error_terms);
  }
}

// The float64 model satisfies the identity to float64 rounding, and the float32 algorithm
// follows the model: with odd p there are no voting ties, so signs agree and magnitudes
// differ only by accumulated float32 rounding.
TEST(CompressedAllreduce, MatchesAFloat64ModelAndTheModelTelescopes) {
  constexpr int kCalls = 20;
  for (int p : {3, 5}) {
    const size_t n = 1001;
    std::vector<test::Traffic> traffic;
    const auto outs = run_calls(p, n, kCalls, &traffic);
    Float64Onebit model(p, n);
    std::vector<double> sum_out(model.n_pad, 0.0), sum_mean_x(model.n_pad, 0.0);
    double magnitude = 0;
    for (int t = 0; t < kCalls; ++t) {
      const Buffers x = inputs(p, n, t);
      const std::vector<double> out = model.step(x);
      for (size_t i = 0; i < model.n_pad; ++i) {
        sum_out[i] += out[i];
        for (int r = 0; r < p; ++r) sum_mean_x[i] += (i < n ? x[r][i] : 0.0) / p;
        magnitude = std::max(magnitude, std::fabs(out[i]));
      }
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(outs[t][0][i] >= 0, out[i] >= 0) << "p " << p << " call " << t << " i " << i;
        // Error buffers drift apart by ~u·|terms| per call: 1e−4 relative is generous for
        // 20 calls and far below the 2·scale gap of a sign flip.
        ASSERT_NEAR(outs[t][0][i], out[i], 1e-4 * std::fabs(out[i])) << "p " << p << " t " << t;
      }
    }
    // Float64 identity: same derivation as above with u = 2^−53 (magnitudes are O(1)).
    const double tol = 2 * kCalls * 0x1p-53 * (p + 11) * std::max(1.0, 4 * magnitude);
    for (size_t i = 0; i < model.n_pad; ++i) {
      double mean_ew = 0;
      for (int r = 0; r < p; ++r) mean_ew += model.worker_error[r][i] / p;
      ASSERT_NEAR(sum_out[i], sum_mean_x[i] - mean_ew - model.server_error[i], tol) << i;
    }
  }
}

}  // namespace
}  // namespace clbo
