// SETTLE's one-molecule arithmetic (solvers/md/settle_kernels.hpp) against an independent solution:
// SHAKE iterated to convergence in long double (constraint forces along the old bonds, the same
// equations SETTLE solves in closed form), and the velocity constraints against their definition.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <random>

#include "solvers/md/settle_kernels.hpp"

using namespace cumulus::md;

namespace {

using V = std::array<long double, 3>;

long double dot(const V& a, const V& b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

// A rigid SPC/E-shaped molecule (O-H 1, H-H from 109.47 degrees) at a random orientation: the
// hydrogens relative to the oxygen.
struct Molecule {
  double b[3], c[3];
};
Molecule rigid(std::mt19937_64& rng, double r_oh, double r_hh) {
  std::normal_distribution<double> g;
  // An orthonormal frame from two random vectors.
  double u[3] = {g(rng), g(rng), g(rng)}, w[3] = {g(rng), g(rng), g(rng)};
  const double nu = std::sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
  for (double& x : u) x /= nu;
  const double p = u[0] * w[0] + u[1] * w[1] + u[2] * w[2];
  for (int d = 0; d < 3; ++d) w[d] -= p * u[d];
  const double nw = std::sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]);
  for (double& x : w) x /= nw;
  const double half = 0.5 * r_hh, h = std::sqrt(r_oh * r_oh - half * half);
  Molecule m;
  for (int d = 0; d < 3; ++d) {
    m.b[d] = h * u[d] + half * w[d];
    m.c[d] = h * u[d] - half * w[d];
  }
  return m;
}

// SHAKE in long double: new positions x1 (O, H1, H2) moved by forces along the old bond vectors
// (O-H1, O-H2, H1-H2 at x0) until every distance is its target to 1e-17 relative.
std::array<V, 3> shake(const std::array<V, 3>& x0, std::array<V, 3> x, const long double m[3], const long double target[3]) {
  const int pair[3][2] = {{0, 1}, {0, 2}, {1, 2}};
  for (int it = 0; it < 10000; ++it) {
    long double worst = 0;
    for (int k = 0; k < 3; ++k) {
      const int i = pair[k][0], j = pair[k][1];
      V s, s0;
      for (int d = 0; d < 3; ++d) {
        s[d] = x[j][d] - x[i][d];
        s0[d] = x0[j][d] - x0[i][d];
      }
      const long double diff = target[k] * target[k] - dot(s, s);
      worst = std::max(worst, std::fabs(diff) / (target[k] * target[k]));
      const long double g = diff / (2 * dot(s, s0) * (1 / m[i] + 1 / m[j]));
      for (int d = 0; d < 3; ++d) {
        x[i][d] -= g * s0[d] / m[i];
        x[j][d] += g * s0[d] / m[j];
      }
    }
    if (worst < 1e-17L) break;
  }
  return x;
}

TEST(Settle, PositionsMatchConvergedShake) {
  std::mt19937_64 rng(1992);
  std::normal_distribution<double> g;
  const double r_oh = 1.0, r_hh = 2 * std::sin(0.5 * 109.47 * 3.14159265358979323846 / 180);
  const SettleGeometry geom{r_oh, r_hh};
  const double mo = 15.9994, mh = 1.008;
  double worst_shake = 0, worst_length = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const Molecule m0 = rigid(rng, r_oh, r_hh);
    // A 2 fs step of water at 300 K moves a hydrogen about 0.05 A, beyond its rigid path by far less.
    const double s = 0.005 * (1 << (trial % 5));  // 0.005 to 0.08 A off the rigid path
    double b1[3], c1[3], a1[3];
    for (int d = 0; d < 3; ++d) {
      a1[d] = s * 0.25 * g(rng);
      b1[d] = m0.b[d] + s * g(rng) - a1[d];
      c1[d] = m0.c[d] + s * g(rng) - a1[d];
    }
    double dA[3], dB[3], dC[3];
    ASSERT_TRUE(settle_positions_term(geom, mo, mh, m0.b, m0.c, b1, c1, dA, dB, dC)) << "trial " << trial;
    // The same in the lab frame, oxygen of the old molecule at the origin, through SHAKE.
    const std::array<V, 3> x0 = {V{0, 0, 0}, V{m0.b[0], m0.b[1], m0.b[2]}, V{m0.c[0], m0.c[1], m0.c[2]}};
    std::array<V, 3> x1;
    for (int d = 0; d < 3; ++d) {
      x1[0][d] = a1[d];
      x1[1][d] = static_cast<long double>(a1[d]) + b1[d];
      x1[2][d] = static_cast<long double>(a1[d]) + c1[d];
    }
    const long double masses[3] = {mo, mh, mh}, target[3] = {r_oh, r_oh, r_hh};
    const std::array<V, 3> ref = shake(x0, x1, masses, target);
    const double* disp[3] = {dA, dB, dC};
    for (int k = 0; k < 3; ++k)
      for (int d = 0; d < 3; ++d)
        worst_shake = std::max(worst_shake, static_cast<double>(std::fabs(x1[k][d] + disp[k][d] - ref[k][d])));
    // Lengths of the result.
    std::array<V, 3> x;
    for (int k = 0; k < 3; ++k)
      for (int d = 0; d < 3; ++d) x[k][d] = x1[k][d] + disp[k][d];
    auto len = [&](int i, int j) {
      V s;
      for (int d = 0; d < 3; ++d) s[d] = x[j][d] - x[i][d];
      return std::sqrt(dot(s, s));
    };
    worst_length = std::max({worst_length, static_cast<double>(std::fabs(len(0, 1) - r_oh)),
                             static_cast<double>(std::fabs(len(0, 2) - r_oh)), static_cast<double>(std::fabs(len(1, 2) - r_hh))});
    // Momentum: the constraint forces are internal.
    for (int d = 0; d < 3; ++d) EXPECT_NEAR(mo * dA[d] + mh * (dB[d] + dC[d]), 0.0, 1e-13);
  }
  std::printf("[ settle ] positions: largest difference from converged SHAKE %.2e, largest length error %.2e\n", worst_shake,
              worst_length);
  EXPECT_LT(worst_shake, 1e-12);
  EXPECT_LT(worst_length, 1e-14);
}

