// bench_kernels_cpu: throughput of the optimized CPU kernels against the machine's copy
// bandwidth.
//
// Before any kernel runs, main() measures memcpy over buffers of at least 4x the last-level
// cache, counting read + write (2 x size) bytes. Every kernel benchmark then reports
//   bytes_per_second  = the MINIMUM bytes the kernel must move per element (reads + writes,
//                       each listed below) x elements / second,
//   items_per_second  = elements / second,
//   frac_of_copy_bw   = bytes_per_second / memcpy bytes per second,
// so frac_of_copy_bw near 1 means the kernel streams as fast as a copy. Usual Google
// Benchmark flags apply (--benchmark_filter, --benchmark_out=f.json
// --benchmark_out_format=json).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "clbo/kernels/adam.hpp"
#include "clbo/kernels/half.hpp"
#include "clbo/kernels/mask.hpp"
#include "clbo/kernels/norms.hpp"
#include "clbo/kernels/onebit.hpp"
#include "clbo/kernels/topk.hpp"

namespace {

using namespace clbo::kernels;
using Clock = std::chrono::steady_clock;

double g_copy_bytes_per_s = 0.0;  // measured in main() before the benchmarks run

// ---- buffers ------------------------------------------------------------------------------
// Inputs are built once per size and shared by every benchmark of that size: rebuilding 64M
// elements per run would dominate the run time.

struct AlignedFree {
  void operator()(void* p) const { std::free(p); }
};
using Block = std::unique_ptr<void, AlignedFree>;

class Pool {
 public:
  // A buffer of `count` T, identified by (name, count), filled on first use by `fill`.
  template <typename T, typename Fill>
  T* get(const std::string& name, size_t count, Fill fill) {
    const Key key = key_of(name, count);
    auto it = blocks_.find(key);
    if (it == blocks_.end()) {
      const size_t bytes = std::max<size_t>(64, (count * sizeof(T) + 63) / 64 * 64);
      Block b(std::aligned_alloc(64, bytes));
      if (!b) throw std::bad_alloc();
      fill(static_cast<T*>(b.get()), count);
      it = blocks_.emplace(key, std::move(b)).first;
    }
    return static_cast<T*>(it->second.get());
  }
  // Frees everything not of this element count (bounds memory to one size at a time).
  void keep_only(size_t count) {
    for (auto it = blocks_.begin(); it != blocks_.end();)
      it = it->first.second == count ? std::next(it) : blocks_.erase(it);
  }

 private:
  using Key = std::pair<std::string, size_t>;
  static Key key_of(const std::string& name, size_t count) { return {name, count}; }
  std::map<Key, Block> blocks_;
};
Pool g_pool;

// xorshift: cheap enough to fill 64M elements quickly, varied enough for the kernels.
uint64_t next(uint64_t& s) {
  s ^= s << 13;
  s ^= s >> 7;
  s ^= s << 17;
  return s;
}
auto fill_floats(float scale, uint64_t seed) {
  return [=](float* p, size_t n) {
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < n; ++i)
      p[i] = scale * (static_cast<float>(static_cast<int32_t>(next(s) >> 32)) * 0x1p-31f);
  };
}
auto fill_positive(float scale, uint64_t seed) {
  return [=](float* p, size_t n) {
    fill_floats(scale, seed)(p, n);
    for (size_t i = 0; i < n; ++i) p[i] = p[i] * p[i] + 1e-6f;
  };
}
auto fill_bytes(uint64_t seed) {
  return [=](uint8_t* p, size_t n) {
    uint64_t s = seed + 12345;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      const uint64_t r = next(s);
      std::memcpy(p + i, &r, 8);
    }
    for (; i < n; ++i) p[i] = static_cast<uint8_t>(next(s));
  };
}
template <typename T>
auto fill_zero() {
  return [](T* p, size_t n) { std::memset(p, 0, n * sizeof(T)); };
}

float* floats(const char* name, size_t n, float scale = 1.0f, uint64_t seed = 1) {
  return g_pool.get<float>(name, n, fill_floats(scale, seed));
}

// ---- reporting -----------------------------------------------------------------------------

struct Timer {
  Clock::time_point start = Clock::now();
  double seconds() const { return std::chrono::duration<double>(Clock::now() - start).count(); }
};

// Sets items/bytes processed from the minimum bytes per element, and frac_of_copy_bw from the
// wall time of the timed loop.
void report(benchmark::State& st, size_t elements, double min_bytes_per_element, double seconds) {
  const double items = static_cast<double>(st.iterations()) * static_cast<double>(elements);
  const double bytes = items * min_bytes_per_element;
  st.SetItemsProcessed(static_cast<int64_t>(items));
  st.SetBytesProcessed(static_cast<int64_t>(bytes));
  st.counters["min_bytes_per_elem"] = min_bytes_per_element;
  st.counters["frac_of_copy_bw"] =
      seconds > 0 && g_copy_bytes_per_s > 0 ? bytes / seconds / g_copy_bytes_per_s : 0.0;
}

