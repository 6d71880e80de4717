// `clbo report` end to end: it writes paper, headline and summary files and a count line;
// --check-specs needs no results; and every bad input (missing results folder, corrupt or
// unsupported results file, stale results, bad spec) exits nonzero with nothing written.
#include <gtest/gtest.h>

#include "cli_harness.hpp"
#include "report_test_util.hpp"

namespace clbo::report::test {
namespace {

class ReportCli : public clbo::test::CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    fs::create_directories(path("specs"));
    fs::create_directories(path("results/paper"));
    json c = claim("onebit.speedup.64",
                   {{"op", "value"}, {"a", sel("1-bit Adam", 64, "simulated.speedup")}});
    c["headline"] = true;
    write_json("specs/demo-claims.json", spec_with({c}));
    write_json("results/paper/demo-claims.json", sim_results());
  }
  clbo::test::CliResult report(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"report",      path("results"), "--specs",
                                     path("specs"), "--out",         path("reports")};
    args.insert(args.end(), extra.begin(), extra.end());
    return run(args);
  }
  void write_text(const std::string& rel, const std::string& text) const {
    fs::create_directories(fs::path(path(rel)).parent_path());
    std::ofstream(path(rel)) << text;
  }
  void write_json(const std::string& rel, const json& j) const { write_text(rel, j.dump(2)); }
  bool wrote_nothing() const { return !fs::exists(path("reports")); }
};

TEST_F(ReportCli, WritesPaperHeadlineAndSummaryWithACount) {
  const auto r = report();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* f : {"paper.md", "headline.md", "summary.md"})
    EXPECT_TRUE(fs::exists(path(std::string("reports/") + f))) << f;
  EXPECT_NE(r.out.find("wrote " + path("reports/paper.md")), std::string::npos) << r.out;
  EXPECT_NE(
      r.out.find("1 rows: 1 within the target band, 0 outside, 0 not computed, 0 without a band"),
      std::string::npos)
      << r.out;
  EXPECT_NE(clbo::test::slurp(path("reports/headline.md")).find("| 3.3x | 3.20x | -3.0% | ✓ |"),
            std::string::npos);
  const auto csv = report({"--format", "csv"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_TRUE(fs::exists(path("reports/paper.csv")));
  const auto tex = report({"--format", "tex"});
  ASSERT_EQ(tex.exit_code, 0) << tex.err;
  EXPECT_TRUE(fs::exists(path("reports/summary.tex")));
  // Same inputs, same bytes.
  const std::string first = clbo::test::slurp(path("reports/paper.md"));
  ASSERT_EQ(report().exit_code, 0);
  EXPECT_EQ(clbo::test::slurp(path("reports/paper.md")), first);
}

TEST_F(ReportCli, CheckSpecsNeedsNoResultsAndFailsOnABadSpec) {
  auto r = run({"report", "--check-specs", "--specs", path("specs")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("1 specs, 1 claims, all valid"), std::string::npos) << r.out;
  json bad = spec_with({claim("x", {{"op", "valeu"}})});
  write_json("specs/demo-claims.json", bad);
  r = run({"report", "--check-specs", "--specs", path("specs")});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("claims[0].metric.op"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("did you mean 'value'"), std::string::npos) << r.err;
  r = report();
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(wrote_nothing());
}

TEST_F(ReportCli, BadResultsWriteNothing) {
  auto r = run({"report", path("nowhere"), "--specs", path("specs"), "--out", path("reports")});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("nowhere"), std::string::npos) << r.err;
  EXPECT_TRUE(wrote_nothing());

  write_text("results/sim/broken.json", "{\"schema\":");
  r = report();
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("sim/broken.json"), std::string::npos) << r.err;
  EXPECT_TRUE(wrote_nothing());
  fs::remove(path("results/sim/broken.json"));

  json v2 = sim_results();
  v2["schema"] = "clbo.simulate/2";
  write_json("results/sim/v2.json", v2);
  r = report();
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("not supported by this clbo"), std::string::npos) << r.err;
  EXPECT_TRUE(wrote_nothing());
  fs::remove(path("results/sim/v2.json"));

  json changed = sim_block();
  changed["gpus"] = {64};
  write_json("results/paper/demo-claims.json", sim_results(changed));
  r = report();
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("is stale"), std::string::npos) << r.err;
  EXPECT_TRUE(wrote_nothing());

  // The spec's own simulate block, run with a --set edit: config.simulate matches the spec but
  // the runs do not hold what the claim reads.
  json edited = sim_results();
  edited["command_line"] = {
      {"set", {{{"field", "micro_batch"}, {"path", "simulate.micro_batch"}, {"values", {8}}}}}};
  write_json("results/paper/demo-claims.json", edited);
  r = report();
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("command-line changes"), std::string::npos) << r.err;
  EXPECT_TRUE(wrote_nothing());

  // A spec that reads a file the folder has and one it lacks: the missing one is named.
  write_json("results/paper/demo-claims.json", sim_results());
  json c = claim("onebit.elsewhere",
                 {{"op", "value"}, {"a", sel("1-bit Adam", 64, "simulated.speedup")}});
  c["metric"]["a"]["results"] = "sim/not-there";
  json two = spec_with(
      {claim("onebit.here", {{"op", "value"}, {"a", sel("1-bit Adam", 64, "simulated.speedup")}}),
       c});
  write_json("specs/demo-claims.json", two);
  r = report();
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("sim/not-there.json does not exist"), std::string::npos) << r.err;
  EXPECT_TRUE(wrote_nothing());

  fs::remove(path("results/paper/demo-claims.json"));
  r = report();
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("holds no results file"), std::string::npos) << r.err;
  EXPECT_TRUE(wrote_nothing());
}

