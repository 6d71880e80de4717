// The two-phase 1-bit compressed allreduce of docs/reference/algorithms.md §2.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "clbo/collectives/algorithms.hpp"
#include "clbo/collectives/timing.hpp"
#include "clbo/kernels/onebit.hpp"

namespace clbo {

void OnebitState::reset(size_t n_, int p_) {
  const size_t n_pad = clbo::onebit_padded_size(n_, p_);
  worker_error.assign(n_pad, 0.0f);
  server_error.assign(n_pad / static_cast<size_t>(p_), 0.0f);
  n = n_;
  p = p_;
}

void OnebitState::zero() {
  std::fill(worker_error.begin(), worker_error.end(), 0.0f);
  std::fill(server_error.begin(), server_error.end(), 0.0f);
}

void compressed_allreduce(Communicator& comm, OnebitState& state, float* buf, size_t n) {
  const int p = comm.size(), r = comm.rank();
  const size_t n_pad = clbo::onebit_padded_size(n, p);
  const size_t c = n_pad / static_cast<size_t>(p);  // chunk elements, a multiple of 8
  const size_t piece = c / 8;                       // packed bytes of one chunk
  if (state.n != n || state.p != p || state.worker_error.size() != n_pad ||
      state.server_error.size() != c) {
    state.reset(n, p);
  }
  if (n == 0) return;

  // 1. Worker error feedback over the whole padded buffer (x is zero past n), then pack.
  std::vector<uint8_t> packed(n_pad / 8);
  float worker_scale;
  {
    const KernelTimer kernel;
    const double worker_sumsq = kernels::ef_sumsq(buf, n, state.worker_error.data(), n_pad);
    worker_scale = kernels::rms_scale(worker_sumsq, n_pad);
    kernels::ef_sign_pack(buf, n, state.worker_error.data(), n_pad, worker_scale, packed.data());
  }

  // 2. Piece j (elements [j·c, (j+1)·c)) goes to rank j; every rank learns every scale.
  std::vector<uint8_t> pieces(n_pad / 8);  // piece r of every worker, worker j at j·piece
  comm.alltoall(packed.data(), pieces.data(), piece);
  std::vector<float> worker_scales(static_cast<size_t>(p));
  comm.allgather(&worker_scale, worker_scales.data(), sizeof(float));

  // 3. Server step on this rank's chunk.
  std::vector<const uint8_t*> piece_ptrs(static_cast<size_t>(p));
  for (int j = 0; j < p; ++j) piece_ptrs[static_cast<size_t>(j)] = pieces.data() + j * piece;
  std::vector<uint8_t> server_signs(n_pad / 8);  // chunk j's signs at j·piece
  uint8_t* own_signs = server_signs.data() + static_cast<size_t>(r) * piece;
  float server_scale;
  {
    const KernelTimer kernel;
    server_scale = kernels::server_step(piece_ptrs.data(), worker_scales.data(), p,
                                        state.server_error.data(), c, own_signs);
  }

  // 4. Every rank gathers every chunk's signs and scale (the own chunk in place).
  comm.allgather(own_signs, server_signs.data(), piece);
  std::vector<float> server_scales(static_cast<size_t>(p));
  comm.allgather(&server_scale, server_scales.data(), sizeof(float));

  // 5. Decompress chunk by chunk, dropping the padding: identical bytes and scales on every
  // rank give a bit-identical result.
  onebit_decompress(server_signs.data(), server_scales.data(), p, c, n, buf);
}

void onebit_decompress(const uint8_t* server_signs, const float* server_scales, int p, size_t c,
                       size_t n, float* out) {
  const KernelTimer kernel;
  const size_t piece = c / 8;
  for (int j = 0; j < p; ++j) {
    const size_t begin = static_cast<size_t>(j) * c;
    if (begin >= n) break;
    kernels::unpack_scale(server_signs + static_cast<size_t>(j) * piece, std::min(c, n - begin),
                          server_scales[j], out + begin);
  }
}

}  // namespace clbo
