// bench_kernels_cpu: throughput of the optimized CPU kernels against the machine's streaming
// bandwidth.
//
// Before any kernel runs, main() measures a streaming reference over two buffers of at least
// 4x the last-level cache each, single-threaded like every CPU kernel: the BEST of
//   memcpy        glibc's (it may use non-temporal stores)       2 B counted per byte copied
//   scale loop    d[i] = k * s[i], cached stores                 8 B per element
//   update loop   a[i] = k * a[i] + b[i], in place               12 B per element
//   update4 loop  a, b, c[i] = k * (a, b, c)[i] + d[i], in place  28 B per element (Adam's
//                 shape: 4 streams read, 3 written; the buffers split in halves)
// each the fastest of seven repetitions. A copy with cached stores also reads every
// destination line before writing it (write-allocate), so it moves 3 bytes for each 2 it
// counts; in-place updates (Adam's theta, m, v; the error buffer e) move exactly what they
// count, and one core keeps more requests in flight over more streams. On the development VM
// the update4 loop streams ~2x memcpy's counted rate, which is why fractions against
// memcpy alone came out near 2. All four rates go into the context.
//
// Every kernel benchmark then reports
//   bytes_per_second   = the MINIMUM bytes the kernel must move per element (reads + writes,
//                        each listed below) x elements / second,
//   items_per_second   = elements / second,
//   working_set_bytes  = bytes one round over all rotated buffer sets touches,
//   buffer_sets        = copies of the buffers rotated between iterations,
//   in_cache           = 1 when the working set fits in the last-level cache,
// and, ONLY when the working set is at least the reference's buffer (>= 4x LLC, so no
// iteration finds its data in cache),
//   frac_of_copy_bw    = bytes_per_second / the reference's bytes per second.
// The 1M-element cases are in cache by design (in_cache = 1, no frac_of_copy_bw): they show
// in-cache throughput, which a memory roofline fraction cannot express. The 64M-element
// cases rotate enough buffer sets to reach the reference's buffer size. Every Google
// Benchmark flag works as usual (--benchmark_filter, --benchmark_min_time,
// --benchmark_out=f.json, --benchmark_list_tests, which lists without measuring the
// reference).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
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
#include "gbench_flags.hpp"
#include "start_barrier.hpp"

