// Constructors of the optimizers (one file each) for the make_optimizer factory.
#pragma once
#include <memory>

#include "optimizer_base.hpp"

namespace clbo::optim_detail {

using Maker = std::unique_ptr<Optimizer> (*)(const OptimizerConfig&, const ParamLayout&, int, int);

std::unique_ptr<Optimizer> make_adam(const OptimizerConfig& c, const ParamLayout& l, int p,
                                     int rank);
std::unique_ptr<Optimizer> make_lamb(const OptimizerConfig& c, const ParamLayout& l, int p,
                                     int rank);
// OneBitAdam and OneBitAdamNoErrorFeedback.
std::unique_ptr<Optimizer> make_onebit_adam(const OptimizerConfig& c, const ParamLayout& l, int p,
                                            int rank);
std::unique_ptr<Optimizer> make_onebit_lamb(const OptimizerConfig& c, const ParamLayout& l, int p,
                                            int rank);
std::unique_ptr<Optimizer> make_zero_one_adam(const OptimizerConfig& c, const ParamLayout& l, int p,
                                              int rank);
std::unique_ptr<Optimizer> make_slamb(const OptimizerConfig& c, const ParamLayout& l, int p,
                                      int rank);
std::unique_ptr<Optimizer> make_naive_onebit_adam(const OptimizerConfig& c, const ParamLayout& l,
                                                  int p, int rank);
std::unique_ptr<Optimizer> make_naive_onebit_lamb(const OptimizerConfig& c, const ParamLayout& l,
                                                  int p, int rank);

}  // namespace clbo::optim_detail
