// The distributed FFT (mesh/fft.hpp) against a serial FFTW transform of the whole grid, round trips,
// Parseval, a spectral derivative and a periodic Poisson solve to round-off, and bit-identical
// spectra at every rank count and process grid (compared with a plan on this rank alone). Run at
// 1-4 ranks by ctest, and at 6 ranks (Fft* only).
#include <gtest/gtest.h>

#include <fftw3.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <vector>

#include "../backends.hpp"
#include "core/comm.hpp"
#include "core/constants.hpp"
#include "mesh/fft.hpp"

using namespace cumulus;

namespace {

// A deterministic value in [-1, 1] for every cell (and part), the same on every rank.
double value_at(int i, int j, int k, int part) {
  std::uint32_t h = static_cast<std::uint32_t>(i) * 73856093u ^ static_cast<std::uint32_t>(j) * 19349663u ^
                    static_cast<std::uint32_t>(k) * 83492791u ^ static_cast<std::uint32_t>(part) * 2654435761u;
  h ^= h >> 13;
  h *= 0x5bd1e995u;
  h ^= h >> 15;
  return static_cast<double>(h % 2001u) / 1000.0 - 1.0;
}

template <class T>
T sample(int i, int j, int k, int part) {
  return static_cast<T>(value_at(i, j, k, part));
}
template <class T>
void set(T& x, int i, int j, int k) {
  x = sample<T>(i, j, k, 0);
}
template <class T>
void set(FftComplex<T>& x, int i, int j, int k) {
  x = FftComplex<T>{sample<T>(i, j, k, 0), sample<T>(i, j, k, 1)};
}

// A field on this rank's brick (one ghost layer, as a solver's field has) filled with value_at.
template <class E>
Field<E> make_input(const CartesianDecomposition& d, const Comm& comm, const Exec& ex) {
  const Box box = d.box_of(comm.rank());
  const Index3 ghost{1, 1, d.global_cells()[2] > 1 ? 1 : 0};
  Field<E> f("u", ex.backend(), box, ghost, 1);
  std::vector<E> h(static_cast<std::size_t>(box.volume()));
  std::size_t n = 0;
  for (int k = box.lo[2]; k < box.hi[2]; ++k)
    for (int j = box.lo[1]; j < box.hi[1]; ++j)
      for (int i = box.lo[0]; i < box.hi[0]; ++i) set(h[n++], i, j, k);
  f.interior_from_host(ex, h);
  return f;
}

using cd = std::complex<double>;

// The serial reference of the whole grid in double precision (FFTW, one 3D plan), spectral
// order (k, j, i), i fastest over [0, M0).
std::vector<cd> serial_forward(const Index3& n, bool r2c) {
  const std::size_t cells = static_cast<std::size_t>(n[0]) * n[1] * n[2];
  const int m0 = r2c ? n[0] / 2 + 1 : n[0];
  std::vector<cd> out(static_cast<std::size_t>(m0) * n[1] * n[2]);
  auto* o = reinterpret_cast<fftw_complex*>(out.data());
  if (r2c) {
    std::vector<double> in(cells);
    for (int k = 0; k < n[2]; ++k)
      for (int j = 0; j < n[1]; ++j)
        for (int i = 0; i < n[0]; ++i) in[(static_cast<std::size_t>(k) * n[1] + j) * n[0] + i] = value_at(i, j, k, 0);
    fftw_plan p = fftw_plan_dft_r2c_3d(n[2], n[1], n[0], in.data(), o, FFTW_ESTIMATE);
    fftw_execute(p);
    fftw_destroy_plan(p);
  } else {
    std::vector<cd> in(cells);
    for (int k = 0; k < n[2]; ++k)
      for (int j = 0; j < n[1]; ++j)
        for (int i = 0; i < n[0]; ++i)
          in[(static_cast<std::size_t>(k) * n[1] + j) * n[0] + i] = cd(value_at(i, j, k, 0), value_at(i, j, k, 1));
    fftw_plan p = fftw_plan_dft_3d(n[2], n[1], n[0], reinterpret_cast<fftw_complex*>(in.data()), o, FFTW_FORWARD,
                                   FFTW_ESTIMATE);
    fftw_execute(p);
    fftw_destroy_plan(p);
  }
  return out;
}

// The serial backward transform of a whole spectrum (c2r or c2c), cell order (k, j, i).
std::vector<cd> serial_backward(const Index3& n, bool r2c, std::vector<cd> spectrum) {
  const std::size_t cells = static_cast<std::size_t>(n[0]) * n[1] * n[2];
  std::vector<cd> out(cells);
  auto* s = reinterpret_cast<fftw_complex*>(spectrum.data());
  if (r2c) {
    std::vector<double> re(cells);
    fftw_plan p = fftw_plan_dft_c2r_3d(n[2], n[1], n[0], s, re.data(), FFTW_ESTIMATE);
    fftw_execute(p);  // destroys its copy of the spectrum
    fftw_destroy_plan(p);
    for (std::size_t c = 0; c < cells; ++c) out[c] = re[c];
  } else {
    fftw_plan p = fftw_plan_dft_3d(n[2], n[1], n[0], s, reinterpret_cast<fftw_complex*>(out.data()), FFTW_BACKWARD,
                                   FFTW_ESTIMATE);
    fftw_execute(p);
    fftw_destroy_plan(p);
  }
  return out;
}

template <class T>
cd to_cd(const T& x) {
  return cd(static_cast<double>(x), 0.0);
}
template <class T>
cd to_cd(const FftComplex<T>& x) {
  return cd(static_cast<double>(x.re), static_cast<double>(x.im));
}

struct Case {
  Index3 n;
  int ndim;
};
const Case kCases[] = {{{32, 32, 32}, 3}, {{30, 27, 25}, 3}, {{17, 19, 23}, 3}, {{64, 48, 1}, 2}};

CartesianDecomposition bricks_for(const Case& c, const Comm& comm, Index3 dims = {0, 0, 0}) {
  return CartesianDecomposition(c.n, {true, true, true}, comm.size(), c.ndim, 1, dims);
}

// Forward against the serial transform (compared on rank 0 after gather_spectrum), backward of our
// spectrum against the serial backward of the serial spectrum, and the round trip; errors relative
// to the largest magnitude. Returns {forward, backward, round trip} on every rank.
template <class T, class E>
std::array<double, 3> against_serial(const Case& c, const Comm& comm, const Exec& ex) {
  constexpr bool r2c = std::is_same_v<E, T>;
  const auto d = bricks_for(c, comm);
  FftPlan<T> plan(d, comm, ex, r2c ? FftKind::real_to_complex : FftKind::complex_to_complex);
  Field<E> u = make_input<E>(d, comm, ex);
  Field<E> back("back", ex.backend(), u.interior(), u.ghost(), 1);
  auto spec = plan.make_spectral_buffer();
  plan.forward(u.view(), spec);
  plan.backward(spec, back.view());

  const std::vector<cd> ref = serial_forward(c.n, r2c);
  double fwd_err = 0, scale = 0;
  const auto all = plan.gather_spectrum(spec);
  if (comm.is_root()) {
    for (std::size_t m = 0; m < ref.size(); ++m) {
      fwd_err = std::max(fwd_err, std::abs(to_cd(all[m]) - ref[m]));
      scale = std::max(scale, std::abs(ref[m]));
    }
    fwd_err /= scale;
  }
  const std::vector<cd> ref_back = serial_backward(c.n, r2c, ref);
  const double cells = static_cast<double>(c.n[0]) * c.n[1] * c.n[2];
  const std::vector<E> got = back.interior_to_host(ex);
  const Box box = u.interior();
  double back_err = 0, trip_err = 0;
  std::size_t n = 0;
  for (int k = box.lo[2]; k < box.hi[2]; ++k)
    for (int j = box.lo[1]; j < box.hi[1]; ++j)
      for (int i = box.lo[0]; i < box.hi[0]; ++i, ++n) {
        const cd g = to_cd(got[n]);
        back_err = std::max(back_err, std::abs(g - ref_back[(static_cast<std::size_t>(k) * c.n[1] + j) * c.n[0] + i]));
        E orig;
        set(orig, i, j, k);
        trip_err = std::max(trip_err, std::abs(g * plan.normalisation() - to_cd(orig)));
      }
  return {comm.max(fwd_err), comm.max(back_err / cells), comm.max(trip_err)};
}

template <class T, class E>
void check_against_serial(double tol_forward, double tol_trip) {
  const Comm comm = Comm::world();
  for (const Case& c : kCases) {
    const auto e = against_serial<T, E>(c, comm, Exec::host());
    const std::string what = std::to_string(c.n[0]) + "x" + std::to_string(c.n[1]) + "x" + std::to_string(c.n[2]);
    EXPECT_LT(e[0], tol_forward) << what << " forward";
    EXPECT_LT(e[1], tol_forward) << what << " backward";
    EXPECT_LT(e[2], tol_trip) << what << " round trip";
  }
}

}  // namespace

