#pragma once
// The lattice Boltzmann kernel bodies, compiled once per backend (g++ for the host, nvcc for
// CUDA) by the kernel sources that include this header, each pass in its own namespace
// (core/kernel_pass.hpp).
//
// One step is "pull, collide, store" on two buffers: a cell gathers f_q from its upstream
// neighbour x - c_q in the source buffer (which holds post-collision populations), collides, and
// writes its own populations to the destination. Per cell update that moves Q values in and Q out:
// 2 Q sizeof(S) bytes (D3Q19 fp32: 152 B, fp16: 76 B), the count the benchmarks use.
//
// Every cell first takes the fast path, which knows nothing about boundaries; the few cells next
// to a wall, obstacle, inlet or outlet (listed once at set-up) are then recomputed by the boundary
// kernel. The fast path stays branch-free, so it vectorises on the host.
//
// The kernel templates live in this header, included only by the kernel sources that instantiate
// them: lbm_kernels.cpp (D2Q9 and the kernels that know no lattice), lbm_kernels_d3q19.cpp, and
// lbm_kernels_d3q27_{fp64,fp32,fp16}.cpp. Each is its own nvcc compile, on its own core: as one
// source the CUDA pass took 254 s (docs/architecture.md, "Build time").
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>
#if !defined(__CUDACC__) && defined(__x86_64__)
#include <immintrin.h>
#endif

#include "solvers/lbm/lbm_kernels.hpp"

