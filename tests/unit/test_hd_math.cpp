// Kernel source (nvcc in a CUDA build): core/hd_math.hpp against __float128 on the host, and the
// device's bits against the host's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include "../backends.hpp"
#include "core/hd_math.hpp"
#include "core/memory.hpp"
#include "hd_math_reference.hpp"

using namespace cumulus;
using cumulus::testing::MathFn;
using cumulus::testing::ulp_error;

namespace {

constexpr MathFn kAll[] = {MathFn::exp, MathFn::log, MathFn::pow, MathFn::sin, MathFn::cos, MathFn::erfc, MathFn::atan2};
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// splitmix64: the same stream on every platform (std's distributions are not).
struct Random {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform(double a, double b) { return a + (b - a) * (static_cast<double>(next() >> 11) * 0x1p-53); }
  // |x| log-uniform in [2^lo, 2^hi), random sign when `sign`.
  double log_uniform(double lo, double hi, bool sign) {
    const double v = std::exp2(uniform(lo, hi));
    return sign && (next() & 1) ? -v : v;
  }
};

struct Points {
  std::vector<double> x, y;  // y: pow's exponent, atan2's second argument (unused by the others)
  void add(double a, double b = 0.0) {
    x.push_back(a);
    y.push_back(b);
  }
};

// Dense sweeps over each function's working range, random points with a fixed seed, the edges of
// the ranges and pieces, and the special values. `scale` thins the sweeps (the device test needs
// fewer points than the accuracy test).
Points points_for(MathFn f, int scale) {
  Points p;
  Random r{0x5eed0000u + static_cast<unsigned>(f)};
  const int n = 40000 / scale;
  auto sweep = [&](double a, double b, int m, double y = 0.0) {
    for (int i = 0; i <= m; ++i) p.add(a + (b - a) * i / m, y);
  };
  switch (f) {
    case MathFn::exp:
      sweep(-745.2, 709.8, n);
      sweep(-1, 1, n / 4);
      for (int i = 0; i < n; ++i) p.add(r.uniform(-745.2, 709.8));
      for (int i = 0; i < n / 4; ++i) p.add(r.log_uniform(-60, 0, true));
      for (double v : {0.0, -0.0, 1e-300, -1e-300, 709.78, 709.7827128933840, 709.7827128933841, 709.79, -708.39,
                       -708.4, -745.13, -745.1332191019411, -745.1332191019412, -745.14, kInf, -kInf, kNaN})
        p.add(v);
      break;
    case MathFn::log:
      sweep(0.5, 2.0, n);
      for (int i = 0; i < n; ++i) p.add(r.log_uniform(-1074, 1024, false));
      for (int i = 0; i < n / 4; ++i) p.add(1.0 + r.uniform(-0x1p-20, 0x1p-20));
      for (double v : {1.0, 0x1p-1074, 0x1p-1022, 0x1.fffffffffffffp-1023, 0x1.fffffffffffffp+1023,
                       0x1.6a09e667f3bccp+0, 0x1.6a09e667f3bcep+0, 0.0, -0.0, -1.0, kInf, -kInf, kNaN})
        p.add(v);
      break;
    case MathFn::pow:
      // The heat solver's use: base in (0, 1], exponents 1/2, 1, 3/2.
      for (double e : {0.5, 1.0, 1.5}) {
        sweep(1e-6, 1.0, n / 4, e);
        for (int i = 0; i < n / 8; ++i) p.add(r.log_uniform(-1074, 0, false), e);
      }
      // Everything else: y log x spread over the whole range of exp.
      for (int i = 0; i < n; ++i) {
        const double x = r.log_uniform(-1074, 1024, false);
        const double t = r.uniform(-745, 709.7);
        p.add(x, t / std::log(x));
      }
      for (int i = 0; i < n / 4; ++i) p.add(r.uniform(0.5, 2.0), r.uniform(-50, 50));
      // x near 1 with a large y: the case that needs log x to about 2^-63.
      for (int i = 0; i < n / 4; ++i) {
        const double x = 1.0 + r.uniform(-0x1p-10, 0x1p-10);
        if (x != 1.0) p.add(x, r.uniform(-745, 709.7) / std::log(x));
      }
      for (double v : {0.0, 1.0, 2.0, 0.5, kInf, kNaN})
        for (double e : {0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 1024.0, -1075.0, kInf, -kInf, kNaN}) p.add(v, e);
      p.add(-2.0, 2.0);
      break;
    case MathFn::sin:
    case MathFn::cos:
      sweep(-10, 10, n / 2);
      sweep(-1e5, 1e5, n);
      for (int i = 0; i < n; ++i) p.add(r.log_uniform(-30, 50, true));
      // The doubles nearest to multiples of pi/2: the hardest reductions.
      for (int i = 0; i < n / 4; ++i) {
        const double k = std::floor(r.log_uniform(0, 40, false));
        p.add(k * 1.5707963267948966);
      }
      for (double v : {0.0, -0.0, 1e-300, 0x1p-1074, 0x1p-27, 0x1p-26, 0.7853981633974483, 1.5707963267948966,
                       3.141592653589793, 1e5, 0x1.fffffffffffffp+49, 0x1p50, kInf, -kInf, kNaN})
        p.add(v);
      break;
    case MathFn::erfc:
      sweep(-6.5, 27.3, n);
      sweep(-0.5, 0.5, n / 4);
      for (int i = 0; i < n; ++i) p.add(r.uniform(-6.5, 27.5));
      for (int i = 0; i < n / 4; ++i) p.add(r.log_uniform(-60, -1, true));
      for (double a : {0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 6.0, 27.226017111108363, 27.3})
        for (double v : {a, std::nextafter(a, 0.0), std::nextafter(a, 100.0)}) {
          p.add(v);
          p.add(-v);
        }
      for (double v : {0.0, -0.0, 1e-300, 26.5, 27.2, kInf, -kInf, kNaN}) p.add(v);
      break;
    case MathFn::atan2:
      // Every direction, the md solver's angles (a cross product's norm against a dot product),
      // the pieces' edges (t = tan(pi/8), t = 1) and wide ranges of magnitudes.
      for (int i = 0; i <= n; ++i) {
        const double t = -3.2 + 6.4 * i / n;
        p.add(std::sin(t), std::cos(t));
      }
      for (int i = 0; i < n; ++i) p.add(r.uniform(0, 1), r.uniform(-1, 1));
      for (int i = 0; i < n; ++i) p.add(r.log_uniform(-60, 60, true), r.log_uniform(-60, 60, true));
      for (int i = 0; i < n / 4; ++i) {
        const double d = r.uniform(0.5, 2);
        p.add(d * r.uniform(0.40, 0.43), d);
        p.add(d * r.uniform(0.99, 1.01), d);
      }
      for (double a : {0.0, -0.0, 1.0, -1.0, 1e-300, kInf, -kInf, kNaN})
        for (double b : {0.0, -0.0, 1.0, -1.0, 1e-300, kInf, -kInf, kNaN}) p.add(a, b);
      break;
  }
  return p;
}

// One function at one point: the body the host and the CUDA kernel share.
CUMULUS_HD inline double evaluate(MathFn f, double x, double y) {
  switch (f) {
    case MathFn::exp:
      return hd::exp(x);
    case MathFn::log:
      return hd::log(x);
    case MathFn::pow:
      return hd::pow(x, y);
    case MathFn::sin:
      return hd::sin(x);
    case MathFn::cos:
      return hd::cos(x);
    case MathFn::erfc:
      return hd::erfc(x);
    case MathFn::atan2:
      return hd::atan2(x, y);
  }
  return 0.0;
}

// f at every point, as a kernel on `ex` (a free function: nvcc wants extended lambdas outside
// test bodies).
std::vector<double> evaluate_on(const Exec& ex, MathFn f, const Points& p) {
  const int n = static_cast<int>(p.x.size());
  Buffer<double> x(ex.backend(), p.x.size()), y(ex.backend(), p.y.size()), out(ex.backend(), p.x.size());
  x.from_host(ex, p.x);
  y.from_host(ex, p.y);
  const double* px = x.data();
  const double* py = y.data();
  double* po = out.data();
  for_each(ex, "test.hd_math", Box(0, 0, 0, n, 1, 1),
           [=] CUMULUS_HD(int i, int, int) { po[i] = evaluate(f, px[i], py[i]); });
  return out.to_host(ex);
}

// The same bits, NaNs counted equal whatever their payload (CUDA makes canonical NaNs).
bool same_bits(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::memcmp(&a, &b, sizeof a) == 0;
}

// Runs every function on `ex` and compares with scalar calls on the host, bit for bit.
void expect_bitwise_equal_to_scalar(const Exec& ex) {
  for (MathFn f : kAll) {
    const Points p = points_for(f, 10);
    const std::vector<double> got = evaluate_on(ex, f, p);
    int differ = 0;
    for (std::size_t i = 0; i < p.x.size(); ++i) {
      const double want = evaluate(f, p.x[i], p.y[i]);
      if (!same_bits(got[i], want) && ++differ <= 5)
        ADD_FAILURE() << to_string(f) << "(" << p.x[i] << ", " << p.y[i] << "): " << to_string(ex.backend())
                      << " gives " << got[i] << ", host " << want;
    }
    EXPECT_EQ(differ, 0) << to_string(f) << ": points that differ, of " << p.x.size();
  }
}

}  // namespace

