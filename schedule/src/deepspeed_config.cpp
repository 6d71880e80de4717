#include "clbo/schedule/deepspeed_config.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>

#include "clbo/core/config.hpp"
#include "clbo/core/error.hpp"
#include "clbo/core/json_reader.hpp"

namespace clbo {

namespace {

// The largest batch field a config may state: every product with a GPU count fits int64.
constexpr int64_t kMaxBatchField = int64_t{1} << 24;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string joined_field(const std::string& prefix, const std::string& key) {
  return prefix.empty() ? key : prefix + "." + key;
}

// DeepSpeed's top-level fields that clbo reads (they change the answer and are modelled).
const std::vector<std::string>& modelled_fields() {
  static const std::vector<std::string> f = {"train_batch_size",
                                             "train_micro_batch_size_per_gpu",
                                             "gradient_accumulation_steps",
                                             "optimizer",
                                             "scheduler",
                                             "fp16",
                                             "bf16",
                                             "zero_optimization",
                                             "fp32_allreduce",
                                             "communication_data_type",
                                             "gradient_clipping"};
  return f;
}

// Fields that change neither the step time nor the optimizer's numbers: logging, monitoring,
// checkpoint I/O, the fp16 scaling of gradients by a constant.
const std::vector<std::string>& neutral_fields() {
  static const std::vector<std::string> f = {"steps_per_print",
                                             "wall_clock_breakdown",
                                             "dump_state",
                                             "tensorboard",
                                             "wandb",
                                             "csv_monitor",
                                             "comet",
                                             "monitor_config",
                                             "flops_profiler",
                                             "memory_breakdown",
                                             "zero_allow_untested_optimizer",
                                             "zero_force_ds_cpu_optimizer",
                                             "checkpoint",
                                             "load_universal_checkpoint",
                                             "use_node_local_storage",
                                             "nebula",
                                             "timers",
                                             "dataloader_drop_last",
                                             "prescale_gradients",
                                             "gradient_predivide_factor",
                                             "disable_allgather",
                                             "weight_quantization"};
  return f;
}

// Fields that change the answer (compute, batch or communication) and that clbo does not
// model, each with what it changes.
const std::vector<std::pair<std::string, std::string>>& unmodelled_fields() {
  static const std::vector<std::pair<std::string, std::string>> f = {
      {"activation_checkpointing", "recomputes activations in the backward pass (more compute)"},
      {"pipeline", "pipeline parallelism splits the model over GPUs"},
      {"elasticity", "elastic training changes the batch size with the GPU count"},
      {"autotuning", "the autotuner changes batch sizes and ZeRO settings"},
      {"amp", "NVIDIA Apex AMP changes the precision of compute and gradients"},
      {"sparse_attention", "sparse attention changes the compute"},
      {"sparse_gradients", "sparse embedding gradients change the communication"},
      {"compression_training", "quantization and pruning change compute and the model"},
      {"quantize_training", "quantized training changes compute and communication"},
      {"data_efficiency", "data sampling and routing change the compute per step"},
      {"curriculum_learning", "a curriculum changes the sequence length, so the compute per step"},
      {"progressive_layer_drop", "dropping layers changes the compute per step"},
      {"eigenvalue", "eigenvalue computation adds compute"},
      {"aio", "asynchronous I/O for ZeRO offload"},
      {"seq_parallel_communication_data_type", "sequence parallelism is not modelled"},
      {"compile", "torch.compile changes the compute"},
      {"torch_autocast", "autocast changes the precision of compute"},
      {"graph_harvesting", "CUDA graph capture changes the launch overheads"}};
  return f;
}

// The fields of DeepSpeed's precision and ZeRO blocks (DeepSpeed's config documentation), so
// that a misspelt one is named rather than silently left at its default.
const std::vector<std::string>& block_fields(const std::string& block) {
  static const std::vector<std::string> fp16 = {"enabled",
                                                "auto_cast",
                                                "loss_scale",
                                                "initial_scale_power",
                                                "loss_scale_window",
                                                "hysteresis",
                                                "consecutive_hysteresis",
                                                "min_loss_scale",
                                                "fp16_master_weights_and_grads"};
  static const std::vector<std::string> bf16 = {"enabled", "immediate_grad_update",
                                                "check_grad_overflow"};
  static const std::vector<std::string> zero = {"stage",
                                                "allgather_partitions",
                                                "allgather_bucket_size",
                                                "overlap_comm",
                                                "reduce_scatter",
                                                "reduce_bucket_size",
                                                "contiguous_gradients",
                                                "offload_param",
                                                "offload_optimizer",
                                                "stage3_max_live_parameters",
                                                "stage3_max_reuse_distance",
                                                "stage3_prefetch_bucket_size",
                                                "stage3_param_persistence_threshold",
                                                "stage3_gather_16bit_weights_on_model_save",
                                                "stage3_gather_fp16_weights_on_model_save",
                                                "sub_group_size",
                                                "elastic_checkpoint",
                                                "ignore_unused_parameters",
                                                "round_robin_gradients",
                                                "zero_hpz_partition_size",
                                                "zero_quantized_weights",
                                                "zero_quantized_gradients",
                                                "mics_shard_size",
                                                "mics_hierarchical_params_gather",
                                                "memory_efficient_linear",
                                                "cpu_offload",
                                                "cpu_offload_params",
                                                "cpu_offload_use_pin_memory",
                                                "load_from_fp32_weights",
                                                "legacy_stage1",
                                                "use_multi_rank_bucket_allreduce"};
  static const std::vector<std::string> none;
  return block == "fp16"                ? fp16
         : block == "bf16"              ? bf16
         : block == "zero_optimization" ? zero
                                        : none;
}

bool is_onebit(OptimizerKind k) {
  return k != OptimizerKind::kAdam && k != OptimizerKind::kLamb;
}

// A batch field: a positive integer. Hugging Face's "auto" is filled in by its Trainer
// before DeepSpeed sees the config, so it is named as such.
std::optional<int64_t> batch_field(ConfigReader& r, const nlohmann::json& cfg,
                                   const std::string& key) {
  if (!cfg.contains(key) || cfg[key].is_null()) {
    r.ignore(key);
    return std::nullopt;
  }
  if (cfg[key].is_string() && cfg[key] == "auto")
    r.fail(key,
           "\"auto\" is filled in by the Hugging Face Trainer before DeepSpeed reads the "
           "config; give the number");
  return r.integer(key, 1, 1, kMaxBatchField);
}

// "enabled" of a precision block; DeepSpeed's blocks take other fields (loss scaling) that
// change neither the step time nor, in clbo's engines, the numbers.
bool precision_enabled(const nlohmann::json& cfg, const std::string& key, const std::string& file,
                       const std::string& prefix) {
  if (!cfg.contains(key)) return false;
  const nlohmann::json& b = cfg[key];
  const std::string f = joined_field(prefix, key);
  if (!b.is_object()) throw InputError(file, f, json_excerpt(b), "expected an object");
  if (!b.contains("enabled")) return false;
  if (b["enabled"].is_string() && b["enabled"] == "auto")
    throw InputError(file, f + ".enabled", "\"auto\"",
                     "\"auto\" is filled in by the Hugging Face Trainer; give true or false");
  if (!b["enabled"].is_boolean())
    throw InputError(file, f + ".enabled", json_excerpt(b["enabled"]), "expected true or false");
  return b["enabled"].get<bool>();
}

// DeepSpeed's AdamW is its Adam with decoupled weight decay forced on.
nlohmann::json as_clbo_optimizer_block(const nlohmann::json& block) {
  if (!block.is_object() || !block.contains("type") || !block["type"].is_string() ||
      lower(block["type"].get<std::string>()) != "adamw")
    return block;
  nlohmann::json b = block;
  b["type"] = "Adam";
  if (!b.contains("params") || b["params"].is_null()) b["params"] = nlohmann::json::object();
  if (b["params"].is_object()) b["params"]["adam_w_mode"] = true;
  return b;
}

// DeepSpeed's own optimizers that clbo does not model (deepspeed/runtime/config.py), in
// DeepSpeed's lower-case spelling: a config naming one is valid for DeepSpeed.
bool deepspeed_runs_but_clbo_does_not(const std::string& lower_type) {
  for (const char* t : {"adagrad", "lion", "muadam", "muadamw", "musgd", "sgd", "fusedadam"})
    if (lower_type == t) return true;
  return false;
}

void read_optimizer(DeepSpeedConfig& c, const nlohmann::json& cfg, const std::string& prefix) {
  const std::string f = joined_field(prefix, "optimizer");
  if (!cfg.contains("optimizer"))
    throw InputError(c.file, f, "missing",
                     "the config has no optimizer block; clbo reads the optimizer from it (an "
                     "optimizer passed to deepspeed.initialize in code cannot be read)");
  const nlohmann::json& block = cfg["optimizer"];
  if (block.is_object() && block.contains("type") && block["type"].is_string() &&
      deepspeed_runs_but_clbo_does_not(lower(block["type"].get<std::string>())))
    throw InputError(c.file, f + ".type", block["type"].dump(),
                     "DeepSpeed runs this optimizer, but clbo does not model it: clbo models "
                     "Adam, AdamW and Lamb and the compressed OneBitAdam, ZeroOneAdam, "
                     "OneBitLamb (and Slamb)");
  c.optimizer = parse_optimizer_config(as_clbo_optimizer_block(cfg["optimizer"]), c.file, f);
  c.baseline = uncompressed_twin(c.optimizer);
  // The 1-bit optimizers' transport: parse_optimizer_config has checked the values.
  const nlohmann::json& params = cfg["optimizer"].value("params", nlohmann::json::object());
  if (params.is_object() && is_onebit(c.optimizer.kind)) {
    const std::string backend = params.value("comm_backend_name", "nccl");
    c.cuda_aware = params.value("cuda_aware", false);
    if (backend == "nccl" || backend == "mpi") {
      c.comm_backend = backend;
    } else {
      c.comm_backend = "nccl";
      c.warnings.push_back(
          fmt::format("{}.params.comm_backend_name = \"{}\" is not modelled: simulated as \"nccl\"",
                      f, backend));
    }
  }
}

void read_precision(DeepSpeedConfig& c, const nlohmann::json& cfg, const std::string& prefix) {
  const bool fp16 = precision_enabled(cfg, "fp16", c.file, prefix);
  const bool bf16 = precision_enabled(cfg, "bf16", c.file, prefix);
  if (fp16 && bf16)
    throw InputError(c.file, joined_field(prefix, "bf16.enabled"), "true",
                     "DeepSpeed refuses fp16 and bf16 enabled together; enable one");
  c.precision = fp16 ? Precision::kFp16 : bf16 ? Precision::kBf16 : Precision::kFp32;
  c.grad_dtype = c.precision == Precision::kFp32 ? DType::kF32 : DType::kF16;
  ConfigReader r(cfg, c.file, prefix);
  if (r.boolean("fp32_allreduce", false)) c.grad_dtype = DType::kF32;
  if (cfg.contains("communication_data_type") && !cfg["communication_data_type"].is_null()) {
    const std::string d =
        r.choice("communication_data_type", "fp32", {"fp32", "fp16", "bf16", "fp8"});
    if (d == "fp8")
      c.warnings.push_back(fmt::format("{} = \"fp8\" is not modelled: simulated as fp16",
                                       r.field("communication_data_type")));
    c.grad_dtype = d == "fp32" ? DType::kF32 : DType::kF16;
  }
}

void read_zero(DeepSpeedConfig& c, const nlohmann::json& cfg, const std::string& prefix) {
  if (!cfg.contains("zero_optimization") || cfg["zero_optimization"].is_null()) return;
  const std::string f = joined_field(prefix, "zero_optimization");
  const nlohmann::json& z = cfg["zero_optimization"];
  int64_t stage = 0;
  if (z.is_boolean()) {  // DeepSpeed's old form: true means stage 1
    stage = z.get<bool>() ? 1 : 0;
  } else if (z.is_object()) {
    if (z.contains("stage")) stage = json_int64(z["stage"], c.file, f + ".stage", 0, 3);
  } else {
    throw InputError(c.file, f, json_excerpt(z), "expected an object {\"stage\": 0..3}");
  }
  if (stage == 0) return;
  if (is_onebit(c.optimizer.kind))
    throw InputError(c.file, f + ".stage", std::to_string(stage),
                     fmt::format("DeepSpeed asserts that {} is not compatible with ZeRO; set "
                                 "stage 0 or remove zero_optimization",
                                 c.optimizer.type_name()));
  c.warnings.push_back(
      fmt::format("{}.stage = {} is not modelled: ZeRO's partitioned gradients (reduce-scatter "
                  "and allgather instead of one allreduce) are simulated as plain data parallel",
                  f, stage));
}

void read_scheduler(DeepSpeedConfig& c, const nlohmann::json& cfg, const std::string& prefix) {
  if (!cfg.contains("scheduler") || cfg["scheduler"].is_null()) return;
  const std::string f = joined_field(prefix, "scheduler");
  const nlohmann::json& s = cfg["scheduler"];
  if (!s.is_object() || !s.contains("type") || !s["type"].is_string())
    throw InputError(c.file, f, json_excerpt(s),
                     "expected {\"type\": \"WarmupDecayLR\", \"params\": {...}}");
  c.scheduler_type = s["type"].get<std::string>();
  static const std::vector<std::string> with_total = {"WarmupDecayLR", "WarmupCosineLR"};
  static const std::vector<std::string> without = {"WarmupLR", "OneCycle", "LRRangeTest"};
  const bool has_total =
      std::find(with_total.begin(), with_total.end(), c.scheduler_type) != with_total.end();
  if (!has_total && std::find(without.begin(), without.end(), c.scheduler_type) == without.end())
    c.warnings.push_back(fmt::format(
        "{}.type = \"{}\" is not one of DeepSpeed's schedulers ({}, {}, {}, {}, {}); DeepSpeed "
        "would look for it in torch.optim.lr_scheduler; its run length is not read{}",
        f, c.scheduler_type, with_total[0], with_total[1], without[0], without[1], without[2],
        did_you_mean(c.scheduler_type,
                     {with_total[0], with_total[1], without[0], without[1], without[2]})));
  if (!has_total) return;
  const nlohmann::json params = s.value("params", nlohmann::json::object());
  const std::string pf = f + ".params";
  if (!params.is_object()) throw InputError(c.file, pf, json_excerpt(params), "expected an object");
  if (!params.contains("total_num_steps"))
    throw InputError(
        c.file, pf + ".total_num_steps", "missing",
        fmt::format("{} needs total_num_steps (DeepSpeed requires it)", c.scheduler_type));
  c.total_steps =
      json_int64(params["total_num_steps"], c.file, pf + ".total_num_steps", 1, kMaxStepCount);
  c.total_steps_field = pf + ".total_num_steps";
}

void read_clipping(DeepSpeedConfig& c, const nlohmann::json& cfg, const std::string& prefix) {
  ConfigReader r(cfg, c.file, prefix);
  if (r.number_in("gradient_clipping", 0, 0, true, 1e300, true) > 0)
    c.warnings.push_back(fmt::format(
        "{} = {} is not modelled: the global gradient norm it computes each step is neither "
        "timed nor applied",
        r.field("gradient_clipping"), cfg["gradient_clipping"].dump()));
}

}  // namespace

DeepSpeedBatch::Resolved DeepSpeedBatch::resolve(int64_t w, const std::string& where) const {
  const std::string tbs_f = joined_field(prefix, "train_batch_size");
  const std::string mb_f = joined_field(prefix, "train_micro_batch_size_per_gpu");
  const std::string gas_f = joined_field(prefix, "gradient_accumulation_steps");
  Resolved r;
  const std::string at = where.empty() ? fmt::format("{} GPUs", w) : where;
  if (train_batch_size && micro_batch && grad_acc) {
    r.micro_batch = *micro_batch;
    r.grad_acc = *grad_acc;
    if (*train_batch_size != *micro_batch * *grad_acc * w)
      throw InputError(
          file, tbs_f, std::to_string(*train_batch_size),
          fmt::format("DeepSpeed requires train_batch_size = train_micro_batch_size_per_gpu × "
                      "gradient_accumulation_steps × GPUs, but at {} that is {} × {} × {} = {}; "
                      "give two of the three fields and DeepSpeed derives the third",
                      at, *micro_batch, *grad_acc, w, *micro_batch * *grad_acc * w));
    return r;
  }
  if (train_batch_size) {
    // DeepSpeed derives the missing one by integer division and then asserts the product.
    const int64_t known = micro_batch ? *micro_batch : grad_acc ? *grad_acc : 1;
    const std::string known_f = micro_batch ? mb_f : grad_acc ? gas_f : "";
    const int64_t per = known * w;
    if (*train_batch_size % per != 0)
      throw InputError(
          file, tbs_f, std::to_string(*train_batch_size),
          known_f.empty()
              ? fmt::format("not divisible by the {} GPUs of {}: DeepSpeed requires "
                            "train_batch_size = micro-batch × accumulation steps × GPUs",
                            w, at)
              : fmt::format("not divisible by {} × GPUs = {} × {} = {} at {}: DeepSpeed "
                            "requires train_batch_size = micro-batch × accumulation steps × GPUs",
                            known_f, known, w, per, at));
    const int64_t derived = *train_batch_size / per;
    r.micro_batch = micro_batch ? *micro_batch : derived;
    r.grad_acc = micro_batch ? derived : grad_acc ? *grad_acc : 1;
    return r;
  }
  if (!micro_batch)
    throw InputError(file, tbs_f, "missing",
                     "DeepSpeed needs train_batch_size or train_micro_batch_size_per_gpu");
  r.micro_batch = *micro_batch;
  r.grad_acc = grad_acc ? *grad_acc : 1;
  return r;
}

std::optional<int64_t> DeepSpeedBatch::implied_world_size() const {
  if (!(train_batch_size && micro_batch && grad_acc)) return std::nullopt;
  const int64_t per = *micro_batch * *grad_acc;
  if (*train_batch_size % per != 0)
    throw InputError(file, joined_field(prefix, "train_batch_size"),
                     std::to_string(*train_batch_size),
                     fmt::format("not divisible by train_micro_batch_size_per_gpu × "
                                 "gradient_accumulation_steps = {} × {} = {}, so no GPU count "
                                 "satisfies DeepSpeed's train_batch_size = micro × gas × GPUs",
                                 *micro_batch, *grad_acc, per));
  return *train_batch_size / per;
}

std::optional<OptimizerConfig> uncompressed_twin(const OptimizerConfig& c) {
  OptimizerConfig t;
  t.common = c.common;
  switch (c.kind) {
    case OptimizerKind::kAdam:
    case OptimizerKind::kLamb:
      return std::nullopt;
    case OptimizerKind::kOneBitAdam:
    case OptimizerKind::kZeroOneAdam:
    case OptimizerKind::kOneBitAdamNoErrorFeedback:
    case OptimizerKind::kNaiveOneBitAdam:
      t.kind = OptimizerKind::kAdam;
      t.params = AdamParams{};
      return t;
    case OptimizerKind::kOneBitLamb:
    case OptimizerKind::kSlamb:
    case OptimizerKind::kNaiveOneBitLamb: {
      t.kind = OptimizerKind::kLamb;
      LambParams l;
      std::visit(
          [&l](const auto& x) {
            if constexpr (requires { x.max_coeff; }) {
              l.max_coeff = x.max_coeff;
              l.min_coeff = x.min_coeff;
            }
          },
          c.params);
      t.params = l;
      return t;
    }
  }
  return std::nullopt;
}

std::vector<std::string> deepspeed_known_fields(const std::string& block) {
  if (!block.empty()) return block_fields(block);
  std::vector<std::string> known = modelled_fields();
  known.insert(known.end(), neutral_fields().begin(), neutral_fields().end());
  for (const auto& [name, what] : unmodelled_fields()) known.push_back(name);
  return known;
}

bool is_whole_deepspeed_config(const nlohmann::json& doc) {
  if (!doc.is_object()) return false;
  if (doc.contains("optimizer") && doc["optimizer"].is_object()) return true;
  for (const char* k : {"train_batch_size", "train_micro_batch_size_per_gpu",
                        "gradient_accumulation_steps", "fp16", "bf16", "zero_optimization"})
    if (doc.contains(k)) return true;
  return false;
}

void require_optimizer_block(const nlohmann::json& block, const std::string& file,
                             const std::string& field, const std::string& instead) {
  if (!is_whole_deepspeed_config(block)) return;
  std::vector<std::string> others;
  for (auto it = block.begin(); it != block.end(); ++it)
    if (it.key() != "optimizer") others.push_back(it.key());
  if (others.empty()) return;
  throw InputError(file, field, json_excerpt(block, 80),
                   fmt::format("a whole DeepSpeed config, of which only the optimizer block "
                               "would be read here (its {} would be ignored); give the config "
                               "as {}, or only its optimizer block",
                               fmt::join(others, ", "), instead));
}

DeepSpeedConfig parse_deepspeed_config(const nlohmann::json& cfg, const std::string& file,
                                       const std::string& prefix) {
  DeepSpeedConfig c;
  c.file = file;
  c.raw = cfg;
  if (!cfg.is_object())
    throw InputError(file, prefix.empty() ? "(root)" : prefix, json_excerpt(cfg),
                     "expected a DeepSpeed config (a JSON object)");
  ConfigReader r(cfg, file, prefix);
  c.batch.file = file;
  c.batch.prefix = prefix;
  c.batch.train_batch_size = batch_field(r, cfg, "train_batch_size");
  c.batch.micro_batch = batch_field(r, cfg, "train_micro_batch_size_per_gpu");
  c.batch.grad_acc = batch_field(r, cfg, "gradient_accumulation_steps");
  if (!c.batch.train_batch_size && !c.batch.micro_batch)
    r.fail("train_batch_size",
           "DeepSpeed needs train_batch_size or train_micro_batch_size_per_gpu (with "
           "gradient_accumulation_steps, any two determine the third)");
  c.batch.implied_world_size();  // all three given: they must fit some GPU count
  read_optimizer(c, cfg, prefix);
  read_precision(c, cfg, prefix);
  read_zero(c, cfg, prefix);
  read_scheduler(c, cfg, prefix);
  read_clipping(c, cfg, prefix);

  // A misspelt field inside a block DeepSpeed reads would leave its default in force.
  for (const char* block : {"fp16", "bf16", "zero_optimization"}) {
    if (!cfg.contains(block) || !cfg[block].is_object()) continue;
    const auto& fields = block_fields(block);
    for (auto it = cfg[block].begin(); it != cfg[block].end(); ++it)
      if (std::find(fields.begin(), fields.end(), it.key()) == fields.end())
        c.warnings.push_back(fmt::format(
            "{} is not a field of DeepSpeed's {} block that clbo knows; it is ignored{}",
            joined_field(prefix, std::string(block) + "." + it.key()), block,
            did_you_mean(it.key(), fields)));
  }

  // Every other field: neutral ones pass, the rest are warnings naming them.
  const std::vector<std::string> known = deepspeed_known_fields("");
  for (auto it = cfg.begin(); it != cfg.end(); ++it) {
    const std::string& k = it.key();
    const std::string f = joined_field(prefix, k);
    if (std::find(modelled_fields().begin(), modelled_fields().end(), k) !=
            modelled_fields().end() ||
        std::find(neutral_fields().begin(), neutral_fields().end(), k) != neutral_fields().end())
      continue;
    const auto u = std::find_if(unmodelled_fields().begin(), unmodelled_fields().end(),
                                [&](const auto& e) { return e.first == k; });
    if (u != unmodelled_fields().end()) {
      // A block switched off changes nothing.
      if (it->is_object() && it->contains("enabled") && (*it)["enabled"] == false) continue;
      c.warnings.push_back(fmt::format("{} is not modelled: {}", f, u->second));
    } else {
      c.warnings.push_back(fmt::format(
          "{} is not a DeepSpeed field clbo knows; it is ignored, as DeepSpeed ignores unknown "
          "fields{}",
          f, did_you_mean(k, known)));
    }
  }
  return c;
}

DeepSpeedConfig load_deepspeed_config(const std::string& path) {
  return parse_deepspeed_config(load_json_file(path, deepspeed_json_options()), path);
}

nlohmann::json load_experiment_or_deepspeed_config(const std::string& path, bool* is_deepspeed) {
  // An engine's experiment never holds DeepSpeed's top-level fields, nor a DeepSpeed config
  // an engine's "runs" or "simulate" block.
  const auto deepspeed = [](const nlohmann::json& d) {
    return is_whole_deepspeed_config(d) && !d.contains("runs") && !d.contains("simulate");
  };
  nlohmann::json doc;
  try {
    doc = load_json_file(path);
  } catch (const InputError& strict) {
    const InputError first = strict;
    try {
      doc = load_json_file(path, deepspeed_json_options());
    } catch (const InputError&) {
      throw first;
    }
    if (!deepspeed(doc)) throw first;  // hjson's syntax only in DeepSpeed configs
  }
  *is_deepspeed = deepspeed(doc);
  return doc;
}

DeepSpeedConfig resolve_deepspeed_config(const nlohmann::json& ref, const std::string& where,
                                         const std::string& field) {
  if (ref.is_string()) {
    const std::string path = ref.get<std::string>();
    return parse_deepspeed_config(
        load_json_file_named_by(path, where, field, deepspeed_json_options()), path);
  }
  if (!ref.is_object())
    throw InputError(where, field, json_excerpt(ref),
                     "expected the path of a DeepSpeed config, or the config as an object");
  return parse_deepspeed_config(ref, where, field);
}

nlohmann::json DeepSpeedConfig::to_json() const {
  auto opt = [](const std::optional<int64_t>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };
  return {{"file", file},
          {"config", raw},
          {"optimizer", clbo::to_json(optimizer)},
          {"baseline", baseline ? clbo::to_json(*baseline) : nlohmann::json(nullptr)},
          {"train_batch_size", opt(batch.train_batch_size)},
          {"train_micro_batch_size_per_gpu", opt(batch.micro_batch)},
          {"gradient_accumulation_steps", opt(batch.grad_acc)},
          {"precision", kPrecisionNames.name(precision)},
          {"grad_dtype", grad_dtype == DType::kF32 ? "fp32" : "fp16"},
          {"comm_backend_name", comm_backend},
          {"cuda_aware", cuda_aware},
          {"scheduler",
           scheduler_type.empty() ? nlohmann::json(nullptr) : nlohmann::json(scheduler_type)},
          {"total_steps", opt(total_steps)},
          {"total_steps_field", total_steps ? nlohmann::json(total_steps_field) : nullptr},
          {"warnings", warnings}};
}

std::vector<std::string> deepspeed_fields_ignored_by(const DeepSpeedConfig& c,
                                                     const std::vector<std::string>& uses,
                                                     const std::string& engine) {
  const auto used = [&](const char* what) {
    return std::find(uses.begin(), uses.end(), what) != uses.end();
  };
  const auto f = [&](const char* key) { return joined_field(c.batch.prefix, key); };
  std::vector<std::string> out;
  if (!used("batch"))
    for (const char* k :
         {"train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps"})
      if (c.raw.contains(k)) out.push_back(fmt::format("{} is not used by {}", f(k), engine));
  if (!used("precision") && c.precision != Precision::kFp32)
    out.push_back(fmt::format("{}.enabled is not modelled by {}, which computes in fp32",
                              f(kPrecisionNames.name(c.precision)), engine));
  if (!used("backend") && c.comm_backend != "nccl")
    out.push_back(fmt::format("{}.params.comm_backend_name = \"{}\" is not used by {}",
                              f("optimizer"), c.comm_backend, engine));
  if (!used("scheduler") && !c.scheduler_type.empty())
    out.push_back(fmt::format(
        "{} ({}) is not modelled by {}: the learning rate is not scheduled as DeepSpeed "
        "would",
        f("scheduler"), c.scheduler_type, engine));
  return out;
}

}  // namespace clbo
