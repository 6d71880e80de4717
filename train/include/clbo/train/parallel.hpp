// A minimal fork-join loop for the harness's own two-core split (Eigen runs single-threaded
// inside each item). Items are claimed dynamically; callers write each item's result to its
// own slot and combine slots in a fixed order, so the thread count never changes a result.
#pragma once
#include <cstddef>
#include <functional>

namespace clbo::train {

// Calls fn(item, thread) for every item in [0, count) on up to `threads` threads (the caller's
// thread is one of them) and rethrows the first exception after all threads stopped. The
// helper threads persist between calls (one caller at a time; a concurrent caller gets
// threads of its own), so per-thread scratch buffers survive from one call to the next.
void parallel_for(size_t count, int threads, const std::function<void(size_t, int)>& fn);

}  // namespace clbo::train
