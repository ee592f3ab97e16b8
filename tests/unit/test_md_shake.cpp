// SHAKE/RATTLE's one-cluster arithmetic (solvers/md/shake_kernels.hpp) against independent
// solutions: SHAKE iterated bond by bond to convergence in long double (the textbook algorithm: the
// same equations, solved another way), SETTLE's closed form on a water molecule, and the velocity
// constraints against their definition.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "solvers/md/settle_kernels.hpp"
#include "solvers/md/shake_kernels.hpp"

using namespace cumulus::md;

namespace {

using V = std::array<long double, 3>;
constexpr double kDeg = 3.14159265358979323846 / 180;

long double dot(const V& a, const V& b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

// Bond-by-bond SHAKE (Ryckaert et al. 1977) in long double: the positions x moved by forces along
// the old constrained vectors (at x0) until every length is its target to 1e-17 relative.
std::vector<V> shake_reference(const ShakeGeometry& g, const std::vector<V>& x0, std::vector<V> x, const std::vector<long double>& m) {
  for (int it = 0; it < 100000; ++it) {
    long double worst = 0;
    for (int c = 0; c < g.nconstraints; ++c) {
      const int i = g.p[c], j = g.q[c];
      V s, s0;
      for (int d = 0; d < 3; ++d) {
        s[d] = x[j][d] - x[i][d];
        s0[d] = x0[j][d] - x0[i][d];
      }
      const long double l2 = static_cast<long double>(g.length[c]) * g.length[c];
      const long double diff = l2 - dot(s, s);
      worst = std::max(worst, std::fabs(diff) / l2);
      const long double k = diff / (2 * dot(s, s0) * (1 / m[i] + 1 / m[j]));
      for (int d = 0; d < 3; ++d) {
        x[i][d] -= k * s0[d] / m[i];
        x[j][d] += k * s0[d] / m[j];
      }
    }
    if (worst < 1e-17L) break;
  }
  return x;
}

// A random rotation applied to v.
struct Rotation {
  double r[3][3];
  explicit Rotation(std::mt19937_64& rng) {
    std::normal_distribution<double> g;
    double u[3] = {g(rng), g(rng), g(rng)}, w[3] = {g(rng), g(rng), g(rng)};
    const double nu = std::sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
    for (double& x : u) x /= nu;
    const double p = u[0] * w[0] + u[1] * w[1] + u[2] * w[2];
    for (int d = 0; d < 3; ++d) w[d] -= p * u[d];
    const double nw = std::sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]);
    for (double& x : w) x /= nw;
    const double z[3] = {u[1] * w[2] - u[2] * w[1], u[2] * w[0] - u[0] * w[2], u[0] * w[1] - u[1] * w[0]};
    for (int d = 0; d < 3; ++d) {
      r[d][0] = u[d];
      r[d][1] = w[d];
      r[d][2] = z[d];
    }
  }
  void apply(const double in[3], double out[3]) const {
    for (int d = 0; d < 3; ++d) out[d] = r[d][0] * in[0] + r[d][1] * in[1] + r[d][2] * in[2];
  }
};

