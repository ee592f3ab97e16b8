#pragma once
// SHAKE/RATTLE's kernels (shake_kernels.cpp; one source per backend pass) and the one-cluster
// bodies they share. A cluster is up to 4 atoms held by up to 3 distance constraints (a central
// atom and its constrained bonds to up to 3 others, as LAMMPS's fix shake takes them, or a
// three-atom cluster with its angle held too). Positions: the constraint forces act along the old
// bond vectors (Ryckaert, Ciccotti & Berendsen 1977) with multipliers found by Newton's method on
// the cluster's 3 x 3 system (matrix SHAKE: quadratic convergence, so a tolerance of 1e-10 costs a
// few iterations); velocities: RATTLE's second half (Andersen 1983), its linear system solved
// exactly. As with SETTLE, every atom of a cluster computes the whole cluster from the same numbers
// (its own and its partners' positions and velocities, owned or ghosts) and keeps its own part, so
// the result has the same bits whichever rank owns which atom.
#include <math.h>

#include <cstdint>

#include "core/exact_sum.hpp"
#include "core/exec.hpp"
#include "core/kernel_pass.hpp"
#include "solvers/md/bonded_kernels.hpp"
#include "solvers/md/md_kernels.hpp"

namespace cumulus::md {

// One cluster shape: its atom count, and each constraint's atoms (indices into the cluster, whose
// atoms are in ascending id) and length.
struct ShakeGeometry {
  int natoms = 0, nconstraints = 0;
  int p[3] = {0, 0, 0}, q[3] = {0, 0, 0};
  double length[3] = {0, 0, 0};
};
constexpr int kShakeAtoms = 4;

namespace shake_detail {
CUMULUS_HD inline double dot(const double a[3], const double b[3]) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
// +1 where atom k is constraint e's second atom, -1 its first, else 0.
CUMULUS_HD inline double incidence(const ShakeGeometry& g, int k, int e) { return k == g.q[e] ? 1.0 : (k == g.p[e] ? -1.0 : 0.0); }
// sum_k G(k, c) G(k, e) / m_k: how constraint e's multiplier moves constraint c's atoms apart.
CUMULUS_HD inline double coupling(const ShakeGeometry& g, const double inv_m[kShakeAtoms], int c, int e) {
  return incidence(g, g.q[c], e) * inv_m[g.q[c]] - incidence(g, g.p[c], e) * inv_m[g.p[c]];
}
// m x = r for a 3 x 3 m (Cramer's rule); false when m is singular or the result not finite.
CUMULUS_HD inline bool solve3(const double m[3][3], const double r[3], double x[3]) {
  const double c00 = m[1][1] * m[2][2] - m[1][2] * m[2][1], c01 = m[1][2] * m[2][0] - m[1][0] * m[2][2],
               c02 = m[1][0] * m[2][1] - m[1][1] * m[2][0];
  const double det = m[0][0] * c00 + m[0][1] * c01 + m[0][2] * c02;
  if (!(det != 0)) return false;
  const double c10 = m[0][2] * m[2][1] - m[0][1] * m[2][2], c11 = m[0][0] * m[2][2] - m[0][2] * m[2][0],
               c12 = m[0][1] * m[2][0] - m[0][0] * m[2][1];
  const double c20 = m[0][1] * m[1][2] - m[0][2] * m[1][1], c21 = m[0][2] * m[1][0] - m[0][0] * m[1][2],
               c22 = m[0][0] * m[1][1] - m[0][1] * m[1][0];
  x[0] = (c00 * r[0] + c10 * r[1] + c20 * r[2]) / det;
  x[1] = (c01 * r[0] + c11 * r[1] + c21 * r[2]) / det;
  x[2] = (c02 * r[0] + c12 * r[1] + c22 * r[2]) / det;
  return isfinite(x[0]) && isfinite(x[1]) && isfinite(x[2]);
}
}  // namespace shake_detail

// Positions. x0: the cluster's atoms at the start of the step, x1: their unconstrained new
// positions (both relative to the cluster's first atom, by the minimum image); inv_m: the inverse
// masses. Writes each atom's displacement, sum_e lambda_e G(k, e) d0_e / m_k along the old bond
// vectors d0, with the multipliers that put every constrained distance at its length to
// `tolerance` relative. Returns the Newton iterations taken, or -1 when they do not converge
// within max_iterations (a step too long for the motion) or the system is singular.
CUMULUS_HD inline int shake_positions_term(const ShakeGeometry& g, const double inv_m[kShakeAtoms], const double x0[][3],
                                           const double x1[][3], double tolerance, int max_iterations, double dx[][3]) {
  using namespace shake_detail;
  const int nc = g.nconstraints;
  double d0[3][3], a[3][3], lambda[3] = {0, 0, 0};
  int iterations = 0;
  for (int c = 0; c < nc; ++c)
    for (int d = 0; d < 3; ++d) d0[c][d] = x0[g.q[c]][d] - x0[g.p[c]][d];
  for (int c = 0; c < nc; ++c)
    for (int e = 0; e < nc; ++e) a[c][e] = coupling(g, inv_m, c, e);
  for (int it = 0;; ++it) {
    // The constrained vectors at the current multipliers, and how far each length is off.
    double s[3][3], f[3] = {0, 0, 0};
    bool done = true;
    for (int c = 0; c < nc; ++c) {
      for (int d = 0; d < 3; ++d) {
        s[c][d] = x1[g.q[c]][d] - x1[g.p[c]][d];
        for (int e = 0; e < nc; ++e) s[c][d] += lambda[e] * a[c][e] * d0[e][d];
      }
      const double l2 = g.length[c] * g.length[c];
      f[c] = dot(s[c], s[c]) - l2;
      // |r - l| / l is about |r^2 - l^2| / (2 l^2).
      if (!(fabs(f[c]) <= 2 * tolerance * l2)) done = false;
    }
    if (done) {
      iterations = it;
      break;
    }
    if (it == max_iterations) return -1;
    double j[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, step[3];
    for (int c = 0; c < nc; ++c)
      for (int e = 0; e < nc; ++e) j[c][e] = 2 * a[c][e] * dot(s[c], d0[e]);
    const double r[3] = {-f[0], -f[1], -f[2]};
    if (!solve3(j, r, step)) return -1;
    for (int c = 0; c < nc; ++c) lambda[c] += step[c];
  }
  for (int k = 0; k < g.natoms; ++k)
    for (int d = 0; d < 3; ++d) {
      double v = 0;
      for (int e = 0; e < nc; ++e) v += lambda[e] * incidence(g, k, e) * d0[e][d];
      dx[k][d] = v * inv_m[k];
    }
  return iterations;
}

// Velocities: the impulses tau_e along each constrained vector (at the end of the step: x, relative
// to the first atom) that leave no relative velocity along any of them, the linear system solved
// exactly. Writes each atom's velocity change and returns sum tau_e |d_e| (the impulses' virial;
// times 2/dt, the constraint forces'). `centripetal` as settle_velocities_term's: 0 in a step; dt/2
// with the constrained velocities, the part of the constraint forces that holds rotating bonds at
// their lengths.
CUMULUS_HD inline double shake_velocities_term(const ShakeGeometry& g, const double inv_m[kShakeAtoms], const double x[][3],
                                              const double v[][3], double dv[][3], double centripetal = 0) {
  using namespace shake_detail;
  const int nc = g.nconstraints;
  double e[3][3], len[3], m[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, r[3] = {0, 0, 0}, tau[3] = {0, 0, 0};
  for (int c = 0; c < nc; ++c) {
    double u[3];
    for (int d = 0; d < 3; ++d) {
      e[c][d] = x[g.q[c]][d] - x[g.p[c]][d];
      u[d] = v[g.q[c]][d] - v[g.p[c]][d];
    }
    len[c] = sqrt(dot(e[c], e[c]));
    for (int d = 0; d < 3; ++d) e[c][d] /= len[c];
    r[c] = -dot(e[c], u) - centripetal * dot(u, u) / len[c];
  }
  for (int c = 0; c < nc; ++c)
    for (int k = 0; k < nc; ++k) m[c][k] = coupling(g, inv_m, c, k) * dot(e[c], e[k]);
  solve3(m, r, tau);  // a cluster SHAKE placed is never singular here (its lengths are held)
  double w = 0;
  for (int c = 0; c < nc; ++c) w += tau[c] * len[c];
  for (int k = 0; k < g.natoms; ++k)
    for (int d = 0; d < 3; ++d) {
      double s = 0;
      for (int c = 0; c < nc; ++c) s += tau[c] * incidence(g, k, c) * e[c][d];
      dv[k][d] = s * inv_m[k];
    }
  return w;
}

#define CUMULUS_SHAKE_KERNELS                                                                                      \
  std::int64_t shake_displacements(const Exec& ex, const Atoms& a, const TopologyView& t, const ShakeGeometry* g,   \
                                   const double* rx, const double* ry, const double* rz, double tolerance,           \
                                   int max_iterations, double* dx, double* dy, double* dz, std::int64_t* into);     \
  void shake_velocity_changes(const Exec& ex, const Atoms& a, const TopologyView& t, const ShakeGeometry* g,        \
                              double* dx, double* dy, double* dz, double* virial, double two_over_dt,               \
                              double centripetal, bool accumulate);
CUMULUS_DECLARE_KERNEL_PASSES(shake_kernels, CUMULUS_SHAKE_KERNELS)
#undef CUMULUS_SHAKE_KERNELS

}  // namespace cumulus::md
