// clbo validate's pieces without an emulation: the grid's expansion, the jobs it plans, the
// preset generated from measured links, and the summary's statistics and classification.
#include <gtest/gtest.h>

#include <fstream>

#include "clbo/core/error.hpp"
#include "clbo/core/layout.hpp"
#include "clbo/schedule/config.hpp"
#include "clbo/sim/projection.hpp"
#include "clbo/validate/compare.hpp"
#include "clbo/validate/kernel_contention.hpp"
#include "clbo/validate/model.hpp"
#include "clbo/validate/plan.hpp"
#include "clbo/validate/spec.hpp"

namespace clbo::validate {
namespace {

nlohmann::json grid() {
  return {{"clusters",
           {{{"topology", "single_switch"}, {"hosts", {2, 4}}, {"link_Mbps", {100, 200}}},
            {{"topology", "two_level"},
             {"hosts", 8},
             {"hosts_per_leaf", 4},
             {"oversubscription", 2},
             {"link_Mbps", 200},
             {"ranks_per_host", 2}}}},
          {"ops", {"allreduce:native", "allreduce:ring", "compressed:gather", "alltoall"}},
          {"sizes", {{"min", "64K"}, {"max", "16M"}, {"factor", 16}}},
          {"steps", {{"optimizers", {"Adam", "OneBitAdam"}}, {"steps", 6}}}};
}

// The least an emulation record holds for read_links: the TCP ping-pong, one bulk flow and
// every host sending at once; tests add the probes they are about.
nlohmann::json probes_record() {
  return {{"probes",
           {{"tcp_pingpong", {{"half_rtt_us", {{"median", 25.0}}}}},
            {"bulk_host_link", {{"steady_rate_Mbps", 190.0}}},
            {"bulk_all_hosts_at_once", {{{"steady_rate_Mbps", 190.0}}}}}}};
}

// A clbo bench collectives --collective pingpong result of `us` microseconds one way.
nlohmann::json pingpong_result(double us) {
  return {{"rows", {{{"op", "pingpong"}, {"time_us", us}}}}};
}

TEST(ValidateSpec, ListsExpandIntoClustersWithIdsAndUplinks) {
  const ValidationSpec s = parse_validation_spec(grid(), "g.json", 2, 24e9);
  ASSERT_EQ(s.clusters.size(), 5u);
  EXPECT_EQ(s.clusters[0].id, "ss-h2-r1-100M");
  EXPECT_EQ(s.clusters[3].id, "ss-h4-r1-200M");
  const ClusterConfig& t = s.clusters[4];
  EXPECT_EQ(t.id, "tl-h8-r2-200M-k4-o2");
  EXPECT_DOUBLE_EQ(t.uplink_Mbps, 400);  // 4 hosts x 200 Mbit/s / 2
  EXPECT_EQ(t.ranks(), 16);
  EXPECT_EQ(t.sizes.list(), (std::vector<uint64_t>{64u << 10, 1u << 20, 16u << 20}));
  EXPECT_TRUE(s.steps.enabled);
  EXPECT_EQ(s.nice, -10);
}

TEST(ValidateSpec, TheMachineBoundsTheGrid) {
  // 16 ranks need 2 CPUs at 8 per CPU; one CPU cannot host them.
  try {
    parse_validation_spec(grid(), "g.json", 1, 24e9);
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "clusters[1].ranks_per_host");
    EXPECT_EQ(e.value(), "2");
  }
  // Nor can 1 GB of memory hold 16 ranks of 16 MiB buffers and the dataset.
  EXPECT_THROW(parse_validation_spec(grid(), "g.json", 2, 1e9), InputError);
}

// The committed full grid's steps runs measure every kind of step of every optimizer at
// least twice besides its first step (which the comparison leaves out): a kind measured once
// is one sample of a noisy machine.
TEST(ValidatePlan, TheFullGridMeasuresEveryKindOfStepAtLeastTwice) {
  std::ifstream in(CLBO_SOURCE_DIR "/experiments/validation/full.json");
  ASSERT_TRUE(in.good());
  const ValidationSpec s = parse_validation_spec(nlohmann::json::parse(in), "full.json", 2, 24e9);
  ASSERT_TRUE(s.steps.enabled);
  ASSERT_EQ(s.steps.optimizers.size(), 6u);
  const ParamLayout layout = ParamLayout::from_sizes({1000, 24});
  for (const std::string& type : s.steps.optimizers) {
    const OptimizerConfig c = parse_optimizer_config(steps_optimizer(s, type), "plan");
    // The kinds the comparison groups the steps by (compare.cpp), each with its step count.
    const auto kinds = sim::step_kinds(c, layout, 4, s.steps.steps, DType::kF32);
    // The comparison leaves out the first step of each kind (its warm-up).
    for (const sim::StepKind& k : kinds)
      EXPECT_GE(k.count - 1, 2) << type << " " << to_string(k.schedule.phase);
    EXPECT_GE(kinds.size(), type == "ZeroOneAdam"              ? 4u
                            : type == "Adam" || type == "Lamb" ? 1u
                                                               : 2u)
        << type;
  }
}

// bench.min_time_s goes to every bench job as --min-time (none without it), and a value out
// of its range is an error naming bench.min_time_s.
TEST(ValidatePlan, BenchMinTimeReachesTheBenchJobsAndIsChecked) {
  const Tools t{"/bin/clbo", "/w", ""};
  auto bench_argv = [&](const ValidationSpec& s) {
    const nlohmann::json plan = emu_plan(s, t);
    return plan["clusters"][0]["jobs"][kPingpongLaunches]["argv"];
  };
  nlohmann::json g = grid();
  const auto none = bench_argv(parse_validation_spec(g, "g.json", 2, 24e9));
  EXPECT_EQ(std::find(none.begin(), none.end(), "--min-time"), none.end()) << none.dump();
  g["bench"] = {{"iters", 2}, {"min_time_s", 0.25}};
  const auto with = bench_argv(parse_validation_spec(g, "g.json", 2, 24e9));
  const auto at = std::find(with.begin(), with.end(), "--min-time");
  ASSERT_NE(at, with.end()) << with.dump();
  EXPECT_EQ(*(at + 1), "0.25");
  for (double bad : {-1.0, 61.0}) {
    g["bench"]["min_time_s"] = bad;
    try {
      parse_validation_spec(g, "g.json", 2, 24e9);
      ADD_FAILURE() << "expected an error for " << bad;
    } catch (const InputError& e) {
      EXPECT_EQ(e.field(), "bench.min_time_s") << e.what();
    }
  }
}

// Every cluster runs the warm-round TCP probe where clbo validate found it beside clbo, and
// none where it did not.
TEST(ValidatePlan, EveryClusterRunsTheWarmRoundProbeWhereItWasFound) {
  const ValidationSpec s = parse_validation_spec(grid(), "g.json", 2, 24e9);
  const nlohmann::json with = emu_plan(s, Tools{"/bin/clbo", "/w", "/bin/clbo-tcp-rounds"});
  for (const auto& c : with["clusters"])
    EXPECT_EQ(c["probes"].value("tcp_rounds", ""), "/bin/clbo-tcp-rounds") << c["id"];
  const nlohmann::json without = emu_plan(s, Tools{"/bin/clbo", "/w", ""});
  for (const auto& c : without["clusters"]) EXPECT_FALSE(c["probes"].contains("tcp_rounds"));
}

TEST(ValidatePlan, DefaultAndAlternativeAlgorithmsRunAsTwoJobs) {
  const ValidationSpec s = parse_validation_spec(grid(), "g.json", 2, 24e9);
  const Tools t{"/bin/clbo", "/w", ""};
  const auto jobs = bench_jobs(s, s.clusters[0], t);
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].ops.size(), 3u);  // allreduce:native, compressed:gather, alltoall
  EXPECT_EQ(jobs[1].ops.size(), 1u);  // allreduce:ring
  const nlohmann::json plan = emu_plan(s, t);
  const auto& pj = plan["clusters"][4]["jobs"];
  // Three launches of the pingpong between hosts and within one (2 ranks per host), each
  // to its own file, then the two bench jobs (timing only the half compared), the compute
  // calibrations (one rank alone, the cluster's 16 ranks at once) and the steps.
  ASSERT_EQ(pj.size(), 2u * kPingpongLaunches + 5u);
  for (int i = 0; i < kPingpongLaunches; ++i) {
    EXPECT_EQ(pj[2 * i]["np"], 16);  // every pair of the cluster's ranks at once
    EXPECT_EQ(pj[2 * i]["map_by"], "node");
    EXPECT_EQ(pj[2 * i + 1]["map_by"], "slot");
    EXPECT_EQ(pj[2 * i]["argv"].back(), pingpong_out(t, s.clusters[4], false, i));
  }
  EXPECT_EQ(pj[0]["argv"].back(), "/w/" + s.clusters[4].id + "/pingpong-net.json");
  EXPECT_EQ(pj[2]["argv"].back(), "/w/" + s.clusters[4].id + "/pingpong-net-2.json");
  const auto& bench = pj[2 * kPingpongLaunches]["argv"];
  EXPECT_NE(std::find(bench.begin(), bench.end(), "--halves"), bench.end()) << bench.dump();
  EXPECT_EQ(pj.back()["id"], "steps");
  EXPECT_EQ(pj.back()["np"], 16);
  // The calibrations run right before the steps, all their ranks on host 0.
  for (const bool alone : {true, false}) {
    const auto& cal = pj[pj.size() - (alone ? 3 : 2)];
    EXPECT_EQ(cal["id"], alone ? "calibration-alone" : "calibration");
    EXPECT_EQ(cal["np"], alone ? 1 : 16);
    EXPECT_EQ(cal["one_host"], true);
    EXPECT_EQ(cal["argv"][4], calibration_experiment_path(t, s.clusters[4], alone));
    EXPECT_EQ(cal["argv"][6], calibration_out(t, s.clusters[4], alone));
  }
  const nlohmann::json cexp = calibration_experiment(s, 16);
  EXPECT_EQ(cexp["workers"], 16);
  EXPECT_EQ(cexp["batch_size"], 16 * 256);
  EXPECT_EQ(cexp["runs"], steps_experiment(s, s.clusters[4])["runs"]);
  const nlohmann::json aexp = calibration_alone_experiment(s);
  EXPECT_EQ(aexp["workers"], 1);
  ASSERT_EQ(aexp["runs"].size(), 1u);
  EXPECT_EQ(aexp["runs"][0]["optimizer"]["type"], "Adam");
  // A cluster without steps in a grid with steps is still calibrated (its kernels' contention).
  nlohmann::json g = grid();
  g["clusters"][0]["steps"] = false;
  const ValidationSpec ns = parse_validation_spec(g, "g.json", 2, 24e9);
  const nlohmann::json nplan = emu_plan(ns, t);
  EXPECT_EQ(nplan["clusters"][0]["jobs"].back()["id"], "calibration");
  EXPECT_EQ(plan["nice"], -10);
  EXPECT_EQ(plan["steal_retries"], 0) << "measured once unless the grid asks";
  EXPECT_DOUBLE_EQ(plan["steal_threshold"].get<double>(), kStealShare);
  nlohmann::json rg = grid();
  rg["steal_retries"] = 2;
  EXPECT_EQ(emu_plan(parse_validation_spec(rg, "g.json", 2, 24e9), t)["steal_retries"], 2);
  rg["steal_retries"] = 4;
  try {
    parse_validation_spec(rg, "g.json", 2, 24e9);
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "steal_retries");
    EXPECT_EQ(e.value(), "4");
  }
  const nlohmann::json exp = steps_experiment(s, s.clusters[4]);
  EXPECT_EQ(exp["workers"], 16);
  EXPECT_EQ(exp["batch_size"], 16 * 256);
  EXPECT_EQ(exp["runs"][1]["optimizer"]["params"]["freeze_step"], 4);
  EXPECT_EQ(exp["evaluate"], false);  // only the steps' times are compared
}

