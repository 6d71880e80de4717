// Summary tables built from whatever results exist: volume per optimizer and speedup per
// cluster (clbo.simulate/1), convergence gaps (clbo.train/1), kernel roofline fractions
// (clbo.bench.kernels/1) and collective benchmarks (clbo.bench.collectives/1). Each table
// names its source results file.
#pragma once
#include "clbo/report/document.hpp"
#include "clbo/report/results_store.hpp"

namespace clbo::report {

Document summary_document(const ResultsStore& store);

// Number formatting shared by all tables: about three significant digits, no exponent for
// ordinary magnitudes.
std::string format_number(double v);

}  // namespace clbo::report
