// Kernel bodies of smooth PME (one source per backend pass: core/kernel_pass.hpp). Every atom's
// deposit is an integer, so the charge grid is the same bits whatever the order of the atomic
// additions, the thread count or the rank count; the spectral sums are exact (core/exact_sum.hpp);
// each atom's force reads the same grid values in the same order at any rank count.
#include "solvers/md/pme_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <type_traits>
#include <vector>
#if !defined(__CUDACC__)
#include <omp.h>
#endif
#if defined(__x86_64__) && !defined(__CUDACC__)
#include <immintrin.h>
#endif

#include "core/atomic.hpp"
#if !defined(__CUDACC__)
#include "core/timers.hpp"
#endif
#include "solvers/md/fixed_point.hpp"

namespace cumulus::md {
namespace pme_kernels::CUMULUS_PASS {

namespace {
// An atom's first stencil point along one axis (shifted by a multiple of n into [lo, hi - order]),
// its place w in [0, 1) between grid points (in R: the stencil's place is found in fp64 either
// way, so both precisions put an atom on the same points), and whether the stencil lies inside.
// `order` is st.order, passed apart so that the host's loops can make it a constant.
template <class R>
CUMULUS_HD inline R stencil_place(double x, int axis, const PmeStencil& st, int order, int* first, bool* inside) {
  const double u = x * st.inv_h[axis];
  const double fl = ::floor(u);
  int k0 = static_cast<int>(fl) - order + 1;
  const int n = st.n[axis];
  if (k0 < st.lo[axis]) k0 += n;
  if (k0 + order > st.hi[axis]) k0 -= n;
  *first = k0;
  *inside = k0 >= st.lo[axis] && k0 + order <= st.hi[axis];
  return static_cast<R>(u - fl);
}

// stencil_place and the spline weights there; false when no shift puts the stencil inside.
template <class R>
CUMULUS_HD inline bool stencil_axis(double x, int axis, const PmeStencil& st, int order, int* first, R* w) {
  bool inside;
  const R f = stencil_place<R>(x, axis, st, order, first, &inside);
  R m[kPmeMaxOrder];
  pme_bspline<R>(f, order, m, nullptr);
  // theta_j = M_p(w + p - 1 - j): the spline's values in reverse
  for (int j = 0; j < order; ++j) w[j] = m[order - 1 - j];
  return inside;
}

template <class R>
CUMULUS_HD inline bool stencil_axis_d(double x, int axis, const PmeStencil& st, int order, int* first, R* w, R* dw) {
  bool inside;
  const R f = stencil_place<R>(x, axis, st, order, first, &inside);
  R m[kPmeMaxOrder], dm[kPmeMaxOrder];
  pme_bspline<R>(f, order, m, dm);
  for (int j = 0; j < order; ++j) {
    w[j] = m[order - 1 - j];
    dw[j] = dm[order - 1 - j];
  }
  return inside;
}

// Atom i's stencil along the three axes (first points and weights); false when it is outside this
// rank's grid.
template <class R>
CUMULUS_HD inline bool atom_stencil(const PmeAtoms& a, const PmeStencil& st, int order, int i, int k0[3],
                                    R w[3][kPmeMaxOrder]) {
  const double pos[3] = {a.x[i], a.y[i], a.z[i]};
  bool inside = true;
  for (int d = 0; d < 3; ++d) inside = stencil_axis<R>(pos[d], d, st, order, &k0[d], w[d]) && inside;
  return inside;
}

// One atom's deposits from its stencil's first points k0 and weights w[d * stride + j]; P: the
// spline order as a constant (the host's loops, P = 4, 5, 6: unrolled, about twice as fast), or 0:
// st.order (CUDA). Each deposit is the same integer either way.
template <int P, class R>
CUMULUS_HD inline void deposit(const PmeStencil& st, const View<std::int64_t>& grid, const int k0[3], const R* w, int stride,
                               R qs, bool atomic) {
  const int order = P > 0 ? P : st.order;
  for (int c = 0; c < order; ++c) {
    const R qz = qs * w[2 * stride + c];
    for (int b = 0; b < order; ++b) {
      const R qyz = qz * w[stride + b];
      std::int64_t* row = &grid(k0[0], k0[1] + b, k0[2] + c);
      for (int t = 0; t < order; ++t) {
        const auto v = static_cast<std::int64_t>(::llrint(static_cast<double>(qyz * w[t])));
        if (atomic)
          atomic_add(row + t, v);
        else
          row[t] += v;
      }
    }
  }
}

// One atom's deposits (1 when its stencil is outside this rank's grid); P as deposit's.
template <int P, class R>
CUMULUS_HD inline std::int64_t spread_atom(const PmeAtoms& a, const PmeStencil& st, const View<std::int64_t>& grid,
                                           double scale, bool atomic, int i) {
  const int order = P > 0 ? P : st.order;
  int k0[3];
  R w[3][kPmeMaxOrder];
  if (!atom_stencil<R>(a, st, order, i, k0, w)) return 1;
  deposit<P, R>(st, grid, k0, w[0], kPmeMaxOrder, static_cast<R>(a.q[i] * scale), atomic);
  return 0;
}

#if defined(__x86_64__) && !defined(__CUDACC__)
// deposit on the host with AVX2, without atomics (one thread, or a thread's own copy of the
// grid): each stencil row's first 4 deposits in one vector. The products in R as deposit's,
// widened to fp64; the rounding to an integer by adding and subtracting 1.5 2^52 (fixed::kMagic,
// as for the mixed pair sums: for |v| < 2^51 the sum's last bit is the unit, so the addition
// rounds v to nearest, ties to even, as llrint does in the default rounding mode: the same
// integers); rows past 4 points as deposit. A deposit is below 2^46 in size (pme.cpp's
// scale: weights at most 1), so the fast path takes every atom but one with a NaN or infinite
// charge, which goes to deposit. Measured: deposit's conversion is one scalar cvtsd2si
// per point (125 an atom at order 5).
template <int P, class R>
__attribute__((target("avx2"))) void deposit_avx2(const PmeStencil& st, const View<std::int64_t>& grid, const int k0[3],
                                                   const R* w, int stride, R qs) {
  static_assert(P >= 4 && P <= 8, "the vector takes a row's first 4 points");
  if (!(std::fabs(static_cast<double>(qs)) < 0x1p51)) return deposit<P, R>(st, grid, k0, w, stride, qs, false);
  const __m256d magic = _mm256_set1_pd(fixed::kMagic);
  const __m256i magic_bits = _mm256_set1_epi64x(static_cast<long long>(fixed::kMagicBits));
  for (int c = 0; c < P; ++c) {
    const R qz = qs * w[2 * stride + c];
    for (int b = 0; b < P; ++b) {
      const R qyz = qz * w[stride + b];
      std::int64_t* row = &grid(k0[0], k0[1] + b, k0[2] + c);
      __m256d v;
      if constexpr (sizeof(R) == sizeof(double)) {
        v = _mm256_mul_pd(_mm256_set1_pd(static_cast<double>(qyz)), _mm256_loadu_pd(reinterpret_cast<const double*>(w)));
      } else {
        v = _mm256_cvtps_pd(_mm_mul_ps(_mm_set1_ps(static_cast<float>(qyz)), _mm_loadu_ps(reinterpret_cast<const float*>(w))));
      }
      const __m256i n = _mm256_sub_epi64(_mm256_castpd_si256(_mm256_add_pd(v, magic)), magic_bits);
      __m256i* const r4 = reinterpret_cast<__m256i*>(row);
      _mm256_storeu_si256(r4, _mm256_add_epi64(_mm256_loadu_si256(r4), n));
      for (int t = 4; t < P; ++t) row[t] += static_cast<std::int64_t>(::llrint(static_cast<double>(qyz * w[t])));
    }
  }
}
// Whether the host's spreading takes the AVX2 loop: where the CPU has it, unless CUMULUS_NO_AVX512
// is set in the environment (as for the pair loops: the tests compare the two). Read once per call.
inline bool pme_simd() {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2 && !std::getenv("CUMULUS_NO_AVX512");
}
#elif !defined(__CUDACC__)
inline bool pme_simd() { return false; }
#endif

#if !defined(__CUDACC__)
// The host's splines of a block of up to L atoms, lane by lane: pme_bspline's operations in its
// order on L lanes at once (loops the compiler vectorises), so the same weights as the scalar
// function's. Their stencils' first points and inside flags go to k0 (4 ints an atom), their
// weights and derivatives to w (6 P an atom: w[3][P], then dw[3][P]).
template <int P, class R>
__attribute__((always_inline)) inline void splines_block(const PmeAtoms& a, const PmeStencil& st, int i0, int m, int* k0,
                                                         R* w) {
  constexpr int L = 16;
  R f[3][L];
  int first[3][L], inside[3][L];
  const double* const pos[3] = {a.x, a.y, a.z};
  // stencil_place on L lanes (a block's last lanes repeat its last atom: no branch in the loop)
  for (int d = 0; d < 3; ++d) {
    const double inv_h = st.inv_h[d];
    const int n = st.n[d], lo = st.lo[d], hi = st.hi[d];
    const double* const x = pos[d] + i0;
    for (int l = 0; l < L; ++l) {
      const double u = x[l < m ? l : m - 1] * inv_h;
      const double fl = ::floor(u);
      int kf = static_cast<int>(fl) - P + 1;
      kf += kf < lo ? n : 0;
      kf -= kf + P > hi ? n : 0;
      first[d][l] = kf;
      inside[d][l] = kf >= lo && kf + P <= hi;
      f[d][l] = static_cast<R>(u - fl);
    }
  }
  for (int l = 0; l < m; ++l) {
    for (int d = 0; d < 3; ++d) k0[4 * l + d] = first[d][l];
    k0[4 * l + 3] = inside[0][l] & inside[1][l] & inside[2][l];
  }
  for (int d = 0; d < 3; ++d) {
    R s[P][L], ds[P][L];
    for (int l = 0; l < L; ++l) s[0][l] = R(1);  // M_1(w) = 1 on [0, 1)
    for (int n = 2; n <= P; ++n) {
      if (n == P) {
        for (int l = 0; l < L; ++l) ds[0][l] = s[0][l];
        for (int k = 1; k < n - 1; ++k)
          for (int l = 0; l < L; ++l) ds[k][l] = s[k][l] - s[k - 1][l];
        for (int l = 0; l < L; ++l) ds[n - 1][l] = -s[n - 2][l];
      }
      const R inv = R(1) / R(n - 1);
      for (int l = 0; l < L; ++l) s[n - 1][l] = (R(1) - f[d][l]) * s[n - 2][l] * inv;
      for (int k = n - 2; k >= 1; --k)
        for (int l = 0; l < L; ++l) s[k][l] = ((f[d][l] + R(k)) * s[k][l] + (R(n) - f[d][l] - R(k)) * s[k - 1][l]) * inv;
      for (int l = 0; l < L; ++l) s[0][l] = f[d][l] * s[0][l] * inv;
    }
    for (int l = 0; l < m; ++l)
      for (int j = 0; j < P; ++j) {
        w[6 * P * static_cast<std::ptrdiff_t>(l) + d * P + j] = s[P - 1 - j][l];
        w[6 * P * static_cast<std::ptrdiff_t>(l) + 3 * P + d * P + j] = ds[P - 1 - j][l];
      }
  }
}
#endif

// One atom's force (and, with a.pe, energy and virial shares) from the potential grid, given its
// stencil's first points k0, weights w[d * stride + j] and their derivatives dw (the same layout);
// P as deposit's. In R the stencil's sums and the force's product; the force is added to a.fx ...
// in fp64.
template <int P, class R>
CUMULUS_HD inline void interpolate(const PmeAtoms& a, const PmeStencil& st, const View<R>& phi, int i, const int k0[3],
                                   const R* w, const R* dw, int stride) {
  const int order = P > 0 ? P : st.order;
  const R* const w0 = w;
  const R* const w1 = w + stride;
  const R* const w2 = w + 2 * stride;
  const R* const d0 = dw;
  const R* const d1 = dw + stride;
  const R* const d2 = dw + 2 * stride;
  // dE/du_a = q sum over the stencil of (d theta_a) theta_b theta_c phi; F = -dE/dx = -dE/du N / L.
  R gx = 0, gy = 0, gz = 0;
  for (int c = 0; c < order; ++c)
    for (int b = 0; b < order; ++b) {
      R sx = 0, sy = 0;
      for (int t = 0; t < order; ++t) {
        const R p = phi(k0[0] + t, k0[1] + b, k0[2] + c);
        sx += d0[t] * p;
        sy += w0[t] * p;
      }
      gx += sx * w1[b] * w2[c];
      gy += sy * d1[b] * w2[c];
      gz += sy * w1[b] * d2[c];
    }
  const R q = static_cast<R>(a.q[i]);
  a.fx[i] -= static_cast<double>(q * gx * static_cast<R>(st.inv_h[0]));
  a.fy[i] -= static_cast<double>(q * gy * static_cast<R>(st.inv_h[1]));
  a.fz[i] -= static_cast<double>(q * gz * static_cast<R>(st.inv_h[2]));
  if (a.pe) {
    R phi_i = 0;  // the potential at the atom: the stencil's weights times the grid
    for (int c = 0; c < order; ++c)
      for (int b = 0; b < order; ++b) {
        R sy = 0;
        for (int t = 0; t < order; ++t) sy += w0[t] * phi(k0[0] + t, k0[1] + b, k0[2] + c);
        phi_i += sy * w1[b] * w2[c];
      }
    const double e = 0.5 * static_cast<double>(q) * static_cast<double>(phi_i);
    a.pe[i] += e + a.self_coef * q * q + a.extra;
    a.virial[i] += e * a.virial_per_energy + a.extra_virial;
  }
}

// interpolate with the atom's stencil computed here.
template <int P, class R>
CUMULUS_HD inline void force_atom(const PmeAtoms& a, const PmeStencil& st, const View<R>& phi, int i) {
  const int order = P > 0 ? P : st.order;
  int k0[3];
  R w[3][kPmeMaxOrder], dw[3][kPmeMaxOrder];
  const double pos[3] = {a.x[i], a.y[i], a.z[i]};
  bool inside = true;
  for (int d = 0; d < 3; ++d) inside = stencil_axis_d<R>(pos[d], d, st, order, &k0[d], w[d], dw[d]) && inside;
  // An atom beyond the grid's reach gets no k-space force: its stencil would read outside the grid.
  // The spreading counted it, and the step's check stops the run (pme.cpp; md/step_checks.hpp
  // reads that count a step later, so this step's interpolation still runs).
  if (!inside) return;
  interpolate<P, R>(a, st, phi, i, k0, w[0], dw[0], kPmeMaxOrder);
}

#if !defined(__CUDACC__)
// The host's spreading of one atom without atomics: deposit_avx2 where `simd` (pme_simd()).
template <int P, class R>
inline void deposit_host(const PmeStencil& st, const View<std::int64_t>& grid, const int k0[3], const R* w, int stride, R qs,
                         bool simd) {
#if defined(__x86_64__)
  if (simd) return deposit_avx2<P, R>(st, grid, k0, w, stride, qs);
#endif
  (void)simd;
  deposit<P, R>(st, grid, k0, w, stride, qs, false);
}
template <int P, class R>
inline std::int64_t spread_atom_host(const PmeAtoms& a, const PmeStencil& st, const View<std::int64_t>& grid, double scale,
                                     int i, bool simd) {
  int k0[3];
  R w[3][kPmeMaxOrder];
  if (!atom_stencil<R>(a, st, P, i, k0, w)) return 1;
  deposit_host<P, R>(st, grid, k0, w[0], kPmeMaxOrder, static_cast<R>(a.q[i] * scale), simd);
  return 0;
}
#endif
}  // namespace

template <class R>
std::int64_t pme_spread(const Exec& ex, const PmeAtoms& a, const PmeStencil& st, const View<std::int64_t>& grid,
                        double scale, bool atomic, std::int64_t* into) {
  const Box atoms(0, 0, 0, a.n, 1, 1);
#if !defined(__CUDACC__)
  const bool simd = pme_simd();
  switch (st.order) {
    case 4:
      return reduce_into(ex, "md.pme_spread", atoms, std::int64_t{0}, SumOp{},
                    [=](int i, int, int) {
                      return atomic ? spread_atom<4, R>(a, st, grid, scale, true, i) : spread_atom_host<4, R>(a, st, grid, scale, i, simd);
                    }, into);
    case 5:
      return reduce_into(ex, "md.pme_spread", atoms, std::int64_t{0}, SumOp{},
                    [=](int i, int, int) {
                      return atomic ? spread_atom<5, R>(a, st, grid, scale, true, i) : spread_atom_host<5, R>(a, st, grid, scale, i, simd);
                    }, into);
    case 6:
      return reduce_into(ex, "md.pme_spread", atoms, std::int64_t{0}, SumOp{},
                    [=](int i, int, int) {
                      return atomic ? spread_atom<6, R>(a, st, grid, scale, true, i) : spread_atom_host<6, R>(a, st, grid, scale, i, simd);
                    }, into);
    default:
      break;
  }
#endif
  return reduce_into(ex, "md.pme_spread", atoms, std::int64_t{0}, SumOp{},
                     [=] CUMULUS_HD(int i, int, int) { return spread_atom<0, R>(a, st, grid, scale, atomic, i); }, into);
}

#if !defined(__CUDACC__)
// splines_block compiled for AVX-512 and for AVX2 (its loops vectorised at the CPU's width: 8 or
// 16 lanes rather than the baseline's 2 or 4), chosen once (not with CUMULUS_NO_AVX512, as the
// other host loops). The same operations either way: the same weights.
#if defined(__x86_64__)
template <int P, class R>
__attribute__((target("avx512f,avx512vl,avx512dq"))) void splines_block_avx512(const PmeAtoms& a, const PmeStencil& st, int i0,
                                                                              int m, int* k0, R* w) {
  splines_block<P, R>(a, st, i0, m, k0, w);
}
template <int P, class R>
__attribute__((target("avx2"))) void splines_block_avx2(const PmeAtoms& a, const PmeStencil& st, int i0, int m, int* k0,
                                                        R* w) {
  splines_block<P, R>(a, st, i0, m, k0, w);
}
#endif
template <int P, class R>
void splines_block_host(const PmeAtoms& a, const PmeStencil& st, int i0, int m, int* k0, R* w, int simd) {
#if defined(__x86_64__)
  if (simd == 2) return splines_block_avx512<P, R>(a, st, i0, m, k0, w);
  if (simd == 1) return splines_block_avx2<P, R>(a, st, i0, m, k0, w);
#endif
  (void)simd;
  splines_block<P, R>(a, st, i0, m, k0, w);
}

bool pme_host_splines() { return pme_simd(); }

template <class R>
void pme_splines(const PmeAtoms& a, const PmeStencil& st, PmeSplines<R>& sp) {
  ScopedTimer timer("md.pme_splines");
  const int P = st.order;
  sp.order = P;
  sp.k0.resize(4 * static_cast<std::size_t>(a.n));
  sp.w.resize(6 * static_cast<std::size_t>(P) * static_cast<std::size_t>(a.n));
  const int blocks = (a.n + 15) / 16;
  int* const k0 = sp.k0.data();
  R* const w = sp.w.data();
#if defined(__x86_64__)
  static const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                             __builtin_cpu_supports("avx512dq");
  const int simd = !pme_simd() ? 0 : (avx512 ? 2 : 1);
#else
  const int simd = 0;
#endif
#pragma omp parallel for schedule(static)
  for (int b = 0; b < blocks; ++b) {
    const int i0 = 16 * b, m = std::min(16, a.n - i0);
    int* const kb = k0 + 4 * static_cast<std::ptrdiff_t>(i0);
    R* const wb = w + 6 * static_cast<std::ptrdiff_t>(P) * i0;
    switch (P) {
      case 4:
        splines_block_host<4, R>(a, st, i0, m, kb, wb, simd);
        break;
      case 5:
        splines_block_host<5, R>(a, st, i0, m, kb, wb, simd);
        break;
      default:
        splines_block_host<6, R>(a, st, i0, m, kb, wb, simd);
        break;
    }
  }
}

template <class R>
std::int64_t pme_spread_private(const PmeAtoms& a, const PmeStencil& st, const PmeSplines<R>* sp,
                                const View<std::int64_t>& grid, std::size_t cells, double scale,
                                std::vector<std::int64_t>& scratch) {
  const int nthreads = omp_get_max_threads();
  if (nthreads > 1 && scratch.size() < cells * static_cast<std::size_t>(nthreads))
    scratch.resize(cells * static_cast<std::size_t>(nthreads));
  std::int64_t outside = 0;
  const bool simd = pme_simd();
  const int* const k0 = sp ? sp->k0.data() : nullptr;
  const R* const w = sp ? sp->w.data() : nullptr;
#pragma omp parallel num_threads(nthreads) reduction(+ : outside)
  {
    View<std::int64_t> mine = grid;
    // The team may be smaller than asked (OMP_DYNAMIC): its size decides the copies zeroed and summed.
    const int team = omp_get_num_threads();
    if (team > 1) {  // one thread deposits into the grid itself
      mine.data = scratch.data() + cells * static_cast<std::size_t>(omp_get_thread_num());
      std::fill(mine.data, mine.data + cells, std::int64_t{0});
    }
    auto spread = [&](auto P) {
      if (!sp) {  // each atom's stencil computed here, as CUDA's kernel does
#pragma omp for schedule(static)
        for (int i = 0; i < a.n; ++i) outside += spread_atom_host<P(), R>(a, st, mine, scale, i, simd);
        return;
      }
#pragma omp for schedule(static)
      for (int i = 0; i < a.n; ++i) {
        const int* const ki = k0 + 4 * static_cast<std::ptrdiff_t>(i);
        if (!ki[3]) {
          ++outside;
          continue;
        }
        deposit_host<P(), R>(st, mine, ki, w + 6 * P() * static_cast<std::ptrdiff_t>(i), P(), static_cast<R>(a.q[i] * scale),
                             simd);
      }
    };
    switch (st.order) {
      case 4:
        spread(std::integral_constant<int, 4>{});
        break;
      case 5:
        spread(std::integral_constant<int, 5>{});
        break;
      default:
        spread(std::integral_constant<int, 6>{});
        break;
    }
    // (the loop's barrier: every copy is complete)
    if (team > 1) {
#pragma omp for schedule(static)
      for (std::size_t c = 0; c < cells; ++c) {
        std::int64_t t = 0;
        for (int u = 0; u < team; ++u) t += scratch[cells * static_cast<std::size_t>(u) + c];
        grid.data[c] += t;
      }
    }
  }
  return outside;
}

template <class R>
void pme_forces_splines(const Exec& ex, const PmeAtoms& a, const PmeStencil& st, const PmeSplines<R>& sp,
                        const View<R>& phi) {
  const Box atoms(0, 0, 0, a.n, 1, 1);
  const int* const k0 = sp.k0.data();
  const R* const w = sp.w.data();
  auto run = [&](auto P) {
    constexpr int p = P();
    for_each(ex, "md.pme_forces", atoms, [=](int i, int, int) {
      const int* const ki = k0 + 4 * static_cast<std::ptrdiff_t>(i);
      if (!ki[3]) return;  // outside the grid's reach: no k-space force (force_atom)
      const R* const wi = w + 6 * p * static_cast<std::ptrdiff_t>(i);
      interpolate<p, R>(a, st, phi, i, ki, wi, wi + 3 * p, p);
    }, std::int64_t{p} * p * p);
  };
  switch (sp.order) {
    case 4:
      return run(std::integral_constant<int, 4>{});
    case 5:
      return run(std::integral_constant<int, 5>{});
    default:
      return run(std::integral_constant<int, 6>{});
  }
}
#endif

void pme_zero(const Exec& ex, const View<std::int64_t>& grid, const Box& box) {
  for_each(ex, "md.pme_zero", box, [=] CUMULUS_HD(int i, int j, int k) { grid(i, j, k) = 0; });
}

template <class R>
void pme_to_real(const Exec& ex, const View<std::int64_t>& in, const View<R>& out, const Box& box, double inv_scale) {
  for_each(ex, "md.pme_to_real", box, [=] CUMULUS_HD(int i, int j, int k) {
    out(i, j, k) = static_cast<R>(static_cast<double>(in(i, j, k)) * inv_scale);
  });
}

namespace {
// Spectral cell (i, j, k)'s wavenumbers over the box lengths, m, and |m|^2; and the r2c half
// spectrum's weight: the cells kx = 0 and kx = Nyquist stand for themselves, the others for
// themselves and their conjugates.
template <class R>
CUMULUS_HD inline void wavenumber(const PmeSpectralT<R>& sp, int i, int j, int k, double m[3], double* m2, double* weight) {
  m[0] = sp.k.kx(i) * sp.inv_l[0];
  m[1] = sp.k.ky(j) * sp.inv_l[1];
  m[2] = sp.k.kz(k) * sp.inv_l[2];
  *m2 = m[0] * m[0] + m[1] * m[1] + m[2] * m[2];
  *weight = (i == 0 || sp.k.nyquist(0, i)) ? 1.0 : 2.0;
}
}  // namespace

// The influence function G(m) = C exp(-pi^2 m^2 / alpha^2) / (pi V m^2) |b(m)|^2; 0 at m = 0
// (tin-foil: no m = 0 term). Once per box, not per step.
// In fp64, stored as R.
template <class R>
void pme_influence(const Exec& ex, const Box& box, const PmeSpectralT<R>& sp) {
  for_each(ex, "md.pme_influence", box, [=] CUMULUS_HD(int i, int j, int k) {
    double m[3], m2, weight;
    wavenumber(sp, i, j, k, m, &m2, &weight);
    sp.g(i, j, k) = static_cast<R>(
        m2 == 0 ? 0.0
                : sp.prefactor * ::exp(-sp.pi2_over_alpha2 * m2) / m2 * sp.bmod[0][i] * sp.bmod[1][j] * sp.bmod[2][k]);
  });
}

// In fp64 from the R spectrum and influence function (thermo steps only).
template <class R>
PmeSums pme_sums(const Exec& ex, const StridedView<FftComplex<R>>& s, const Box& box, const PmeSpectralT<R>& sp) {
  return reduce(ex, "md.pme_sums", box, PmeSums{}, SumOp{}, [=] CUMULUS_HD(int i, int j, int k) {
    double m[3], m2, weight;
    wavenumber(sp, i, j, k, m, &m2, &weight);
    const double g = sp.g(i, j, k);
    PmeSums r;
    if (g == 0) return r;
    const FftComplex<R> cr = s(i, j, k);
    const double re = cr.re, im = cr.im;
    // E(m) = G |S|^2 / 2 per full-spectrum cell; the virial W_ab = E (delta_ab - 2 (1 + pi^2 m^2 /
    // alpha^2) m_a m_b / m^2).
    const double e = 0.5 * weight * g * (re * re + im * im);
    const double f = 2.0 * (1.0 + sp.pi2_over_alpha2 * m2) / m2;
    const double unit = 0x1p60;  // 2^-kPmeSumExponent
    r.s[0] = ExactSum::of_units(e * unit);
    r.s[1] = ExactSum::of_units(e * (1.0 - f * m[0] * m[0]) * unit);
    r.s[2] = ExactSum::of_units(e * (1.0 - f * m[1] * m[1]) * unit);
    r.s[3] = ExactSum::of_units(e * (1.0 - f * m[2] * m[2]) * unit);
    r.s[4] = ExactSum::of_units(-e * f * m[0] * m[1] * unit);
    r.s[5] = ExactSum::of_units(-e * f * m[0] * m[2] * unit);
    r.s[6] = ExactSum::of_units(-e * f * m[1] * m[2] * unit);
    return r;
  });
}

template <class R>
void pme_convolve(const Exec& ex, const StridedView<FftComplex<R>>& s, const Box& box, const PmeSpectralT<R>& sp) {
  for_each(ex, "md.pme_convolve", box, [=] CUMULUS_HD(int i, int j, int k) {
    const R g = sp.g(i, j, k);
    FftComplex<R>& c = s(i, j, k);
    c.re *= g;
    c.im *= g;
  });
}

template <class R>
void pme_forces(const Exec& ex, const PmeAtoms& a, const PmeStencil& st, const View<R>& phi) {
  const Box atoms(0, 0, 0, a.n, 1, 1);
#if !defined(__CUDACC__)
  switch (st.order) {
    case 4:
      return for_each(ex, "md.pme_forces", atoms, [=](int i, int, int) { force_atom<4, R>(a, st, phi, i); }, 64);
    case 5:
      return for_each(ex, "md.pme_forces", atoms, [=](int i, int, int) { force_atom<5, R>(a, st, phi, i); }, 125);
    case 6:
      return for_each(ex, "md.pme_forces", atoms, [=](int i, int, int) { force_atom<6, R>(a, st, phi, i); }, 216);
    default:
      break;
  }
#endif
  // weight: a body reads order^3 grid points (shares an atom loop over the threads; for_each).
  for_each(ex, "md.pme_forces", atoms, [=] CUMULUS_HD(int i, int, int) { force_atom<0, R>(a, st, phi, i); },
           std::int64_t{st.order} * st.order * st.order);
}

// Both precisions: double (md.precision = "double") and float ("mixed").
#define CUMULUS_PME_INSTANTIATE(R)                                                                                  \
  template std::int64_t pme_spread<R>(const Exec&, const PmeAtoms&, const PmeStencil&, const View<std::int64_t>&, double, \
                                      bool, std::int64_t*);                                                         \
  template void pme_influence<R>(const Exec&, const Box&, const PmeSpectralT<R>&);                                  \
  template void pme_to_real<R>(const Exec&, const View<std::int64_t>&, const View<R>&, const Box&, double);          \
  template PmeSums pme_sums<R>(const Exec&, const StridedView<FftComplex<R>>&, const Box&, const PmeSpectralT<R>&);   \
  template void pme_convolve<R>(const Exec&, const StridedView<FftComplex<R>>&, const Box&, const PmeSpectralT<R>&);  \
  template void pme_forces<R>(const Exec&, const PmeAtoms&, const PmeStencil&, const View<R>&);                      \
  CUMULUS_PME_INSTANTIATE_HOST(R)
#if !defined(__CUDACC__)
#define CUMULUS_PME_INSTANTIATE_HOST(R)                                                                             \
  template void pme_splines<R>(const PmeAtoms&, const PmeStencil&, PmeSplines<R>&);                                 \
  template std::int64_t pme_spread_private<R>(const PmeAtoms&, const PmeStencil&, const PmeSplines<R>*,             \
                                              const View<std::int64_t>&, std::size_t, double, std::vector<std::int64_t>&); \
  template void pme_forces_splines<R>(const Exec&, const PmeAtoms&, const PmeStencil&, const PmeSplines<R>&, const View<R>&);
#else
#define CUMULUS_PME_INSTANTIATE_HOST(R)
#endif
CUMULUS_PME_INSTANTIATE(double)
CUMULUS_PME_INSTANTIATE(float)
#undef CUMULUS_PME_INSTANTIATE
#undef CUMULUS_PME_INSTANTIATE_HOST

}  // namespace pme_kernels::CUMULUS_PASS
}  // namespace cumulus::md
