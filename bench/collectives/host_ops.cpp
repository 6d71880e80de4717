// The host backends of `clbo bench collectives`: `local` (ranks as threads) and `mpi`.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>
#include <mutex>

#include "bench_world.hpp"
#include "clbo/collectives/algorithms.hpp"
#include "clbo/collectives/call_header.hpp"
#include "clbo/collectives/counting.hpp"
#include "clbo/collectives/local.hpp"
#include "clbo/core/error.hpp"
#include "clbo/kernels/mask.hpp"

#ifdef CLBO_WITH_MPI_BACKEND
#include "clbo/collectives/mpi.hpp"
#endif

namespace clbo::bench {

namespace {

constexpr int kTagPingpong = 1000;  // user point-to-point range (communicator.hpp)

#ifdef CLBO_WITH_MPI_BACKEND
// Everything in the configuration that every rank must share, by option name, so a
// mismatch names the option. Only the MPI backend checks it: local ranks share one config.
Settings shared_settings(const Sweep& run) {
  const auto& c = run.cfg;
  Settings s;
  s.add("--collective", fmt::format("{}", fmt::join(c.collectives, ",")));
  s.add("--backend", c.backend);
  s.add("--datatype", c.datatype);
  s.add("--op", c.op);
  s.add("--algo", c.algo);
  s.add("--minbytes", c.min_bytes);
  s.add("--maxbytes", c.max_bytes);
  s.add("--stepbytes", c.step_bytes);
  s.add("--stepfactor", std::to_string(c.step_factor));
  s.add("--iters", std::to_string(c.iters));
  s.add("--min-time", fmt::format("{}", c.min_time_s));
  s.add("--agg_iters", std::to_string(c.agg_iters));
  s.add("--warmup_iters", std::to_string(c.warmup));
  s.add("--run_cycles", std::to_string(c.run_cycles));
  s.add("--check", std::to_string(c.check));
  s.add("--average", std::to_string(c.average));
  s.add("--blocking", std::to_string(c.blocking));
  s.add("--report_cputime", std::to_string(c.report_cputime));
  s.add("--sparse-k", fmt::format("{}", c.sparse_k));
  s.add("--seed", std::to_string(c.seed));
  return s;
}
#endif

class HostOps final : public RankOps {
 public:
  HostOps(Communicator& comm, const Sweep& run) : comm_(comm), sweep_(run) {
#ifdef CLBO_WITH_MPI_BACKEND
    mpi_ = dynamic_cast<MpiCommunicator*>(&comm);
#endif
  }

  int rank() const override {
    return comm_.rank();
  }
  int size() const override {
    return comm_.size();
  }
  void barrier() override {
    comm_.barrier();
  }

  std::vector<double> gather_over_ranks(double v) override {
    std::vector<double> all(static_cast<size_t>(size()));
    comm_.allgather(&v, all.data(), sizeof(double));
    return all;
  }
  uint64_t max_over_ranks_u64(uint64_t v) override {
    const auto all = gather_u64(v);
    return *std::max_element(all.begin(), all.end());
  }
  uint64_t sum_over_ranks(uint64_t v) override {
    uint64_t s = 0;
    for (uint64_t x : gather_u64(v)) s += x;
    return s;
  }

