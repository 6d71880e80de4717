#include "clbo/sim/expansion/options.hpp"

namespace clbo::sim {

const char* to_string(Backend b) {
  return b == Backend::kNccl ? "nccl" : b == Backend::kMpi ? "mpi" : "mpi_host";
}
const char* to_string(Implementation i) {
  return i == Implementation::kClbo ? "clbo" : "deepspeed";
}
const char* to_string(Algo a) {
  switch (a) {
    case Algo::kAuto:
      return "auto";
    case Algo::kRing:
      return "ring";
    case Algo::kTree:
      return "tree";
    case Algo::kHierarchical:
      return "hierarchical";
    case Algo::kBinomial:
      return "binomial";
  }
  return "?";
}
const char* to_string(Proto p) {
  switch (p) {
    case Proto::kAuto:
      return "auto";
    case Proto::kLL:
      return "LL";
    case Proto::kLL128:
      return "LL128";
    case Proto::kSimple:
      return "Simple";
  }
  return "?";
}

}  // namespace clbo::sim
