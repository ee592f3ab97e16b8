#pragma once
// The lj/cut force term's coefficient table and kernels (pair_lj_cut.cpp is the term itself,
// pair_lj_cut_kernels.cpp the kernel bodies), declared once per backend pass.
#include <cstdint>
#include <vector>

#include "core/config.hpp"

#include "core/exact_sum.hpp"
#include "core/exec.hpp"
#include "core/kernel_pass.hpp"
#include "solvers/md/md_kernels.hpp"

namespace cumulus::md {

// Lennard-Jones 12-6 between one pair of types, in the form the force loop wants:
// F(r) r = r^-6 (lj1 r^-6 - lj2) and U(r) = r^-6 (lj3 r^-6 - lj4) - offset, inside cut2.
// R: double, or float for md.precision = "mixed" (pair_lj_cut_coul_long_mixed.cpp).
template <class R>
struct LjCoefficientsT {
  R cut2 = 0, lj1 = 0, lj2 = 0, lj3 = 0, lj4 = 0, offset = 0;
};
using LjCoefficients = LjCoefficientsT<double>;
// The parameters of one type pair, and every pair's from the job's keys (md.epsilon, md.sigma,
// md.cutoff, [md.pairs.*], md.mixing), row-major: lj/cut's, and lj/cut/coul/long's LJ part.
struct LjPair {
  double epsilon = 0, sigma = 0, cutoff = 0;
  bool explicit_pair = false;
};
std::vector<LjPair> lj_pairs(const Config& cfg, int ntypes);

// The table of every type pair, row-major (pair (a, b) at a * ntypes + b), in backend memory.
template <class R>
struct LjTableT {
  const LjCoefficientsT<R>* c = nullptr;
  int ntypes = 1;
};
using LjTable = LjTableT<double>;

// lj_forces: forces (and with a.energy, per-atom energies and virials) over a full list, on either
// backend; lj_forces_half: over the host's half list (one thread). lj_virial: one component of the
// virial tensor, sum over pairs of r_a F_b (0 xx, 1 yy, 2 zz, 3 xy, 4 xz, 5 yz), each pair's half
// given to each owned atom of it, summed exactly in units of 2^e (full or half list).
#define CUMULUS_LJ_KERNELS                                                                           \
  void lj_forces(const Exec& ex, const Atoms& a, const LjTable& lj);                                 \
  void lj_forces_half(const Atoms& a, const LjTable& lj);                                             \
  ExactSum lj_virial(const Exec& ex, const Atoms& a, const LjTable& lj, int component, int e);
CUMULUS_DECLARE_KERNEL_PASSES(lj_kernels, CUMULUS_LJ_KERNELS)
#undef CUMULUS_LJ_KERNELS

// md.precision = "mixed" (pair_lj_cut_mixed_kernels.cpp): the separations and pair terms in fp32
// (the virial's product in fp64), summed in fixed point (fixed_point.hpp). lj_forces_mixed: a full
// list on either backend; lj_forces_half_mixed: the host's half list at any thread count
// (`scratch`: its per-thread arrays, kept by the caller so that no call allocates);
// lj_virial_mixed: lj_virial's component over a full list; lj_virial_half_mixed: all six over the
// host's half list, with lj_virial_mixed's values.
using LjCoefficients32 = LjCoefficientsT<float>;
using LjTable32 = LjTableT<float>;
#define CUMULUS_LJ_MIXED_KERNELS                                                                           \
  void lj_forces_mixed(const Exec& ex, const Atoms& a, const LjTable32& lj);                               \
  void lj_forces_half_mixed(const Atoms& a, const LjTable32& lj, std::vector<std::int64_t>& scratch);      \
  ExactSum lj_virial_mixed(const Exec& ex, const Atoms& a, const LjTable32& lj, int component, int e);     \
  void lj_virial_half_mixed(const Atoms& a, const LjTable32& lj, int e, ExactSum* out);
CUMULUS_DECLARE_KERNEL_PASSES(lj_mixed_kernels, CUMULUS_LJ_MIXED_KERNELS)
#undef CUMULUS_LJ_MIXED_KERNELS

}  // namespace cumulus::md