  void setup(const Case& k, size_t count) override {
    case_ = k;
    op_ = k.op;
    count_ = count;
    const int p = size();
    const size_t bytes = count * k.elem_bytes;
    if (op_ == Op::kPingpong) {
      send_.assign(bytes, 0);
      recv_.assign(bytes, 0);
    } else if (op_ == Op::kAlltoall || op_ == Op::kAllgather) {
      send_.assign(op_ == Op::kAlltoall ? bytes : bytes / static_cast<size_t>(p), 0);
      recv_.assign(bytes, 0);
    } else {
      buf_.assign(count, 0.0f);
      src_.assign(count, 0.0f);
    }
    if (op_ == Op::kSparse) {
      mask_.assign((count + 7) / 8, 0);
      kernels::random_mask(sweep_.cfg.seed, 1, sweep_.cfg.sparse_k, 0, count, mask_.data());
    }
    state_ = OnebitState{};
#ifdef CLBO_WITH_MPI_BACKEND
    if (mpi_) {
      // Every rank must run the same op, size and configuration; a mismatch fails all ranks
      // here, before any payload. The timed calls then skip their per-call header.
      mpi_->set_check_headers(true);
      const Settings settings = shared_settings(sweep_);
      mpi_->agree(CallHeader::make(op_name(op_), count, k.elem_bytes, settings.hash()), &settings);
      mpi_->set_check_headers(false);
    }
#endif
  }

  void set_in_place(bool in_place) override {
    in_place_ = in_place;
  }

  uint64_t run_checked() override {
    const int r = rank(), p = size();
    fill_check();
    call(comm_);
    uint64_t wrong = 0;
    switch (op_) {
      case Op::kAllreduce:
      case Op::kSparse:
        for (size_t i = 0; i < count_; ++i) {
          const bool kept = op_ == Op::kAllreduce || ((mask_[i / 8] >> (7 - i % 8)) & 1u);
          float want = 0.0f;
          if (kept)
            for (int j = 0; j < p; ++j) want += dense_check_value(j, i);
          else
            want = dense_check_value(r, i);
          wrong += buf_[i] != want;
        }
        break;
      case Op::kCompressed: {
        const auto& want = reference_compressed(p, count_, sweep_.cfg.seed);
        for (size_t i = 0; i < count_; ++i) wrong += std::memcmp(&buf_[i], &want[i], 4) != 0;
        break;
      }
      case Op::kAlltoall:
      case Op::kAllgather: {
        const size_t block = recv_.size() / static_cast<size_t>(p);
        for (int j = 0; j < p; ++j)
          for (size_t i = 0; i < block; ++i) {
            const uint8_t want =
                op_ == Op::kAlltoall ? pattern_byte(j, r, i) : pattern_byte(j, 0, i);
            wrong += recv_[static_cast<size_t>(j) * block + i] != want;
          }
        wrong /= case_.elem_bytes;  // count elements, not bytes (an element is wrong once)
        break;
      }
      case Op::kPingpong: {
        // Each odd rank received its even partner's pattern and the partner got it back.
        const std::vector<uint8_t>& got = r % 2 == 0 && in_place_ ? send_ : recv_;
        if (pingpong_partner(r) >= 0)
          for (size_t i = 0; i < got.size(); ++i)
            wrong += got[i] != pattern_byte(r - r % 2, r - r % 2 + 1, i);
        wrong /= case_.elem_bytes;
        break;
      }
    }
    return wrong;
  }

  uint64_t run_counted() override {
#ifdef CLBO_WITH_MPI_BACKEND
    if (mpi_) {
      mpi_->reset_counters();
      call(*mpi_);
      return mpi_->bytes_sent();
    }
#endif
    CountingCommunicator counting(comm_);
    call(counting);
    return counting.bytes_sent();
  }

  // Dense sums run call after call on their input, so they time zero-filled buffers (the
  // values stay finite; CPU arithmetic speed does not depend on them). The compressed
  // allreduce keeps running on its check input, whose magnitude it preserves.
  void prepare_timing() override {
    std::vector<float>& in = input();
    if (op_ == Op::kAllreduce || op_ == Op::kSparse) std::fill(in.begin(), in.end(), 0.0f);
    if (op_ == Op::kCompressed) fill_uniform(in.data(), count_, sweep_.cfg.seed, rank());
  }

  void run() override {
    call(comm_);
  }

