#include "clbo/core/layout.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "clbo/core/config.hpp"
#include "clbo/core/error.hpp"

namespace clbo {

ParamLayout ParamLayout::single(size_t n, std::string name) {
  ParamLayout l;
  l.add(std::move(name), n, {static_cast<int64_t>(n)});
  return l;
}

ParamLayout ParamLayout::from_sizes(const std::vector<size_t>& sizes) {
  ParamLayout l;
  for (size_t i = 0; i < sizes.size(); ++i)
    l.add(fmt::format("t{}", i), sizes[i], {static_cast<int64_t>(sizes[i])});
  return l;
}

void ParamLayout::add(std::string name, size_t size, std::vector<int64_t> shape) {
  tensors_.push_back(TensorSpec{std::move(name), total_, size, std::move(shape)});
  total_ += size;
}

size_t ParamLayout::ndim(size_t i) const {
  return tensors_[i].shape.empty() ? 1 : tensors_[i].shape.size();
}

void ParamLayout::require_total(size_t n, const std::string& where) const {
  if (total_ != n)
    throw InputError(where, "tensors[*].size", fmt::format("sum {}", total_),
                     fmt::format("tensor sizes must sum to the parameter count n = {}", n));
}

ParamLayout ParamLayout::from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object() || !j.contains("tensors") || !j["tensors"].is_array())
    throw InputError(
        where, "tensors",
        j.is_object() && j.contains("tensors") ? json_excerpt(j["tensors"]) : "missing",
        "expected {\"tensors\": [{\"name\": ..., \"size\": N, \"shape\": [...]}, ...]}");
  ParamLayout l;
  const auto& arr = j["tensors"];
  if (arr.empty()) throw InputError(where, "tensors", "[]", "a layout needs at least one tensor");
  for (size_t i = 0; i < arr.size(); ++i) {
    const std::string f = fmt::format("tensors[{}]", i);
    ConfigReader t(arr[i], where, f);
    for (const char* key : {"name", "size", "shape"}) t.ignore(key);
    t.finish();  // an unknown field first: a typo of "size" must not read as a missing size
    std::string name = t.string("name", fmt::format("t{}", i));
    std::vector<int64_t> shape;
    if (t.has("shape") && arr[i]["shape"].is_array() && arr[i]["shape"].empty())
      t.ignore("shape");  // a scalar's shape, as to_json writes it
    else
      shape = t.integers<int64_t>("shape", {}, 1, kMaxLayoutElements);
    uint64_t prod = 1;
    for (auto d : shape) {
      prod *= static_cast<uint64_t>(d);
      if (prod > kMaxLayoutElements)
        t.fail("shape", fmt::format("holds more than {} elements", kMaxLayoutElements));
    }
    size_t size = 0;
    if (t.has("size")) {
      size = t.integer<size_t>("size", 0, 1, kMaxLayoutElements);
    } else if (!shape.empty()) {
      size = prod;
    } else {
      t.fail("size", "each tensor needs a size or a shape");
    }
    if (!shape.empty() && prod != size)
      t.fail("shape", fmt::format("product {} differs from size {}", prod, size));
    if (l.total() + size > kMaxLayoutElements)
      throw InputError(
          where, f + ".size", std::to_string(size),
          fmt::format("the tensors hold more than {} elements in all", kMaxLayoutElements));
    l.add(std::move(name), size, std::move(shape));
  }
  return l;
}

ParamLayout ParamLayout::load(const std::string& path) {
  return from_json(load_json_file(path), path);
}

nlohmann::json ParamLayout::to_json() const {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& t : tensors_)
    arr.push_back({{"name", t.name}, {"size", t.size}, {"shape", t.shape}});
  return {{"tensors", arr}};
}

}  // namespace clbo
