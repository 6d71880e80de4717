// Running Programs on a SimGrid platform.
//
// SimGrid keeps one engine per process, so every (cluster, GPU count) platform is
// simulated in a forked child: simulate_programs() (forked_child.cpp) forks, the child
// builds the platform (platform.cpp), lowers each Program (lowering.cpp), runs it with s4u
// actors (actors.cpp) and sends the results back as JSON over a pipe. Errors in the child —
// a bad XML platform, a host missing from the mapping, a SimGrid exception or abort — come
// back and are restated as clbo errors naming the file, field and value.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "clbo/sim/cluster.hpp"
#include "clbo/sim/lowering.hpp"
#include "clbo/sim/program.hpp"

namespace clbo::sim {

struct SegmentTiming {
  double start_s = 0, end_s = 0;  // relative to the program start
};

struct ProgramResult {
  double time_s = 0;  // program start → every endpoint done
  std::vector<SegmentTiming> segments;
  uint64_t traffic_bytes = 0;  // payload delivered between ranks (all GPUs together)
  uint64_t staging_bytes = 0;  // device↔host copies
  uint64_t transfers = 0;      // SimGrid communications executed
  uint64_t local_copies = 0;   // messages between ranks sharing an endpoint (no network)
  double wall_s = 0;           // host time spent simulating (a timing field)
  double cpu_s = 0;            // CPU time of the simulating process for this program (timing)
  uint64_t process_peak_rss_bytes = 0;  // of the whole child process (timing)
  nlohmann::json to_json() const;
  static ProgramResult from_json(const nlohmann::json& j);
};

// Simulates each program on the platform of `cluster` with p GPUs, in a child process.
std::vector<ProgramResult> simulate_programs(const ClusterSpec& cluster, int p,
                                             const std::vector<Program>& programs,
                                             const SessionOptions& options = {});

// In-process run, for the child and for tools that own their process (the benchmark).
// Must be called at most once per process.
std::vector<ProgramResult> simulate_programs_here(const ClusterSpec& cluster, int p,
                                                  const std::vector<Program>& programs,
                                                  const SessionOptions& options);

}  // namespace clbo::sim