// A user's own results: no spec reads them, so the report is the summary alone (no paper
// tables), from a folder or from one file; a file that is not a clbo result is named.
TEST_F(ReportCli, OwnResultsGiveTheSummaryAlone) {
  json mine = sim_results();
  mine["config"] = {{"name", "my-run"}, {"simulate", {{"gpus", {16, 64}}}}};
  write_json("mine/sim/my-run.json", mine);
  write_json("mine/train/smoke.json", train_results());
  auto r = run({"report", path("mine"), "--specs", path("specs"), "--out", path("reports")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("no paper claims"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(path("reports/paper.md")));
  EXPECT_FALSE(fs::exists(path("reports/headline.md")));
  const std::string summary = clbo::test::slurp(path("reports/summary.md"));
  EXPECT_NE(summary.find("Speedup per cluster: sim/my-run"), std::string::npos) << summary;
  EXPECT_NE(summary.find("Convergence gaps: train/smoke"), std::string::npos) << summary;

  fs::remove_all(path("reports"));
  r = run(
      {"report", path("mine/sim/my-run.json"), "--specs", path("specs"), "--out", path("reports")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(clbo::test::slurp(path("reports/summary.md")).find("Speedup per cluster: my-run"),
            std::string::npos);

  // The paper folder beside a spec whose results are absent: that spec is skipped, by name.
  write_json(
      "specs/other-claims.json",
      spec_with(
          {claim("other.x", {{"op", "value"}, {"a", sel("1-bit Adam", 64, "simulated.speedup")}})},
          "other-claims"));
  r = report();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("skipped 1 specs whose results are not under"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("other-claims"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 rows: 1 within"), std::string::npos) << r.out;

  fs::remove_all(path("reports"));
  write_text("mine/ds_config.json", R"({"train_batch_size": 4096})");
  r = run({"report", path("mine"), "--specs", path("specs"), "--out", path("reports")});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("ds_config.json"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("not a clbo results file"), std::string::npos) << r.err;
  EXPECT_TRUE(wrote_nothing());
}

// A clbo.validate/1 file adds validation.md: the summary against the targets, the clusters
// and every case; without one there is no validation file.
TEST_F(ReportCli, ValidationResultsGiveAValidationReport) {
  ASSERT_EQ(report().exit_code, 0);
  EXPECT_FALSE(fs::exists(path("reports/validation.md")));
  const json stats = {{"cases", 1}, {"median_abs_rel_error", 0.05}, {"max_abs_rel_error", 0.05}};
  const json none = {
      {"cases", 0}, {"median_abs_rel_error", nullptr}, {"max_abs_rel_error", nullptr}};
  json v = {{"schema", "clbo.validate/1"},
            {"machine",
             {{"cpus", 2},
              {"load_average_start", {0.4, 0.3, 0.2}},
              {"load_average_end", {0.5, 0.4, 0.3}}}},
            {"clusters",
             {{{"id", "ss-h4-r1-200M"},
               {"config", {{"hosts", 4}, {"ranks_per_host", 1}, {"link_Mbps", 200}}},
               {"links", {{"tcp_half_rtt_us", 20.0}, {"mpi_half_rtt_us", 60.0}}},
               {"preset", {{"fabric", {{"achievable_fraction", 0.95}}}}},
               {"cpu_contention", 2.0},
               {"all_pairs_efficiency", 0.97},
               {"all_pairs_efficiency_by_bytes",
                {{{"bytes_per_pair", 65536}, {"efficiency", 0.76}},
                 {{"bytes_per_pair", 4194304}, {"efficiency", 0.97}}}},
               {"emulation",
                {{"loadavg_after", {0.5, 0.4, 0.3}},
                 {"tcp", {{"congestion_control", "reno"}, {"set_by", "the plan"}}}}}}}},
            {"cases",
             {{{"cluster", "ss-h4-r1-200M"},
               {"op", "allreduce"},
               {"algo", "ring"},
               {"bytes", 4194304},
               {"measured_s", 0.28},
               {"simulated_s", 0.266},
               {"rel_error", -0.05},
               {"bound", "bandwidth"}},
              // Sub-millisecond cases keep three significant digits.
              {{"cluster", "ss-h4-r1-200M"},
               {"op", "compressed"},
               {"algo", "gather"},
               {"bytes", 1048576},
               {"measured_s", 0.0014},
               {"simulated_s", 0.0000872},
               {"rel_error", -0.938},
               {"bound", "latency"}}}},
            {"summary",
             {{"bandwidth_bound", stats},
              {"latency_bound", none},
              {"steps", none},
              {"by_op", {{"dense_allreduce", {{"bandwidth_bound", stats}}}}},
              {"target",
               {{"dense_allreduce_met", true},
                {"compressed_allreduce_met", false},
                {"steps_met", false}}}}}};
  write_json("results/validation/quick.json", v);
  const auto r = report();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string md = clbo::test::slurp(path("reports/validation.md"));
  EXPECT_NE(md.find("| ss-h4-r1-200M | allreduce (ring) | 4 MiB | 280 | 266 | -5.0% | bandwidth |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| compressed (gather) | 1 MiB | 1.40 | 0.0872 | -93.8% | latency |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| 0.970 | 64 KiB 0.760, 4 MiB 0.970 |"), std::string::npos) << md;
  EXPECT_NE(md.find("dense allreduce met, compressed allreduce not met"), std::string::npos) << md;
  EXPECT_NE(md.find("load average 0.400 at the start"), std::string::npos) << md;
  EXPECT_EQ(md.find("Kernel "), std::string::npos) << "no machine.facts: no sentence";
  EXPECT_EQ(md.find("Stolen CPU"), std::string::npos) << "no steal recorded: no line";
  EXPECT_NE(md.find("TCP congestion control on the emulated hosts: reno (the plan)."),
            std::string::npos)
      << md;
  // A run that recorded the hypervisor's steal says how many cases it touched, and where.
  v["summary"]["steal"] = {{"threshold", 0.05},
                           {"cases_over", 3},
                           {"max_share", 0.18},
                           {"clusters_over", json::array({"ss-h4-r1-200M"})}};
  // Each variant of the file is written, reported and read back.
  auto rendered = [&] {
    write_json("results/validation/quick.json", v);
    EXPECT_EQ(report().exit_code, 0);
    return clbo::test::slurp(path("reports/validation.md"));
  };
  const std::string stolen = rendered();
  EXPECT_NE(stolen.find("Stolen CPU: 3 cases were measured while the hypervisor took over 5.0% "
                        "of the CPUs (at most 18.0%; clusters ss-h4-r1-200M)"),
            std::string::npos)
      << stolen;
  EXPECT_EQ(stolen.find("during the link probes"), std::string::npos) << "none named: no line";
  // The measuring machine's facts (since 2026-12-06), a dash for one /sys lacked.
  v["machine"]["facts"] = {{"kernel", "6.1.0"},
                           {"cpu_model", "AMD EPYC"},
                           {"cpuidle_driver", "haltpoll"},
                           {"guest_halt_poll_ns", nullptr}};
  const std::string facts = rendered();
  EXPECT_NE(facts.find("at the end. Kernel 6.1.0, CPU AMD EPYC, idle driver haltpoll (guest "
                       "halt polling – ns)."),
            std::string::npos)
      << facts;
  // And the clusters whose link probes ran with stolen CPU, which slows all their cases.
  v["summary"]["steal"]["probe_clusters_over"] = json::array({"ss-h4-r1-100M"});
  const std::string probed = rendered();
  EXPECT_NE(probed.find("Stolen CPU during the link probes (every host streaming at once) of "
                        "clusters ss-h4-r1-100M:"),
            std::string::npos)
      << probed;
  EXPECT_EQ(probed.find("CPU-bound links"), std::string::npos) << "none named: no line";
  // And the clusters whose links the machine's CPUs bound.
  v["summary"]["network_cpu"] = {{"idle_threshold", 0.2},
                                 {"cpu_bound_clusters", json::array({"ss-h8-r1-200M"})}};
  const std::string cpu_bound = rendered();
  EXPECT_NE(cpu_bound.find("CPU-bound links: clusters ss-h8-r1-200M (the CPUs idle under 20.0% "
                           "while every host streamed at its link's rate)"),
            std::string::npos)
      << cpu_bound;
  // A grid's earlier runs under runs/ are listed by their headline numbers, not rendered in
  // full again; a repeatability comparison renders as one table.
  v["summary"]["by_op"]["compressed_allreduce"] = {{"bandwidth_bound", stats}};
  v["summary"]["steps_within_15pct"] = 0;
  write_json("results/validation/runs/quick-earlier.json", v);
  json group = {{"cases", 2},
                {"spread", {{"median", 0.1}, {"max", 0.3}}},
                {"per_run",
                 {{{"file", "a.json"},
                   {"other_runs_median",
                    {{"cases", 2}, {"median_abs_rel_error", 0.02}, {"max_abs_rel_error", 0.2}}},
                   {"simulator",
                    {{"cases", 2}, {"median_abs_rel_error", 0.05}, {"max_abs_rel_error", 0.25}}}}}},
                {"simulator_over_runs",
                 {{"cases", 2},
                  {"median_abs_rel_error", 0.04},
                  {"max_abs_rel_error", 0.08},
                  {"same_sign_in_every_run", 1}}}};
  write_json("results/validation/quick-repeatability.json",
             {{"schema", "clbo.validate.repeatability/1"},
              {"runs", json::array({{{"file", "a.json"}}, {{"file", "b.json"}}})},
              {"cases_in_every_run", 2},
              {"groups", {{"dense_allreduce/bandwidth", group}}}});
  const std::string repeated = rendered();
  EXPECT_EQ(repeated.find("## validation/runs/quick-earlier"), std::string::npos) << repeated;
  EXPECT_NE(repeated.find("| validation/runs/quick-earlier | 5.0% / 5.0% | 5.0% / 5.0% | 0 of 0 |"),
            std::string::npos)
      << repeated;
  EXPECT_NE(repeated.find("| dense_allreduce/bandwidth | 2 | 10.0% / 30.0% | a.json | 2.0% / "
                          "20.0% | 5.0% / 25.0% |"),
            std::string::npos)
      << repeated;
  EXPECT_NE(
      repeated.find("| median over the runs (1 of one sign in every run) | – | 4.0% / 8.0% |"),
      std::string::npos)
      << repeated;
  EXPECT_NE(repeated.find("The grid measured 2 times, 2 cases in every run."), std::string::npos)
      << repeated;
}

TEST_F(ReportCli, UnknownFormatIsRefused) {
  const auto r = report({"--format", "html"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(wrote_nothing());
}

}  // namespace
}  // namespace clbo::report::test