TEST(FftSerial, RealToComplexDouble) { check_against_serial<double, double>(1e-13, 1e-13); }
TEST(FftSerial, ComplexToComplexDouble) { check_against_serial<double, FftComplex<double>>(1e-13, 1e-13); }
TEST(FftSerial, RealToComplexFloat) { check_against_serial<float, float>(2e-6, 2e-6); }
TEST(FftSerial, ComplexToComplexFloat) { check_against_serial<float, FftComplex<float>>(2e-6, 2e-6); }

// sum |u|^2 = (1/N) sum |u_hat|^2, the half-spectrum's interior kx counted twice (their conjugates
// are not stored).
TEST(FftIdentities, Parseval) {
  const Comm comm = Comm::world();
  const Exec ex = Exec::host();
  for (const Case& c : kCases) {
    const auto d = bricks_for(c, comm);
    FftPlan<double> plan(d, comm, ex, FftKind::real_to_complex);
    Field<double> u = make_input<double>(d, comm, ex);
    auto spec = plan.make_spectral_buffer();
    plan.forward(u.view(), spec);
    const View<double> uv = u.view();
    const double space = comm.sum(reduce(ex, "test.parseval", u.interior(), 0.0, SumOp{},
                                         [=](int i, int j, int k) { return uv(i, j, k) * uv(i, j, k); }));
    const auto s = plan.spectral_view(spec);
    const FftWavenumbers w = plan.wavenumbers();
    const double spectral = comm.sum(reduce(ex, "test.parseval", plan.spectral_box(), 0.0, SumOp{}, [=](int i, int j, int k) {
      const double weight = (i == 0 || w.nyquist(0, i)) ? 1.0 : 2.0;
      return weight * (s(i, j, k).re * s(i, j, k).re + s(i, j, k).im * s(i, j, k).im);
    }));
    EXPECT_NEAR(spectral * plan.normalisation() / space, 1.0, 1e-13) << c.n[0] << "x" << c.n[1] << "x" << c.n[2];
  }
}

