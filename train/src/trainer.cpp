#include "clbo/train/trainer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iterator>
#include <map>
#include <numeric>
#include <optional>

#include "clbo/core/error.hpp"
#include "clbo/core/results.hpp"
#include "clbo/kernels/gemm.hpp"
#include "clbo/optim/optimizer.hpp"
#include "clbo/plan/plan.hpp"
#include "clbo/schedule/config.hpp"
#include "clbo/train/augment.hpp"
#include "clbo/train/model.hpp"
#include "clbo/train/parallel.hpp"
#include "freeze_watch.hpp"
#include "summary_stats.hpp"

namespace clbo::train {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The example order of one epoch: a Fisher–Yates shuffle driven by splitmix64 keyed by
// (seed, epoch), so it is the same on every platform and for every optimizer of a seed.
std::vector<uint32_t> epoch_permutation(size_t n, uint64_t seed, uint64_t epoch) {
  std::vector<uint32_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0u);
  uint64_t state = seed * 0xD1B54A32D192ED03ull ^ (epoch + 1) * 0x9E3779B97F4A7C15ull;
  for (size_t i = n - 1; i > 0; --i) {
    const size_t j = static_cast<size_t>(splitmix64(state) % (i + 1));
    std::swap(perm[i], perm[j]);
  }
  return perm;
}

struct Evaluation {
  double accuracy = 0, loss = 0;
};

// Accuracy and mean loss over a whole image set, chunked and summed in chunk order.
Evaluation evaluate(const Model<float>& model, const float* params, const ImageSet& set,
                    int threads) {
  constexpr size_t kChunk = 500;
  const size_t chunks = (set.n + kChunk - 1) / kChunk;
  const size_t classes = model.num_classes(), features = set.features();
  std::vector<size_t> correct(chunks);
  std::vector<double> loss(chunks);
  parallel_for(chunks, threads, [&](size_t c, int) {
    const size_t begin = c * kChunk, len = std::min(kChunk, set.n - begin);
    std::vector<float> logits(len * classes), dlogits(len * classes);
    model.forward(params, set.pixels.data() + begin * features, len, logits.data());
    loss[c] = softmax_xent(logits.data(), set.labels.data() + begin, len, classes, dlogits.data());
    size_t ok = 0;
    for (size_t b = 0; b < len; ++b) {
      const float* z = logits.data() + b * classes;
      const size_t pred = static_cast<size_t>(std::max_element(z, z + classes) - z);
      ok += pred == set.labels[begin + b];
    }
    correct[c] = ok;
  });
  Evaluation e;
  size_t ok = 0;
  double total = 0;
  for (size_t c = 0; c < chunks; ++c) {
    ok += correct[c];
    total += loss[c];
  }
  e.accuracy = static_cast<double>(ok) / static_cast<double>(set.n);
  e.loss = total / static_cast<double>(set.n);
  return e;
}

// Per-worker gradients of one global batch for the workers first..first+p−1 this process
// hosts (local index r is worker first + r); see trainer.hpp for the fixed summation order.
class GradientEngine {
 public:
  // Random shift of the training images (augment.hpp): up to max_shift pixels, vacated pixels
  // take `fill` (the standardized value of a black pixel), offsets keyed by (seed, step, global
  // batch position).
  struct Shift {
    int max_shift = 0;
    float fill = 0.f;
    uint64_t seed = 0;
  };

  GradientEngine(const Model<float>& model, const ImageSet& train, int first, int p, size_t shard,
                 size_t micro, int threads, Shift shift)
      : model_(model),
        train_(train),
        first_(static_cast<size_t>(first)),
        p_(p),
        shard_(shard),
        micro_(std::min(micro, shard)),
        chunks_((shard + micro_ - 1) / micro_),
        threads_(std::max(threads, 1)),
        n_(model.num_params()),
        shift_(shift) {
    // Few workers: split each worker's chunks over the threads (one buffer per chunk).
    // Many workers: one worker per thread at a time, folding chunks into one scratch buffer.
    split_chunks_ = p_ < threads_;
    // (Whole workers write chunk 0 straight into their gradient; only later chunks need one.)
    const size_t buffers = split_chunks_ ? static_cast<size_t>(p_) * chunks_
                           : chunks_ > 1 ? static_cast<size_t>(threads_)
                                         : 0;
    grad_buf_.assign(buffers, std::vector<float>(n_));
    x_buf_.assign(static_cast<size_t>(threads_), std::vector<float>(micro_ * train.features()));
    y_buf_.assign(static_cast<size_t>(threads_), std::vector<uint8_t>(micro_));
    chunk_loss_.assign(static_cast<size_t>(p_) * chunks_, 0.0);
  }

