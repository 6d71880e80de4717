// `clbo bench collectives`: the names, nccl-tests' size syntax, validation of every flag
// before any work, and the run with its JSON result (the sweep is sweep.cpp, the table
// nccl_table.cpp).
#include "collective_bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <sstream>

#include <unistd.h>  // environ

#include "bench_world.hpp"
#include "clbo/core/error.hpp"
#include "clbo/core/output_file.hpp"
#include "clbo/core/results.hpp"

namespace clbo::bench {

namespace {

constexpr const char* kWhere = "clbo bench collectives";
constexpr size_t kMaxSizes = 10000;  // a sweep longer than this is a typo in -i

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

void require_name(const std::string& flag, const std::string& value,
                  const std::vector<std::string>& names, const char* what,
                  const std::string& hint = "") {
  if (!contains(names, value))
    throw InputError(kWhere, flag, value,
                     fmt::format("unknown {}; choose one of {}{}{}", what, join(names, ", "),
                                 did_you_mean(value, names), hint));
}

// Only for names validate() has accepted.
Op op_from_name(const std::string& s) {
  const auto op = kOpNames.find(s);
  if (!op) throw Error("clbo bench collectives: unknown collective '" + s + "'");
  return *op;
}

// nccl-tests' element sizes, in nccl_type_names() order.
size_t type_size(const std::string& t) {
  static const std::map<std::string, size_t> sizes = {
      {"int8", 1}, {"uint8", 1}, {"int32", 4},  {"uint32", 4},   {"int64", 8},  {"uint64", 8},
      {"half", 2}, {"float", 4}, {"double", 8}, {"bfloat16", 2}, {"f8e4m3", 1}, {"f8e5m2", 1}};
  return sizes.at(t);
}

bool moves_bytes(Op op) {
  return op == Op::kAlltoall || op == Op::kAllgather || op == Op::kPingpong;
}

// The element types `op` runs at on `backend`: the data-movement ops take any type (they
// move bytes); the sums take what clbo's kernels add (fp32, and fp16 on the wire); the
// compressed allreduce takes fp32 (its wire format is 1 bit).
std::vector<std::string> types_of(Op op, const CollectiveBenchConfig& c) {
  if (moves_bytes(op)) return nccl_type_names();
  if (op == Op::kCompressed) return {"float"};
  const bool mpi_native = c.backend == "mpi" && !contains(split_commas(c.algo), "ring");
  if (op == Op::kAllreduce && mpi_native) return {"float"};  // MPI has no fp16 sum
  return {"float", "half"};
}

// The half a row's own fields report: the one its collective runs without a staging copy.
const Half& own_half(const Sweep& run, const Row& row) {
  return native_in_place(row.c.op, run.cfg.backend) ? row.in_place : row.out_of_place;
}

nlohmann::json half_json(const Sweep& run, const Row& row, const Half& h, int p) {
  if (!h.ran) return nullptr;  // --halves native left it out
  const Bandwidths b = bandwidths(row, h, p);
  nlohmann::json j;
  j["time_us"] = h.time_us;  // with -C 1 the time to issue the calls (definitions say so)
  j["iterations"] = h.iterations;
  if (h.kernel_us >= 0) j["kernel_us"] = h.kernel_us;
  j["algbw_GBps"] = b.algbw;
  j["busbw_GBps"] = b.busbw;
  j["eq_busbw_GBps"] = b.eq_busbw < 0 ? nlohmann::json(nullptr) : nlohmann::json(b.eq_busbw);
  j["wrong"] = run.cfg.check ? nlohmann::json(h.wrong) : nlohmann::json(nullptr);
  return j;
}

nlohmann::json row_json(const Sweep& run, const Row& row, int p) {
  nlohmann::json j;
  j["op"] = op_name(row.c.op);
  j["algorithm"] = algorithm_of(run, row.c.op);
  j["size_bytes"] = row.shape.bytes;
  j["count"] = row.shape.call_count;
  j["type"] = row.c.type;
  j["redop"] = redop_of(row.c.op);
  j["root"] = -1;
  j["cycle"] = row.cycle;
  j["wire_bytes"] = row.wire_bytes;
  const bool in_place = native_in_place(row.c.op, run.cfg.backend);
  j["half"] = in_place ? "in_place" : "out_of_place";
  j.update(half_json(run, row, own_half(run, row), p));
  j["out_of_place"] = half_json(run, row, row.out_of_place, p);
  j["in_place"] = half_json(run, row, row.in_place, p);
  if (!row.timestamp.empty()) j["timestamp"] = row.timestamp;
  return j;
}

// ---- nccl-tests' own JSON (src/util.cu, file version 3), written beside clbo's keys so
// that a script written for nccl-tests' -J output reads clbo's unchanged ----

constexpr int kNcclTestsJsonVersion = 3;

// nccl-tests' start_time and end_time: local time, "%Y-%m-%d %H:%M:%S".
std::string local_time_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &tm);
  return text;
}

