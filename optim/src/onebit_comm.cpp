#include "onebit_comm.hpp"

#include <fmt/format.h>

#include "clbo/core/error.hpp"
#include "clbo/kernels/onebit.hpp"

namespace clbo::optim_detail {

OnebitComm::OnebitComm(CommGranularity granularity, const ParamLayout& layout, int p,
                       size_t flat_len)
    : p_(p) {
  if (granularity == CommGranularity::kFlat) {
    segments_.push_back(Segment{0, flat_len});
  } else {
    for (const TensorSpec& t : layout.tensors())
      if (t.size > 0) segments_.push_back(Segment{t.offset, t.size});
  }
  // Sized up front (not on first use) so a checkpoint taken before the first compressed
  // step has the same shape as one taken after it.
  states_.resize(segments_.size());
  for (size_t i = 0; i < segments_.size(); ++i) states_[i].reset(segments_[i].len, p);
}

void OnebitComm::allreduce(Communicator& comm, float* buf) {
  for (size_t i = 0; i < segments_.size(); ++i)
    compressed_allreduce(comm, states_[i], buf + segments_[i].offset, segments_[i].len);
  for (size_t i = 0; i < mask_.size(); ++i) buf[i] *= mask_[i];
}

void OnebitComm::zero_errors() {
  for (OnebitState& s : states_) s.zero();
}

void OnebitComm::set_mask(std::vector<float> mask, size_t n) {
  if (!mask.empty() && mask.size() != n)
    throw InputError("set_momentum_mask", "mask", fmt::format("{} elements", mask.size()),
                     fmt::format("the mask must cover all {} parameters", n));
  mask_ = std::move(mask);
}

void OnebitComm::save(state_io::Writer& w) const {
  w.u64(states_.size());
  for (const OnebitState& s : states_) {
    w.u64(s.n);
    w.floats(s.worker_error);
    w.floats(s.server_error);
  }
}

void OnebitComm::load(state_io::Reader& r) {
  r.expect_equal("onebit.calls", r.u64("onebit.calls"), states_.size());
  for (size_t i = 0; i < states_.size(); ++i) {
    const std::string f = fmt::format("onebit[{}].", i);
    const size_t len = segments_[i].len;
    r.expect_equal(f + "n", r.u64(f + "n"), len);
    const size_t padded = clbo::onebit_padded_size(len, p_);
    OnebitState s;
    s.n = len;
    s.p = p_;
    s.worker_error = r.floats(f + "worker_error", padded);
    s.server_error = r.floats(f + "server_error", padded / static_cast<size_t>(p_));
    states_[i] = std::move(s);
  }
}

}  // namespace clbo::optim_detail