// The emulated hosts run the grid's TCP congestion control (reno unless it says), which the
// plan carries to the emulation; a name that is not one, or one a namespace may not set on
// this machine, is an error naming the field before anything starts.
TEST(ValidateSpec, TheHostsRunTheGridsCongestionControl) {
  const Tools t{"/bin/clbo", "/w", ""};
  const ValidationSpec s = parse_validation_spec(grid(), "g.json", 2, 24e9);
  EXPECT_EQ(s.tcp_congestion_control, "reno");
  EXPECT_EQ(emu_plan(s, t)["tcp_congestion_control"], "reno");
  auto error_field = [](const nlohmann::json& g) -> std::string {
    try {
      parse_validation_spec(g, "g.json", 2, 24e9);
    } catch (const InputError& e) {
      return e.field() + "=" + e.value();
    }
    return "no error";
  };
  nlohmann::json g = grid();
  g["tcp_congestion_control"] = "reno; reboot";
  EXPECT_EQ(error_field(g), "tcp_congestion_control=reno; reboot");
  g["tcp_congestion_control"] = 3;
  EXPECT_NE(error_field(g).find("tcp_congestion_control"), std::string::npos);
  const std::vector<std::string> allowed = allowed_congestion_controls();
  if (allowed.empty()) GTEST_SKIP() << "the kernel lists no allowed congestion control here";
  g["tcp_congestion_control"] = "nosuchcc";
  EXPECT_EQ(error_field(g), "tcp_congestion_control=nosuchcc");
  g["tcp_congestion_control"] = allowed.back();
  EXPECT_EQ(emu_plan(parse_validation_spec(g, "g.json", 2, 24e9), t)["tcp_congestion_control"],
            allowed.back());
}

// The MPI latencies are the median over the ping-pong's launches (one launch's is bimodal);
// a work folder with one launch still reads.
TEST(ValidateModel, MpiLatencyIsTheMedianOverLaunches) {
  nlohmann::json record = probes_record();
  record["probes"]["bulk_all_hosts_at_once"] = {{{"steady_rate_Mbps", 180.0}},
                                                {{"steady_rate_Mbps", 186.0}}};
  auto pp = pingpong_result;
  const Links l = read_links(record, {pp(80), pp(21), pp(70)}, {pp(12), pp(40), pp(30)}, "c");
  EXPECT_DOUBLE_EQ(l.mpi_half_rtt_s, 70e-6);
  EXPECT_DOUBLE_EQ(l.mpi_lo_half_rtt_s, 30e-6);
  EXPECT_DOUBLE_EQ(l.tcp_half_rtt_s, 25e-6);
  EXPECT_DOUBLE_EQ(l.all_at_once_Mbps, 183.0);
  EXPECT_EQ(l.mpi_probe_ranks, 2);  // a result without its backend block: a two-rank probe
  nlohmann::json all8 = pp(90);
  all8["backend"] = {{"name", "mpi"}, {"p", 8}};
  EXPECT_EQ(read_links(record, {all8}, {}, "c").mpi_probe_ranks, 8);
  const Links one = read_links(record, {pp(21)}, {}, "c");
  EXPECT_DOUBLE_EQ(one.mpi_half_rtt_s, 21e-6);
  EXPECT_LT(one.mpi_lo_half_rtt_s, 0);
  EXPECT_THROW(read_links(record, {}, {}, "c"), clbo::Error);
}

