#include "clbo/core/layout.hpp"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>

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
        where, "tensors", j.is_object() && j.contains("tensors") ? j["tensors"].dump() : "missing",
        "expected {\"tensors\": [{\"name\": ..., \"size\": N, \"shape\": [...]}, ...]}");
  ParamLayout l;
  const auto& arr = j["tensors"];
  if (arr.empty()) throw InputError(where, "tensors", "[]", "a layout needs at least one tensor");
  for (size_t i = 0; i < arr.size(); ++i) {
    const auto& t = arr[i];
    const std::string f = fmt::format("tensors[{}]", i);
    if (!t.is_object()) throw InputError(where, f, t.dump(), "expected an object");
    for (auto it = t.begin(); it != t.end(); ++it)
      if (it.key() != "name" && it.key() != "size" && it.key() != "shape")
        throw InputError(where, f + "." + it.key(), it.value().dump(),
                         "unknown field" + did_you_mean(it.key(), {"name", "size", "shape"}));
    std::string name = t.contains("name") ? t["name"].get<std::string>() : fmt::format("t{}", i);
    std::vector<int64_t> shape;
    if (t.contains("shape")) {
      if (!t["shape"].is_array())
        throw InputError(where, f + ".shape", t["shape"].dump(), "expected an array");
      for (const auto& d : t["shape"]) {
        if (!d.is_number_integer() || d.get<int64_t>() <= 0)
          throw InputError(where, f + ".shape", t["shape"].dump(),
                           "dimensions must be positive integers");
        shape.push_back(d.get<int64_t>());
      }
    }
    size_t size = 0;
    if (t.contains("size")) {
      if (!t["size"].is_number_integer() || t["size"].get<int64_t>() <= 0)
        throw InputError(where, f + ".size", t["size"].dump(), "must be a positive integer");
      size = t["size"].get<size_t>();
    } else if (!shape.empty()) {
      size = 1;
      for (auto d : shape) size *= static_cast<size_t>(d);
    } else {
      throw InputError(where, f + ".size", "missing", "each tensor needs a size or a shape");
    }
    if (!shape.empty()) {
      size_t prod = 1;
      for (auto d : shape) prod *= static_cast<size_t>(d);
      if (prod != size)
        throw InputError(where, f + ".shape", t["shape"].dump(),
                         fmt::format("product {} differs from size {}", prod, size));
    }
    l.add(std::move(name), size, std::move(shape));
  }
  return l;
}

ParamLayout ParamLayout::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, "(file)", path, "cannot open layout file");
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path, "(file)", path, fmt::format("invalid JSON: {}", e.what()));
  }
  return from_json(j, path);
}

nlohmann::json ParamLayout::to_json() const {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& t : tensors_)
    arr.push_back({{"name", t.name}, {"size", t.size}, {"shape", t.shape}});
  return {{"tensors", arr}};
}

}  // namespace clbo