  // batch: B example indices; worker w takes [w·shard, (w+1)·shard). Returns the summed loss
  // of each hosted worker's shard (before its update).
  std::vector<double> run(int64_t step, const uint32_t* batch,
                          std::vector<std::vector<float>>& params,
                          std::vector<std::vector<float>>& grads) {
    const auto t = static_cast<uint64_t>(step);
    std::vector<double> worker_loss(static_cast<size_t>(p_));
    const float inv_shard = 1.0f / static_cast<float>(shard_);
    if (split_chunks_) {
      parallel_for(static_cast<size_t>(p_) * chunks_, threads_, [&](size_t task, int th) {
        const size_t r = task / chunks_, c = task % chunks_;
        chunk_loss_[task] =
            chunk_gradient(t, batch, r, c, params[r].data(), th, grad_buf_[task].data());
      });
      for (size_t r = 0; r < static_cast<size_t>(p_); ++r) {
        float* g = grads[r].data();
        std::fill(g, g + n_, 0.f);
        double loss = 0;
        for (size_t c = 0; c < chunks_; ++c) {
          const float* src = grad_buf_[r * chunks_ + c].data();
          for (size_t i = 0; i < n_; ++i) g[i] += src[i];
          loss += chunk_loss_[r * chunks_ + c];
        }
        for (size_t i = 0; i < n_; ++i) g[i] *= inv_shard;
        worker_loss[r] = loss;
      }
    } else {
      // The same left fold ((0 + g_0) + g_1 + ...) * inv_shard, in fewer passes over memory:
      // chunk 0 is computed straight into g, and the "0 +" (which turns −0 into +0) and the
      // final scaling ride along with the neighbouring pass. Every rounding step is kept.
      parallel_for(static_cast<size_t>(p_), threads_, [&](size_t r, int th) {
        float* g = grads[r].data();
        double loss = chunk_gradient(t, batch, r, 0, params[r].data(), th, g);
        if (chunks_ == 1) {
          for (size_t i = 0; i < n_; ++i) g[i] = (0.f + g[i]) * inv_shard;
        } else {
          for (size_t c = 1; c < chunks_; ++c) {
            loss += chunk_gradient(t, batch, r, c, params[r].data(), th, grad_buf_[th].data());
            const float* src = grad_buf_[th].data();
            if (c == 1 && c + 1 == chunks_) {
              for (size_t i = 0; i < n_; ++i) g[i] = ((0.f + g[i]) + src[i]) * inv_shard;
            } else if (c == 1) {
              for (size_t i = 0; i < n_; ++i) g[i] = (0.f + g[i]) + src[i];
            } else if (c + 1 == chunks_) {
              for (size_t i = 0; i < n_; ++i) g[i] = (g[i] + src[i]) * inv_shard;
            } else {
              for (size_t i = 0; i < n_; ++i) g[i] += src[i];
            }
          }
        }
        worker_loss[r] = loss;
      });
    }
    return worker_loss;
  }

 private:
  double chunk_gradient(uint64_t step, const uint32_t* batch, size_t r, size_t c,
                        const float* params, int th, float* out) {
    const size_t begin = (first_ + r) * shard_ + c * micro_;
    const size_t len = std::min(micro_, shard_ - c * micro_);
    const size_t f = train_.features();
    float* x = x_buf_[th].data();
    uint8_t* y = y_buf_[th].data();
    for (size_t b = 0; b < len; ++b) {
      const size_t idx = batch[begin + b];
      const float* image = train_.pixels.data() + idx * f;
      // begin + b: the example's position in the global batch. A shard-local one would give
      // every worker the same shifts; a rank-local one would break local == mpi (tested).
      if (shift_.max_shift > 0)
        shift_image(image, train_.rows, train_.cols,
                    random_pixel_shift(shift_.seed, step, begin + b, shift_.max_shift), shift_.fill,
                    x + b * f);
      else
        std::copy(image, image + f, x + b * f);
      y[b] = train_.labels[idx];
    }
    return model_.loss_and_grad(params, x, y, len, out);
  }

  const Model<float>& model_;
  const ImageSet& train_;
  size_t first_;
  int p_;
  size_t shard_, micro_, chunks_;
  int threads_;
  size_t n_;
  Shift shift_;
  bool split_chunks_ = false;
  std::vector<std::vector<float>> grad_buf_, x_buf_;
  std::vector<std::vector<uint8_t>> y_buf_;
  std::vector<double> chunk_loss_;
};

