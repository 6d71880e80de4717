#include "clbo/sim/expansion/options.hpp"

namespace clbo::sim {

const char* to_string(Backend b) {
  return kBackendNames.name(b);
}
const char* to_string(Implementation i) {
  return kImplementationNames.name(i);
}
const char* to_string(Algo a) {
  return kAlgoNames.name(a);
}
const char* to_string(Proto p) {
  return kProtoNames.name(p);
}

}  // namespace clbo::sim
