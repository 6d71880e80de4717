// Small classifiers with hand-written backward passes over one flat parameter buffer.
//
// Parameters live in one flat array described by a ParamLayout (PyTorch's tensor order and
// shapes: weight [out, in] or [out, in, k, k], then bias), which is exactly what the
// optimizers and collectives consume. Models are templates over the scalar type so tests
// can check the float code's formulas against finite differences in double precision.
//
// A model object is immutable after construction: forward and loss_and_grad keep their
// scratch buffers per thread (reused between calls), so any number of threads may call them
// at once.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "clbo/core/layout.hpp"

namespace clbo::train {

template <class T>
class Model {
 public:
  virtual ~Model() = default;
  virtual std::string name() const = 0;
  const ParamLayout& layout() const { return layout_; }
  size_t num_params() const { return layout_.total(); }
  virtual size_t input_size() const = 0;  // features per example
  virtual size_t num_classes() const = 0;

  // Initial parameters: weights uniform in ±sqrt(6/fan_in) (He, for ReLU nets) from a Philox
  // stream keyed by `seed` and the tensor index, biases zero. Same seed, same bytes anywhere.
  void init(T* params, uint64_t seed) const;

  // logits (batch x classes, row-major) for x (batch x input_size, row-major).
  virtual void forward(const T* params, const T* x, size_t batch, T* logits) const = 0;

  // Returns the SUM over the batch of softmax cross-entropy losses, and overwrites grad
  // (num_params values) with its gradient. Summing (not averaging) lets callers split a
  // batch into pieces and add the pieces in a fixed order.
  virtual double loss_and_grad(const T* params, const T* x, const uint8_t* labels, size_t batch,
                               T* grad) const = 0;

 protected:
  // fan_in per tensor for init(); 0 marks a bias (zero-initialised).
  std::vector<size_t> fan_in_;
  ParamLayout layout_;
};

// Multi-layer perceptron: sizes = {in, hidden..., classes}, ReLU between layers.
template <class T>
std::unique_ptr<Model<T>> make_mlp(const std::vector<size_t>& sizes);

// Two "same"-padded stride-1 convolutions, each followed by ReLU and 2x2 max pooling, then
// one fully connected layer to the classes. Activations are NHWC; height and width must be
// divisible by 4 and kernels odd.
struct CnnShape {
  size_t height = 28, width = 28, in_channels = 1;
  size_t conv1_channels = 8, conv1_kernel = 5;
  size_t conv2_channels = 32, conv2_kernel = 3;
  size_t classes = 10;
};
template <class T>
std::unique_ptr<Model<T>> make_cnn(const CnnShape& shape);

// The models `clbo train` offers on 28x28 Fashion-MNIST: "mlp" (784-512-256-10), "cnn"
// (CnnShape defaults) and "mlp_small" (784-64-32-10, for quick checks and the tests).
// Throws InputError naming `where`/`field` with a suggestion otherwise.
const std::vector<std::string>& model_names();
std::unique_ptr<Model<float>> make_model(const std::string& name, const std::string& where,
                                         const std::string& field);

// Shared by the models: for row-major logits (batch x classes), writes
// dlogits = softmax − onehot and returns Σ −log softmax[label], computed stably in double.
template <class T>
double softmax_xent(const T* logits, const uint8_t* labels, size_t batch, size_t classes,
                    T* dlogits);

}  // namespace clbo::train