// The range a point's error is reported under (the table in core/hd_math.hpp); nullptr outside the
// documented domain (SpecialValues checks what happens there).
const char* range_of(MathFn f, double x, double y) {
  const double ax = std::fabs(x);
  switch (f) {
    case MathFn::exp:
      return x < -708.39 ? "subnormal results" : "normal results";
    case MathFn::log:
      return ax < 0x1p-1022 ? "subnormal x" : "normal x";
    case MathFn::pow:
      if (x < 0) return nullptr;
      return x <= 1 && (y == 0.5 || y == 1.0 || y == 1.5) ? "heat: x in (0, 1], y = 1/2, 1, 3/2"
                                                          : "x > 0, |y log x| < 745";
    case MathFn::sin:
    case MathFn::cos:
      if (!(ax < 0x1p50)) return nullptr;
      return ax <= 10 ? "|x| <= 10" : ax <= 1e5 ? "10 < |x| <= 1e5" : "1e5 < |x| < 2^50";
    case MathFn::erfc:
      return x < 0.5 ? "x < 0.5" : x < 26.55 ? "0.5 <= x < 26.55" : "x >= 26.55 (subnormal results)";
    case MathFn::atan2:
      if (!std::isfinite(x) || !std::isfinite(y)) return nullptr;
      return std::fabs(x) <= std::fabs(y) ? "|x| <= |y|" : "|x| > |y|";
  }
  return nullptr;
}

