#include "measurements.hpp"

#include <fmt/format.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "clbo/core/config.hpp"
#include "clbo/core/error.hpp"

namespace clbo::sim {

namespace {

std::string mb(double bytes) {
  return bytes >= 1e6 ? fmt::format("{:.4g} MB", bytes / 1e6) : fmt::format("{:.0f} B", bytes);
}

// A path as written, or relative to the calibration file's folder when it does not exist
// from the working directory.
std::string resolve_path(const std::string& path, const std::string& file) {
  namespace fs = std::filesystem;
  if (fs::path(path).is_absolute() || fs::exists(path)) return path;
  const fs::path base = fs::path(file).parent_path();
  if (!base.empty() && fs::exists(base / path)) return (base / path).string();
  return path;
}

std::string file_field(ConfigReader& r, const nlohmann::json& m, const std::string& from) {
  r.ignore("file");
  if (!m.contains("file") || !m["file"].is_string() || m["file"].get<std::string>().empty())
    r.fail("file", "required: the path of the " + from + " output");
  const std::string path = resolve_path(m["file"].get<std::string>(), r.file());
  if (!std::filesystem::exists(path))
    throw InputError(r.file(), r.field("file"), m["file"].dump(), "no such file");
  return path;
}

Measurement allreduce(const std::string& field, int p, double bytes, DType dtype, double time_ms,
                      const nlohmann::json& given) {
  Measurement x;
  x.kind = Measurement::Kind::kAllreduce;
  x.field = field;
  x.p = p;
  x.quantity = "time_ms";
  x.measured = time_ms;
  x.call = CommCall{CollKind::kAllreduce, static_cast<size_t>(bytes) / dtype_bytes(dtype), dtype,
                    "grad"};
  x.label = fmt::format("allreduce {} {} on {} GPUs", mb(bytes), to_string(dtype), p);
  x.setting = fmt::format("allreduce|{}|{}|{}", x.call.count, to_string(dtype), p);
  x.as_given = given;
  return x;
}

DType dtype_named(const std::string& name, const std::string& file, const std::string& field) {
  if (name == "fp16" || name == "half" || name == "float16" || name == "bfloat16" || name == "bf16")
    return DType::kF16;  // 2 bytes: the simulator counts bytes
  if (name == "fp32" || name == "float" || name == "float32") return DType::kF32;
  throw InputError(file, field, name,
                   "unsupported element type: expected fp16/half/bfloat16 or fp32/float");
}

int gpus_of(ConfigReader& r, int64_t def) {
  const int64_t g = r.integer("gpus", def, 1);
  if (g < 1) r.fail("gpus", "required: the number of GPUs measured");
  return static_cast<int>(g);
}

// nccl-tests text output (all_reduce_perf): the header line naming the columns, then one
// line per size; the out-of-place time (µs) is used.
std::vector<Measurement> nccl_tests(const std::string& path, const std::string& field, int p,
                                    const nlohmann::json& given) {
  std::ifstream in(path);
  if (!in) throw InputError(path, "(file)", path, "cannot open file");
  std::vector<std::string> header;
  std::vector<Measurement> out;
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    std::istringstream ss(line[0] == '#' ? line.substr(1) : line);
    std::vector<std::string> tok;
    for (std::string t; ss >> t;) tok.push_back(t);
    if (tok.empty()) continue;
    if (line[0] == '#') {
      const bool names = std::find(tok.begin(), tok.end(), "time") != tok.end() &&
                         (tok[0] == "size" || tok[0] == "bytes");
      if (names) header = tok;
      continue;
    }
    if (!std::all_of(tok[0].begin(), tok[0].end(), [](char c) { return std::isdigit(c); }))
      continue;
    if (header.empty())
      throw InputError(path, fmt::format("line {}", line_no), line.substr(0, 60),
                       "a result row before the column header (\"# size count type ... time\")");
    const auto col = [&](const std::string& name) {
      return static_cast<size_t>(std::find(header.begin(), header.end(), name) - header.begin());
    };
    const size_t t = col("time"), ty = col("type");
    if (tok.size() <= t || ty >= header.size())
      throw InputError(path, fmt::format("line {}", line_no), line.substr(0, 60),
                       "fewer columns than the header names");
    double bytes = 0, us = 0;
    try {
      bytes = std::stod(tok[0]);
      us = std::stod(tok[t]);
    } catch (const std::exception&) {
      throw InputError(path, fmt::format("line {}", line_no), line.substr(0, 60),
                       "expected numbers in the size and time columns");
    }
    if (bytes <= 0) continue;
    if (!(us > 0))
      throw InputError(path, fmt::format("line {}", line_no), tok[t], "the time must be positive");
    const DType d = dtype_named(tok[ty], path, fmt::format("line {} type", line_no));
    out.push_back(allreduce(fmt::format("{} ({} line {})", field, path, line_no), p, bytes, d,
                            us / 1e3, given));
  }
  if (out.empty())
    throw InputError(path, "(file)", path,
                     "no result rows: expected nccl-tests all_reduce_perf output");
  return out;
}

// `clbo bench collectives` JSON (clbo.bench.collectives/1): its allreduce rows.
std::vector<Measurement> bench_collectives(const std::string& path, const std::string& field,
                                           ConfigReader& r, const nlohmann::json& given) {
  const nlohmann::json doc = load_json_file(path);
  if (!doc.is_object() || doc.value("schema", "") != "clbo.bench.collectives/1")
    throw InputError(path, "schema",
                     doc.is_object() ? doc.value("schema", "missing") : "not an object",
                     "expected `clbo bench collectives` output (clbo.bench.collectives/1)");
  const int file_p = doc.contains("config") && doc["config"].contains("p") &&
                             doc["config"]["p"].is_number_integer()
                         ? doc["config"]["p"].get<int>()
                         : 0;
  const int p = gpus_of(r, file_p);
  if (file_p > 0 && p != file_p)
    r.fail("gpus", fmt::format("{} ran on {} ranks (config.p)", path, file_p));
  std::vector<Measurement> out;
  const nlohmann::json& rows = doc.contains("rows") ? doc["rows"] : nlohmann::json::array();
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& row = rows[i];
    if (!row.is_object() || row.value("op", "") != "allreduce") continue;
    const std::string f = fmt::format("rows[{}]", i);
    if (!row.contains("size_bytes") || !row["size_bytes"].is_number() || !row.contains("time_us") ||
        !row["time_us"].is_number() || !(row["time_us"].get<double>() > 0))
      throw InputError(path, f, row.dump().substr(0, 80),
                       "expected size_bytes and a positive time_us");
    const DType d = dtype_named(row.value("type", "float"), path, f + ".type");
    out.push_back(allreduce(fmt::format("{} ({} {})", field, path, f), p,
                            row["size_bytes"].get<double>(), d, row["time_us"].get<double>() / 1e3,
                            given));
  }
  if (out.empty()) throw InputError(path, "rows", path, "no allreduce rows to fit to");
  return out;
}

}  // namespace

