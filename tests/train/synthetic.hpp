// A small synthetic stand-in for Fashion-MNIST (28x28 "images", 10 classes) so the trainer's
// tests run in milliseconds and without the Debian package: class c lights up its own
// block of pixels on top of deterministic noise, so it is learnable but not trivially.
#pragma once
#include <cstdint>

#include "clbo/train/fashion_mnist.hpp"

namespace clbo::train::synthetic {

inline ImageSet synthetic_split(size_t n, uint64_t seed) {
  ImageSet s;
  s.n = n;
  s.rows = s.cols = 28;
  s.pixels.resize(n * 784);
  s.labels.resize(n);
  uint64_t state = seed * 2654435761u + 1;
  const auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<float>((state >> 40) & 0xFFFF) / 65535.0f - 0.5f;  // [-0.5, 0.5]
  };
  for (size_t i = 0; i < n; ++i) {
    const auto c = static_cast<uint8_t>(i * 7 % 10);
    s.labels[i] = c;
    for (size_t j = 0; j < 784; ++j) {
      const bool lit = (j / 28) / 3 == c && (j % 28) < 14;  // rows 3c..3c+2, left half
      s.pixels[i * 784 + j] = next() + (lit ? 0.6f : 0.0f);
    }
  }
  return s;
}

inline FashionMnist synthetic_fashion(size_t n_train = 1536, size_t n_test = 300) {
  FashionMnist d;
  d.train = synthetic_split(n_train, 1);
  d.test = synthetic_split(n_test, 2);
  return d;
}

}  // namespace clbo::train::synthetic