TEST(Settle, VelocitiesLeaveNoMotionAlongTheBonds) {
  std::mt19937_64 rng(2020);
  std::normal_distribution<double> g;
  const double r_oh = 1.0, r_hh = 2 * std::sin(0.5 * 109.47 * 3.14159265358979323846 / 180);
  const double mo = 15.9994, mh = 1.008;
  double worst = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const Molecule m = rigid(rng, r_oh, r_hh);
    double va[3], vb[3], vc[3], bc[3], uab[3], uac[3], ubc[3];
    for (int d = 0; d < 3; ++d) {
      va[d] = g(rng) * 0.01;
      vb[d] = g(rng) * 0.04;
      vc[d] = g(rng) * 0.04;
      bc[d] = m.c[d] - m.b[d];
      uab[d] = vb[d] - va[d];
      uac[d] = vc[d] - va[d];
      ubc[d] = vc[d] - vb[d];
    }
    double dvA[3], dvB[3], dvC[3];
    const double w = settle_velocities_term(mo, mh, m.b, m.c, bc, uab, uac, ubc, dvA, dvB, dvC);
    double after[3] = {0, 0, 0}, p[3];
    for (int d = 0; d < 3; ++d) {
      const double a = va[d] + dvA[d], b = vb[d] + dvB[d], c = vc[d] + dvC[d];
      after[0] += m.b[d] * (b - a);
      after[1] += m.c[d] * (c - a);
      after[2] += bc[d] * (c - b);
      p[d] = mo * dvA[d] + mh * (dvB[d] + dvC[d]);
    }
    for (double v : after) worst = std::max(worst, std::fabs(v));
    for (double v : p) EXPECT_NEAR(v, 0.0, 1e-16);
    // The impulses' virial is minus the kinetic energy they remove along the bonds, twice:
    // sum tau_k |d_k| = sum_i m_i dv_i . x_i.
    double direct = 0;
    for (int d = 0; d < 3; ++d) direct += mh * (dvB[d] * m.b[d] + dvC[d] * m.c[d]);
    EXPECT_NEAR(w, direct, 1e-14);
  }
  std::printf("[ settle ] velocities: largest relative velocity left along a bond %.2e\n", worst);
  EXPECT_LT(worst, 1e-15);  // velocities of about 0.05: a few of their ulps
}

// A step far too long for the motion has no rigid placement: reported, not a NaN.
TEST(Settle, ReportsAMoleculeThatCannotBePlaced) {
  const double r_oh = 1.0, r_hh = 1.633;
  const SettleGeometry geom{r_oh, r_hh};
  std::mt19937_64 rng(7);
  const Molecule m0 = rigid(rng, r_oh, r_hh);
  const double b1[3] = {m0.b[0], m0.b[1], m0.b[2] + 5.0}, c1[3] = {m0.c[0], m0.c[1], m0.c[2] - 5.0};
  double dA[3], dB[3], dC[3];
  EXPECT_FALSE(settle_positions_term(geom, 15.9994, 1.008, m0.b, m0.c, b1, c1, dA, dB, dC));
}

}  // namespace