namespace cumulus::lbm {

namespace kernels::CUMULUS_PASS {
namespace {

// Square roots in the arithmetic type R, one overload per type and the same call on both passes.
// An unqualified sqrt(float) finds the C library's sqrt(double) under g++ (<cmath> declares the
// float overload in std:: only) but CUDA's sqrt(float) under nvcc, and on the host the double
// result then pulls the arithmetic around it into double: fp32 bits that differ from CUDA's.
// sqrtf and sqrt are correctly rounded (IEEE 754) on the host and on the device (nvcc's default
// -prec-sqrt=true), so either overload gives the same bits on both.
CUMULUS_HD CUMULUS_INLINE float sqrt_r(float x) { return sqrtf(x); }
CUMULUS_HD CUMULUS_INLINE double sqrt_r(double x) { return sqrt(x); }

// A list of n cells as a 2D box of rows of 1024 (the host loop parallelises over rows; a 1 x n
// box would run on one thread). The body maps (i, j) back to j * 1024 + i and skips i >= n.
constexpr int kListRow = 1024;
inline Box list_box(std::int64_t n) { return Box(0, 0, 0, kListRow, static_cast<int>((n + kListRow - 1) / kListRow), 1); }

// A list of cells (offsets into the rank's interior box), read by the list kernels: at(li, lj)
// gives entry idx = lj * kListRow + li and its cell (i, j, k), or false past the end.
struct CellList {
  const std::int32_t* list;
  std::int64_t n;
  int lo0, lo1, lo2, ni, nj;
  CellList(const std::int32_t* l, std::int64_t count, const Box& interior)
      : list(l), n(count), lo0(interior.lo[0]), lo1(interior.lo[1]), lo2(interior.lo[2]), ni(interior.size(0)),
        nj(interior.size(1)) {}
  CUMULUS_HD bool at(int li, int lj, std::int64_t& idx, int& i, int& j, int& k) const {
    idx = static_cast<std::int64_t>(lj) * kListRow + li;
    if (idx >= n) return false;
    const std::int32_t c = list[idx];
    i = lo0 + c % ni;
    j = lo1 + (c / ni) % nj;
    k = lo2 + c / (ni * nj);
    return true;
  }
};

// Shifted equilibrium feq_q - w_q for density 1 + drho and velocity u (second order in u).
template <class L, class R, int q>
CUMULUS_HD CUMULUS_INLINE R feq_shifted(R drho, R rho, R ux, R uy, R uz, R uu) {
  constexpr R w = static_cast<R>(L::w(q));
  constexpr int cx = L::c(q, 0), cy = L::c(q, 1), cz = L::c(q, 2);
  const R cu = R(cx) * ux + R(cy) * uy + R(cz) * uz;
  return w * (drho + rho * (R(3) * cu + R(4.5) * cu * cu - R(1.5) * uu));
}

// Density deviation, momentum and (optionally) the non-equilibrium second moment of shifted f.
template <class L, class R>
CUMULUS_HD CUMULUS_INLINE void moments(const R (&f)[L::Q], R& drho, R& jx, R& jy, R& jz) {
  drho = R(0);
  jx = R(0);
  jy = R(0);
  jz = R(0);
  static_for<L::Q>([&](auto q) {
    constexpr int cx = L::c(q, 0), cy = L::c(q, 1), cz = L::c(q, 2);
    drho += f[q];
    if constexpr (cx > 0) jx += f[q];
    if constexpr (cx < 0) jx -= f[q];
    if constexpr (cy > 0) jy += f[q];
    if constexpr (cy < 0) jy -= f[q];
    if constexpr (cz > 0) jz += f[q];
    if constexpr (cz < 0) jz -= f[q];
  });
}

// Pi_neq = sum_q c c (f - feq): xx, yy, zz, xy, xz, yz.
template <class L, class R>
CUMULUS_HD CUMULUS_INLINE void pi_neq(const R (&f)[L::Q], R drho, R rho, R ux, R uy, R uz, R (&pi)[6]) {
  const R uu = ux * ux + uy * uy + uz * uz;
  for (int a = 0; a < 6; ++a) pi[a] = R(0);
  static_for<L::Q>([&](auto q) {
    constexpr int cx = L::c(q, 0), cy = L::c(q, 1), cz = L::c(q, 2);
    const R d = f[q] - feq_shifted<L, R, q>(drho, rho, ux, uy, uz, uu);
    if constexpr (cx != 0) pi[0] += d;
    if constexpr (cy != 0) pi[1] += d;
    if constexpr (cz != 0) pi[2] += d;
    if constexpr (cx * cy != 0) pi[3] += R(cx * cy) * d;
    if constexpr (cx * cz != 0) pi[4] += R(cx * cz) * d;
    if constexpr (cy * cz != 0) pi[5] += R(cy * cz) * d;
  });
}

// The regularised non-equilibrium part of direction q: w_q / (2 cs^4) (c c - cs^2 I) : Pi.
template <class L, class R, int q>
CUMULUS_HD CUMULUS_INLINE R neq_regularized(const R (&pi)[6]) {
  constexpr R w = static_cast<R>(L::w(q));
  constexpr int cx = L::c(q, 0), cy = L::c(q, 1), cz = L::c(q, 2);
  constexpr R third = R(1) / R(3);
  const R s = (R(cx * cx) - third) * pi[0] + (R(cy * cy) - third) * pi[1] + (R(cz * cz) - third) * pi[2] +
              R(2 * cx * cy) * pi[3] + R(2 * cx * cz) * pi[4] + R(2 * cy * cz) * pi[5];
  return R(4.5) * w * s;
}

// BGK or TRT collision with Guo forcing and an optional Smagorinsky eddy viscosity, in place on
// shifted populations. BGK is TRT with omega_minus = omega. Smagorinsky is a compile-time switch:
// a branch inside the loop body would keep the host compiler from vectorising the fast path.
template <class L, class R, bool Smagorinsky>
CUMULUS_HD CUMULUS_INLINE void collide(R (&f)[L::Q], const StepParams& p) {
  R drho, jx, jy, jz;
  moments<L, R>(f, drho, jx, jy, jz);
  const R rho = R(1) + drho;
  const R fx = R(p.force[0]), fy = R(p.force[1]), fz = R(p.force[2]);
  const R inv = R(1) / rho;
  const R ux = (jx + R(0.5) * fx) * inv, uy = (jy + R(0.5) * fy) * inv, uz = (jz + R(0.5) * fz) * inv;
  const R uu = ux * ux + uy * uy + uz * uz;
  R om = R(p.omega), omm = R(p.omega_minus);
  if (Smagorinsky && p.smagorinsky > 0) {
    // tau_eff solves tau^2 - tau0 tau - (9 sqrt2 / 2) C^2 |Pi_neq| / rho = 0 (Hou et al. 1996).
    R pi[6];
    pi_neq<L, R>(f, drho, rho, ux, uy, uz, pi);
    const R norm = sqrt_r(pi[0] * pi[0] + pi[1] * pi[1] + pi[2] * pi[2] +
                          R(2) * (pi[3] * pi[3] + pi[4] * pi[4] + pi[5] * pi[5]));
    const R c2 = R(p.smagorinsky) * R(p.smagorinsky);
    const R tau0 = R(1) / om;
    const R tau = R(0.5) * (tau0 + sqrt_r(tau0 * tau0 + R(25.455844122715710) * c2 * norm * inv));  // 18 sqrt 2
    om = R(1) / tau;
    omm = p.magic < 0 ? om : R(1) / (R(p.magic) / (tau - R(0.5)) + R(0.5));
  }
  const R uF = ux * fx + uy * fy + uz * fz;
  const R kp = R(1) - R(0.5) * om, km = R(1) - R(0.5) * omm;
  {
    constexpr R w0 = static_cast<R>(L::w(0));
    const R eq = w0 * (drho - rho * R(1.5) * uu);
    f[0] = f[0] - om * (f[0] - eq) - kp * w0 * R(3) * uF;
  }
  static_for<(L::Q - 1) / 2>([&](auto h) CUMULUS_LAMBDA_INLINE {
    constexpr int a = 2 * h + 1, b = a + 1;
    constexpr R w = static_cast<R>(L::w(a));
    constexpr int cx = L::c(a, 0), cy = L::c(a, 1), cz = L::c(a, 2);
    const R cu = R(cx) * ux + R(cy) * uy + R(cz) * uz;
    const R cF = R(cx) * fx + R(cy) * fy + R(cz) * fz;
    const R eqp = w * (drho + rho * (R(4.5) * cu * cu - R(1.5) * uu));
    const R eqm = w * rho * R(3) * cu;
    const R fp = R(0.5) * (f[a] + f[b]), fm = R(0.5) * (f[a] - f[b]);
    const R dp = om * (fp - eqp) - kp * w * (R(9) * cu * cF - R(3) * uF);
    const R dm = omm * (fm - eqm) - km * w * R(3) * cF;
    f[a] = f[a] - dp - dm;
    f[b] = f[b] - dp + dm;
  });
}

// The population arriving at (i, j, k) in pull direction p from a resting solid upstream: the wall
// cuts the link towards it (direction w = -c_p) at fraction d of its length. d = 1/2 is halfway
// bounce-back; otherwise linear interpolated bounce-back (Bouzidi, Firdaouss & Lallemand 2001),
// which keeps curved walls second order. Coefficients sum to 1, so shifted storage needs nothing.
template <class L, class S, int p>
CUMULUS_HD CUMULUS_INLINE typename Storage<S>::R bounce(const View<S>& src, int i, int j, int k, float d) {
  using St = Storage<S>;
  using R = typename St::R;
  constexpr int w = opposite(p);
  constexpr int cx = L::c(p, 0), cy = L::c(p, 1), cz = L::c(p, 2);
  const R a = St::load(src(i, j, k, w));
  if (d == 0.5f) return a;
  const R dd = R(d);
  if (dd < R(0.5)) return R(2) * dd * a + (R(1) - R(2) * dd) * St::load(src(i + cx, j + cy, k + cz, w));
  return a / (R(2) * dd) + (R(1) - R(1) / (R(2) * dd)) * St::load(src(i, j, k, p));
}

}  // namespace

// A functor rather than a lambda: its call operator can be forced inline, and the host compiler
// then vectorises the loop over i (a lambda this large it calls once per cell).
template <class L, class S, bool Smagorinsky>
struct StreamCollide {
  View<S> src, dst;
  StepParams p;
  CUMULUS_HD CUMULUS_INLINE void operator()(int i, int j, int k) const {
    using St = Storage<S>;
    using R = typename St::R;
    R f[L::Q];
    static_for<L::Q>([&](auto q) {
      constexpr int cx = L::c(q, 0), cy = L::c(q, 1), cz = L::c(q, 2);
      f[q] = St::load(src(i - cx, j - cy, k - cz, q));
    });
    collide<L, R, Smagorinsky>(f, p);
    static_for<L::Q>([&](auto q) { dst(i, j, k, q) = St::store(f[q]); });
  }
};

#if !defined(__CUDACC__) && defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CUMULUS_LBM_HALF_ROWS 1
// fp16 storage on an AVX-512 host: binary16 in software costs a dozen integer operations per
// population (the fp32 arithmetic alone runs twice as fast), and GCC does not vectorise _Float16
// conversions. So each row is converted whole with vcvtph2ps / vcvtps2ph into fp32 row buffers,
// and the fp32 body runs on those: a View with zero j and k strides maps the pull src(i - c, j -
// c_y, k - c_z, q) to the buffer of q, which holds the row (j - c_y, k - c_z) of population q
// from one cell before the row to one after. The same arithmetic as the fp16 body (the conversions
// are exact one way, round to nearest even the other, as the software ones): the same bits, NaN
// payloads aside (a NaN is a diverged run, stopped by the health check). `inline` for the linker
// (this header is in several kernel sources); noinline for the compiler (one call per row).
inline __attribute__((target("avx512f"), noinline)) void half_row_to_float(const std::uint16_t* in, float* out, int m) {
  const __m512 scale = _mm512_set1_ps(3.0517578125e-05f);  // 2^-15, as Storage<uint16_t>::load
  int x = 0;
  for (; x + 16 <= m; x += 16)
    _mm512_storeu_ps(out + x, _mm512_mul_ps(_mm512_maskz_cvtph_ps(__mmask16(0xFFFF), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + x))), scale));
  for (; x < m; ++x) out[x] = Storage<std::uint16_t>::load(in[x]);
}
inline __attribute__((target("avx512f"), noinline)) void float_row_to_half(const float* in, std::uint16_t* out, int m) {
  const __m512 scale = _mm512_set1_ps(32768.0f);
  int x = 0;
  for (; x + 16 <= m; x += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + x),
                        _mm512_maskz_cvtps_ph(__mmask16(0xFFFF), _mm512_mul_ps(_mm512_loadu_ps(in + x), scale), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; x < m; ++x) out[x] = Storage<std::uint16_t>::store(in[x]);
}
// One row of the fp32 body, in ISA clones as for_each_multiarch's loop (GCC inlines the collision
// into a clone; into a plain target("avx512f") function it did not, and ran 25x slower).
template <class F>
__attribute__((target_clones("avx512f", "default"))) void row_multiarch(const F& body, int lo, int hi, int j, int k) {
#pragma omp simd
  for (int i = lo; i < hi; ++i) body(i, j, k);
}
template <class L, bool Smagorinsky>
void stream_collide_half_rows(const View<std::uint16_t>& src, const View<std::uint16_t>& dst,
                                                                   const Box& box, const StepParams& p) {
  const int lo = box.lo[0], n = box.size(0), w = n + 2;
#pragma omp parallel if (box.volume() > 32768)
  {
    // Each thread's row buffers, kept across steps (no allocation in the time loop).
    thread_local std::vector<float> in, out;
    in.resize(static_cast<std::size_t>(L::Q) * w);
    out.resize(static_cast<std::size_t>(L::Q) * n);
    View<float> vin, vout;
    vin.data = in.data();
    vin.lo0 = lo - 1;
    vin.sc = w;
    vout.data = out.data();
    vout.lo0 = lo;
    vout.sc = n;
    const StreamCollide<L, float, Smagorinsky> body{vin, vout, p};
#pragma omp for collapse(2) schedule(static)
    for (int k = box.lo[2]; k < box.hi[2]; ++k)
      for (int j = box.lo[1]; j < box.hi[1]; ++j) {
        static_for<L::Q>([&](auto q) {
          constexpr int cy = L::c(q, 1), cz = L::c(q, 2);
          half_row_to_float(&src(lo - 1, j - cy, k - cz, q), in.data() + q * w, w);
        });
        row_multiarch(body, lo, lo + n, j, k);
        static_for<L::Q>([&](auto q) { float_row_to_half(out.data() + q * n, &dst(lo, j, k, q), n); });
      }
  }
}
#endif