// ---- memcpy reference ----------------------------------------------------------------------

size_t last_level_cache_bytes() {
  long sys = 0;
#ifdef _SC_LEVEL3_CACHE_SIZE
  sys = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
  size_t from_sysfs = 0;
  for (int idx = 0; idx < 8; ++idx) {  // the highest-level cache listed
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(idx);
    std::ifstream size_file(dir + "/size");
    std::string text;
    if (!(size_file >> text)) continue;
    size_t v = std::stoull(text);
    if (text.back() == 'K') v <<= 10;
    if (text.back() == 'M') v <<= 20;
    from_sysfs = std::max(from_sysfs, v);
  }
  // Take the larger: some hypervisors report different figures, and a buffer 4x the larger
  // is out of cache either way.
  const size_t best = std::max(sys > 0 ? static_cast<size_t>(sys) : 0, from_sysfs);
  return best > 0 ? best : size_t{32} << 20;
}

size_t copy_buffer_bytes() {
  return std::max<size_t>(4 * last_level_cache_bytes(), size_t{128} << 20);
}

// Copy bytes per second (read + write counted), median of several out-of-cache copies.
double measure_copy_bandwidth(size_t bytes) {
  auto* src = g_pool.get<uint8_t>("copy_src", bytes, fill_bytes(3));
  auto* dst = g_pool.get<uint8_t>("copy_dst", bytes, fill_zero<uint8_t>());
  std::memcpy(dst, src, bytes);  // warm up page tables
  std::vector<double> rates;
  for (int rep = 0; rep < 5; ++rep) {
    const Timer t;
    std::memcpy(dst, src, bytes);
    benchmark::ClobberMemory();
    rates.push_back(2.0 * static_cast<double>(bytes) / t.seconds());
  }
  std::sort(rates.begin(), rates.end());
  g_pool.keep_only(0);
  return rates[rates.size() / 2];
}

void BM_memcpy(benchmark::State& st) {
  const size_t bytes = static_cast<size_t>(st.range(0));
  auto* src = g_pool.get<uint8_t>("copy_src", bytes, fill_bytes(3));
  auto* dst = g_pool.get<uint8_t>("copy_dst", bytes, fill_zero<uint8_t>());
  const Timer t;
  for (auto _ : st) {
    std::memcpy(dst, src, bytes);
    benchmark::ClobberMemory();
  }
  report(st, bytes, 2.0, t.seconds());  // one "element" = one byte: read it, write it
  g_pool.keep_only(0);
}

// ---- 1-bit compression ---------------------------------------------------------------------

// Pass 1 alone: read x (4) + read e (4) = 8 B/element.
void BM_ef_sumsq(benchmark::State& st) {
  const size_t n = static_cast<size_t>(st.range(0));
  g_pool.keep_only(n);
  const float* x = floats("x", n);
  const float* e = floats("e", n, 0.01f, 2);
  const Timer t;
  for (auto _ : st) benchmark::DoNotOptimize(ef_sumsq(x, n, e, n));
  report(st, n, 8.0, t.seconds());
}

// Pass 2 alone (published.md): read x (4) + read and write e (8) + write bits (1/8) = 12.125 B.
void BM_ef_sign_pack(benchmark::State& st) {
  const size_t n = static_cast<size_t>(st.range(0));
  g_pool.keep_only(n);
  const float* x = floats("x", n);
  float* e = floats("e", n, 0.01f, 2);
  auto* bits = g_pool.get<uint8_t>("bits", n / 8, fill_zero<uint8_t>());
  const Timer t;
  for (auto _ : st) {
    ef_sign_pack(x, n, e, n, 0.5f, bits);
    benchmark::ClobberMemory();
  }
  report(st, n, 12.125, t.seconds());
}

// Worker compression as used: both passes. 8 + 12.125 = 20.125 B/element (published.md).
void BM_compress_fused(benchmark::State& st) {
  const size_t n = static_cast<size_t>(st.range(0));
  g_pool.keep_only(n);
  const float* x = floats("x", n);
  float* e = floats("e", n, 0.01f, 2);
  auto* bits = g_pool.get<uint8_t>("bits", n / 8, fill_zero<uint8_t>());
  const Timer t;
  for (auto _ : st) {
    const float s = rms_scale(ef_sumsq(x, n, e, n), n);
    ef_sign_pack(x, n, e, n, s, bits);
    benchmark::ClobberMemory();
  }
  report(st, n, 20.125, t.seconds());
}

