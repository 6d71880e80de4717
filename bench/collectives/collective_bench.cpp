// `clbo bench collectives`: validation, the size sweep, the nccl-tests table and the JSON
// result.
#include "collective_bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>

#include "bench_world.hpp"
#include "clbo/core/error.hpp"
#include "clbo/core/output_file.hpp"
#include "clbo/core/philox.hpp"
#include "clbo/core/results.hpp"
#include "clbo/kernels/onebit.hpp"

namespace clbo::bench {

namespace {

constexpr const char* kWhere = "clbo bench collectives";
constexpr size_t kMaxSizes = 10000;  // a sweep longer than this is a typo in -i

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

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

Op op_from_name(const std::string& s) {
  const auto& names = collective_names();
  return static_cast<Op>(std::find(names.begin(), names.end(), s) - names.begin());
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

// The redop column: what the collective computes.
const char* redop_of(Op op) {
  switch (op) {
    case Op::kAllreduce:
    case Op::kSparse:
      return "sum";
    case Op::kCompressed:
      return "1b-avg";  // the 1-bit compressed mean with error feedback
    default:
      return "none";  // nccl-tests' label for collectives without a reduction
  }
}

bool dense_factor_op(Op op) {
  return op == Op::kAllreduce || op == Op::kAlltoall || op == Op::kAllgather || op == Op::kPingpong;
}

// nccl-tests' bus factor for the dense ops.
double bus_factor(Op op, int p) {
  if (op == Op::kPingpong) return 1.0;
  if (p <= 1) return 0.0;
  const double q = static_cast<double>(p);
  return op == Op::kAllreduce ? 2.0 * (q - 1) / q : (q - 1) / q;
}

bool chose(const Sweep& run, const char* algo) {
  return contains(split_commas(run.cfg.algo), algo);
}

// The algorithm that carries `op` on the run's backend, as reported in table and JSON.
std::string algorithm_of(const Sweep& run, Op op) {
  const std::string& b = run.cfg.backend;
  switch (op) {
    case Op::kAllreduce:
      if (b == "mpi") return chose(run, "ring") ? "ring" : "MPI_Allreduce";
      return b == "nccl" ? "ncclAllReduce" : "ring";
    case Op::kCompressed:
      if (b == "mpi")
        return chose(run, "alltoall")
                   ? "onebit_two_phase (MPI_Alltoall)"
                   : "onebit_two_phase (DeepSpeed MPI: p x MPI_Igather, MPI_Allgather)";
      return b == "nccl" ? "onebit_two_phase (grouped send/recv, ncclAllGather, fused GPU kernels)"
                         : "onebit_two_phase";
    case Op::kSparse:
      return b == "nccl" ? "compact + ncclAllReduce + scatter" : "compact + ring + scatter";
    case Op::kAlltoall:
      return b == "mpi" ? "MPI_Alltoall" : b == "nccl" ? "grouped ncclSend/ncclRecv" : "direct";
    case Op::kAllgather:
      return b == "mpi" ? "MPI_Allgather" : b == "nccl" ? "ncclAllGather" : "direct";
    case Op::kPingpong:
      return "send + recv between ranks 0 and 1 (half round trip)";
  }
  return "";
}

// nccl-tests' number formatting: the widest of %.2f, %.1f, %.0f that fits, else %e.
std::string fit(double v, int width) {
  for (int prec = 2; prec >= 0; --prec) {
    const std::string s = fmt::format("{:>{}.{}f}", v, width, prec);
    if (static_cast<int>(s.size()) <= width) return s;
  }
  return fmt::format("{:>{}.{}e}", v, width, width >= 7 ? 1 : 0);
}

std::string wrong_text(const Sweep& run, uint64_t wrong) {
  return run.cfg.check ? fmt::format("{:>6}", wrong) : "   N/A";
}

struct Bandwidths {
  double algbw = 0, busbw = 0, eq_busbw = -1;  // GB/s (1e9 bytes/s); eq_busbw < 0: N/A
};

Bandwidths bandwidths(const Row& row, const Half& h, int p) {
  const double t = h.time_us * 1e-6;
  Bandwidths b;
  if (t <= 0) return b;
  b.algbw = static_cast<double>(row.shape.bytes) / t / 1e9;
  if (dense_factor_op(row.c.op)) {
    b.busbw = b.algbw * bus_factor(row.c.op, p);
  } else {
    b.busbw = static_cast<double>(row.wire_bytes) / t / 1e9;
    b.eq_busbw = b.algbw * bus_factor(Op::kAllreduce, p);
  }
  return b;
}

std::string now_text() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);  // nccl-tests' format
  return buf;
}

void print_preamble(const Sweep& run, int p) {
  const auto& c = run.cfg;
  std::printf("# clbo bench collectives: %s on the %s backend, %d ranks\n",
              join(c.collectives, ",").c_str(), c.backend.c_str(), p);
  const bool factor = c.step_factor > 1;
  std::printf(
      "# nThread %lld nGpus %lld minBytes %llu maxBytes %llu step: %llu(%s) warmup iters: %lld "
      "iters: %lld agg iters: %lld validation: %lld graph: 0 unalign: 0\n",
      static_cast<long long>(c.nthreads), static_cast<long long>(c.ngpus),
      static_cast<unsigned long long>(parse_size(c.min_bytes, "-b")),
      static_cast<unsigned long long>(parse_size(c.max_bytes, "-e")),
      static_cast<unsigned long long>(factor ? static_cast<uint64_t>(c.step_factor)
                                             : parse_size(c.step_bytes, "-i")),
      factor ? "factor" : "bytes", static_cast<long long>(c.warmup),
      static_cast<long long>(c.iters), static_cast<long long>(c.agg_iters),
      static_cast<long long>(c.check));
  if (c.blocking == 1)
    std::printf("# Blocking Enabled: wait and barrier after each inner iteration (-m) \n");
  if (c.blocking == 2)
    std::printf("# Blocking Enabled: wait after each inner iteration (-m), no barrier \n");
  if (c.blocking == 3)
    std::printf(
        "# Blocking Enabled: wait and barrier after each outer iteration (-n); time excludes "
        "barrier \n");
  if (c.run_cycles == 0)
    std::printf("# -N 0: the sweep repeats until stopped; no JSON result is written\n");
  std::printf("#\n");
  for (const Case& k : run.cases) {
    if (&k != &run.cases.front() && k.op == (&k - 1)->op) continue;
    std::printf("# %s: %s", op_name(k.op), algorithm_of(run, k.op).c_str());
    const std::string staged = staging_note(k.op, c.backend);
    if (!staged.empty()) std::printf("; %s", staged.c_str());
    std::printf("\n");
  }
  std::printf(
      "# clbo's columns after nccl-tests': eq_busbw (compressed and sparse: size*2(p-1)/p / "
      "time, the busbw an uncompressed allreduce would need for the same time) out of place "
      "and in place, and wire_bytes (bytes one call sent per rank, the most any rank sent)\n");
  const bool ts = c.report_timestamps != 0;
  const char* time_label = c.report_cputime ? "cputime" : "time";
  std::printf("#\n");
  std::printf(
      "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          "
      "%s   clbo: out-of-place, in-place, per call\n",
      "", "", "", "", "", ts ? "                     " : "");
  std::printf(
      "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s  %8s  %8s  %12s\n",
      "size", "count", "type", "redop", "root", time_label, "algbw", "busbw", "#wrong", time_label,
      "algbw", "busbw", "#wrong", ts ? 19 : 0, ts ? "timestamp" : "", "eq_busbw", "eq_busbw",
      "wire_bytes");
  std::printf(
      "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s  %8s  %8s  %12s\n",
      "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)",
      "", ts ? 19 : 0, ts ? "%Y-%m-%d %H:%M:%S" : "", "(GB/s)", "(GB/s)", "(B)");
  std::fflush(stdout);
}

void print_row(const Sweep& run, const Row& row, int p) {
  std::string line = fmt::format("{:>12}  {:>12}  {:>8}  {:>6}  {:>6}", row.shape.bytes,
                                 row.shape.call_count, row.c.type, redop_of(row.c.op), -1);
  std::string eq;
  for (const Half* h : {&row.out_of_place, &row.in_place}) {
    const Bandwidths b = bandwidths(row, *h, p);
    line += fmt::format("  {}  {}  {}  {}", fit(h->time_us, 7), fit(b.algbw, 6), fit(b.busbw, 6),
                        wrong_text(run, h->wrong));
    eq += fmt::format("  {:>8}", b.eq_busbw < 0 ? "N/A" : fit(b.eq_busbw, 8));
  }
  if (run.cfg.report_timestamps) line += fmt::format("{:>21}", row.timestamp);
  line += eq + fmt::format("  {:>12}", row.wire_bytes);
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

nlohmann::json half_json(const Sweep& run, const Row& row, const Half& h, int p) {
  const Bandwidths b = bandwidths(row, h, p);
  nlohmann::json j;
  j[run.cfg.report_cputime ? "cputime_us" : "time_us"] = h.time_us;
  j["algbw_GBps"] = b.algbw;
  j["busbw_GBps"] = b.busbw;
  j["eq_busbw_GBps"] = b.eq_busbw < 0 ? nlohmann::json(nullptr) : nlohmann::json(b.eq_busbw);
  j["wrong"] = run.cfg.check ? nlohmann::json(h.wrong) : nlohmann::json(nullptr);
  return j;
}

// The half a collective runs without a staging copy: its row-level fields, which readers of
// earlier results (validate, calibrate) take.
bool native_in_place(Op op, const std::string& backend) {
  const std::string note = staging_note(op, backend);
  return note.empty() || note.rfind("out-of-place", 0) == 0;
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
  j.update(half_json(run, row, in_place ? row.in_place : row.out_of_place, p));
  j["out_of_place"] = half_json(run, row, row.out_of_place, p);
  j["in_place"] = half_json(run, row, row.in_place, p);
  if (!row.timestamp.empty()) j["timestamp"] = row.timestamp;
  return j;
}

// compressed vs allreduce at each size both were run at (their native halves): the bytes
// and time ratios (allreduce / compressed).
nlohmann::json comparisons(const Sweep& run, const std::vector<Row>& rows) {
  nlohmann::json out = nlohmann::json::array();
  auto native = [&](const Row& r) {
    return native_in_place(r.c.op, run.cfg.backend) ? r.in_place : r.out_of_place;
  };
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
      j["compressed_time_us"] = native(c).time_us;
      j["allreduce_time_us"] = native(a).time_us;
      j["time_ratio"] = native(c).time_us > 0 ? native(a).time_us / native(c).time_us : 0.0;
      out.push_back(j);
    }
  }
  return out;
}

