// Programs executed as s4u actors with real transfers (docs/reference/simgrid-notes.md §3.4
// and §8.3), after lowering.cpp has turned them into flows between endpoints.
//
// One actor per endpoint. For each round an actor posts its receives, then its sends (each
// after its own latency), and waits for all of them: the next round starts when this
// endpoint's messages of the previous round are done. Rounds that use aggregation hosts are
// fenced by a per-node barrier, so the node's GPUs and its aggregation host agree on when
// the data is ready (zero simulated cost).
#include <xbt/log.h>
#include <simgrid/s4u.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <string>
#include <unordered_map>

#include "clbo/core/error.hpp"
#include "clbo/sim/execution.hpp"
#include "clbo/sim/lowering.hpp"
#include "platform.hpp"

namespace sg4 = simgrid::s4u;

namespace clbo::sim {

namespace {

double cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct EndpointPlan {
  // Per round: indices of sends (sorted by latency) and of receives.
  std::vector<std::vector<int>> sends, recvs;
};

class Runner {
 public:
  Runner(const Platform& pf, const SessionOptions& o) : pf_(pf), opt_(o) {}

  ProgramResult run(const Program& prog) {
    const auto wall0 = std::chrono::steady_clock::now();
    const double cpu0 = cpu_seconds();
    LoweredProgram lowered =
        lower_program(prog, pf_, opt_, [this](int a, int b) { return route_latency(a, b); });
    rounds_ = std::move(lowered.rounds);
    traffic_ = lowered.traffic_bytes;
    local_ = lowered.local_copies;
    staging_ = transfers_ = 0;
    ProgramResult res;
    res.segments.assign(prog.segments.size(), SegmentTiming{1e300, 0});
    seg_start_.assign(prog.segments.size(), 1e300);
    seg_end_.assign(prog.segments.size(), 0);
    t0_ = sg4::Engine::get_clock();
    const int num_ep = static_cast<int>(pf_.hosts.size());
    // Actors: every GPU (compute phases run there) and every other endpoint in use.
    std::vector<bool> active(static_cast<size_t>(num_ep), false);
    for (int r = 0; r < pf_.p; ++r) active[static_cast<size_t>(r)] = true;
    for (const LoweredRound& r : rounds_)
      for (const LoweredXfer& x : r.xfers)
        active[static_cast<size_t>(x.src)] = active[static_cast<size_t>(x.dst)] = true;
    std::vector<int> per_node(static_cast<size_t>(pf_.nodes), 0);
    for (int e = 0; e < num_ep; ++e)
      if (active[static_cast<size_t>(e)]) ++per_node[static_cast<size_t>(pf_.node_of(e))];
    barriers_.clear();
    for (int n = 0; n < pf_.nodes; ++n)
      barriers_.push_back(sg4::Barrier::create(
          static_cast<unsigned>(std::max(1, per_node[static_cast<size_t>(n)]))));
    plans_.assign(static_cast<size_t>(num_ep), EndpointPlan{});
    for (auto& ep : plans_) {
      ep.sends.resize(rounds_.size());
      ep.recvs.resize(rounds_.size());
    }
    boxes_of_.assign(rounds_.size(), {});
    for (size_t r = 0; r < rounds_.size(); ++r) {
      auto& xs = rounds_[r].xfers;
      for (const LoweredXfer& x : xs) boxes_of_[r].push_back(box(x.src, x.dst));
      for (size_t i = 0; i < xs.size(); ++i) {
        plans_[static_cast<size_t>(xs[i].src)].sends[r].push_back(static_cast<int>(i));
        plans_[static_cast<size_t>(xs[i].dst)].recvs[r].push_back(static_cast<int>(i));
      }
      // Each sender posts its messages in order of their latency (sleeping in between).
      for (const LoweredXfer& x : xs) {
        auto& mine = plans_[static_cast<size_t>(x.src)].sends[r];
        if (mine.size() > 1 && mine.front() == static_cast<int>(&x - xs.data()))
          std::stable_sort(mine.begin(), mine.end(), [&](int a, int b) {
            return xs[static_cast<size_t>(a)].latency_s < xs[static_cast<size_t>(b)].latency_s;
          });
      }
    }
    end_ = t0_;
    for (int e = 0; e < num_ep; ++e)
      if (active[static_cast<size_t>(e)])
        sg4::Actor::create("ep" + std::to_string(e), pf_.hosts[static_cast<size_t>(e)],
                           [this, e] { actor(e); });
    sg4::Engine::get_instance()->run();

    res.time_s = end_ - t0_;
    for (size_t s = 0; s < prog.segments.size(); ++s) {
      const bool ran = seg_start_[s] < 1e299;
      res.segments[s] = {ran ? seg_start_[s] - t0_ : 0, ran ? seg_end_[s] - t0_ : 0};
    }
    res.traffic_bytes = traffic_;
    res.staging_bytes = staging_;
    res.transfers = transfers_;
    res.local_copies = local_;
    res.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    res.cpu_s = cpu_seconds() - cpu0;
    return res;
  }

 private:
  double route_latency(int a, int b) {
    const uint64_t key = static_cast<uint64_t>(a) << 32 | static_cast<uint32_t>(b);
    auto it = route_lat_.find(key);
    if (it != route_lat_.end()) return it->second;
    std::vector<sg4::Link*> links;
    double lat = 0;
    pf_.hosts[static_cast<size_t>(a)]->route_to(pf_.hosts[static_cast<size_t>(b)], links, &lat);
    route_lat_[key] = lat;
    return lat;
  }

