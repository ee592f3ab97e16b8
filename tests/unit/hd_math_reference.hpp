#pragma once
// The exact values that tests/unit/test_hd_math.cpp measures core/hd_math.hpp against: __float128
// and libquadmath (113-bit significands, errors of an ulp or so there, 2^-60 of a double's ulp). In
// its own file, compiled by g++ only: nvcc does not take __float128 in a CUDA build.
namespace cumulus::testing {

enum class MathFn { exp, log, pow, sin, cos, erfc, atan2 };  // atan2(x, y): x the first argument
const char* to_string(MathFn f);

// |got - f(x[, y])| in ulps of the exact value's binade (2^-1074 where that is subnormal). 0 when
// `got` is what the exact value rounds to among the specials (an infinity, 0, NaN for NaN), and
// 1e300 when only one of them is special.
double ulp_error(MathFn f, double x, double y, double got);

}  // namespace cumulus::testing