  nlohmann::json describe() const override {
    nlohmann::json j;
    j["name"] = comm_.backend_name();
    j["p"] = comm_.size();
#ifdef CLBO_WITH_MPI_BACKEND
    if (mpi_) {
      j["mpi_library"] = mpi_library_version();
      j["cuda_aware"] = mpi_->cuda_aware();
      j["per_call_header_check"] = false;
    }
#endif
    return j;
  }

 private:
  std::vector<uint64_t> gather_u64(uint64_t v) {
    std::vector<uint64_t> all(static_cast<size_t>(size()));
    comm_.allgather(&v, all.data(), sizeof(uint64_t));
    return all;
  }

  // The sums' input: the output buffer in place, a separate one out of place.
  std::vector<float>& input() {
    return in_place_ ? buf_ : src_;
  }
  // The ping-pong partner of rank r: its pair (0, 1), (2, 3), ...; -1 for the last rank of
  // an odd count.
  int pingpong_partner(int r) const {
    const int partner = r % 2 == 0 ? r + 1 : r - 1;
    return partner < size() ? partner : -1;
  }

  size_t own_block_offset() const {
    return static_cast<size_t>(rank()) * send_.size();  // allgather: this rank's block
  }

  void fill_check() {
    const int r = rank(), p = size();
    switch (op_) {
      case Op::kAllreduce:
      case Op::kSparse: {
        std::vector<float>& in = input();
        for (size_t i = 0; i < count_; ++i) in[i] = dense_check_value(r, i);
        break;
      }
      case Op::kCompressed:
        fill_uniform(input().data(), count_, sweep_.cfg.seed, r);
        state_ = OnebitState{};
        break;
      case Op::kAlltoall: {
        std::fill(recv_.begin(), recv_.end(), 0);
        std::vector<uint8_t>& in = in_place_ ? recv_ : send_;
        const size_t block = in.size() / static_cast<size_t>(p);
        for (int j = 0; j < p; ++j)
          for (size_t i = 0; i < block; ++i)
            in[static_cast<size_t>(j) * block + i] = pattern_byte(r, j, i);
        break;
      }
      case Op::kAllgather: {
        std::fill(recv_.begin(), recv_.end(), 0);
        uint8_t* in = in_place_ ? recv_.data() + own_block_offset() : send_.data();
        for (size_t i = 0; i < send_.size(); ++i) in[i] = pattern_byte(r, 0, i);
        break;
      }
      case Op::kPingpong:
        std::fill(recv_.begin(), recv_.end(), 0);
        if (r % 2 == 0 && pingpong_partner(r) >= 0)
          for (size_t i = 0; i < send_.size(); ++i) send_[i] = pattern_byte(r, r + 1, i);
        break;
    }
  }

  bool uses_algo(const std::string& name) const {
    return ("," + sweep_.cfg.algo + ",").find("," + name + ",") != std::string::npos;
  }

  DType wire() const {
    return case_.type == "half" ? DType::kF16 : DType::kF32;
  }

