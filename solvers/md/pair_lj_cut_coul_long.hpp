#pragma once
// The lj/cut/coul/long and coul/long force terms' parameters and kernels (pair_lj_cut_coul_long.cpp
// is the term, pair_lj_cut_coul_long_kernels.cpp the kernel bodies), declared once per backend pass.
#include <math.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "core/exact_sum.hpp"
#include "core/exec.hpp"
#include "core/hd_math.hpp"
#include "core/kernel_pass.hpp"
#include "solvers/md/coul_table.hpp"
#include "solvers/md/md_kernels.hpp"
#include "solvers/md/pair_lj_cut.hpp"

namespace cumulus::md {

// The real-space Coulomb part: qqr2e q_i q_j erfc(alpha r) / r inside cut2; special pairs
// (1-2, 1-3, 1-4: levels 1-3) scale LJ by special_lj[level] and Coulomb by special_coul[level]
// (level 0: a plain pair, factor 1). `lj`: whether there is an LJ part (lj/cut/coul/long).
// `table`: the tabulated erf(alpha r) / r (coul_table.hpp; md.coul_table, the default), or null
// for the exact erfc per pair.
// R: double, or float for md.precision = "mixed" (pair_lj_cut_coul_long_mixed_kernels.cpp).
template <class R>
struct CoulParamsT {
  R qqr2e = 1, alpha = 0, cut2 = 0;
  R special_lj[4] = {1, 0, 0, 0}, special_coul[4] = {1, 0, 0, 0};
  bool lj = true;
  CoulTableViewT<R> table;
};
using CoulParams = CoulParamsT<double>;

// One pair's terms from the table: F(r) / r, and the LJ, Coulomb and special-correction energies.
// qq = qqr2e q_i q_j; fc, fl the special factors; `lj` the pair's LJ coefficients (used when
// with_lj: p.lj, a parameter so that the vectorised loop can make it a constant).
// Branch-free (terms beyond a cutoff multiplied by 0): the host's vectorised loop
// (pair_lj_cut_coul_long_kernels.cpp) inlines this very function, so that it, the scalar loops and
// CUDA give the same bits.
// R: double, or float (md.precision = "mixed"; the same operations).
template <class R>
CUMULUS_HD inline void coul_pair_tabulated(const CoulParamsT<R>& p, const LjCoefficientsT<R>& lj, R r2, R qq, R fc, R fl,
                                           bool with_lj, R* fpair, R* evdwl, R* ecoul, R* ecorr) {
  const R in_c = r2 < p.cut2 ? R(1) : R(0);
  const R rinv = R(1) / sqrt(r2), r2i = rinv * rinv;
  R h, dh;
  coul_table_eval(p.table, r2, &h, &dh);
  const R q = qq * in_c;
  R f = q * (fc * rinv * r2i + 2 * dh);
  *ecoul = fc * q * (rinv - h);
  *ecorr = -(1 - fc) * q * h;
  *evdwl = 0;
  if (with_lj) {
    const R in_l = r2 < lj.cut2 ? fl : R(0);
    const R r6i = r2i * r2i * r2i;
    f += in_l * r6i * (lj.lj1 * r6i - lj.lj2) * r2i;
    *evdwl = in_l * (r6i * (lj.lj3 * r6i - lj.lj4) - lj.offset);
  }
  *fpair = f;
}

// One pair's terms: F(r) / r, LJ energy, real-space Coulomb energy of the pair as scaled
// (special_coul erfc part), and the correction for the part a special pair leaves out of the
// k-space sum: -(1 - special_coul) qqr2e q_i q_j erf(alpha r) / r (NIST's "intramolecular" term for
// an excluded pair). As LAMMPS's pair lj/cut/coul/long computes them, with the exact erfc: hd::erfc
// and hd::exp (core/hd_math.hpp) rather than the libraries', so that the host and CUDA passes give
// the same bits (sqrt and division are correctly rounded on both).
struct CoulTerms {
  double fpair = 0, evdwl = 0, ecoul = 0, ecorr = 0;
};
CUMULUS_HD inline CoulTerms coul_pair(const LjCoefficients& lj, const CoulParams& p, double r2, double qiqj,
                                      int level) {
  CoulTerms t;
  if (p.table.c) {
    coul_pair_tabulated(p, lj, r2, p.qqr2e * qiqj, p.special_coul[level], p.special_lj[level], p.lj, &t.fpair, &t.evdwl,
                        &t.ecoul, &t.ecorr);
    return t;
  }
  double force = 0;
  if (r2 < p.cut2) {
    const double r = sqrt(r2), grij = p.alpha * r, expm2 = hd::exp(-grij * grij), erfc_ = hd::erfc(grij);
    const double prefactor = p.qqr2e * qiqj / r;
    const double fc = p.special_coul[level];
    // 2 / sqrt(pi) = 1.1283791670955126
    force = prefactor * (erfc_ + 1.1283791670955126 * grij * expm2);
    t.ecoul = fc * prefactor * erfc_;
    if (fc < 1) {
      force -= (1 - fc) * prefactor;
      t.ecorr = -(1 - fc) * prefactor * (1 - erfc_);
    }
  }
  if (p.lj && r2 < lj.cut2) {
    const double fl = p.special_lj[level];
    const double r2i = 1.0 / r2, r6i = r2i * r2i * r2i;
    force += fl * r6i * (lj.lj1 * r6i - lj.lj2);
    t.evdwl = fl * (r6i * (lj.lj3 * r6i - lj.lj4) - lj.offset);
  }
  t.fpair = force / r2;
  return t;
}

// Atom i's special level for partner id idj (0: none), by a scan of its list.
CUMULUS_HD inline int special_level(const Atoms& a, int i, std::int64_t idj) {
  for (int k = 0; k < a.nspecial; ++k) {
    const std::int64_t v = a.special[k][i];
    if (v >= 0 && (v >> 2) == idj) return static_cast<int>(v & 3);
  }
  return 0;
}

// coul_forces: forces (and with a.energy, per-atom energies and virials: half of each pair's) over
// a full list on either backend; coul_forces_half: over the host's half list, running `other` (if
// given) on the calling thread where its threads would otherwise wait on one (ForceTerm::
// compute_with), or after. coul_sum: one sum over
// the owned atoms of every rank's share (half of each pair's), exactly in units of 2^e: `which`
// 0-5 the virial tensor's components (xx yy zz xy xz yz), 6 LJ energy, 7 real-space Coulomb, 8
// the special pairs' correction. coul_sums_half, coul_sums_full: all nine at once over the host's
// half list or a full list on the host (threads), with coul_sum's values.
#define CUMULUS_COUL_KERNELS                                                                                   \
  void coul_forces(const Exec& ex, const Atoms& a, const LjTable& lj, const CoulParams& p);                    \
  void coul_forces_half(const Atoms& a, const LjTable& lj, const CoulParams& p,                                \
                        const std::function<void()>* other = nullptr);                                         \
  ExactSum coul_sum(const Exec& ex, const Atoms& a, const LjTable& lj, const CoulParams& p, int which, int e); \
  void coul_sums_half(const Atoms& a, const LjTable& lj, const CoulParams& p, int e, ExactSum* out);          \
  void coul_sums_full(const Atoms& a, const LjTable& lj, const CoulParams& p, int e, ExactSum* out);
CUMULUS_DECLARE_KERNEL_PASSES(coul_kernels, CUMULUS_COUL_KERNELS)
#undef CUMULUS_COUL_KERNELS

// md.precision = "mixed" (as OpenMM's and GROMACS's mixed precision): each pair's separation from
// fp32 coordinates (separation32); its terms by coul_pair_tabulated in fp32 from fp32 coefficients
// and the fp32 table (degree 3: coul_table_build32); the force components fp32 products, the
// energy and virial fp64, each rounded once to fixed point and summed as integers
// (fixed_point.hpp). The sums do not depend on the order of the pairs, so mixed runs have
// the same bits at any rank count, thread count and list, and on both backends.
using CoulParams32 = CoulParamsT<float>;
// The mixed kernels: forces over a full list on either backend (coul_forces_mixed; `rows`:
// fixed::kRow integers an owned atom in the backend's memory, where the generic loop adds each
// atom's sums from several threads: zero on entry, left zero on return; zero_rows clears a new
// buffer) or the host's half list at any thread count
// (coul_forces_half_mixed; `scratch`: its per-thread arrays, kept by the caller so that no call
// allocates; `other`: ForceTerm::compute_with's, on the calling thread meanwhile at two threads,
// else after); the nine sums (coul_sum's) one at a time over a full list, or all at once over the
// host's half list.
#define CUMULUS_COUL_MIXED_KERNELS                                                                      \
  void coul_forces_mixed(const Exec& ex, const Atoms& a, const LjTable32& lj, const CoulParams32& p,    \
                         std::int64_t* rows);                                                            \
  void zero_rows(const Exec& ex, std::int64_t* rows, std::size_t n);                                    \
  void coul_forces_half_mixed(const Atoms& a, const LjTable32& lj, const CoulParams32& p,                \
                              std::vector<std::int64_t>& scratch,                                        \
                              const std::function<void()>* other = nullptr);                             \
  ExactSum coul_sum_mixed(const Exec& ex, const Atoms& a, const LjTable32& lj, const CoulParams32& p, int which, int e); \
  void coul_sums_half_mixed(const Atoms& a, const LjTable32& lj, const CoulParams32& p, int e, ExactSum* out);
CUMULUS_DECLARE_KERNEL_PASSES(coul_mixed_kernels, CUMULUS_COUL_MIXED_KERNELS)
#undef CUMULUS_COUL_MIXED_KERNELS

}  // namespace cumulus::md