namespace {
// A trigonometric polynomial on [0, 2 pi)^3 and its derivatives: resolved exactly by every test
// grid (wavenumbers up to 4 < N / 2), so spectral differentiation is exact up to round-off.
double trig(double x, double y, double z) {
  return std::sin(2 * x) * std::cos(3 * y) + std::cos(z - x) + 0.5 * std::sin(x + 2 * y - 4 * z) + 0.25;
}
double trig_dx(double x, double y, double z) {
  return 2 * std::cos(2 * x) * std::cos(3 * y) + std::sin(z - x) + 0.5 * std::cos(x + 2 * y - 4 * z);
}
double trig_laplacian(double x, double y, double z) {
  return -13 * std::sin(2 * x) * std::cos(3 * y) - 2 * std::cos(z - x) - 0.5 * 21 * std::sin(x + 2 * y - 4 * z);
}

struct Spacing {
  double hx, hy, hz;
};

template <class F>
Field<double> sampled(const CartesianDecomposition& d, const Comm& comm, const Spacing& h, F f) {
  const Box box = d.box_of(comm.rank());
  Field<double> u("u", Backend::host, box, {0, 0, 0}, 1);
  const View<double> v = u.view();
  for (int k = box.lo[2]; k < box.hi[2]; ++k)
    for (int j = box.lo[1]; j < box.hi[1]; ++j)
      for (int i = box.lo[0]; i < box.hi[0]; ++i) v(i, j, k) = f(i * h.hx, j * h.hy, k * h.hz);
  return u;
}

double max_error(const Field<double>& u, double scale, const Spacing& h, double (*f)(double, double, double),
                 const Comm& comm) {
  const View<double> v = u.view();
  const Box b = u.interior();
  double e = 0;
  for (int k = b.lo[2]; k < b.hi[2]; ++k)
    for (int j = b.lo[1]; j < b.hi[1]; ++j)
      for (int i = b.lo[0]; i < b.hi[0]; ++i) e = std::max(e, std::abs(v(i, j, k) * scale - f(i * h.hx, j * h.hy, k * h.hz)));
  return comm.max(e);
}
}  // namespace