template <class L, class S, bool Smagorinsky>
void stream_collide_as(const Exec& ex, const View<S>& src, const View<S>& dst, const Box& box, const StepParams& p) {
#ifdef CUMULUS_LBM_HALF_ROWS
  if constexpr (std::is_same_v<S, std::uint16_t>) {
    static const bool avx512 = __builtin_cpu_supports("avx512f");
    if (!ex.is_cuda() && avx512 && !box.empty()) {
      detail::KernelTimer<int> timer(ex, "lbm.stream_collide");
      stream_collide_half_rows<L, Smagorinsky>(src, dst, box, p);
      return;
    }
  }
#endif
  // The host loop in AVX-512/AVX2/baseline clones (bench/README.md: fp64 0.66 -> 0.82 of a copy;
  // fp16 storage 0.15 -> 0.25, its integer conversions vectorised 16 wide).
  for_each_multiarch(ex, "lbm.stream_collide", box, StreamCollide<L, S, Smagorinsky>{src, dst, p});
}

template <class L, class S>
void stream_collide(const Exec& ex, const View<S>& src, const View<S>& dst, const Box& box, const StepParams& p) {
  if (p.smagorinsky > 0) stream_collide_as<L, S, true>(ex, src, dst, box, p);
  else stream_collide_as<L, S, false>(ex, src, dst, box, p);
}

