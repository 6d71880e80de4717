// `clbo bench collectives`: validation, the size sweep, the table and the JSON result.
#include "collective_bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>

#include "bench_world.hpp"
#include "clbo/core/error.hpp"
#include "clbo/core/philox.hpp"
#include "clbo/core/results.hpp"
#include "clbo/kernels/onebit.hpp"

namespace clbo::bench {

namespace {

constexpr const char* kWhere = "clbo bench collectives";

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

void require_name(const std::string& flag, const std::string& value,
                  const std::vector<std::string>& names, const char* what) {
  if (std::find(names.begin(), names.end(), value) == names.end())
    throw InputError(kWhere, flag, value,
                     fmt::format("unknown {}; choose one of {}{}", what, join(names, ", "),
                                 did_you_mean(value, names)));
}

Op op_from_name(const std::string& s) {
  const auto& names = op_names();
  return static_cast<Op>(std::find(names.begin(), names.end(), s) - names.begin());
}

size_t dtype_size(const std::string& d) {
  return d == "float" ? 4 : d == "half" ? 2 : 1;
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
  const auto v = split_commas(run.cfg.algo);
  return std::find(v.begin(), v.end(), algo) != v.end();
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

void print_header(const Sweep& run, Op op, int p) {
  std::printf("# op %s  backend %s  p %d  type %s  iters %lld  warmup %lld  check %s\n",
              op_name(op), run.cfg.backend.c_str(), p, run.cfg.dtype.c_str(),
              static_cast<long long>(run.cfg.iters), static_cast<long long>(run.cfg.warmup),
              run.cfg.check ? "on" : "off");
  std::printf("# algorithm: %s\n", algorithm_of(run, op).c_str());
  if (op == Op::kCompressed || op == Op::kSparse)
    std::printf(
        "# eq_busbw = size*2(p-1)/p / time: the busbw an uncompressed allreduce would "
        "need to finish in the same time (equivalent busbw)\n");
  std::printf("# %12s %12s %6s %12s %11s %11s %14s %14s %7s\n", "size", "count", "type", "time_us",
              "algbw_GBps", "busbw_GBps", "eq_busbw_GBps", "wire_bytes", "#wrong");
  std::fflush(stdout);
}

struct Bandwidths {
  double algbw, busbw, eq_busbw;  // GB/s (1e9 bytes per second); eq_busbw < 0: not defined
};

Bandwidths bandwidths(const Row& row, int p) {
  const double t = row.time_us * 1e-6;
  Bandwidths b{0, 0, -1};
  if (t <= 0) return b;
  b.algbw = static_cast<double>(row.bytes) / t / 1e9;
  if (dense_factor_op(row.op)) {
    b.busbw = b.algbw * bus_factor(row.op, p);
  } else {
    b.busbw = static_cast<double>(row.wire_bytes) / t / 1e9;
    b.eq_busbw = b.algbw * bus_factor(Op::kAllreduce, p);
  }
  return b;
}

void print_row(const Sweep& run, const Row& row, int p) {
  const Bandwidths b = bandwidths(row, p);
  const std::string eq = b.eq_busbw < 0 ? "-" : fmt::format("{:.3f}", b.eq_busbw);
  std::printf("  %12llu %12zu %6s %12.2f %11.3f %11.3f %14s %14llu %7llu\n",
              static_cast<unsigned long long>(row.bytes), row.count, run.cfg.dtype.c_str(),
              row.time_us, b.algbw, b.busbw, eq.c_str(),
              static_cast<unsigned long long>(row.wire_bytes),
              static_cast<unsigned long long>(row.wrong));
  std::fflush(stdout);
}

nlohmann::json row_json(const Sweep& run, const Row& row, int p) {
  const Bandwidths b = bandwidths(row, p);
  nlohmann::json j;
  j["op"] = op_name(row.op);
  j["algorithm"] = algorithm_of(run, row.op);
  j["size_bytes"] = row.bytes;
  j["count"] = row.count;
  j["type"] = run.cfg.dtype;
  j["time_us"] = row.time_us;
  j["algbw_GBps"] = b.algbw;
  j["busbw_GBps"] = b.busbw;
  j["eq_busbw_GBps"] = b.eq_busbw < 0 ? nlohmann::json(nullptr) : nlohmann::json(b.eq_busbw);
  j["wire_bytes"] = row.wire_bytes;
  j["wrong"] = row.wrong;
  return j;
}

// compressed vs allreduce at each size both were run at: the bytes and time ratios the
// issue's CPU MPI check reads (allreduce / compressed).
nlohmann::json comparisons(const std::vector<Row>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const Row& c : rows) {
    if (c.op != Op::kCompressed) continue;
    for (const Row& a : rows) {
      if (a.op != Op::kAllreduce || a.bytes != c.bytes) continue;
      nlohmann::json j;
      j["size_bytes"] = c.bytes;
      j["compressed_wire_bytes"] = c.wire_bytes;
      j["allreduce_wire_bytes"] = a.wire_bytes;
      j["wire_bytes_ratio"] = c.wire_bytes ? nlohmann::json(static_cast<double>(a.wire_bytes) /
                                                            static_cast<double>(c.wire_bytes))
                                           : nlohmann::json(nullptr);
      j["compressed_time_us"] = c.time_us;
      j["allreduce_time_us"] = a.time_us;
      j["time_ratio"] = c.time_us > 0 ? a.time_us / c.time_us : 0.0;
      out.push_back(j);
    }
  }
  return out;
}

}  // namespace

const std::vector<std::string>& op_names() {
  static const std::vector<std::string> v = {"allreduce", "compressed", "sparse",
                                             "alltoall",  "allgather",  "pingpong"};
  return v;
}
const std::vector<std::string>& backend_names() {
  static const std::vector<std::string> v = {"local", "mpi", "nccl"};
  return v;
}
const std::vector<std::string>& dtype_names() {
  static const std::vector<std::string> v = {"float", "half", "uint8"};
  return v;
}

const char* op_name(Op op) {
  return op_names()[static_cast<size_t>(op)].c_str();
}

uint64_t parse_size(const std::string& text, const std::string& flag) {
  size_t pos = 0;
  unsigned long long v = 0;
  try {
    v = std::stoull(text, &pos);
  } catch (const std::exception&) {
    throw InputError(kWhere, flag, text, "not a size; write bytes like 8, 64K, 256M or 1G");
  }
  if (!text.empty() && text[0] == '-')
    throw InputError(kWhere, flag, text, "a size cannot be negative");
  uint64_t mult = 1;
  const std::string suffix = text.substr(pos);
  if (suffix == "K" || suffix == "k")
    mult = 1ull << 10;
  else if (suffix == "M" || suffix == "m")
    mult = 1ull << 20;
  else if (suffix == "G" || suffix == "g")
    mult = 1ull << 30;
  else if (!suffix.empty())
    throw InputError(kWhere, flag, text, "unknown size suffix; use K, M or G (binary multiples)");
  if (v > (UINT64_MAX >> 31) / mult) throw InputError(kWhere, flag, text, "size is too large");
  return v * mult;
}

size_t count_for(Op op, uint64_t bytes, size_t elem_bytes, int p) {
  size_t count = static_cast<size_t>(bytes / elem_bytes);
  if (op == Op::kAlltoall || op == Op::kAllgather) count -= count % static_cast<size_t>(p);
  return count;
}

void validate(const CollectiveBenchConfig& c) {
  const auto ops = split_commas(join(c.ops, ","));
  if (ops.empty()) throw InputError(kWhere, "--op", "''", "name at least one operation");
  for (const auto& o : ops) require_name("--op", o, op_names(), "operation");
  require_name("--backend", c.backend, backend_names(), "backend");
  require_name("--dtype", c.dtype, dtype_names(), "data type");
  if (c.backend == "nccl" && std::find(ops.begin(), ops.end(), "pingpong") != ops.end())
    throw InputError(kWhere, "--op", "pingpong", "pingpong runs on the local and mpi backends");
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
  for (const auto& o : ops) {
    const Op op = op_from_name(o);
    if (c.dtype == "uint8" && !(op == Op::kAlltoall || op == Op::kAllgather || op == Op::kPingpong))
      throw InputError(kWhere, "--dtype", "uint8",
                       fmt::format("{} sums values; use float or half", o));
    if (c.dtype == "half" && op == Op::kCompressed)
      throw InputError(kWhere, "--dtype", "half",
                       "the compressed allreduce takes float input (its wire format is 1 bit)");
  }
  // --algo names one algorithm per op that has a choice (a comma list for several ops).
  const std::vector<std::string> algos = {"default", "native", "ring", "gather", "alltoall"};
  const auto chosen = split_commas(c.algo);
  for (const auto& a : chosen) {
    require_name("--algo", a, algos, "algorithm");
    if (a == "default") continue;
    if (c.backend != "mpi")
      throw InputError(kWhere, "--algo", c.algo, "only the mpi backend offers algorithm choices");
    const std::string op = a == "native" || a == "ring" ? "allreduce" : "compressed";
    if (std::find(ops.begin(), ops.end(), op) == ops.end())
      throw InputError(kWhere, "--algo", a,
                       fmt::format("is an algorithm of {}, which --op does not run (allreduce: "
                                   "native|ring, compressed: gather|alltoall)",
                                   op));
  }
  auto has = [&](const char* a) {
    return std::find(chosen.begin(), chosen.end(), a) != chosen.end();
  };
  if ((has("native") && has("ring")) || (has("gather") && has("alltoall")))
    throw InputError(kWhere, "--algo", c.algo, "names two algorithms for the same op");
  if (c.backend == "mpi" && c.dtype == "half" && !has("ring") &&
      std::find(ops.begin(), ops.end(), "allreduce") != ops.end())
    throw InputError(kWhere, "--dtype", "half",
                     "MPI_Allreduce has no fp16 sum; add --algo ring for clbo's fp16 ring");
  const uint64_t lo = parse_size(c.min_bytes, "-b"), hi = parse_size(c.max_bytes, "-e");
  const size_t elem = dtype_size(c.dtype);
  if (lo == 0) throw InputError(kWhere, "-b", c.min_bytes, "the smallest size must be positive");
  if (lo > hi)
    throw InputError(kWhere, "-b", c.min_bytes, fmt::format("larger than -e {}", c.max_bytes));
  if (lo % elem != 0)
    throw InputError(
        kWhere, "-b", c.min_bytes,
        fmt::format("not a multiple of the {} element size ({} bytes)", c.dtype, elem));
  if (c.step_factor < 2)
    throw InputError(kWhere, "-f", std::to_string(c.step_factor), "the size factor must be >= 2");
  if (c.iters < 1) throw InputError(kWhere, "-n", std::to_string(c.iters), "must be >= 1");
  if (c.warmup < 0) throw InputError(kWhere, "-w", std::to_string(c.warmup), "must be >= 0");
  if (c.check != 0 && c.check != 1)
    throw InputError(kWhere, "-c", std::to_string(c.check), "must be 0 or 1");
  if (c.ranks < 1 || c.ranks > 1024)
    throw InputError(kWhere, "--ranks", std::to_string(c.ranks), "must be in 1..1024");
  if (c.ngpus < 1) throw InputError(kWhere, "--ngpus", std::to_string(c.ngpus), "must be >= 1");
  if (!(c.sparse_k > 0.0 && c.sparse_k <= 1.0))
    throw InputError(kWhere, "--sparse-k", fmt::format("{}", c.sparse_k), "must be in (0, 1]");
  if (c.backend == "local")
    for (const auto& o : ops)
      if (count_for(op_from_name(o), lo, elem, static_cast<int>(c.ranks)) == 0)
        throw InputError(kWhere, "-b", c.min_bytes,
                         fmt::format("too small for {} at p = {} with {} elements (needs at "
                                     "least {} bytes)",
                                     o, c.ranks, c.dtype, elem * static_cast<size_t>(c.ranks)));
}

std::vector<Row> sweep(RankOps& ops, const Sweep& run) {
  using clock = std::chrono::steady_clock;
  const int p = ops.size();
  const bool root = ops.rank() == 0;
  std::vector<Row> rows;
  for (Op op : run.ops) {
    if (root) print_header(run, op, p);
    for (uint64_t bytes : run.sizes) {
      Row row;
      row.op = op;
      row.bytes = bytes;
      row.count = count_for(op, bytes, run.elem_bytes, p);
      row.bytes = row.count * run.elem_bytes;  // what really moves (alltoall rounds down)
      if (row.count == 0)
        throw InputError(kWhere, "-b", run.cfg.min_bytes,
                         fmt::format("too small for {} at p = {} (needs at least {} bytes)",
                                     op_name(op), p, run.elem_bytes * static_cast<size_t>(p)));
      if (op == Op::kPingpong && p < 2)
        throw InputError(kWhere, "--op", "pingpong", "needs at least 2 ranks");
      ops.setup(op, row.count);
      if (run.cfg.check) row.wrong = ops.sum_over_ranks(ops.run_checked());
      row.wire_bytes = ops.max_over_ranks_u64(ops.run_counted());
      ops.prepare_timing();
      for (int64_t w = 0; w < run.cfg.warmup; ++w) ops.run();
      ops.finish();
      ops.barrier();
      const auto t0 = clock::now();
      for (int64_t i = 0; i < run.cfg.iters; ++i) ops.run();
      ops.finish();
      double us = std::chrono::duration<double, std::micro>(clock::now() - t0).count() /
                  static_cast<double>(run.cfg.iters);
      if (op == Op::kPingpong) us /= 2;  // one call is a round trip
      row.time_us = ops.max_over_ranks(us);
      if (root) {
        print_row(run, row, p);
        rows.push_back(row);
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
  if (!cfg.out.empty()) check_output_path(cfg.out, "--out");  // before any measurement
  Sweep run;
  run.cfg = cfg;
  const auto names = split_commas(join(cfg.ops, ","));
  for (const auto& o : names) run.ops.push_back(op_from_name(o));
  run.elem_bytes = dtype_size(cfg.dtype);
  const uint64_t lo = parse_size(cfg.min_bytes, "-b"), hi = parse_size(cfg.max_bytes, "-e");
  for (uint64_t s = lo; s <= hi; s *= static_cast<uint64_t>(cfg.step_factor)) {
    run.sizes.push_back(s);
    if (s > hi / static_cast<uint64_t>(cfg.step_factor)) break;
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
  nlohmann::json result;
  result["schema"] = "clbo.bench.collectives/1";
  result["measured"] = true;
  nlohmann::json config;
  config["ops"] = names;
  config["backend"] = cfg.backend;
  config["dtype"] = cfg.dtype;
  config["algo"] = cfg.algo;
  config["min_bytes"] = lo;
  config["max_bytes"] = hi;
  config["step_factor"] = cfg.step_factor;
  config["iters"] = cfg.iters;
  config["warmup"] = cfg.warmup;
  config["check"] = cfg.check;
  config["p"] = p;
  config["sparse_k"] = cfg.sparse_k;
  config["seed"] = cfg.seed;
  result["config"] = config;
  result["environment"] = environment_json();
  result["backend"] = describe;
  result["definitions"] = {
      {"time_us", "mean per call over -n iterations, slowest rank (pingpong: half the round trip)"},
      {"algbw_GBps", "size_bytes / time (1e9 bytes/s)"},
      {"busbw_GBps",
       "dense ops: algbw x nccl-tests factor (allreduce 2(p-1)/p, alltoall and allgather "
       "(p-1)/p); compressed and sparse: wire_bytes / time"},
      {"eq_busbw_GBps",
       "compressed and sparse only: equivalent busbw, size_bytes*2(p-1)/p / time, the busbw an "
       "uncompressed allreduce would need for the same time"},
      {"wire_bytes", "bytes one call sent per rank as the backend counts them (max over ranks)"},
      {"wrong", "elements differing from the expected result in one checked call (all ranks)"}};
  nlohmann::json jrows = nlohmann::json::array();
  for (const Row& r : rows) jrows.push_back(row_json(run, r, p));
  result["rows"] = jrows;
  result["comparisons"] = comparisons(rows);
  uint64_t wrong = 0;
  for (const Row& r : rows) wrong += r.wrong;

  std::vector<std::string> short_ops = names;
  const std::string path = cfg.out.empty() ? fmt::format("results/bench/collectives-{}-{}-p{}.json",
                                                         cfg.backend, join(short_ops, "+"), p)
                                           : cfg.out;
  write_json_atomic(path, result);
  std::printf("# wrote %s\n", path.c_str());
  if (wrong > 0) {
    std::fprintf(stderr, "clbo: error: %llu wrong elements (see #wrong)\n",
                 static_cast<unsigned long long>(wrong));
    return 1;
  }
  return 0;
}

}  // namespace clbo::bench
