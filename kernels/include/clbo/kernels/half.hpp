// fp32 <-> IEEE binary16 conversion, round to nearest even, with subnormals, ±Inf and NaN
// (NaN stays NaN, quiet; the CPU code keeps the top payload bits, as x86 F16C does).
// Overflow rounds to ±Inf as IEEE requires. Used for fp16 wire formats (SLAMB's comm_dtype
// "fp16", fp16-cast compression).
#pragma once
#include <cstddef>
#include <cstdint>

namespace clbo::kernels {

uint16_t f32_to_f16(float f);
float f16_to_f32(uint16_t h);

void f32_to_f16(const float* src, size_t n, uint16_t* dst);
void f16_to_f32(const uint16_t* src, size_t n, float* dst);

namespace ref {
void f32_to_f16(const float* src, size_t n, uint16_t* dst);
void f16_to_f32(const uint16_t* src, size_t n, float* dst);
}  // namespace ref

}  // namespace clbo::kernels