template <class L, class S>
void boundary_cells(const Exec& ex, const View<S>& src, const View<S>& dst, const View<std::uint8_t>& flags,
                    const std::int32_t* list, const std::uint32_t* links, const float* delta, std::int64_t n,
                    const Box& interior, const StepParams& p) {
  using St = Storage<S>;
  using R = typename St::R;
  const StepParams pp = p;
  const CellList cells(list, n, interior);
  for_each(ex, "lbm.boundary", list_box(n), [=] CUMULUS_HD(int li, int lj, int) {
    std::int64_t idx;
    int i, j, k;
    if (!cells.at(li, lj, idx, i, j, k)) return;
    const std::uint32_t m = links[idx];
    if (!(m & kGeneralPath)) {
      // Only resting walls and obstacles upstream (most boundary cells): bounce-back by mask, no
      // flag lookups.
      R f[L::Q];
      const float* d = delta + idx * L::Q;
      static_for<L::Q>([&](auto q) {
        constexpr int cx = L::c(q, 0), cy = L::c(q, 1), cz = L::c(q, 2);
        f[q] = ((m >> q) & 1u) ? bounce<L, S, q>(src, i, j, k, d[q]) : St::load(src(i - cx, j - cy, k - cz, q));
      });
      collide<L, R, true>(f, pp);
      static_for<L::Q>([&](auto q) { dst(i, j, k, q) = St::store(f[q]); });
      return;
    }
    if (cell_type(flags(i, j, k)) != kFluid) {  // solid cells rest at density 1
      static_for<L::Q>([&](auto q) { dst(i, j, k, q) = St::store(R(0)); });
      return;
    }
    // This cell's post-collision state: bounce-back returns it, open boundaries extrapolate it.
    R own[L::Q];
    static_for<L::Q>([&](auto q) { own[q] = St::load(src(i, j, k, q)); });
    // Moments and the non-equilibrium stress only where an inlet or outlet needs them.
    R odrho = R(0), oux = R(0), ouy = R(0), ouz = R(0);
    R opi[6] = {R(0), R(0), R(0), R(0), R(0), R(0)};
    if (flags(i, j, k) & kOpen) {
      R ojx, ojy, ojz;
      moments<L, R>(own, odrho, ojx, ojy, ojz);
      const R orho = R(1) + odrho;
      oux = ojx / orho;
      ouy = ojy / orho;
      ouz = ojz / orho;
      pi_neq<L, R>(own, odrho, orho, oux, ouy, ouz, opi);
    }

    R f[L::Q];
    static_for<L::Q>([&](auto q) {
      constexpr int cx = L::c(q, 0), cy = L::c(q, 1), cz = L::c(q, 2);
      constexpr int qo = opposite(q);
      constexpr R w = static_cast<R>(L::w(q));
      const int gi = i - cx, gj = j - cy, gk = k - cz;
      const int t = q == 0 ? kFluid : cell_type(flags(gi, gj, gk));
      if (t == kFluid) {
        f[q] = St::load(src(gi, gj, gk, q));
      } else if (t == kWall || t >= kObstacle) {
        f[q] = bounce<L, S, q>(src, i, j, k, delta[idx * L::Q + q]);
      } else if (t < kInlet) {
        const FaceSpec& fs = pp.face[t - kMovingWall];  // moving wall: bounce-back plus the wall's momentum
        f[q] = own[qo] + R(6) * w * R(pp.ramp) * (R(cx) * R(fs.u[0]) + R(cy) * R(fs.u[1]) + R(cz) * R(fs.u[2]));
      } else {
        // Open boundary: equilibrium at the boundary's density and velocity, plus (inlets only) this
        // cell's regularised non-equilibrium part (Latt et al. 2008). Outlets take none: at tau near
        // 1/2 the post-collision non-equilibrium flips sign every step, and extrapolating it to the
        // outlet made BGK diverge there at tau 0.53 (docs/lbm.md).
        R bdrho, bux, buy, buz;
        if (t < kOutlet) {
          const int face = t - kInlet;
          const FaceSpec& fs = pp.face[face];
          R shape = R(pp.ramp);
          if (fs.parabolic) {
            const int g[3] = {gi, gj, gk};
            for (int a = 0; a < 3; ++a) {
              if (a == face / 2 || pp.periodic[a]) continue;
              R s = (R(g[a]) + R(0.5)) / R(pp.global[a]);
              s = s < R(0) ? R(0) : (s > R(1) ? R(1) : s);
              shape *= R(4) * s * (R(1) - s);
            }
          }
          bdrho = odrho;
          bux = shape * R(fs.u[0]);
          buy = shape * R(fs.u[1]);
          buz = shape * R(fs.u[2]);
        } else {
          bdrho = R(pp.face[t - kOutlet].rho) - R(1);
          bux = oux;
          buy = ouy;
          buz = ouz;
        }
        const R buu = bux * bux + buy * buy + buz * buz;
        f[q] = feq_shifted<L, R, q>(bdrho, R(1) + bdrho, bux, buy, buz, buu) + (t >= kOutlet ? R(0) : neq_regularized<L, R, q>(opi));
      }
    });
    collide<L, R, true>(f, pp);
    static_for<L::Q>([&](auto q) { dst(i, j, k, q) = St::store(f[q]); });
  });
}

