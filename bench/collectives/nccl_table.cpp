// nccl-tests' text output for `clbo bench collectives`: the preamble, the two header lines
// and the units line, one row per size with the out-of-place and in-place halves (nccl-tests'
// widths and number formatting), clbo's columns after them, and the footer lines.
#include <fmt/format.h>

#include <cstdio>
#include <ctime>
#include <string>

#include "bench_world.hpp"

namespace clbo::bench {

namespace {

// nccl-tests' number formatting: the widest of %.2f, %.1f, %.0f that fits, else %e.
std::string fit(double v, int width) {
  for (int prec = 2; prec >= 0; --prec) {
    const std::string s = fmt::format("{:>{}.{}f}", v, width, prec);
    if (static_cast<int>(s.size()) <= width) return s;
  }
  return fmt::format("{:>{}.{}e}", v, width, width >= 7 ? 1 : 0);
}

// nccl-tests prints the count with %6g, and without a check "N/A" one column narrower than
// a count ("  %6g" against "    N/A", src/util.cu writeBenchmarkLineBody).
std::string wrong_text(const Sweep& run, uint64_t wrong) {
  if (!run.cfg.check) return "  N/A";
  char cell[32];
  std::snprintf(cell, sizeof cell, "%6g", static_cast<double>(wrong));
  return cell;
}

std::string join_names(const std::vector<std::string>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + v[i];
  return out;
}

}  // namespace

std::string now_text() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);  // nccl-tests' format
  return buf;
}

void print_preamble(const Sweep& run, int p) {
  const auto& c = run.cfg;
  std::printf("# clbo bench collectives: %s on the %s backend, %d ranks\n",
              join_names(c.collectives).c_str(), c.backend.c_str(), p);
  const bool factor = c.step_factor > 1;
  std::printf(
      "# nThread %lld nGpus %lld minBytes %llu maxBytes %llu step: %llu(%s) warmup iters: %lld "
      "iters: %lld agg iters: %lld validation: %lld graph: 0 unalign: 0\n",
      static_cast<long long>(c.nthreads), static_cast<long long>(c.ngpus),
      static_cast<unsigned long long>(parse_size(c.min_bytes, "-b")),
      static_cast<unsigned long long>(parse_size(c.max_bytes, "-e")),
      static_cast<unsigned long long>(factor ? static_cast<uint64_t>(c.step_factor)
                                             : parse_size(c.step_bytes, "-i")),
      factor ? "factor" : "bytes", static_cast<long long>(c.warmup),
      static_cast<long long>(c.iters), static_cast<long long>(c.agg_iters),
      static_cast<long long>(c.check));
  if (c.min_time_s > 0)
    std::printf(
        "# --min-time %g: at least -n iterations per size and half, more where they "
        "would take less than %g s (JSON: iterations)\n",
        c.min_time_s, c.min_time_s);
  if (c.blocking == 1)
    std::printf("# Blocking Enabled: wait and barrier after each inner iteration (-m) \n");
  if (c.blocking == 2)
    std::printf("# Blocking Enabled: wait after each inner iteration (-m), no barrier \n");
  if (c.blocking == 3)
    std::printf(
        "# Blocking Enabled: wait and barrier after each outer iteration (-n); time excludes "
        "barrier \n");
  if (c.run_cycles == 0)
    std::printf("# -N 0: the sweep repeats until stopped; no JSON result is written\n");
  if (c.halves == "native")
    std::printf(
        "# --halves native: only the half each collective runs without a staging copy is "
        "timed; the other half prints N/A\n");
  std::printf("#\n");
  for (const Case& k : run.cases) {
    if (&k != &run.cases.front() && k.op == (&k - 1)->op) continue;
    std::printf("# %s: %s", op_name(k.op), algorithm_of(run, k.op).c_str());
    const std::string staged = staging_note(k.op, c.backend);
    if (!staged.empty()) std::printf("; %s", staged.c_str());
    std::printf("\n");
  }
  std::printf(
      "# clbo's columns after nccl-tests': eq_busbw (compressed and sparse: size*2(p-1)/p / "
      "time, the busbw an uncompressed allreduce would need for the same time) out of place "
      "and in place, and wire_bytes (bytes one call sent per rank, the most any rank sent)\n");
  const bool ts = c.report_timestamps != 0;
  const char* time_label = c.report_cputime ? "cputime" : "time";
  std::printf("#\n");
  std::printf(
      "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          "
      "%s   clbo: out-of-place, in-place, per call\n",
      "", "", "", "", "", ts ? "                     " : "");
  std::printf(
      "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s  %8s  %8s  %12s\n",
      "size", "count", "type", "redop", "root", time_label, "algbw", "busbw", "#wrong", time_label,
      "algbw", "busbw", "#wrong", ts ? 19 : 0, ts ? "timestamp" : "", "eq_busbw", "eq_busbw",
      "wire_bytes");
  std::printf(
      "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s  %8s  %8s  %12s\n",
      "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)",
      "", ts ? 19 : 0, ts ? "%Y-%m-%d %H:%M:%S" : "", "(GB/s)", "(GB/s)", "(B)");
  std::fflush(stdout);
}

void print_row(const Sweep& run, const Row& row, int p) {
  std::string line = fmt::format("{:>12}  {:>12}  {:>8}  {:>6}  {:>6}", row.shape.bytes,
                                 row.shape.call_count, row.c.type, redop_of(row.c.op), -1);
  std::string eq;
  for (const Half* h : {&row.out_of_place, &row.in_place}) {
    if (!h->ran) {  // --halves native left it out
      line += fmt::format("  {:>7}  {:>6}  {:>6}  {:>6}", "N/A", "N/A", "N/A", "N/A");
      eq += fmt::format("  {:>8}", "N/A");
      continue;
    }
    const Bandwidths b = bandwidths(row, *h, p);
    line += fmt::format("  {}  {}  {}  {}", fit(h->time_us, 7), fit(b.algbw, 6), fit(b.busbw, 6),
                        wrong_text(run, h->wrong));
    eq += fmt::format("  {:>8}", b.eq_busbw < 0 ? "N/A" : fit(b.eq_busbw, 8));
  }
  if (run.cfg.report_timestamps) line += fmt::format("{:>21}", row.timestamp);
  line += eq + fmt::format("  {:>12}", row.wire_bytes);
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

void print_footer(uint64_t out_of_bounds, double avg_busbw, double min_busbw) {
  std::printf("# %-20s : %llu %s\n", "Out of bounds values",
              static_cast<unsigned long long>(out_of_bounds), out_of_bounds ? "FAILED" : "OK");
  std::printf("# %-20s : %g %s\n", "Avg bus bandwidth", avg_busbw,
              min_busbw < 0 ? "" : (avg_busbw >= min_busbw * 0.9 ? "OK" : "FAILED"));
  std::printf("#\n# Collective test concluded: clbo bench collectives\n#\n");
  std::fflush(stdout);
}

}  // namespace clbo::bench
