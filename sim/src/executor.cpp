// Programs executed as s4u actors with real transfers (docs/reference/simgrid-notes.md §3.4 and
// §8.3).
//
// Lowering (per program, in the child): endpoints become hosts; in fast mode the
// inter-node transfers of a round between the same two nodes become one flow between the
// nodes' aggregation hosts; transfers between ranks that share an endpoint (MPI ranks on
// one CPU) are local copies; a node-level all-to-all carries several shifts per flow
// (merge_shifts), and an all-to-all between GPU endpoints with too many flows runs in
// windows of whole shifts. Each transfer's latency is the route's physical latency
// (SimGrid pays it) plus the segment's per-hop software latency and, for merged steps, the
// (k−1) route latencies the merge dropped, slept by the sender before it posts the message.
//
// Execution: one actor per endpoint. For each round an actor posts its receives, then its
// sends (each after its own latency), and waits for all of them: the next round starts when
// this endpoint's messages of the previous round are done. Rounds that use aggregation
// hosts are fenced by a per-node barrier, so the node's GPUs and its aggregation host
// agree on when the data is ready (zero simulated cost).
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xbt/log.h>
#include <simgrid/s4u.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>

#include "clbo/core/error.hpp"
#include "clbo/sim/engine.hpp"
#include "platform.hpp"

namespace sg4 = simgrid::s4u;