// Each function on about 100,000 points against libquadmath; the bounds sit just above the measured
// maxima (printed per range), so a change that costs accuracy fails here.
TEST(HdMath, AccurateAgainstQuadPrecision) {
  struct Bound {
    MathFn f;
    double ulps;
  };
  for (const Bound& b : {Bound{MathFn::exp, 1.0}, Bound{MathFn::log, 1.0}, Bound{MathFn::pow, 1.0},
                         Bound{MathFn::sin, 1.0}, Bound{MathFn::cos, 1.0}, Bound{MathFn::erfc, 1.0},
                         Bound{MathFn::atan2, 1.0}}) {
    const Points p = points_for(b.f, 1);
    struct Worst {
      const char* range;
      double ulps, x, y;
      long points;
    };
    std::vector<Worst> worst;
    for (std::size_t i = 0; i < p.x.size(); ++i) {
      const char* range = range_of(b.f, p.x[i], p.y[i]);
      if (!range) continue;
      const double e = ulp_error(b.f, p.x[i], p.y[i], evaluate(b.f, p.x[i], p.y[i]));
      Worst* w = nullptr;
      for (Worst& v : worst)
        if (std::strcmp(v.range, range) == 0) w = &v;
      if (!w) w = &worst.emplace_back(Worst{range, -1, 0, 0, 0});
      ++w->points;
      if (e > w->ulps) *w = Worst{range, e, p.x[i], p.y[i], w->points};
    }
    for (const Worst& w : worst) {
      std::printf("[ hd_math ] %-4s %-36s max %.3f ulp at x = %.17g", to_string(b.f), w.range, w.ulps, w.x);
      if (b.f == MathFn::pow || b.f == MathFn::atan2) std::printf(", y = %.17g", w.y);
      std::printf(" (%ld points)\n", w.points);
      EXPECT_LE(w.ulps, b.ulps) << to_string(b.f) << " at x = " << w.x << ", y = " << w.y;
    }
  }
}

