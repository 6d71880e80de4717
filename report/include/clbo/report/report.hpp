// `clbo report` as a library call: load specs and results, evaluate every claim, build the
// paper, headline and summary documents, and write them only when all of it succeeded.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "clbo/report/claim_spec.hpp"
#include "clbo/report/document.hpp"
#include "clbo/report/evaluate.hpp"
#include "clbo/report/results_store.hpp"

namespace clbo::report {

struct ReportOptions {
  std::string results_dir = "results";
  std::string specs_dir;  // empty: default_specs_dir()
  std::string format = "md";
  std::string out_dir = "tables";
};

// ./experiments/paper when it exists, else the source tree's (CLBO_SOURCE_DIR).
std::string default_specs_dir();

const std::vector<std::string>& formats();

// Paper tables (one per claim "table", in spec order), then the out-of-band and not-computed
// sections.
Document paper_document(const std::vector<ClaimRow>& rows, const std::string& results_dir);
Document headline_document(const std::vector<ClaimRow>& rows, const std::string& results_dir);

// The flat CSV forms: one row per claim with its id and explanation columns.
Table claims_csv_table(const std::vector<ClaimRow>& rows);

struct ReportOutput {
  std::map<std::string, std::string> files;  // file name under out_dir -> content
  Counts counts;
  bool paper = false;                      // paper.* and headline.* were rendered
  std::vector<std::string> specs_used;     // names of the specs evaluated
  std::vector<std::string> specs_skipped;  // names of the specs whose results are absent
};

// The specs that apply to the results: those that read at least one file the store holds
// (a spec that reads some but not all is kept, so its missing file is an error), plus the
// specs that read no file at all (only unavailable claims) when any other spec applies.
// A user's own results folder matches none: the report is then the summary alone.
std::vector<const ClaimSpec*> specs_matching(const std::vector<ClaimSpec>& specs,
                                             const ResultsStore& store);

// Everything in memory; throws on any error before anything is written, and when the
// store holds no results file at all.
ReportOutput build_report(const std::vector<ClaimSpec>& specs, const ResultsStore& store,
                          const std::string& format);

// Writes every file atomically under out_dir; returns their paths.
std::vector<std::string> write_report(const ReportOutput& out, const std::string& out_dir);

}  // namespace clbo::report
