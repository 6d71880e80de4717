#include "clbo/report/validation.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "clbo/core/error.hpp"
#include "clbo/report/summary.hpp"

namespace clbo::report {

using nlohmann::json;

namespace {

const std::string kDash = "–";

std::string pct(const json& v) {
  return v.is_number() ? fmt::format("{:.1f}%", 100 * v.get<double>()) : kDash;
}

std::string signed_pct(const json& v) {
  if (!v.is_number()) return kDash;
  const std::string s = fmt::format("{:+.1f}%", 100 * v.get<double>());
  return s == "-0.0%" || s == "+0.0%" ? "0.0%" : s;
}

std::string num(const json& v) {
  return v.is_number() ? format_number(v.get<double>()) : kDash;
}

std::string count(const json& v) {
  return v.is_number_integer() ? std::to_string(v.get<int64_t>()) : num(v);
}

// A time in milliseconds (the cases run from 0.1 ms to seconds, and three decimals of a second
// would show 1.40 ms as 0.001): format_number's digits, and three significant ones below 0.1.
std::string ms(const json& v) {
  if (!v.is_number()) return kDash;
  const double x = v.get<double>() * 1e3;
  return std::abs(x) >= 0.1 ? format_number(x) : fmt::format("{:.3g}", x);
}

// Sizes are powers of two: "4 MiB", "64 KiB"; other byte counts keep three digits.
std::string bytes(const json& v) {
  if (!v.is_number()) return kDash;
  const double b = v.get<double>();
  auto in = [](double x, const char* unit) {
    return x == std::floor(x) ? fmt::format("{:.0f} {}", x, unit)
                              : fmt::format("{} {}", format_number(x), unit);
  };
  if (b >= (1 << 20)) return in(b / (1 << 20), "MiB");
  if (b >= (1 << 10)) return in(b / (1 << 10), "KiB");
  return in(b, "B");
}

const json& need(const json& j, const char* key, const ResultsFile& f) {
  if (!j.is_object() || !j.contains(key))
    throw InputError(f.path, key, "missing", "not a complete clbo.validate/1 results file");
  return j[key];
}

std::string case_name(const json& c) {
  const std::string op = c.value("op", "?");
  if (op == "step")
    return fmt::format("step: {} ({})", c.value("optimizer", "?"), c.value("phase", "?"));
  return c.contains("algo") && c["algo"].is_string()
             ? op + " (" + c["algo"].get<std::string>() + ")"
             : op;
}

std::string yes_no(const json& v) {
  return v.is_boolean() ? (v.get<bool>() ? "met" : "not met") : kDash;
}

// "a, b, c" from a JSON array of strings.
std::string joined(const json& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n.get<std::string>();
  return out;
}

void summary_table(Document& doc, const ResultsFile& f) {
  const json& s = need(f.doc, "summary", f);
  Table t;
  t.title = "Summary: " + f.key;
  t.caption = "Source: " + f.path + ". |relative error| = |simulated − measured| / measured.";
  t.header = {"cases", "count", "median |error|", "max |error|"};
  t.right_align = {false, true, true, true};
  auto row = [&](const std::string& name, const json& st) {
    t.rows.push_back({name, count(st.value("cases", json())),
                      pct(st.value("median_abs_rel_error", json())),
                      pct(st.value("max_abs_rel_error", json()))});
  };
  row("bandwidth-bound (all ops)", need(s, "bandwidth_bound", f));
  if (s.contains("by_op"))
    for (const auto& [op, v] : s["by_op"].items())
      if (v.contains("bandwidth_bound")) row("  bandwidth-bound: " + op, v["bandwidth_bound"]);
  row("latency-bound (all ops)", need(s, "latency_bound", f));
  if (s.contains("compute_bound")) row("compute-bound (all ops)", s["compute_bound"]);
  auto within = [&](const json& n) {
    return n.is_number_integer() ? fmt::format(" ({} within ±15%)", n.get<int64_t>()) : "";
  };
  row("optimizer steps" + within(s.value("steps_within_15pct", json())), need(s, "steps", f));
  // Runs since 2026-12-06 also simulate the steps with the steps job's own compute.
  if (s.contains("steps_with_job_compute") && s["steps_with_job_compute"].is_object()) {
    const json& j = s["steps_with_job_compute"];
    row("  with the steps job's own compute" + within(j.value("within_15pct", json())),
        j.value("stats", json::object()));
  }
  // Runs since 2026-12-05 also score the kernel model inside the collectives.
  if (s.contains("kernels") && s["kernels"].contains("by_op"))
    for (const auto& [op, v] : s["kernels"]["by_op"].items())
      row("  compression kernels' time: " + op + " (every case, median signed " +
              signed_pct(v.value("median_rel_error", json())) + ")",
          v);
  doc.table(t);
  const json& tg = s.value("target", json::object());
  doc.paragraph(fmt::format(
      "Target ({}): dense allreduce {}, compressed allreduce {}, optimizer steps {}.",
      tg.value("definition", std::string("see docs/validation.md")),
      yes_no(tg.value("dense_allreduce_met", json())),
      yes_no(tg.value("compressed_allreduce_met", json())), yes_no(tg.value("steps_met", json()))));
  // Runs since 2026-12-05 record the CPU the hypervisor took during each case's job.
  if (s.contains("steal") && s["steal"].value("max_share", json()).is_number()) {
    const json& st = s["steal"];
    const std::string clusters = joined(st.value("clusters_over", json::array()));
    doc.paragraph(fmt::format(
        "Stolen CPU: {} cases were measured while the hypervisor took over {} of the CPUs "
        "(at most {}{}); they still score, on a slower machine than their probes describe.",
        st.value("cases_over", 0), pct(st.value("threshold", json())),
        pct(st.value("max_share", json())), clusters.empty() ? "" : "; clusters " + clusters));
    // Since 2026-12-06: the link probes' own steal, which slows every case's preset.
    const std::string probed = joined(st.value("probe_clusters_over", json::array()));
    if (!probed.empty())
      doc.paragraph(fmt::format(
          "Stolen CPU during the link probes (every host streaming at once) of clusters {}: "
          "their presets' rates are slower than the links, and every case of theirs was "
          "simulated on them.",
          probed));
  }
  // Since 2026-12-06: clusters whose links the machine's CPUs bound ("Which clusters").
  if (s.contains("network_cpu")) {
    const json& net = s["network_cpu"];
    const std::string bound = joined(net.value("cpu_bound_clusters", json::array()));
    if (!bound.empty())
      doc.paragraph(fmt::format(
          "CPU-bound links: clusters {} (the CPUs idle under {} while every host streamed at "
          "its link's rate): their errors test the machine's packet processing, which the "
          "simulator does not model, more than the network model.",
          bound, pct(net.value("idle_threshold", json()))));
  }
}

// "5.66 KiB 1.00, 64 KiB 0.760, ..." from all_pairs_efficiency_by_bytes; a dash when empty.
std::string by_bytes(const json& rows) {
  std::vector<std::string> parts;
  if (rows.is_array())
    for (const auto& r : rows)
      parts.push_back(bytes(r.value("bytes_per_pair", json())) + " " +
                      num(r.value("efficiency", json())));
  return parts.empty() ? kDash : fmt::format("{}", fmt::join(parts, ", "));
}

void clusters_table(Document& doc, const ResultsFile& f) {
  Table t;
  t.title = "Emulated clusters and their presets: " + f.key;
  t.caption =
      "Measured by the run's probes (TCP ping-pong and bulk flows, MPI ping-pong); the "
      "simulated preset is built from them and from the emulation's parameters only.";
  t.header = {"cluster",
              "ranks",
              "link",
              "achieved fraction",
              "TCP one-way",
              "MPI one-way",
              "uplink achieved",
              "all-pairs efficiency",
              "by bytes per pair (warm rounds)",
              "CPU contention",
              "load (1 min)"};
  t.right_align = {false, true, true, true, true, true, true, true, false, true, true};
  for (const auto& c : need(f.doc, "clusters", f)) {
    const json& cfg = c.value("config", json::object());
    const json& l = c.value("links", json::object());
    const json& pre = c.value("preset", json::object());
    const json& em = c.value("emulation", json::object());
    const int ranks = cfg.value("hosts", 0) * cfg.value("ranks_per_host", 0);
    t.rows.push_back({c.value("id", std::string("?")), std::to_string(ranks),
                      num(cfg.value("link_Mbps", json())) + " Mbit/s",
                      num(pre.value("fabric", json::object()).value("achievable_fraction", json())),
                      num(l.value("tcp_half_rtt_us", json())) + " µs",
                      num(l.value("mpi_half_rtt_us", json())) + " µs",
                      l.value("uplink_achieved_Mbps", json()).is_number()
                          ? num(l["uplink_achieved_Mbps"]) + " Mbit/s"
                          : kDash,
                      num(c.value("all_pairs_efficiency", json())),
                      by_bytes(c.value("all_pairs_efficiency_by_bytes", json::array())),
                      num(c.value("cpu_contention", json())),
                      em.contains("loadavg_after") ? num(em["loadavg_after"][0]) : kDash});
  }
  doc.table(t);
  // Runs since 2026-12-06 record the emulated hosts' TCP congestion control, which shapes
  // how flows share a link (docs/validation.md, "TCP congestion control").
  std::set<std::string> tcp;
  for (const auto& c : need(f.doc, "clusters", f)) {
    const json& rec = c.value("emulation", json::object()).value("tcp", json::object());
    if (rec.value("congestion_control", json()).is_string())
      tcp.insert(rec["congestion_control"].get<std::string>() + " (" +
                 rec.value("set_by", std::string("?")) + ")");
  }
  if (!tcp.empty())
    doc.paragraph(
        fmt::format("TCP congestion control on the emulated hosts: {}.", fmt::join(tcp, "; ")));
}

void cases_table(Document& doc, const ResultsFile& f) {
  Table t;
  t.title = "Every case: " + f.key;
  t.caption =
      "measured_s: measured on the emulated cluster; simulated_s: clbo's simulator on "
      "the generated preset; bound: latency-bound when latency is over 20% of the "
      "simulated time, else compute-bound when computing is over half of it.";
  t.header = {"cluster", "case", "bytes", "measured (ms)", "simulated (ms)", "error", "bound"};
  t.right_align = {false, false, true, true, true, true, false};
  for (const auto& c : need(f.doc, "cases", f))
    t.rows.push_back({c.value("cluster", std::string("?")), case_name(c),
                      bytes(c.value("bytes", json())), ms(c.value("measured_s", json())),
                      ms(c.value("simulated_s", json())), signed_pct(c.value("rel_error", json())),
                      c.value("bound", std::string(kDash))});
  doc.table(t);
}

// " Kernel K, CPU C, idle driver D (guest halt polling N ns)." from machine.facts (since
// 2026-12-06: what sets the emulation's latencies besides the CPU count); "" without it.
std::string facts_sentence(const json& f) {
  if (!f.is_object()) return "";
  auto text = [&](const char* k) {
    return f.contains(k) && f[k].is_string() ? f[k].get<std::string>() : std::string(kDash);
  };
  return fmt::format(" Kernel {}, CPU {}, idle driver {} (guest halt polling {} ns).",
                     text("kernel"), text("cpu_model"), text("cpuidle_driver"),
                     text("guest_halt_poll_ns"));
}

// A results folder's `runs/` holds a grid's earlier runs, kept for `--repeatability`: each is
// named with its headline numbers, not rendered in full again.
bool is_kept_run(const ResultsFile& f) {
  return f.key.find("/runs/") != std::string::npos;
}

void kept_runs_table(Document& doc, const std::vector<const ResultsFile*>& runs) {
  Table t;
  t.title = "Earlier runs of the grids";
  t.caption =
      "Kept under a runs/ folder for the repeatability comparison (clbo validate "
      "--repeatability); each as its file scores it.";
  t.header = {"run", "dense bandwidth-bound median / max", "compressed median / max",
              "steps within ±15%"};
  t.right_align = {false, true, true, true};
  for (const ResultsFile* f : runs) {
    const json& s = need(f->doc, "summary", *f);
    auto family = [&](const char* name) {
      const json& b = s.value("by_op", json::object())
                          .value(name, json::object())
                          .value("bandwidth_bound", json::object());
      return pct(b.value("median_abs_rel_error", json())) + " / " +
             pct(b.value("max_abs_rel_error", json()));
    };
    t.rows.push_back({f->key, family("dense_allreduce"), family("compressed_allreduce"),
                      count(s.value("steps_within_15pct", json())) + " of " +
                          count(s.value("steps", json::object()).value("cases", json()))});
  }
  doc.table(t);
}

void repeatability_table(Document& doc, const ResultsFile& f) {
  const json& groups = need(f.doc, "groups", f);
  Table t;
  t.title = "Repeatability: " + f.key;
  t.caption = fmt::format(
      "Source: {}. The grid measured {} times, {} cases in every run. spread: per case the "
      "largest measured time over the smallest, less 1. other runs' median: each run scored "
      "against the median of the other runs' measurements of the same case (the run-to-run "
      "noise, the least error a model of the typical time can expect on one run); "
      "simulator: the run's own |error|; median over the runs: each case's error, median over "
      "the runs (the model against its typical measurement), and how many cases erred the "
      "same way in every run. median / max |error| (steps: within ±15%).",
      f.path, f.doc.value("runs", json::array()).size(),
      count(f.doc.value("cases_in_every_run", json())));
  for (const json& w : f.doc.value("warnings", json::array()))
    if (w.is_string()) t.caption += " Warning: " + w.get<std::string>() + ".";
  t.header = {"group", "cases", "spread median / max", "run", "other runs' median", "simulator"};
  t.right_align = {false, true, true, false, true, true};
  auto cell = [](const json& st) {
    std::string c = pct(st.value("median_abs_rel_error", json())) + " / " +
                    pct(st.value("max_abs_rel_error", json()));
    if (st.contains("within_15pct"))
      c += " (" + count(st["within_15pct"]) + " of " + count(st.value("cases", json())) + ")";
    return c;
  };
  for (const auto& [name, g] : groups.items()) {
    bool first = true;
    for (const json& r : g.value("per_run", json::array())) {
      const json& sp = g.value("spread", json::object());
      t.rows.push_back(
          {first ? name : "", first ? count(g.value("cases", json())) : "",
           first ? pct(sp.value("median", json())) + " / " + pct(sp.value("max", json())) : "",
           r.value("file", std::string("?")), cell(r.value("other_runs_median", json::object())),
           cell(r.value("simulator", json::object()))});
      first = false;
    }
    // Since the first comparison: the model against each case's typical measurement.
    if (g.contains("simulator_over_runs")) {
      const json& o = g["simulator_over_runs"];
      t.rows.push_back({"", "", "",
                        "median over the runs (" +
                            count(o.value("same_sign_in_every_run", json())) +
                            " of one sign in every run)",
                        kDash, cell(o)});
    }
  }
  doc.table(t);
}

}  // namespace

bool has_validation(const ResultsStore& store) {
  return !store.with_schema("clbo.validate/1").empty();
}

Document validation_document(const ResultsStore& store) {
  Document doc;
  doc.title = "The simulator against an emulated TCP cluster";
  doc.paragraph(
      "Generated by `clbo report` from the clbo.validate/1 results under " + store.dir() +
      " (made by `clbo validate`, docs/validation.md). Each case was measured with the real "
      "MPI collectives or optimizer steps across Mininet hosts with shaped links, and "
      "simulated on a cluster preset generated from that emulation's parameters and its "
      "measured latency and rate.");
  std::vector<const ResultsFile*> kept;
  for (const ResultsFile* f : store.with_schema("clbo.validate/1")) {
    if (is_kept_run(*f)) {
      kept.push_back(f);
      continue;
    }
    doc.heading(f->key);
    const json& m = f->doc.value("machine", json::object());
    if (m.contains("load_average_start"))
      doc.paragraph(fmt::format("Machine: {} CPUs; load average {} at the start, {} at the end.{}",
                                m.value("cpus", 0), num(m["load_average_start"][0]),
                                num(m.value("load_average_end", json::array({json()}))[0]),
                                facts_sentence(m.value("facts", json()))));
    summary_table(doc, *f);
    clusters_table(doc, *f);
    cases_table(doc, *f);
  }
  const auto compared = store.with_schema("clbo.validate.repeatability/1");
  if (!kept.empty() || !compared.empty()) doc.heading("Repeatability");
  if (!kept.empty()) kept_runs_table(doc, kept);
  for (const ResultsFile* f : compared) repeatability_table(doc, *f);
  return doc;
}

}  // namespace clbo::report
