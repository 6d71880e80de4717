// The streaming kernels' contention: how much slower each of p copies of one streaming kernel
// benchmark runs than one copy alone, when the p copies run at once on the machine the
// emulated hosts share. A kernel streaming from memory shares the memory bandwidth as well as
// the cores, so it need not slow as the gradient's compute does: in the run committed on
// 2026-12-05 the fused compress at 64M elements slowed 1.49x, 2.58x and 4.29x at p = 2, 4
// and 8, where the clusters' gradients slowed 1.02-1.04x, 2.18-2.38x and 4.73-5.28x
// (docs/validation.md, "CPU contention").
//
// `clbo validate` measures it once per run, for each rank count of its grid, right after the
// kernel benchmark alone, and keeps the record in the work folder
// (kernels/streaming-contention.json) for resimulation.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "clbo/validate/spec.hpp"

namespace clbo::validate {

// How long one copy alone times the kernel, seconds. Every copy runs the same fixed number of
// iterations (contention_iterations) from a common start (bench/start_barrier.hpp), so p
// copies at once overlap for all but the last iteration or so.
constexpr double kContentionAloneTime_s = 1.0;

// That time in this many repetitions (--benchmark_repetitions), each copy's rate the median
// of its own: a streaming kernel's rate on a VM dips by up to a third for tenths of a second
// to seconds (docs/validation.md, "Kernel rates"), and one run of a second is one draw.
constexpr int kContentionRepetitions = 5;

// The repetitions of the kernel benchmark alone that the model's rates come from, each rate
// its benchmark's median repetition (sim::median_iteration_rows), for the same reason, and
// the seconds each repetition times at least (--benchmark_min_time; clbo's default is 0.2 s
// for one run): five of 0.1 s cost a full grid about 10 s more than one of 0.2 s.
constexpr int kKernelBenchRepetitions = 5;
constexpr double kKernelBenchMinTime_s = 0.1;

// The benchmark the measurement repeats: the fused compress at its streaming size, the
// BM_compress_fused row of the alone benchmark that did not run in cache. Throws naming the
// file when there is none.
std::string streaming_probe_name(const nlohmann::json& kernel_bench, const std::string& file);

// The bytes one copy of that benchmark keeps live with one buffer set (bench_kernels_cpu
// --no_reference): the alone run's working_set_bytes over its buffer_sets; 0 when the row has
// none. p copies at once need p times as much: a rank count whose copies would need more than
// 80% of the memory available (as the grid's own check allows) is not measured.
double streaming_probe_bytes(const nlohmann::json& kernel_bench, const std::string& name,
                             const std::string& file);

// The Google Benchmark filter that runs that benchmark alone.
std::string streaming_probe_filter(const std::string& name);

// The iterations each copy times per repetition (bench_kernels_cpu --iterations): enough for
// one copy alone to run kContentionAloneTime_s over kContentionRepetitions repetitions at the
// alone benchmark's rate, and at least 3.
int64_t contention_iterations(const nlohmann::json& kernel_bench, const std::string& name,
                              const std::string& file);

// The distinct rank counts above 1 of the grid's clusters, ascending.
std::vector<int> contention_rank_counts(const ValidationSpec& spec);

// The record of one measurement: the probe's rate alone (one copy's `clbo bench kernels`
// JSON) and, for each p, the p copies' rates, their median and the factor alone / median.
// Each rate is the median of that run's repetitions; every repetition's rate is recorded
// (alone_repetitions_eps, copies_repetitions_eps).
nlohmann::json streaming_contention_record(const std::string& name, const nlohmann::json& alone,
                                           const std::map<int, std::vector<nlohmann::json>>& copies,
                                           const std::string& file);

// The factor for p ranks in such a record; 0 when the record has none for p.
double streaming_contention(const nlohmann::json& record, int ranks, const std::string& file);

// The factor a simulation slows the streaming kernels by: the measured one, but never less
// than `time_sharing`, the cores' share alone (cpu_contention: max(1, p/C)). p single-threaded
// copies on C cores cannot each run faster than C/p of a core, so a smaller measurement says
// the copies did not all run at once (as before the start barrier: 1.56 for 4 copies on 2
// cores on 2026-12-05), or, a few percent below, timing noise where the memory's limit is
// the cores' too (1.98 for 4 copies on 2 cores, 2026-12-05), and the floor is what the cores
// alone imply.
struct StreamingFactor {
  double factor = 1;
  bool floored = false;  // the measurement was below time_sharing
};
StreamingFactor streaming_factor(double measured, double time_sharing);

}  // namespace clbo::validate