// d/dx of the trigonometric polynomial: multiply by i kx (the Nyquist mode zeroed), back, scale.
TEST(FftIdentities, SpectralDerivative) {
  const Comm comm = Comm::world();
  const Exec ex = Exec::host();
  for (const Index3 n : {Index3{32, 32, 32}, Index3{30, 27, 25}}) {
    const CartesianDecomposition d(n, {true, true, true}, comm.size(), 3);
    const Spacing h{2 * kPi / n[0], 2 * kPi / n[1], 2 * kPi / n[2]};
    FftPlan<double> plan(d, comm, ex, FftKind::real_to_complex);
    Field<double> u = sampled(d, comm, h, trig);
    auto spec = plan.make_spectral_buffer();
    plan.forward(u.view(), spec);
    const auto s = plan.spectral_view(spec);
    const FftWavenumbers w = plan.wavenumbers();
    for_each(ex, "test.ddx", plan.spectral_box(), [=](int i, int j, int k) {
      const double kx = w.nyquist(0, i) ? 0.0 : w.kx(i);  // domain length 2 pi: wavenumber = index
      const FftComplex<double> a = s(i, j, k);
      s(i, j, k) = FftComplex<double>{-kx * a.im, kx * a.re};
    });
    plan.backward(spec, u.view());
    EXPECT_LT(max_error(u, plan.normalisation(), h, trig_dx, comm), 1e-12) << n[0] << "x" << n[1] << "x" << n[2];
  }
}

// A periodic Poisson problem with a manufactured solution: lap(phi) = f with f = trig_laplacian,
// solved through the plan (phi_hat = -f_hat / |k|^2, the mean fixed to the known 0.25), against phi =
// trig.
TEST(FftIdentities, PeriodicPoisson) {
  const Comm comm = Comm::world();
  const Exec ex = Exec::host();
  const Index3 n{30, 27, 25};
  const CartesianDecomposition d(n, {true, true, true}, comm.size(), 3);
  const Spacing h{2 * kPi / n[0], 2 * kPi / n[1], 2 * kPi / n[2]};
  FftPlan<double> plan(d, comm, ex, FftKind::real_to_complex);
  Field<double> f = sampled(d, comm, h, trig_laplacian);
  auto spec = plan.make_spectral_buffer();
  plan.forward(f.view(), spec);
  const auto s = plan.spectral_view(spec);
  const FftWavenumbers w = plan.wavenumbers();
  const double mean = 0.25 / plan.normalisation();  // the zero mode of phi, times N
  for_each(ex, "test.poisson", plan.spectral_box(), [=](int i, int j, int k) {
    const double kx = w.kx(i), ky = w.ky(j), kz = w.kz(k);
    const double k2 = kx * kx + ky * ky + kz * kz;
    s(i, j, k) = k2 == 0 ? FftComplex<double>{mean, 0.0} : FftComplex<double>{-s(i, j, k).re / k2, -s(i, j, k).im / k2};
  });
  plan.backward(spec, f.view());
  EXPECT_LT(max_error(f, plan.normalisation(), h, trig, comm), 1e-13);
}

