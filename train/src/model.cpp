#include "clbo/train/model.hpp"

#include <algorithm>
#include <cmath>

#include "clbo/core/error.hpp"
#include "clbo/core/philox.hpp"
#include "clbo/kernels/portable_math.hpp"

namespace clbo::train {

template <class T>
void Model<T>::init(T* params, uint64_t seed) const {
  for (size_t ti = 0; ti < layout_.num_tensors(); ++ti) {
    const TensorSpec& t = layout_[ti];
    T* dst = params + t.offset;
    if (fan_in_[ti] == 0) {
      std::fill(dst, dst + t.size, T(0));
      continue;
    }
    const double bound = std::sqrt(6.0 / static_cast<double>(fan_in_[ti]));
    // Counter = (element quad, tensor index, a constant tag); key = the seed.
    for (size_t i = 0; i < t.size; i += 4) {
      const uint64_t q = i / 4;
      const Philox4x32 r = philox4x32_10(
          static_cast<uint32_t>(q), static_cast<uint32_t>(q >> 32), static_cast<uint32_t>(ti),
          0x1217u, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
      for (size_t j = 0; j < 4 && i + j < t.size; ++j) {
        const double u = (r.v[j] >> 8) * (1.0 / 16777216.0);  // [0, 1) with 24 bits
        dst[i + j] = static_cast<T>((2.0 * u - 1.0) * bound);
      }
    }
  }
}

template <class T>
double softmax_xent(const T* logits, const uint8_t* labels, size_t batch, size_t classes,
                    T* dlogits) {
  double loss = 0;
  std::vector<double> e(classes);
  for (size_t b = 0; b < batch; ++b) {
    const T* z = logits + b * classes;
    double zmax = z[0];
    for (size_t c = 1; c < classes; ++c) zmax = std::max<double>(zmax, z[c]);
    double sum = 0;
    // portable_exp/log, not the C library's: their bits must not depend on the machine.
    for (size_t c = 0; c < classes; ++c) sum += (e[c] = kernels::portable_exp(double(z[c]) - zmax));
    const size_t y = labels[b];
    loss += kernels::portable_log(sum) - (double(z[y]) - zmax);
    for (size_t c = 0; c < classes; ++c)
      dlogits[b * classes + c] = static_cast<T>(e[c] / sum - (c == y ? 1.0 : 0.0));
  }
  return loss;
}

const std::vector<std::string>& model_names() {
  static const std::vector<std::string> names{"mlp", "cnn", "mlp_small"};
  return names;
}

std::unique_ptr<Model<float>> make_model(const std::string& name, const std::string& where,
                                         const std::string& field) {
  if (name == "mlp") return make_mlp<float>({784, 512, 256, 10});
  if (name == "cnn") return make_cnn<float>(CnnShape{});
  if (name == "mlp_small") return make_mlp<float>({784, 64, 32, 10});
  throw InputError(where, field, "\"" + name + "\"",
                   "unknown model; known: mlp, cnn, mlp_small" + did_you_mean(name, model_names()));
}

template class Model<float>;
template class Model<double>;
template double softmax_xent<float>(const float*, const uint8_t*, size_t, size_t, float*);
template double softmax_xent<double>(const double*, const uint8_t*, size_t, size_t, double*);

}  // namespace clbo::train