namespace clbo::sim {

namespace {

double cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct LXfer {
  int src, dst;
  double wire_bytes;
  uint64_t payload;
  double latency_s;  // slept by the sender before posting
  sg4::Mailbox* box;
};

struct LRound {
  std::vector<LXfer> xfers;
  int segment = 0;
  double before_s = 0;      // compute (+ base latency) of the segment, before its first round
  double not_before_s = 0;  // earliest start relative to the program start
  bool first = false, last = false;
  bool staging = false;
  bool uses_agg = false;
  bool barrier_after = false;
};

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
    lower(prog);
    ProgramResult res;
    res.segments.assign(prog.segments.size(), SegmentTiming{1e300, 0});
    seg_start_.assign(prog.segments.size(), 1e300);
    seg_end_.assign(prog.segments.size(), 0);
    t0_ = sg4::Engine::get_clock();
    const int num_ep = static_cast<int>(pf_.hosts.size());
    // Actors: every GPU (compute phases run there) and every other endpoint in use.
    std::vector<bool> active(static_cast<size_t>(num_ep), false);
    for (int r = 0; r < pf_.p; ++r) active[static_cast<size_t>(r)] = true;
    for (const LRound& r : rounds_)
      for (const LXfer& x : r.xfers)
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
    for (size_t r = 0; r < rounds_.size(); ++r) {
      auto& xs = rounds_[r].xfers;
      for (size_t i = 0; i < xs.size(); ++i) {
        plans_[static_cast<size_t>(xs[i].src)].sends[r].push_back(static_cast<int>(i));
        plans_[static_cast<size_t>(xs[i].dst)].recvs[r].push_back(static_cast<int>(i));
      }
      // Each sender posts its messages in order of their latency (sleeping in between).
      for (const LXfer& x : xs) {
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

  int agg_of(int node) const { return pf_.p + pf_.nodes + node; }
  int gpu_head(int node) const { return node * pf_.gpus_per_node; }

  struct Flow {
    Xfer x;            // endpoints, wire bytes, steps
    uint64_t payload;  // counted bytes
    bool agg;
  };
  static uint64_t flow_key(int shift, int src, int dst) {
    return static_cast<uint64_t>(shift) << 42 | static_cast<uint64_t>(src) << 21 |
           static_cast<uint64_t>(dst);
  }
  static int key_shift(uint64_t key) { return static_cast<int>(key >> 42); }

  // Combines a round's messages between the same endpoints (and, in fast mode, between the
  // same two nodes) into one flow each, in a deterministic order: by node shift, then
  // source, then destination. Local copies are counted here and dropped.
  std::vector<std::pair<uint64_t, Flow>> combine(const Round& round, bool aggregate) {
    if (pf_.p + 2 * pf_.nodes >= (1 << 21)) throw Error("simulator: too many endpoints");
    std::unordered_map<uint64_t, size_t> slot;
    std::vector<std::pair<uint64_t, Flow>> flows;
    for (const Xfer& x : round) {
      if (x.src == x.dst) {
        ++local_;
        if (!current_staging_ && x.counted) traffic_ += x.bytes;
        continue;
      }
      int s = x.src, d = x.dst;
      const int ns = pf_.node_of(s), nd = pf_.node_of(d);
      bool agg = false;
      if (aggregate && s < pf_.p && d < pf_.p && ns != nd) {
        s = agg_of(ns);
        d = agg_of(nd);
        agg = true;
      }
      const int shift = ((nd - ns) % pf_.nodes + pf_.nodes) % pf_.nodes;
      const uint64_t key = flow_key(shift, s, d);
      auto [it, fresh] = slot.try_emplace(key, flows.size());
      if (fresh) flows.push_back({key, Flow{Xfer{s, d, 0, 0}, 0, agg}});
      Flow& f = flows[it->second].second;
      f.x.bytes += x.bytes;
      f.payload += x.counted ? x.bytes : 0;
      f.x.steps = std::max(f.x.steps, x.steps);
    }
    std::sort(flows.begin(), flows.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    return flows;
  }

  // An all-to-all between per-node endpoints (aggregation hosts, node CPUs) has N−1 flows
  // per node, all at once: SimGrid re-solves the whole set of flows sharing NICs at every
  // start and end, so the cost grows as flows². Here shifts (node i → i + s) are taken k at
  // a time and each node's messages of a group travel as one flow to the group's first
  // shift, so no more than max_flows_per_round network flows remain. Every NIC still carries
  // the same bytes in each direction, all at once; where NICs are the only shared links
  // (single switch) a fair-shared all-to-all ends when the busiest NIC has moved its bytes,
  // the same for both forms. Only shifts that leave the source's leaf switch for every
  // source (L ≤ s ≤ N−L, L nodes per leaf) are merged, so the bytes crossing the uplinks stay
  // those of the original. tests/sim/test_executor.cpp compares both forms.
  void merge_shifts(std::vector<std::pair<uint64_t, Flow>>& flows) const {
    auto network = [&](const Flow& f) {
      return f.x.src >= pf_.p && f.x.dst >= pf_.p && pf_.node_of(f.x.src) != pf_.node_of(f.x.dst);
    };
    const int leaf = std::max(1, pf_.nodes_per_leaf);
    auto mergeable = [&](int shift) { return shift >= leaf && shift <= pf_.nodes - leaf; };
    std::vector<int> shifts;  // distinct mergeable shifts of network flows, ascending
    size_t merge_count = 0, keep_count = 0;
    for (const auto& [key, f] : flows) {
      if (!network(f)) continue;
      const int shift = key_shift(key);
      if (!mergeable(shift)) {
        ++keep_count;
        continue;
      }
      ++merge_count;
      if (shifts.empty() || shifts.back() != shift) shifts.push_back(shift);
    }
    const size_t cap = static_cast<size_t>(std::max(1, opt_.max_flows_per_round));
    if (merge_count + keep_count <= cap || shifts.size() < 2) return;
    const size_t budget = std::max(cap > keep_count ? cap - keep_count : 0,
                                   merge_count / shifts.size());  // at least one group
    const size_t k = (merge_count + budget - 1) / budget;
    if (k < 2) return;
    std::unordered_map<int, int> group_shift;  // shift → first shift of its group
    for (size_t i = 0; i < shifts.size(); ++i) group_shift[shifts[i]] = shifts[i - i % k];
    std::unordered_map<uint64_t, size_t> slot;
    std::vector<std::pair<uint64_t, Flow>> out;
    for (auto& [key, f] : flows) {
      uint64_t k2 = key;
      Flow g = f;
      if (network(f) && mergeable(key_shift(key))) {
        const int shift = group_shift.at(key_shift(key));
        const int src_node = pf_.node_of(f.x.src), dst_node = pf_.node_of(f.x.dst);
        g.x.dst = f.x.dst - dst_node + (src_node + shift) % pf_.nodes;  // same kind of endpoint
        k2 = flow_key(shift, g.x.src, g.x.dst);
      }
      auto [it, fresh] = slot.try_emplace(k2, out.size());
      if (fresh) {
        out.push_back({k2, g});
      } else {
        Flow& m = out[it->second].second;
        m.x.bytes += g.x.bytes;
        m.payload += g.payload;
        m.x.steps = std::max(m.x.steps, g.x.steps);
      }
    }
    std::sort(out.begin(), out.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    flows = std::move(out);
  }

  void lower(const Program& prog) {
    rounds_.clear();
    traffic_ = staging_ = transfers_ = local_ = 0;
    const bool aggregate = opt_.aggregate && pf_.built;
    for (size_t si = 0; si < prog.segments.size(); ++si) {
      const Segment& seg = prog.segments[si];
      const double before = seg.compute_s + seg.start_latency_s;
      traffic_ += seg.analytic_bytes;
      if (seg.rounds.empty()) {
        LRound lr;
        lr.segment = static_cast<int>(si);
        lr.before_s = before;
        lr.not_before_s = seg.not_before_s;
        lr.first = lr.last = true;
        rounds_.push_back(std::move(lr));
        continue;
      }
      const size_t first_round = rounds_.size();
      current_staging_ = seg.staging;
      std::set<std::pair<int, int>> streaming;  // pipelined: edges whose latency was paid
      for (const Round& round : seg.rounds) {
        // Combine messages between the same endpoints (and, in fast mode, between the same
        // two nodes) into one flow; keep a deterministic order (by node shift, then source).
        std::vector<std::pair<uint64_t, Flow>> flows = combine(round, aggregate);
        if (seg.alltoall) merge_shifts(flows);
        LRound cur;
        bool later_window = false;
        auto flush = [&] {
          later_window = true;
          cur.segment = static_cast<int>(si);
          cur.staging = seg.staging;
          rounds_.push_back(std::move(cur));
          cur = LRound{};
        };
        int network_in_window = 0;
        for (auto& [key, val] : flows) {
          const Xfer& x = val.x;
          const bool network = pf_.node_of(x.src) != pf_.node_of(x.dst);
          // An all-to-all still holding more network flows than the cap (per-GPU endpoints:
          // exact mode, XML platforms) runs in windows of consecutive shifts, each loading
          // every NIC alike. Intra-node copies form small per-node groups in SimGrid's
          // solver and never need windows. Other rounds are never split: a window would
          // serialise a ring's or a tree's messages.
          if (seg.alltoall && network && network_in_window >= opt_.max_flows_per_round) {
            flush();
            network_in_window = 0;
          }
          network_in_window += network ? 1 : 0;
          // A library posts all of a round's messages at once, so their software latencies
          // overlap: windows after the first (an artifact of the flow cap) do not pay it again.
          // In a pipeline only the first chunk through an edge waits for its latency; the
          // following ones stream behind it (NCCL's model charges 2·height hops in all).
          const bool streams = seg.pipelined && !streaming.insert({x.src, x.dst}).second;
          const double hop = later_window || streams ? 0.0
                             : network               ? seg.hop_net_s
                                                     : seg.hop_intra_s;
          // Agregated flows pay the latency of a GPU-to-GPU route, as the flows they carry.
          double physical = route_latency(x.src, x.dst), extra = 0;
          if (val.agg) {
            const double gpu =
                route_latency(gpu_head(pf_.node_of(x.src)), gpu_head(pf_.node_of(x.dst)));
            extra = gpu - physical;
            physical = gpu;
          }
          LXfer lx{x.src,
                   x.dst,
                   static_cast<double>(x.bytes) * seg.wire_factor,
                   val.payload,
                   std::max(0.0, seg.pipelined ? hop + extra
                                               : x.steps * hop + (x.steps - 1) * physical + extra),
                   box(x.src, x.dst)};
          cur.uses_agg |= val.agg;
          cur.xfers.push_back(lx);
        }
        if (!cur.xfers.empty() || rounds_.size() == first_round) flush();
      }
      rounds_[first_round].first = true;
      rounds_[first_round].before_s = before;
      rounds_[first_round].not_before_s = seg.not_before_s;
      rounds_.back().last = true;
    }
    for (size_t r = 0; r < rounds_.size(); ++r)
      rounds_[r].barrier_after =
          rounds_[r].uses_agg || (r + 1 < rounds_.size() && rounds_[r + 1].uses_agg);
  }

  void actor(int e) {
    const EndpointPlan& me = plans_[static_cast<size_t>(e)];
    std::vector<sg4::CommPtr> comms;
    static int payload_token;
    void* sink = nullptr;
    for (size_t r = 0; r < rounds_.size(); ++r) {
      const LRound& round = rounds_[r];
      const size_t s = static_cast<size_t>(round.segment);
      if (round.first) {
        if (round.not_before_s > 0) sg4::this_actor::sleep_until(t0_ + round.not_before_s);
        seg_start_[s] = std::min(seg_start_[s], sg4::Engine::get_clock());
        if (round.before_s > 0) sg4::this_actor::sleep_for(round.before_s);
      }
      comms.clear();
      for (int i : me.recvs[r])
        comms.push_back(round.xfers[static_cast<size_t>(i)].box->get_async(&sink));
      const double start = sg4::Engine::get_clock();
      for (int i : me.sends[r]) {
        const LXfer& x = round.xfers[static_cast<size_t>(i)];
        if (x.latency_s > 0) sg4::this_actor::sleep_until(start + x.latency_s);
        comms.push_back(x.box->put_async(&payload_token, static_cast<uint64_t>(x.wire_bytes)));
      }
      sg4::Comm::wait_all(comms);
      for (int i : me.sends[r]) {
        const LXfer& x = round.xfers[static_cast<size_t>(i)];
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
  std::vector<LRound> rounds_;
  std::vector<EndpointPlan> plans_;
  std::vector<sg4::BarrierPtr> barriers_;
  std::unordered_map<uint64_t, double> route_lat_;
  std::unordered_map<uint64_t, sg4::Mailbox*> boxes_;
  std::vector<double> seg_start_, seg_end_;
  double t0_ = 0, end_ = 0;
  bool current_staging_ = false;
  uint64_t traffic_ = 0, staging_ = 0, transfers_ = 0, local_ = 0;
};

// Writes all of `data` to fd, retrying on short writes.
void write_all(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t w = ::write(fd, data.data() + off, data.size() - off);
    if (w <= 0) {
      if (errno == EINTR) continue;
      return;
    }
    off += static_cast<size_t>(w);
  }
}

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

std::vector<ProgramResult> simulate_programs(const ClusterSpec& cluster, int p,
                                             const std::vector<Program>& programs,
                                             const SessionOptions& options) {
  int out_pipe[2], err_pipe[2];
  if (::pipe(out_pipe) != 0 || ::pipe(err_pipe) != 0)
    throw Error(std::string("simulator: cannot create a pipe: ") + std::strerror(errno));
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw Error(std::string("simulator: cannot fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    ::dup2(err_pipe[1], STDERR_FILENO);  // SimGrid's own messages, for the error report
    ::dup2(err_pipe[1], STDOUT_FILENO);
    nlohmann::json reply;
    try {
      nlohmann::json results = nlohmann::json::array();
      for (const ProgramResult& r : simulate_programs_here(cluster, p, programs, options))
        results.push_back(r.to_json());
      reply = {{"ok", true}, {"results", results}};
    } catch (const InputError& e) {
      // InputError's message is "<where>: field '<field>' = <value>: <why>".
      const std::string msg = e.what();
      const std::string prefix = e.where() + ": field '" + e.field() + "' = " + e.value() + ": ";
      reply = {{"ok", false},
               {"input", true},
               {"where", e.where()},
               {"field", e.field()},
               {"value", e.value()},
               {"why", msg.rfind(prefix, 0) == 0 ? msg.substr(prefix.size()) : msg}};
    } catch (const std::exception& e) {
      reply = {{"ok", false}, {"input", false}, {"message", e.what()}};
    }
    write_all(out_pipe[1], reply.dump());
    ::close(out_pipe[1]);
    std::fflush(nullptr);
    ::_exit(0);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  // Read stderr on the side so a chatty child never blocks on a full pipe.
  std::string reply_text, err_text;
  {
    std::string chunk;
    fd_set fds;
    bool out_open = true, err_open = true;
    char buf[65536];
    while (out_open || err_open) {
      FD_ZERO(&fds);
      if (out_open) FD_SET(out_pipe[0], &fds);
      if (err_open) FD_SET(err_pipe[0], &fds);
      if (::select(std::max(out_pipe[0], err_pipe[0]) + 1, &fds, nullptr, nullptr, nullptr) < 0) {
        if (errno == EINTR) continue;
        break;
      }
      for (auto [fd, open, dst] : {std::tuple{out_pipe[0], &out_open, &reply_text},
                                   std::tuple{err_pipe[0], &err_open, &err_text}}) {
        if (!*open || !FD_ISSET(fd, &fds)) continue;
        const ssize_t r = ::read(fd, buf, sizeof buf);
        if (r <= 0) {
          if (r < 0 && errno == EINTR) continue;
          *open = false;
        } else {
          dst->append(buf, static_cast<size_t>(r));
        }
      }
    }
  }
  ::close(out_pipe[0]);
  ::close(err_pipe[0]);
  int status = 0;
  rusage usage{};
  while (::wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  const std::string where = cluster.is_xml() ? cluster.xml_file : cluster.file;
  auto tail = [&] {
    const size_t keep = 4000;
    return err_text.size() > keep ? err_text.substr(err_text.size() - keep) : err_text;
  };
  nlohmann::json reply;
  try {
    reply = nlohmann::json::parse(reply_text);
  } catch (const nlohmann::json::exception&) {
    const std::string how = WIFSIGNALED(status)
                                ? std::string("was killed by signal ") + strsignal(WTERMSIG(status))
                                : "exited with status " + std::to_string(WEXITSTATUS(status));
    throw Error("simulator: SimGrid " + how + " while simulating cluster '" + cluster.name + "' (" +
                where + ") with " + std::to_string(p) + " GPUs" +
                (err_text.empty() ? "" : "; SimGrid said:\n" + tail()));
  }
  if (!reply.value("ok", false)) {
    if (reply.value("input", false))
      throw InputError(reply["where"], reply["field"], reply["value"], reply["why"]);
    throw Error("simulator: cluster '" + cluster.name + "' (" + where + "), " + std::to_string(p) +
                " GPUs: " + reply["message"].get<std::string>() +
                (err_text.empty() ? "" : "; SimGrid said:\n" + tail()));
  }
  std::vector<ProgramResult> out;
  for (const auto& r : reply["results"]) {
    out.push_back(ProgramResult::from_json(r));
    out.back().process_peak_rss_bytes = static_cast<uint64_t>(usage.ru_maxrss) * 1024;
  }
  return out;
}

}  // namespace clbo::sim