namespace {

using namespace clbo::kernels;
using Clock = std::chrono::steady_clock;

// Measured in main() before the benchmarks run.
double g_copy_bytes_per_s = 0.0;  // the streaming reference (best of the three patterns)
size_t g_copy_buffer_bytes = 0;   // size of each of the reference's two buffers
size_t g_llc_bytes = 0;           // the larger of the two reported last-level cache sizes
// --start_barrier: copies launched together start their first timed loop together.
clbo::bench::StartBarrier g_start_barrier;

constexpr int64_t kSmall = int64_t{1} << 20, kLarge = int64_t{1} << 26;

// ---- buffers ------------------------------------------------------------------------------
// Inputs are built once per size and shared by every benchmark of that size: rebuilding 64M
// elements per run would dominate the run time. A buffer may have several copies ("sets")
// that a benchmark rotates through so that its working set is out of cache.

struct AlignedFree {
  void operator()(void* p) const { std::free(p); }
};
using Block = std::unique_ptr<void, AlignedFree>;

class Pool {
 public:
  // Copy `set` of a buffer of `count` T, identified by (name, count, set). Set 0 is filled on
  // first use by `fill`; later sets copy set 0 (far cheaper than filling 64M elements again).
  template <typename T, typename Fill>
  T* get(const std::string& name, size_t count, Fill fill, size_t set = 0) {
    const Key key{name + "#" + std::to_string(set), count};
    auto it = blocks_.find(key);
    if (it == blocks_.end()) {
      const T* first = set > 0 ? get<T>(name, count, fill, 0) : nullptr;
      const size_t bytes = std::max<size_t>(64, (count * sizeof(T) + 63) / 64 * 64);
      Block b(std::aligned_alloc(64, bytes));
      if (!b) throw std::bad_alloc();
      if (first)
        std::memcpy(b.get(), first, count * sizeof(T));
      else
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

float* floats(const char* name, size_t n, size_t set, float scale = 1.0f, uint64_t seed = 1) {
  return g_pool.get<float>(name, n, fill_floats(scale, seed), set);
}

// How many buffer sets a benchmark of `n` elements, touching `set_bytes` per iteration,
// rotates through. The small size stays in cache on purpose (one set); larger sizes get
// enough sets that one round is at least the reference's buffer, so that, like the
// reference, every iteration streams from memory.
struct Rotation {
  size_t sets = 1;
  double set_bytes = 0;
  double working_set() const { return static_cast<double>(sets) * set_bytes; }
};
Rotation rotation(size_t n, double set_bytes) {
  Rotation r;
  r.set_bytes = set_bytes;
  if (n > static_cast<size_t>(kSmall))
    r.sets = std::max<size_t>(
        1, static_cast<size_t>(std::ceil(static_cast<double>(g_copy_buffer_bytes) / set_bytes)));
  return r;
}

// ---- reporting -----------------------------------------------------------------------------

// Constructed right before each timed loop, once the benchmark's buffers are built: so the
// start barrier (start_barrier.hpp) is passed here, before the loop's first iteration.
void pass_start_barrier() {
  try {
    g_start_barrier.pass();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_kernels_cpu: %s\n", e.what());
    std::exit(3);
  }
}

struct Timer {
  Timer() : start((pass_start_barrier(), Clock::now())) {}
  Clock::time_point start;
  double seconds() const { return std::chrono::duration<double>(Clock::now() - start).count(); }
};

// Sets items/bytes processed from the minimum bytes per element, the working-set counters,
// and frac_of_copy_bw from the wall time of the timed loop when the working set is as far
// out of cache as the reference's.
void report(benchmark::State& st, size_t elements, double min_bytes_per_element, double seconds,
            const Rotation& rot) {
  const double items = static_cast<double>(st.iterations()) * static_cast<double>(elements);
  const double bytes = items * min_bytes_per_element;
  st.SetItemsProcessed(static_cast<int64_t>(items));
  st.SetBytesProcessed(static_cast<int64_t>(bytes));
  st.counters["min_bytes_per_elem"] = min_bytes_per_element;
  st.counters["working_set_bytes"] = rot.working_set();
  st.counters["buffer_sets"] = static_cast<double>(rot.sets);
  st.counters["in_cache"] = rot.working_set() <= static_cast<double>(g_llc_bytes) ? 1.0 : 0.0;
  if (rot.working_set() >= static_cast<double>(g_copy_buffer_bytes) && seconds > 0 &&
      g_copy_bytes_per_s > 0)
    st.counters["frac_of_copy_bw"] = bytes / seconds / g_copy_bytes_per_s;
}

// ---- streaming reference -------------------------------------------------------------------

size_t sysconf_llc_bytes() {
  long v = 0;
#ifdef _SC_LEVEL3_CACHE_SIZE
  v = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
  return v > 0 ? static_cast<size_t>(v) : 0;
}

size_t sysfs_llc_bytes() {
  size_t best = 0;
  for (int idx = 0; idx < 8; ++idx) {  // the highest-level cache listed
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(idx);
    std::ifstream size_file(dir + "/size");
    std::string text;
    if (!(size_file >> text)) continue;
    size_t v = std::stoull(text);
    if (text.back() == 'K') v <<= 10;
    if (text.back() == 'M') v <<= 20;
    best = std::max(best, v);
  }
  return best;
}

// Some hypervisors report different figures (this VM: 320 MiB from glibc, 32 MiB in sysfs);
// take the larger, so a buffer 4x it is out of cache either way.
size_t last_level_cache_bytes() {
  const size_t best = std::max(sysconf_llc_bytes(), sysfs_llc_bytes());
  return best > 0 ? best : size_t{32} << 20;
}

size_t copy_buffer_bytes(size_t llc) {
  return std::max<size_t>(4 * llc, size_t{128} << 20);
}

struct Reference {
  double memcpy_rate = 0, scale_rate = 0, update_rate = 0, update4_rate = 0;  // counted B/s
  double best() const { return std::max({memcpy_rate, scale_rate, update_rate, update4_rate}); }
  const char* best_name() const {
    if (best() == memcpy_rate) return "memcpy";
    if (best() == scale_rate) return "scale_loop";
    return best() == update_rate ? "update_loop" : "update4_loop";
  }
};

// Each pattern takes well under a second per run even on a slow VM; more runs make the
// best-of less sensitive to other processes competing for memory bandwidth.
constexpr int kReferenceReps = 7;

// The fastest of `reps` timed runs (after one untimed run that also faults the pages in):
// interference from other processes only ever slows a run down, so the best is the ceiling.
template <typename Body>
double best_rate(double counted_bytes, int reps, Body body) {
  body();
  double best = 0;
  for (int rep = 0; rep < reps; ++rep) {
    const Timer t;
    body();
    benchmark::ClobberMemory();
    best = std::max(best, counted_bytes / t.seconds());
  }
  return best;
}

// Out of line with restrict, so the compiler vectorizes it without runtime alias checks.
void update4(float* __restrict a, float* __restrict b, float* __restrict c,
             const float* __restrict d, size_t n, float k) {
  for (size_t i = 0; i < n; ++i) {
    a[i] = k * a[i] + d[i];
    b[i] = k * b[i] + d[i];
    c[i] = k * c[i] + d[i];
  }
}

Reference measure_reference(size_t bytes) {
  auto* src = g_pool.get<uint8_t>("copy_src", bytes, fill_bytes(3));
  auto* dst = g_pool.get<uint8_t>("copy_dst", bytes, fill_zero<uint8_t>());
  Reference r;
  const double b = static_cast<double>(bytes);
  r.memcpy_rate = best_rate(2 * b, kReferenceReps, [&] { std::memcpy(dst, src, bytes); });
  // Plain loops the compiler cannot turn into memcpy (k is opaque) and that it vectorizes
  // with ordinary cached stores. Start from finite floats: the random bytes need not be.
  const size_t n = bytes / sizeof(float);
  auto* a = reinterpret_cast<float*>(dst);
  auto* s = reinterpret_cast<float*>(src);
  fill_floats(1.0f, 7)(s, n);
  volatile float opaque = 0.5f;
  const float k = opaque;
  r.scale_rate = best_rate(2 * b, kReferenceReps, [&] {
    for (size_t i = 0; i < n; ++i) a[i] = k * s[i];
  });
  r.update_rate = best_rate(3 * b, kReferenceReps, [&] {  // k = 0.5 keeps a bounded (a -> 2s)
    for (size_t i = 0; i < n; ++i) a[i] = k * a[i] + s[i];
  });
  // About the same bytes as four arrays of half the size. Each starts at a different offset
  // within a page (a stagger of 16000 bytes): four streams at equal offsets compete for the
  // same cache sets, which on the development VM cut this loop to a third of its rate.
  const size_t stagger = 4000, len = n / 2 - 3 * stagger;
  float *a4 = a, *b4 = a + n / 2 + stagger, *c4 = s + 2 * stagger, *d4 = s + n / 2 + 3 * stagger;
  r.update4_rate = best_rate(28.0 * static_cast<double>(len), kReferenceReps,
                             [&] { update4(a4, b4, c4, d4, len, k); });
  g_pool.keep_only(0);
  return r;
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
  Rotation one;  // one "element" = one byte: read it, write it
  one.set_bytes = 2.0 * static_cast<double>(bytes);
  report(st, bytes, 2.0, t.seconds(), one);
  g_pool.keep_only(0);
}

// ---- 1-bit compression ---------------------------------------------------------------------
// Each benchmark lists the bytes one iteration touches (its buffer set) for the rotation, and
// the minimum bytes it must move per element for the counters.

// Pass 1 alone: read x (4) + read e (4) = 8 B/element.
void BM_ef_sumsq(benchmark::State& st) {
  const size_t n = static_cast<size_t>(st.range(0));
  g_pool.keep_only(n);
  const Rotation rot = rotation(n, 8.0 * static_cast<double>(n));
  std::vector<const float*> x, e;
  for (size_t k = 0; k < rot.sets; ++k) {
    x.push_back(floats("x", n, k));
    e.push_back(floats("e", n, k, 0.01f, 2));
  }
  size_t k = 0;
  const Timer t;
  for (auto _ : st) {
    benchmark::DoNotOptimize(ef_sumsq(x[k], n, e[k], n));
    k = (k + 1) % rot.sets;
  }
  report(st, n, 8.0, t.seconds(), rot);
}

// The buffers of one error-feedback pass: input x, error e (updated in place), packed bits.
struct EfSet {
  const float* x;
  float* e;
  uint8_t* bits;
};
std::vector<EfSet> ef_sets(size_t n, size_t sets) {
  std::vector<EfSet> out;
  for (size_t k = 0; k < sets; ++k)
    out.push_back({floats("x", n, k), floats("e", n, k, 0.01f, 2),
                   g_pool.get<uint8_t>("bits", n / 8, fill_zero<uint8_t>(), k)});
  return out;
}

// Pass 2 alone (docs/reference/published.md): read x (4) + read and write e (8) + write bits (1/8)
// = 12.125 B.
void BM_ef_sign_pack(benchmark::State& st) {
  const size_t n = static_cast<size_t>(st.range(0));
  g_pool.keep_only(n);
  const Rotation rot = rotation(n, 8.125 * static_cast<double>(n));
  const std::vector<EfSet> sets = ef_sets(n, rot.sets);
  size_t k = 0;
  const Timer t;
  for (auto _ : st) {
    ef_sign_pack(sets[k].x, n, sets[k].e, n, 0.5f, sets[k].bits);
    benchmark::ClobberMemory();
    k = (k + 1) % rot.sets;
  }
  report(st, n, 12.125, t.seconds(), rot);
}

// Worker compression as used: both passes. 8 + 12.125 = 20.125 B/element
// (docs/reference/published.md).
void BM_compress_fused(benchmark::State& st) {
  const size_t n = static_cast<size_t>(st.range(0));
  g_pool.keep_only(n);
  const Rotation rot = rotation(n, 8.125 * static_cast<double>(n));
  const std::vector<EfSet> sets = ef_sets(n, rot.sets);
  size_t k = 0;
  const Timer t;
  for (auto _ : st) {
    const EfSet& b = sets[k];
    const float s = rms_scale(ef_sumsq(b.x, n, b.e, n), n);
    ef_sign_pack(b.x, n, b.e, n, s, b.bits);
    benchmark::ClobberMemory();
    k = (k + 1) % rot.sets;
  }
  report(st, n, 20.125, t.seconds(), rot);
}

// Read bits (1/8) + write fp32 (4) = 4.125 B/element (docs/reference/published.md).
void BM_unpack_scale(benchmark::State& st) {
  const size_t n = static_cast<size_t>(st.range(0));
  g_pool.keep_only(n);
  const Rotation rot = rotation(n, 4.125 * static_cast<double>(n));
  std::vector<const uint8_t*> bits;
  std::vector<float*> out;
  for (size_t k = 0; k < rot.sets; ++k) {
    bits.push_back(g_pool.get<uint8_t>("bits_in", n / 8, fill_bytes(5), k));
    out.push_back(floats("out", n, k));
  }
  size_t k = 0;
  const Timer t;
  for (auto _ : st) {
    unpack_scale(bits[k], n, 0.5f, out[k]);
    benchmark::ClobberMemory();
    k = (k + 1) % rot.sets;
  }
  report(st, n, 4.125, t.seconds(), rot);
}

// One server chunk of c = range(0) elements from p workers. The global RMS needs all of a
// before any sign, so two passes are unavoidable. Cheapest of the two layouts:
//   store a:     (p/8 + 4 + 4) + (4 + 4 + 1/8)      = 16.125 + p/8
//   recompute a: (p/8 + 4)     + (p/8 + 4 + 4 + 1/8) = 12.125 + p/4
// i.e. 13.125 B/element for p = 4 and 14.125 for p = 8 (recompute wins for p < 32).
void BM_server_step(benchmark::State& st) {
  const size_t c = static_cast<size_t>(st.range(0));
  const int p = static_cast<int>(st.range(1));
  const double pp = static_cast<double>(p);
  g_pool.keep_only(c);
  const Rotation rot = rotation(c, (pp / 8 + 4 + 0.125) * static_cast<double>(c));
  std::vector<std::vector<const uint8_t*>> pieces(rot.sets);
  std::vector<float*> e;
  std::vector<uint8_t*> out;
  std::vector<float> scales;
  for (int j = 0; j < p; ++j) scales.push_back(0.5f + 0.01f * static_cast<float>(j));
  for (size_t k = 0; k < rot.sets; ++k) {
    for (int j = 0; j < p; ++j)
      pieces[k].push_back(g_pool.get<uint8_t>("piece" + std::to_string(j), c / 8,
                                              fill_bytes(static_cast<uint64_t>(j)), k));
    e.push_back(floats("e", c, k, 0.01f, 2));
    out.push_back(g_pool.get<uint8_t>("bits", c / 8, fill_zero<uint8_t>(), k));
  }
  size_t k = 0;
  const Timer t;
  for (auto _ : st) {
    benchmark::DoNotOptimize(server_step(pieces[k].data(), scales.data(), p, e[k], c, out[k]));
    k = (k + 1) % rot.sets;
  }
  report(st, c, std::min(16.125 + pp / 8, 12.125 + pp / 4), t.seconds(), rot);
}

// ---- masks and sparsification --------------------------------------------------------------

// Write the bitmap: 1/8 B/element. Compute-bound (Philox); items_per_second is the figure.
void BM_random_mask(benchmark::State& st) {
  const size_t n = static_cast<size_t>(st.range(0));
  g_pool.keep_only(n);
  const Rotation rot = rotation(n, 0.125 * static_cast<double>(n));
  std::vector<uint8_t*> bits;
  for (size_t k = 0; k < rot.sets; ++k)
    bits.push_back(g_pool.get<uint8_t>("bits", n / 8, fill_zero<uint8_t>(), k));
  uint32_t step = 1;
  size_t k = 0;
  const Timer t;
  for (auto _ : st) {
    random_mask(0, step++, 0.1, 0, n, bits[k]);
    benchmark::ClobberMemory();
    k = (k + 1) % rot.sets;
  }
  report(st, n, 0.125, t.seconds(), rot);
}

// The rotated buffer sets of compact and scatter over n elements, the mask keeping one in ten:
// per set a source and an output of n floats and the mask. A set spans 4.525 B per element
// for either: compact reads its source (4) and the bits (1/8) and writes the kept values (0.4);
// scatter reads the bits and the kept values (0.4, the source's first tenth) and, keeping one
// in ten at random, writes into most of the output's cache lines (4).
struct MaskedSets {
  Rotation rot;
  std::vector<const float*> src;
  std::vector<const uint8_t*> bits;
  std::vector<float*> out;
};
MaskedSets masked_sets(size_t n) {
  g_pool.keep_only(n);
  MaskedSets m{rotation(n, 4.525 * static_cast<double>(n)), {}, {}, {}};
  auto mask = [n](uint8_t* b, size_t) { random_mask(0, 1, 0.1, 0, n, b); };
  for (size_t k = 0; k < m.rot.sets; ++k) {
    m.src.push_back(floats("x", n, k));
    m.bits.push_back(g_pool.get<uint8_t>("mask", n / 8, mask, k));
    m.out.push_back(floats("out", n, k));
  }
  return m;
}

// k = 0.1: read src (4) + read bits (1/8) + write the kept values (0.1 x 4) = 4.525 B/element.
void BM_compact(benchmark::State& st) {
  const size_t n = static_cast<size_t>(st.range(0));
  const MaskedSets m = masked_sets(n);
  size_t k = 0;
  const Timer t;
  for (auto _ : st) {
    benchmark::DoNotOptimize(compact(m.src[k], m.bits[k], n, m.out[k]));
    k = (k + 1) % m.rot.sets;
  }
  report(st, n, 4.525, t.seconds(), m.rot);
}

// The sparse allreduce's inverse of compact (clbo::sparse_allreduce_sum scatters the reduced
// values back): k = 0.1: read bits (1/8) + read the kept values (0.1 x 4) + write them into
// place (0.1 x 4) = 0.925 B/element at least; the rest of dst is untouched.
void BM_scatter(benchmark::State& st) {
  const size_t n = static_cast<size_t>(st.range(0));
  const MaskedSets m = masked_sets(n);
  size_t k = 0;
  const Timer t;
  for (auto _ : st) {
    scatter(m.src[k], m.bits[k], n, m.out[k]);
    benchmark::DoNotOptimize(m.out[k]);
    benchmark::ClobberMemory();
    k = (k + 1) % m.rot.sets;
  }
  report(st, n, 0.925, t.seconds(), m.rot);
}

// k = n/100: read x (4) + write k (index 4, value 4) = 4.08 B/element. Compute-bound.
void BM_topk(benchmark::State& st) {
  const size_t n = static_cast<size_t>(st.range(0)), kk = n / 100;
  g_pool.keep_only(n);
  const Rotation rot = rotation(n, 4.08 * static_cast<double>(n));
  std::vector<const float*> x;
  for (size_t k = 0; k < rot.sets; ++k) x.push_back(floats("x", n, k));
  std::vector<uint32_t> idx(kk);
  std::vector<float> val(kk);
  size_t k = 0;
  const Timer t;
  for (auto _ : st) {
    topk_select(x[k], n, kk, idx.data(), val.data());
    benchmark::ClobberMemory();
    k = (k + 1) % rot.sets;
  }
  report(st, n, 4.08, t.seconds(), rot);
}

// ---- fp16 ------------------------------------------------------------------------------------

// Read fp32 (4) + write fp16 (2) = 6 B/element.
void BM_f32_to_f16(benchmark::State& st) {
  const size_t n = static_cast<size_t>(st.range(0));
  g_pool.keep_only(n);
  const Rotation rot = rotation(n, 6.0 * static_cast<double>(n));
  std::vector<const float*> x;
  std::vector<uint16_t*> h;
  for (size_t k = 0; k < rot.sets; ++k) {
    x.push_back(floats("x", n, k));
    h.push_back(g_pool.get<uint16_t>("h", n, fill_zero<uint16_t>(), k));
  }
  size_t k = 0;
  const Timer t;
  for (auto _ : st) {
    f32_to_f16(x[k], n, h[k]);
    benchmark::ClobberMemory();
    k = (k + 1) % rot.sets;
  }
  report(st, n, 6.0, t.seconds(), rot);
}

// Read fp16 (2) + write fp32 (4) = 6 B/element.
void BM_f16_to_f32(benchmark::State& st) {
  const size_t n = static_cast<size_t>(st.range(0));
  g_pool.keep_only(n);
  const Rotation rot = rotation(n, 6.0 * static_cast<double>(n));
  auto halves = [](uint16_t* p, size_t m) {
    for (size_t i = 0; i < m; ++i) p[i] = static_cast<uint16_t>((i * 40503u) & 0x7BFFu);
  };
  std::vector<const uint16_t*> h;
  std::vector<float*> out;
  for (size_t k = 0; k < rot.sets; ++k) {
    h.push_back(g_pool.get<uint16_t>("h_in", n, halves, k));
    out.push_back(floats("out", n, k));
  }
  size_t k = 0;
  const Timer t;
  for (auto _ : st) {
    f16_to_f32(h[k], n, out[k]);
    benchmark::ClobberMemory();
    k = (k + 1) % rot.sets;
  }
  report(st, n, 6.0, t.seconds(), rot);
}

// ---- optimizer math --------------------------------------------------------------------------

// θ, m, v and g of one optimizer step (u: LAMB's direction, when asked for).
struct OptimSet {
  float *theta, *m, *v;
  const float* g;
  float* u;
};
std::vector<OptimSet> optim_sets(size_t n, size_t sets, bool with_u) {
  std::vector<OptimSet> out;
  for (size_t k = 0; k < sets; ++k)
    out.push_back({floats("theta", n, k), floats("m", n, k, 0.1f, 3),
                   g_pool.get<float>("v", n, fill_positive(0.1f, 4), k), floats("g", n, k, 1.0f, 5),
                   with_u ? floats("u", n, k) : nullptr});
  return out;
}

// Read θ, m, v, g (16) + write θ, m, v (12) = 28 B/element.
void BM_adam_update(benchmark::State& st) {
  const size_t n = static_cast<size_t>(st.range(0));
  g_pool.keep_only(n);
  const Rotation rot = rotation(n, 16.0 * static_cast<double>(n));
  const std::vector<OptimSet> sets = optim_sets(n, rot.sets, false);
  AdamArgs a;
  a.lr = 1e-6f;
  size_t k = 0;
  const Timer t;
  for (auto _ : st) {
    adam_update(sets[k].theta, sets[k].m, sets[k].v, sets[k].g, n, a);
    benchmark::ClobberMemory();
    k = (k + 1) % rot.sets;
  }
  report(st, n, 28.0, t.seconds(), rot);
}

// Read θ, m, v, g (16) + write m, v, u (12) = 28 B/element; 100 equal tensors.
void BM_lamb_direction(benchmark::State& st) {
  const size_t n = static_cast<size_t>(st.range(0));
  g_pool.keep_only(n);
  const Rotation rot = rotation(n, 20.0 * static_cast<double>(n));
  const std::vector<OptimSet> sets = optim_sets(n, rot.sets, true);
  const clbo::ParamLayout layout = clbo::ParamLayout::from_sizes(std::vector<size_t>(100, n / 100));
  std::vector<double> ts(100), us(100);
  const size_t covered = layout.total();
  size_t k = 0;
  const Timer t;
  for (auto _ : st) {
    const OptimSet& b = sets[k];
    lamb_direction(b.theta, b.m, b.v, b.g, b.u, layout, AdamArgs{}, ts.data(), us.data());
    benchmark::ClobberMemory();
    k = (k + 1) % rot.sets;
  }
  report(st, covered, 28.0, t.seconds(), rot);
}

// Read x (4) = 4 B/element; 100 equal tensors.
void BM_tensor_sumsq(benchmark::State& st) {
  const size_t n = static_cast<size_t>(st.range(0));
  g_pool.keep_only(n);
  const Rotation rot = rotation(n, 4.0 * static_cast<double>(n));
  std::vector<const float*> x;
  for (size_t k = 0; k < rot.sets; ++k) x.push_back(floats("x", n, k));
  const clbo::ParamLayout layout = clbo::ParamLayout::from_sizes(std::vector<size_t>(100, n / 100));
  std::vector<double> out(100);
  size_t k = 0;
  const Timer t;
  for (auto _ : st) {
    tensor_sumsq(x[k], layout, out.data());
    benchmark::ClobberMemory();
    k = (k + 1) % rot.sets;
  }
  report(st, layout.total(), 4.0, t.seconds(), rot);
}

// Each kernel at two sizes, each timed in the unit that suits it: the in-cache 1M-element
// case takes about a millisecond or less (microseconds), the 64M-element case tens of
// milliseconds. The minimum time is Google Benchmark's --benchmark_min_time (clbo's default
// 0.2 s when it is not given; see main).
// --iterations=N: every benchmark times exactly N iterations in one run (Google Benchmark
// appends "/iterations:N" to its name). Copies started together (--start_barrier) then do the
// same work from the same moment; with --benchmark_min_time each copy sizes its own runs from
// its own trial runs, and the copies drift apart (on 2026-12-05 one of 4 copies sized its
// final run after the others had finished and ran it alone).
int64_t g_iterations = 0;

benchmark::internal::Benchmark* fixed(benchmark::internal::Benchmark* b) {
  return g_iterations > 0 ? b->Iterations(g_iterations) : b;
}

void register_kernel(const char* name, void (*fn)(benchmark::State&)) {
  fixed(benchmark::RegisterBenchmark(name, fn)->Arg(kSmall)->UseRealTime()->Unit(
      benchmark::kMicrosecond));
  fixed(benchmark::RegisterBenchmark(name, fn)->Arg(kLarge)->UseRealTime()->Unit(
      benchmark::kMillisecond));
}

void register_all(size_t copy_bytes) {
  register_kernel("BM_ef_sumsq", BM_ef_sumsq);
  register_kernel("BM_ef_sign_pack", BM_ef_sign_pack);
  register_kernel("BM_compress_fused", BM_compress_fused);
  register_kernel("BM_unpack_scale", BM_unpack_scale);
  for (const int64_t c : {kSmall, kLarge})
    fixed(benchmark::RegisterBenchmark("BM_server_step", BM_server_step))
        ->ArgNames({"c", "p"})
        ->Args({c, 4})
        ->Args({c, 8})
        ->UseRealTime()
        ->Unit(c == kSmall ? benchmark::kMicrosecond : benchmark::kMillisecond);
  register_kernel("BM_random_mask", BM_random_mask);
  register_kernel("BM_compact", BM_compact);
  register_kernel("BM_scatter", BM_scatter);
  register_kernel("BM_topk", BM_topk);
  register_kernel("BM_f32_to_f16", BM_f32_to_f16);
  register_kernel("BM_f16_to_f32", BM_f16_to_f32);
  register_kernel("BM_adam_update", BM_adam_update);
  register_kernel("BM_lamb_direction", BM_lamb_direction);
  register_kernel("BM_tensor_sumsq", BM_tensor_sumsq);
  fixed(benchmark::RegisterBenchmark("BM_memcpy", BM_memcpy))
      ->Arg(static_cast<int64_t>(copy_bytes))
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
}

}  // namespace

int main(int argc, char** argv) {
  // clbo's two flags of its own, taken out before Google Benchmark sees the rest:
  // --no_reference skips the streaming reference (2 × copy_buffer_bytes, several patterns)
  // and rotates a single buffer set, so that p copies at once (clbo validate's streaming
  // contention) hold p kernels' buffers and no reference. No row then has frac_of_copy_bw.
  // --start_barrier=DIR,N makes N copies launched together start timing together
  // (start_barrier.hpp), and --iterations=N gives every benchmark one run of N iterations.
  std::vector<char*> kept;
  bool reference = true;
  const std::string barrier_flag = "--start_barrier=", iterations_flag = "--iterations=";
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--no_reference") == 0) {
      reference = false;
    } else if (std::strncmp(argv[i], iterations_flag.c_str(), iterations_flag.size()) == 0) {
      char* end = nullptr;
      const char* v = argv[i] + iterations_flag.size();
      g_iterations = std::strtoll(v, &end, 10);
      if (end == v || *end != '\0' || g_iterations < 1) {
        std::fprintf(stderr, "bench_kernels_cpu: %s: expected a whole number >= 1\n", argv[i]);
        return 2;
      }
    } else if (std::strncmp(argv[i], barrier_flag.c_str(), barrier_flag.size()) == 0) {
      try {
        g_start_barrier = clbo::bench::StartBarrier::parse(argv[i] + barrier_flag.size());
      } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_kernels_cpu: %s\n", e.what());
        return 2;
      }
    } else {
      kept.push_back(argv[i]);
    }
  }
  argc = static_cast<int>(kept.size());
  kept.push_back(nullptr);
  argv = kept.data();
  // Every Google Benchmark flag works as in any Google Benchmark binary; clbo only supplies
  // a default --benchmark_min_time of 0.2 s, which the user's own replaces.
  clbo::bench::ArgsWithDefaultMinTime args(argc, argv, "0.2");
  benchmark::Initialize(args.argc(), args.argv());
  if (benchmark::ReportUnrecognizedArguments(*args.argc(), args.argv())) return 1;
  g_llc_bytes = last_level_cache_bytes();
  const size_t copy_bytes = copy_buffer_bytes(g_llc_bytes);
  g_copy_buffer_bytes = reference ? copy_bytes : 0;
  register_all(copy_bytes);
  if (!reference) benchmark::AddCustomContext("copy_reference", "none (--no_reference)");
  // Listing runs nothing, so it measures nothing first.
  if (reference && !clbo::bench::gbench_bool_flag(clbo::bench::gbench_args(argc, argv),
                                                  "benchmark_list_tests")) {
    std::fprintf(stderr, "measuring the streaming reference over 2 x %zu MiB...\n",
                 copy_bytes >> 20);
    const Reference ref = measure_reference(copy_bytes);
    g_copy_bytes_per_s = ref.best();
    auto context = [](const char* key, auto value) {
      benchmark::AddCustomContext(key, std::to_string(value));
    };
    context("llc_bytes", g_llc_bytes);
    context("llc_bytes_sysconf", sysconf_llc_bytes());
    context("llc_bytes_sysfs", sysfs_llc_bytes());
    context("copy_buffer_bytes", copy_bytes);
    context("copy_bytes_per_second", g_copy_bytes_per_s);
    benchmark::AddCustomContext("copy_reference", ref.best_name());
    context("memcpy_bytes_per_second", ref.memcpy_rate);
    context("scale_loop_bytes_per_second", ref.scale_rate);
    context("update_loop_bytes_per_second", ref.update_rate);
    context("update4_loop_bytes_per_second", ref.update4_rate);
    // The CPU kernels are single-threaded, and so is every reference pattern.
    context("threads", 1);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