  // One call of the op on `c` (the rank's communicator, or a counting wrapper of it). The
  // host collectives run the sums in place and alltoall/allgather out of place; the other
  // half stages through a local copy (staging_note).
  void call(Communicator& c) {
    const int p = size();
    if ((op_ == Op::kAllreduce || op_ == Op::kCompressed || op_ == Op::kSparse) && !in_place_)
      std::memcpy(buf_.data(), src_.data(), count_ * sizeof(float));
    if (op_ == Op::kAlltoall && in_place_) std::memcpy(send_.data(), recv_.data(), send_.size());
    if (op_ == Op::kAllgather && in_place_)
      std::memcpy(send_.data(), recv_.data() + own_block_offset(), send_.size());
    switch (op_) {
      case Op::kAllreduce:
#ifdef CLBO_WITH_MPI_BACKEND
        if (mpi_ && !uses_algo("ring")) {
          mpi_allreduce_sum(*mpi_, buf_.data(), count_, wire());
          return;
        }
#endif
        ring_allreduce_sum(c, buf_.data(), count_, wire());
        return;
      case Op::kCompressed:
#ifdef CLBO_WITH_MPI_BACKEND
        if (mpi_ && !uses_algo("alltoall")) {
          mpi_compressed_allreduce_gather(*mpi_, state_, buf_.data(), count_);
          return;
        }
#endif
        compressed_allreduce(c, state_, buf_.data(), count_);
        return;
      case Op::kSparse:
        sparse_allreduce_sum(c, buf_.data(), count_, mask_.data(), wire());
        return;
      case Op::kAlltoall:
        c.alltoall(send_.data(), recv_.data(), send_.size() / static_cast<size_t>(p));
        return;
      case Op::kAllgather:
        c.allgather(send_.data(), recv_.data(), send_.size());
        return;
      case Op::kPingpong: {
        // Every pair (0, 1), (2, 3), ... at once: the odd rank echoes what it received, so
        // the round trip carries the even rank's bytes both ways; in place, the even rank
        // receives the echo into the buffer it sent from. With p odd the last rank waits.
        const int partner = pingpong_partner(rank());
        if (partner < 0) return;
        uint8_t* back = in_place_ ? send_.data() : recv_.data();
        if (rank() % 2 == 0) {
          c.send(partner, send_.data(), send_.size(), kTagPingpong);
          c.recv(partner, back, recv_.size(), kTagPingpong);
        } else {
          c.recv(partner, recv_.data(), recv_.size(), kTagPingpong);
          c.send(partner, recv_.data(), recv_.size(), kTagPingpong);
        }
        return;
      }
    }
  }

  Communicator& comm_;
  const Sweep& sweep_;
#ifdef CLBO_WITH_MPI_BACKEND
  MpiCommunicator* mpi_ = nullptr;
#endif
  Case case_;
  Op op_ = Op::kAllreduce;
  size_t count_ = 0;
  bool in_place_ = true;
  std::vector<float> buf_, src_;
  std::vector<uint8_t> send_, recv_, mask_;
  OnebitState state_;
};

}  // namespace

std::vector<Row> run_local_backend(const Sweep& run, nlohmann::json& describe) {
  std::vector<Row> rows;
  std::mutex mu;
  run_local(static_cast<int>(run.cfg.nthreads), [&](Communicator& comm) {
    HostOps ops(comm, run);
    auto mine = sweep(ops, run);
    if (comm.rank() == 0) {
      std::lock_guard lock(mu);
      rows = std::move(mine);
      describe = ops.describe();
    }
  });
  return rows;
}

std::vector<Row> run_mpi_backend(const Sweep& run, nlohmann::json& describe, bool& is_root) {
#ifdef CLBO_WITH_MPI_BACKEND
  MpiSession session;
  MpiOptions options;
  // -T 0 (nccl-tests' default) waits for peers without a deadline.
  options.timeout_s = run.cfg.timeout_s > 0 ? run.cfg.timeout_s : 1e9;
  MpiCommunicator comm(MPI_COMM_WORLD, options);
  // One header exchange per size (in setup) guards the whole timed loop, so the timed calls
  // themselves run without per-call header checks, as nccl-tests times bare collectives.
  HostOps ops(comm, run);
  is_root = comm.rank() == 0;
  try {
    std::vector<Row> rows = sweep(ops, run);
    describe = ops.describe();
    return rows;
  } catch (const std::exception& e) {
    // Every rank prints the (agreed, hence equal) message; a peer that is stopped or gone
    // would make finalizing hang, so the whole job ends here.
    MpiSession::abort_job(exception_text(e), 1);
  }
#else
  (void)run, (void)describe, (void)is_root;
  throw Error("clbo bench collectives: built without MPI");
#endif
}

#ifndef CLBO_WITH_NCCL_BACKEND
std::vector<Row> run_nccl_backend(const Sweep&, nlohmann::json&, bool&) {
  throw Error("clbo bench collectives: this clbo was built without NCCL");
}
#endif

}  // namespace clbo::bench
