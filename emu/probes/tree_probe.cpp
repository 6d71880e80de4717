// clbo-tree-probe: how OpenMPI's libnbc trees and waits behave on the emulated cluster, for the
// model in sim/src/expansion/mpi_host.cpp (docs/validation.md, "Trees on TCP, measured").
//
//   clbo-tree-probe fanout [--sizes B,B,...] [--iters N]
//       libnbc's binomial broadcast from rank 0 as MPI_Iallreduce's second half schedules it
//       (nbc_iallreduce.c: every rank posts the sends to all its children at once, children
//       2^r apart), each rank's arrival time after the root starts.
//   clbo-tree-probe reduce [--sizes ...] [--iters N]
//       libnbc's binomial reduce to rank 0 alone (the first half), then the whole in-place
//       MPI_Iallreduce; both isolated calls (a barrier before each).
//   clbo-tree-probe ring [--sizes ...] [--iters N] [--pause-us P]
//       a ring allreduce's 2(p-1) hops of size/p bytes each (the data only, no sums), with the
//       receive matched as clbo's MpiCommunicator::recv does (MPI_Improbe, then MPI_Mrecv)
//       and with a receive posted before the send; isolated calls, slowest rank. With
//       --pause-us P every rank naps P us after each hop (not counted), so each link idles
//       before the next: htb's early bytes after an idle spell (docs/validation.md, Shaping).
//   clbo-tree-probe wait [--sizes ...] [--iters N]
//       MPI_Iallreduce back to back (as clbo bench times it), waited three ways: MPI_Wait,
//       clbo's poller (MPI_Test, 50 us of spinning, then 20 us naps) and MPI_Test spinning.
//   clbo-tree-probe allpairs [--sizes ...] [--iters N]
//       libnbc's linear all-pairs collectives of `size` bytes per peer, back to back, waited
//       with clbo's poller: MPI_Ialltoall, MPI_Iallgather, a 4-byte MPI_Iallgather (a
//       scale), the compressed allreduce's two flavours' rounds (an all-to-all then a 4-byte
//       allgather, one after the other; p MPI_Igathers of size bytes and p of 4 bytes, all
//       in flight; two MPI_Iallgathers of size and 4 bytes side by side). What a round
//       costs per point-to-point operation and per schedule, for the software cost of
//       sim/src/expansion/mpi_host.cpp.
//
// Prints one JSON object per line (rank 0). Times come from CLOCK_MONOTONIC on every rank:
// comparable across ranks only where all ranks share one machine's clock, as the emulated
// hosts do (on real nodes only the per-rank durations mean anything).
#include <mpi.h>
#include <sys/prctl.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace {

double now_s() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Seconds per call since t0 over `calls` back-to-back calls, the slowest rank's (at rank 0).
double slowest_per_call_s(double t0, int calls) {
  const double mine = (now_s() - t0) / calls;
  double slowest = 0;
  MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  return slowest;
}

struct Args {
  std::string mode;
  std::vector<long> sizes{65536, 1048576};
  int iters = 8;
  long pause_us = 0;  // ring: a nap after every hop, so each link idles that long between hops
};

[[noreturn]] void usage(const char* why) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  // Every rank parses the same arguments: one message is enough.
  if (rank == 0)
    std::fprintf(
        stderr,
        "clbo-tree-probe: %s\nusage: clbo-tree-probe fanout|reduce|ring|wait|allpairs [--sizes "
        "B,B,...] "
        "[--iters N] [--pause-us P]  (sizes in bytes, multiples of 4; iters >= 2, the first not "
        "reported; --pause-us for ring only)\n",
        why);
  MPI_Abort(MPI_COMM_WORLD, 2);
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  if (argc < 2) usage("a mode is required");
  a.mode = argv[1];
  if (a.mode != "fanout" && a.mode != "reduce" && a.mode != "ring" && a.mode != "wait" &&
      a.mode != "allpairs")
    usage("unknown mode");
  for (int i = 2; i < argc; ++i) {
    const std::string k = argv[i];
    if (i + 1 >= argc) usage("an option lacks its value");
    const char* v = argv[++i];
    if (k == "--pause-us") {
      a.pause_us = std::atol(v);
      if (a.pause_us < 0 || a.pause_us > 1000000) usage("--pause-us must be in 0..1000000");
    } else if (k == "--iters") {
      a.iters = std::atoi(v);
      if (a.iters < 2) usage("--iters must be at least 2");
    } else if (k == "--sizes") {
      a.sizes.clear();
      for (const char* s = v; *s;) {
        char* end = nullptr;
        const long b = std::strtol(s, &end, 10);
        if (end == s || b <= 0 || b % 4 != 0 || b > (1L << 30)) usage("bad --sizes entry");
        a.sizes.push_back(b);
        s = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') usage("bad --sizes entry");
      }
    } else {
      usage("unknown option");
    }
  }
  return a;
}