// A cluster at its constrained lengths: `body` positions rotated at random, relative to atom 0.
struct Case {
  ShakeGeometry g;
  std::vector<std::array<double, 3>> body;
  std::vector<double> mass;
};
// CH3 as a methyl group's atoms in a file's order: H, C, H, H (the central atom second, so the
// constraints' atoms are not simply 0 and k), C-H 1.09 A, tetrahedral.
Case methyl() {
  Case c;
  c.g.natoms = 4;
  c.g.nconstraints = 3;
  const double r = 1.09, t = 109.47 * kDeg;
  c.body = {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
  for (int k = 0; k < 3; ++k) {
    const double phi = 2 * 3.14159265358979323846 * k / 3;
    const int atom = k == 0 ? 0 : k + 1;
    c.body[static_cast<std::size_t>(atom)] = {r * std::sin(t) * std::cos(phi), r * std::sin(t) * std::sin(phi), r * std::cos(t)};
    c.g.p[k] = 1;
    c.g.q[k] = atom;
    c.g.length[k] = r;
  }
  c.mass = {1.008, 12.011, 1.008, 1.008};
  return c;
}
// A bent three-atom cluster with its angle held and two unequal arms (SETTLE does not take it):
// atoms A (end), B (vertex), C (end); B-A 1.0, B-C 1.4, 104 degrees.
Case bent() {
  Case c;
  c.g.natoms = 3;
  c.g.nconstraints = 3;
  const double a = 1.0, b = 1.4, t = 104 * kDeg;
  c.body = {{a, 0, 0}, {0, 0, 0}, {b * std::cos(t), b * std::sin(t), 0}};
  c.g.p[0] = 0, c.g.q[0] = 1, c.g.length[0] = a;
  c.g.p[1] = 1, c.g.q[1] = 2, c.g.length[1] = b;
  c.g.p[2] = 0, c.g.q[2] = 2, c.g.length[2] = std::sqrt(a * a + b * b - 2 * a * b * std::cos(t));
  c.mass = {1.008, 15.9994, 32.06};
  return c;
}
// One X-H bond.
Case xh() {
  Case c;
  c.g.natoms = 2;
  c.g.nconstraints = 1;
  c.body = {{0, 0, 0}, {0.945, 0, 0}};
  c.g.p[0] = 0, c.g.q[0] = 1, c.g.length[0] = 0.945;
  c.mass = {15.9994, 1.008};
  return c;
}

// Positions: ours (Newton on the cluster's system) against the bond-by-bond reference, over random
// orientations and step sizes. Returns the largest difference.
double compare_positions(const Case& c, int trials, double* worst_length, int* worst_iterations) {
  std::mt19937_64 rng(1977);
  std::normal_distribution<double> gauss;
  const int n = c.g.natoms;
  double worst = 0;
  *worst_length = 0;
  *worst_iterations = 0;
  double inv_m[kShakeAtoms] = {};
  for (int k = 0; k < n; ++k) inv_m[k] = 1 / c.mass[static_cast<std::size_t>(k)];
  for (int trial = 0; trial < trials; ++trial) {
    const Rotation rot(rng);
    double x0[kShakeAtoms][3] = {}, x1[kShakeAtoms][3] = {}, dx[kShakeAtoms][3] = {};
    double origin[3];
    rot.apply(c.body[0].data(), origin);
    const double s = 0.005 * (1 << (trial % 5));  // 0.005 to 0.08 A off the constrained path
    for (int k = 0; k < n; ++k) {
      double p[3];
      rot.apply(c.body[static_cast<std::size_t>(k)].data(), p);
      for (int d = 0; d < 3; ++d) {
        x0[k][d] = p[d] - origin[d];
        x1[k][d] = x0[k][d] + s * gauss(rng) * std::sqrt(inv_m[k] / inv_m[0]);
      }
    }
    for (int k = n - 1; k >= 0; --k)  // relative to atom 0, as the kernels give them
      for (int d = 0; d < 3; ++d) x1[k][d] -= x1[0][d];
    const int it = shake_positions_term(c.g, inv_m, x0, x1, 1e-14, 50, dx);
    EXPECT_GE(it, 0) << "trial " << trial;
    *worst_iterations = std::max(*worst_iterations, it);
    std::vector<V> r0(static_cast<std::size_t>(n)), r1(static_cast<std::size_t>(n));
    std::vector<long double> m(static_cast<std::size_t>(n));
    for (int k = 0; k < n; ++k) {
      m[static_cast<std::size_t>(k)] = c.mass[static_cast<std::size_t>(k)];
      for (int d = 0; d < 3; ++d) {
        r0[static_cast<std::size_t>(k)][static_cast<std::size_t>(d)] = x0[k][d];
        r1[static_cast<std::size_t>(k)][static_cast<std::size_t>(d)] = x1[k][d];
      }
    }
    const std::vector<V> ref = shake_reference(c.g, r0, r1, m);
    double p[3] = {0, 0, 0};
    for (int k = 0; k < n; ++k)
      for (int d = 0; d < 3; ++d) {
        worst = std::max(worst, static_cast<double>(std::fabs(x1[k][d] + dx[k][d] - ref[static_cast<std::size_t>(k)][static_cast<std::size_t>(d)])));
        p[d] += c.mass[static_cast<std::size_t>(k)] * dx[k][d];
      }
    for (double v : p) EXPECT_NEAR(v, 0.0, 1e-13);  // the constraint forces are internal
    for (int e = 0; e < c.g.nconstraints; ++e) {
      double l2 = 0;
      for (int d = 0; d < 3; ++d) {
        const double v = (x1[c.g.q[e]][d] + dx[c.g.q[e]][d]) - (x1[c.g.p[e]][d] + dx[c.g.p[e]][d]);
        l2 += v * v;
      }
      *worst_length = std::max(*worst_length, std::fabs(std::sqrt(l2) - c.g.length[e]));
    }
  }
  return worst;
}

TEST(Shake, PositionsMatchBondByBondShake) {
  const struct {
    const char* name;
    Case c;
  } cases[] = {{"methyl", methyl()}, {"bent", bent()}, {"x-h", xh()}};
  for (const auto& k : cases) {
    double length = 0;
    int iterations = 0;
    const double worst = compare_positions(k.c, 200, &length, &iterations);
    std::printf("[ shake ] %s: largest difference from bond-by-bond SHAKE %.2e, largest length error %.2e, at most %d "
                "Newton iterations\n", k.name, worst, length, iterations);
    EXPECT_LT(worst, 1e-12) << k.name;
    EXPECT_LT(length, 1e-13) << k.name;
    EXPECT_LE(iterations, 8) << k.name;  // quadratic convergence
  }
}

// On a rigid water molecule (three atoms, three distances) SHAKE solves SETTLE's equations.
TEST(Shake, WaterMatchesSettle) {
  const double r_oh = 1.0, t = 109.47 * kDeg, r_hh = 2 * r_oh * std::sin(0.5 * t);
  const SettleGeometry sg{r_oh, r_hh};
  ShakeGeometry g;
  g.natoms = 3;
  g.nconstraints = 3;
  g.p[0] = 0, g.q[0] = 1, g.length[0] = r_oh;
  g.p[1] = 0, g.q[1] = 2, g.length[1] = r_oh;
  g.p[2] = 1, g.q[2] = 2, g.length[2] = r_hh;
  const double mo = 15.9994, mh = 1.008, inv_m[kShakeAtoms] = {1 / mo, 1 / mh, 1 / mh, 0};
  std::mt19937_64 rng(1992);
  std::normal_distribution<double> gauss;
  double worst = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const Rotation rot(rng);
    const double hb[3] = {r_oh * std::cos(0.5 * t), r_oh * std::sin(0.5 * t), 0}, hc[3] = {r_oh * std::cos(0.5 * t), -r_oh * std::sin(0.5 * t), 0};
    double x0[kShakeAtoms][3] = {}, x1[kShakeAtoms][3] = {}, dx[kShakeAtoms][3] = {};
    rot.apply(hb, x0[1]);
    rot.apply(hc, x0[2]);
    const double s = 0.005 * (1 << (trial % 5));
    double a1[3];
    for (int d = 0; d < 3; ++d) a1[d] = 0.25 * s * gauss(rng);
    for (int k = 1; k < 3; ++k)
      for (int d = 0; d < 3; ++d) x1[k][d] = x0[k][d] + s * gauss(rng) - a1[d];
    ASSERT_GE(shake_positions_term(g, inv_m, x0, x1, 1e-15, 50, dx), 0);
    double dA[3], dB[3], dC[3];
    ASSERT_TRUE(settle_positions_term(sg, mo, mh, x0[1], x0[2], x1[1], x1[2], dA, dB, dC));
    for (int d = 0; d < 3; ++d)
      worst = std::max({worst, std::fabs(dx[0][d] - dA[d]), std::fabs(dx[1][d] - dB[d]), std::fabs(dx[2][d] - dC[d])});
  }
  std::printf("[ shake ] water: largest difference from SETTLE %.2e\n", worst);
  EXPECT_LT(worst, 1e-13);
}

