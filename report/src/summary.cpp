#include "clbo/report/summary.hpp"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <set>

namespace clbo::report {

using nlohmann::json;

std::string format_number(double v) {
  const double a = std::abs(v);
  if (a == 0) return "0";
  if (a >= 1e6 || a < 1e-3) return fmt::format("{:.3g}", v);
  if (a >= 100) return fmt::format("{:.0f}", v);
  if (a >= 10) return fmt::format("{:.1f}", v);
  if (a >= 1) return fmt::format("{:.2f}", v);
  return fmt::format("{:.3f}", v);
}

namespace {

const std::string kDash = "–";

std::string str(const json& e, const std::string& key) {
  if (!e.contains(key) || e[key].is_null()) return kDash;
  return e[key].is_string() ? e[key].get<std::string>() : e[key].dump();
}

const json* number_at(const json& e, std::initializer_list<const char*> path) {
  const json* cur = &e;
  for (const char* k : path) {
    if (!cur->is_object() || !cur->contains(k)) return nullptr;
    cur = &(*cur)[k];
  }
  return cur->is_number() ? cur : nullptr;
}

std::string ratio(const json* v) {
  return v ? format_number(v->get<double>()) + "x" : kDash;
}

const json& runs_of(const ResultsFile& f) {
  static const json empty = json::array();
  return f.doc.contains("runs") && f.doc["runs"].is_array() ? f.doc["runs"] : empty;
}

// Volume: per results file and optimizer, the whole-run bytes per GPU at the file's largest
// GPU count (bytes per GPU barely change with p; the largest p is the interesting one).
void volume_table(Document& doc, const ResultsStore& store) {
  Table t;
  t.title = "Volume per optimizer";
  t.caption =
      "Simulated whole-run bytes sent per GPU at each results file's largest GPU count, and the "
      "baseline's volume divided by the optimizer's.";
  t.header = {"results file", "optimizer",        "baseline",
              "GPUs",         "GB per GPU (run)", "volume reduction"};
  t.right_align = {false, false, false, true, true, true};
  for (const ResultsFile* f : store.with_schema("clbo.simulate/1")) {
    std::vector<std::string> order;
    std::map<std::string, const json*> best;
    for (const auto& r : runs_of(*f)) {
      const std::string opt = str(r, "optimizer");
      if (!r.contains("gpus") || !r["gpus"].is_number()) continue;
      if (!best.count(opt)) order.push_back(opt);
      if (!best.count(opt) || r["gpus"].get<double>() > (*best[opt])["gpus"].get<double>())
        best[opt] = &r;
    }
    for (const auto& opt : order) {
      const json& r = *best[opt];
      const json* bytes = number_at(r, {"simulated", "total_bytes_per_gpu"});
      t.rows.push_back({f->path, opt, str(r, "baseline"), str(r, "gpus"),
                        bytes ? format_number(bytes->get<double>() / 1e9) : kDash,
                        ratio(number_at(r, {"simulated", "volume_reduction"}))});
    }
  }
  if (t.rows.empty())
    doc.paragraph("Volume per optimizer: no clbo.simulate/1 results under " + store.dir() + ".");
  else
    doc.table(std::move(t));
}

// Speedup: one table per simulation file, a row per (cluster, optimizer) and a column per
// GPU count; the batch joins the row when one (cluster, GPUs, optimizer) has several, and the
// implementation profile when the file holds more than one (each run is compared with its own
// profile's baseline, so the profiles' speedups are different rows, never one cell).
void speedup_tables(Document& doc, const ResultsStore& store) {
  bool any = false;
  for (const ResultsFile* f : store.with_schema("clbo.simulate/1")) {
    const json& runs = runs_of(*f);
    std::set<double> gpus;
    std::map<std::string, std::set<std::string>> batches;
    std::set<std::string> implementations;
    for (const auto& r : runs) {
      if (!number_at(r, {"simulated", "speedup"}) || !r["gpus"].is_number()) continue;
      gpus.insert(r["gpus"].get<double>());
      implementations.insert(str(r, "implementation"));
      batches[str(r, "cluster") + "|" + str(r, "gpus") + "|" + str(r, "optimizer")].insert(
          str(r, "batch_size"));
    }
    if (gpus.empty()) continue;
    bool by_batch = false;
    for (const auto& [k, b] : batches) by_batch |= b.size() > 1;
    const bool by_implementation = implementations.size() > 1;
    std::vector<std::string> row_keys;
    std::map<std::string, std::map<double, std::string>> cells;
    std::map<std::string, std::vector<std::string>> labels;
    for (const auto& r : runs) {
      const json* s = number_at(r, {"simulated", "speedup"});
      if (!s) continue;
      std::vector<std::string> label = {str(r, "cluster"),
                                        str(r, "optimizer") + " vs " + str(r, "baseline")};
      if (by_batch) label.push_back(str(r, "batch_size"));
      if (by_implementation) label.push_back(str(r, "implementation"));
      std::string key;
      for (const auto& l : label) key += l + "|";
      if (!cells.count(key)) {
        row_keys.push_back(key);
        labels[key] = label;
      }
      cells[key][r["gpus"].get<double>()] = format_number(s->get<double>()) + "x";
    }
    Table t;
    t.title = "Speedup per cluster: " + f->key;
    t.caption =
        "Simulated end-to-end speedup over the baseline (baseline time / optimizer "
        "time for the whole run), from " +
        f->path + ".";
    t.header = {"cluster", "optimizer"};
    if (by_batch) t.header.push_back("batch");
    if (by_implementation) t.header.push_back("implementation");
    t.right_align.assign(t.header.size(), false);
    for (double g : gpus) {
      t.header.push_back(fmt::format("{} GPU{}", g, g == 1 ? "" : "s"));
      t.right_align.push_back(true);
    }
    for (const auto& key : row_keys) {
      std::vector<std::string> row = labels[key];
      for (double g : gpus) row.push_back(cells[key].count(g) ? cells[key][g] : kDash);
      t.rows.push_back(std::move(row));
    }
    doc.table(std::move(t));
    any = true;
  }
  if (!any)
    doc.paragraph("Speedup per cluster: no clbo.simulate/1 results with a baseline under " +
                  store.dir() + ".");
}

std::string mean_std(const json& e, const std::string& key, double scale, const char* unit,
                     int digits = 2) {
  const json* m = number_at(e, {key.c_str(), "mean"});
  if (!m) return kDash;
  const json* s = number_at(e, {key.c_str(), "std"});
  std::string out = fmt::format("{:.{}f}", m->get<double>() * scale, digits);
  if (s) out += fmt::format(" ± {:.{}f}", s->get<double>() * scale, digits);
  return out + unit;
}

void convergence_tables(Document& doc, const ResultsStore& store) {
  bool any = false;
  for (const ResultsFile* f : store.with_schema("clbo.train/1")) {
    if (!f->doc.contains("summary") || !f->doc["summary"].is_array()) continue;
    Table t;
    t.title = "Convergence gaps: " + f->key;
    t.caption =
        "Measured final test accuracy and training-set loss over seeds (mean ± std), the "
        "accuracy gap to the baseline in points (paired by seed), and bytes sent relative to "
        "the baseline, from " +
        f->path + ".";
    t.header = {"run",           "optimizer",    "baseline",          "seeds",
                "test accuracy", "gap (points)", "training-set loss", "comm vs baseline"};
    t.right_align = {false, false, false, true, true, true, true, true};
    for (const auto& s : f->doc["summary"]) {
      const json* comm = number_at(s, {"comm_relative_to_baseline"});
      std::string seeds = str(s, "seeds_run");
      if (const json* bad = number_at(s, {"seeds_not_complete"}); bad && bad->get<double>() > 0)
        seeds += fmt::format(" ({} not complete)", bad->dump());
      t.rows.push_back({str(s, "label"), str(s, "optimizer_type"), str(s, "baseline"), seeds,
                        mean_std(s, "final_test_accuracy", 100, " %"),
                        mean_std(s, "gap_to_baseline_points", 1, ""),
                        mean_std(s, "final_train_set_loss", 1, "", 4),
                        comm ? format_number(comm->get<double>()) + "x" : kDash});
    }
    doc.table(std::move(t));
    any = true;
  }
  if (!any) doc.paragraph("Convergence gaps: no clbo.train/1 results under " + store.dir() + ".");
}

void kernel_tables(Document& doc, const ResultsStore& store) {
  bool any = false;
  std::vector<const ResultsFile*> files = store.with_schema("clbo.bench.kernels/2");
  for (const ResultsFile* f : store.with_schema("clbo.bench.kernels/1")) files.push_back(f);
  for (const ResultsFile* f : files) {
    // /2 is Google Benchmark's own JSON; /1 wrapped it under "benchmark".
    const json& bench = f->doc.contains("benchmark") ? f->doc["benchmark"] : f->doc;
    if (!bench.is_object() || !bench.contains("benchmarks") || !bench["benchmarks"].is_array())
      continue;
    const json* list = &bench["benchmarks"];
    Table t;
    t.title = "Kernel roofline fractions: " + f->key;
    t.caption =
        "Measured Google Benchmark rates: the minimum bytes each kernel must move, and "
        "that rate as a fraction of a copy's bandwidth on the same machine, from " +
        f->path + ".";
    t.header = {"benchmark", "min bytes/elem", "GB/s", "fraction of copy bandwidth"};
    t.right_align = {false, true, true, true};
    for (const auto& b : *list) {
      if (!b.is_object() || b.value("run_type", "iteration") != "iteration") continue;
      const json* per_elem = number_at(b, {"min_bytes_per_elem"});
      const json* rate = number_at(b, {"bytes_per_second"});
      if (!rate) rate = number_at(b, {"bytes_per_s"});
      const json* frac = number_at(b, {"frac_of_copy_bw"});
      t.rows.push_back(
          {str(b, "name"),
           per_elem ? fmt::format("{}", per_elem->get<double>()) : kDash,  // exact counts
           rate ? format_number(rate->get<double>() / 1e9) : kDash,
           frac ? format_number(frac->get<double>()) : kDash});
    }
    doc.table(std::move(t));
    any = true;
  }
  if (!any)
    doc.paragraph("Kernel roofline fractions: no clbo.bench.kernels results under " + store.dir() +
                  " (run `clbo bench kernels -o " + store.dir() + "/bench`).");
}

// The first of the dotted paths the row has as a number ("time_us", or an out-of-place half
// "out_of_place.time_us" as nccl-tests splits its columns).
const json* first_number(const json& row,
                         std::initializer_list<std::initializer_list<const char*>> paths) {
  for (const auto& p : paths)
    if (const json* v = number_at(row, p)) return v;
  return nullptr;
}

// Collective sweeps: per results file and (op, algorithm, type) the largest message measured,
// where bandwidth, not latency, decides.
void collective_tables(Document& doc, const ResultsStore& store) {
  Table t;
  t.title = "Collective benchmarks";
  t.caption =
      "Measured by clbo bench collectives: per results file and op, the largest message of the "
      "sweep, its time per call and bus bandwidth (nccl-tests' busbw; compressed ops: wire "
      "bytes / time).";
  t.header = {"results file", "op",    "algorithm", "type",
              "ranks",        "bytes", "time (us)", "busbw (GB/s)"};
  t.right_align = {false, false, false, false, true, true, true, true};
  for (const ResultsFile* f : store.with_schema("clbo.bench.collectives/1")) {
    if (!f->doc.contains("rows") || !f->doc["rows"].is_array()) continue;
    std::vector<std::string> order;
    std::map<std::string, const json*> largest;
    for (const auto& r : f->doc["rows"]) {
      const json* size = first_number(r, {{"size_bytes"}, {"size"}});
      if (!size) continue;
      const std::string key = str(r, "op") + "|" + str(r, "algorithm") + "|" + str(r, "type");
      if (!largest.count(key)) order.push_back(key);
      const json* best =
          largest.count(key) ? first_number(*largest[key], {{"size_bytes"}, {"size"}}) : nullptr;
      if (!best || size->get<double>() > best->get<double>()) largest[key] = &r;
    }
    std::string ranks = kDash;
    if (const json* p = number_at(f->doc, {"backend", "p"})) ranks = p->dump();
    for (const auto& key : order) {
      const json& r = *largest[key];
      const json* time = first_number(r, {{"time_us"}, {"out_of_place", "time_us"}});
      const json* busbw = first_number(r, {{"busbw_GBps"}, {"out_of_place", "busbw_GBps"}});
      t.rows.push_back(
          {f->path, str(r, "op"), str(r, "algorithm"), str(r, "type"), ranks,
           fmt::format("{:.0f}", first_number(r, {{"size_bytes"}, {"size"}})->get<double>()),
           time ? format_number(time->get<double>()) : kDash,
           busbw ? format_number(busbw->get<double>()) : kDash});
    }
  }
  if (t.rows.empty())
    doc.paragraph("Collective benchmarks: no clbo.bench.collectives/1 results under " +
                  store.dir() + ".");
  else
    doc.table(std::move(t));
}

}  // namespace

Document summary_document(const ResultsStore& store) {
  Document doc;
  doc.title = "clbo results summary";
  doc.paragraph("Generated by `clbo report` from the results files under " + store.dir() +
                "; it reads results only and reruns nothing.");
  doc.heading("Volume per optimizer");
  volume_table(doc, store);
  doc.heading("Speedup per cluster");
  speedup_tables(doc, store);
  doc.heading("Convergence gaps");
  convergence_tables(doc, store);
  doc.heading("Kernel roofline fractions");
  kernel_tables(doc, store);
  doc.heading("Collective benchmarks");
  collective_tables(doc, store);
  return doc;
}

}  // namespace clbo::report
