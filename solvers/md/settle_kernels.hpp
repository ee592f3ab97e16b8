#pragma once
// SETTLE's kernels (settle_kernels.cpp; one source per backend pass) and the one-molecule bodies
// they share: rigid three-site water, positions by Miyamoto & Kollman's analytic solution
// (J. Comput. Chem. 13, 952 (1992)) and velocities by the exact solution of RATTLE's three
// velocity constraints. Every atom of a molecule computes the whole molecule from the same numbers
// (its own and its partners' positions and velocities, owned or ghosts) and keeps its own part, as
// the bonded terms do, so the result has the same bits whichever rank owns which atom.
#include <math.h>

#include <cstdint>

#include "core/exact_sum.hpp"
#include "core/exec.hpp"
#include "core/kernel_pass.hpp"
#include "solvers/md/bonded_kernels.hpp"
#include "solvers/md/md_kernels.hpp"

namespace cumulus::md {

// One rigid geometry: the O-H distance and the H-H distance (from theta0).
struct SettleGeometry {
  double r_oh = 0, r_hh = 0;
};

namespace settle_detail {
CUMULUS_HD inline void cross(const double a[3], const double b[3], double c[3]) {
  c[0] = a[1] * b[2] - a[2] * b[1];
  c[1] = a[2] * b[0] - a[0] * b[2];
  c[2] = a[0] * b[1] - a[1] * b[0];
}
CUMULUS_HD inline double dot(const double a[3], const double b[3]) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
}  // namespace settle_detail

// Positions. b0, c0: the hydrogens' positions relative to the oxygen at the start of the step (a
// rigid molecule); b1, c1: their unconstrained new positions relative to the new oxygen position.
// mo, mh: the masses. Writes each atom's displacement (dA for the oxygen, dB, dC) that makes the
// molecule rigid again, every one along the old bonds' plane as constraint forces along the old
// bonds give. Returns false where no rigid placement exists (a step too long: |sin phi| > 1 or
// the last quadratic without a root).
CUMULUS_HD inline bool settle_positions_term(const SettleGeometry& g, double mo, double mh, const double b0[3],
                                             const double c0[3], const double b1r[3], const double c1r[3], double dA[3],
                                             double dB[3], double dC[3]) {
  using namespace settle_detail;
  const double M = mo + 2 * mh;
  // The canonical triangle about its centre of mass: O at (0, ra), H at (-rc, -rb) and (rc, -rb).
  const double rc = 0.5 * g.r_hh, h = sqrt(g.r_oh * g.r_oh - rc * rc), ra = 2 * mh * h / M, rb = h - ra;
  // The new positions about their centre of mass.
  double a1[3], b1[3], c1[3];
  for (int d = 0; d < 3; ++d) {
    const double com = mh * (b1r[d] + c1r[d]) / M;
    a1[d] = -com;
    b1[d] = b1r[d] - com;
    c1[d] = c1r[d] - com;
  }
  // The frame: z normal to the old plane, x normal to z and the new oxygen's direction.
  double ez[3], ex[3], ey[3];
  cross(b0, c0, ez);
  cross(a1, ez, ex);
  cross(ez, ex, ey);
  const double nz = sqrt(dot(ez, ez)), nx = sqrt(dot(ex, ex)), ny = sqrt(dot(ey, ey));
  for (int d = 0; d < 3; ++d) {
    ez[d] /= nz;
    ex[d] /= nx;
    ey[d] /= ny;
  }
  const double xb0 = dot(b0, ex), yb0 = dot(b0, ey), xc0 = dot(c0, ex), yc0 = dot(c0, ey);
  const double za1 = dot(a1, ez);
  const double xb1 = dot(b1, ex), yb1 = dot(b1, ey), zb1 = dot(b1, ez);
  const double xc1 = dot(c1, ex), yc1 = dot(c1, ey), zc1 = dot(c1, ez);
  const double sinphi = za1 / ra;
  if (!(sinphi * sinphi < 1)) return false;
  const double cosphi = sqrt(1 - sinphi * sinphi);
  const double sinpsi = (zb1 - zc1) / (2 * rc * cosphi);
  if (!(sinpsi * sinpsi < 1)) return false;
  const double cospsi = sqrt(1 - sinpsi * sinpsi);
  const double ya2 = ra * cosphi, xb2 = -rc * cospsi;
  const double t1 = -rb * cosphi, t2 = rc * sinpsi * sinphi;
  const double yb2 = t1 - t2, yc2 = t1 + t2;
  const double alpha = xb2 * (xb0 - xc0) + yb0 * yb2 + yc0 * yc2;
  const double beta = xb2 * (yc0 - yb0) + xb0 * yb2 + xc0 * yc2;
  const double gamma = xb0 * yb1 - xb1 * yb0 + xc0 * yc1 - xc1 * yc0;
  const double a2b2 = alpha * alpha + beta * beta, disc = a2b2 - gamma * gamma;
  if (!(disc >= 0) || !(a2b2 > 0)) return false;
  const double sinth = (alpha * gamma - beta * sqrt(disc)) / a2b2;
  if (!(sinth * sinth <= 1)) return false;
  const double costh = sqrt(1 - sinth * sinth);
  const double a3[3] = {-ya2 * sinth, ya2 * costh, za1};
  const double b3[3] = {xb2 * costh - yb2 * sinth, xb2 * sinth + yb2 * costh, zb1};
  const double c3[3] = {-xb2 * costh - yc2 * sinth, -xb2 * sinth + yc2 * costh, zc1};
  for (int d = 0; d < 3; ++d) {
    dA[d] = (a3[0] * ex[d] + a3[1] * ey[d] + a3[2] * ez[d]) - a1[d];
    dB[d] = (b3[0] * ex[d] + b3[1] * ey[d] + b3[2] * ez[d]) - b1[d];
    dC[d] = (c3[0] * ex[d] + c3[1] * ey[d] + c3[2] * ez[d]) - c1[d];
  }
  return true;
}

// Velocities: the impulses along the three bonds (O-H1, O-H2, H1-H2) that leave no relative
// velocity along any of them, the 3 x 3 linear system solved by Cramer's rule. d: the bond vectors
// (H1 - O, H2 - O, H2 - H1) at the end of the step; u: the relative velocities along the same
// pairs; mo, mh the masses. Writes each atom's velocity change and returns sum tau_k |d_k| (the
// impulses' virial; times 2/dt, the constraint forces'). `centripetal` (0 in a step) adds
// centripetal * |u_k|^2 / |d_k| to each bond's relative velocity to be removed: with dt/2 and the
// velocities of a rigid molecule, the part of the constraint forces that holds a rotating bond's
// length (a step's velocity constraints get it from the chord of the step's positions).
CUMULUS_HD inline double settle_velocities_term(double mo, double mh, const double dab[3], const double dac[3],
                                               const double dbc[3], const double uab[3], const double uac[3],
                                               const double ubc[3], double dvA[3], double dvB[3], double dvC[3],
                                               double centripetal = 0) {
  using namespace settle_detail;
  const double lab = sqrt(dot(dab, dab)), lac = sqrt(dot(dac, dac)), lbc = sqrt(dot(dbc, dbc));
  double eab[3], eac[3], ebc[3];
  for (int d = 0; d < 3; ++d) {
    eab[d] = dab[d] / lab;
    eac[d] = dac[d] / lac;
    ebc[d] = dbc[d] / lbc;
  }
  const double io = 1 / mo, ih = 1 / mh;
  const double cab_ac = dot(eab, eac), cab_bc = dot(eab, ebc), cac_bc = dot(eac, ebc);
  // M tau = r, M symmetric.
  const double m11 = io + ih, m12 = cab_ac * io, m13 = -cab_bc * ih;
  const double m22 = io + ih, m23 = cac_bc * ih, m33 = 2 * ih;
  const double r1 = -dot(eab, uab) - centripetal * dot(uab, uab) / lab;
  const double r2 = -dot(eac, uac) - centripetal * dot(uac, uac) / lac;
  const double r3 = -dot(ebc, ubc) - centripetal * dot(ubc, ubc) / lbc;
  const double c11 = m22 * m33 - m23 * m23, c12 = m13 * m23 - m12 * m33, c13 = m12 * m23 - m13 * m22;
  const double det = m11 * c11 + m12 * c12 + m13 * c13;
  const double c22 = m11 * m33 - m13 * m13, c23 = m12 * m13 - m11 * m23, c33 = m11 * m22 - m12 * m12;
  const double tab = (c11 * r1 + c12 * r2 + c13 * r3) / det;
  const double tac = (c12 * r1 + c22 * r2 + c23 * r3) / det;
  const double tbc = (c13 * r1 + c23 * r2 + c33 * r3) / det;
  for (int d = 0; d < 3; ++d) {
    dvA[d] = -(tab * eab[d] + tac * eac[d]) * io;
    dvB[d] = (tab * eab[d] - tbc * ebc[d]) * ih;
    dvC[d] = (tac * eac[d] + tbc * ebc[d]) * ih;
  }
  return tab * lab + tac * lac + tbc * lbc;
}

#define CUMULUS_SETTLE_KERNELS                                                                                   \
  std::int64_t settle_displacements(const Exec& ex, const Atoms& a, const TopologyView& t, const SettleGeometry* g, \
                                    const double* rx, const double* ry, const double* rz, double* dx, double* dy,  \
                                    double* dz, std::int64_t* into);                                              \
  void settle_apply_positions(const Exec& ex, const Atoms& a, const double* dx, const double* dy, const double* dz, \
                              double inv_dt);                                                                     \
  void settle_velocity_changes(const Exec& ex, const Atoms& a, const TopologyView& t, double* dx, double* dy,       \
                               double* dz, double* virial, double two_over_dt, double centripetal, bool accumulate); \
  void settle_apply_velocities(const Exec& ex, const Atoms& a, const double* dx, const double* dy, const double* dz); \
  ExactSum settle_sum(const Exec& ex, const double* v, int n, int e);
CUMULUS_DECLARE_KERNEL_PASSES(settle_kernels, CUMULUS_SETTLE_KERNELS)
#undef CUMULUS_SETTLE_KERNELS

}  // namespace cumulus::md