// Cells whose only non-fluid neighbours are the domain's walls (halfway bounce-back, resting or
// moving) need no second pass: before the step, each wall link's population is written into the
// wall's ghost cell upstream, which the fast path then pulls as it pulls from any cell. A ghost
// population (g, q) is pulled by one cell only, g + c_q, so no two links write the same place; the
// value is the bounce-back one (own post-collision f_opposite, plus the moving wall's momentum
// term), the very expression the boundary kernel used: the same bits, without re-reading 2 Q
// scattered populations per cell. fp16 storage: resting walls only (a raw copy; the moving term
// would be rounded to binary16 on the way). Runs after the halo transfer, which may overwrite
// corner ghosts. `moving_face`: the face of the cell's moving-wall links (one face per cell).
template <class L, class S>
void wall_fill(const Exec& ex, const View<S>& f, const std::int32_t* list, const std::uint32_t* walls,
               const std::uint32_t* moving, const std::int8_t* moving_face, std::int64_t n, const Box& interior,
               const StepParams& p) {
  using St = Storage<S>;
  using R = typename St::R;
  const StepParams pp = p;
  const CellList cells(list, n, interior);
  for_each(ex, "lbm.wall_fill", list_box(n), [=] CUMULUS_HD(int li, int lj, int) {
    std::int64_t idx;
    int i, j, k;
    if (!cells.at(li, lj, idx, i, j, k)) return;
    const std::uint32_t wm = walls[idx], mm = moving[idx];
    static_for<L::Q>([&](auto q) {
      constexpr int cx = L::c(q, 0), cy = L::c(q, 1), cz = L::c(q, 2);
      constexpr int qo = opposite(q);
      if ((wm >> q) & 1u) f(i - cx, j - cy, k - cz, q) = f(i, j, k, qo);
      if ((mm >> q) & 1u) {  // never set for fp16 storage (build_flags)
        constexpr R w = static_cast<R>(L::w(q));
        const FaceSpec& fs = pp.face[moving_face[idx]];
        f(i - cx, j - cy, k - cz, q) = St::store(St::load(f(i, j, k, qo)) + R(6) * w * R(pp.ramp) *
                                                 (R(cx) * R(fs.u[0]) + R(cy) * R(fs.u[1]) + R(cz) * R(fs.u[2])));
      }
    });
  });
}

