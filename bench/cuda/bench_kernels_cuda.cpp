// Google Benchmark roofline benchmarks of the CUDA kernels (clbo/cuda/*.hpp).
//
// Timing: cudaEvent pairs around each iteration, reported with UseManualTime. Every
// benchmark cycles through several copies of its buffers whose total is at least 4× the
// L2 cache (and at least two copies), so an iteration never finds its inputs in L2.
//
// Counters, named as bench_kernels_cpu names them (so one reader serves both files):
//   items_per_second    elements / time (Google Benchmark's, from SetItemsProcessed)
//   bytes_per_second    min_bytes_per_elem · elements / time (SetBytesProcessed)
//   min_bytes_per_elem  the minimum bytes one element must move
//                       (docs/reference/published.md §5.5: 20.125 for compression with its
//                       norm pass, 12.125 for the sign pass alone, 4.125 for unpacking; the
//                       others are derived the same way in the comments)
//   buffer_sets         how many copies of the buffers the iterations rotate through
//   frac_of_copy_bw     bytes_per_second / the device-to-device copy bandwidth measured at
//                       the start of this same run (2 × bytes / time of cudaMemcpy)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <initializer_list>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "clbo/core/layout.hpp"
#include "clbo/cuda/mask.hpp"
#include "clbo/cuda/onebit.hpp"
#include "clbo/cuda/optim.hpp"
#include "clbo/cuda/runtime.hpp"
#include "gbench_flags.hpp"

