// ParamLayout: where each tensor lives inside one flat fp32 buffer. Per-tensor rules
// (LAMB trust ratios, SLAMB's small-tensor rule, 1-bit LAMB scaling coefficients) read it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace clbo {

// The most elements a layout may describe (2^48, far beyond any model clbo simulates), so
// that sizes and offsets can never overflow.
inline constexpr uint64_t kMaxLayoutElements = uint64_t{1} << 48;

struct TensorSpec {
  std::string name;
  size_t offset = 0;  // first element in the flat buffer
  size_t size = 0;    // element count; equals the product of shape when shape is given
  std::vector<int64_t> shape;
};

class ParamLayout {
 public:
  ParamLayout() = default;
  // One tensor covering n elements (the layout replay uses when none is given).
  static ParamLayout single(size_t n, std::string name = "flat");
  // Tensors in order, contiguous from offset 0.
  static ParamLayout from_sizes(const std::vector<size_t>& sizes);
  // {"tensors": [{"name": "...", "size": N, "shape": [...]}, ...]}; `where` names the source in
  // errors.
  static ParamLayout from_json(const nlohmann::json& j, const std::string& where);
  static ParamLayout load(const std::string& path);
  nlohmann::json to_json() const;

  void add(std::string name, size_t size, std::vector<int64_t> shape = {});
  size_t num_tensors() const { return tensors_.size(); }
  const TensorSpec& operator[](size_t i) const { return tensors_[i]; }
  const std::vector<TensorSpec>& tensors() const { return tensors_; }
  size_t total() const { return total_; }
  // Number of dimensions as the model declares it (shape size; 1 when no shape was given).
  size_t ndim(size_t i) const;
  // Throws InputError naming `where` when the layout does not cover exactly n elements.
  void require_total(size_t n, const std::string& where) const;

 private:
  std::vector<TensorSpec> tensors_;
  size_t total_ = 0;
};

}  // namespace clbo
