// The `nccl` backend of `clbo bench collectives`: device buffers on one GPU per rank, either
// one process per GPU under mpirun (NCCL id broadcast over MPI) or one process driving
// --ngpus GPUs (ncclCommInitAll, one thread each).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "bench_world.hpp"
#include "clbo/collectives/nccl.hpp"
#include "clbo/core/error.hpp"
#include "clbo/cuda/mask.hpp"
#include "clbo/cuda/runtime.hpp"
#include "clbo/kernels/half.hpp"

#ifdef CLBO_WITH_MPI_BACKEND
#include "clbo/collectives/mpi.hpp"
#endif

namespace clbo::bench {

namespace {

using cuda::DeviceBuffer;

uint64_t config_hash(const Sweep& run) {
  const auto& c = run.cfg;
  const std::string text =
      fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}",
                  fmt::join(c.collectives, ","), c.datatype, c.op, c.min_bytes, c.max_bytes,
                  c.step_bytes, c.step_factor, c.iters, c.agg_iters, c.warmup, c.run_cycles,
                  c.check, c.average, c.blocking, c.report_cputime, c.sparse_k, c.seed, c.backend);
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : text) h = (h ^ ch) * 1099511628211ull;
  return h;
}

class NcclOps final : public RankOps {
 public:
  NcclOps(NcclCommunicator& comm, const Sweep& run, std::string bootstrap)
      : comm_(comm), sweep_(run), bootstrap_(std::move(bootstrap)) {
    gather_.resize(static_cast<size_t>(comm.size()) * 2);
  }

  int rank() const override { return comm_.rank(); }
  int size() const override { return comm_.size(); }
  void barrier() override { comm_.barrier(); }

  std::vector<double> gather_over_ranks(double v) override {
    const auto all = gather(&v);
    std::vector<double> out(all.size());
    for (size_t j = 0; j < all.size(); ++j) out[j] = std::bit_cast<double>(all[j]);
    return out;
  }
  uint64_t max_over_ranks_u64(uint64_t v) override {
    const auto all = gather(&v);
    return *std::max_element(all.begin(), all.end());
  }
  uint64_t sum_over_ranks(uint64_t v) override {
    uint64_t s = 0;
    for (uint64_t x : gather(&v)) s += x;
    return s;
  }

  void setup(const Case& k, size_t count) override {
    case_ = k;
    op_ = k.op;
    count_ = count;
    const int p = size();
    if (op_ == Op::kAlltoall || op_ == Op::kAllgather) {
      const size_t bytes = count * k.elem_bytes;
      send_.resize(op_ == Op::kAlltoall ? bytes : bytes / static_cast<size_t>(p));
      recv_.resize(bytes);
    } else if (half_buffer()) {
      half_.resize(count);
      half_src_.resize(count);
    } else {
      buf_.resize(count);
      src_.resize(count);
    }
    if (op_ == Op::kSparse) {
      mask_.resize((count + 7) / 8);
      scratch_.resize(count);
      cuda::random_mask(sweep_.cfg.seed, 1, sweep_.cfg.sparse_k, 0, count, mask_.data(),
                        comm_.stream());
      comm_.synchronize();
      host_mask_ = mask_.download();
    }
    state_ = DeviceOnebitState{};
    comm_.options().check_headers = true;
    comm_.agree(op_name(op_), count, k.elem_bytes, config_hash(sweep_));
    comm_.options().check_headers = false;  // the per-size agreement covers the timed calls
  }

  void set_in_place(bool in_place) override { in_place_ = in_place; }

  uint64_t run_checked() override {
    const int r = rank(), p = size();
    fill_check();
    call();
    comm_.synchronize();
    uint64_t wrong = 0;
    switch (op_) {
      case Op::kAllreduce:
      case Op::kSparse: {
        const auto got = download_floats();
        for (size_t i = 0; i < count_; ++i) {
          const bool kept = op_ == Op::kAllreduce || ((host_mask_[i / 8] >> (7 - i % 8)) & 1u);
          float want = 0.0f;
          if (kept)
            for (int j = 0; j < p; ++j) want += dense_check_value(j, i);
          else
            want = dense_check_value(r, i);
          wrong += got[i] != want;
        }
        break;
      }
      case Op::kCompressed: {
        const auto got = buf_.download();
        const auto& want = reference_compressed(p, count_, sweep_.cfg.seed);
        for (size_t i = 0; i < count_; ++i) wrong += std::memcmp(&got[i], &want[i], 4) != 0;
        break;
      }
      case Op::kAlltoall:
      case Op::kAllgather: {
        const auto got = recv_.download();
        const size_t block = got.size() / static_cast<size_t>(p);
        for (int j = 0; j < p; ++j)
          for (size_t i = 0; i < block; ++i) {
            const uint8_t want =
                op_ == Op::kAlltoall ? pattern_byte(j, r, i) : pattern_byte(j, 0, i);
            wrong += got[static_cast<size_t>(j) * block + i] != want;
          }
        wrong /= case_.elem_bytes;
        break;
      }
      case Op::kPingpong:  // not offered on nccl (validate)
        break;
    }
    return wrong;
  }