// One half as nccl-tests writes it: time in us (cpu_time with -C 1), alg_bw and bus_bw in
// GB/s, nwrong (null without a check); null when --halves native left the half out.
nlohmann::json nccl_tests_half(const Sweep& run, const Row& row, const Half& h, int p) {
  if (!h.ran) return nullptr;
  const Bandwidths b = bandwidths(row, h, p);
  nlohmann::json j;
  j[run.cfg.report_cputime ? "cpu_time" : "time"] = h.time_us;
  j["alg_bw"] = b.algbw;
  j["bus_bw"] = b.busbw;
  j["nwrong"] = run.cfg.check ? nlohmann::json(static_cast<double>(h.wrong)) : nlohmann::json();
  return j;
}

// nccl-tests' records, one per row as in its table; `collective` is clbo's (nccl-tests runs
// one collective per binary).
nlohmann::json nccl_tests_results(const Sweep& run, const std::vector<Row>& rows, int p) {
  nlohmann::json out = nlohmann::json::array();
  for (const Row& r : rows)
    out.push_back({{"size", r.shape.bytes},
                   {"count", r.shape.call_count},
                   {"type", r.c.type},
                   {"redop", redop_of(r.c.op)},
                   {"root", fmt::format("{:6d}", -1)},  // nccl-tests writes it as printed
                   {"out_of_place", nccl_tests_half(run, r, r.out_of_place, p)},
                   {"in_place", nccl_tests_half(run, r, r.in_place, p)},
                   {"actual_iterations", own_half(run, r).iterations},
                   {"experiment_name", ""},
                   {"collective", op_name(r.c.op)}});
  return out;
}

// nccl-tests' config keys (clbo's own config keys stay beside them).
void add_nccl_tests_config(const CollectiveBenchConfig& c, uint64_t lo, uint64_t hi,
                           nlohmann::json& config) {
  config["minimum_bytes"] = lo;
  config["maximum_bytes"] = hi;
  config["warmup_iters"] = c.warmup;
  config["iterations"] = c.iters;
  config["aggregated_iterations"] = c.agg_iters;
  config["validation"] = c.check;
  config["graph"] = 0;  // -G is accepted only at 0
  config["blocking_collectives"] = c.blocking != 0;
  config["per_iter_timing"] = false;  // -I is accepted only at 0
  config["per_iter_skip"] = 0;
  config["parallel_init"] = false;  // -p is accepted only at 0
}

// nccl-tests records the whole environment; clbo keeps the variables that change what a
// collective does (NCCL's, OpenMPI's MCA settings, clbo's) and no others.
nlohmann::json nccl_tests_env() {
  nlohmann::json out = nlohmann::json::array();
  for (char** e = environ; e && *e; ++e) {
    const std::string v = *e;
    for (const char* prefix : {"NCCL_", "OMPI_MCA_", "CLBO_"})
      if (v.rfind(prefix, 0) == 0) out.push_back(v);
  }
  return out;
}