double reduce_time(const std::vector<double>& all, int64_t average) {
  switch (average) {
    case 0:
      return all.front();
    case 2:
      return *std::min_element(all.begin(), all.end());
    case 3:
      return *std::max_element(all.begin(), all.end());
    default: {
      double s = 0;
      for (double v : all) s += v;
      return s / static_cast<double>(all.size());
    }
  }
}

// One half of one row: the untimed sync call, -n timed iterations of -m calls each (with
// -z's waits and barriers), then -c checked calls.
Half time_half(RankOps& ops, const Sweep& run, Op op) {
  using clock = std::chrono::steady_clock;
  const auto& c = run.cfg;
  Half h;
  ops.prepare_timing();
  ops.run();  // nccl-tests' sync call before timing
  ops.finish();
  ops.barrier();
  const auto t0 = clock::now();
  double coll_only_s = 0;  // -z 3: the time outside the barriers
  for (int64_t i = 0; i < c.iters; ++i) {
    const auto ti = clock::now();
    for (int64_t a = 0; a < c.agg_iters; ++a) {
      ops.run();
      if (c.blocking == 1 || c.blocking == 2) ops.finish();
      if (c.blocking == 1) ops.barrier();
    }
    if (c.blocking == 3) {
      ops.finish();
      coll_only_s += std::chrono::duration<double>(clock::now() - ti).count();
      ops.barrier();
    }
  }
  const double calls = static_cast<double>(c.iters * c.agg_iters);
  const double cpu_s =
      c.blocking == 3 ? coll_only_s : std::chrono::duration<double>(clock::now() - t0).count();
  ops.finish();
  const double wall_s =
      c.blocking == 3 ? coll_only_s : std::chrono::duration<double>(clock::now() - t0).count();
  double us = (c.report_cputime ? cpu_s : wall_s) / calls * 1e6;
  if (op == Op::kPingpong) us /= 2;  // one call is a round trip
  h.time_us = reduce_time(ops.gather_over_ranks(us), c.average);
  for (int64_t k = 0; k < c.check; ++k) {
    h.wrong = ops.sum_over_ranks(ops.run_checked());
    if (h.wrong) break;
  }
  return h;
}

}  // namespace

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
  static const std::vector<std::string> v = {"allreduce", "compressed", "sparse",
                                             "alltoall",  "allgather",  "pingpong"};
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
  return collective_names()[static_cast<size_t>(op)].c_str();
}