  uint64_t run_counted() override {
    comm_.reset_counters();
    call();
    comm_.synchronize();
    return comm_.bytes_sent();
  }

  void prepare_timing() override {
    if (op_ == Op::kAllreduce || op_ == Op::kSparse) {
      if (half_buffer())
        (in_place_ ? half_ : half_src_).fill_bytes(0);
      else
        (in_place_ ? buf_ : src_).fill_bytes(0);
    }
    if (op_ == Op::kCompressed) upload_uniform();
  }

  void run() override { call(); }
  void finish() override { comm_.synchronize(); }
  // Only single-launch collectives reach here grouped: validate() rejects -m > 1 for the
  // compressed and sparse allreduce, whose kernels between NCCL calls read the results a
  // group would defer.
  void group_start() override { nccl_check(ncclGroupStart(), "ncclGroupStart (-m)"); }
  void group_end() override { nccl_check(ncclGroupEnd(), "ncclGroupEnd (-m)"); }

  nlohmann::json describe() const override {
    nlohmann::json j;
    j["name"] = "nccl";
    j["p"] = comm_.size();
    j["bootstrap"] = bootstrap_;
    j["nccl_library"] = nccl_library_version();
    j["device"] = cuda::device_description(comm_.device());
    j["per_call_header_check"] = false;
    return j;
  }

 private:
  // fp16 allreduce runs on fp16 device buffers, as nccl-tests' -d half does.
  bool half_buffer() const { return op_ == Op::kAllreduce && case_.type == "half"; }
  DType wire() const { return case_.type == "half" ? DType::kF16 : DType::kF32; }

  std::vector<uint64_t> gather(const void* value8) {
    uint64_t v;
    std::memcpy(&v, value8, 8);
    auto* d = gather_.data();
    cuda::check(cudaMemcpyAsync(d + rank(), &v, 8, cudaMemcpyHostToDevice, comm_.stream()),
                "gather upload");
    comm_.allgather_async(d + rank(), d, 8);
    std::vector<uint64_t> all(static_cast<size_t>(size()));
    cuda::check(
        cudaMemcpyAsync(all.data(), d, 8 * all.size(), cudaMemcpyDeviceToHost, comm_.stream()),
        "gather download");
    comm_.synchronize();
    return all;
  }