namespace {
// This rank's spectrum and round trip, and the same cells from a plan on this rank alone: equal
// bit for bit. Returns the number of differing values (summed over ranks).
template <class T, class E>
std::int64_t bitwise_case(const Case& c, const Comm& comm, FftProcessGrid grid, Index3 brick_dims, bool staged) {
  constexpr bool r2c = std::is_same_v<E, T>;
  const FftKind kind = r2c ? FftKind::real_to_complex : FftKind::complex_to_complex;
  const Exec ex = Exec::host();
  const Comm self = Comm::self();
  const auto d1 = bricks_for(c, self);
  FftPlan<T> one(d1, self, ex, kind);
  Field<E> u1 = make_input<E>(d1, self, ex);
  auto s1 = one.make_spectral_buffer();
  one.forward(u1.view(), s1);
  const auto v1 = one.spectral_view(s1);
  Field<E> b1("b1", Backend::host, u1.interior(), u1.ghost(), 1);
  one.backward(s1, b1.view());

  const auto d = bricks_for(c, comm, brick_dims);
  FftPlan<T> plan(d, comm, ex, kind, grid, staged);
  Field<E> u = make_input<E>(d, comm, ex);
  auto s = plan.make_spectral_buffer();
  plan.forward(u.view(), s);
  const auto v = plan.spectral_view(s);
  std::int64_t bad = 0;
  const Box sb = plan.spectral_box();
  for (int k = sb.lo[2]; k < sb.hi[2]; ++k)
    for (int j = sb.lo[1]; j < sb.hi[1]; ++j)
      for (int i = sb.lo[0]; i < sb.hi[0]; ++i)
        if (std::memcmp(&v(i, j, k), &v1(i, j, k), sizeof(FftComplex<T>)) != 0) ++bad;
  Field<E> b("b", Backend::host, u.interior(), u.ghost(), 1);
  plan.backward(s, b.view());
  const View<E> bv = b.view(), bv1 = b1.view();
  const Box box = u.interior();
  for (int k = box.lo[2]; k < box.hi[2]; ++k)
    for (int j = box.lo[1]; j < box.hi[1]; ++j)
      for (int i = box.lo[0]; i < box.hi[0]; ++i)
        if (std::memcmp(&bv(i, j, k), &bv1(i, j, k), sizeof(E)) != 0) ++bad;
  return comm.sum(bad);
}

template <class T, class E>
void check_bitwise() {
  const Comm comm = Comm::world();
  constexpr bool r2c = std::is_same_v<E, T>;
  const FftKind kind = r2c ? FftKind::real_to_complex : FftKind::complex_to_complex;
  for (const Case& c : {kCases[1], kCases[2], kCases[3]}) {
    const std::string what = std::to_string(c.n[0]) + "x" + std::to_string(c.n[1]) + "x" + std::to_string(c.n[2]);
    for (const FftProcessGrid g : FftPlan<T>::feasible_grids(c.n, kind, comm.size())) {
      EXPECT_EQ((bitwise_case<T, E>(c, comm, g, {0, 0, 0}, false)), 0)
          << what << " on a " << g.p1 << " x " << g.p2 << " process grid";
    }
    // z-slab bricks on a slab grid: the bricks are the x-pencils, which the x-lines read in place.
    for (const FftProcessGrid g : FftPlan<T>::feasible_grids(c.n, kind, comm.size())) {
      if (c.ndim == 3 && g.p1 == 1 && c.n[2] >= comm.size()) {
        EXPECT_EQ((bitwise_case<T, E>(c, comm, g, {1, 1, comm.size()}, false)), 0) << what << " z-slab bricks";
        // The slab path's transpose as MPI messages (between nodes) rather than in shared memory.
        EXPECT_EQ((bitwise_case<T, E>(c, comm, g, {1, 1, comm.size()}, true)), 0) << what << " z-slab bricks, messages";
      }
    }
    // Bricks split over y and z unlike the pencils, so that on some ranks (6 ranks: rank 0 of an
    // 8x4x4 grid split 1 x 3 x 2 under a 2 x 3 process grid) the brick is the pencil and on others
    // it is not: every rank must still take the same path. (A rank that skipped the first
    // transpose's MPI_Alltoallv would break MPI's rule that all ranks call a collective; Open MPI
    // happens to finish it when the skipping rank's counts are all zero, so this case checks the
    // bits, and the plan decides the path collectively.)
    if (&c == &kCases[1] && comm.size() == 6) {
      const Case mixed{{8, 4, 4}, 3};
      EXPECT_EQ((bitwise_case<T, E>(mixed, comm, {}, {1, 3, 2}, false)), 0) << "8x4x4, bricks 1 x 3 x 2";
    }
    // Bricks split along x alone (all ranks exchange with all in the first transpose), and the staged path.
    if (comm.size() > 1 && c.n[0] >= comm.size()) {
      EXPECT_EQ((bitwise_case<T, E>(c, comm, {}, {comm.size(), 1, 1}, true)), 0) << what << " x-split bricks, staged";
    }
  }
}
}  // namespace

