#pragma once
// The bonded terms' kernels (bonded_kernels.cpp; one source per backend pass): the resolution of
// each owned atom's bonded partners to local indices, and the harmonic bond and angle terms, whose
// one-term bodies below are shared by the force, energy and virial kernels.
#include <math.h>

#include <cstdint>

#include "core/exact_sum.hpp"
#include "core/exec.hpp"
#include "core/hd_math.hpp"
#include "core/kernel_pass.hpp"
#include "solvers/md/md_kernels.hpp"

namespace cumulus::md {

// What the bonded kernels read besides the atoms: each owned atom's bonded terms (the data file's
// entries it is part of, in the file's order) with their atoms as local indices (owned atoms or
// ghosts), resolved after every list build (bonded.hpp's BondedTopology). Entry c of owned atom i
// is [c * nown + i]; an unused entry has atom -1.
struct TopologyView {
  const int* bond_atom = nullptr;   // the partner
  const int* bond_type = nullptr;   // zero-based
  int nbond = 0;                    // entries per atom
  const int* angle_atom = nullptr;  // three per angle, at [(3c + m) * nown + i]: the angle's atoms, the vertex second
  const int* angle_type = nullptr;
  int nangle = 0;
  // Rigid water (settle.hpp): the atom's molecule, oxygen first, at [m * nown + i] (-1: none), and
  // its geometry (null without SETTLE).
  const int* settle_atom = nullptr;
  const int* settle_type = nullptr;
  // SHAKE clusters (shake.hpp): the atom's cluster in ascending id at [k * nown + i], k < 4 (-1:
  // none or unused), and its geometry (null without SHAKE).
  const int* shake_atom = nullptr;
  const int* shake_type = nullptr;
  int nown = 0;
};

// bond_style harmonic (LAMMPS's): E = K (r - r0)^2, K holding the 1/2.
struct BondHarmonicCoeffs {
  double k = 0, r0 = 0;
};
// angle_style harmonic (LAMMPS's): E = K (theta - theta0)^2, theta0 in radians here (degrees in the
// data file).
struct AngleHarmonicCoeffs {
  double k = 0, theta0 = 0;
};

// One bond of squared length r2: F / r along the bond vector (the force on atom i is fbond (x_i -
// x_j)), and the energy.
CUMULUS_HD inline void bond_harmonic_term(const BondHarmonicCoeffs& c, double r2, double* fbond, double* e) {
  const double r = sqrt(r2), dr = r - c.r0, rk = c.k * dr;
  *fbond = r > 0 ? -2 * rk / r : 0;
  *e = rk * dr;
}

// One angle 1-2-3 (2 the vertex) from d1 = x1 - x2 and d3 = x3 - x2: the forces on atoms 1 and 3
// (that on 2 is minus their sum) and the energy. theta = atan2(|d1 x d3|, d1 . d3), accurate at 0
// and pi where acos(cos theta) is not; hd::atan2 so that the host and CUDA give the same bits. The
// forces are LAMMPS's expressions, with sin theta from the cross product held at least 0.001 as
// LAMMPS holds it (a straight angle has no unique bending direction).
CUMULUS_HD inline void angle_harmonic_term(const AngleHarmonicCoeffs& c, const double d1[3], const double d3[3], double f1[3],
                                           double f3[3], double* e) {
  const double r1s = d1[0] * d1[0] + d1[1] * d1[1] + d1[2] * d1[2];
  const double r3s = d3[0] * d3[0] + d3[1] * d3[1] + d3[2] * d3[2];
  const double dot = d1[0] * d3[0] + d1[1] * d3[1] + d1[2] * d3[2];
  const double cx = d1[1] * d3[2] - d1[2] * d3[1], cy = d1[2] * d3[0] - d1[0] * d3[2], cz = d1[0] * d3[1] - d1[1] * d3[0];
  const double cross = sqrt(cx * cx + cy * cy + cz * cz);
  const double dtheta = hd::atan2(cross, dot) - c.theta0, tk = c.k * dtheta;
  *e = tk * dtheta;
  const double r13 = sqrt(r1s) * sqrt(r3s);
  const double cs = dot / r13;
  double sn = cross / r13;
  if (sn < 0.001) sn = 0.001;
  const double a = -2 * tk / sn, a11 = a * cs / r1s, a13 = -a / r13, a33 = a * cs / r3s;
  for (int d = 0; d < 3; ++d) {
    f1[d] = a11 * d1[d] + a13 * d3[d];
    f3[d] = a33 * d3[d] + a13 * d1[d];
  }
}

// `which` of the sum kernels: 0 .. 5 the virial tensor's xx yy zz xy xz yz, 6 the energy.
constexpr int kBondedEnergy = 6;

#define CUMULUS_BONDED_KERNELS                                                                                    \
  void map_ids(const Exec& ex, const std::int64_t* id, int nown, int nlocal, int* map);                            \
  std::int64_t resolve_column(const Exec& ex, const std::int64_t* partner, const std::int64_t* id, const int* map,  \
                              int nown, int nlocal, int* out, std::int64_t* into);                                 \
  void bond_harmonic_forces(const Exec& ex, const Atoms& a, const TopologyView& t, const BondHarmonicCoeffs* c);    \
  ExactSum bond_harmonic_sum(const Exec& ex, const Atoms& a, const TopologyView& t, const BondHarmonicCoeffs* c,     \
                             int which, int e);                                                                    \
  void angle_harmonic_forces(const Exec& ex, const Atoms& a, const TopologyView& t, const AngleHarmonicCoeffs* c);  \
  ExactSum angle_harmonic_sum(const Exec& ex, const Atoms& a, const TopologyView& t, const AngleHarmonicCoeffs* c,   \
                              int which, int e);
CUMULUS_DECLARE_KERNEL_PASSES(bonded_kernels, CUMULUS_BONDED_KERNELS)
#undef CUMULUS_BONDED_KERNELS

}  // namespace cumulus::md