// Read bits (1/8) + write fp32 (4) = 4.125 B/element (published.md).
void BM_unpack_scale(benchmark::State& st) {
  const size_t n = static_cast<size_t>(st.range(0));
  g_pool.keep_only(n);
  const auto* bits = g_pool.get<uint8_t>("bits_in", n / 8, fill_bytes(5));
  float* out = floats("out", n);
  const Timer t;
  for (auto _ : st) {
    unpack_scale(bits, n, 0.5f, out);
    benchmark::ClobberMemory();
  }
  report(st, n, 4.125, t.seconds());
}

// One server chunk of c = range(0) elements from p workers. The global RMS needs all of a
// before any sign, so two passes are unavoidable. Cheapest of the two layouts:
//   store a:     (p/8 + 4 + 4) + (4 + 4 + 1/8)      = 16.125 + p/8
//   recompute a: (p/8 + 4)     + (p/8 + 4 + 4 + 1/8) = 12.125 + p/4
// i.e. 13.125 B/element for p = 4 and 14.125 for p = 8 (recompute wins for p < 32).
void BM_server_step(benchmark::State& st) {
  const size_t c = static_cast<size_t>(st.range(0));
  const int p = static_cast<int>(st.range(1));
  g_pool.keep_only(c);
  std::vector<const uint8_t*> pieces;
  std::vector<float> scales;
  for (int j = 0; j < p; ++j) {
    pieces.push_back(g_pool.get<uint8_t>("piece" + std::to_string(j), c / 8,
                                         fill_bytes(static_cast<uint64_t>(j))));
    scales.push_back(0.5f + 0.01f * static_cast<float>(j));
  }
  float* e = floats("e", c, 0.01f, 2);
  auto* out = g_pool.get<uint8_t>("bits", c / 8, fill_zero<uint8_t>());
  const Timer t;
  for (auto _ : st)
    benchmark::DoNotOptimize(server_step(pieces.data(), scales.data(), p, e, c, out));
  const double pp = static_cast<double>(p);
  report(st, c, std::min(16.125 + pp / 8, 12.125 + pp / 4), t.seconds());
}

// ---- masks and sparsification --------------------------------------------------------------

// Write the bitmap: 1/8 B/element. Compute-bound (Philox); items_per_second is the figure.
void BM_random_mask(benchmark::State& st) {
  const size_t n = static_cast<size_t>(st.range(0));
  g_pool.keep_only(n);
  auto* bits = g_pool.get<uint8_t>("bits", n / 8, fill_zero<uint8_t>());
  uint32_t step = 1;
  const Timer t;
  for (auto _ : st) {
    random_mask(0, step++, 0.1, 0, n, bits);
    benchmark::ClobberMemory();
  }
  report(st, n, 0.125, t.seconds());
}

// k = 0.1: read src (4) + read bits (1/8) + write the kept values (0.1 x 4) = 4.525 B/element.
void BM_compact(benchmark::State& st) {
  const size_t n = static_cast<size_t>(st.range(0));
  g_pool.keep_only(n);
  const float* x = floats("x", n);
  auto* bits = g_pool.get<uint8_t>("mask", n / 8,
                                   [n](uint8_t* b, size_t) { random_mask(0, 1, 0.1, 0, n, b); });
  float* out = floats("out", n);
  const Timer t;
  for (auto _ : st) benchmark::DoNotOptimize(compact(x, bits, n, out));
  report(st, n, 4.525, t.seconds());
}

// k = n/100: read x (4) + write k (index 4, value 4) = 4.08 B/element. Compute-bound.
void BM_topk(benchmark::State& st) {
  const size_t n = static_cast<size_t>(st.range(0)), k = n / 100;
  g_pool.keep_only(n);
  const float* x = floats("x", n);
  std::vector<uint32_t> idx(k);
  std::vector<float> val(k);
  const Timer t;
  for (auto _ : st) {
    topk_select(x, n, k, idx.data(), val.data());
    benchmark::ClobberMemory();
  }
  report(st, n, 4.08, t.seconds());
}

// ---- fp16 ------------------------------------------------------------------------------------

// Read fp32 (4) + write fp16 (2) = 6 B/element.
void BM_f32_to_f16(benchmark::State& st) {
  const size_t n = static_cast<size_t>(st.range(0));
  g_pool.keep_only(n);
  const float* x = floats("x", n);
  auto* h = g_pool.get<uint16_t>("h", n, fill_zero<uint16_t>());
  const Timer t;
  for (auto _ : st) {
    f32_to_f16(x, n, h);
    benchmark::ClobberMemory();
  }
  report(st, n, 6.0, t.seconds());
}