  void copy_on_device(void* dst, const void* src, size_t bytes) {
    cuda::check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, comm_.stream()),
                "staging copy");
  }

  // The sums' input: the output buffer in place, a separate one out of place.
  void upload_floats(const std::vector<float>& host) {
    if (half_buffer()) {
      std::vector<uint16_t> h(host.size());
      kernels::f32_to_f16(host.data(), host.size(), h.data());
      (in_place_ ? half_ : half_src_).upload(h);
    } else {
      (in_place_ ? buf_ : src_).upload(host);
    }
  }
  std::vector<float> download_floats() {
    if (!half_buffer()) return buf_.download();
    const auto h = half_.download();
    std::vector<float> f(h.size());
    kernels::f16_to_f32(h.data(), h.size(), f.data());
    return f;
  }
  void upload_uniform() {
    std::vector<float> x(count_);
    fill_uniform(x.data(), count_, sweep_.cfg.seed, rank());
    (in_place_ ? buf_ : src_).upload(x);
  }
  uint8_t* own_block() { return recv_.data() + static_cast<size_t>(rank()) * send_.size(); }

  void fill_check() {
    const int r = rank(), p = size();
    switch (op_) {
      case Op::kAllreduce:
      case Op::kSparse: {
        std::vector<float> x(count_);
        for (size_t i = 0; i < count_; ++i) x[i] = dense_check_value(r, i);
        upload_floats(x);
        break;
      }
      case Op::kCompressed:
        upload_uniform();
        state_ = DeviceOnebitState{};
        break;
      case Op::kAlltoall: {
        std::vector<uint8_t> s(recv_.size());
        const size_t block = s.size() / static_cast<size_t>(p);
        for (int j = 0; j < p; ++j)
          for (size_t i = 0; i < block; ++i)
            s[static_cast<size_t>(j) * block + i] = pattern_byte(r, j, i);
        recv_.fill_bytes(0);
        if (in_place_)
          recv_.upload(s);
        else
          send_.upload(s);
        break;
      }
      case Op::kAllgather: {
        std::vector<uint8_t> s(send_.size());
        for (size_t i = 0; i < s.size(); ++i) s[i] = pattern_byte(r, 0, i);
        recv_.fill_bytes(0);
        send_.upload(s);
        if (in_place_) copy_on_device(own_block(), send_.data(), s.size());
        break;
      }
      case Op::kPingpong:  // not offered on nccl (validate)
        break;
    }
    comm_.synchronize();
  }

  // ncclAllReduce and ncclAllGather run both halves natively; the compressed and sparse
  // allreduce run in place and alltoall out of place, the other half staging through a
  // device copy (staging_note).
  void call() {
    const int p = size();
    switch (op_) {
      case Op::kAllreduce:
        if (half_buffer())
          comm_.allreduce_sum_async(in_place_ ? half_.data() : half_src_.data(), half_.data(),
                                    count_, DType::kF16);
        else
          comm_.allreduce_sum_async(in_place_ ? buf_.data() : src_.data(), buf_.data(), count_,
                                    DType::kF32);
        return;
      case Op::kCompressed:
        if (!in_place_) copy_on_device(buf_.data(), src_.data(), count_ * sizeof(float));
        nccl_compressed_allreduce(comm_, state_, buf_.data(), count_);
        return;
      case Op::kSparse:
        if (!in_place_) copy_on_device(buf_.data(), src_.data(), count_ * sizeof(float));
        nccl_sparse_allreduce_sum(comm_, buf_.data(), count_, mask_.data(), wire(),
                                  scratch_.data());
        return;
      case Op::kAlltoall:
        if (in_place_) copy_on_device(send_.data(), recv_.data(), recv_.size());
        comm_.alltoall_async(send_.data(), recv_.data(), send_.size() / static_cast<size_t>(p));
        return;
      case Op::kAllgather:
        comm_.allgather_async(in_place_ ? own_block() : send_.data(), recv_.data(), send_.size());
        return;
      case Op::kPingpong:  // validate() keeps pingpong off the nccl backend
        throw Error("clbo bench collectives: pingpong is not available on nccl");
    }
  }

  NcclCommunicator& comm_;
  const Sweep& sweep_;
  std::string bootstrap_;
  Case case_;
  Op op_ = Op::kAllreduce;
  size_t count_ = 0;
  bool in_place_ = true;
  DeviceBuffer<float> buf_, src_, scratch_;
  DeviceBuffer<uint16_t> half_, half_src_;
  DeviceBuffer<uint8_t> send_, recv_, mask_;
  DeviceBuffer<uint64_t> gather_;
  std::vector<uint8_t> host_mask_;
  DeviceOnebitState state_;
};

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : fallback;
}

}  // namespace

std::vector<Row> run_nccl_backend(const Sweep& run, nlohmann::json& describe, bool& is_root) {
  if (cuda::device_count() == 0)
    throw Error("nccl backend: no CUDA device: " + cuda::unavailable_reason());
  const int world = env_int("OMPI_COMM_WORLD_SIZE", env_int("PMI_SIZE", 0));
  if (world > 0) {
#ifdef CLBO_WITH_MPI_BACKEND
    // One process per GPU: rank 0's NCCL id reaches every rank over MPI.
    MpiSession session;
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    ncclUniqueId id{};
    if (rank == 0) id = nccl_unique_id();
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
    const int local = env_int("OMPI_COMM_WORLD_LOCAL_RANK", rank);
    NcclCommunicator comm(rank, size, id, local % cuda::device_count());
    NcclOps ops(comm, run, "mpi");
    is_root = rank == 0;
    auto rows = sweep(ops, run);
    describe = ops.describe();
    return rows;
#else
    throw Error("nccl backend: started under mpirun, but this clbo was built without MPI");
#endif
  }
  // nccl-tests: -t threads of -g GPUs each; clbo drives every GPU from its own thread.
  const int ngpus = static_cast<int>(run.cfg.nthreads * run.cfg.ngpus);
  if (ngpus > cuda::device_count())
    throw InputError("clbo bench collectives", "-g", std::to_string(run.cfg.ngpus),
                     fmt::format("-t {} x -g {} GPUs, but only {} CUDA device(s) visible",
                                 run.cfg.nthreads, run.cfg.ngpus, cuda::device_count()));
  std::vector<int> devices(static_cast<size_t>(ngpus));
  for (int d = 0; d < ngpus; ++d) devices[static_cast<size_t>(d)] = d;
  std::vector<Row> rows;
  std::mutex mu;
  run_nccl_single_process(devices, [&](NcclCommunicator& comm) {
    NcclOps ops(comm, run, "single_process");
    auto mine = sweep(ops, run);
    if (comm.rank() == 0) {
      std::lock_guard lock(mu);
      rows = std::move(mine);
      describe = ops.describe();
    }
  });
  is_root = true;
  return rows;
}

}  // namespace clbo::bench
