#include "optimizer_base.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <istream>
#include <iterator>
#include <ostream>

#include "clbo/collectives/algorithms.hpp"
#include "clbo/core/error.hpp"

namespace clbo::optim_detail {

namespace {

constexpr char kStateMagic[9] = "CLBOSTAT";
// 2: 0/1 Adam's interval counters left the state (they are a function of the step count).
constexpr uint32_t kStateVersion = 2;

}  // namespace

OptimizerBase::OptimizerBase(OptimizerConfig config, ParamLayout layout, int world_size, int rank)
    : config_(std::move(config)),
      layout_(std::move(layout)),
      n_(layout_.total()),
      p_(world_size),
      rank_(rank) {
  if (world_size < 1)
    throw InputError("make_optimizer", "world_size", std::to_string(world_size), "must be >= 1");
  if (rank < 0 || rank >= world_size)
    throw InputError("make_optimizer", "rank", std::to_string(rank),
                     fmt::format("must be in [0, {})", world_size));
  if (n_ == 0)
    throw InputError("make_optimizer", "layout", "0 elements",
                     "an optimizer needs at least one parameter");
  lr_ = static_cast<float>(config_.common.lr);
  beta1_ = static_cast<float>(config_.common.beta1);
  beta2_ = static_cast<float>(config_.common.beta2);
  eps_ = static_cast<float>(config_.common.eps);
  weight_decay_ = static_cast<float>(config_.common.weight_decay);
  scratch_.assign(n_, 0.0f);
}

void OptimizerBase::set_lr(float lr) {
  if (!std::isfinite(lr) || lr < 0)
    throw InputError(type(), "lr", fmt::format("{}", lr), "must be finite and >= 0");
  lr_ = lr;
}

size_t first_nonfinite(const float* x, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i])) return i;
  return n;
}

std::string describe_element(const ParamLayout& layout, size_t i) {
  for (const TensorSpec& t : layout.tensors())
    if (i >= t.offset && i < t.offset + t.size)
      return fmt::format("element {} (tensor '{}' element {})", i, t.name, i - t.offset);
  return fmt::format("element {}", i);
}

bool OptimizerBase::step(Communicator& comm, float* params, const float* grad) {
  if (comm.size() != p_ || comm.rank() != rank_)
    throw Error(fmt::format("{}: built for rank {} of {}, stepped with rank {} of {}", type(),
                            rank_, p_, comm.rank(), comm.size()));
  const int64_t t = steps_ + 1;
  // Checked before any communication: a NaN would otherwise be encoded as +1 by the 1-bit
  // compressor (or spread to every rank by an allreduce) without anyone noticing. Momenta
  // need no check: each is a convex combination of finite gradients.
  const size_t bad = first_nonfinite(grad, n_);
  if (config_.common.nonfinite == NonfinitePolicy::kError) {
    if (bad < n_)
      throw Error(fmt::format(
          "{}: rank {}, step {}: non-finite gradient at {} (value {}); set \"nonfinite\": "
          "\"skip\" in the optimizer params to skip such steps",
          type(), rank_, t, describe_element(layout_, bad), grad[bad]));
  } else {
    // Every rank must take the same decision, or the collectives below would mismatch.
    float flag = bad < n_ ? 1.0f : 0.0f;
    ring_allreduce_sum(comm, &flag, 1);
    if (flag != 0.0f) {
      ++skipped_;
      return false;
    }
  }
  update(comm, params, grad, t);
  steps_ = t;
  return true;
}

float* OptimizerBase::average_gradient(Communicator& comm, const float* grad) {
  std::copy(grad, grad + n_, scratch_.begin());
  ring_allreduce_mean(comm, scratch_.data(), n_);
  return scratch_.data();
}

kernels::AdamArgs OptimizerBase::adam_args(bool bias_correction, int64_t t) const {
  kernels::AdamArgs a;
  a.lr = lr_;
  a.beta1 = beta1_;
  a.beta2 = beta2_;
  a.eps = eps_;
  a.weight_decay = weight_decay_;
  if (bias_correction) {
    const double td = static_cast<double>(t);
    a.bc1 = static_cast<float>(1.0 - std::pow(config_.common.beta1, td));
    a.bc2 = static_cast<float>(1.0 - std::pow(config_.common.beta2, td));
  }
  return a;
}