// Velocities: no relative velocity left along any constrained distance, momentum kept, and the
// returned impulses' virial equal to sum_i m_i dv_i . x_i.
TEST(Shake, VelocitiesLeaveNoMotionAlongTheConstraints) {
  std::mt19937_64 rng(1983);
  std::normal_distribution<double> gauss;
  for (const Case& c : {methyl(), bent(), xh()}) {
    const int n = c.g.natoms;
    double inv_m[kShakeAtoms] = {};
    for (int k = 0; k < n; ++k) inv_m[k] = 1 / c.mass[static_cast<std::size_t>(k)];
    double worst = 0;
    for (int trial = 0; trial < 200; ++trial) {
      const Rotation rot(rng);
      double x[kShakeAtoms][3] = {}, v[kShakeAtoms][3] = {}, dv[kShakeAtoms][3] = {}, origin[3];
      rot.apply(c.body[0].data(), origin);
      for (int k = 0; k < n; ++k) {
        rot.apply(c.body[static_cast<std::size_t>(k)].data(), x[k]);
        for (int d = 0; d < 3; ++d) {
          x[k][d] -= origin[d];
          v[k][d] = 0.04 * gauss(rng) * std::sqrt(inv_m[k]);
        }
      }
      const double w = shake_velocities_term(c.g, inv_m, x, v, dv);
      double p[3] = {0, 0, 0}, direct = 0;
      for (int k = 0; k < n; ++k)
        for (int d = 0; d < 3; ++d) {
          p[d] += c.mass[static_cast<std::size_t>(k)] * dv[k][d];
          direct += c.mass[static_cast<std::size_t>(k)] * dv[k][d] * x[k][d];
        }
      for (double q : p) EXPECT_NEAR(q, 0.0, 1e-15);
      EXPECT_NEAR(w, direct, 1e-13);
      for (int e = 0; e < c.g.nconstraints; ++e) {
        double along = 0, len = 0;
        for (int d = 0; d < 3; ++d) {
          const double s = x[c.g.q[e]][d] - x[c.g.p[e]][d];
          along += s * ((v[c.g.q[e]][d] + dv[c.g.q[e]][d]) - (v[c.g.p[e]][d] + dv[c.g.p[e]][d]));
          len += s * s;
        }
        worst = std::max(worst, std::fabs(along) / std::sqrt(len));
      }
    }
    std::printf("[ shake ] %d atoms: largest relative velocity left along a constraint %.2e\n", n, worst);
    EXPECT_LT(worst, 1e-15);
  }
}

// A step far too long for the motion: an X-H bond turned to be perpendicular to its old direction
// and stretched, which no force along the old direction can bring back (the Newton system is
// singular there; elsewhere it stops at md.shake_iterations): reported, not a NaN.
TEST(Shake, ReportsAClusterThatCannotBePlaced) {
  const Case c = xh();
  const double inv_m[kShakeAtoms] = {1 / c.mass[0], 1 / c.mass[1], 0, 0};
  double x0[kShakeAtoms][3] = {{0, 0, 0}, {0.945, 0, 0}}, x1[kShakeAtoms][3] = {{0, 0, 0}, {0, 2, 0}}, dx[kShakeAtoms][3] = {};
  EXPECT_LT(shake_positions_term(c.g, inv_m, x0, x1, 1e-10, 50, dx), 0);
  x1[1][0] = 1e-3;  // nearly perpendicular: no root either
  EXPECT_LT(shake_positions_term(c.g, inv_m, x0, x1, 1e-10, 50, dx), 0);
}

}  // namespace