// The uplink's achieved rate is its flows' bytes over their common span (the emulation's
// uplink_aggregate); a work folder from before has only the flows, whose steady rates it sums.
TEST(ValidateModel, TheUplinkRateIsItsFlowsBytesOverTheirSpan) {
  nlohmann::json record = probes_record();
  // Seen under reno through a 200 Mbit/s uplink: two flows starved, windows apart.
  record["probes"]["bulk_across_uplink"] = {{{"steady_rate_Mbps", 116.7}},
                                            {{"steady_rate_Mbps", 4.3}},
                                            {{"steady_rate_Mbps", 4.8}},
                                            {{"steady_rate_Mbps", 119.9}}};
  const nlohmann::json pp = pingpong_result(80.0);
  const Links old = read_links(record, {pp}, {}, "c");
  EXPECT_NEAR(old.uplink_Mbps, 245.7, 1e-9);
  EXPECT_NE(old.uplink_source.find("summed steady rate"), std::string::npos);
  record["probes"]["uplink_aggregate"] = {
      {"bytes", 59.7e6}, {"seconds", 2.5}, {"rate_Mbps", 191.04}};
  const Links now = read_links(record, {pp}, {}, "c");
  EXPECT_DOUBLE_EQ(now.uplink_Mbps, 191.04);
  // The preset says which of the two it used.
  const ValidationSpec s = parse_validation_spec(grid(), "g.json", 2, 24e9);
  ASSERT_EQ(s.clusters[4].topology, sim::TopologyKind::kTwoLevel);
  EXPECT_EQ(cluster_preset(s.clusters[4], now, 1.0)["topology"]["source"], now.uplink_source);
  EXPECT_EQ(now.uplink_source.find("summed"), std::string::npos);
}

// A 0/1 Adam steps run of five steps (sync, sync, local, sync, sync) as clbo train writes it;
// the first step is the slow warm-up (500 ms of gradient). Gradients 16, 17, 18 ms, then
// `last_gradient_s`; arithmetic 33, 12.9, 3.8, 8.4 and 38.5 ms.
nlohmann::json zero_one_steps_run(double last_gradient_s) {
  // Columns: step_s, gradient_s, optimizer_s, comm_s, compression_kernels_s.
  auto row = [](double grad, double opt, double comm, double kern) {
    return nlohmann::json::array({grad + opt, grad, opt, comm, kern});
  };
  return {
      {"optimizer_type", "ZeroOneAdam"},
      {"phase", {"sync_step", "sync_step", "local_step", "sync_step", "sync_step"}},
      {"timing",
       {{"steps",
         {{"columns", {"step_s", "gradient_s", "optimizer_s", "comm_s", "compression_kernels_s"}},
          {"rows",
           {row(0.5, 0.033, 0.001, 0.001), row(0.016, 0.0129, 0.0024, 0.0011),
            row(0.017, 0.0038, 0, 0), row(0.018, 0.0084, 0.0002, 0.001),
            row(last_gradient_s, 0.0385, 0.0002, 0.001)}}}}}}};
}

// The calibration takes medians over the steps after the first of each kind: one preempted
// step (a 0/1 Adam sync step of 37 ms beside 7 and 9 ms, seen) does not move it.
TEST(ValidateModel, CalibrationIsTheMedianOfTheSteadySteps) {
  const nlohmann::json run = zero_one_steps_run(0.019);
  const Calibration c =
      read_calibration({{"runs", {run}}, {"config", {{"workers", 4}}}}, "cal.json", "a test");
  EXPECT_EQ(c.ranks, 4);
  // sync steps after the first: 9.4, 7.2 and 37.3 ms of arithmetic; the median is 9.4 ms.
  EXPECT_NEAR(c.optimizer_s["ZeroOneAdam"]["sync_step"].get<double>(), 0.0094, 1e-12);
  EXPECT_NEAR(c.optimizer_s["ZeroOneAdam"]["local_step"].get<double>(), 0.0038, 1e-12);
  // gradients of the steps after the first: 16, 17, 18, 19 ms (not the first step's 500).
  EXPECT_NEAR(c.gradient_s, 0.0175, 1e-12);
  // Per kind, the same median over the kind's steady steps: the sync steps after the first
  // (16, 18 and 19 ms) and the one local step (17 ms, its only one, so kept), each as the
  // job's own compute over the same steps measures it.
  EXPECT_NEAR(c.gradient_kind["ZeroOneAdam"]["sync_step"].get<double>(), 0.018, 1e-12);
  EXPECT_NEAR(c.gradient_kind["ZeroOneAdam"]["local_step"].get<double>(), 0.017, 1e-12);
  EXPECT_EQ(c.gradient_kind["ZeroOneAdam"]["sync_step"].get<double>(),
            job_compute(run, {1, 3, 4}, "steps.json").gradient_s);
  EXPECT_EQ(c.to_json()["gradient_by_kind_s"], c.gradient_kind);
  // The communication floor, the same median of the step less its gradient, arithmetic and
  // kernels: without per-worker times that is the slowest columns' communication, 2.4, 0.2 and
  // 0.2 ms in the sync steps after the first; the local step talks to no one.
  EXPECT_NEAR(c.comm_floor_s["ZeroOneAdam"]["sync_step"].get<double>(), 0.0002, 1e-12);
  EXPECT_NEAR(c.comm_floor_s["ZeroOneAdam"]["local_step"].get<double>(), 0.0, 1e-15);
  EXPECT_EQ(c.to_json()["comm_floor_s"], c.comm_floor_s);
  EXPECT_THROW(read_calibration({{"runs", nlohmann::json::array()}}, "cal.json", "a test"),
               clbo::Error);
}

// A step's communication is never simulated below the calibration's over loopback: the floor
// raises it and adds the difference to the step; a network slower than the floor keeps its own.
TEST(ValidateModel, TheCalibrationsCommunicationIsTheFloorOfAStepsCommunication) {
  const FlooredComm raised = floored_comm(0.012, 0.033);
  EXPECT_EQ(raised.network_s, 0.012);
  EXPECT_EQ(raised.floor_s, 0.033);
  EXPECT_EQ(raised.comm_s, 0.033);
  EXPECT_NEAR(raised.extra_s, 0.021, 1e-15);
  const FlooredComm kept = floored_comm(0.164, 0.021);
  EXPECT_EQ(kept.comm_s, 0.164);
  EXPECT_EQ(kept.extra_s, 0.0);
  // No floor (a kind the calibration lacks) and a negative one change nothing.
  EXPECT_EQ(floored_comm(0.005, 0.0).extra_s, 0.0);
  EXPECT_EQ(floored_comm(0.005, -1.0).comm_s, 0.005);
}

