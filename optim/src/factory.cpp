// make_optimizer: config → the optimizer of its kind.
#include <iterator>
#include <variant>

#include "clbo/core/error.hpp"
#include "optimizers.hpp"

namespace clbo {

std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& config, const ParamLayout& layout,
                                          int world_size, int rank) {
  using namespace optim_detail;
  // Indexed by OptimizerKind.
  static constexpr Maker kMakers[] = {make_adam,
                                      make_lamb,
                                      make_onebit_adam,
                                      make_onebit_lamb,
                                      make_zero_one_adam,
                                      make_slamb,
                                      make_onebit_adam,
                                      make_naive_onebit_adam,
                                      make_naive_onebit_lamb};
  static_assert(std::size(kMakers) == std::variant_size_v<decltype(config.params)>);
  return kMakers[static_cast<size_t>(config.kind)](config, layout, world_size, rank);
}

std::unique_ptr<Optimizer> make_optimizer(const nlohmann::json& block, const std::string& file,
                                          const ParamLayout& layout, int world_size, int rank) {
  return make_optimizer(parse_optimizer_config(block, file), layout, world_size, rank);
}

const std::vector<std::string>& optimizer_types() {
  return optimizer_type_names();
}

}  // namespace clbo