// Read fp16 (2) + write fp32 (4) = 6 B/element.
void BM_f16_to_f32(benchmark::State& st) {
  const size_t n = static_cast<size_t>(st.range(0));
  g_pool.keep_only(n);
  const auto* h = g_pool.get<uint16_t>("h_in", n, [](uint16_t* p, size_t m) {
    for (size_t i = 0; i < m; ++i) p[i] = static_cast<uint16_t>((i * 40503u) & 0x7BFFu);
  });
  float* out = floats("out", n);
  const Timer t;
  for (auto _ : st) {
    f16_to_f32(h, n, out);
    benchmark::ClobberMemory();
  }
  report(st, n, 6.0, t.seconds());
}

// ---- optimizer math --------------------------------------------------------------------------

// Read θ, m, v, g (16) + write θ, m, v (12) = 28 B/element.
void BM_adam_update(benchmark::State& st) {
  const size_t n = static_cast<size_t>(st.range(0));
  g_pool.keep_only(n);
  float* theta = floats("theta", n);
  float* m = floats("m", n, 0.1f, 3);
  float* v = g_pool.get<float>("v", n, fill_positive(0.1f, 4));
  const float* g = floats("g", n, 1.0f, 5);
  AdamArgs a;
  a.lr = 1e-6f;
  const Timer t;
  for (auto _ : st) {
    adam_update(theta, m, v, g, n, a);
    benchmark::ClobberMemory();
  }
  report(st, n, 28.0, t.seconds());
}

// Read θ, m, v, g (16) + write m, v, u (12) = 28 B/element; 100 equal tensors.
void BM_lamb_direction(benchmark::State& st) {
  const size_t n = static_cast<size_t>(st.range(0));
  g_pool.keep_only(n);
  const float* theta = floats("theta", n);
  float* m = floats("m", n, 0.1f, 3);
  float* v = g_pool.get<float>("v", n, fill_positive(0.1f, 4));
  const float* g = floats("g", n, 1.0f, 5);
  float* u = floats("u", n);
  const clbo::ParamLayout layout = clbo::ParamLayout::from_sizes(std::vector<size_t>(100, n / 100));
  std::vector<double> ts(100), us(100);
  const size_t covered = layout.total();
  const Timer t;
  for (auto _ : st) {
    lamb_direction(theta, m, v, g, u, layout, AdamArgs{}, ts.data(), us.data());
    benchmark::ClobberMemory();
  }
  report(st, covered, 28.0, t.seconds());
}

// Read x (4) = 4 B/element; 100 equal tensors.
void BM_tensor_sumsq(benchmark::State& st) {
  const size_t n = static_cast<size_t>(st.range(0));
  g_pool.keep_only(n);
  const float* x = floats("x", n);
  const clbo::ParamLayout layout = clbo::ParamLayout::from_sizes(std::vector<size_t>(100, n / 100));
  std::vector<double> out(100);
  const Timer t;
  for (auto _ : st) {
    tensor_sumsq(x, layout, out.data());
    benchmark::ClobberMemory();
  }
  report(st, layout.total(), 4.0, t.seconds());
}

constexpr int64_t kSmall = int64_t{1} << 20, kLarge = int64_t{1} << 26;

#define CLBO_KERNEL_BENCH(fn)                                                 \
  BENCHMARK(fn)->Arg(kSmall)->Arg(kLarge)->MinTime(0.2)->UseRealTime()->Unit( \
      benchmark::kMillisecond)

CLBO_KERNEL_BENCH(BM_ef_sumsq);
CLBO_KERNEL_BENCH(BM_ef_sign_pack);
CLBO_KERNEL_BENCH(BM_compress_fused);
CLBO_KERNEL_BENCH(BM_unpack_scale);
BENCHMARK(BM_server_step)
    ->ArgNames({"c", "p"})
    ->Args({kSmall, 4})
    ->Args({kSmall, 8})
    ->Args({kLarge, 4})
    ->Args({kLarge, 8})
    ->MinTime(0.2)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
CLBO_KERNEL_BENCH(BM_random_mask);
CLBO_KERNEL_BENCH(BM_compact);
CLBO_KERNEL_BENCH(BM_topk);
CLBO_KERNEL_BENCH(BM_f32_to_f16);
CLBO_KERNEL_BENCH(BM_f16_to_f32);
CLBO_KERNEL_BENCH(BM_adam_update);
CLBO_KERNEL_BENCH(BM_lamb_direction);
CLBO_KERNEL_BENCH(BM_tensor_sumsq);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const size_t copy_bytes = copy_buffer_bytes();
  g_copy_bytes_per_s = measure_copy_bandwidth(copy_bytes);
  benchmark::AddCustomContext("llc_bytes", std::to_string(last_level_cache_bytes()));
  benchmark::AddCustomContext("copy_buffer_bytes", std::to_string(copy_bytes));
  benchmark::AddCustomContext("copy_bytes_per_second", std::to_string(g_copy_bytes_per_s));
  benchmark::RegisterBenchmark("BM_memcpy", BM_memcpy)
      ->Arg(static_cast<int64_t>(copy_bytes))
      ->MinTime(0.2)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