TEST(HdMath, SpecialValues) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(hd::exp(0.0), 1.0);
  EXPECT_EQ(hd::exp(710.0), kInf);
  EXPECT_EQ(hd::exp(-kInf), 0.0);
  EXPECT_EQ(hd::exp(kInf), kInf);
  EXPECT_EQ(hd::exp(-746.0), 0.0);
  EXPECT_EQ(hd::exp(-745.0), 0x1p-1074);  // the smallest subnormal
  EXPECT_TRUE(std::isnan(hd::exp(nan)));
  EXPECT_EQ(hd::log(1.0), 0.0);
  EXPECT_EQ(hd::log(0.0), -kInf);
  EXPECT_EQ(hd::log(kInf), kInf);
  EXPECT_TRUE(std::isnan(hd::log(-1.0)));
  EXPECT_TRUE(std::isnan(hd::log(nan)));
  EXPECT_EQ(hd::pow(nan, 0.0), 1.0);
  EXPECT_EQ(hd::pow(1.0, nan), 1.0);
  EXPECT_EQ(hd::pow(0.0, 2.0), 0.0);
  EXPECT_EQ(hd::pow(0.0, -2.0), kInf);
  EXPECT_EQ(hd::pow(kInf, -1.0), 0.0);
  EXPECT_EQ(hd::pow(0.5, kInf), 0.0);
  EXPECT_EQ(hd::pow(2.0, kInf), kInf);
  EXPECT_EQ(hd::pow(2.0, 1024.0), kInf);
  EXPECT_EQ(hd::pow(2.0, -1074.0), 0x1p-1074);
  EXPECT_EQ(hd::pow(4.0, 0.5), 2.0);
  EXPECT_EQ(hd::pow(0.25, 1.5), 0.125);
  EXPECT_TRUE(std::isnan(hd::pow(-2.0, 2.0)));  // documented: no negative base
  EXPECT_EQ(hd::sin(0.0), 0.0);
  EXPECT_TRUE(std::signbit(hd::sin(-0.0)));
  EXPECT_EQ(hd::cos(0.0), 1.0);
  EXPECT_EQ(hd::sin(0x1p-1074), 0x1p-1074);
  for (double v : {kInf, -kInf, nan, 0x1p50, -0x1p60}) {
    EXPECT_TRUE(std::isnan(hd::sin(v))) << v;
    EXPECT_TRUE(std::isnan(hd::cos(v))) << v;
  }
  EXPECT_EQ(hd::erfc(0.0), 1.0);
  EXPECT_EQ(hd::erfc(-0.0), 1.0);
  EXPECT_EQ(hd::erfc(kInf), 0.0);
  EXPECT_EQ(hd::erfc(-kInf), 2.0);
  EXPECT_EQ(hd::erfc(30.0), 0.0);
  EXPECT_EQ(hd::erfc(-7.0), 2.0);
  EXPECT_GT(hd::erfc(27.2), 0.0);  // still a subnormal there
  EXPECT_TRUE(std::isnan(hd::erfc(nan)));
  // atan2 takes C's values at the signed zeros and infinities.
  const double pi = 3.141592653589793;
  for (double a : {0.0, -0.0, 1.0, -1.0, kInf, -kInf, nan})
    for (double b : {0.0, -0.0, 1.0, -1.0, kInf, -kInf, nan}) {
      const double want = std::atan2(a, b), got = hd::atan2(a, b);
      if (std::isnan(want))
        EXPECT_TRUE(std::isnan(got)) << a << ", " << b;
      else
        EXPECT_TRUE(got == want && std::signbit(got) == std::signbit(want)) << "atan2(" << a << ", " << b << ") = " << got;
    }
  EXPECT_EQ(hd::atan2(1.0, -1.0), 3 * pi / 4);
}

// The harness of the device test, run with the host backend: the kernel path (for_each, buffers,
// copies) gives what scalar calls give.
TEST(HdMath, HostKernelMatchesScalarBitwise) { expect_bitwise_equal_to_scalar(Exec::host()); }

// The point of hd_math: a CUDA kernel gives the host's bits. Skipped without a device.
TEST(HdMath, CudaMatchesHostBitwise) {
  CUMULUS_EXEC_OR_SKIP(ex, Backend::cuda);
  expect_bitwise_equal_to_scalar(ex);
}
