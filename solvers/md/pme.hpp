#pragma once
// Smooth particle-mesh Ewald (Essmann et al., J. Chem. Phys. 103, 8577 (1995)): the reciprocal-
// space part of the Ewald sum of point charges in a periodic orthorhombic box, on the distributed
// FFT of mesh/ (docs/md.md, "PME").
//
//   E_rec = 1/(2 pi V) sum_{m != 0} exp(-pi^2 m^2 / alpha^2) / m^2 |b(m)|^2 |S(m)|^2   (times the
//   Coulomb constant), S the FFT of the charges spread onto an N0 x N1 x N2 grid by cardinal
//   B-splines of order 4-6, |b(m)|^2 the splines' Euler exponential moduli.
//
// Each rank spreads the atoms it owns into its brick of the grid and a few ghost layers (the grid
// is split with the atoms' process grid, so every owned atom's stencil lands there), the ghost
// layers are added into their owners (mesh/HaloExchange::accumulate), the forward FFT, the
// influence function, the backward FFT, the ghost layers filled again (a forward halo exchange),
// and each atom's force interpolated from its stencil. The same bits at any rank count: the
// charges are deposited as integers (fixed point, 2^-46 of the largest charge), the FFT is
// bitwise, the energy and virial are exact sums, and each force reads the same values in the same
// order. Tin-foil boundary conditions (no m = 0 term); the self energy, the real-space term and
// the background of a net charge belong to the caller (kspace style).
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/comm.hpp"
#include "core/exec.hpp"
#include "mesh/decomposition.hpp"
#include "mesh/fft.hpp"
#include "mesh/field.hpp"
#include "mesh/halo_exchange.hpp"
#include "solvers/md/pme_kernels.hpp"

namespace cumulus::md {

struct PmeParams {
  Index3 grid{0, 0, 0};
  int order = 5;
  double alpha = 0;     // Ewald splitting parameter [1/length]
  double coulomb = 1;   // the Coulomb constant in the run's units (LAMMPS's qqr2e)
};

struct PmeResult {
  double energy = 0;
  std::array<double, 6> virial{};  // xx, yy, zz, xy, xz, yz
};

// What the k-space style calls, whatever the precision.
class PmeSolver {
 public:
  virtual ~PmeSolver() = default;
  virtual PmeResult compute(const PmeAtoms& a) = 0;
  virtual void set_box(const std::array<double, 3>& box) = 0;
  virtual std::string describe() const = 0;
};

// R: the precision of the splines, the grid, the FFT, the spectrum and the interpolation (double;
// float for md.precision = "mixed"). The charges' fixed-point grid, the stencil's placement, the
// forces' accumulation and the energy and virial sums are the same in both.
template <class R>
class PmeT : public PmeSolver {
 public:
  using Result = PmeResult;
  // `atoms`: the atoms' decomposition (md's domain: each rank's block of the box is the union of
  // its bins), `box` the box lengths, `drift` how far an owned atom may be outside its block (half
  // the neighbour skin: atoms migrate when one has moved that far), `max_abs_charge` the largest
  // |q| of any atom on any rank (it sets the fixed point). Throws InputError for a grid that the
  // ranks cannot split, a spline order outside 4-6 or a grid too coarse for the ranks (ghost
  // layers deeper than a neighbour's brick).
  PmeT(const PmeParams& p, const CartesianDecomposition& atoms, const std::array<double, 3>& box, double drift,
       double max_abs_charge, const Comm& comm, const Exec& exec);

  // Adds the reciprocal-space forces on the n owned atoms into a.fx, a.fy, a.fz; with a.pe (a
  // thermo step) also their energy and virial shares (pme_kernels.hpp), and returns the energy and
  // virial over all ranks (the same bits on each; zero without a.pe: the exact sums over the
  // spectrum are the costliest part of the spectral pass, and forces do not need them). Collective.
  Result compute(const PmeAtoms& a) override;

  // The box changed (a barostat): the influence function's lengths and the stencil's scale.
  void set_box(const std::array<double, 3>& box) override;

  const Index3& grid() const { return p_.grid; }
  int order() const { return p_.order; }
  const Index3& ghost() const { return ghost_; }
  std::string describe() const override;

 private:
  PmeParams p_;
  Comm comm_;
  Exec exec_;
  std::array<double, 3> box_{};
  CartesianDecomposition grid_decomp_;
  Index3 ghost_{0, 0, 0};
  double scale_ = 1;
  std::unique_ptr<FftPlan<R>> fft_;
  std::unique_ptr<HaloExchange> halo_;  // the fixed-point charges and the R potential grid
  Field<std::int64_t> charge_;  // fixed point, interior and ghost layers
  std::vector<std::int64_t> spread_scratch_;  // the host threads' copies of it (pme_spread_private)
  PmeSplines<R> splines_;                     // the host's splines of the evaluation (pme_splines)
  Field<R> grid_;               // the charges as R, then the convolved potential
  Buffer<FftComplex<R>> spectrum_;
  Buffer<double> bmod_[3];
  Buffer<R> influence_;  // G per local spectral cell, in the spectrum's layout (set_box)
  PmeSpectralT<R> spectral_;
  PmeStencil stencil_;
};

using Pme = PmeT<double>;
extern template class PmeT<double>;
extern template class PmeT<float>;

// The B-spline moduli |b(m)|^2 = 1 / |sum_{k=0}^{p-2} M_p(k+1) exp(2 pi i m k / n)|^2, m = 0 .. n-1;
// where the sum vanishes (odd orders at the Nyquist mode) the mean of the neighbours' values.
std::vector<double> pme_bspline_moduli(int n, int order);

}  // namespace cumulus::md