template <class L, class S>
void macroscopic(const Exec& ex, const View<S>& fv, const View<std::uint8_t>& flags, const View<double>& out,
                 const Box& box, const StepParams& p) {
  using St = Storage<S>;
  using R = typename St::R;
  const R fx = R(p.force[0]), fy = R(p.force[1]), fz = R(p.force[2]);
  for_each(ex, "lbm.macroscopic", box, [=] CUMULUS_HD(int i, int j, int k) {
    if (cell_type(flags(i, j, k)) != kFluid) {
      out(i, j, k, 0) = 1.0;
      out(i, j, k, 1) = out(i, j, k, 2) = out(i, j, k, 3) = 0.0;
      return;
    }
    R f[L::Q];
    static_for<L::Q>([&](auto q) { f[q] = St::load(fv(i, j, k, q)); });
    R drho, jx, jy, jz;
    moments<L, R>(f, drho, jx, jy, jz);
    const R rho = R(1) + drho;
    // Post-collision momentum carries the whole force; the physical velocity is halfway.
    out(i, j, k, 0) = static_cast<double>(rho);
    out(i, j, k, 1) = static_cast<double>((jx - R(0.5) * fx) / rho);
    out(i, j, k, 2) = static_cast<double>((jy - R(0.5) * fy) / rho);
    out(i, j, k, 3) = static_cast<double>((jz - R(0.5) * fz) / rho);
  });
}