// The CPUs' part of a step's communication runs beside the wire time only on the CPU time the
// packet processing leaves: with all of the CPUs moving packets it comes on top (the sum),
// with none it is the floor, and in between the wire time or the CPUs' work over the cores,
// whichever is longer.
TEST(ValidateModel, TheCpusPartOverlapsTheWireTimeOnlyOnTheCpuThePacketsLeave) {
  EXPECT_NEAR(floored_comm(0.164, 0.021, 1.0).comm_s, 0.185, 1e-15) << "no CPU left: the sum";
  EXPECT_EQ(floored_comm(0.164, 0.021, 0.0).comm_s, 0.164) << "all of it left: the floor";
  EXPECT_EQ(floored_comm(0.164, 0.021, 0.8).comm_s, 0.164) << "0.2 x 164 ms covers 21 ms";
  const FlooredComm busy = floored_comm(0.100, 0.030, 0.9);  // 10 ms of CPU left: 20 ms after
  EXPECT_NEAR(busy.comm_s, 0.120, 1e-15);
  EXPECT_NEAR(busy.extra_s, 0.020, 1e-15);
  EXPECT_EQ(busy.packet_cpu_share, 0.9);
  EXPECT_NEAR(floored_comm(0.012, 0.033, 0.5).comm_s, 0.039, 1e-15) << "27 ms after 6 left";
  EXPECT_EQ(floored_comm(0.012, 0.033, 7.0).packet_cpu_share, 1.0) << "a share is at most 1";
  // The share: the probe's kernel share, scaled by how near the link's rate the step's bytes
  // run; a step's bytes faster than the link (latency-free simulation) count as the link.
  EXPECT_NEAR(packet_cpu_share(0.7, 2.5e6, 0.2, 25e6), 0.35, 1e-12);
  EXPECT_NEAR(packet_cpu_share(0.7, 5e6, 0.2, 25e6), 0.7, 1e-12) << "at the link's rate";
  EXPECT_NEAR(packet_cpu_share(0.7, 50e6, 0.2, 25e6), 0.7, 1e-12) << "faster counts as the link";
  EXPECT_EQ(packet_cpu_share(0.7, 1e6, 0.0, 25e6), 0.0) << "no time: nothing to share";
  EXPECT_EQ(packet_cpu_share(0.0, 1e6, 0.1, 25e6), 0.0) << "no probe split: the floor as before";
}

// The steps job's own compute for one kind of step has the calibration's definition, over the
// steps it is given: the same run read as a calibration and as a job agrees on them.
TEST(ValidateModel, JobComputeIsTheCalibrationsMeasureOverTheKindsSteps) {
  const nlohmann::json run = zero_one_steps_run(0.030);
  // The sync steps after the first (indices 1, 3, 4): gradients 16, 18 and 30 ms, arithmetic
  // 9.4, 7.2 and 37.3 ms; medians 18 and 9.4 ms.
  const JobCompute sync = job_compute(run, {1, 3, 4}, "steps.json");
  EXPECT_NEAR(sync.gradient_s, 0.018, 1e-12);
  EXPECT_NEAR(sync.arithmetic_s, 0.0094, 1e-12);
  EXPECT_NEAR(sync.arithmetic_s,
              read_calibration({{"runs", {run}}}, "cal.json", "a test")
                  .optimizer_s["ZeroOneAdam"]["sync_step"]
                  .get<double>(),
              1e-12);
  const JobCompute local = job_compute(run, {2}, "steps.json");
  EXPECT_NEAR(local.gradient_s, 0.017, 1e-12);
  EXPECT_NEAR(local.arithmetic_s, 0.0038, 1e-12);
  try {
    job_compute(run, {1, 5}, "steps.json");
    ADD_FAILURE() << "a step beyond the run was accepted";
  } catch (const clbo::Error& e) {
    EXPECT_NE(std::string(e.what()).find("step index 5"), std::string::npos) << e.what();
  }
}

// With each worker's own parts (clbo train over MPI), the arithmetic is each worker's step less
// its own communication and kernels, averaged over the workers: the slowest worker's columns
// come from different workers and lose what one worker spent computing while another waited.
TEST(ValidateModel, CalibrationTakesEachWorkersOwnArithmetic) {
  // Columns by name, in an order of their own: kernels, comm, optimizer, then the rest.
  const nlohmann::json columns = {
      "compression_kernels_s", "comm_s", "optimizer_s", "gradient_s", "step_s",
      "gradient_compute_s"};
  auto w = [](double opt, double comm, double kern) {
    return nlohmann::json::array({kern, comm, opt, 0.05, 0.05 + opt, 0.04});
  };
  // Worker 0 computes 20 ms and waits 2 ms; worker 1 computes 4 ms and waits 18 ms for it.
  const nlohmann::json step = {w(0.023, 0.002, 0.001), w(0.023, 0.018, 0.001)};
  const nlohmann::json slowest = {0.073, 0.05, 0.023, 0.018, 0.001};
  const nlohmann::json run = {
      {"optimizer_type", "Slamb"},
      {"phase", {"compression", "compression"}},
      {"timing",
       {{"steps",
         {{"columns", {"step_s", "gradient_s", "optimizer_s", "comm_s", "compression_kernels_s"}},
          {"rows", {slowest, slowest}},
          {"workers", {{"columns", columns}, {"rows", {step, step}}}}}}}}};
  const Calibration c = read_calibration({{"runs", {run}}}, "cal.json", "a test");
  // (20 + 4) / 2 = 12 ms; the slowest worker's columns would say 23 - 18 - 1 = 4 ms.
  EXPECT_NEAR(c.optimizer_s["Slamb"]["compression"].get<double>(), 0.012, 1e-12);
  // The floor is what the step leaves beside that mean arithmetic: 73 - 50 - 12 - 1 = 10 ms.
  // The slowest communication column (18 ms, worker 1 waiting for worker 0's arithmetic)
  // would count the wait twice.
  EXPECT_NEAR(c.comm_floor_s["Slamb"]["compression"].get<double>(), 0.010, 1e-12);
  nlohmann::json without = run;
  without["timing"]["steps"].erase("workers");
  EXPECT_NEAR(read_calibration({{"runs", {without}}}, "cal.json", "a test")
                  .optimizer_s["Slamb"]["compression"]
                  .get<double>(),
              0.004, 1e-12);
  // A per-worker table that does not match the steps is an error naming the field.
  nlohmann::json short_rows = run;
  short_rows["timing"]["steps"]["workers"]["rows"].erase(1);
  try {
    read_calibration({{"runs", {short_rows}}}, "cal.json", "a test");
    ADD_FAILURE() << "a per-worker table with 1 step for 2 was accepted";
  } catch (const clbo::Error& e) {
    EXPECT_NE(std::string(e.what()).find("timing.steps.workers.rows"), std::string::npos)
        << e.what();
  }
  nlohmann::json no_column = run;
  no_column["timing"]["steps"]["workers"]["columns"][1] = "wait_s";
  EXPECT_THROW(read_calibration({{"runs", {no_column}}}, "cal.json", "a test"), clbo::Error);
}

