// NcclCommunicator and its bootstrap (see clbo/collectives/nccl.hpp).
#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <thread>

#include "clbo/collectives/call_header.hpp"
#include "clbo/collectives/nccl.hpp"
#include "clbo/core/error.hpp"
#include "clbo/core/results.hpp"
#include "clbo/plan/plan.hpp"

namespace clbo {

namespace {

const char* block(const void* base, int j, size_t bytes) {
  return static_cast<const char*>(base) + static_cast<size_t>(j) * bytes;
}
char* block(void* base, int j, size_t bytes) {
  return static_cast<char*>(base) + static_cast<size_t>(j) * bytes;
}

void require_device(const char* what) {
  if (cuda::device_count() == 0)
    throw Error(
        fmt::format("nccl backend: {}: no CUDA device: {}", what, cuda::unavailable_reason()));
}

// What every rank exchanges before a checked call (fixed size, plain bytes).

}  // namespace

void nccl_check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw Error(fmt::format("nccl: {}: {}", what, ncclGetErrorString(r)));
}

std::string nccl_library_version() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "unknown";
  // NCCL_VERSION(X,Y,Z) = X*10000 + Y*100 + Z since 2.9.
  return fmt::format("{}.{}.{}", v / 10000, (v / 100) % 100, v % 100);
}

ncclUniqueId nccl_unique_id() {
  require_device("ncclGetUniqueId");
  ncclUniqueId id;
  nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  return id;
}

