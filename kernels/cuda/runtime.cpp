// CUDA runtime helpers (clbo/cuda/runtime.hpp). Compiled by the host compiler.
#include "clbo/cuda/runtime.hpp"

#include <fmt/format.h>

#include "clbo/core/error.hpp"
#include "clbo/cuda/onebit_state.hpp"
#include "clbo/kernels/onebit.hpp"

namespace clbo::cuda {

namespace {
// cudaGetDeviceCount's status, asked once: the answer cannot change within a process.
cudaError_t device_status(int* count) {
  static int cached_count = 0;
  static const cudaError_t status = cudaGetDeviceCount(&cached_count);
  *count = status == cudaSuccess ? cached_count : 0;
  return status;
}
}  // namespace

int device_count() {
  int n = 0;
  device_status(&n);
  return n;
}

std::string unavailable_reason() {
  int n = 0;
  const cudaError_t status = device_status(&n);
  if (status != cudaSuccess)
    return fmt::format("cudaGetDeviceCount: {} ({})", cudaGetErrorString(status),
                       cudaGetErrorName(status));
  if (n == 0) return "cudaGetDeviceCount reports 0 devices";
  return "";
}

std::string device_description(int device) {
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  int driver = 0;
  cudaDriverGetVersion(&driver);
  return fmt::format("{} (sm_{}{}, {:.1f} GiB, {} SMs, driver {}.{})", prop.name, prop.major,
                     prop.minor, static_cast<double>(prop.totalGlobalMem) / (1ull << 30),
                     prop.multiProcessorCount, driver / 1000, (driver % 1000) / 10);
}

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw Error(
        fmt::format("{}: {} ({})", what, cudaGetErrorString(status), cudaGetErrorName(status)));
}

void check_launch(const char* kernel) {
  check(cudaGetLastError(), kernel);
}

void* Workspace::get(size_t bytes) {
  if (bytes > buf_.size()) buf_.resize(bytes);
  return buf_.data();
}

void OnebitDeviceState::reset(size_t n_, int p_) {
  const size_t n_pad = clbo::onebit_padded_size(n_, p_);
  worker_error.resize(n_pad);
  server_error.resize(n_pad / static_cast<size_t>(p_));
  packed.resize(n_pad / 8);
  pieces.resize(n_pad / 8);
  server_signs.resize(n_pad / 8);
  scales.resize(2 * static_cast<size_t>(p_));
  worker_error.fill_bytes(0);  // all-zero bytes are +0.0f
  server_error.fill_bytes(0);
  n = n_;
  p = p_;
}

bool OnebitDeviceState::sized_for(size_t n_, int p_) const {
  return n == n_ && p == p_ && worker_error.size() == clbo::onebit_padded_size(n_, p_);
}

}  // namespace clbo::cuda
