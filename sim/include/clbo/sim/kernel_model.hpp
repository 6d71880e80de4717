// clbo's compression kernels as the simulator times them: the roofline of
// docs/reference/published.md §5.5 at `efficiency` of datasheet HBM bandwidth, or the rates a
// `clbo bench kernels` run measured. DeepSpeed's unfused dataflow is timed by
// implementation.hpp instead.
#pragma once
#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace clbo::sim {

// Compression-kernel roofline (docs/reference/published.md §5.5): seconds for the
// compressed allreduce's kernels on one GPU, at `efficiency` of datasheet HBM bandwidth.
struct KernelModel {
  double hbm_Bps = 0;
  // Streaming kernels reach 85–93% of datasheet (docs/reference/published.md §5.1).
  double efficiency = 0.85;
  double compress_Bpe = 20.125;     // error feedback + sign + RMS scale, bytes per element
  double unpack_Bpe = 4.125;        // bits → scaled fp32
  double compact_Bpe = 4.125;       // SLAMB: the mask (1/8) + read m, per element of the buffer
  double compact_selected_Bpe = 8;  // SLAMB: write, read back and scatter a selected value
  // Measured rates in elements per second (0: use the roofline), from `clbo bench kernels`
  // Google Benchmark JSON (CPU or CUDA binary): see load_kernel_bench().
  double compress_eps = 0, unpack_eps = 0, server_eps = 0, compact_eps = 0, mask_eps = 0;
  double scatter_eps = 0;  // 0: not measured (benchmark files before 2026-12-05)
  // The server step's rate per element of its slice by the pieces p it decodes, where the
  // benchmark names p (the CPU binary's c:<c>/p:<p>); server_s interpolates the time per
  // element linearly in p between them, and takes the nearest outside. Empty: server_eps.
  std::map<int, double> server_eps_by_p;
  // The same kernels with their buffers in cache: the rates the benchmark measured at the
  // size whose working set fit its last-level cache ("in_cache" = 1), and that working set.
  // Used only when a cache model is on (llc_sharers > 0): see kernel_s().
  struct Cached {
    double eps = 0;                // elements per second; 0: not measured
    double working_set_bytes = 0;  // what the benchmark kept live while it ran at eps
  };
  Cached compress_cached, unpack_cached, compact_cached, scatter_cached;
  std::map<int, Cached> server_cached_by_p;
  // The last-level cache the ranks' buffers share (bytes; the benchmark's sysfs size) and how
  // many ranks share it; llc_sharers = 0: no cache model, every kernel at its streaming rate.
  double llc_bytes = 0;
  int llc_sharers = 0;
  std::string measured_from;
  nlohmann::json to_json() const;
  double seconds(double bytes) const { return bytes / (hbm_Bps * efficiency); }
  // The 1-bit scheme's kernels over a padded buffer of n elements on p ranks: the worker's
  // error feedback + sign + scale, the server's decode of p pieces and re-compression of
  // its c = n/p slice, and the final unpack of the gathered chunks.
  // working_set_bytes: what the calling rank keeps live around the call (the collective's
  // buffers and whatever else it touches between calls); 0: unknown, the streaming rate.
  double worker_compress_s(size_t padded_n, double working_set_bytes = 0) const;
  double server_s(size_t padded_n, int p, double working_set_bytes = 0) const;
  double unpack_s(size_t padded_n, double working_set_bytes = 0) const;
  // A kernel's seconds, streaming_s from memory or cached_s in cache, for ranks that each
  // keep working_set_bytes live in the shared cache: the cached time while all of them fit
  // in the working set the cached rate was measured at, the streaming time once they fill
  // the cache, and between the two log-log in the total (the fraction of accesses that
  // still hit falls as the total grows). No cache model or nothing measured: streaming_s.
  double kernel_s(double streaming_s, double cached_s, double cached_working_set_bytes,
                  double working_set_bytes) const;
  // What clbo's sparse_allreduce_sum computes around its ring, the mask given: compact the
  // `selected` kept values of n elements before it, scatter them back after it (its
  // mask_count, a popcount of n/8 bytes, is not charged). Without a measured scatter its
  // stand-in is the compaction's pass over the same mask; on the roofline the compaction's
  // bytes count the scatter's too (compact_selected_Bpe), and the scatter is 0.
  // working_set_bytes as above.
  double sparse_compact_s(size_t n, size_t selected, double working_set_bytes = 0) const;
  double sparse_scatter_s(size_t n, double working_set_bytes = 0) const;
  // SLAMB's step on a GPU as the papers' code runs it: draw the mask, then the sparse call's
  // kernels. clbo's MPI backend on CPU ranks charges the two above only: there the draw is
  // part of the optimizer step (SLAMB's build_mask), outside the collective.
  double compaction_s(size_t n, size_t selected) const;
};

// Reads `clbo bench kernels` output (Google Benchmark JSON: "benchmarks" with "name" and
// "items_per_second") into k: BM_compress_fused/BM_Compress, BM_unpack_scale/BM_Unpack,
// BM_server_step/BM_ServerStep (by p where named), BM_compact/BM_MaskCompact,
// BM_random_mask/BM_RandomMask, each at its largest size: the rate streaming from memory.
// A benchmark run with --benchmark_repetitions counts by its median repetition
// (median_iteration_rows).
// The first three's in-cache rows (counter in_cache = 1) fill the Cached rates, and the
// context's llc_bytes_sysfs (else llc_bytes) llc_bytes; the cache model stays off until the
// caller sets llc_sharers (docs/validation.md, "Kernel rates"). Kernels missing from the
// file keep the roofline.
void load_kernel_bench(KernelModel& k, const nlohmann::json& bench, const std::string& file);

// One row per benchmark of a Google Benchmark "benchmarks" array, in the order of first
// appearance: its iteration row or, run with --benchmark_repetitions, the repetition whose
// items_per_second is the median (of an odd count the middle one, of an even count the slower
// of the middle two: always a measured row, its counters its own). Aggregate rows (mean,
// median, stddev, cv) and rows without a positive items_per_second are left out. Why the
// median: on a VM sharing its host's memory, a streaming kernel's rate dips by up to a third
// for tenths of a second to seconds (docs/validation.md, "Kernel rates"), and one repetition
// is one draw of that.
std::vector<const nlohmann::json*> median_iteration_rows(const nlohmann::json& benchmarks);

// The rows median_iteration_rows chooses from: per benchmark, in the order of first
// appearance, its iteration rows with a positive items_per_second in the file's order (one
// per repetition).
std::vector<std::vector<const nlohmann::json*>> iteration_rows_by_benchmark(
    const nlohmann::json& benchmarks);

// The Google Benchmark document of a kernel benchmark file: `clbo bench kernels` writes it as
// it is (clbo.bench.kernels/2); earlier versions wrapped it in a clbo.bench.kernels/1
// envelope under "benchmark" (results/SCHEMA.md). The one place that unwraps it.
const nlohmann::json& google_benchmark_of(const nlohmann::json& bench);

// A number from a Google Benchmark JSON document's "context" (custom values are written as
// strings, e.g. llc_bytes, copy_bytes_per_second): 0 when absent; a value that is not a
// number is an InputError naming context.<key>.
double bench_context_number(const nlohmann::json& bench, const std::string& key,
                            const std::string& file);

}  // namespace clbo::sim