ncclUniqueId nccl_id_via_file(const std::string& path, int rank, double timeout_s) {
  ncclUniqueId id;
  if (rank == 0) {
    id = nccl_unique_id();
    write_file_atomic(path, std::string_view(id.internal, sizeof(id.internal)));
    return id;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    std::error_code ec;
    if (std::filesystem::file_size(path, ec) == sizeof(id.internal) && !ec) {
      std::ifstream in(path, std::ios::binary);
      in.read(id.internal, sizeof(id.internal));
      if (in) return id;
    }
    if (std::chrono::steady_clock::now() > deadline)
      throw Error(fmt::format("nccl: rank {} waited {} s for rank 0 to write the NCCL id to {}",
                              rank, timeout_s, path));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

NcclCommunicator::NcclCommunicator(int rank, int size, const ncclUniqueId& id, int device,
                                   NcclOptions options)
    : rank_(rank), size_(size), device_(device), options_(options) {
  require_device("NcclCommunicator");
  if (device < 0 || device >= cuda::device_count())
    throw Error(fmt::format("nccl backend: device {} does not exist ({} visible)", device,
                            cuda::device_count()));
  cuda::check(cudaSetDevice(device), "cudaSetDevice");
  nccl_check(ncclCommInitRank(&comm_, size, id, rank), "ncclCommInitRank");
  init_stream();
}

NcclCommunicator::NcclCommunicator(ncclComm_t comm, int device, NcclOptions options)
    : comm_(comm), device_(device), options_(options), owns_comm_(false) {
  cuda::check(cudaSetDevice(device), "cudaSetDevice");
  nccl_check(ncclCommUserRank(comm_, &rank_), "ncclCommUserRank");
  nccl_check(ncclCommCount(comm_, &size_), "ncclCommCount");
  init_stream();
}

void NcclCommunicator::init_stream() {
  cuda::check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
}

NcclCommunicator::~NcclCommunicator() {
  if (stream_) {
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
  }
  if (comm_ && owns_comm_) ncclCommDestroy(comm_);
}

void NcclCommunicator::synchronize() {
  cuda::check(cudaStreamSynchronize(stream_), "nccl: stream synchronize");
}

void NcclCommunicator::send(int peer, const void* d_data, size_t bytes, int /*tag*/) {
  nccl_check(ncclSend(d_data, bytes, ncclUint8, peer, comm_, stream_), "ncclSend");
  synchronize();
  if (peer != rank_) count_sent(bytes);
}

void NcclCommunicator::recv(int peer, void* d_data, size_t bytes, int /*tag*/) {
  nccl_check(ncclRecv(d_data, bytes, ncclUint8, peer, comm_, stream_), "ncclRecv");
  synchronize();
}

void NcclCommunicator::sendrecv(int dst, const void* d_send, size_t send_bytes, int src,
                                void* d_recv, size_t recv_bytes, int /*tag*/) {
  nccl_check(ncclGroupStart(), "ncclGroupStart");
  nccl_check(ncclSend(d_send, send_bytes, ncclUint8, dst, comm_, stream_), "ncclSend");
  nccl_check(ncclRecv(d_recv, recv_bytes, ncclUint8, src, comm_, stream_), "ncclRecv");
  nccl_check(ncclGroupEnd(), "ncclGroupEnd");
  synchronize();
  if (dst != rank_) count_sent(send_bytes);
}

void NcclCommunicator::alltoall_async(const void* d_send, void* d_recv, size_t bytes_per_rank) {
  if (bytes_per_rank == 0) return;
  cuda::check(
      cudaMemcpyAsync(block(d_recv, rank_, bytes_per_rank), block(d_send, rank_, bytes_per_rank),
                      bytes_per_rank, cudaMemcpyDeviceToDevice, stream_),
      "alltoall: own block");
  // Grouped point-to-point: NCCL schedules all 2(p−1) transfers together.
  nccl_check(ncclGroupStart(), "ncclGroupStart");
  for (int k = 1; k < size_; ++k) {
    const int dst = (rank_ + k) % size_, src = (rank_ - k + size_) % size_;
    nccl_check(ncclSend(block(d_send, dst, bytes_per_rank), bytes_per_rank, ncclUint8, dst, comm_,
                        stream_),
               "ncclSend (alltoall)");
    nccl_check(ncclRecv(block(d_recv, src, bytes_per_rank), bytes_per_rank, ncclUint8, src, comm_,
                        stream_),
               "ncclRecv (alltoall)");
  }
  nccl_check(ncclGroupEnd(), "ncclGroupEnd (alltoall)");
  count_sent(static_cast<uint64_t>(size_ - 1) * bytes_per_rank);
}

void NcclCommunicator::allgather_async(const void* d_send, void* d_recv, size_t bytes_per_rank) {
  if (bytes_per_rank == 0) return;
  nccl_check(ncclAllGather(d_send, d_recv, bytes_per_rank, ncclUint8, comm_, stream_),
             "ncclAllGather");
  count_sent(static_cast<uint64_t>(size_ - 1) * bytes_per_rank);
}

void NcclCommunicator::allreduce_sum_async(const void* d_in, void* d_out, size_t count,
                                           DType dtype) {
  if (dtype != DType::kF32 && dtype != DType::kF16)
    throw Error(
        fmt::format("nccl: allreduce of {} is not supported (fp32 or fp16)", to_string(dtype)));
  if (count == 0) return;
  nccl_check(ncclAllReduce(d_in, d_out, count, dtype == DType::kF32 ? ncclFloat32 : ncclFloat16,
                           ncclSum, comm_, stream_),
             "ncclAllReduce");
  count_sent(ring_bytes_per_rank(count, size_, rank_, dtype_bytes(dtype)));
}

void NcclCommunicator::alltoall(const void* d_send, void* d_recv, size_t bytes_per_rank) {
  if (options_.check_headers) agree("alltoall", bytes_per_rank, 1);
  alltoall_async(d_send, d_recv, bytes_per_rank);
  synchronize();
}

void NcclCommunicator::allgather(const void* d_send, void* d_recv, size_t bytes_per_rank) {
  if (options_.check_headers) agree("allgather", bytes_per_rank, 1);
  allgather_async(d_send, d_recv, bytes_per_rank);
  synchronize();
}

void NcclCommunicator::barrier() {
  // A one-element allreduce completes on a rank only after every rank has joined it.
  auto* flag = static_cast<float*>(ws_.get(sizeof(float)));
  cuda::check(cudaMemsetAsync(flag, 0, sizeof(float), stream_), "barrier");
  nccl_check(ncclAllReduce(flag, flag, 1, ncclFloat32, ncclSum, comm_, stream_), "barrier");
  synchronize();
}

void NcclCommunicator::agree(const std::string& op, uint64_t count, uint64_t elem_bytes,
                             uint64_t config) {
  const CallHeader mine = CallHeader::make(op, count, elem_bytes, config);
  std::vector<CallHeader> all(static_cast<size_t>(size_));
  auto* d = static_cast<CallHeader*>(ws_.get(sizeof(CallHeader) * all.size()));
  cuda::check(
      cudaMemcpyAsync(d + rank_, &mine, sizeof(CallHeader), cudaMemcpyHostToDevice, stream_),
      "agree: upload header");
  nccl_check(ncclAllGather(d + rank_, d, sizeof(CallHeader), ncclUint8, comm_, stream_),
             "ncclAllGather (call header)");
  cuda::check(cudaMemcpyAsync(all.data(), d, sizeof(CallHeader) * all.size(),
                              cudaMemcpyDeviceToHost, stream_),
              "agree: download headers");
  synchronize();
  check_call_headers(all.data(), size_, "nccl");
}

void run_nccl_single_process(const std::vector<int>& devices,
                             const std::function<void(NcclCommunicator&)>& fn) {
  require_device("run_nccl_single_process");
  const int p = static_cast<int>(devices.size());
  if (p < 1) throw Error("nccl: run_nccl_single_process needs at least one device");
  for (int d : devices)
    if (d < 0 || d >= cuda::device_count())
      throw Error(fmt::format("nccl backend: device {} does not exist ({} visible)", d,
                              cuda::device_count()));
  std::vector<ncclComm_t> comms(static_cast<size_t>(p));
  nccl_check(ncclCommInitAll(comms.data(), p, devices.data()), "ncclCommInitAll");
  std::vector<std::thread> threads;
  std::mutex mu;
  std::exception_ptr first;
  bool aborted = false;
  for (int r = 0; r < p; ++r)
    threads.emplace_back([&, r] {
      std::unique_ptr<NcclCommunicator> comm;
      try {
        comm = std::make_unique<NcclCommunicator>(comms[static_cast<size_t>(r)],
                                                  devices[static_cast<size_t>(r)]);
        fn(*comm);
      } catch (...) {
        std::lock_guard lock(mu);
        if (!first) first = std::current_exception();
        // Peers blocked in NCCL on this rank would wait forever: abort the communicators,
        // which makes their pending operations fail. The process should exit afterwards.
        if (!aborted) {
          aborted = true;
          for (auto c : comms) ncclCommAbort(c);
        }
      }
      comm.reset();
    });
  for (auto& t : threads) t.join();
  if (!aborted)
    for (auto c : comms) ncclCommDestroy(c);
  if (first) std::rethrow_exception(first);
}

}  // namespace clbo