// The parameters a user would keep: rank 0's when every rank holds the same bytes (after any
// sync step), else the mean over the ranks (what the next parameter sync would produce),
// summed in rank order in double.
struct KeptParams {
  const float* data = nullptr;
  bool replicated = true;
};
KeptParams kept_params(const std::vector<std::vector<float>>& params, std::vector<float>& mean) {
  const size_t n = params[0].size();
  bool same = true;
  for (size_t r = 1; r < params.size() && same; ++r)
    same = std::memcmp(params[r].data(), params[0].data(), n * sizeof(float)) == 0;
  if (same) return {params[0].data(), true};
  mean.resize(n);
  for (size_t i = 0; i < n; ++i) {
    double sum = 0;
    for (const auto& p : params) sum += p[i];
    mean[i] = static_cast<float>(sum / static_cast<double>(params.size()));
  }
  return {mean.data(), false};
}

// Every worker's vectors (parameters, gradients) in worker order: `mine` itself where this
// process hosts every worker, else gathered from all processes (control traffic, neither
// counted nor timed). Every process must call it together.
const std::vector<std::vector<float>>& every_worker(Workers& workers,
                                                    const std::vector<std::vector<float>>& mine,
                                                    std::vector<std::vector<float>>& buffer) {
  if (workers.count() == workers.size()) return mine;
  const size_t n = mine.empty() ? 0 : mine[0].size();
  std::vector<float> flat;
  flat.reserve(mine.size() * n);
  for (const auto& v : mine) flat.insert(flat.end(), v.begin(), v.end());
  const std::vector<float> all = workers.gather(flat, n);
  buffer.resize(static_cast<size_t>(workers.size()));
  for (size_t w = 0; w < buffer.size(); ++w)
    buffer[w].assign(all.begin() + static_cast<std::ptrdiff_t>(w * n),
                     all.begin() + static_cast<std::ptrdiff_t>((w + 1) * n));
  return buffer;
}

// The last step before compression takes over, where the variance freezes; -1 for the kinds
// that never switch (Adam, LAMB, SLAMB).
int64_t switch_step(const OptimizerConfig& c) {
  switch (c.kind) {
    case OptimizerKind::kAdam:
    case OptimizerKind::kLamb:
    case OptimizerKind::kSlamb:
      return -1;
    case OptimizerKind::kZeroOneAdam:
      return c.as<ZeroOneAdamParams>().var_freeze_step;
    default:
      return onebit_warmup_steps(c);
  }
}

struct PhaseBytes {
  int64_t steps = 0;
  std::vector<uint64_t> bytes;    // per rank, counted on the wire
  std::vector<uint64_t> planned;  // per rank, what the CommPlans of the schedule promise
};

// One step's times, each the slowest worker's (seconds).
struct StepTimes {
  double step = 0, gradient = 0, optimizer = 0, comm = 0, kernels = 0;
};

// Each worker sends per step its bytes sent, then these times in seconds, in this order.
// "gradient_compute_s" is the gradient alone; "gradient_s" adds the gather of the losses, so it
// also holds the wait for the slowest worker's gradient.
constexpr const char* kWorkerColumns[] = {
    "step_s", "gradient_compute_s", "gradient_s", "optimizer_s", "comm_s", "compression_kernels_s"};
constexpr size_t kWorkerValues = 1 + std::size(kWorkerColumns);

