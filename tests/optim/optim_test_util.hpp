// Shared fixtures of the optimizer tests: a small layout with tensors of different sizes
// (one 1-D), deterministic per-rank gradients, and a World that steps p optimizers over the
// local backend one step at a time, counting the bytes each rank sends.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "clbo/collectives/counting.hpp"
#include "clbo/collectives/local.hpp"
#include "clbo/core/layout.hpp"
#include "clbo/optim/optimizer.hpp"
#include "clbo/plan/plan.hpp"

namespace clbo::test {

// 96 + 12 + 42 = 150 elements: two matrices and a bias vector. 150 is not a multiple of
// the 1-bit padding unit for any p, so padding is always exercised.
inline ParamLayout test_layout() {
  ParamLayout l;
  l.add("w1", 96, {8, 12});
  l.add("b1", 12, {12});
  l.add("w2", 42, {6, 7});
  return l;
}

// Gradient element i of `rank` at iteration `iter` (1-based): smooth in i, different on
// every rank and step, and a different magnitude per tensor so per-tensor rules matter.
inline std::vector<float> make_grad(const ParamLayout& layout, int rank, int64_t iter) {
  std::vector<float> g(layout.total());
  for (size_t k = 0; k < layout.num_tensors(); ++k) {
    const double scale = 0.5 * static_cast<double>(k + 1);
    for (size_t j = 0; j < layout[k].size; ++j) {
      const size_t i = layout[k].offset + j;
      const double x = 0.37 * static_cast<double>(i) + 1.3 * static_cast<double>(iter);
      g[i] = static_cast<float>(
          scale * (std::sin(x) + 0.4 * std::cos(1.7 * rank + 0.11 * i + 0.5 * iter)) +
          0.05 * (rank - 1));
    }
  }
  return g;
}

inline std::vector<float> initial_params(size_t n) {
  std::vector<float> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<float>(0.5 * std::sin(0.9 * i + 0.3));
  return p;
}

using GradFn = std::function<std::vector<float>(int rank, int64_t iter)>;

inline nlohmann::json block(const std::string& type, nlohmann::json params) {
  return nlohmann::json{{"type", type}, {"params", std::move(params)}};
}

struct World {
  World(const nlohmann::json& cfg, ParamLayout l, int world) : p(world), layout(std::move(l)) {
    for (int r = 0; r < p; ++r) {
      opts.push_back(make_optimizer(cfg, "test.json", layout, p, r));
      params.push_back(initial_params(layout.total()));
    }
  }

  std::vector<const Optimizer*> const_ranks() const {
    std::vector<const Optimizer*> v;
    for (const auto& o : opts) v.push_back(o.get());
    return v;
  }
  std::vector<Optimizer*> ranks() {
    std::vector<Optimizer*> v;
    for (auto& o : opts) v.push_back(o.get());
    return v;
  }

  // One step of iteration iter+1 on every rank; returns the bytes each rank sent and records
  // whether each rank's step ran.
  std::vector<uint64_t> step(const GradFn& fn = {}) {
    ++iter;
    std::vector<uint64_t> bytes(static_cast<size_t>(p));
    stepped.assign(static_cast<size_t>(p), 0);
    std::vector<std::vector<float>> grads;
    for (int r = 0; r < p; ++r) grads.push_back(fn ? fn(r, iter) : make_grad(layout, r, iter));
    run_local(p, [&](Communicator& comm) {
      const size_t r = static_cast<size_t>(comm.rank());
      CountingCommunicator counting(comm);
      stepped[r] = opts[r]->step(counting, params[r].data(), grads[r].data());
      bytes[r] = counting.bytes_sent();
    });
    return bytes;
  }
  void run(int steps) {
    for (int s = 0; s < steps; ++s) step();
  }

  int p;
  ParamLayout layout;
  std::vector<std::unique_ptr<Optimizer>> opts;
  std::vector<std::vector<float>> params;
  // char, not bool: the ranks' threads write their own entries at once, and vector<bool> packs
  // them into shared words (a data race that lost a rank's flag under load).
  std::vector<char> stepped;
  int64_t iter = 0;
};

inline std::string saved_state(const Optimizer& o) {
  std::ostringstream out(std::ios::binary);
  o.save_state(out);
  return std::move(out).str();
}

// The skipped-steps counter inside a saved state, at its documented offset
// (docs/optimizers.md, "Checkpoints"): magic, version, length, type, n, p, rank, tensor
// count, tensor sizes, steps, then skipped.
inline size_t skip_counter_offset(const Optimizer& o, size_t num_tensors) {
  return 8 + 4 + 8 + 8 + o.type().size() + 8 + 4 + 4 + 8 + 8 * num_tensors + 8;
}
inline uint64_t skip_counter(const std::string& state, size_t offset) {
  uint64_t v = 0;
  for (size_t b = 0; b < 8; ++b)
    v |= uint64_t(static_cast<unsigned char>(state[offset + b])) << (8 * b);
  return v;
}

inline bool bit_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The bytes rank `rank` must send at step t, from the optimizer's own schedule and CommPlan.
inline uint64_t planned_bytes(const Optimizer& o, int64_t t, int p, int rank) {
  uint64_t total = 0;
  for (const CommCall& call : o.comm_schedule(t).calls)
    total += make_plan(call, p).bytes_sent_by(rank);
  return total;
}

// Names a world-size parameterised test "p<N>". Built by appending: GCC 12 warns falsely
// (-Wrestrict, inside char_traits) on `"p" + std::to_string(n)` once it is inlined here.
inline std::string world_size_name(const ::testing::TestParamInfo<int>& info) {
  std::string name = "p";
  name += std::to_string(info.param);
  return name;
}

}  // namespace clbo::test
