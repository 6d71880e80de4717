// CUDA runtime helpers shared by the GPU kernels, the NCCL backend, tests and benchmarks:
// device detection with a reason that can be shown to a user, error checking that throws
// clbo::Error, and owning device buffers. Plain C++ (no CUDA syntax), so .cpp files that
// only launch kernels compile with the host compiler.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace clbo::cuda {

// Number of usable CUDA devices; 0 when there is no device or no driver.
int device_count();

// Why no device can be used ("" when one can), e.g. "cudaGetDeviceCount: no CUDA-capable
// device is detected". Tests print it in their skip message.
std::string unavailable_reason();

// "NVIDIA H200 (sm_90, 139.8 GiB, driver 13.0)" for results files.
std::string device_description(int device);

// Throws clbo::Error("<what>: <CUDA error string>") when status is not cudaSuccess.
void check(cudaError_t status, const char* what);

// Checks the last kernel launch (configuration errors) without synchronizing.
void check_launch(const char* kernel);

// An owning, move-only device allocation of n elements of T. Contents start undefined.
// upload and fill_bytes are complete when they return, for every stream: they run on the
// legacy default stream and wait for it, because the NCCL communicator's stream is
// non-blocking and so is not ordered after legacy-stream work. download is synchronous too,
// but is not ordered after work on a non-blocking stream: synchronize that stream first.
// (cudaMemset is asynchronous, and a cudaMemcpy from pageable memory may return before its DMA
// lands: a p = 1 ncclAllReduce on an H200 read such a half-landed upload, results/gpu/README.md.)
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t n) { resize(n); }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), n_(o.n_) { o.ptr_ = nullptr, o.n_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      release();
      ptr_ = o.ptr_, n_ = o.n_;
      o.ptr_ = nullptr, o.n_ = 0;
    }
    return *this;
  }

  // Reallocates when n differs from the current size; contents are not preserved.
  void resize(size_t n) {
    if (n == n_) return;
    release();
    if (n > 0) {
      void* p = nullptr;
      check(cudaMalloc(&p, n * sizeof(T)), "cudaMalloc");
      ptr_ = static_cast<T*>(p);
    }
    n_ = n;
  }
  T* data() { return ptr_; }
  const T* data() const { return ptr_; }
  size_t size() const { return n_; }
  size_t bytes() const { return n_ * sizeof(T); }

  void upload(const T* host, size_t n) {
    resize(n);
    if (n == 0) return;
    check(cudaMemcpy(ptr_, host, n * sizeof(T), cudaMemcpyHostToDevice), "upload");
    check(cudaStreamSynchronize(cudaStreamLegacy), "upload");
  }
  void upload(const std::vector<T>& host) { upload(host.data(), host.size()); }
  std::vector<T> download() const {
    std::vector<T> host(n_);
    if (n_ > 0) check(cudaMemcpy(host.data(), ptr_, bytes(), cudaMemcpyDeviceToHost), "download");
    return host;
  }
  // Fills every byte with `byte` (tests poison outputs with 0xFF before each run).
  void fill_bytes(int byte) {
    if (n_ == 0) return;
    check(cudaMemset(ptr_, byte, bytes()), "cudaMemset");
    check(cudaStreamSynchronize(cudaStreamLegacy), "cudaMemset");
  }

 private:
  void release() noexcept {
    if (ptr_) cudaFree(ptr_);
    ptr_ = nullptr;
    n_ = 0;
  }
  T* ptr_ = nullptr;
  size_t n_ = 0;
};

// Scratch memory for the multi-pass kernels (per-block partial sums, prefix offsets). It
// grows on demand and is reused across calls, so steady-state calls never allocate. One
// workspace must not be used by two streams at once.
class Workspace {
 public:
  void* get(size_t bytes);

 private:
  DeviceBuffer<uint8_t> buf_;
};

}  // namespace clbo::cuda