// FNV-1a over the bytes of a parameter vector: results name the final parameters exactly,
// so runs on different backends can be compared bit for bit.
uint64_t params_hash(const std::vector<float>& v) {
  uint64_t h = 1469598103934665603ull;
  const auto* b = reinterpret_cast<const unsigned char*>(v.data());
  for (size_t i = 0; i < v.size() * sizeof(float); ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

// Every worker's final-parameter hash, as hex strings in worker order.
nlohmann::json final_hashes(Workers& workers, const std::vector<std::vector<float>>& params) {
  std::vector<double> mine;  // two exact 32-bit halves per worker
  for (const auto& v : params) {
    const uint64_t h = params_hash(v);
    mine.push_back(static_cast<double>(h >> 32));
    mine.push_back(static_cast<double>(h & 0xffffffffu));
  }
  const std::vector<double> all = workers.gather(mine, 2);
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i + 1 < all.size(); i += 2)
    out.push_back(fmt::format(
        "{:016x}", static_cast<uint64_t>(all[i]) << 32 | static_cast<uint64_t>(all[i + 1])));
  return out;
}

nlohmann::json phase_times_json(const std::vector<StepTimes>& steps,
                                const std::vector<std::string>& phase) {
  struct Sum {
    int64_t n = 0;
    StepTimes t;
  };
  std::map<std::string, Sum> sums;
  for (size_t i = 0; i < steps.size() && i < phase.size(); ++i) {
    Sum& s = sums[phase[i]];
    ++s.n;
    s.t.step += steps[i].step;
    s.t.gradient += steps[i].gradient;
    s.t.optimizer += steps[i].optimizer;
    s.t.comm += steps[i].comm;
    s.t.kernels += steps[i].kernels;
  }
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, s] : sums) {
    const double n = static_cast<double>(s.n);
    out[name] = {{"steps", s.n},
                 {"step_s_mean", s.t.step / n},
                 {"gradient_s_mean", s.t.gradient / n},
                 {"optimizer_s_mean", s.t.optimizer / n},
                 {"comm_s_mean", s.t.comm / n},
                 {"compression_kernels_s_mean", s.t.kernels / n}};
  }
  return out;
}