TEST(ValidateModel, ThePresetComesFromTheProbes) {
  const ValidationSpec s = parse_validation_spec(grid(), "g.json", 2, 24e9);
  Links l;
  l.tcp_half_rtt_s = 30e-6;
  l.mpi_half_rtt_s = 80e-6;
  l.single_flow_Mbps = 191;
  l.all_at_once_Mbps = 188;
  l.uplink_Mbps = 380;
  l.loopback_Mbps = 8000;
  l.mpi_lo_half_rtt_s = 60e-6;
  const sim::ClusterSpec c = cluster_spec(s.clusters[4], l, 1.0);
  EXPECT_EQ(c.max_nodes, 8);
  EXPECT_EQ(c.gpus_per_node, 2);
  EXPECT_NEAR(c.node_net_Bps(), 188e6 / 8, 1);     // the rate every flow achieved
  EXPECT_NEAR(c.software_latency_s, 50e-6, 1e-9);  // MPI's cost on top of TCP's
  // That cost is CPU time: p ranks on C cores stretch it by p/C, and nothing else.
  const sim::ClusterSpec shared = cluster_spec(s.clusters[4], l, 4.0);
  EXPECT_NEAR(shared.software_latency_s, 200e-6, 1e-9);
  EXPECT_DOUBLE_EQ(shared.intra_latency_s, c.intra_latency_s);
  EXPECT_DOUBLE_EQ(shared.nic_latency_s, c.nic_latency_s);
  EXPECT_DOUBLE_EQ(shared.node_net_Bps(), c.node_net_Bps());
  EXPECT_NEAR(c.uplink_Bps, 380e6 / 8, 1);
  EXPECT_NEAR(c.intra_Bps, 1e9, 1);  // 8 Gbit/s of loopback
  // Two host links and two intra links make the TCP one-way time.
  EXPECT_NEAR(2 * (c.nic_latency_s + c.intra_latency_s), 30e-6, 1e-9);
  const sim::ClusterSpec bare = without_latency(c);
  EXPECT_EQ(bare.software_latency_s, 0);
  EXPECT_EQ(bare.nic_latency_s, 0);
  EXPECT_DOUBLE_EQ(cpu_contention(16, 2), 8);
  EXPECT_DOUBLE_EQ(cpu_contention(1, 2), 1);
}

// The all-pairs efficiency sets the measured TCP all-to-all against the same pattern
// simulated on the preset: on a single switch the fluid time is (n − 1) · bytes / rate; on a
// 4:1 oversubscribed tree the uplinks make it longer, so the same measurement is not charged
// to TCP.
TEST(ValidateModel, AllPairsEfficiencyIsTheSimulatedFluidTimeOverTheMeasured) {
  const ValidationSpec s =
      parse_validation_spec({{"clusters",
                              {{{"topology", "single_switch"}, {"hosts", 4}, {"link_Mbps", 200}},
                               {{"topology", "two_level"},
                                {"hosts", 4},
                                {"hosts_per_leaf", 2},
                                {"oversubscription", 4},
                                {"link_Mbps", 200}}}},
                             {"ops", {"alltoall"}}},
                            "g.json", 2, 24e9);
  Links l;
  l.tcp_half_rtt_s = l.mpi_half_rtt_s = 30e-6;
  l.all_at_once_Mbps = 190;
  l.uplink_Mbps = 95;  // two hosts' worth at 4:1
  l.tcp_alltoall_bytes_per_pair = 4 << 20;
  const double fluid = 3 * (4 << 20) / (190e6 / 8);
  l.tcp_alltoall_s = fluid / 0.8;
  EXPECT_NEAR(all_pairs_efficiency(cluster_spec(s.clusters[0], l, 1.0), s.clusters[0], l), 0.8,
              0.02);
  const double tree = all_pairs_efficiency(cluster_spec(s.clusters[1], l, 1.0), s.clusters[1], l);
  EXPECT_DOUBLE_EQ(tree, 1.0);  // the uplinks alone take longer than the measured time
  l.tcp_alltoall_s = -1;
  EXPECT_DOUBLE_EQ(all_pairs_efficiency(cluster_spec(s.clusters[0], l, 1.0), s.clusters[0], l),
                   1.0);
}

