// Kernel bodies of the bonded terms (one source per backend pass: core/kernel_pass.hpp). Every
// owned atom computes each term it takes part in from the term's atoms in the file's order, and
// keeps its own part: its force, and a share of the term's energy and virial (a half of a bond's,
// a third of an angle's). A term is so computed from the same numbers (wrapped coordinates, the
// minimum image) by whichever rank owns each of its atoms, and each atom adds its terms in its own
// fixed order: the forces and the thermo sums have the same bits at any rank count.
#include <cmath>
#include <cstdint>
#include <limits>

#include "solvers/md/bonded_kernels.hpp"

namespace cumulus::md {
namespace bonded_kernels::CUMULUS_PASS {

namespace {
CUMULUS_HD inline void delta(const Atoms& a, int i, int j, double d[3]) {
  d[0] = minimum_image(a.x[i] - a.x[j], a.box[0]);
  d[1] = minimum_image(a.y[i] - a.y[j], a.box[1]);
  d[2] = minimum_image(a.z[i] - a.z[j], a.box[2]);
}
CUMULUS_HD inline int tensor_a(int which) { return which < 3 ? which : (which < 5 ? 0 : 1); }
CUMULUS_HD inline int tensor_b(int which) { return which < 3 ? which : (which == 3 ? 1 : 2); }

// Atom i's part of angle entry c: its force, and the angle's energy and r . F virial (d1 . f1 +
// d3 . f3, with d1, d3 from the vertex) or one component of that virial tensor.
CUMULUS_HD inline bool angle_part(const Atoms& a, const TopologyView& t, const AngleHarmonicCoeffs* coeffs, int i, int c,
                                  double f[3], double* e, double* w, int which) {
  const int l1 = t.angle_atom[(3 * c) * t.nown + i];
  if (l1 < 0) return false;
  const int l2 = t.angle_atom[(3 * c + 1) * t.nown + i], l3 = t.angle_atom[(3 * c + 2) * t.nown + i];
  double d1[3], d3[3], f1[3], f3[3];
  delta(a, l1, l2, d1);
  delta(a, l3, l2, d3);
  angle_harmonic_term(coeffs[t.angle_type[c * t.nown + i]], d1, d3, f1, f3, e);
  for (int d = 0; d < 3; ++d) f[d] = i == l1 ? f1[d] : (i == l3 ? f3[d] : -(f1[d] + f3[d]));
  if (which < 0)
    *w = d1[0] * f1[0] + d1[1] * f1[1] + d1[2] * f1[2] + d3[0] * f3[0] + d3[1] * f3[1] + d3[2] * f3[2];
  else
    *w = d1[tensor_a(which)] * f1[tensor_b(which)] + d3[tensor_a(which)] * f3[tensor_b(which)];
  return true;
}
}  // namespace

// map[id] = local index of every local atom: ghosts first, then the owned atoms, so that an owned
// atom is found as itself should a rank hold a ghost copy of it too.
void map_ids(const Exec& ex, const std::int64_t* id, int nown, int nlocal, int* map) {
  for_each(ex, "md.bonded.map", Box(nown, 0, 0, nlocal, 1, 1), [=] CUMULUS_HD(int i, int, int) { map[id[i]] = i; });
  for_each(ex, "md.bonded.map", Box(0, 0, 0, nown, 1, 1), [=] CUMULUS_HD(int i, int, int) { map[id[i]] = i; });
}

// One column of the owned atoms' partners (ids, -1 unused) to local indices: out[i] = the local
// atom whose id it is (map's entry is checked against the id: the map is never cleared, so an entry
// may be a stale index from an earlier build). Returns the smallest id of an owned atom with a
// partner that is not here (int64 max: none); with `into` (ex's memory) stores it there without a
// wait (reduce_into): a build's columns are then read together.
std::int64_t resolve_column(const Exec& ex, const std::int64_t* partner, const std::int64_t* id, const int* map, int nown,
                            int nlocal, int* out, std::int64_t* into) {
  return reduce_into(ex, "md.bonded.resolve", Box(0, 0, 0, nown, 1, 1), std::numeric_limits<std::int64_t>::max(), MinOp{},
                [=] CUMULUS_HD(int i, int, int) -> std::int64_t {
                  const std::int64_t p = partner[i];
                  if (p < 0) {
                    out[i] = -1;
                    return std::numeric_limits<std::int64_t>::max();
                  }
                  const int m = map[p];
                  const bool here = m >= 0 && m < nlocal && id[m] == p;
                  out[i] = here ? m : -1;
                  return here ? std::numeric_limits<std::int64_t>::max() : id[i];
                }, into);
}

void bond_harmonic_forces(const Exec& ex, const Atoms& a, const TopologyView& t, const BondHarmonicCoeffs* coeffs) {
  for_each(ex, "md.bonds", Box(0, 0, 0, t.nown, 1, 1), [=] CUMULUS_HD(int i, int, int) {
    double f[3] = {0, 0, 0}, e = 0, w = 0;
    for (int c = 0; c < t.nbond; ++c) {
      const int j = t.bond_atom[c * t.nown + i];
      if (j < 0) continue;
      double d[3], fbond, en;
      delta(a, i, j, d);
      bond_harmonic_term(coeffs[t.bond_type[c * t.nown + i]], d[0] * d[0] + d[1] * d[1] + d[2] * d[2], &fbond, &en);
      for (int k = 0; k < 3; ++k) f[k] += fbond * d[k];
      e += en;
      w += fbond * (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    }
    a.fx[i] += f[0];
    a.fy[i] += f[1];
    a.fz[i] += f[2];
    if (a.energy) {
      a.pe[i] += 0.5 * e;
      a.virial[i] += 0.5 * w;
    }
  });
}

ExactSum bond_harmonic_sum(const Exec& ex, const Atoms& a, const TopologyView& t, const BondHarmonicCoeffs* coeffs,
                           int which, int e) {
  const double to_units = ::ldexp(0.5, -e);  // the atom's half, in units of 2^e
  return reduce(ex, "md.bonds.sum", Box(0, 0, 0, t.nown, 1, 1), ExactSum{}, SumOp{}, [=] CUMULUS_HD(int i, int, int) {
    double s = 0;
    for (int c = 0; c < t.nbond; ++c) {
      const int j = t.bond_atom[c * t.nown + i];
      if (j < 0) continue;
      double d[3], fbond, en;
      delta(a, i, j, d);
      bond_harmonic_term(coeffs[t.bond_type[c * t.nown + i]], d[0] * d[0] + d[1] * d[1] + d[2] * d[2], &fbond, &en);
      s += which == kBondedEnergy ? en : d[tensor_a(which)] * d[tensor_b(which)] * fbond;
    }
    return ExactSum::of_units(s * to_units);
  });
}

void angle_harmonic_forces(const Exec& ex, const Atoms& a, const TopologyView& t, const AngleHarmonicCoeffs* coeffs) {
  for_each(ex, "md.angles", Box(0, 0, 0, t.nown, 1, 1), [=] CUMULUS_HD(int i, int, int) {
    double f[3] = {0, 0, 0}, e = 0, w = 0;
    for (int c = 0; c < t.nangle; ++c) {
      double fc[3], en, wc;
      if (!angle_part(a, t, coeffs, i, c, fc, &en, &wc, -1)) continue;
      for (int k = 0; k < 3; ++k) f[k] += fc[k];
      e += en;
      w += wc;
    }
    a.fx[i] += f[0];
    a.fy[i] += f[1];
    a.fz[i] += f[2];
    if (a.energy) {
      a.pe[i] += e * (1.0 / 3);
      a.virial[i] += w * (1.0 / 3);
    }
  });
}

ExactSum angle_harmonic_sum(const Exec& ex, const Atoms& a, const TopologyView& t, const AngleHarmonicCoeffs* coeffs,
                            int which, int e) {
  const double to_units = ::ldexp(1.0, -e) * (1.0 / 3);  // the atom's third, in units of 2^e
  return reduce(ex, "md.angles.sum", Box(0, 0, 0, t.nown, 1, 1), ExactSum{}, SumOp{}, [=] CUMULUS_HD(int i, int, int) {
    double s = 0;
    for (int c = 0; c < t.nangle; ++c) {
      double fc[3], en, wc;
      if (!angle_part(a, t, coeffs, i, c, fc, &en, &wc, which == kBondedEnergy ? -1 : which)) continue;
      s += which == kBondedEnergy ? en : wc;
    }
    return ExactSum::of_units(s * to_units);
  });
}

}  // namespace bonded_kernels::CUMULUS_PASS
}  // namespace cumulus::md