TEST(FftBitwise, RealToComplexDouble) { check_bitwise<double, double>(); }
TEST(FftBitwise, RealToComplexFloat) { check_bitwise<float, float>(); }
TEST(FftBitwise, ComplexToComplexFloat) { check_bitwise<float, FftComplex<float>>(); }
TEST(FftBitwise, ComplexToComplexDouble) { check_bitwise<double, FftComplex<double>>(); }

TEST(FftPlanChoice, SlabWhenPossibleElsePencils) {
  // 32^3 on 4 ranks: a slab; 17x19x23 (9 kx) on 64 ranks: no slab (23 z-planes), pencils.
  EXPECT_EQ((FftPlan<double>::choose_grid({32, 32, 32}, FftKind::real_to_complex, 4)), (FftProcessGrid{1, 4}));
  const FftProcessGrid g = FftPlan<double>::choose_grid({17, 19, 23}, FftKind::real_to_complex, 64);
  EXPECT_GT(g.p1, 1);
  EXPECT_GT(g.p2, 1);
  EXPECT_EQ((FftPlan<double>::choose_grid({64, 48, 1}, FftKind::real_to_complex, 6)), (FftProcessGrid{6, 1}));
}

// The host slab path (fft_slab.cpp) is taken exactly where it applies: whole x- and y-lines on
// every rank (P1 = 1) and bricks that are the x-pencils (z-slabs); never on pencils, with other
// bricks, or in 2D. FftBitwise checks that it gives the general path's bits.
TEST(FftPlanChoice, SlabPathWhereItApplies) {
  const Comm comm = Comm::world();
  const Exec ex = Exec::host();
  const Index3 n{16, 12, 24};
  const CartesianDecomposition zslabs(n, {true, true, true}, comm.size(), 3, 1, {1, 1, comm.size()});
  EXPECT_TRUE((FftPlan<double>(zslabs, comm, ex, FftKind::real_to_complex).plane_at_a_time()));
  EXPECT_TRUE((FftPlan<float>(zslabs, comm, ex, FftKind::complex_to_complex).plane_at_a_time()));
  // Its transpose in shared memory where every rank is on this node (as here), as MPI messages
  // when forced (force_staging) and on one rank (no transpose between ranks at all).
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(comm.raw(), MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int on_node = 0;
  MPI_Comm_size(node, &on_node);
  MPI_Comm_free(&node);
  const bool one_node = comm.min(on_node == comm.size() ? 1.0 : 0.0) == 1.0;
  EXPECT_EQ((FftPlan<double>(zslabs, comm, ex, FftKind::real_to_complex).shared_memory_transpose()),
            comm.size() > 1 && one_node);
  EXPECT_FALSE((FftPlan<double>(zslabs, comm, ex, FftKind::real_to_complex, {}, true).shared_memory_transpose()));
  if (comm.size() > 1) {
    const CartesianDecomposition xslabs(n, {true, true, true}, comm.size(), 3, 1, {comm.size(), 1, 1});
    EXPECT_FALSE((FftPlan<double>(xslabs, comm, ex, FftKind::real_to_complex).plane_at_a_time()));
    EXPECT_FALSE((FftPlan<double>(zslabs, comm, ex, FftKind::real_to_complex, {comm.size(), 1}).plane_at_a_time()));
    // y-slab bricks on a P1 = ranks grid are that grid's x-pencils, but the y-lines are split.
    const CartesianDecomposition yslabs(n, {true, true, true}, comm.size(), 3, 1, {1, comm.size(), 1});
    EXPECT_FALSE((FftPlan<double>(yslabs, comm, ex, FftKind::real_to_complex, {comm.size(), 1}).plane_at_a_time()));
  }
  const CartesianDecomposition flat({16, 12, 1}, {true, true, true}, comm.size(), 2);
  EXPECT_FALSE((FftPlan<double>(flat, comm, ex, FftKind::real_to_complex).plane_at_a_time()));
}

TEST(FftPlanChoice, BadSetupsNameTheSizes) {
  auto message = [](auto f) {
    try {
      f();
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no InputError");
  };
  EXPECT_NE(message([] { FftPlan<double>::feasible_grids({0, 32, 32}, FftKind::real_to_complex, 1); }).find("0x32x32"),
            std::string::npos);
  // 4 x-wavenumbers (6 / 2 + 1) and 2 y, 2 z cells cannot feed 64 ranks.
  EXPECT_NE(message([] { FftPlan<double>::feasible_grids({6, 2, 2}, FftKind::real_to_complex, 64); }).find("6x2x2"),
            std::string::npos);
  const Comm comm = Comm::world();
  const Exec ex = Exec::host();
  const CartesianDecomposition d({8, 8, 8}, {true, true, true}, comm.size(), 3);
  EXPECT_NE(message([&] { FftPlan<double> p(d, comm, ex, FftKind::real_to_complex, {comm.size() + 1, 1}); })
                .find("8x8x8"),
            std::string::npos);
  const CartesianDecomposition huge({1 << 20, 1 << 20, 1 << 20}, {true, true, true}, comm.size(), 3);
  EXPECT_NE(message([&] { FftPlan<double> p(huge, comm, ex, FftKind::real_to_complex); }).find("1048576x1048576x1048576"),
            std::string::npos);
}

// CUDA against the host oracle, double precision, within 1e-12 relative (cuFFT and FFTW use
// different algorithms: not the same bits). Skipped visibly without a device.
TEST(FftBackends, CudaMatchesHost) {
  if (!cuda_built()) GTEST_SKIP() << "built without CUDA";
  CUMULUS_EXEC_OR_SKIP(dev, Backend::cuda);
  // A GPU without cuFFT is a broken installation, not a machine to skip on: fail and say why.
  std::string why;
  ASSERT_TRUE(FftPlan<double>::cuda_fft_available(&why)) << "a CUDA device but no cuFFT: " << why;
  const Comm comm = Comm::world();
  for (const Case& c : kCases) {
    const auto d = bricks_for(c, comm);
    FftPlan<double> host(d, comm, Exec::host(), FftKind::real_to_complex);
    FftPlan<double> cuda(d, comm, dev, FftKind::real_to_complex);
    Field<double> uh = make_input<double>(d, comm, Exec::host());
    Field<double> ud = make_input<double>(d, comm, dev);
    auto sh = host.make_spectral_buffer();
    auto sd = cuda.make_spectral_buffer();
    host.forward(uh.view(), sh);
    cuda.forward(ud.view(), sd);
    const auto a = host.gather_spectrum(sh);
    const auto b = cuda.gather_spectrum(sd);
    double err = 0, scale = 0;
    for (std::size_t m = 0; m < a.size(); ++m) {
      err = std::max(err, std::abs(to_cd(a[m]) - to_cd(b[m])));
      scale = std::max(scale, std::abs(to_cd(a[m])));
    }
    host.backward(sh, uh.view());
    cuda.backward(sd, ud.view());
    const auto rh = uh.interior_to_host(Exec::host());
    const auto rd = ud.interior_to_host(dev);
    double err_b = 0, scale_b = 0;
    for (std::size_t m = 0; m < rh.size(); ++m) {
      err_b = std::max(err_b, std::abs(rh[m] - rd[m]));
      scale_b = std::max(scale_b, std::abs(rh[m]));
    }
    EXPECT_LT(comm.max(comm.is_root() ? err / scale : 0.0), 1e-12) << c.n[0] << "x" << c.n[1] << "x" << c.n[2];
    EXPECT_LT(comm.max(err_b / scale_b), 1e-12);
  }
  release_backend(dev);
}