// The warm rounds give the efficiency by size: each round's fluid time over its measured time
// less the empty round's; the long burst's value ends the list at its own size.
TEST(ValidateModel, WarmRoundsGiveTheAllPairsEfficiencyBySize) {
  const ValidationSpec s = parse_validation_spec(
      {{"clusters", {{{"topology", "single_switch"}, {"hosts", 4}, {"link_Mbps", 200}}}},
       {"ops", {"alltoall"}}},
      "g.json", 2, 24e9);
  Links l;
  l.tcp_half_rtt_s = l.mpi_half_rtt_s = 30e-6;
  l.all_at_once_Mbps = 190;
  l.tcp_alltoall_bytes_per_pair = 4 << 20;
  const double per_byte = 3 / (190e6 / 8);  // three peers at 190 Mbit/s
  l.tcp_alltoall_s = per_byte * (4 << 20) / 0.95;
  l.warm_rounds = {{8, 0.25e-3},
                   {65536, 0.25e-3 + per_byte * 65536 / 0.75},
                   {262144, 0.25e-3 + per_byte * 262144 / 0.9}};
  const sim::ClusterSpec preset = cluster_spec(s.clusters[0], l, 1.0);
  const AllPairs a = all_pairs_model(preset, s.clusters[0], l);
  EXPECT_NEAR(a.efficiency, 0.95, 0.01);
  ASSERT_EQ(a.by_bytes.size(), 3u);
  EXPECT_EQ(a.by_bytes[0].first, 65536);
  EXPECT_NEAR(a.by_bytes[0].second, 0.75, 0.01);
  EXPECT_NEAR(a.by_bytes[1].second, 0.9, 0.01);
  EXPECT_EQ(a.by_bytes[2].first, 4 << 20);
  EXPECT_DOUBLE_EQ(a.by_bytes[2].second, a.efficiency);
  sim::ExpandOptions o;
  a.apply(o);
  EXPECT_NEAR(sim::mpi_all_pairs_efficiency_at(o, 131072), 0.825, 0.01);
  // With the packet size recorded, one packet per pair begins the list at 1.
  l.packet_bytes = 5792;
  const AllPairs anchored = all_pairs_model(preset, s.clusters[0], l);
  ASSERT_EQ(anchored.by_bytes.size(), 4u);
  EXPECT_EQ(anchored.by_bytes[0], std::make_pair(5792.0, 1.0));
  // Read from the emulation's record: each size's first round is left out, then the median.
  nlohmann::json record = probes_record();
  record["probes"]["tcp_alltoall_rounds"] = {
      {"rounds",
       {{{"bytes_per_pair", 8},
         {"seconds", {9.0, 0.3e-3, 0.2e-3, 0.25e-3, 0.09}},
         {"late_s", {8.9, 0, 0, 0, 0.089}}},  // the last began late: left out
        {{"bytes_per_pair", 65536}, {"seconds", {1.0, 0.012, 0.011}}}}}};
  const nlohmann::json pp = pingpong_result(80.0);
  record["shaping"] = {{"max_packet_frames", 4}, {"frame_bytes", 1514}};
  const Links read = read_links(record, {pp}, {}, "c");
  EXPECT_DOUBLE_EQ(read.packet_bytes, 4 * 1448);
  ASSERT_EQ(read.warm_rounds.size(), 2u);
  EXPECT_DOUBLE_EQ(read.warm_rounds[0].seconds, 0.25e-3);
  EXPECT_DOUBLE_EQ(read.warm_rounds[1].seconds, 0.012);  // the upper of two
  EXPECT_TRUE(read.notes.empty());
  // Sizes out of order name the cluster.
  auto bad = record;
  bad["probes"]["tcp_alltoall_rounds"]["rounds"][1]["bytes_per_pair"] = 4;
  EXPECT_THROW(read_links(bad, {pp}, {}, "c"), clbo::Error);
  // A round begun late by under 5% of its time stays (long rounds on 8 hosts: 2.4 ms of 83).
  auto late = record;
  late["probes"]["tcp_alltoall_rounds"]["rounds"][1]["seconds"] = {1.0, 0.083, 0.084};
  late["probes"]["tcp_alltoall_rounds"]["rounds"][1]["late_s"] = {0, 0.0024, 0.0050};
  const Links tolerant = read_links(late, {pp}, {}, "c");
  ASSERT_EQ(tolerant.warm_rounds.size(), 2u);
  EXPECT_DOUBLE_EQ(tolerant.warm_rounds[1].seconds, 0.083) << "only the 5 ms late round is out";
  // A size no round of which began on time is left out with a note naming the cluster, and
  // the other sizes stand.
  late["probes"]["tcp_alltoall_rounds"]["rounds"][1]["late_s"] = {0, 0.5, 0.5};
  const Links dropped = read_links(late, {pp}, {}, "cluster c");
  ASSERT_EQ(dropped.warm_rounds.size(), 1u);
  EXPECT_DOUBLE_EQ(dropped.warm_rounds[0].bytes_per_pair, 8);
  ASSERT_EQ(dropped.notes.size(), 2u);
  EXPECT_NE(dropped.notes[0].find("cluster c: no warm round of 65536"), std::string::npos)
      << dropped.notes[0];
  // With no loaded size left and no Python probe, the cluster says its efficiency is 1.
  EXPECT_NE(dropped.notes[1].find("cluster c: no loaded warm round is left"), std::string::npos)
      << dropped.notes[1];
  EXPECT_EQ(dropped.to_json()["notes"], nlohmann::json(dropped.notes));
  auto with_python = late;
  with_python["probes"]["tcp_alltoall"] = {{{"seconds", 0.6}, {"bytes_per_pair", 4 << 20}}};
  EXPECT_EQ(read_links(with_python, {pp}, {}, "cluster c").notes.size(), 1u);
  // Since 2026-12-07 the long burst is a warm round too and the Python probe does not run:
  // that round ends the list, and its efficiency is the cluster's.
  Links warm_long = l;
  warm_long.tcp_alltoall_s = -1;
  warm_long.tcp_alltoall_bytes_per_pair = 0;
  warm_long.warm_rounds.push_back({4 << 20, 0.25e-3 + per_byte * (4 << 20) / 0.85});
  const AllPairs w = all_pairs_model(preset, s.clusters[0], warm_long);
  ASSERT_EQ(w.by_bytes.size(), 4u);
  EXPECT_EQ(w.by_bytes[3].first, 4 << 20);
  EXPECT_NEAR(w.by_bytes[3].second, 0.85, 0.01);
  EXPECT_DOUBLE_EQ(w.efficiency, w.by_bytes[3].second);
  // A folder with both keeps the warm round at that size: the Python probe adds a point
  // only beyond the warm rounds' largest.
  warm_long.tcp_alltoall_s = l.tcp_alltoall_s;
  warm_long.tcp_alltoall_bytes_per_pair = l.tcp_alltoall_bytes_per_pair;
  EXPECT_EQ(all_pairs_model(preset, s.clusters[0], warm_long).by_bytes, w.by_bytes);
  // Without the empty round (none began on time) the loaded rounds stand on their own time.
  Links no_empty = warm_long;
  no_empty.warm_rounds.erase(no_empty.warm_rounds.begin());
  const AllPairs ne = all_pairs_model(preset, s.clusters[0], no_empty);
  ASSERT_EQ(ne.by_bytes.size(), 4u);
  EXPECT_EQ(ne.by_bytes[0], std::make_pair(5792.0, 1.0));
  const double fluid64 = per_byte * 65536;
  EXPECT_NEAR(ne.by_bytes[1].second, fluid64 / (0.25e-3 + fluid64 / 0.75), 0.01);
  EXPECT_LT(ne.by_bytes[1].second, w.by_bytes[1].second);
  // Without warm rounds (folders kept before): the long probe's value alone.
  l.warm_rounds.clear();
  EXPECT_TRUE(all_pairs_model(preset, s.clusters[0], l).by_bytes.empty());
}

// The kernel rates are one rank's alone: those from memory slowed by the streaming
// contention, the in-cache ones by the compute contention; the server step's by-p rates are
// among them; all the ranks share the machine's cache.
TEST(ValidateModel, KernelRatesSlowByTheirContentionAndEveryRankSharesTheCache) {
  auto r = [](const std::string& name, double eps, bool cached) {
    nlohmann::json j = {{"name", name}, {"run_type", "iteration"}, {"items_per_second", eps}};
    if (cached) {
      j["in_cache"] = 1.0;
      j["working_set_bytes"] = 8e6;
    }
    return j;
  };
  const nlohmann::json bench = {
      {"context", {{"llc_bytes_sysfs", "33554432"}, {"copy_bytes_per_second", "2e10"}}},
      {"benchmarks",
       {r("BM_compress_fused/1048576/real_time", 2e9, true),
        r("BM_compress_fused/67108864/real_time", 6e8, false),
        r("BM_server_step/c:1048576/p:4/real_time", 8e8, true),
        r("BM_server_step/c:67108864/p:4/real_time", 6e8, false),
        r("BM_random_mask/67108864/real_time", 1e9, false),
        r("BM_scatter/1048576/real_time", 1.6e9, true),
        r("BM_scatter/67108864/real_time", 1.2e9, false)}}};
  const sim::KernelModel k = kernel_model(bench, "k.json", 2.0, 3.0, 4);
  EXPECT_DOUBLE_EQ(k.scatter_eps, 4e8) << "the sparse call's scatter streams: likewise";
  EXPECT_DOUBLE_EQ(k.scatter_cached.eps, 8e8);
  EXPECT_DOUBLE_EQ(k.compress_eps, 2e8) << "from memory: the streaming contention";
  EXPECT_DOUBLE_EQ(k.compress_cached.eps, 1e9) << "in cache: the compute contention";
  EXPECT_DOUBLE_EQ(k.server_eps_by_p.at(4), 2e8) << "the by-p rates are the ones server_s uses";
  EXPECT_DOUBLE_EQ(k.server_cached_by_p.at(4).eps, 4e8);
  EXPECT_DOUBLE_EQ(k.mask_eps, 5e8) << "the mask draw computes: the compute contention";
  EXPECT_DOUBLE_EQ(k.hbm_Bps, 2e10 / 3.0);
  EXPECT_EQ(k.llc_sharers, 4);
  EXPECT_DOUBLE_EQ(k.server_s(size_t{4} << 20, 4), (1 << 20) / 2e8);
  EXPECT_DOUBLE_EQ(k.server_s(size_t{4} << 20, 4, 1e6), (1 << 20) / 4e8) << "4 x 1 MB fit";
}

// One `clbo bench kernels` result with the probe at `eps` (and an in-cache row of the same
// kernel, which the probe must not pick).
nlohmann::json probe_bench(double eps) {
  return {{"benchmarks",
           {{{"name", "BM_compress_fused/1048576/real_time"},
             {"run_type", "iteration"},
             {"in_cache", 1.0},
             {"items_per_second", 9e9}},
            {{"name", "BM_compress_fused/67108864/real_time"},
             {"run_type", "iteration"},
             {"in_cache", 0.0},
             {"working_set_bytes", 1.5e9},
             {"buffer_sets", 3.0},
             {"items_per_second", eps}}}}};
}

