// The `mpi` backend under mpirun -np {2,3,4}: the invariants the `local` backend is held
// to, plus bit-identical results between `local` and `mpi` for the same inputs, exact byte
// counts against CommPlan, and clear errors (never hangs) on mismatched calls.
//
// Every rank runs every test. The `local` reference for rank r is computed inside each
// process by running all p ranks as threads (run_local) on the same generated inputs.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "../kernels/kernel_test_util.hpp"
#include "clbo/collectives/algorithms.hpp"
#include "clbo/collectives/local.hpp"
#include "clbo/collectives/mpi.hpp"
#include "clbo/core/error.hpp"
#include "clbo/kernels/mask.hpp"
#include "clbo/kernels/onebit.hpp"
#include "clbo/plan/plan.hpp"

namespace clbo {
namespace {

using kernels::testing::bitwise_equal;
using kernels::testing::random_floats;

// The input of `rank` for step t of a test with base seed `seed`.
std::vector<float> input(uint64_t seed, int rank, int t, size_t n) {
  return random_floats(n, seed * 1000003 + static_cast<uint64_t>(rank) * 101 + t);
}

// Runs fn(comm, rank_outputs) for all p ranks on the local backend and returns rank r's.
template <class Fn>
std::vector<std::vector<float>> local_outputs(int p, Fn fn) {
  std::vector<std::vector<float>> out(static_cast<size_t>(p));
  run_local(p, [&](Communicator& c) { out[static_cast<size_t>(c.rank())] = fn(c); });
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Throws unless every rank holds bit-identical `v` (compares against rank 0's copy).
::testing::AssertionResult identical_on_all_ranks(MpiCommunicator& comm,
                                                  const std::vector<float>& v) {
  std::vector<float> first(v);
  MPI_Bcast(first.data(), static_cast<int>(first.size()), MPI_FLOAT, 0, comm.comm());
  if (bitwise_equal(first, v)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "rank " << comm.rank() << " differs from rank 0";
}

class Mpi : public ::testing::Test {
 protected:
  void TearDown() override { comm.barrier(); }  // tests never overlap across ranks
  MpiCommunicator comm{MPI_COMM_WORLD};
  const int p = comm.size(), r = comm.rank();
};

TEST_F(Mpi, RunsWithSeveralRanks) {
  EXPECT_GE(p, 2) << "run under mpirun -np 2, 3 or 4";
  EXPECT_EQ(comm.backend_name(), "mpi");
  EXPECT_LT(r, p);
}

TEST_F(Mpi, SendrecvRingCarriesEverySize) {
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{1000}, size_t{1} << 20}) {
    std::vector<uint8_t> out(bytes), in(bytes, 0xEE);
    for (size_t i = 0; i < bytes; ++i) out[i] = static_cast<uint8_t>(r * 31 + i);
    const int next = (r + 1) % p, prev = (r + p - 1) % p;
    comm.reset_counters();
    comm.sendrecv(next, out.data(), bytes, prev, in.data(), bytes, 1000);
    for (size_t i = 0; i < bytes; ++i)
      ASSERT_EQ(in[i], static_cast<uint8_t>(prev * 31 + i)) << "byte " << i;
    EXPECT_EQ(comm.bytes_sent(), bytes);
  }
}

TEST_F(Mpi, ReceivingTheWrongSizeNamesBothSizes) {
  if (r == 0) {
    const double payload = 1.0, next = 2.0;
    comm.send(1, &payload, sizeof(payload), 1001);
    comm.send(1, &next, sizeof(next), 1001);
  } else if (r == 1) {
    char buf[16];
    try {
      comm.recv(0, buf, sizeof(buf), 1001);
      ADD_FAILURE() << "a 16-byte receive of an 8-byte message must fail";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("16 bytes"), std::string::npos) << what;
      EXPECT_NE(what.find("8 bytes"), std::string::npos) << what;
    }
    // The mismatched message was consumed with the error: the channel works on.
    double next = 0.0;
    comm.recv(0, &next, sizeof(next), 1001);
    EXPECT_EQ(next, 2.0);
  }
}

TEST_F(Mpi, AWaitThatCannotFinishTimesOutInsteadOfHanging) {
  MpiOptions opt;
  opt.timeout_s = 0.3;
  MpiCommunicator impatient(MPI_COMM_WORLD, opt);
  if (r == 0) {
    const auto t0 = std::chrono::steady_clock::now();
    char b;
    try {
      impatient.recv(1, &b, 1, 1002);  // rank 1 never sends
      ADD_FAILURE() << "expected a timeout";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("timed out"), std::string::npos) << e.what();
    }
    EXPECT_LT(seconds_since(t0), 3.0);
  }
}

TEST_F(Mpi, AlltoallAllgatherBarrierMoveEveryBlockAndCountPlanBytes) {
  const size_t b = 37;
  std::vector<uint8_t> send(b * p), recv(b * p, 0), gathered(b * p, 0);
  for (int j = 0; j < p; ++j)
    for (size_t i = 0; i < b; ++i) send[j * b + i] = static_cast<uint8_t>(r * 16 + j + i);
  comm.reset_counters();
  comm.alltoall(send.data(), recv.data(), b);
  for (int j = 0; j < p; ++j)
    for (size_t i = 0; i < b; ++i)
      ASSERT_EQ(recv[j * b + i], static_cast<uint8_t>(j * 16 + r + i)) << "block " << j;
  comm.allgather(send.data(), gathered.data(), b);
  for (int j = 0; j < p; ++j)
    for (size_t i = 0; i < b; ++i)
      ASSERT_EQ(gathered[j * b + i], static_cast<uint8_t>(j * 16 + 0 + i)) << "block " << j;
  comm.barrier();
  EXPECT_EQ(comm.bytes_sent(), 2ull * (p - 1) * b);
}

TEST_F(Mpi, MismatchedAlltoallFailsEveryRankWithinSeconds) {
  const size_t b = r == p - 1 ? 12 : 8;  // the last rank disagrees
  std::vector<uint8_t> send(12 * p), recv(12 * p);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    comm.alltoall(send.data(), recv.data(), b);
    ADD_FAILURE() << "rank " << r << " should have seen the size mismatch";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("ranks disagree on alltoall"), std::string::npos) << what;
    EXPECT_NE(what.find("count = 8"), std::string::npos) << what;
    EXPECT_NE(what.find("count = 12"), std::string::npos) << what;
  }
  EXPECT_LT(seconds_since(t0), 5.0);
}

