// Deterministic inputs of `clbo bench collectives` and the compressed allreduce's expected
// output, computed with the scalar reference kernels.
#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>

#include "bench_world.hpp"
#include "clbo/core/philox.hpp"
#include "clbo/kernels/onebit.hpp"

namespace clbo::bench {

void fill_uniform(float* x, size_t n, uint64_t seed, int rank) {
  for (size_t q = 0; q < (n + 3) / 4; ++q) {
    const Philox4x32 r = philox4x32_10(
        static_cast<uint32_t>(q), static_cast<uint32_t>(q >> 32), static_cast<uint32_t>(rank),
        0x636c626f /* "clbo" */, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
    for (size_t w = 0; w < 4 && 4 * q + w < n; ++w)
      x[4 * q + w] = static_cast<float>(static_cast<int32_t>(r.v[w])) * 0x1p-31f;  // [-1, 1)
  }
}

const std::vector<float>& reference_compressed(int p, size_t n, uint64_t seed) {
  static std::mutex mu;
  static std::map<std::tuple<int, size_t, uint64_t>, std::vector<float>> cache;
  std::lock_guard lock(mu);
  auto key = std::make_tuple(p, n, seed);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  cache.clear();  // one size at a time keeps memory bounded
  const size_t n_pad = clbo::onebit_padded_size(n, p), c = n_pad / static_cast<size_t>(p);
  std::vector<std::vector<uint8_t>> packed(static_cast<size_t>(p));
  std::vector<float> scales(static_cast<size_t>(p));
  {
    std::vector<float> x(n), err(n_pad);
    for (int r = 0; r < p; ++r) {
      fill_uniform(x.data(), n, seed, r);
      std::fill(err.begin(), err.end(), 0.0f);
      scales[static_cast<size_t>(r)] =
          kernels::rms_scale(kernels::ref::ef_sumsq(x.data(), n, err.data(), n_pad), n_pad);
      packed[static_cast<size_t>(r)].resize(n_pad / 8);
      kernels::ref::ef_sign_pack(x.data(), n, err.data(), n_pad, scales[static_cast<size_t>(r)],
                                 packed[static_cast<size_t>(r)].data());
    }
  }
  std::vector<float> out(n);
  std::vector<float> server_err(c);
  std::vector<uint8_t> signs(c / 8);
  std::vector<const uint8_t*> pieces(static_cast<size_t>(p));
  for (int j = 0; j < p; ++j) {
    for (int r = 0; r < p; ++r)
      pieces[static_cast<size_t>(r)] = packed[static_cast<size_t>(r)].data() + j * (c / 8);
    std::fill(server_err.begin(), server_err.end(), 0.0f);
    const float s = kernels::ref::server_step(pieces.data(), scales.data(), p, server_err.data(), c,
                                              signs.data());
    const size_t begin = static_cast<size_t>(j) * c;
    if (begin < n)
      kernels::ref::unpack_scale(signs.data(), std::min(c, n - begin), s, out.data() + begin);
  }
  return cache.emplace(key, std::move(out)).first->second;
}

}  // namespace clbo::bench