double measured_quantity_from_seconds(const Measurement& m, double seconds) {
  if (m.quantity == "samples_per_s")
    return static_cast<double>(m.p * m.micro_batch * m.grad_acc) / seconds;
  return seconds * 1e3;
}

std::vector<Measurement> parse_measurements(const nlohmann::json& input, const std::string& file) {
  if (!input.contains("measurements") || !input["measurements"].is_array() ||
      input["measurements"].empty())
    throw InputError(
        file, "measurements",
        input.contains("measurements") ? input["measurements"].dump().substr(0, 60) : "missing",
        "required: a non-empty array of measurements");
  const nlohmann::json& list = input["measurements"];
  std::vector<Measurement> out;
  std::map<std::string, std::shared_ptr<const Workload>> workloads;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string field = fmt::format("measurements[{}]", i);
    const nlohmann::json& m = list[i];
    ConfigReader r(m, file, field);
    r.ignore("source");
    r.ignore("label");
    const std::string kind =
        r.choice("kind", "", {"step", "allreduce", "nccl-tests", "clbo-bench-collectives"});
    if (kind.empty())
      r.fail("kind", "required: step, allreduce, nccl-tests or clbo-bench-collectives");
    if (kind == "step") {
      Measurement x;
      x.kind = Measurement::Kind::kStep;
      x.field = field;
      x.p = gpus_of(r, 0);
      r.ignore("workload");
      if (!m.contains("workload")) r.fail("workload", "required");
      const std::string wkey = m["workload"].dump();
      if (!workloads.count(wkey))
        workloads[wkey] =
            std::make_shared<Workload>(resolve_workload(m["workload"], file, r.field("workload")));
      x.workload = workloads[wkey];
      x.micro_batch = r.integer("micro_batch", 0, 1);
      if (x.micro_batch < 1) r.fail("micro_batch", "required");
      x.grad_acc = r.integer("grad_acc", 1, 1);
      r.ignore("optimizer");
      if (!m.contains("optimizer")) r.fail("optimizer", "required: a DeepSpeed optimizer block");
      x.optimizer = parse_optimizer_config(m["optimizer"], file);
      if (x.optimizer.kind != OptimizerKind::kAdam && x.optimizer.kind != OptimizerKind::kLamb)
        throw InputError(file, r.field("optimizer"), x.optimizer.type_name(),
                         "a step measurement needs an uncompressed optimizer (Adam or LAMB): "
                         "the fit is of the cluster, not of a compression scheme");
      if (r.has("step_ms") == r.has("samples_per_s"))
        r.fail("step_ms", "give exactly one of step_ms and samples_per_s");
      x.quantity = r.has("step_ms") ? "step_ms" : "samples_per_s";
      x.measured = r.number_in(x.quantity, 0, 0, false, 1e12, true);
      x.label = fmt::format("step: {} on {} GPUs, micro-batch {}, grad-acc {}", x.workload->name,
                            x.p, x.micro_batch, x.grad_acc);
      x.setting = fmt::format("step|{}|{}|{}|{}|{}|{}", x.workload->name, x.p, x.micro_batch,
                              x.grad_acc, to_json(x.optimizer).dump(), x.quantity);
      x.as_given = m;
      r.finish();
      out.push_back(std::move(x));
    } else if (kind == "allreduce") {
      const int p = gpus_of(r, 0);
      if (!r.has("bytes")) r.fail("bytes", "required: the allreduce's size in bytes");
      if (!r.has("time_ms")) r.fail("time_ms", "required: the measured time");
      const double bytes = r.number_in("bytes", 0, 0, false, 1e15, true);
      r.ignore("dtype");
      const std::string d =
          m.contains("dtype") && m["dtype"].is_string() ? m["dtype"].get<std::string>() : "fp16";
      const DType dtype = dtype_named(d, file, r.field("dtype"));
      if (static_cast<uint64_t>(bytes) % dtype_bytes(dtype) != 0)
        r.fail("bytes", fmt::format("not a whole number of {} elements", d));
      const double t = r.number_in("time_ms", 0, 0, false, 1e12, true);
      r.finish();
      out.push_back(allreduce(field, p, bytes, dtype, t, m));
    } else if (kind == "nccl-tests") {
      const std::string path = file_field(r, m, "nccl-tests");
      const int p = gpus_of(r, 0);
      const std::string coll = r.choice("collective", "allreduce", {"allreduce"});
      (void)coll;
      r.finish();
      for (auto& x : nccl_tests(path, field, p, m)) out.push_back(std::move(x));
    } else {
      const std::string path = file_field(r, m, "`clbo bench collectives`");
      for (auto& x : bench_collectives(path, field, r, m)) out.push_back(std::move(x));
      r.finish();
    }
  }
  // One setting, one value: two different values of the same setting contradict each other.
  std::map<std::string, size_t> seen;
  for (size_t i = 0; i < out.size(); ++i) {
    auto [it, fresh] = seen.try_emplace(out[i].setting, i);
    if (fresh) continue;
    const Measurement& a = out[it->second];
    if (a.measured != out[i].measured)
      throw InputError(file, out[i].field, fmt::format("{}", out[i].measured),
                       fmt::format("contradicts {} ({}): the same setting ({}) with two values",
                                   a.field, a.measured, out[i].label));
  }
  return out;
}

}  // namespace clbo::sim