template <class L, class S>
Vec3 obstacle_force(const Exec& ex, const View<S>& fv, const View<std::uint8_t>& flags, const std::int32_t* list,
                    const float* delta, std::int64_t n, const Box& interior, int type) {
  using St = Storage<S>;
  const CellList cells(list, n, interior);
  // Momentum exchange on every fluid-to-obstacle link: the body receives c_w (f*_w + f_in), what
  // goes in towards it plus what the (interpolated) bounce-back returns; 2 c_w f*_w at d = 1/2.
  return reduce(ex, "lbm.forces", list_box(n), Vec3{}, SumOp{},
                [=] CUMULUS_HD(int li, int lj, int) {
                  Vec3 F;
                  std::int64_t idx;
                  int i, j, k;
                  if (!cells.at(li, lj, idx, i, j, k)) return F;
                  if (cell_type(flags(i, j, k)) != kFluid) return F;
                  static_for<L::Q>([&](auto w) {
                    constexpr int cx = L::c(w, 0), cy = L::c(w, 1), cz = L::c(w, 2);
                    constexpr int p = opposite(w);
                    // (w = 0 points at the fluid cell itself, never at an obstacle.)
                    if (cell_type(flags(i + cx, j + cy, k + cz)) == type) {
                      const double out = static_cast<double>(St::load(fv(i, j, k, w))) + L::w(w);
                      const double in = static_cast<double>(bounce<L, S, p>(fv, i, j, k, delta[idx * L::Q + p])) + L::w(w);
                      const double m = out + in;
                      F.x += cx * m;
                      F.y += cy * m;
                      F.z += cz * m;
                    }
                  });
                  return F;
                });
}

