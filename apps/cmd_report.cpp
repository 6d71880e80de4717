// `clbo report`: the papers' claims (experiments/paper/*.json) against the results files
// under results/ (where a spec reads them), plus summary tables of any results, as Markdown,
// LaTeX or CSV. It reads results only and
// never reruns anything; every file is written only after every claim evaluated cleanly.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>
#include <memory>
#include <string>

#include "clbo/report/report.hpp"
#include "cli.hpp"

namespace {

struct ReportArgs {
  std::string results_dir = "results";
  std::string specs_dir;
  std::string format = "md";
  std::string out_dir = "tables";
  bool check_specs = false;
};

int run_report(const ReportArgs& a) {
  using namespace clbo::report;
  const std::string specs_dir = a.specs_dir.empty() ? default_specs_dir() : a.specs_dir;
  const std::vector<ClaimSpec> specs = load_claim_specs(specs_dir);
  size_t claims = 0;
  for (const auto& s : specs) claims += s.claims.size();
  if (a.check_specs) {
    fmt::print("{}: {} specs, {} claims, all valid\n", specs_dir, specs.size(), claims);
    return 0;
  }
  clbo::cli::progress(fmt::format("reading results under {}", a.results_dir));
  const ResultsStore store = ResultsStore::load(a.results_dir);
  clbo::cli::progress(fmt::format(
      "evaluating the claims of the specs in {} that read these results ({} specs, {} claims)",
      specs_dir, specs.size(), claims));
  const ReportOutput out = build_report(specs, store, a.format);
  for (const auto& path : write_report(out, a.out_dir)) fmt::print("wrote {}\n", path);
  if (!out.paper) {
    fmt::print(
        "no paper claims: none of the {} specs in {} reads these results (paper and headline "
        "tables not written; summary only)\n",
        specs.size(), specs_dir);
    return 0;
  }
  if (!out.specs_skipped.empty()) {
    fmt::print("skipped {} specs whose results are not under {}: {}\n", out.specs_skipped.size(),
               a.results_dir, fmt::join(out.specs_skipped, ", "));
  }
  const Counts& c = out.counts;
  fmt::print("{} rows: {} within the target band, {} outside, {} not computed, {} without a band\n",
             c.rows, c.within, c.outside, c.not_computed, c.no_band);
  return 0;
}

clbo::cli::Registrar reg(
    "report",
    "Tables of the papers' claims against clbo's results (paper, headline, summary) as md, tex "
    "or csv; reads results only",
    [](CLI::App& sub) {
      auto a = std::make_shared<ReportArgs>();
      sub.add_option("results", a->results_dir,
                     "Results folder to read (every *.json under it), or one results file")
          ->capture_default_str();
      sub.add_option("--specs", a->specs_dir,
                     "Folder of claim specs (default: ./experiments/paper, else the source "
                     "tree's)");
      sub.add_option("--format", a->format, "Output format")
          ->check(CLI::IsMember({"md", "tex", "csv"}))
          ->capture_default_str();
      sub.add_option("-o,--out", a->out_dir,
                     "Folder for paper.*, headline.*, summary.* (and validation.*)")
          ->capture_default_str();
      sub.add_flag("--check-specs", a->check_specs,
                   "Only load and validate the claim specs (no results needed); exit 0 when valid");
      sub.footer(
          "Writes paper.<ext> (one table per claim table: setting, quantity, paper value, clbo "
          "value, relative error, within band, provenance, source; then the rows outside the "
          "target band with their reasons, and the rows not computed), headline.<ext> (the "
          "headline claims) and summary.<ext> (volume per optimizer, speedup per cluster, "
          "convergence gaps, kernel roofline fractions), and validation.<ext> when clbo.validate/1 "
          "results exist (the simulator against the emulated cluster). Paper tables come only from "
          "the specs that read these results: on your own results folder (no paper spec's "
          "files) the report is summary.<ext> (and validation.<ext>) alone. A missing, corrupt "
          "or unsupported results file, a file that is not a clbo result, a stale simulation, "
          "or a bad spec is an error and nothing is written. "
          "The spec format is in docs/report.md; the results schemas in results/SCHEMA.md.");
      return [a] { return run_report(*a); };
    });

}  // namespace