nlohmann::json train_one(const ExperimentSpec& spec, const RunSpec& run, uint64_t seed,
                         const Model<float>& model, const FashionMnist& data,
                         const TrainOptions& opts, Workers& workers, std::string& error) {
  const auto wall0 = Clock::now();
  const int p = spec.workers;
  const int first = workers.first(), hosted = workers.count();
  const bool root = workers.is_root();
  const size_t B = static_cast<size_t>(spec.batch_size), shard = B / static_cast<size_t>(p);
  const size_t n = model.num_params();
  const ParamLayout& layout = model.layout();

  // Index r of these vectors is worker first + r.
  std::vector<std::vector<float>> params(static_cast<size_t>(hosted), std::vector<float>(n));
  std::vector<std::vector<float>> grads(static_cast<size_t>(hosted), std::vector<float>(n));
  model.init(params[0].data(), seed);
  for (int r = 1; r < hosted; ++r) params[r] = params[0];
  std::vector<std::unique_ptr<Optimizer>> optimizers;
  for (int r = 0; r < hosted; ++r)
    optimizers.push_back(make_optimizer(run.optimizer, layout, p, first + r));
  // Around the switch: which coordinates freeze with v = 0 (the mask goes in right after the
  // switch step) and which one jumps first if the run diverges. A timing run ("evaluate":
  // false) skips it unless its mask needs it: the watch gathers every worker's gradient before
  // each dense step, which over MPI slows the steps right after it (clbo validate measured
  // those 10-20% above the same dense steps without it).
  const bool mask_wanted = run.momentum_mask == MomentumMask::kZeroVariance;
  const int64_t switch_at = switch_step(run.optimizer);
  std::optional<FreezeWatch> watch;
  if (switch_at >= 0 && (spec.evaluate || mask_wanted))
    watch.emplace(layout, switch_at, run.optimizer.common.beta2, run.optimizer.common.eps);
  const bool masked = watch && mask_wanted;
  std::vector<float> before;  // rank 0's parameters before the update, for the watch (root)
  std::vector<std::vector<float>> gathered;  // every worker's vectors, when hosted elsewhere
  GradientEngine engine(model, data.train, first, hosted, shard,
                        static_cast<size_t>(spec.micro_batch), opts.threads,
                        {spec.random_shift, data.standardize(0.0f), seed});
  std::vector<StepTimes> step_times;
  // Workers in processes of their own time their parts apart; then each worker's are kept
  // (hosted workers share one process's times, so there they would only repeat them).
  const bool own_processes = hosted == 1 && p > 1;
  nlohmann::json per_worker_rows = nlohmann::json::array();

  const size_t steps_per_epoch = data.train.n / B;
  std::vector<uint32_t> perm;
  int64_t perm_epoch = -1;

  std::vector<double> train_loss;
  std::vector<std::string> phase_per_step;
  std::vector<double> bytes_per_step;
  std::map<std::string, PhaseBytes> phases;
  nlohmann::json evals = nlohmann::json::array();
  int64_t skipped = 0, completed = 0;
  double grad_s = 0, optim_s = 0, eval_s = 0;
  std::string status = "complete";
  nlohmann::json run_json;

  std::vector<float> mean_params;
  const auto record_eval = [&](int64_t step) {
    const auto t0 = Clock::now();
    const auto& every = every_worker(workers, params, gathered);
    if (root) {  // the root evaluates: it hosts worker 0 and its optimizer
      const KeptParams kept = kept_params(every, mean_params);
      const Evaluation e = evaluate(model, kept.data, data.test, opts.threads);
      evals.push_back({{"step", step},
                       {"test_accuracy", e.accuracy},
                       {"test_loss", e.loss},
                       {"lr", run.lr.lr_at(std::max<int64_t>(step, 1))},
                       {"params", kept.replicated ? "replicated" : "rank mean"},
                       {"layer_coefficients", optimizers[0]->layer_coefficients()}});
    }
    workers.barrier();  // the next timed step starts together, not behind the root's evaluation
    if (root) eval_s += seconds_since(t0);
  };

  for (int64_t t = 1; t <= spec.steps; ++t) {
    const int64_t epoch = static_cast<int64_t>(static_cast<size_t>(t - 1) / steps_per_epoch);
    if (epoch != perm_epoch) {
      perm = epoch_permutation(data.train.n, seed, static_cast<uint64_t>(epoch));
      perm_epoch = epoch;
    }
    const uint32_t* batch = perm.data() + (static_cast<size_t>(t - 1) % steps_per_epoch) * B;

    const auto step0 = Clock::now();
    auto t0 = step0;
    const std::vector<double> my_loss = engine.run(t, batch, params, grads);
    const double my_grad_compute_s = seconds_since(t0);
    const std::vector<double> worker_loss = workers.gather(my_loss, 1);  // every worker's
    const double my_grad_s = seconds_since(t0);
    grad_s += my_grad_s;
    double loss_sum = 0;
    for (double l : worker_loss) loss_sum += l;
    const double loss = loss_sum / static_cast<double>(B);
    if (!std::isfinite(loss)) {
      status = "nan";
      error = fmt::format("{}: run '{}' seed {}: training loss is {} at step {}; stopped there",
                          spec.file, run.label, seed, std::isnan(loss) ? "NaN" : "Inf", t);
      run_json["nan_step"] = t;
      if (watch && !watch->explain_divergence().empty())
        error += "; " + watch->explain_divergence();
      break;
    }
    train_loss.push_back(loss);

    const float lr = static_cast<float>(run.lr.lr_at(t));
    for (auto& opt : optimizers) opt->set_lr(lr);
    const CommSchedule schedule = optimizers[0]->comm_schedule(optimizers[0]->steps_taken() + 1);
    double watch_s = 0;  // not part of the step: the harness's own observation
    if (watch) {
      const auto w0 = Clock::now();
      // Only the dense steps up to the switch feed v: the warmup steps, 0/1 Adam's variance
      // steps. Every process applies the mask, so every process sees every worker's gradient.
      if (t <= watch->switch_step() &&
          (schedule.phase == Phase::kWarmup || schedule.phase == Phase::kVarianceStep))
        watch->observe_gradients(t, true, every_worker(workers, grads, gathered));
      if (root) before = params[0];
      workers.barrier();  // the timed step starts together on every rank, as without the watch
      watch_s = seconds_since(w0);
    }
    std::vector<char> stepped(static_cast<size_t>(hosted), 0);
    std::vector<StepCost> cost;
    t0 = Clock::now();
    try {
      cost = workers.step([&](int w, Communicator& comm) {
        const int r = w - first;
        stepped[r] = optimizers[r]->step(comm, params[r].data(), grads[r].data()) ? 1 : 0;
      });
    } catch (const std::exception& e) {
      optim_s += seconds_since(t0);
      status = "error";
      error = fmt::format("{}: run '{}' seed {}: optimizer failed at step {}: {}", spec.file,
                          run.label, seed, t, exception_text(e));
      if (watch && !watch->explain_divergence().empty())
        error += "; " + watch->explain_divergence();
      run_json["error_step"] = t;
      break;
    }
    const double my_optim_s = seconds_since(t0);
    optim_s += my_optim_s;
    const double my_step_s = seconds_since(step0) - watch_s;
    ++completed;
    if (!stepped[0]) ++skipped;
    // Bytes and times of every worker (hosted workers share this process's step times).
    std::vector<double> mine;
    for (const StepCost& c : cost)
      mine.insert(mine.end(), {static_cast<double>(c.bytes_sent), my_step_s, my_grad_compute_s,
                               my_grad_s, my_optim_s, c.comm_s, c.kernel_s});
    const std::vector<double> all = workers.gather(mine, kWorkerValues);
    std::vector<uint64_t> sent(static_cast<size_t>(p), 0);
    StepTimes st;
    nlohmann::json worker_rows = nlohmann::json::array();
    for (int r = 0; r < p; ++r) {
      const double* v = all.data() + kWorkerValues * static_cast<size_t>(r);
      sent[static_cast<size_t>(r)] = static_cast<uint64_t>(v[0]);
      st.step = std::max(st.step, v[1]);
      st.gradient = std::max(st.gradient, v[3]);
      st.optimizer = std::max(st.optimizer, v[4]);
      st.comm = std::max(st.comm, v[5]);
      st.kernels = std::max(st.kernels, v[6]);
      if (own_processes) worker_rows.push_back(std::vector<double>(v + 1, v + kWorkerValues));
    }
    step_times.push_back(st);
    if (own_processes) per_worker_rows.push_back(std::move(worker_rows));
    if (watch && root) watch->observe_update(t, before.data(), params[0].data());
    if (masked && t == watch->switch_step()) {
      for (auto& opt : optimizers) opt->set_momentum_mask(watch->zero_variance_mask());
      run_json["exp_avg_mask"] = {{"rule", kMomentumMaskNames.name(run.momentum_mask)},
                                  {"applied_after_step", t},
                                  {"masked_coordinates", watch->zero_variance_count()}};
    }

    const std::string phase = to_string(schedule.phase);
    PhaseBytes& pb = phases[phase];
    pb.bytes.resize(static_cast<size_t>(p), 0);
    pb.planned.resize(static_cast<size_t>(p), 0);
    ++pb.steps;
    for (const CommCall& call : schedule.calls) {
      const CommPlan plan = make_plan(call, p);
      for (int r = 0; r < p; ++r) pb.planned[r] += plan.bytes_sent_by(r);
    }
    double step_bytes = 0;
    for (int r = 0; r < p; ++r) {
      pb.bytes[r] += sent[r];
      step_bytes += static_cast<double>(sent[r]);
    }
    phase_per_step.push_back(phase);
    bytes_per_step.push_back(step_bytes / p);
    const bool report_step = t % spec.eval_every == 0 || t == spec.steps;
    if (report_step && spec.evaluate) record_eval(t);
    if (opts.progress && root && report_step)
      opts.progress(spec.evaluate
                        ? fmt::format("  step {}/{} loss {:.4f} test acc {:.4f}", t, spec.steps,
                                      loss, evals.back()["test_accuracy"].get<double>())
                        : fmt::format("  step {}/{} loss {:.4f}", t, spec.steps, loss));
  }

  nlohmann::json comm_phases = nlohmann::json::object();
  std::vector<uint64_t> total(static_cast<size_t>(p), 0);
  for (const auto& [name, pb] : phases) {
    double mean = 0;
    for (int r = 0; r < p; ++r) {
      total[r] += pb.bytes[r];
      mean += static_cast<double>(pb.bytes[r]);
    }
    comm_phases[name] = {{"steps", pb.steps},
                         {"bytes_sent_per_worker", pb.bytes},
                         {"planned_bytes_per_worker", pb.planned},
                         {"mean_bytes_sent_per_worker", mean / p}};
  }
  double total_mean = 0;
  for (uint64_t b : total) total_mean += static_cast<double>(b);
  total_mean /= p;

  run_json["label"] = run.label;
  run_json["seed"] = seed;
  run_json["optimizer_type"] = run.optimizer.type_name();
  run_json["optimizer"] = to_json(run.optimizer);
  run_json["baseline"] = run.baseline.empty() ? nlohmann::json() : nlohmann::json(run.baseline);
  run_json["status"] = status;
  if (!error.empty()) run_json["error"] = error;
  run_json["steps_completed"] = completed;
  run_json["skipped_steps"] = skipped;
  run_json["samples_seen"] = completed * spec.batch_size;
  run_json["lr_schedule"] = {{"peak", run.lr.peak},
                             {"warmup_steps", run.lr.warmup_steps},
                             {"decay", to_string(run.lr.decay)},
                             {"final_fraction", run.lr.final_fraction}};
  run_json["train_loss"] = train_loss;
  // The largest single update of rank 0's parameters before and after the switch.
  if (watch) run_json["largest_updates"] = watch->updates_json();
  run_json["phase"] = phase_per_step;
  run_json["bytes_sent_per_worker_per_step"] = bytes_per_step;
  run_json["eval"] = evals;
  run_json["comm"] = {{"phases", comm_phases},
                      {"total_bytes_sent_per_worker", total},
                      {"mean_total_bytes_sent_per_worker", total_mean}};
  const bool finished = status == "complete";
  const size_t tail = std::min<size_t>(10, train_loss.size());
  double tail_loss = 0;
  for (size_t i = train_loss.size() - tail; i < train_loss.size(); ++i) tail_loss += train_loss[i];
  run_json["final_train_loss"] = tail ? nlohmann::json(tail_loss / tail) : nlohmann::json();
  run_json["final_test_accuracy"] =
      finished && !evals.empty() ? evals.back()["test_accuracy"] : nlohmann::json();
  run_json["final_test_loss"] =
      finished && !evals.empty() ? evals.back()["test_loss"] : nlohmann::json();
  run_json["final_params"] = finished && !evals.empty() ? evals.back()["params"] : nlohmann::json();
  // The training objective of the model kept at the end, over the whole training set (the
  // per-step train_loss is each batch's, on the workers' own parameters before the update).
  run_json["final_train_set_loss"] = nullptr;
  run_json["final_train_set_accuracy"] = nullptr;
  if (finished && spec.evaluate) {
    const auto t0 = Clock::now();
    const auto& every = every_worker(workers, params, gathered);
    if (root) {
      const Evaluation e =
          evaluate(model, kept_params(every, mean_params).data, data.train, opts.threads);
      run_json["final_train_set_loss"] = e.loss;
      run_json["final_train_set_accuracy"] = e.accuracy;
    }
    eval_s += seconds_since(t0);
  }
  const double wall = seconds_since(wall0);
  const double samples = static_cast<double>(completed) * static_cast<double>(B);
  run_json["timing"] = {
      {"wall_time_s", wall},
      {"gradient_time_s", grad_s},
      {"optimizer_comm_time_s", optim_s},
      {"eval_time_s", eval_s},
      {"gradient_time_per_step_s", completed ? grad_s / completed : 0.0},
      {"optimizer_comm_time_per_step_s", completed ? optim_s / completed : 0.0},
      {"samples_per_s", grad_s + optim_s > 0 ? samples / (grad_s + optim_s) : 0.0},
      {"gradient_samples_per_s", grad_s > 0 ? samples / grad_s : 0.0},
      {"phases", phase_times_json(step_times, phase_per_step)}};
  nlohmann::json per_step = nlohmann::json::array();
  for (const StepTimes& s : step_times)
    per_step.push_back({s.step, s.gradient, s.optimizer, s.comm, s.kernels});
  run_json["timing"]["steps"] = {
      {"columns", {"step_s", "gradient_s", "optimizer_s", "comm_s", "compression_kernels_s"}},
      {"definition",
       "per step, each column the slowest worker's: its wall time from the gradient to the end "
       "of the optimizer step, the gradient, the optimizer step, the time inside "
       "communication calls and in compression kernels within that step"},
      {"rows", per_step}};
  if (own_processes)
    run_json["timing"]["steps"]["workers"] = {
        {"columns", kWorkerColumns},
        {"definition",
         "per step, every worker's own parts in worker order (a worker waiting in a collective "
         "for another counts the wait in its comm_s); gradient_compute_s is its gradient "
         "alone, gradient_s adds the gather of the losses that ends the gradient phase"},
        {"rows", per_worker_rows}};
  run_json["final_params_fnv1a64"] = final_hashes(workers, params);
  return run_json;
}

}  // namespace