TEST(ValidateKernelContention, ProbeIsTheStreamingCompressAndItsFilterSelectsItAlone) {
  const std::string name = streaming_probe_name(probe_bench(1e9), "k.json");
  EXPECT_EQ(name, "BM_compress_fused/67108864/real_time");
  EXPECT_EQ(streaming_probe_filter(name), "^BM_compress_fused/67108864/");
  EXPECT_EQ(streaming_probe_bytes(probe_bench(1e9), name, "k.json"), 5e8) << "one buffer set";
  EXPECT_EQ(streaming_probe_bytes(probe_bench(1e9), "BM_other", "k.json"), 0);
  // A small cache leaves the 1M-element run out of cache too: the largest size is the probe.
  nlohmann::json small_cache = probe_bench(1e9);
  small_cache["benchmarks"][0]["in_cache"] = 0.0;
  EXPECT_EQ(streaming_probe_name(small_cache, "k.json"), name);
  nlohmann::json cached_only = probe_bench(1e9);
  cached_only["benchmarks"].erase(1);
  try {
    streaming_probe_name(cached_only, "k.json");
    FAIL() << "a benchmark without a streaming compress must be an error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("k.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("in_cache"), std::string::npos) << e.what();
  }
}

// A copy's row as bench_kernels_cpu --iterations=N names it.
nlohmann::json fixed_copy(double eps, int n) {
  nlohmann::json b = probe_bench(eps);
  b["benchmarks"][1]["name"] =
      "BM_compress_fused/67108864/iterations:" + std::to_string(n) + "/real_time";
  return b;
}

TEST(ValidateKernelContention, CopiesTimeAFixedCountThatTakesOneAloneASecond) {
  const std::string name = "BM_compress_fused/67108864/real_time";
  // 1.5e9 elements/s: 67108864 elements take 44.7 ms, so 1 s is 22.4 iterations, 4.5 -> 5 in
  // each of the 5 repetitions.
  static_assert(kContentionRepetitions == 5);
  EXPECT_EQ(contention_iterations(probe_bench(1.5e9), name, "k.json"), 5);
  EXPECT_EQ(contention_iterations(probe_bench(1e7), name, "k.json"), 3) << "at least 3";
  // The copies' rows carry "/iterations:N" and still name the alone benchmark's case.
  const nlohmann::json rec = streaming_contention_record(
      name, fixed_copy(1.5e9, 23), {{2, {fixed_copy(1e9, 23), fixed_copy(1e9, 23)}}}, "c.json");
  EXPECT_DOUBLE_EQ(streaming_contention(rec, 2, "c.json"), 1.5);
}

// With repetitions each copy's rate is its median repetition's, and every repetition is
// recorded: a dip of one repetition (the VM's memory shared with its host's other guests)
// moves neither the copy's rate nor the factor.
TEST(ValidateKernelContention, EachCopyCountsByItsMedianRepetition) {
  const std::string name = "BM_compress_fused/67108864/real_time";
  auto repeated = [&](std::vector<double> rates) {
    nlohmann::json b = fixed_copy(rates.front(), 5);
    const nlohmann::json row = b["benchmarks"][1];
    b["benchmarks"].erase(1);
    for (double r : rates) {
      nlohmann::json rep = row;
      rep["items_per_second"] = r;
      b["benchmarks"].push_back(rep);
    }
    nlohmann::json median_row = row;  // Google Benchmark's aggregate: not a repetition
    median_row["run_type"] = "aggregate";
    median_row["aggregate_name"] = "median";
    median_row["items_per_second"] = 1.0;
    b["benchmarks"].push_back(median_row);
    return b;
  };
  const nlohmann::json rec = streaming_contention_record(
      name, repeated({2.1e9, 1.3e9, 2.0e9, 2.2e9, 1.9e9}),
      {{2,
        {repeated({1.6e9, 1.5e9, 0.7e9, 1.7e9, 1.6e9}), repeated({1.5e9, 1.4e9, 1.3e9, 1.6e9})}}},
      "c.json");
  EXPECT_DOUBLE_EQ(rec["alone_eps"].get<double>(), 2.0e9) << "the middle of five";
  EXPECT_EQ(rec["alone_repetitions_eps"].size(), 5u);
  const nlohmann::json& two = rec["by_ranks"]["2"];
  EXPECT_EQ(two["copies_eps"], nlohmann::json({1.6e9, 1.4e9}))
      << "an even count: the slower of the middle two, a measured repetition";
  EXPECT_EQ(two["copies_repetitions_eps"][0].size(), 5u);
  EXPECT_DOUBLE_EQ(streaming_contention(rec, 2, "c.json"), 2.0e9 / 1.5e9);
  EXPECT_EQ(rec["repetitions"], kContentionRepetitions);
}

TEST(ValidateKernelContention, FactorIsNeverBelowTheCoresTimeSharing) {
  // 4 copies on 2 cores that did not all run at once measured 1.56: the cores alone imply 2.
  const StreamingFactor low = streaming_factor(1.56, 2.0);
  EXPECT_DOUBLE_EQ(low.factor, 2.0);
  EXPECT_TRUE(low.floored);
  const StreamingFactor high = streaming_factor(5.23, 4.0);
  EXPECT_DOUBLE_EQ(high.factor, 5.23);
  EXPECT_FALSE(high.floored);
  // Fewer copies than cores: time-sharing is 1, and memory contention alone can exceed it.
  EXPECT_DOUBLE_EQ(streaming_factor(1.29, 1.0).factor, 1.29);
  EXPECT_FALSE(streaming_factor(1.0, 1.0).floored) << "equal is not below";
}

TEST(ValidateKernelContention, FactorIsAloneOverTheMedianCopyPerRankCount) {
  const std::map<int, std::vector<nlohmann::json>> copies = {
      {2, {probe_bench(800), probe_bench(700)}},
      {4, {probe_bench(300), probe_bench(250), probe_bench(900), probe_bench(350)}}};
  const nlohmann::json rec = streaming_contention_record("BM_compress_fused/67108864/real_time",
                                                         probe_bench(1500), copies, "c.json");
  EXPECT_DOUBLE_EQ(streaming_contention(rec, 2, "c.json"), 1500.0 / 750.0);
  // The median of four: a copy that finished alone (900) moves it no further than its neighbour.
  EXPECT_DOUBLE_EQ(streaming_contention(rec, 4, "c.json"), 1500.0 / 325.0);
  EXPECT_EQ(streaming_contention(rec, 8, "c.json"), 0) << "not measured for 8";
  EXPECT_THROW(streaming_contention(nlohmann::json::array(), 2, "c.json"), InputError);
  nlohmann::json bad = rec;
  bad["by_ranks"]["2"]["factor"] = -1;
  EXPECT_THROW(streaming_contention(bad, 2, "c.json"), InputError);
  EXPECT_THROW(streaming_contention_record("BM_missing", probe_bench(1), copies, "c.json"),
               InputError)
      << "a probe the results lack";
}

TEST(ValidateKernelContention, RankCountsAreTheGridsDistinctOnesAboveOne) {
  ValidationSpec spec;
  for (auto [h, r] :
       {std::pair{2, 1}, std::pair{4, 2}, std::pair{8, 1}, std::pair{2, 2}, std::pair{1, 1}}) {
    ClusterConfig c;
    c.hosts = h;
    c.ranks_per_host = r;
    spec.clusters.push_back(c);
  }
  EXPECT_EQ(contention_rank_counts(spec), (std::vector<int>{2, 4, 8}));
}