TEST_F(Mpi, MismatchedConfigurationFailsEveryRank) {
  try {
    comm.agree(CallHeader::make("optimizer_step", 100, 4, r == 0 ? 0xabc : 0xabd));
    ADD_FAILURE() << "configs differ";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("configuration"), std::string::npos) << e.what();
  }
}

TEST_F(Mpi, RingAllreduceBitIdenticalToLocal) {
  for (DType wire : {DType::kF32, DType::kF16})
    for (size_t n : {size_t{1}, size_t{1000}, size_t{100003}}) {
      const auto want = local_outputs(p, [&](Communicator& c) {
        auto x = input(1, c.rank(), 0, n);
        ring_allreduce_sum(c, x.data(), n, wire);
        return x;
      });
      auto x = input(1, r, 0, n);
      comm.reset_counters();
      ring_allreduce_sum(comm, x.data(), n, wire);
      EXPECT_TRUE(bitwise_equal(x, want[r])) << "n=" << n << " wire " << to_string(wire);
      EXPECT_TRUE(identical_on_all_ranks(comm, x));
      EXPECT_EQ(comm.bytes_sent(), ring_bytes_per_rank(n, p, r, dtype_bytes(wire)));
    }
}

// Both MPI flavours of the compressed allreduce (the generic algorithm over the MPI
// Communicator and DeepSpeed's gather variant) against `local`, over several steps so the
// error feedback carries: outputs bit-identical every step, identical on all ranks, bytes
// equal to the plan, and the error-feedback invariant of docs/reference/algorithms.md §2 in
// float64.
TEST_F(Mpi, CompressedAllreduceBitIdenticalToLocalOverSteps) {
  const int T = 3;
  for (size_t n : {size_t{1}, size_t{1000}, size_t{65541}}) {
    const auto want = local_outputs(p, [&](Communicator& c) {
      OnebitState st;
      std::vector<float> all;
      for (int t = 0; t < T; ++t) {
        auto x = input(2, c.rank(), t, n);
        compressed_allreduce(c, st, x.data(), n);
        all.insert(all.end(), x.begin(), x.end());
      }
      return all;
    });
    const uint64_t plan_bytes =
        make_plan(CommCall{CollKind::kCompressedAllreduce, n, DType::kF32, "test"}, p)
            .bytes_sent_by(r);
    ASSERT_EQ(plan_bytes, onebit_bytes_per_rank(n, p));
    for (bool gather : {false, true}) {
      OnebitState st;
      std::vector<double> out_sum(n, 0.0), mean_x_sum(n, 0.0);
      for (int t = 0; t < T; ++t) {
        auto x = input(2, r, t, n);
        for (int j = 0; j < p; ++j) {
          const auto xj = input(2, j, t, n);
          for (size_t i = 0; i < n; ++i) mean_x_sum[i] += static_cast<double>(xj[i]) / p;
        }
        comm.reset_counters();
        if (gather)
          mpi_compressed_allreduce_gather(comm, st, x.data(), n);
        else
          compressed_allreduce(comm, st, x.data(), n);
        EXPECT_EQ(comm.bytes_sent(), plan_bytes) << "gather=" << gather;
        const std::vector<float> expect(want[r].begin() + t * n, want[r].begin() + (t + 1) * n);
        EXPECT_TRUE(bitwise_equal(x, expect)) << "n=" << n << " step " << t << " gather=" << gather;
        EXPECT_TRUE(identical_on_all_ranks(comm, x));
        for (size_t i = 0; i < n; ++i) out_sum[i] += x[i];
      }
      // Σ_t out = Σ_t mean_r x − mean_r e_w − e_s (every rank's server error, concatenated).
      const size_t n_pad = st.worker_error.size(), c = st.server_error.size();
      std::vector<float> ew(n_pad * p), es(c * p);
      comm.allgather(st.worker_error.data(), ew.data(), n_pad * sizeof(float));
      comm.allgather(st.server_error.data(), es.data(), c * sizeof(float));
      double worst = 0.0;
      for (size_t i = 0; i < n; ++i) {
        double mean_ew = 0.0;
        for (int j = 0; j < p; ++j) mean_ew += static_cast<double>(ew[j * n_pad + i]) / p;
        worst = std::max(worst, std::abs(out_sum[i] - (mean_x_sum[i] - mean_ew - es[i])));
      }
      EXPECT_LT(worst, 1e-4) << "n=" << n << " gather=" << gather;
    }
  }
}