template <class L, class S>
Totals totals(const Exec& ex, const View<S>& fv, const View<std::uint8_t>& flags, const Box& box, const StepParams& p) {
  using St = Storage<S>;
  using R = typename St::R;
  const double fx = p.force[0], fy = p.force[1], fz = p.force[2];
  return reduce(ex, "lbm.diagnostics", box, Totals{}, SumOp{}, [=] CUMULUS_HD(int i, int j, int k) {
    Totals t;
    if (cell_type(flags(i, j, k)) != kFluid) return t;
    R f[L::Q];
    static_for<L::Q>([&](auto q) { f[q] = St::load(fv(i, j, k, q)); });
    R drho, jx, jy, jz;
    moments<L, R>(f, drho, jx, jy, jz);
    const double rho = 1.0 + static_cast<double>(drho);
    const double mx = jx - 0.5 * fx, my = jy - 0.5 * fy, mz = jz - 0.5 * fz;
    t.mass = rho;
    t.energy = 0.5 * (mx * mx + my * my + mz * mz) / rho;
    return t;
  });
}

template <class L, class S>
std::int64_t first_bad_cell(const Exec& ex, const View<S>& fv, const View<std::uint8_t>& flags, const Box& box,
                            const Box& global, double max_speed) {
  using St = Storage<S>;
  using R = typename St::R;
  const GlobalCellNumber number(global);
  const double limit = max_speed * max_speed;
  return reduce(ex, "lbm.health", box, kNoBadCell, MinOp{},
                [=] CUMULUS_HD(int i, int j, int k) -> std::int64_t {
                  if (cell_type(flags(i, j, k)) != kFluid) return kNoBadCell;
                  R f[L::Q];
                  static_for<L::Q>([&](auto q) { f[q] = St::load(fv(i, j, k, q)); });
                  R drho, jx, jy, jz;
                  moments<L, R>(f, drho, jx, jy, jz);
                  const double rho = 1.0 + static_cast<double>(drho);
                  const double u2 = (double(jx) * jx + double(jy) * jy + double(jz) * jz) / (rho * rho);
                  // NaN fails every comparison: a non-finite population makes u2 or rho NaN.
                  const bool ok = rho > 0 && u2 <= limit;
                  return ok ? kNoBadCell : number(i, j, k);
                });
}

// Explicit instantiations of every (lattice, storage) kernel: one line per lattice and storage
// in exactly one kernel source (lbm_kernels*.cpp), so that nothing is compiled twice.
#define CUMULUS_LBM_INSTANTIATE(L, S)                                                                              \
  template void stream_collide<L, S>(const Exec&, const View<S>&, const View<S>&, const Box&, const StepParams&); \
  template void boundary_cells<L, S>(const Exec&, const View<S>&, const View<S>&, const View<std::uint8_t>&,      \
                                     const std::int32_t*, const std::uint32_t*, const float*, std::int64_t,       \
                                     const Box&,                                                                  \
                                     const StepParams&);                                                          \
  template void wall_fill<L, S>(const Exec&, const View<S>&, const std::int32_t*, const std::uint32_t*,            \
                                const std::uint32_t*, const std::int8_t*, std::int64_t, const Box&,                \
                                const StepParams&);                                                                \
  template void macroscopic<L, S>(const Exec&, const View<S>&, const View<std::uint8_t>&, const View<double>&,     \
                                  const Box&, const StepParams&);                                                 \
  template Vec3 obstacle_force<L, S>(const Exec&, const View<S>&, const View<std::uint8_t>&, const std::int32_t*, \
                                     const float*, std::int64_t, const Box&, int);                                \
  template Totals totals<L, S>(const Exec&, const View<S>&, const View<std::uint8_t>&, const Box&,               \
                               const StepParams&);                                                                \
  template std::int64_t first_bad_cell<L, S>(const Exec&, const View<S>&, const View<std::uint8_t>&, const Box&, \
                                             const Box&, double);
#define CUMULUS_LBM_INSTANTIATE_ALL(L)       \
  CUMULUS_LBM_INSTANTIATE(L, double)         \
  CUMULUS_LBM_INSTANTIATE(L, float)          \
  CUMULUS_LBM_INSTANTIATE(L, std::uint16_t)
}  // namespace kernels::CUMULUS_PASS

}  // namespace cumulus::lbm