TEST(ValidateSummary, MediansMaximaAndBoundsAreSeparate) {
  auto k = [](const char* op, double m, double s, const char* bound) {
    return nlohmann::json{{"op", op},
                          {"measured_s", m},
                          {"simulated_s", s},
                          {"bound", bound},
                          {"rel_error", (s - m) / m}};
  };
  const std::vector<nlohmann::json> cases = {
      k("allreduce", 1.0, 1.05, "bandwidth"), k("allreduce", 1.0, 0.9, "bandwidth"),
      k("compressed", 1.0, 1.02, "bandwidth"), k("allreduce", 1.0, 3.0, "latency"),
      k("step", 1.0, 1.1, "bandwidth")};
  const nlohmann::json s = summarize(cases);
  EXPECT_NEAR(s["median_abs_rel_error"].get<double>(), 0.05, 1e-12);
  EXPECT_NEAR(s["max_abs_rel_error"].get<double>(), 0.10, 1e-12);
  EXPECT_EQ(s["latency_bound"]["cases"], 1);
  EXPECT_NEAR(s["latency_bound"]["max_abs_rel_error"].get<double>(), 2.0, 1e-12);
  EXPECT_EQ(s["steps"]["cases"], 1);
  EXPECT_TRUE(s["target"]["dense_allreduce_met"].get<bool>());
  EXPECT_TRUE(s["target"]["compressed_allreduce_met"].get<bool>());
  EXPECT_TRUE(s["target"]["steps_met"].get<bool>());
  EXPECT_NEAR(
      s["by_op"]["dense_allreduce"]["bandwidth_bound"]["median_abs_rel_error"].get<double>(), 0.075,
      1e-12);
}

// Steps simulated again with the steps job's own compute are scored apart, and never change
// the target, which scores the steps simulated with the calibration's compute.
TEST(ValidateSummary, StepsWithTheJobsComputeAreScoredApart) {
  auto step = [](double err, nlohmann::json job_err) {
    nlohmann::json k = {{"op", "step"},
                        {"measured_s", 1.0},
                        {"simulated_s", 1.0 + err},
                        {"bound", "compute"},
                        {"rel_error", err}};
    if (!job_err.is_null()) k["with_job_compute"] = {{"rel_error", job_err}};
    return k;
  };
  const nlohmann::json s = summarize({step(0.3, -0.05), step(-0.2, 0.16), step(0.01, 0.02)});
  EXPECT_EQ(s["steps_within_15pct"], 1);
  EXPECT_FALSE(s["target"]["steps_met"].get<bool>());
  const auto& j = s["steps_with_job_compute"];
  EXPECT_EQ(j["within_15pct"], 2);
  EXPECT_EQ(j["stats"]["cases"], 3);
  EXPECT_NEAR(j["stats"]["median_abs_rel_error"].get<double>(), 0.05, 1e-12);
  EXPECT_NEAR(j["stats"]["max_abs_rel_error"].get<double>(), 0.16, 1e-12);
  EXPECT_TRUE(summarize({step(0.1, nullptr)})["steps_with_job_compute"].is_null())
      << "results without the job's compute (kept before 2026-12-06)";
}

// Cases measured while the hypervisor took the CPUs (steal over kStealShare in the job that
// measured them) are counted and named, not dropped: every case still scores.
TEST(ValidateSummary, StolenCpuIsReportedPerClusterAndScoresStay) {
  auto k = [](const char* cluster, nlohmann::json steal) {
    return nlohmann::json{{"op", "allreduce"},   {"cluster", cluster},   {"measured_s", 1.0},
                          {"simulated_s", 1.1},  {"bound", "bandwidth"}, {"rel_error", 0.1},
                          {"steal_share", steal}};
  };
  const nlohmann::json s =
      summarize({k("a", 0.01), k("b", 0.2), k("b", 0.3), k("c", nullptr), k("d", kStealShare)});
  EXPECT_EQ(s["steal"]["cases_over"], 2);
  EXPECT_EQ(s["steal"]["clusters_over"], nlohmann::json::array({"b"}));
  EXPECT_DOUBLE_EQ(s["steal"]["max_share"].get<double>(), 0.3);
  EXPECT_EQ(s["bandwidth_bound"]["cases"], 5) << "stolen cases still score";
  EXPECT_TRUE(summarize({k("c", nullptr)})["steal"]["max_share"].is_null())
      << "records without the CPU split: unknown, not 0";
  EXPECT_EQ(s["steal"]["probe_clusters_over"], nlohmann::json::array()) << "no probe steal";
}

// A cluster whose link probe ran while the hypervisor took the CPUs is named once, whatever
// its cases' own jobs saw: its preset's rates came from that probe.
TEST(ValidateSummary, StolenCpuDuringTheProbesIsNamedPerCluster) {
  auto k = [](const char* cluster, nlohmann::json probe) {
    return nlohmann::json{{"op", "allreduce"},  {"cluster", cluster},        {"measured_s", 1.0},
                          {"simulated_s", 1.1}, {"bound", "bandwidth"},      {"rel_error", 0.1},
                          {"steal_share", 0.0}, {"probe_steal_share", probe}};
  };
  const nlohmann::json s =
      summarize({k("a", 0.23), k("a", 0.23), k("b", kStealShare), k("c", nullptr), k("d", 0.06)});
  EXPECT_EQ(s["steal"]["probe_clusters_over"], nlohmann::json::array({"a", "d"}));
  EXPECT_EQ(s["steal"]["cases_over"], 0) << "the jobs' own steal is counted apart";
}

// A cluster whose CPUs were nearly all busy while every host streamed at its rate has
// CPU-bound links, named once; a record without the split names nothing.
TEST(ValidateSummary, CpuBoundLinksAreNamedPerCluster) {
  auto k = [](const char* cluster, nlohmann::json idle) {
    return nlohmann::json{{"op", "allreduce"},       {"cluster", cluster},   {"measured_s", 1.0},
                          {"simulated_s", 1.1},      {"bound", "bandwidth"}, {"rel_error", 0.1},
                          {"probe_idle_share", idle}};
  };
  const nlohmann::json s = summarize({k("ss-h8", 0.08), k("ss-h8", 0.08), k("ss-h4", 0.51),
                                      k("old", nullptr), k("edge", kProbeIdleShare)});
  EXPECT_EQ(s["network_cpu"]["cpu_bound_clusters"], nlohmann::json::array({"ss-h8"}));
  EXPECT_DOUBLE_EQ(s["network_cpu"]["idle_threshold"].get<double>(), kProbeIdleShare);
  EXPECT_EQ(s["bandwidth_bound"]["cases"], 5) << "their cases still score";
}

// The measuring machine's facts name every field, null where /proc or /sys lacks it; Linux
// always has its kernel release.
TEST(ValidateMachine, FactsNameTheKernelAndEveryField) {
  const nlohmann::json f = machine_facts();
  for (const char* k : {"kernel", "cpu_model", "cpuidle_driver", "guest_halt_poll_ns"})
    EXPECT_TRUE(f.contains(k)) << k;
  ASSERT_TRUE(f["kernel"].is_string());
  EXPECT_FALSE(f["kernel"].get<std::string>().empty());
  EXPECT_EQ(f["kernel"].get<std::string>().find('\n'), std::string::npos);
}

}  // namespace
}  // namespace clbo::validate
