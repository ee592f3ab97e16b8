#pragma once
// Smooth particle-mesh Ewald (kspace_pme.cpp): the kernels of one reciprocal-space evaluation,
// declared once per backend pass (pme_kernels.cpp holds the bodies).
#include <cstdint>
#include <string>
#include <vector>
#include <type_traits>

#include "core/exact_sum.hpp"
#include "core/exec.hpp"
#include "core/kernel_pass.hpp"
#include "mesh/fft_kernels.hpp"
#include "mesh/field.hpp"

namespace cumulus::md {

inline constexpr int kPmeMaxOrder = 6;

// Charged atoms as the PME kernels read them (owned atoms only; backend memory).
struct PmeAtoms {
  const double *x = nullptr, *y = nullptr, *z = nullptr, *q = nullptr;
  double *fx = nullptr, *fy = nullptr, *fz = nullptr;
  int n = 0;
  // Optional per-atom energies and virials (thermo steps): each atom gets q_i phi(r_i) / 2 (its
  // share of the reciprocal energy: the shares sum to it, to the fixed point's rounding) plus
  // self_coef q_i^2 plus `extra`; its virial that share times the reciprocal virial's trace over the
  // reciprocal energy (so that the shares sum to the trace) plus extra_virial.
  double *pe = nullptr, *virial = nullptr;
  double self_coef = 0, extra = 0, extra_virial = 0;
  double virial_per_energy = 0;  // set by Pme::compute
  // With it (ex's memory; md/step_checks.hpp), the count of atoms outside the grid's reach is
  // stored there and not waited for: the caller reads it later and reports it (pme_outside_error).
  std::int64_t* outside_into = nullptr;
};

// PME's error for `outside` atoms beyond the ghost layers (at `step`; -1: not known).
std::string pme_outside_error(std::int64_t outside, std::int64_t step);

// Where an atom's spline stencil goes on this rank's part of the grid. Grid point k lies at k L / N;
// an atom at x (in [0, L)) touches points floor(u) - order + 1 .. floor(u), u = x N / L, shifted by
// a multiple of N into [lo, hi): this rank's brick and its ghost layers, which hold the stencil of
// any atom within the drift of its block (checked: `outside` counts the atoms that are not).
struct PmeStencil {
  int order = 4;
  int n[3] = {1, 1, 1};
  double inv_h[3] = {1, 1, 1};  // N / L
  int lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
};

// The host's B-spline stencils of one evaluation (pme_splines), for the spreading and the
// interpolation both: per atom its stencil's first points along x, y, z and whether the stencil
// lies inside this rank's grid (k0: 4 ints an atom), its weights theta[3][order] and their
// derivatives (w: 6 order values an atom). Host memory.
template <class R>
struct PmeSplines {
  int order = 0;
  std::vector<int> k0;
  std::vector<R> w;
};

// The reciprocal-space sums of one evaluation, each exact (core/exact_sum.hpp) in units of 2^-60:
// energy, then the virial tensor xx, yy, zz, xy, xz, yz.
struct PmeSums {
  ExactSum s[7];
  CUMULUS_HD friend PmeSums operator+(const PmeSums& a, const PmeSums& b) {
    PmeSums r;
    for (int c = 0; c < 7; ++c) r.s[c] = a.s[c] + b.s[c];
    return r;
  }
};
inline constexpr int kPmeSumExponent = -60;

// The spectral side: the influence function's constants and the B-spline moduli |b(m)|^2 per axis
// (backend memory, bmod[a][m] for m in 0 .. n[a] - 1).
// R: the grid's and spectrum's precision (double, or float for md.precision = "mixed").
template <class R>
struct PmeSpectralT {
  FftWavenumbers k;
  double inv_l[3] = {1, 1, 1};
  double pi2_over_alpha2 = 0;  // pi^2 / alpha^2
  double prefactor = 0;        // coulomb constant / (pi V)
  const double* bmod[3] = {nullptr, nullptr, nullptr};
  // The influence function G of every local spectral cell, in the spectrum's layout (filled by
  // pme_influence for the current box; read by pme_sums and pme_convolve).
  StridedView<R> g;
};
using PmeSpectral = PmeSpectralT<double>;

// pme_spread: each atom's q theta_x theta_y theta_z, in units of 1 / scale rounded to integers,
// added into the fixed-point grid (atomically where `atomic`: several threads; any order gives the
// same bits); returns the atoms whose stencil falls outside [lo, hi). pme_influence: G into sp.g.
// pme_to_real: the interior of the integer grid as R. pme_sums: energy and virial over this rank's
// spectral cells. pme_convolve: the spectrum times the influence function, in place. pme_forces:
// each atom's force from the convolved grid (ghosts filled), added into f. R (every kernel's
// template argument, double or float): the precision of the splines, the grid, the spectrum and
// the interpolation; positions, the stencil's placement, forces and sums stay fp64.
// The host's kernels take the splines computed once an evaluation (pme_splines: each atom's
// stencil and weights, both precisions, 16 atoms at a time in vectors; about 60 % of the
// spreading's and the interpolation's time when each computed its own, scalar, per axis):
// pme_spread_private: pme_spread without atomics: at several threads each deposits into its own
// copy of the grid (`cells`: the grid's allocated cells; `scratch` holds the copies), and the
// copies are added into `grid` (integers: the same bits as the atomic path); one thread deposits
// into the grid itself. An atomic add of 64 bits costs about 20 cycles on the x86 machines
// measured; a plain one 1 (sp null: each atom's stencil computed as it deposits, CUDA's way).
// pme_forces_splines: pme_forces from the splines. The same weights, the same operations in the
// same order, as the kernels that compute their own (CUDA's). pme_host_splines: whether the host
// takes the splines' path (where it has AVX2, not with CUMULUS_NO_AVX512 in the environment: then
// CUDA's kernel bodies, which the tests compare it with).
#define CUMULUS_PME_KERNELS                                                                           \
  template <class R>                                                                                  \
  std::int64_t pme_spread(const Exec& ex, const PmeAtoms& a, const PmeStencil& st, const View<std::int64_t>& grid, \
                          double scale, bool atomic, std::int64_t* into);                              \
  template <class R>                                                                                  \
  void pme_influence(const Exec& ex, const Box& box, const PmeSpectralT<R>& sp);                       \
  void pme_zero(const Exec& ex, const View<std::int64_t>& grid, const Box& box);                         \
  template <class R>                                                                                  \
  void pme_to_real(const Exec& ex, const View<std::int64_t>& in, const View<R>& out, const Box& box, double inv_scale); \
  template <class R>                                                                                  \
  PmeSums pme_sums(const Exec& ex, const StridedView<FftComplex<R>>& s, const Box& box, const PmeSpectralT<R>& sp); \
  template <class R>                                                                                  \
  void pme_convolve(const Exec& ex, const StridedView<FftComplex<R>>& s, const Box& box, const PmeSpectralT<R>& sp); \
  template <class R>                                                                                  \
  void pme_forces(const Exec& ex, const PmeAtoms& a, const PmeStencil& st, const View<R>& phi);        \
  bool pme_host_splines();                                                                            \
  template <class R>                                                                                  \
  void pme_splines(const PmeAtoms& a, const PmeStencil& st, PmeSplines<R>& sp);                        \
  template <class R>                                                                                  \
  std::int64_t pme_spread_private(const PmeAtoms& a, const PmeStencil& st, const PmeSplines<R>* sp,    \
                                  const View<std::int64_t>& grid, std::size_t cells, double scale,     \
                                  std::vector<std::int64_t>& scratch);                                 \
  template <class R>                                                                                  \
  void pme_forces_splines(const Exec& ex, const PmeAtoms& a, const PmeStencil& st, const PmeSplines<R>& sp, \
                          const View<R>& phi);
CUMULUS_DECLARE_KERNEL_PASSES(pme_kernels, CUMULUS_PME_KERNELS)
#undef CUMULUS_PME_KERNELS

// The values of the cardinal B-spline M_p at w, w + 1, ..., w + p - 1 (w in [0, 1)) into m[0 .. p-1]
// and, when dm is given, its derivative there (M_p' = M_{p-1}(x) - M_{p-1}(x - 1)). Host and device.
template <class R>
CUMULUS_HD inline void pme_bspline(R w, int p, R* m, std::type_identity_t<R>* dm) {
  R a[kPmeMaxOrder];
  a[0] = 1.0;  // M_1(w) = 1 on [0, 1)
  for (int n = 2; n <= p; ++n) {
    if (n == p && dm) {
      dm[0] = a[0];
      for (int i = 1; i < n - 1; ++i) dm[i] = a[i] - a[i - 1];
      dm[n - 1] = -a[n - 2];
    }
    // M_n(w + i) = ((w + i) M_{n-1}(w + i) + (n - w - i) M_{n-1}(w + i - 1)) / (n - 1), from the top
    // down so that a[i - 1] is still M_{n-1}'s.
    const R inv = R(1) / R(n - 1);
    a[n - 1] = (R(1) - w) * a[n - 2] * inv;  // (n - w - (n - 1)) M_{n-1}(w + n - 2)
    for (int i = n - 2; i >= 1; --i) a[i] = ((w + R(i)) * a[i] + (R(n) - w - R(i)) * a[i - 1]) * inv;
    a[0] = w * a[0] * inv;
  }
  for (int i = 0; i < p; ++i) m[i] = a[i];
  if (p == 1 && dm) dm[0] = 0;
}

}  // namespace cumulus::md