std::vector<float> lamb_dense_update(float* theta, float* m, float* v, const float* g, float* u,
                                     const ParamLayout& layout, const kernels::AdamArgs& args,
                                     float min_coeff, float max_coeff) {
  const size_t k = layout.num_tensors();
  std::vector<double> theta_sumsq(k), u_sumsq(k);
  kernels::lamb_direction(theta, m, v, g, u, layout, args, theta_sumsq.data(), u_sumsq.data());
  std::vector<float> trust(k);
  for (size_t i = 0; i < k; ++i)
    trust[i] = kernels::lamb_trust(theta_sumsq[i], u_sumsq[i], min_coeff, max_coeff);
  kernels::scaled_update(theta, u, layout, trust.data(), args.lr);
  return trust;
}

// ---- state framing -------------------------------------------------------------------

void OptimizerBase::save_state(std::ostream& out) const {
  state_io::Writer body;
  body.str(type());
  body.u64(n_);
  body.u32(static_cast<uint32_t>(p_));
  body.u32(static_cast<uint32_t>(rank_));
  body.u64(layout_.num_tensors());
  for (const TensorSpec& t : layout_.tensors()) body.u64(t.size);
  body.i64(steps_);
  body.i64(skipped_);
  body.f32(lr_);
  save_fields(body);

  state_io::Writer head;
  head.raw(std::string_view(kStateMagic, 8));
  head.u32(kStateVersion);
  head.u64(body.data().size());
  out.write(head.data().data(), static_cast<std::streamsize>(head.data().size()));
  out.write(body.data().data(), static_cast<std::streamsize>(body.data().size()));
  if (!out) throw Error(type() + ": writing the optimizer state failed");
}

void OptimizerBase::load_state(std::istream& in, const std::string& where) {
  const std::string prefix = fmt::format("rank{}.", rank_);
  std::string head(20, '\0');
  in.read(head.data(), 20);
  head.resize(static_cast<size_t>(in.gcount()));
  state_io::Reader h(head, where, prefix);
  const std::string magic(h.raw("magic", 8));
  if (magic != std::string_view(kStateMagic, 8))
    h.fail("magic", magic, "not a clbo optimizer state");
  const uint32_t version = h.u32("version");
  if (version != kStateVersion)
    h.fail("version", std::to_string(version),
           fmt::format("unsupported state version (this build reads {})", kStateVersion));
  const uint64_t len = h.u64("length");
  std::string body;
  // Read in bounded pieces: a corrupt length must fail as truncation, not allocate it all.
  constexpr uint64_t kPiece = uint64_t{1} << 24;
  for (uint64_t got = 0; got < len && in;) {
    const uint64_t want = std::min(kPiece, len - got);
    const size_t old = body.size();
    body.resize(old + want);
    in.read(body.data() + old, static_cast<std::streamsize>(want));
    body.resize(old + static_cast<size_t>(in.gcount()));
    got += static_cast<uint64_t>(in.gcount());
  }
  if (body.size() != len)
    h.fail("length", std::to_string(len),
           fmt::format("the state is truncated: {} of {} bytes present", body.size(), len));

  state_io::Reader r(body, where, prefix);
  const std::string t = r.str("type");
  if (t != type()) r.fail("type", t, "this optimizer is " + type());
  r.expect_equal("n", r.u64("n"), n_);
  r.expect_equal("world_size", r.u32("world_size"), static_cast<uint64_t>(p_));
  r.expect_equal("rank", r.u32("rank"), static_cast<uint64_t>(rank_));
  r.expect_equal("num_tensors", r.u64("num_tensors"), layout_.num_tensors());
  for (size_t i = 0; i < layout_.num_tensors(); ++i)
    r.expect_equal(fmt::format("tensor[{}].size", i), r.u64(fmt::format("tensor[{}].size", i)),
                   layout_[i].size);
  std::unique_ptr<OptimizerBase> loaded = clone();
  loaded->steps_ = r.i64("steps");
  loaded->skipped_ = r.i64("skipped");
  loaded->lr_ = r.f32("lr");
  if (loaded->steps_ < 0 || loaded->skipped_ < 0)
    r.fail("steps", std::to_string(loaded->steps_), "negative step counter");
  loaded->load_fields(r);
  r.expect_end();
  assign_from(*loaded);
}

}  // namespace clbo::optim_detail