  sg4::Mailbox* box(int a, int b) {
    const uint64_t key = static_cast<uint64_t>(a) << 32 | static_cast<uint32_t>(b);
    auto it = boxes_.find(key);
    if (it != boxes_.end()) return it->second;
    sg4::Mailbox* m = sg4::Mailbox::by_name(std::to_string(a) + ">" + std::to_string(b));
    boxes_[key] = m;
    return m;
  }

  void actor(int e) {
    const EndpointPlan& me = plans_[static_cast<size_t>(e)];
    std::vector<sg4::CommPtr> comms;
    static int payload_token;
    void* sink = nullptr;
    for (size_t r = 0; r < rounds_.size(); ++r) {
      const LoweredRound& round = rounds_[r];
      const size_t s = static_cast<size_t>(round.segment);
      if (round.first) {
        if (round.not_before_s > 0) sg4::this_actor::sleep_until(t0_ + round.not_before_s);
        seg_start_[s] = std::min(seg_start_[s], sg4::Engine::get_clock());
        if (round.before_s > 0) sg4::this_actor::sleep_for(round.before_s);
      }
      comms.clear();
      for (int i : me.recvs[r])
        comms.push_back(boxes_of_[r][static_cast<size_t>(i)]->get_async(&sink));
      const double start = sg4::Engine::get_clock();
      for (int i : me.sends[r]) {
        const LoweredXfer& x = round.xfers[static_cast<size_t>(i)];
        if (x.latency_s > 0) sg4::this_actor::sleep_until(start + x.latency_s);
        comms.push_back(boxes_of_[r][static_cast<size_t>(i)]->put_async(
            &payload_token, static_cast<uint64_t>(x.wire_bytes)));
      }
      sg4::Comm::wait_all(comms);
      for (int i : me.sends[r]) {
        const LoweredXfer& x = round.xfers[static_cast<size_t>(i)];
        (round.staging ? staging_ : traffic_) += x.payload;
        ++transfers_;
      }
      if (round.barrier_after) barriers_[static_cast<size_t>(pf_.node_of(e))]->wait();
      const double now = sg4::Engine::get_clock();
      if (round.last) seg_end_[s] = std::max(seg_end_[s], now);
      end_ = std::max(end_, now);
    }
  }

  const Platform& pf_;
  SessionOptions opt_;
  std::vector<LoweredRound> rounds_;
  std::vector<std::vector<sg4::Mailbox*>> boxes_of_;  // per round, per transfer
  std::vector<EndpointPlan> plans_;
  std::vector<sg4::BarrierPtr> barriers_;
  std::unordered_map<uint64_t, double> route_lat_;
  std::unordered_map<uint64_t, sg4::Mailbox*> boxes_;
  std::vector<double> seg_start_, seg_end_;
  double t0_ = 0, end_ = 0;
  uint64_t traffic_ = 0, staging_ = 0, transfers_ = 0, local_ = 0;
};

}  // namespace

nlohmann::json ProgramResult::to_json() const {
  nlohmann::json segs = nlohmann::json::array();
  for (const auto& s : segments) segs.push_back({s.start_s, s.end_s});
  return {{"time_s", time_s},
          {"segments", segs},
          {"traffic_bytes", traffic_bytes},
          {"staging_bytes", staging_bytes},
          {"transfers", transfers},
          {"local_copies", local_copies},
          {"wall_s", wall_s},
          {"cpu_s", cpu_s}};
}

ProgramResult ProgramResult::from_json(const nlohmann::json& j) {
  ProgramResult r;
  r.time_s = j.at("time_s").get<double>();
  for (const auto& s : j.at("segments"))
    r.segments.push_back({s[0].get<double>(), s[1].get<double>()});
  r.traffic_bytes = j.at("traffic_bytes").get<uint64_t>();
  r.staging_bytes = j.at("staging_bytes").get<uint64_t>();
  r.transfers = j.at("transfers").get<uint64_t>();
  r.local_copies = j.at("local_copies").get<uint64_t>();
  r.wall_s = j.at("wall_s").get<double>();
  r.cpu_s = j.at("cpu_s").get<double>();
  return r;
}

std::vector<ProgramResult> simulate_programs_here(const ClusterSpec& cluster, int p,
                                                  const std::vector<Program>& programs,
                                                  const SessionOptions& options) {
  // Keep SimGrid quiet: the CLI prints its own progress and tables.
  xbt_log_control_set("root.thres:critical");
  int argc = 2;
  char arg0[] = "clbo-simulate";
  char arg1[] = "--log=root.thres:critical";
  char* argv[] = {arg0, arg1, nullptr};
  sg4::Engine engine(&argc, argv);
  configure_network(engine, cluster);
  // Expert override for experiments with SimGrid's own settings, e.g.
  // CLBO_SIMGRID_CFG="network/optim:Full;network/maxmin-selective-update:no".
  if (const char* extra = std::getenv("CLBO_SIMGRID_CFG")) {
    std::string all = extra;
    for (size_t pos = 0; pos <= all.size();) {
      const size_t end = std::min(all.find(';', pos), all.size());
      if (end > pos) engine.set_config(all.substr(pos, end - pos));
      pos = end + 1;
    }
  }
  const Platform pf = build_platform(engine, cluster, p);
  Runner runner(pf, options);
  std::vector<ProgramResult> out;
  for (const Program& prog : programs) {
    if (prog.p != p) throw Error("simulate_programs: program built for another GPU count");
    out.push_back(runner.run(prog));
  }
  return out;
}

}  // namespace clbo::sim