TEST_F(Mpi, SparseAndTopkBitIdenticalToLocal) {
  const size_t n = 20011;
  std::vector<uint8_t> mask((n + 7) / 8);
  kernels::random_mask(5, 3, 0.3, 0, n, mask.data());
  for (DType wire : {DType::kF32, DType::kF16}) {
    const auto want = local_outputs(p, [&](Communicator& c) {
      auto x = input(3, c.rank(), 0, n);
      sparse_allreduce_sum(c, x.data(), n, mask.data(), wire);
      return x;
    });
    auto x = input(3, r, 0, n);
    const size_t k = sparse_allreduce_sum(comm, x.data(), n, mask.data(), wire);
    EXPECT_EQ(k, kernels::mask_count(mask.data(), n));
    EXPECT_TRUE(bitwise_equal(x, want[r])) << to_string(wire);
  }
  const auto want = local_outputs(p, [&](Communicator& c) {
    auto x = input(4, c.rank(), 0, n);
    topk_allgather_mean(c, x.data(), n, 500);
    return x;
  });
  auto x = input(4, r, 0, n);
  topk_allgather_mean(comm, x.data(), n, 500);
  EXPECT_TRUE(bitwise_equal(x, want[r]));
}

TEST_F(Mpi, MpiAllreduceSumsExactlyAndCountsRingBytes) {
  const size_t n = 100003;
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = static_cast<float>((r + 1) * (i % 13));  // exact sums
  comm.reset_counters();
  mpi_allreduce_sum(comm, x.data(), n);
  const float ranks = static_cast<float>(p * (p + 1) / 2);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(x[i], ranks * static_cast<float>(i % 13)) << i;
  EXPECT_EQ(comm.bytes_sent(), ring_bytes_per_rank(n, p, r, 4));
  EXPECT_THROW(mpi_allreduce_sum(comm, x.data(), n, DType::kF16), Error);
}

TEST_F(Mpi, MismatchedCompressedSizesFailEveryRankWithinSeconds) {
  const size_t n = r == p - 1 ? 1001 : 1000;
  std::vector<float> x(1001, 1.0f);
  OnebitState st;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    mpi_compressed_allreduce_gather(comm, st, x.data(), n);
    ADD_FAILURE() << "rank " << r << " should have seen the size mismatch";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("count = 1000"), std::string::npos) << what;
    EXPECT_NE(what.find("count = 1001"), std::string::npos) << what;
  }
  try {
    mpi_allreduce_sum(comm, x.data(), n);
    ADD_FAILURE() << "rank " << r << " should have seen the size mismatch";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ranks disagree on allreduce"), std::string::npos);
  }
  EXPECT_LT(seconds_since(t0), 5.0);
}

TEST_F(Mpi, CudaAwareFollowsTheLibrary) {
  const bool supported = mpi_library_cuda_support();
  EXPECT_EQ(comm.cuda_aware(), supported);  // the default is auto
  MpiOptions off;
  off.cuda_aware = MpiOptions::CudaAware::kOff;
  EXPECT_FALSE(MpiCommunicator(MPI_COMM_WORLD, off).cuda_aware());
  MpiOptions on;
  on.cuda_aware = MpiOptions::CudaAware::kOn;
  if (supported) {
    EXPECT_TRUE(MpiCommunicator(MPI_COMM_WORLD, on).cuda_aware());
  } else {
    try {
      MpiCommunicator c(MPI_COMM_WORLD, on);
      ADD_FAILURE() << "cuda_aware = on needs a CUDA-aware MPI";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("no CUDA support"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace clbo
