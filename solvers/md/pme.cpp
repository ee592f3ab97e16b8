// Smooth PME: set-up (the grid's split and ghost layers, the FFT plan, the spline moduli) and one
// evaluation. The kernels are in pme_kernels.cpp; the equations in pme.hpp and docs/md.md.
#include "solvers/md/pme.hpp"

#include <algorithm>
#include <cmath>
#include <complex>

#include "core/constants.hpp"
#include "core/error.hpp"
#include "core/strings.hpp"
#include "core/timers.hpp"

namespace cumulus::md {

std::vector<double> pme_bspline_moduli(int n, int order) {
  // M_p at the integers 1 .. p - 1 (M_p(0) = 0): the spline at w = 0.
  double m[kPmeMaxOrder];
  pme_bspline<double>(0.0, order, m, nullptr);
  std::vector<double> mod(static_cast<std::size_t>(n));
  for (int k = 0; k < n; ++k) {
    std::complex<double> s = 0;
    for (int j = 0; j + 1 < order; ++j) s += m[j + 1] * std::polar(1.0, 2 * kPi * static_cast<double>(k) * j / n);
    const double a = std::norm(s);
    mod[static_cast<std::size_t>(k)] = a > 1e-10 ? 1.0 / a : 0.0;
  }
  // Odd orders: the sum vanishes at the Nyquist mode of an even n; the neighbours' mean there (as
  // GROMACS and LAMMPS do), a smooth continuation of |b|^2.
  for (int k = 0; k < n; ++k)
    if (mod[static_cast<std::size_t>(k)] == 0.0)
      mod[static_cast<std::size_t>(k)] = 0.5 * (mod[static_cast<std::size_t>((k + n - 1) % n)] + mod[static_cast<std::size_t>((k + 1) % n)]);
  return mod;
}

namespace {
int max_host_threads() { return omp_get_max_threads(); }

CartesianDecomposition grid_split(const PmeParams& p, const CartesianDecomposition& atoms) {
  const Index3& dims = atoms.dims();
  for (int d = 0; d < 3; ++d)
    if (p.grid[d] < dims[d])
      throw InputError(strprintf("the PME grid %dx%dx%d has fewer points along %c than the %d ranks the atoms are split "
                                 "over there (a %dx%dx%d process grid): a finer grid or fewer ranks",
                                 p.grid[0], p.grid[1], p.grid[2], "xyz"[d], dims[d], dims[0], dims[1], dims[2]));
  return CartesianDecomposition(p.grid, {true, true, true}, atoms.nranks(), 3, 1, dims);
}
}  // namespace

template <class R>
PmeT<R>::PmeT(const PmeParams& p, const CartesianDecomposition& atoms, const std::array<double, 3>& box, double drift,
              double max_abs_charge, const Comm& comm, const Exec& exec)
    : p_(p), comm_(comm), exec_(exec), box_(box), grid_decomp_(grid_split(p, atoms)) {
  if (p.order < 4 || p.order > kPmeMaxOrder)
    throw InputError(strprintf("the PME spline order is %d: it must be 4, 5 or 6", p.order));
  for (int d = 0; d < 3; ++d)
    if (p.grid[d] < 2 * p.order)
      throw InputError(strprintf("the PME grid %dx%dx%d is too coarse for splines of order %d: at least %d points per axis",
                                 p.grid[0], p.grid[1], p.grid[2], p.order, 2 * p.order));
  if (!(p.alpha > 0)) throw InputError(strprintf("the Ewald parameter alpha is %g: it must be positive", p.alpha));
  // Ghost layers: enough for the stencil of any atom within `drift` of its block, on every rank
  // (the same depth everywhere, as the halo exchange needs), plus one point for the rounding of a
  // coordinate at a block's edge.
  // Along an axis the atoms are not split over, every coordinate is in [0, L) and the brick is
  // the whole axis: the stencil only wraps, order - 1 points below (and one for rounding).
  const Index3& nbins = atoms.global_cells();
  for (int d = 0; d < 3; ++d)
    if (atoms.dims()[d] == 1) ghost_[d] = p.order;
  for (int r = 0; r < atoms.nranks(); ++r) {
    const Box block = atoms.box_of(r), brick = grid_decomp_.box_of(r);
    for (int d = 0; d < 3; ++d) {
      if (atoms.dims()[d] == 1) continue;
      const double h = box[d] / p.grid[d];
      const double xlo = block.lo[d] * (box[d] / nbins[d]) - drift, xhi = block.hi[d] * (box[d] / nbins[d]) + drift;
      const int kmin = static_cast<int>(std::floor(xlo / h)) - p.order + 1 - 1;
      const int kmax = static_cast<int>(std::floor(xhi / h)) + 1;
      ghost_[d] = std::max({ghost_[d], brick.lo[d] - kmin, kmax + 1 - brick.hi[d]});
    }
  }
  const Box mine = grid_decomp_.box_of(comm.rank());
  for (int d = 0; d < 3; ++d) {
    int thinnest = p.grid[d];
    for (int r = 0; r < atoms.nranks(); ++r) thinnest = std::min(thinnest, grid_decomp_.box_of(r).size(d));
    if (ghost_[d] > HaloExchange::kMaxGhost || (grid_decomp_.dims()[d] > 1 && ghost_[d] > thinnest))
      throw InputError(strprintf("the PME grid %dx%dx%d split over a %dx%dx%d process grid leaves %d point(s) along %c on "
                                 "some rank, fewer than the %d ghost layers its splines (order %d) and the atoms' drift "
                                 "(%g) need (at most %d): use fewer ranks along %c, a smaller neighbour skin or another grid",
                                 p.grid[0], p.grid[1], p.grid[2], grid_decomp_.dims()[0], grid_decomp_.dims()[1],
                                 grid_decomp_.dims()[2], thinnest, "xyz"[d], ghost_[d], p.order, drift,
                                 HaloExchange::kMaxGhost, "xyz"[d]));
  }
  // The fixed point: the largest charge's full deposit below 2^46, so that 2^17 of them fit a cell
  // in 63 bits, and each is resolved to 2^-46 of it.
  int e = 0;
  std::frexp(max_abs_charge > 0 ? max_abs_charge : 1.0, &e);
  scale_ = std::ldexp(1.0, 46 - e);

  fft_ = std::make_unique<FftPlan<R>>(grid_decomp_, comm, exec, FftKind::real_to_complex);
  halo_ = std::make_unique<HaloExchange>(grid_decomp_, comm, exec, ghost_, 1, sizeof(std::int64_t), "md.pme_halo");
  charge_ = Field<std::int64_t>("md.pme_charge", exec.backend(), mine, ghost_, 1);
  grid_ = Field<R>("md.pme_grid", exec.backend(), mine, ghost_, 1);
  spectrum_ = fft_->make_spectral_buffer();
  for (int d = 0; d < 3; ++d) bmod_[d] = Buffer<double>::copy_of(exec, pme_bspline_moduli(p.grid[d], p.order));
  influence_ = Buffer<R>(exec.backend(), fft_->spectral_buffer_size(), "md.pme_influence");
  stencil_.order = p.order;
  for (int d = 0; d < 3; ++d) {
    stencil_.n[d] = p.grid[d];
    stencil_.lo[d] = mine.lo[d] - ghost_[d];
    stencil_.hi[d] = mine.hi[d] + ghost_[d];
  }
  set_box(box);
}

template <class R>
void PmeT<R>::set_box(const std::array<double, 3>& box) {
  box_ = box;
  for (int d = 0; d < 3; ++d) stencil_.inv_h[d] = p_.grid[d] / box[d];
  PmeSpectralT<R>& sp = spectral_;
  sp.k = fft_->wavenumbers();
  for (int d = 0; d < 3; ++d) {
    sp.inv_l[d] = 1.0 / box[d];
    sp.bmod[d] = bmod_[d].data();
  }
  sp.pi2_over_alpha2 = kPi * kPi / (p_.alpha * p_.alpha);
  sp.prefactor = p_.coulomb / (kPi * box[0] * box[1] * box[2]);
  // G in the spectrum's layout: the same strides as the spectral view of a complex buffer.
  const auto s = fft_->spectral_view(spectrum_);
  sp.g = StridedView<R>{influence_.data(), s.lo0, s.lo1, s.lo2, s.s0, s.s1, s.s2};
  CUMULUS_KERNEL(exec_, pme_kernels, pme_influence<R>)(exec_, fft_->spectral_box(), sp);
}

template <class R>
std::string PmeT<R>::describe() const {
  return strprintf("PME: grid %dx%dx%d, splines of order %d, alpha %g, %d ghost layer(s) (%d x %d x %d ranks); %s",
                   p_.grid[0], p_.grid[1], p_.grid[2], p_.order, p_.alpha, std::max({ghost_[0], ghost_[1], ghost_[2]}),
                   grid_decomp_.dims()[0], grid_decomp_.dims()[1], grid_decomp_.dims()[2], fft_->describe().c_str());
}

std::string pme_outside_error(std::int64_t outside, std::int64_t step) {
  return strprintf("PME: %lld atom(s)%s lie farther outside their rank's block than the ghost layers allow (an atom moved "
                   "more than half the skin between migrations?)",
                   static_cast<long long>(outside), step >= 0 ? strprintf(" at step %lld", static_cast<long long>(step)).c_str() : "");
}

template <class R>
PmeResult PmeT<R>::compute(const PmeAtoms& a) {
  // One stream, in order, no waits: the device-to-host reads are the outside count here and the
  // sums below (both needed on the host). (The phases were once timed by the wall clock with a
  // device synchronisation after each, three waits a step on a GPU; the kernels' own timers give
  // the breakdown.)
  const View<std::int64_t> q = charge_.view();
  CUMULUS_KERNEL(exec_, pme_kernels, pme_zero)(exec_, q, charge_.allocated());
  // Atomic adds only where threads share the grid: on a GPU. Several host threads deposit into
  // copies of their own (pme_spread_private) while the copies stay small (64 MiB in all).
  const std::size_t cells = static_cast<std::size_t>(charge_.allocated().volume());
  const int threads = max_host_threads();
  // The host computes each atom's splines once for the spreading and the interpolation both.
  const bool private_grids =
      !exec_.is_cuda() && (threads == 1 || cells * sizeof(std::int64_t) * threads <= (std::size_t{64} << 20));
  const bool atomic = exec_.is_cuda() || threads > 1;
  std::int64_t outside = 0;
  const bool splines = private_grids && pme_kernels::host_pass::pme_host_splines();
  if (private_grids) {
    if (splines) pme_kernels::host_pass::pme_splines<R>(a, stencil_, splines_);
    ScopedTimer timer("md.pme_spread");
    outside = pme_kernels::host_pass::pme_spread_private<R>(a, stencil_, splines ? &splines_ : nullptr, q, cells, scale_,
                                                            spread_scratch_);
    if (a.outside_into) *a.outside_into = outside;  // host memory: the host backend's
  } else {
    outside = CUMULUS_KERNEL(exec_, pme_kernels, pme_spread<R>)(exec_, a, stencil_, q, scale_, atomic, a.outside_into);
  }
  if (!a.outside_into) {
    outside = comm_.sum(outside);
    if (outside > 0) throw Error(pme_outside_error(outside, -1));
  }
  halo_->accumulate(charge_);
  CUMULUS_KERNEL(exec_, pme_kernels, pme_to_real<R>)(exec_, q, grid_.view(), grid_.interior(), 1.0 / scale_);
  fft_->forward(grid_.view(), spectrum_);

  const auto s = fft_->spectral_view(spectrum_);
  const Box sbox = fft_->spectral_box();
  Result r;
  if (a.pe) {
    PmeSums sums = CUMULUS_KERNEL(exec_, pme_kernels, pme_sums<R>)(exec_, s, sbox, spectral_);
    double values[7];
    for (int c = 0; c < 7; ++c) {
      comm_.sum_in_place(sums.s[c].words(), ExactSum::kWords);
      if (!sums.s[c].value_rounded(kPmeSumExponent, &values[c]))
        throw Error("PME: the reciprocal-space energy overflowed its exact sum (a charge or the grid out of range?)");
    }
    r.energy = values[0];
    for (int c = 0; c < 6; ++c) r.virial[static_cast<std::size_t>(c)] = values[c + 1];
  }
  CUMULUS_KERNEL(exec_, pme_kernels, pme_convolve<R>)(exec_, s, sbox, spectral_);
  fft_->backward(spectrum_, grid_.view());
  halo_->exchange(grid_);  // the plan's 8-byte elements hold an R
  PmeAtoms at = a;
  at.virial_per_energy = r.energy != 0 ? (r.virial[0] + r.virial[1] + r.virial[2]) / r.energy : 0.0;
  if (splines)
    pme_kernels::host_pass::pme_forces_splines<R>(exec_, at, stencil_, splines_, grid_.view());
  else
    CUMULUS_KERNEL(exec_, pme_kernels, pme_forces<R>)(exec_, at, stencil_, grid_.view());
  return r;
}

template class PmeT<double>;
template class PmeT<float>;

}  // namespace cumulus::md