int log2_ceil(int p) {
  int r = 0;
  while ((1 << r) < p) ++r;
  return r;
}

// The broadcast half of libnbc's binomial allreduce (root 0): receive from the parent, then
// post the sends to every child at once. Returns when this rank's copy arrived.
double binomial_bcast(char* buf, int bytes, int rank, int p) {
  const int maxr = log2_ceil(p);
  if (rank != 0)
    for (int r = 0; r < maxr; ++r)
      if (rank >= (1 << r) && rank < (1 << (r + 1)))
        MPI_Recv(buf, bytes, MPI_BYTE, rank - (1 << r), 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  const double arrived = now_s();
  std::vector<MPI_Request> req;
  for (int r = 0; r < maxr; ++r)
    if (rank + (1 << r) < p && (rank < (1 << r) || rank == 0)) {
      req.emplace_back();
      MPI_Isend(buf, bytes, MPI_BYTE, rank + (1 << r), 0, MPI_COMM_WORLD, &req.back());
    }
  MPI_Waitall(static_cast<int>(req.size()), req.data(), MPI_STATUSES_IGNORE);
  return arrived;
}

// The reduce half: in round r a rank that is a multiple of 2^r receives from rank + 2^(r-1)
// and adds; the others send their partial sum to rank - 2^(r-1) and leave.
void binomial_reduce(float* buf, float* tmp, int n, int rank, int p) {
  for (int r = 1; r <= log2_ceil(p); ++r) {
    if (rank % (1 << r) == 0) {
      const int peer = rank + (1 << (r - 1));
      if (peer >= p) continue;
      MPI_Recv(tmp, n, MPI_FLOAT, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      for (int i = 0; i < n; ++i) buf[i] += tmp[i];
    } else {
      MPI_Send(buf, n, MPI_FLOAT, rank - (1 << (r - 1)), 0, MPI_COMM_WORLD);
      return;
    }
  }
}

void synced_start() {
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
}

void fanout(const Args& a, int rank, int p, std::vector<float>& mem) {
  char* buf = reinterpret_cast<char*>(mem.data());
  for (long bytes : a.sizes)
    for (int it = 0; it < a.iters; ++it) {
      synced_start();
      const double t0 = now_s();
      const double arrived = binomial_bcast(buf, static_cast<int>(bytes), rank, p);
      double mine[3] = {t0, arrived, now_s()};
      std::vector<double> all(3 * static_cast<size_t>(p));
      MPI_Gather(mine, 3, MPI_DOUBLE, all.data(), 3, MPI_DOUBLE, 0, MPI_COMM_WORLD);
      if (rank != 0 || it == 0) continue;
      double done = 0;
      std::printf("{\"mode\": \"fanout\", \"bytes\": %ld, \"iter\": %d, \"arrival_ms\": [", bytes,
                  it);
      for (int i = 0; i < p; ++i) {
        std::printf("%s%.3f", i ? ", " : "", (all[3 * i + 1] - all[0]) * 1e3);
        done = std::max(done, all[3 * i + 2] - all[0]);
      }
      std::printf("], \"done_ms\": %.3f}\n", done * 1e3);
    }
}

void reduce(const Args& a, int rank, int p, std::vector<float>& mem) {
  std::vector<float> tmp(mem.size());
  for (long bytes : a.sizes)
    for (int it = 0; it < a.iters; ++it) {
      const int n = static_cast<int>(bytes / 4);
      synced_start();
      double t0 = now_s();
      binomial_reduce(mem.data(), tmp.data(), n, rank, p);
      const double reduce_s = now_s() - t0;
      synced_start();
      t0 = now_s();
      MPI_Request q;
      MPI_Iallreduce(MPI_IN_PLACE, mem.data(), n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &q);
      MPI_Wait(&q, MPI_STATUS_IGNORE);
      const double mine = now_s() - t0;
      double slowest = 0;
      MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
      if (rank == 0 && it > 0)
        std::printf(
            "{\"mode\": \"reduce\", \"bytes\": %ld, \"iter\": %d, \"reduce_at_root_ms\": "
            "%.3f, \"iallreduce_slowest_rank_ms\": %.3f}\n",
            bytes, it, reduce_s * 1e3, slowest * 1e3);
    }
}

// One ring hop: send `bytes` to next, receive as many from prev.
void hop(char* out, char* in, int bytes, int next, int prev, bool probe) {
  MPI_Request s, r;
  if (!probe) MPI_Irecv(in, bytes, MPI_BYTE, prev, 1, MPI_COMM_WORLD, &r);
  MPI_Isend(out, bytes, MPI_BYTE, next, 1, MPI_COMM_WORLD, &s);
  if (probe) {
    int found = 0;
    MPI_Message m;
    MPI_Status st;
    while (!found) MPI_Improbe(prev, 1, MPI_COMM_WORLD, &found, &m, &st);
    MPI_Mrecv(in, bytes, MPI_BYTE, &m, MPI_STATUS_IGNORE);
  } else {
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  }
  MPI_Wait(&s, MPI_STATUS_IGNORE);
}

void ring(const Args& a, int rank, int p, std::vector<float>& mem) {
  std::vector<char> in(mem.size() * 4);
  char* out = reinterpret_cast<char*>(mem.data());
  const int next = (rank + 1) % p, prev = (rank + p - 1) % p;
  for (long bytes : a.sizes)
    for (int probe = 1; probe >= 0; --probe)
      for (int it = 0; it < a.iters; ++it) {
        const int chunk = static_cast<int>(bytes / p);
        synced_start();
        const double t0 = now_s();
        for (int h = 0; h < 2 * (p - 1); ++h) {
          hop(out, in.data(), chunk, next, prev, probe);
          if (a.pause_us > 0) {
            const timespec nap{a.pause_us / 1000000, (a.pause_us % 1000000) * 1000};
            nanosleep(&nap, nullptr);
          }
        }
        // Per hop, the naps taken out: what the bytes and the messages' own costs took.
        const double mine = now_s() - t0 - 2 * (p - 1) * a.pause_us * 1e-6;
        double slowest = 0;
        MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (rank == 0 && it > 0)
          std::printf(
              "{\"mode\": \"ring\", \"bytes\": %ld, \"hop_bytes\": %d, \"receive\": "
              "\"%s\", \"pause_us\": %ld, \"iter\": %d, \"ms_slowest_rank\": %.3f, "
              "\"ms_per_hop\": %.4f}\n",
              bytes, chunk, probe ? "improbe" : "posted", a.pause_us, it, slowest * 1e3,
              slowest * 1e3 / (2 * (p - 1)));
      }
}

void wait_for(MPI_Request* q, int how) {
  if (how == 0) {
    MPI_Wait(q, MPI_STATUS_IGNORE);
    return;
  }
  const double t0 = now_s();
  for (;;) {
    int done = 0;
    MPI_Test(q, &done, MPI_STATUS_IGNORE);
    if (done) return;
    if (how == 1 && now_s() - t0 >= 50e-6) {
      const timespec nap{0, 20000};
      nanosleep(&nap, nullptr);
    }
  }
}

void waits(const Args& a, int rank, int p, std::vector<float>& mem) {
  (void)p;
  const char* names[] = {"MPI_Wait", "clbo poller", "MPI_Test spin"};
  // As clbo's MPI backend: 20 us naps need a small timer slack to stay 20 us.
  prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  for (long bytes : a.sizes)
    for (int how = 0; how < 3; ++how) {
      const int n = static_cast<int>(bytes / 4);
      MPI_Request q;
      synced_start();
      MPI_Iallreduce(MPI_IN_PLACE, mem.data(), n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &q);
      wait_for(&q, how);  // the untimed first call
      synced_start();
      const double t0 = now_s();
      for (int it = 1; it < a.iters; ++it) {
        MPI_Iallreduce(MPI_IN_PLACE, mem.data(), n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &q);
        wait_for(&q, how);
      }
      const double slowest = slowest_per_call_s(t0, a.iters - 1);
      if (rank == 0)
        std::printf(
            "{\"mode\": \"wait\", \"bytes\": %ld, \"wait\": \"%s\", \"calls\": %d, "
            "\"ms_per_call_slowest_rank\": %.3f}\n",
            bytes, names[how], a.iters - 1, slowest * 1e3);
    }
}

// Waits for every request as clbo's MpiCommunicator::wait_all does: MPI_Testall, 50 us of
// spinning, then 20 us naps.
void wait_all(std::vector<MPI_Request>& q) {
  const double t0 = now_s();
  for (;;) {
    int done = 0;
    MPI_Testall(static_cast<int>(q.size()), q.data(), &done, MPI_STATUSES_IGNORE);
    if (done) return;
    if (now_s() - t0 >= 50e-6) {
      const timespec nap{0, 20000};
      nanosleep(&nap, nullptr);
    }
  }
}

void allpairs(const Args& a, int rank, int p, std::vector<float>& mem) {
  prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  for (long bytes : a.sizes) {
    const int s = static_cast<int>(bytes);
    std::vector<char> out(static_cast<size_t>(p) * s), in(static_cast<size_t>(p) * s);
    std::vector<char> scales_in(static_cast<size_t>(p) * 4 * p);
    char* own = reinterpret_cast<char*>(mem.data());
    // One call of each pattern; each returns once every request has completed.
    auto alltoall = [&] {
      std::vector<MPI_Request> q(1);
      MPI_Ialltoall(out.data(), s, MPI_BYTE, in.data(), s, MPI_BYTE, MPI_COMM_WORLD, &q[0]);
      wait_all(q);
    };
    auto allgather = [&](int n) {
      std::vector<MPI_Request> q(1);
      MPI_Iallgather(own, n, MPI_BYTE, in.data(), n, MPI_BYTE, MPI_COMM_WORLD, &q[0]);
      wait_all(q);
    };
    auto patterns = std::vector<std::pair<const char*, std::function<void()>>>{
        {"alltoall", alltoall},
        {"allgather", [&] { allgather(s); }},
        {"allgather 4 B", [&] { allgather(4); }},
        {"alltoall, then allgather 4 B", [&] { alltoall(), allgather(4); }},
        {"p gathers + p gathers of 4 B in flight",
         [&] {
           std::vector<MPI_Request> q(2 * static_cast<size_t>(p));
           for (int root = 0; root < p; ++root) {
             MPI_Igather(out.data() + static_cast<size_t>(root) * s, s, MPI_BYTE, in.data(), s,
                         MPI_BYTE, root, MPI_COMM_WORLD, &q[2 * root]);
             MPI_Igather(own, 4, MPI_BYTE, scales_in.data() + static_cast<size_t>(root) * 4 * p, 4,
                         MPI_BYTE, root, MPI_COMM_WORLD, &q[2 * root + 1]);
           }
           wait_all(q);
         }},
        {"allgather + allgather 4 B in flight", [&] {
           std::vector<MPI_Request> q(2);
           MPI_Iallgather(own, s, MPI_BYTE, in.data(), s, MPI_BYTE, MPI_COMM_WORLD, &q[0]);
           MPI_Iallgather(own, 4, MPI_BYTE, scales_in.data(), 4, MPI_BYTE, MPI_COMM_WORLD, &q[1]);
           wait_all(q);
         }}};
    for (auto& [name, call] : patterns) {
      synced_start();
      call();  // the untimed first call
      synced_start();
      const double t0 = now_s();
      for (int it = 1; it < a.iters; ++it) call();
      const double slowest = slowest_per_call_s(t0, a.iters - 1);
      if (rank == 0)
        std::printf(
            "{\"mode\": \"allpairs\", \"bytes_per_peer\": %ld, \"pattern\": \"%s\", "
            "\"p\": %d, \"calls\": %d, \"ms_per_call_slowest_rank\": %.4f}\n",
            bytes, name, p, a.iters - 1, slowest * 1e3);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  const Args a = parse(argc, argv);
  if (p < 2) usage("run it on at least 2 ranks");
  long largest = 0;
  for (long b : a.sizes) largest = b > largest ? b : largest;
  // Small values keep the sums finite however many rounds add them up.
  std::vector<float> mem(static_cast<size_t>(largest / 4), 1e-6f);
  if (a.mode == "fanout") fanout(a, rank, p, mem);
  if (a.mode == "reduce") reduce(a, rank, p, mem);
  if (a.mode == "ring") ring(a, rank, p, mem);
  if (a.mode == "wait") waits(a, rank, p, mem);
  if (a.mode == "allpairs") allpairs(a, rank, p, mem);
  std::fflush(stdout);
  MPI_Finalize();
  return 0;
}