std::string staging_note(Op op, const std::string& backend) {
  switch (op) {
    case Op::kAllreduce:
      if (backend == "nccl") return "";
      [[fallthrough]];
    case Op::kCompressed:
    case Op::kSparse:
      return "out-of-place copies the input into the output buffer, then runs in place";
    case Op::kAlltoall:
    case Op::kAllgather:
      if (backend == "nccl" && op == Op::kAllgather) return "";
      return "in-place copies the input out of the output buffer, then runs out of place";
    case Op::kPingpong:
      return "";
  }
  return "";
}

Shape shape_for(Op op, uint64_t bytes, size_t elem_bytes, int p) {
  Shape s;
  const size_t count = static_cast<size_t>(bytes / elem_bytes);
  if (op == Op::kAlltoall || op == Op::kAllgather) {
    // nccl-tests: the per-rank count rounded down to a multiple of 16 bytes.
    const size_t align = std::max<size_t>(1, 16 / elem_bytes);
    const size_t per = (count / static_cast<size_t>(p)) / align * align;
    s.call_count = per;
    s.buffer_count = per * static_cast<size_t>(p);
  } else {
    s.call_count = s.buffer_count = count;
  }
  s.bytes = s.buffer_count * elem_bytes;
  return s;
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
  at_least("-m", c.agg_iters, 1, "must be >= 1");
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

std::vector<Row> sweep(RankOps& ops, const Sweep& run) {
  const int p = ops.size();
  const bool root = ops.rank() == 0;
  std::vector<Row> rows;
  if (root) print_preamble(run, p);
  for (int64_t cycle = 0; run.cfg.run_cycles == 0 || cycle < run.cfg.run_cycles; ++cycle) {
    for (const Case& k : run.cases) {
      if (run.cfg.warmup > 0) {
        // nccl-tests warms every size up (out of place) before the timed pass.
        ops.set_in_place(false);
        for (uint64_t bytes : run.sizes) {
          const Shape s = shape_for(k.op, bytes, k.elem_bytes, p);
          if (s.call_count == 0) continue;
          ops.setup(k, s.buffer_count);
          ops.prepare_timing();
          for (int64_t w = 0; w < run.cfg.warmup; ++w) ops.run();
          ops.finish();
        }
      }
      for (uint64_t bytes : run.sizes) {
        Row row;
        row.c = k;
        row.cycle = cycle;
        row.shape = shape_for(k.op, bytes, k.elem_bytes, p);
        if (row.shape.call_count == 0)
          throw InputError(
              kWhere, "-b", run.cfg.min_bytes,
              fmt::format("too small for {} at p = {} with {} elements (needs at "
                          "least {} bytes)",
                          op_name(k.op), p, k.type,
                          std::max<size_t>(16, k.elem_bytes) * static_cast<size_t>(p)));
        if (k.op == Op::kPingpong && p < 2)
          throw InputError(kWhere, "--collective", "pingpong", "needs at least 2 ranks");
        ops.setup(k, row.shape.buffer_count);
        ops.set_in_place(true);
        row.wire_bytes = ops.max_over_ranks_u64(ops.run_counted());
        ops.set_in_place(false);
        row.out_of_place = time_half(ops, run, k.op);
        ops.set_in_place(true);
        row.in_place = time_half(ops, run, k.op);
        if (run.cfg.report_timestamps) row.timestamp = now_text();
        if (root) {
          print_row(run, row, p);
          if (run.cfg.run_cycles > 0) rows.push_back(row);
        }
      }
    }
  }
  return rows;
}

void fill_uniform(float* x, size_t n, uint64_t seed, int rank) {
  for (size_t q = 0; q < (n + 3) / 4; ++q) {
    const Philox4x32 r = philox4x32_10(
        static_cast<uint32_t>(q), static_cast<uint32_t>(q >> 32), static_cast<uint32_t>(rank),
        0x636c626f /* "clbo" */, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
    for (size_t w = 0; w < 4 && 4 * q + w < n; ++w)
      x[4 * q + w] = static_cast<float>(static_cast<int32_t>(r.v[w])) * 0x1p-31f;  // [-1, 1)
  }
}

const std::vector<float>& reference_compressed(int p, size_t n, uint64_t seed) {
  static std::mutex mu;
  static std::map<std::tuple<int, size_t, uint64_t>, std::vector<float>> cache;
  std::lock_guard lock(mu);
  auto key = std::make_tuple(p, n, seed);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  cache.clear();  // one size at a time keeps memory bounded
  const size_t n_pad = clbo::onebit_padded_size(n, p), c = n_pad / static_cast<size_t>(p);
  std::vector<std::vector<uint8_t>> packed(static_cast<size_t>(p));
  std::vector<float> scales(static_cast<size_t>(p));
  {
    std::vector<float> x(n), err(n_pad);
    for (int r = 0; r < p; ++r) {
      fill_uniform(x.data(), n, seed, r);
      std::fill(err.begin(), err.end(), 0.0f);
      scales[static_cast<size_t>(r)] =
          kernels::rms_scale(kernels::ref::ef_sumsq(x.data(), n, err.data(), n_pad), n_pad);
      packed[static_cast<size_t>(r)].resize(n_pad / 8);
      kernels::ref::ef_sign_pack(x.data(), n, err.data(), n_pad, scales[static_cast<size_t>(r)],
                                 packed[static_cast<size_t>(r)].data());
    }
  }
  std::vector<float> out(n);
  std::vector<float> server_err(c);
  std::vector<uint8_t> signs(c / 8);
  std::vector<const uint8_t*> pieces(static_cast<size_t>(p));
  for (int j = 0; j < p; ++j) {
    for (int r = 0; r < p; ++r)
      pieces[static_cast<size_t>(r)] = packed[static_cast<size_t>(r)].data() + j * (c / 8);
    std::fill(server_err.begin(), server_err.end(), 0.0f);
    const float s = kernels::ref::server_step(pieces.data(), scales.data(), p, server_err.data(), c,
                                              signs.data());
    const size_t begin = static_cast<size_t>(j) * c;
    if (begin < n)
      kernels::ref::unpack_scale(signs.data(), std::min(c, n - begin), s, out.data() + begin);
  }
  return cache.emplace(key, std::move(out)).first->second;
}

int run_collective_bench(const CollectiveBenchConfig& cfg) {
  validate(cfg);
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
  for (const Row& r : rows)
    for (const Half* h : {&r.out_of_place, &r.in_place}) {
      failed += h->wrong > 0;
      wrong += h->wrong;
      bw_sum += bandwidths(r, *h, p).busbw;
    }
  const uint64_t threads_total =
      static_cast<uint64_t>(std::max<int64_t>(1, p / std::max<int64_t>(1, cfg.ngpus)));
  const uint64_t out_of_bounds = failed * threads_total;
  const double avg_bw = rows.empty() ? 0.0 : bw_sum / static_cast<double>(2 * rows.size());
  const char* min_bw_env = std::getenv("NCCL_TESTS_MIN_BW");
  const double min_bw = min_bw_env ? std::atof(min_bw_env) : -1;
  const bool bw_ok = min_bw < 0 || avg_bw >= min_bw * 0.9;
  std::printf("# %-20s : %llu %s\n", "Out of bounds values",
              static_cast<unsigned long long>(out_of_bounds), out_of_bounds ? "FAILED" : "OK");
  std::printf("# %-20s : %g %s\n", "Avg bus bandwidth", avg_bw,
              min_bw < 0 ? "" : (bw_ok ? "OK" : "FAILED"));
  std::printf("#\n# Collective test concluded: clbo bench collectives\n#\n");

  if (write_json) {
    nlohmann::json result;
    result["schema"] = "clbo.bench.collectives/1";
    result["measured"] = true;
    nlohmann::json config;
    config["collectives"] = run.cfg.collectives;
    config["ops"] = run.cfg.collectives;  // the name earlier results used
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
    result["config"] = config;
    result["environment"] = environment_json();
    result["backend"] = describe;
    static const char* kAverage[] = {"rank 0's", "the mean over ranks of the", "the fastest rank's",
                                     "the slowest rank's"};
    result["definitions"] = {
        {"time_us", fmt::format("{} mean per call over -n {} x -m {} calls (pingpong: half the "
                                "round trip)",
                                kAverage[cfg.average], cfg.iters, cfg.agg_iters)},
        {"half",
         "out_of_place and in_place hold both halves; the row's own time_us, bandwidths and "
         "wrong are those of the half named here, the one the collective runs without a "
         "staging copy"},
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
         "ranks; null with -c 0)"}};
    nlohmann::json jrows = nlohmann::json::array();
    for (const Row& r : rows) jrows.push_back(row_json(run, r, p));
    result["rows"] = jrows;
    result["comparisons"] = comparisons(run, rows);
    result["out_of_bounds"] = {{"count", out_of_bounds}, {"okay", out_of_bounds == 0}};
    result["average_bus_bandwidth"] = {
        {"bandwidth", avg_bw},
        {"okay", min_bw < 0 ? nlohmann::json("unchecked") : nlohmann::json(bw_ok)}};
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