void check_experiment(const ExperimentSpec& spec, const FashionMnist& data) {
  auto model = make_model(spec.model, spec.file, "model");
  if (data.train.features() != model->input_size() || data.test.features() != model->input_size())
    throw InputError(spec.file, "model", spec.model,
                     fmt::format("expects {} features per example, the data has {}",
                                 model->input_size(), data.train.features()));
  if (static_cast<size_t>(spec.batch_size) > data.train.n)
    throw InputError(spec.file, "batch_size", std::to_string(spec.batch_size),
                     fmt::format("exceeds the {} training examples", data.train.n));
  // Each run's optimizer on the model's own layout (parsing used a stand-in layout).
  for (size_t i = 0; i < spec.runs.size(); ++i) {
    try {
      (void)make_optimizer(spec.runs[i].optimizer, model->layout(), spec.workers, 0);
    } catch (const InputError&) {
      throw;
    } catch (const Error& e) {
      throw InputError(spec.file, fmt::format("runs[{}].optimizer", i),
                       spec.runs[i].optimizer.type_name(), e.what());
    }
  }
}

nlohmann::json train_experiment(const ExperimentSpec& spec, const FashionMnist& data,
                                const TrainOptions& opts) {
  const auto wall0 = Clock::now();
  check_experiment(spec, data);
  auto model = make_model(spec.model, spec.file, "model");

  nlohmann::json result;
  result["schema"] = "clbo.train/1";
  result["kind"] = "measured";
  result["experiment_file"] = spec.file;
  result["config"] = spec.config;
  result["environment"] = environment_json();
  // Which product kernel ran. It changes speed only: every kernel gives the same bits.
  result["environment"]["gemm_kernel"] = kernels::gemm_path_name();
  result["resolved"] = {
      {"model", spec.model},
      {"num_params", model->num_params()},
      {"layout", model->layout().to_json()},
      {"batch_size", spec.batch_size},
      {"workers", spec.workers},
      {"shard_size", spec.batch_size / spec.workers},
      {"steps", spec.steps},
      {"epochs",
       static_cast<double>(spec.steps * spec.batch_size) / static_cast<double>(data.train.n)},
      {"eval_every", spec.evaluate ? nlohmann::json(spec.eval_every) : nlohmann::json(nullptr)},
      {"micro_batch", spec.micro_batch},
      {"seeds", spec.seeds},
      {"train_examples", data.train.n},
      {"test_examples", data.test.n},
      {"evaluated_params", spec.evaluate ? "replicated (all ranks equal, e.g. after a sync step), "
                                           "else the mean over the ranks"
                                         : "none (\"evaluate\": false)"}};
  // Only when set, so that the documents of experiments without it stay as they were.
  if (spec.random_shift > 0) result["resolved"]["random_shift_pixels"] = spec.random_shift;
  result["warnings"] = spec.warnings;
  std::unique_ptr<Workers> own;
  Workers* workers = opts.workers;
  if (!workers) {
    own = local_workers(spec.workers);
    workers = own.get();
  }
  if (workers->size() != spec.workers)
    throw InputError(spec.file, "workers", std::to_string(spec.workers),
                     fmt::format("the {} backend runs {} workers (start one process per worker, "
                                 "e.g. mpirun -np {})",
                                 workers->backend(), workers->size(), spec.workers));
  result["resolved"]["backend"] = workers->backend();
  nlohmann::json runs = nlohmann::json::array();
  std::string first_error;
  bool stopped = false;
  const size_t total = spec.runs.size() * spec.seeds.size();
  size_t index = 0;
  for (const RunSpec& run : spec.runs) {
    for (uint64_t seed : spec.seeds) {
      if (stopped) break;
      ++index;
      if (opts.progress && workers->is_root())
        opts.progress(fmt::format("run {}/{}: '{}' ({}) seed {}, p = {}, batch {}, {} steps", index,
                                  total, run.label, run.optimizer.type_name(), seed, spec.workers,
                                  spec.batch_size, spec.steps));
      std::string error;
      try {
        runs.push_back(train_one(spec, run, seed, *model, data, opts, *workers, error));
      } catch (const std::exception& e) {
        // A failure outside the optimizer's step (memory, the model) ends this run as an
        // error too, so the runs before it are still written (as a partial document).
        error = fmt::format("{}: run '{}' seed {}: failed: {}", spec.file, run.label, seed,
                            exception_text(e));
        runs.push_back({{"label", run.label},
                        {"seed", seed},
                        {"optimizer_type", run.optimizer.type_name()},
                        {"status", "error"},
                        {"error", error}});
      }
      if (!error.empty()) {
        if (opts.progress && workers->is_root()) opts.progress("  " + error);
        if (first_error.empty()) first_error = error;
        if (!spec.continue_after_nan || runs.back()["status"] == "error") stopped = true;
      }
    }
  }
  result["runs"] = runs;
  // Only the root evaluates, so only its runs carry the accuracies the summary needs.
  result["summary"] = workers->is_root() ? summarize_runs(spec, runs) : nlohmann::json();
  // continue_after_nan: a diverged run is a result (its own status says "nan"); otherwise the
  // document lacks the runs after the failure and says so.
  result["status"] = stopped ? "partial" : "complete";
  result["error"] = first_error.empty() ? nlohmann::json() : nlohmann::json(first_error);
  result["timing"] = {{"wall_time_s", seconds_since(wall0)}, {"threads", opts.threads}};
  return result;
}

}  // namespace clbo::train
