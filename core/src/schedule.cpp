#include "clbo/core/schedule.hpp"

namespace clbo {

const char* to_string(CollKind k) {
  return kCollKindNames.name(k);
}
const char* to_string(DType d) {
  return kDTypeNames.name(d);
}
const char* to_string(Phase p) {
  return kPhaseNames.name(p);
}

size_t dtype_bytes(DType d) {
  return d == DType::kF32 ? 4 : d == DType::kF16 ? 2 : 1;
}

}  // namespace clbo
