// The 1-bit compressed allreduce as the 1-bit optimizers use it: one call over the whole
// buffer or one per tensor (comm_granularity), each call with its own error buffers, and
// DeepSpeed's optional exp_avg_mask applied to the result. Shared by OneBitAdam, OneBitLamb
// and ZeroOneAdam so the split, the error state and its checkpoint format live in one place.
#pragma once
#include <cstddef>
#include <utility>
#include <vector>

#include "clbo/collectives/algorithms.hpp"
#include "clbo/core/layout.hpp"
#include "clbo/schedule/config.hpp"
#include "state_io.hpp"

namespace clbo::optim_detail {

class OnebitComm {
 public:
  OnebitComm() = default;
  // `flat_len` is the buffer length a flat call compresses: n, or the padded n' when the
  // caller keeps DeepSpeed's padding tail inside its buffer.
  OnebitComm(CommGranularity granularity, const ParamLayout& layout, int p, size_t flat_len);

  // The calls append_compressed_calls() announces, in place on buf. Error buffers persist.
  void allreduce(Communicator& comm, float* buf);
  void zero_errors();
  // DeepSpeed's exp_avg_mask over the first layout.total() elements (empty: none).
  void set_mask(std::vector<float> mask, size_t n);

  void save(state_io::Writer& w) const;
  void load(state_io::Reader& r);

 private:
  struct Segment {
    size_t offset = 0, len = 0;
  };
  std::vector<Segment> segments_;
  std::vector<OnebitState> states_;
  std::vector<float> mask_;
  int p_ = 1;
};

// Adam's two moments beside the 1-bit call: the state of the optimizers whose checkpoint holds
// exactly m, v and the call's error buffers, in that order (OneBitAdam, NaiveOneBitAdam,
// NaiveOneBitLamb), with DeepSpeed's exp_avg_mask forwarded to the call.
struct OnebitMoments {
  OnebitMoments(CommGranularity granularity, const ParamLayout& layout, int p, size_t n)
      : m(n, 0.0f), v(n, 0.0f), comm(granularity, layout, p, n) {}

  void set_mask(std::vector<float> mask) { comm.set_mask(std::move(mask), m.size()); }
  void save(state_io::Writer& w) const {
    w.floats(m);
    w.floats(v);
    comm.save(w);
  }
  void load(state_io::Reader& r) {
    const size_t n = m.size();
    m = r.floats("m", n);
    v = r.floats("v", n);
    comm.load(r);
  }

  std::vector<float> m, v;
  OnebitComm comm;
};

}  // namespace clbo::optim_detail
