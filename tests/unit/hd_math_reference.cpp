// See hd_math_reference.hpp. Host-only (g++): libquadmath's functions on __float128.
#include "hd_math_reference.hpp"

#include <quadmath.h>

#include <cmath>

namespace cumulus::testing {

const char* to_string(MathFn f) {
  switch (f) {
    case MathFn::exp:
      return "exp";
    case MathFn::log:
      return "log";
    case MathFn::pow:
      return "pow";
    case MathFn::sin:
      return "sin";
    case MathFn::cos:
      return "cos";
    case MathFn::erfc:
      return "erfc";
    case MathFn::atan2:
      return "atan2";
  }
  return "?";
}

namespace {
__float128 exact(MathFn f, double x, double y) {
  const __float128 qx = x;
  switch (f) {
    case MathFn::exp:
      return expq(qx);
    case MathFn::log:
      return logq(qx);
    case MathFn::pow:
      return powq(qx, static_cast<__float128>(y));
    case MathFn::sin:
      return sinq(qx);
    case MathFn::cos:
      return cosq(qx);
    case MathFn::erfc:
      return erfcq(qx);
    case MathFn::atan2:
      return atan2q(qx, static_cast<__float128>(y));
  }
  return nanq("");
}
}  // namespace

double ulp_error(MathFn f, double x, double y, double got) {
  const __float128 e = exact(f, x, y);
  const double rounded = static_cast<double>(e);  // the correctly rounded double (or an infinity)
  if (std::isnan(rounded) || std::isnan(got)) return std::isnan(rounded) && std::isnan(got) ? 0.0 : 1e300;
  if (std::isinf(rounded) || std::isinf(got)) return rounded == got ? 0.0 : 1e300;
  int binade = 0;
  frexpq(e, &binade);  // |e| = m 2^binade, m in [0.5, 1): an ulp of the double is 2^(binade - 53)
  const int ulp_exp = binade - 53 < -1074 ? -1074 : binade - 53;
  return static_cast<double>(fabsq(static_cast<__float128>(got) - e) / ldexpq(1, ulp_exp));
}

}  // namespace cumulus::testing