namespace {

using clbo::cuda::check;
using clbo::cuda::DeviceBuffer;

double g_copy_bw = 0.0;  // bytes/s, measured in main()
size_t g_l2_bytes = 0;

constexpr int64_t kSmall = int64_t{1} << 24;  // 16 Mi elements: 64 MiB per fp32 array
constexpr int64_t kLarge = int64_t{300}
                           << 20;  // about BERT-Large (336 M) and the reference-path size

// How many buffer sets to rotate through so that consecutive iterations miss in L2.
int rotation(size_t set_bytes) {
  const size_t want = 4 * g_l2_bytes;
  const size_t sets = (want + set_bytes - 1) / std::max<size_t>(set_bytes, 1);
  return static_cast<int>(std::clamp<size_t>(sets, 2, 16));
}

// ±scale values with random signs (the sign pattern is what the kernels branch on). The
// random bytes are drawn once; each seed starts at a different offset.
void fill_signs(float* d, size_t n, float scale, uint64_t seed) {
  static const std::vector<uint8_t> random = [] {
    std::mt19937_64 rng(42);
    std::vector<uint8_t> v(static_cast<size_t>(kLarge) / 8 + 4096);
    for (size_t i = 0; i < v.size(); i += 8) {
      const uint64_t r = rng();
      for (size_t j = 0; j < 8 && i + j < v.size(); ++j)
        v[i + j] = static_cast<uint8_t>(r >> (8 * j));
    }
    return v;
  }();
  const size_t bytes = (n + 7) / 8, offset = (seed * 97) % 4096;
  DeviceBuffer<uint8_t> dbytes;
  dbytes.upload(random.data() + offset, std::min(bytes, random.size() - offset));
  clbo::cuda::unpack_scale(dbytes.data(), std::min(n, dbytes.size() * 8), scale, d);
  check(cudaDeviceSynchronize(), "fill_signs");
}

// Times `body(set)` with cudaEvents, rotating sets, and sets the counters.
template <class Body>
void timed_loop(benchmark::State& state, int sets, double elems, double bytes_per_elem, Body body) {
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  double total_s = 0.0;
  int64_t iters = 0;
  int set = 0;
  for (auto _ : state) {
    check(cudaEventRecord(start), "cudaEventRecord");
    body(set);
    check(cudaEventRecord(stop), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0.f;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    state.SetIterationTime(ms * 1e-3);
    total_s += ms * 1e-3;
    ++iters;
    set = (set + 1) % sets;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  const double items = elems * static_cast<double>(iters);
  state.SetItemsProcessed(static_cast<int64_t>(items));
  state.SetBytesProcessed(static_cast<int64_t>(items * bytes_per_elem));
  state.counters["min_bytes_per_elem"] = bytes_per_elem;
  state.counters["buffer_sets"] = sets;
  const double achieved = total_s > 0 ? bytes_per_elem * items / total_s : 0;
  state.counters["frac_of_copy_bw"] = g_copy_bw > 0 ? achieved / g_copy_bw : 0.0;
}

void BM_CopyD2D(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const int sets = rotation(8 * n);
  std::vector<DeviceBuffer<float>> src(sets), dst(sets);
  for (int s = 0; s < sets; ++s) {
    src[s].resize(n), dst[s].resize(n);
    src[s].fill_bytes(0);
  }
  timed_loop(state, sets, static_cast<double>(n), 8.0, [&](int s) {
    check(cudaMemcpyAsync(dst[s].data(), src[s].data(), n * 4, cudaMemcpyDeviceToDevice), "copy");
  });
}

// One rank's worker compression: x, err (in place), packed bits.
struct CompressSet {
  DeviceBuffer<float> x, err, scale;
  DeviceBuffer<uint8_t> packed;
  CompressSet(size_t n, uint64_t seed) : x(n), err(n), scale(1), packed(n / 8) {
    fill_signs(x.data(), n, 1.0f, seed);
    fill_signs(err.data(), n, 0.01f, seed + 1);
  }
};

std::vector<std::unique_ptr<CompressSet>> compress_sets(size_t n) {
  std::vector<std::unique_ptr<CompressSet>> v;
  const int sets = rotation(8 * n + n / 8);
  for (int s = 0; s < sets; ++s) v.push_back(std::make_unique<CompressSet>(n, 10 + s));
  return v;
}

// Fused compression (norm pass + EF/sign/pack pass): read x and e (8 B), then read x and e,
// write e and the bits (12.125 B): 20.125 B per element (docs/reference/published.md).
void BM_Compress(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  auto sets = compress_sets(n);
  clbo::cuda::Workspace ws;
  timed_loop(state, static_cast<int>(sets.size()), static_cast<double>(n), 20.125, [&](int s) {
    auto& b = *sets[s];
    clbo::cuda::onebit_compress(b.x.data(), n, b.err.data(), n, b.packed.data(), b.scale.data(),
                                ws);
  });
}

// The EF/sign/pack pass alone with a known scale: 12.125 B per element.
void BM_EfSignPack(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  auto sets = compress_sets(n);
  timed_loop(state, static_cast<int>(sets.size()), static_cast<double>(n), 12.125, [&](int s) {
    auto& b = *sets[s];
    clbo::cuda::ef_sign_pack(b.x.data(), n, b.err.data(), n, 0.5f, b.packed.data());
  });
}

// The norm pass alone: read x and e, 8 B per element.
void BM_EfSumsq(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  auto sets = compress_sets(n);
  clbo::cuda::Workspace ws;
  DeviceBuffer<double> sum(1);
  timed_loop(state, static_cast<int>(sets.size()), static_cast<double>(n), 8.0, [&](int s) {
    auto& b = *sets[s];
    clbo::cuda::ef_sumsq(b.x.data(), n, b.err.data(), n, sum.data(), ws);
  });
}

// Unpack with scaling: read 1/8 B, write 4 B per element (docs/reference/published.md: 4.125).
void BM_Unpack(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const int sets = rotation(4 * n + n / 8);
  std::vector<DeviceBuffer<uint8_t>> packed(sets);
  std::vector<DeviceBuffer<float>> out(sets);
  for (int s = 0; s < sets; ++s) {
    packed[s].resize(n / 8), out[s].resize(n);
    packed[s].fill_bytes(0x5a);
  }
  timed_loop(state, sets, static_cast<double>(n), 4.125,
             [&](int s) { clbo::cuda::unpack_scale(packed[s].data(), n, 0.25f, out[s].data()); });
}

// Server step over a chunk of n elements from p = 4 workers (registered at n = 2^24 and at
// 75·2^20, the chunk one rank serves at p = 4 of the 300·2^20 buffer). Two passes are the minimum
// (the scale needs every a before any sign): pass 1 reads p/8 + 4 B, pass 2 reads p/8 + 4 B
// and writes 4 + 1/8 B: 12 + (2p+1)/8 = 13.125 B per element.
void BM_ServerStep(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const int p = 4;
  const int sets = rotation(4 * n + (p + 1) * n / 8);
  std::vector<DeviceBuffer<uint8_t>> pieces(sets), out(sets);
  std::vector<DeviceBuffer<float>> err(sets), scales(sets);
  DeviceBuffer<float> scale_out(1);
  for (int s = 0; s < sets; ++s) {
    pieces[s].resize(p * n / 8), out[s].resize(n / 8), err[s].resize(n);
    pieces[s].fill_bytes(0x3c);
    fill_signs(err[s].data(), n, 0.01f, 20 + s);
    scales[s].upload(std::vector<float>{0.5f, 0.75f, 1.0f, 1.25f});
  }
  clbo::cuda::Workspace ws;
  timed_loop(state, sets, static_cast<double>(n), 12.0 + (2.0 * p + 1) / 8.0, [&](int s) {
    clbo::cuda::server_step(pieces[s].data(), scales[s].data(), p, err[s].data(), n, out[s].data(),
                            scale_out.data(), ws);
  });
}

struct AdamSet {
  DeviceBuffer<float> theta, m, v, g, u;
  explicit AdamSet(size_t n, uint64_t seed) : theta(n), m(n), v(n), g(n), u(n) {
    fill_signs(theta.data(), n, 1.0f, seed);
    fill_signs(m.data(), n, 0.1f, seed + 1);
    fill_signs(v.data(), n, 0.01f, seed + 2);  // negative v only changes values, not timing
    fill_signs(g.data(), n, 0.5f, seed + 3);
  }
};

// Fused Adam: read and write θ, m, v, read g: 28 B per element.
void BM_Adam(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<std::unique_ptr<AdamSet>> sets;
  for (int s = 0, k = rotation(16 * n); s < k; ++s)
    sets.push_back(std::make_unique<AdamSet>(n, 30 + 4 * s));
  clbo::kernels::AdamArgs a;
  timed_loop(state, static_cast<int>(sets.size()), static_cast<double>(n), 28.0, [&](int s) {
    auto& b = *sets[s];
    clbo::cuda::adam_update(b.theta.data(), b.m.data(), b.v.data(), b.g.data(), n, a);
  });
}

// LAMB direction with per-tensor norms over 64 tensors: read θ, g, read and write m, v,
// write u: 28 B per element.
void BM_LambDirection(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<size_t> sizes(64, n / 64);
  sizes.back() += n % 64;
  const clbo::cuda::LayoutTable table(clbo::ParamLayout::from_sizes(sizes));
  std::vector<std::unique_ptr<AdamSet>> sets;
  for (int s = 0, k = rotation(20 * n); s < k; ++s)
    sets.push_back(std::make_unique<AdamSet>(n, 50 + 4 * s));
  DeviceBuffer<double> ts(64), us(64);
  clbo::cuda::Workspace ws;
  clbo::kernels::AdamArgs a;
  timed_loop(state, static_cast<int>(sets.size()), static_cast<double>(n), 28.0, [&](int s) {
    auto& b = *sets[s];
    clbo::cuda::lamb_direction(b.theta.data(), b.m.data(), b.v.data(), b.g.data(), b.u.data(),
                               table, a, ts.data(), us.data(), ws);
  });
}

// Random mask (k = 0.1) fused with compaction: the minimum is reading x (4 B) and writing
// the kept values (4k B): 4.4 B per element. (The mask bits written and read back between
// the two passes are overhead, not part of the minimum.)
void BM_MaskCompact(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const double k = 0.1;
  const int sets = rotation(8 * n);
  std::vector<DeviceBuffer<float>> src(sets), dst(sets);
  std::vector<DeviceBuffer<uint8_t>> bits(sets);
  for (int s = 0; s < sets; ++s) {
    src[s].resize(n), dst[s].resize(n), bits[s].resize((n + 7) / 8);
    fill_signs(src[s].data(), n, 1.0f, 70 + s);
  }
  clbo::cuda::Workspace ws;
  uint32_t t = 0;
  timed_loop(state, sets, static_cast<double>(n), 4.0 + 4.0 * k, [&](int s) {
    clbo::cuda::mask_compact(0, ++t, k, 0, n, src[s].data(), bits[s].data(), dst[s].data(), ws);
  });
}

// Mask generation alone (Philox per 4 elements, 1/8 B written): compute-bound; its
// frac_of_copy_bw is reported for completeness only.
void BM_RandomMask(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const int sets = rotation(n / 8);
  std::vector<DeviceBuffer<uint8_t>> bits(sets);
  for (auto& b : bits) b.resize((n + 7) / 8);
  uint32_t t = 0;
  timed_loop(state, sets, static_cast<double>(n), 0.125,
             [&](int s) { clbo::cuda::random_mask(0, ++t, 0.1, 0, n, bits[s].data()); });
}

// One benchmark at one size, in microseconds (every case here takes tens of microseconds to a
// few milliseconds on a data-centre GPU). How long each runs is Google Benchmark's
// --benchmark_min_time, to which main() gives clbo's default: an Iterations() or MinTime()
// here would put "/iterations:N" into the names (so runs with and without the user's flag
// would not pair in tools/compare.py) and override the user's flag.
using BenchFn = void (*)(benchmark::State&);
struct NamedBench {
  const char* name;
  BenchFn fn;
};

void register_one(const NamedBench& b, int64_t n) {
  benchmark::RegisterBenchmark(b.name, b.fn)
      ->Arg(n)
      ->UseManualTime()
      ->Unit(benchmark::kMicrosecond);
}

void register_all() {
  auto both_sizes = [&](std::initializer_list<NamedBench> list) {
    for (const NamedBench& b : list) {
      register_one(b, kSmall);
      register_one(b, kLarge);
    }
  };
  both_sizes({{"BM_CopyD2D", BM_CopyD2D},
              {"BM_Compress", BM_Compress},
              {"BM_EfSignPack", BM_EfSignPack},
              {"BM_EfSumsq", BM_EfSumsq},
              {"BM_Unpack", BM_Unpack}});
  // The server step serves one rank's chunk: at p = 4, a quarter of the large buffer.
  register_one({"BM_ServerStep", BM_ServerStep}, kSmall);
  register_one({"BM_ServerStep", BM_ServerStep}, kLarge / 4);
  both_sizes({{"BM_Adam", BM_Adam},
              {"BM_LambDirection", BM_LambDirection},
              {"BM_MaskCompact", BM_MaskCompact},
              {"BM_RandomMask", BM_RandomMask}});
}

// The reference bandwidth: a large device-to-device copy, best of 10 after a warmup.
double measure_copy_bw() {
  size_t free_b = 0, total_b = 0;
  check(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
  const size_t bytes = std::min<size_t>(size_t{2} << 30, free_b / 4) & ~size_t{255};
  DeviceBuffer<uint8_t> a(bytes), b(bytes);
  a.fill_bytes(1);
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  float best_ms = 1e30f;
  for (int i = 0; i < 11; ++i) {
    check(cudaEventRecord(start), "cudaEventRecord");
    check(cudaMemcpyAsync(b.data(), a.data(), bytes, cudaMemcpyDeviceToDevice), "copy");
    check(cudaEventRecord(stop), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    if (i > 0) best_ms = std::min(best_ms, ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return 2.0 * static_cast<double>(bytes) / (best_ms * 1e-3);
}

}  // namespace

int main(int argc, char** argv) {
  // Every Google Benchmark flag works as in any Google Benchmark binary; clbo only supplies a
  // default --benchmark_min_time of 0.05 s (about 20 benchmarks: a predictable run for the GPU
  // check), which the user's own replaces. clbo's own lines go to stderr, so that
  // --benchmark_format=json on stdout stays JSON.
  clbo::bench::ArgsWithDefaultMinTime args(argc, argv, "0.05");
  benchmark::Initialize(args.argc(), args.argv());
  if (benchmark::ReportUnrecognizedArguments(*args.argc(), args.argv())) return 1;
  register_all();
  // Listing needs no device and measures nothing.
  if (clbo::bench::gbench_bool_flag(clbo::bench::gbench_args(argc, argv), "benchmark_list_tests")) {
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
  }
  if (clbo::cuda::device_count() == 0) {
    std::fprintf(stderr, "bench_kernels_cuda: skipped: no CUDA device: %s\n",
                 clbo::cuda::unavailable_reason().c_str());
    return 0;
  }
  int l2 = 0;
  check(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0), "L2 size");
  g_l2_bytes = static_cast<size_t>(l2);
  g_copy_bw = measure_copy_bw();
  benchmark::AddCustomContext("device", clbo::cuda::device_description(0));
  benchmark::AddCustomContext("copy_bw_GBps", std::to_string(g_copy_bw / 1e9));
  benchmark::AddCustomContext("l2_bytes", std::to_string(g_l2_bytes));
  std::fprintf(stderr, "device %s: D2D copy %.1f GB/s, L2 %zu bytes\n",
               clbo::cuda::device_description(0).c_str(), g_copy_bw / 1e9, g_l2_bytes);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
