// Two deliberately broken variants of 1-bit Adam, kept in the convergence harness to
// reproduce the papers' negative result (they are not offered as optimizers elsewhere).
// Both run 1-bit Adam's dense warmup (no bias correction, docs/reference/algorithms.md §3) for
// freeze_step steps and then communicate through the real compressed allreduce:
//
//  "OneBitAdamNoErrorFeedback": 1-bit Adam's compression phase (frozen v, local momentum
//      1-bit allreduced) with both error buffers zeroed before every call, so the
//      compression error is thrown away instead of fed back.
//  "OneBitAdamUnfrozenVariance": the naive error-compensated scheme the 1-bit Adam paper
//      argues against: the *gradient* is 1-bit allreduced (error feedback on) and plain Adam
//      keeps updating both m and v from it. v then sees the squares of the 1-bit
//      reconstruction (one magnitude per chunk), which destroys Adam's per-coordinate scaling.
//
// Each accepts a DeepSpeed-style OneBitAdam params block (lr, betas, eps, weight_decay,
// freeze_step; comm_granularity "flat" and nonfinite "error" only).
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "clbo/optim/optimizer.hpp"

namespace clbo::train {

const std::vector<std::string>& broken_optimizer_types();

// The canonical spelling of `type` if it names a broken variant (case-insensitive), else "".
std::string broken_optimizer_canonical(const std::string& type);

std::unique_ptr<Optimizer> make_broken_optimizer(const nlohmann::json& block,
                                                 const std::string& file, const ParamLayout& layout,
                                                 int world_size, int rank);

}  // namespace clbo::train
