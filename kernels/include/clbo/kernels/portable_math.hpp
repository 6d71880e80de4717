// exp and log in double whose results depend on the input alone. The C library's exp and log
// are not fixed functions of the input: glibc picks an FMA build of them at run time on CPUs
// that have FMA, and the two builds round a small share of arguments differently. The
// training loss (millions of exp per step, printed with 17 digits) would then depend on the
// machine. These use only +, −, ×, ÷ (each rounded as IEEE 754 defines, contraction off) and
// exact scaling, so every machine and library gives the same bits. Accuracy: within 2 ulp of
// the exact value (tested against std::exp and std::log).
#pragma once

namespace clbo::kernels {

// e^x; +0 below about −745.1, +Inf above about 709.78, NaN for NaN.
double portable_exp(double x);

// ln x; −Inf at ±0, NaN below 0 and for NaN, +Inf at +Inf.
double portable_log(double x);

}  // namespace clbo::kernels