// nccl-tests' nccl_version is NCCL's version code (X*10000 + Y*100 + Z); null where no NCCL
// ran (the local and mpi backends).
nlohmann::json nccl_version_code(const nlohmann::json& describe) {
  int x = 0, y = 0, z = 0;
  if (!describe.contains("nccl_library") ||
      std::sscanf(describe["nccl_library"].get<std::string>().c_str(), "%d.%d.%d", &x, &y, &z) != 3)
    return nullptr;
  return x * 10000 + y * 100 + z;
}

// compressed vs allreduce at each size both were run at (their native halves): the bytes
// and time ratios (allreduce / compressed).
nlohmann::json comparisons(const Sweep& run, const std::vector<Row>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const Row& c : rows) {
    if (c.c.op != Op::kCompressed) continue;
    for (const Row& a : rows) {
      if (a.c.op != Op::kAllreduce || a.c.type != c.c.type || a.shape.bytes != c.shape.bytes ||
          a.cycle != c.cycle)
        continue;
      nlohmann::json j;
      j["size_bytes"] = c.shape.bytes;
      j["compressed_wire_bytes"] = c.wire_bytes;
      j["allreduce_wire_bytes"] = a.wire_bytes;
      j["wire_bytes_ratio"] = c.wire_bytes ? nlohmann::json(static_cast<double>(a.wire_bytes) /
                                                            static_cast<double>(c.wire_bytes))
                                           : nlohmann::json(nullptr);
      const double compressed_us = own_half(run, c).time_us,
                   allreduce_us = own_half(run, a).time_us;
      j["compressed_time_us"] = compressed_us;
      j["allreduce_time_us"] = allreduce_us;
      j["time_ratio"] = compressed_us > 0 ? allreduce_us / compressed_us : 0.0;
      out.push_back(j);
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

std::vector<FixedFlag> fixed_flags() {
  const std::string gpu = "; clbo does not offer it";
  return {{"-p,--parallel_init", "", "0",
           "nccl-tests' parallel NCCL init by every thread; clbo initializes NCCL from one thread"},
          {"-y,--stream_null", "", "0",
           "nccl-tests' use of the default CUDA stream; clbo's NCCL calls run on their own stream"},
          {"-G,--cudagraph", "", "0", "nccl-tests' number of CUDA graph launches" + gpu},
          {"-R,--local_register", "", "0", "nccl-tests' NCCL buffer registration" + gpu},
          {"-x,--cta_policy", "", "-1", "nccl-tests' NCCL CTA policy" + gpu},
          {"-D,--device_implementation", "", "0",
           "nccl-tests' device-API implementation of the collective" + gpu},
          {"-V,--device_cta_count", "", "16", "nccl-tests' CTA count of the device API" + gpu},
          {"-M,--memory", "", "0", "nccl-tests' GPU memory usage report" + gpu},
          {"-u,--unalign", "", "0", "nccl-tests' misalignment of the buffers by N elements" + gpu},
          {"-I,--per_iter_timing", "", "0",
           "nccl-tests' per-iteration CUDA event timing (i_min, i_max, i_p99, i_cv columns)" + gpu},
          {"-K,--per_iter_skip", "", "0",
           "nccl-tests' leading samples left out of the -I statistics; clbo has no -I"}};
}

const std::vector<std::string>& collective_names() {
  static const std::vector<std::string> v = kOpNames.names();
  return v;
}
const std::vector<std::string>& backend_names() {
  static const std::vector<std::string> v = {"local", "mpi", "nccl"};
  return v;
}
const std::vector<std::string>& nccl_type_names() {
  static const std::vector<std::string> v = {"int8",   "uint8",    "int32",  "uint32",
                                             "int64",  "uint64",   "half",   "float",
                                             "double", "bfloat16", "f8e4m3", "f8e5m2"};
  return v;
}
const std::vector<std::string>& nccl_op_names() {
  static const std::vector<std::string> v = {"sum", "prod", "max", "min", "avg", "mulsum"};
  return v;
}

const char* op_name(Op op) {
  return kOpNames.name(op);
}

uint64_t parse_size(const std::string& text, const std::string& flag) {
  const char* begin = text.c_str();
  char* end = nullptr;
  const double v =
      text.empty() || !(std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '.')
          ? -1.0
          : std::strtod(begin, &end);
  if (!(v >= 0) || end == begin)
    throw InputError(kWhere, flag, text, "not a size; write bytes like 8, 64K, 1.5M or 1G");
  std::string rest(end);
  rest.erase(0, rest.find_first_not_of(" "));
  double mult = 1;
  if (!rest.empty()) {
    const char u = static_cast<char>(std::toupper(static_cast<unsigned char>(rest[0])));
    mult = u == 'K' ? 0x1p10 : u == 'M' ? 0x1p20 : u == 'G' ? 0x1p30 : 0;
    const std::string after = rest.substr(1);
    if (mult == 0 || !(after.empty() || after == "B" || after == "b"))
      throw InputError(kWhere, flag, text, "unknown size unit; use K, M or G (binary multiples)");
  }
  const double bytes = v * mult;
  if (bytes > 0x1p40) throw InputError(kWhere, flag, text, "size is too large (over 1 TiB)");
  return static_cast<uint64_t>(bytes);  // nccl-tests truncates fractions of a byte
}

void validate(const CollectiveBenchConfig& c) {
  for (const FixedFlag& f : c.fixed)
    if (!f.value.empty() && f.value != f.fixed)
      throw InputError(kWhere, f.name, f.value,
                       fmt::format("{}; only {} (its default) is accepted", f.meaning, f.fixed));
  const auto colls = split_commas(join(c.collectives, ","));
  if (colls.empty()) throw InputError(kWhere, "--collective", "''", "name at least one collective");
  for (const auto& o : colls) require_name("--collective", o, collective_names(), "collective");
  require_name("--backend", c.backend, backend_names(), "backend");
  require_name("--halves", c.halves, {"both", "native"}, "choice of halves");
  // -o is nccl-tests' reduction op; clbo's own --op of earlier versions is --collective.
  std::vector<std::string> ops = nccl_op_names();
  ops.push_back("all");
  require_name("-o", c.op, ops, "reduction op (-o/--op is nccl-tests' reduction operation)",
               contains(collective_names(), c.op)
                   ? fmt::format("; the collective is chosen with --collective {}", c.op)
                   : "; the JSON result is written with -J/--output_file FILE.json");
  if (c.op != "sum" && c.op != "all")
    throw InputError(kWhere, "-o", c.op,
                     "clbo's allreduce and sparse allreduce reduce with sum, the compressed "
                     "allreduce computes the 1-bit compressed mean, and the other collectives "
                     "have no reduction; -o accepts sum or all");
  std::vector<std::string> types = nccl_type_names();
  types.push_back("all");
  require_name("-d", c.datatype, types, "data type (-d/--datatype, nccl-tests' names)");
  if (c.datatype != "all")
    for (const auto& o : colls) {
      const auto ok = types_of(op_from_name(o), c);
      if (!contains(ok, c.datatype))
        throw InputError(
            kWhere, "-d", c.datatype,
            fmt::format("{} on the {} backend runs at {}{}", o, c.backend, join(ok, ", "),
                        o == "allreduce" && c.backend == "mpi" && c.datatype == "half"
                            ? " (MPI_Allreduce has no fp16 sum; add --algo ring for clbo's "
                              "fp16 ring)"
                            : ""));
    }
  if (c.backend == "nccl" && contains(colls, "pingpong"))
    throw InputError(kWhere, "--collective", "pingpong",
                     "pingpong runs on the local and mpi backends");
#ifndef CLBO_WITH_MPI_BACKEND
  if (c.backend == "mpi")
    throw InputError(kWhere, "--backend", "mpi",
                     "this clbo was built without MPI (install libopenmpi-dev and reconfigure)");
#endif
#ifndef CLBO_WITH_NCCL_BACKEND
  if (c.backend == "nccl")
    throw InputError(kWhere, "--backend", "nccl",
                     "this clbo was built without NCCL (needs nvcc and NCCL at configure time)");
#endif
  // --algo names one algorithm per op that has a choice (a comma list for several ops).
  const std::vector<std::string> algos = {"default", "native", "ring", "gather", "alltoall"};
  const auto chosen = split_commas(c.algo);
  for (const auto& a : chosen) {
    require_name("--algo", a, algos, "algorithm");
    if (a == "default") continue;
    if (c.backend != "mpi")
      throw InputError(kWhere, "--algo", c.algo, "only the mpi backend offers algorithm choices");
    const std::string op = a == "native" || a == "ring" ? "allreduce" : "compressed";
    if (!contains(colls, op))
      throw InputError(kWhere, "--algo", a,
                       fmt::format("is an algorithm of {}, which --collective does not run "
                                   "(allreduce: native|ring, compressed: gather|alltoall)",
                                   op));
  }
  auto has = [&](const char* a) { return contains(chosen, a); };
  if ((has("native") && has("ring")) || (has("gather") && has("alltoall")))
    throw InputError(kWhere, "--algo", c.algo, "names two algorithms for the same op");
  const uint64_t lo = parse_size(c.min_bytes, "-b"), hi = parse_size(c.max_bytes, "-e");
  if (lo == 0) throw InputError(kWhere, "-b", c.min_bytes, "the smallest size must be positive");
  if (lo > hi)
    throw InputError(kWhere, "-b", c.min_bytes, fmt::format("larger than -e {}", c.max_bytes));
  if (c.step_factor < 1)
    throw InputError(kWhere, "-f", std::to_string(c.step_factor),
                     "the size factor must be >= 1 (1: step by -i bytes)");
  const uint64_t step = parse_size(c.step_bytes, "-i");
  if (c.step_factor == 1 && step == 0 && lo < hi)
    throw InputError(kWhere, "-i", c.step_bytes, "with -f 1 the sizes step by -i, which is 0");
  if (c.step_factor == 1 && step > 0 && (hi - lo) / step >= kMaxSizes)
    throw InputError(kWhere, "-i", c.step_bytes,
                     fmt::format("steps {}..{} into more than {} sizes", lo, hi, kMaxSizes));
  auto at_least = [](const char* flag, int64_t v, int64_t lo_v, const char* what) {
    if (v < lo_v) throw InputError(kWhere, flag, std::to_string(v), what);
  };
  at_least("-n", c.iters, 1, "must be >= 1");
  if (!std::isfinite(c.min_time_s) || c.min_time_s < 0 || c.min_time_s > 3600)
    throw InputError(kWhere, "--min-time", fmt::format("{}", c.min_time_s),
                     "seconds per size and half, from 0 (-n iterations only) to 3600");
  at_least("-m", c.agg_iters, 1, "must be >= 1");
  if (c.agg_iters > 1) {
    // nccl-tests' -m puts the calls of one iteration in one ncclGroupStart/End, so NCCL
    // launches them together; back-to-back calls would measure something else.
    const std::string m = std::to_string(c.agg_iters);
    const char* meaning = "nccl-tests' calls aggregated into one NCCL group launch";
    if (c.backend != "nccl")
      throw InputError(
          kWhere, "-m", m,
          fmt::format("{}; the {} backend has no group launch (-m 1)", meaning, c.backend));
    for (const char* multi : {"compressed", "sparse"})
      if (contains(colls, multi))
        throw InputError(kWhere, "-m", m,
                         fmt::format("{}; {}'s kernels between its NCCL calls read results a "
                                     "group would defer to its end (-m 1)",
                                     meaning, multi));
    if (c.blocking == 1 || c.blocking == 2)
      throw InputError(kWhere, "-m", m,
                       fmt::format("with -z {} each call would wait inside the NCCL group, "
                                   "before the group has launched anything (use -z 0 or 3)",
                                   c.blocking));
  }
  at_least("-w", c.warmup, 0, "must be >= 0");
  at_least("-N", c.run_cycles, 0, "must be >= 0 (0 repeats until stopped)");
  at_least("-c", c.check, 0, "must be >= 0 (0: no check)");
  if (c.average < 0 || c.average > 3)
    throw InputError(kWhere, "-a", std::to_string(c.average),
                     "nccl-tests' time over ranks: 0 rank 0, 1 mean, 2 min, 3 max");
  if (c.blocking < 0 || c.blocking > 3)
    throw InputError(kWhere, "-z", std::to_string(c.blocking),
                     "nccl-tests' blocking mode: 0, 1 (wait and barrier), 2 (wait), 3 (wait and "
                     "barrier per -n iteration, barrier not timed)");
  for (auto [flag, v] : {std::pair{"-C", c.report_cputime}, std::pair{"-S", c.report_timestamps}})
    if (v != 0 && v != 1) throw InputError(kWhere, flag, std::to_string(v), "must be 0 or 1");
  if (c.root != 0)
    throw InputError(kWhere, "-r", std::to_string(c.root),
                     "nccl-tests' root rank of rooted collectives (broadcast, reduce, gather, "
                     "scatter); none of clbo's collectives has a root");
  at_least("-t", c.nthreads, 1, "must be >= 1");
  at_least("-g", c.ngpus, 1, "must be >= 1");
  if (c.backend == "local" && (c.nthreads > 1024))
    throw InputError(kWhere, "-t", std::to_string(c.nthreads),
                     "the local backend runs 1..1024 ranks (threads)");
  if (c.backend != "nccl" && c.ngpus != 1)
    throw InputError(kWhere, "-g", std::to_string(c.ngpus),
                     fmt::format("nccl-tests' GPUs per thread; the {} backend has no GPUs (its "
                                 "ranks are {})",
                                 c.backend, c.backend == "local" ? "threads, -t" : "processes"));
  if (c.backend == "mpi" && c.nthreads != 1)
    throw InputError(kWhere, "-t", std::to_string(c.nthreads),
                     "nccl-tests' threads per process; the mpi backend runs one rank per process "
                     "(mpirun -np sets the ranks)");
  if (!(c.timeout_s >= 0 && c.timeout_s <= 86400))
    throw InputError(kWhere, "-T", fmt::format("{}", c.timeout_s), "must be in [0, 86400] seconds");
  if (c.timeout_s > 0 && c.backend != "mpi")
    throw InputError(kWhere, "-T", fmt::format("{}", c.timeout_s),
                     "nccl-tests' timeout of a stuck collective; clbo bounds the waits of the "
                     "mpi backend only");
  if (!(c.sparse_k > 0.0 && c.sparse_k <= 1.0))
    throw InputError(kWhere, "--sparse-k", fmt::format("{}", c.sparse_k), "must be in (0, 1]");
  if (!c.output_file.empty()) {
    const auto dot = c.output_file.find_last_of('.');
    const auto slash = c.output_file.find_last_of('/');
    std::string ext = dot == std::string::npos || (slash != std::string::npos && slash > dot)
                          ? ""
                          : c.output_file.substr(dot + 1);
    std::transform(ext.begin(), ext.end(), ext.begin(), ::tolower);
    if (ext != "json")
      throw InputError(kWhere, "-J", c.output_file,
                       "nccl-tests takes the output type from the suffix and writes only .json");
  }
  if (c.backend == "local")
    for (const auto& o : colls)
      for (const auto& t : c.datatype == "all" ? types_of(op_from_name(o), c)
                                               : std::vector<std::string>{c.datatype}) {
        const size_t elem = type_size(t);
        if (shape_for(op_from_name(o), lo, elem, static_cast<int>(c.nthreads)).call_count == 0)
          throw InputError(
              kWhere, "-b", c.min_bytes,
              fmt::format("too small for {} at p = {} with {} elements (needs at "
                          "least {} bytes)",
                          o, c.nthreads, t,
                          std::max<size_t>(16, elem) * static_cast<size_t>(c.nthreads)));
      }
}

int run_collective_bench(const CollectiveBenchConfig& cfg) {
  validate(cfg);
  const std::string start_time = local_time_now();
  const bool write_json = !cfg.output_file.empty() && cfg.run_cycles > 0;
  if (write_json) check_output_path(cfg.output_file, "-J");  // before any measurement
  Sweep run;
  run.cfg = cfg;
  run.cfg.collectives = split_commas(join(cfg.collectives, ","));
  for (const auto& o : run.cfg.collectives) {
    const Op op = op_from_name(o);
    for (const auto& t :
         cfg.datatype == "all" ? types_of(op, cfg) : std::vector<std::string>{cfg.datatype})
      run.cases.push_back(Case{op, t, type_size(t)});
  }
  const uint64_t lo = parse_size(cfg.min_bytes, "-b"), hi = parse_size(cfg.max_bytes, "-e");
  const uint64_t step = parse_size(cfg.step_bytes, "-i");
  for (uint64_t s = lo; s <= hi;) {
    run.sizes.push_back(s);
    if (cfg.step_factor > 1) {
      if (s > hi / static_cast<uint64_t>(cfg.step_factor)) break;
      s *= static_cast<uint64_t>(cfg.step_factor);
    } else {
      if (step == 0) break;
      s += step;
    }
  }

  nlohmann::json describe;
  bool root = true;
  std::vector<Row> rows;
  if (cfg.backend == "local")
    rows = run_local_backend(run, describe);
  else if (cfg.backend == "mpi")
    rows = run_mpi_backend(run, describe, root);
  else
    rows = run_nccl_backend(run, describe, root);
  if (!root) return 0;

  const int p = describe.value("p", 1);
  // nccl-tests' footer: failing (size, half) results, counted once per thread of every
  // process as nccl-tests counts them, and the mean busbw over every half of every row.
  uint64_t failed = 0, wrong = 0;
  double bw_sum = 0;
  size_t halves_run = 0;
  for (const Row& r : rows)
    for (const Half* h : {&r.out_of_place, &r.in_place}) {
      if (!h->ran) continue;
      ++halves_run;
      failed += h->wrong > 0;
      wrong += h->wrong;
      bw_sum += bandwidths(r, *h, p).busbw;
    }
  const uint64_t threads_total =
      static_cast<uint64_t>(std::max<int64_t>(1, p / std::max<int64_t>(1, cfg.ngpus)));
  const uint64_t out_of_bounds = failed * threads_total;
  const double avg_bw = halves_run ? bw_sum / static_cast<double>(halves_run) : 0.0;
  const char* min_bw_env = std::getenv("NCCL_TESTS_MIN_BW");
  const double min_bw = min_bw_env ? std::atof(min_bw_env) : -1;
  const bool bw_ok = min_bw < 0 || avg_bw >= min_bw * 0.9;
  print_footer(out_of_bounds, avg_bw, min_bw);

  if (write_json) {
    nlohmann::json result;
    result["schema"] = "clbo.bench.collectives/1";
    result["measured"] = true;
    result["version"] = kNcclTestsJsonVersion;
    result["start_time"] = start_time;
    result["args"] = cfg.argv;
    result["env"] = nccl_tests_env();
    result["nccl_version"] = nccl_version_code(describe);
    nlohmann::json config;
    config["collectives"] = run.cfg.collectives;
    config["backend"] = cfg.backend;
    config["op"] = cfg.op;
    config["datatype"] = cfg.datatype;
    config["algo"] = cfg.algo;
    config["min_bytes"] = lo;
    config["max_bytes"] = hi;
    config["step_factor"] = cfg.step_factor;
    config["step_bytes"] = step;
    config["iters"] = cfg.iters;
    config["agg_iters"] = cfg.agg_iters;
    config["warmup"] = cfg.warmup;
    config["run_cycles"] = cfg.run_cycles;
    config["check"] = cfg.check;
    config["average"] = cfg.average;
    config["blocking"] = cfg.blocking;
    config["report_cputime"] = cfg.report_cputime;
    config["nthreads"] = cfg.nthreads;
    config["ngpus"] = cfg.ngpus;
    config["timeout_s"] = cfg.timeout_s;
    config["p"] = p;
    config["sparse_k"] = cfg.sparse_k;
    config["seed"] = cfg.seed;
    config["halves"] = cfg.halves;
    config["min_time_s"] = cfg.min_time_s;
    add_nccl_tests_config(cfg, lo, hi, config);
    result["config"] = config;
    result["environment"] = environment_json();
    if (describe.contains("device") && describe["device"].is_string())
      result["environment"]["gpu"] = describe["device"];  // the nccl backend's GPU
    result["backend"] = describe;
    static const char* kAverage[] = {"rank 0's", "the mean over ranks of the", "the fastest rank's",
                                     "the slowest rank's"};
    result["definitions"] = {
        {"time_us",
         fmt::format("{} mean per call over {} x -m {} calls{} (pingpong: half the "
                     "round trip)",
                     kAverage[cfg.average],
                     cfg.min_time_s > 0
                         ? fmt::format("the half's iterations (at least -n {}, more where they "
                                       "took less than --min-time {} s by the slowest rank's "
                                       "sync call)",
                                       cfg.iters, cfg.min_time_s)
                         : fmt::format("-n {}", cfg.iters),
                     cfg.agg_iters,
                     cfg.report_cputime ? ", the time to issue them (-C 1, cputime)" : "")},
        {"iterations", "the timed iterations of the half: -n, or more with --min-time"},
        {"kernel_us",
         "compressed and sparse on the local and mpi backends only: per call, the mean over "
         "ranks of the time each rank spent in the compression kernels (compress, server step, "
         "unpack; mask count, compaction, scatter) inside the timed calls, part of time_us"},
        {"half",
         "out_of_place and in_place hold both halves (null: left out by --halves native); the "
         "row's own time_us, bandwidths and wrong are those of the half named here, the one "
         "the collective runs without a staging copy"},
        {"count",
         "nccl-tests' count: elements per rank (allreduce, compressed, sparse), per "
         "peer (alltoall) or contributed per rank (allgather)"},
        {"algbw_GBps", "size_bytes / time (1e9 bytes/s)"},
        {"busbw_GBps",
         "dense ops: algbw x nccl-tests factor (allreduce 2(p-1)/p, alltoall and allgather "
         "(p-1)/p); compressed and sparse: wire_bytes / time"},
        {"eq_busbw_GBps",
         "compressed and sparse only: equivalent busbw, size_bytes*2(p-1)/p / time, the busbw an "
         "uncompressed allreduce would need for the same time"},
        {"wire_bytes", "bytes one call sent per rank as the backend counts them (max over ranks)"},
        {"wrong",
         "elements differing from the expected result in -c checked calls (all "
         "ranks; null with -c 0)"},
        {"results",
         "nccl-tests' JSON (version 3) for the same rows: size, count, type, redop, root (as "
         "printed), out_of_place and in_place (time or cpu_time in us, alg_bw and bus_bw in "
         "GB/s, nwrong; null for a half left out), actual_iterations, experiment_name; plus "
         "clbo's collective. version, start_time, end_time, args, env (only NCCL_*, "
         "OMPI_MCA_* and CLBO_* variables), nccl_version (null without NCCL) and config's "
         "nccl-tests keys are nccl-tests' too; config.devices is not written"}};
    nlohmann::json jrows = nlohmann::json::array();
    for (const Row& r : rows) jrows.push_back(row_json(run, r, p));
    result["rows"] = jrows;
    result["results"] = nccl_tests_results(run, rows, p);
    result["comparisons"] = comparisons(run, rows);
    result["out_of_bounds"] = {{"count", out_of_bounds}, {"okay", out_of_bounds == 0}};
    result["average_bus_bandwidth"] = {
        {"bandwidth", avg_bw},
        {"okay", min_bw < 0 ? nlohmann::json("unchecked") : nlohmann::json(bw_ok)}};
    result["end_time"] = local_time_now();
    write_json_atomic(cfg.output_file, result);
    std::printf("# wrote %s\n", cfg.output_file.c_str());
  }
  if (wrong > 0) {
    std::fprintf(stderr, "clbo: error: %llu wrong elements (see #wrong)\n",
                 static_cast<unsigned long long>(wrong));
    return 1;
  }
  return bw_ok ? 0 : 1;
}

}  // namespace clbo::bench
