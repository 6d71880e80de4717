// reports/validation.*: the simulator against the emulated TCP cluster, from the
// clbo.validate/1 results under the results folder (clbo validate): the summary against the
// targets, every case (measured, simulated, relative error, bound) and each cluster's
// generated preset with the probes it came from.
#pragma once
#include "clbo/report/document.hpp"
#include "clbo/report/results_store.hpp"

namespace clbo::report {

// One document for every clbo.validate/1 file; false when there is none.
bool has_validation(const ResultsStore& store);
Document validation_document(const ResultsStore& store);

}  // namespace clbo::report
