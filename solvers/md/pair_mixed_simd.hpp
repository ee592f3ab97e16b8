#pragma once
// The mixed-precision pair terms on 8 fp32 lanes in AVX2, for the host's SIMD loops
// (pair_lj_cut_coul_long_mixed_kernels.cpp): coul_pair_tabulated<float>'s operations in its order,
// lane by lane, then the fixed-point conversion of fixed_point.hpp, so that they give the generic
// loop's bits (the unit tests compare them). Host code only.
#if !defined(__CUDACC__) && defined(__x86_64__)
#include <immintrin.h>

#include <cstdint>

#include "core/macros.hpp"
#include "solvers/md/fixed_point.hpp"
#include "solvers/md/pair_host_simd.hpp"
#include "solvers/md/pair_lj_cut_coul_long.hpp"

namespace cumulus::md::mixed_simd {

CUMULUS_SIMD_WARNINGS_OFF  // core/macros.hpp

// fp32 x 8 as two fp64 x 4 (exact).
__attribute__((target("avx2"))) inline void widen(__m256 v, __m256d& lo, __m256d& hi) {
  lo = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
  hi = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
}
// fixed::units on 4 lanes: the units, and `ok` and-ed with the lanes' in-range mask (false for NaN).
__attribute__((target("avx2"))) inline __m256i fixed4(__m256d v, __m256d& ok) {
  const __m256d s = _mm256_mul_pd(v, _mm256_set1_pd(fixed::kUnit));
  const __m256d mag = _mm256_andnot_pd(_mm256_set1_pd(-0.0), s);
  ok = _mm256_and_pd(ok, _mm256_cmp_pd(mag, _mm256_set1_pd(fixed::kLimit), _CMP_LE_OQ));
  const __m256i bits = _mm256_castpd_si256(_mm256_add_pd(s, _mm256_set1_pd(fixed::kMagic)));
  return _mm256_sub_epi64(bits, _mm256_set1_epi64x(static_cast<long long>(fixed::kMagicBits)));
}

// What the loop reads of the parameters as whole vectors, laid out once per force call (built in
// a stack array and loaded whole once per chunk, they stalled on the store forwarding: a tenth of
// the loop's time on the water benchmark).
struct Tables {
  float reach2 = 0;  // the largest cutoff in fp32, squared: a pair at or beyond it has zero terms
  // The local atoms' fp32 x, y, z and charge (16 bytes an atom, 64-byte aligned) and the box in
  // fp32: separation32's operands, packed once per force call (pack_rows).
  const float* xyzq = nullptr;
  float box[3] = {};
  alignas(32) float special_coul[8] = {}, special_lj[8] = {};
  alignas(32) float rows[8][6][8] = {};  // up to 8 types: rows[ti][w][tj], field w of ti against tj
  // Up to 8 types: whether type ti's pairs have no LJ part (every coefficient 0, as water's
  // hydrogens': their LJ terms are +0, which change no sum, and the loop skips them).
  bool no_lj[8] = {};
  void init(const LjTable32& lj, const CoulParams32& p) {
    reach2 = p.cut2;
    for (int t = 0; t < lj.ntypes * lj.ntypes && p.lj; ++t) reach2 = reach2 > lj.c[t].cut2 ? reach2 : lj.c[t].cut2;
    for (int l = 0; l < 4; ++l) special_coul[l] = p.special_coul[l], special_lj[l] = p.special_lj[l];
    for (int ti = 0; ti < lj.ntypes && ti < 8; ++ti)
      for (int w = 0; w < 6; ++w)
        for (int tj = 0; tj < lj.ntypes && tj < 8; ++tj) rows[ti][w][tj] = (&lj.c[ti * lj.ntypes + tj].cut2)[w];
    if (lj.ntypes <= 8)
      for (int ti = 0; ti < lj.ntypes; ++ti) {
        no_lj[ti] = true;
        for (int tj = 0; tj < lj.ntypes; ++tj) {
          const LjCoefficients32& c = lj.c[ti * lj.ntypes + tj];
          if (c.lj1 != 0 || c.lj2 != 0 || c.lj3 != 0 || c.lj4 != 0 || c.offset != 0) no_lj[ti] = false;
        }
      }
  }
};

// The parameters as registers, once per loop.
struct Consts {
  __m256 one, two, sign, qqr2e, cut2, smax, inv_ds, two_inv_ds, scv, slv;
  __m256i last;
  const float* table;
  bool lj;
};
__attribute__((target("avx2"))) inline Consts consts(const CoulParams32& p, const Tables& tb) {
  Consts k;
  k.one = _mm256_set1_ps(1.0f);
  k.two = _mm256_set1_ps(2.0f);
  k.sign = _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(0x80000000u)));
  k.qqr2e = _mm256_set1_ps(p.qqr2e);
  k.cut2 = _mm256_set1_ps(p.cut2);
  k.smax = _mm256_set1_ps(p.table.smax);
  k.inv_ds = _mm256_set1_ps(p.table.inv_ds);
  k.two_inv_ds = _mm256_set1_ps(2 * p.table.inv_ds);
  k.last = _mm256_set1_epi32(p.table.n - 1);
  k.scv = _mm256_load_ps(tb.special_coul);
  k.slv = _mm256_load_ps(tb.special_lj);
  k.table = p.table.c;
  k.lj = p.lj;
  return k;
}

// coul_table_eval's fp32 lines (degree 3: 4 coefficients, 16 bytes, 16-byte aligned) for 8 lanes:
// each lane's line loaded whole and the 4 x 4 blocks transposed (cm[w]: coefficient w of every
// lane), rather than 4 gathers.
__attribute__((target("avx2"))) inline void table_lines(const float* c, __m256i k, __m256 cm[4]) {
  alignas(32) int kk[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(kk), k);
  pair_simd::rows8(c, kk, cm);
}

// N groups of 8 pairs' terms (coul_pair_tabulated<float>), each statement over the groups in turn
// so that their independent chains interleave (the loop is latency-bound otherwise: a sqrt, a
// division, a table line and a cubic in a row): F/r, and with `energy` the LJ,
// Coulomb and special-correction energies. lev: each lane's special level; lc[g][w]: group g's LJ
// coefficients (cut2, lj1, lj2, and with energy lj3, lj4, offset).
// terms and to_fixed are always inlined: GCC 12 left terms<2> a call, its arrays passed through
// memory; inlined, the mixed loop's md.forces fell 5 % (mean of 6 runs, 2 threads, the water
// benchmark's case; bench/ab_timers.sh), with the same bits.
struct Terms {
  __m256 f, evdwl, ecoul, ecorr;
};
template <int N>
__attribute__((target("avx2"), always_inline)) inline void terms(const Consts& k, const __m256* r2, const __m256* qq, const __m256i* lev,
                                                  const __m256 (*lc)[6], bool energy, Terms* t) {
  __m256 fc[N], fl[N], in_c[N], rinv[N], r2i[N], v[N], x[N], pv[N], dd[N], qm[N];
  __m256i kk[N];
  __m256 cm[N][4];
  for (int g = 0; g < N; ++g) fc[g] = _mm256_permutevar8x32_ps(k.scv, lev[g]);
  for (int g = 0; g < N; ++g) fl[g] = _mm256_permutevar8x32_ps(k.slv, lev[g]);
  for (int g = 0; g < N; ++g) in_c[g] = _mm256_and_ps(_mm256_cmp_ps(r2[g], k.cut2, _CMP_LT_OQ), k.one);
  for (int g = 0; g < N; ++g) rinv[g] = _mm256_sqrt_ps(r2[g]);
  for (int g = 0; g < N; ++g) v[g] = _mm256_mul_ps(_mm256_min_ps(r2[g], k.smax), k.inv_ds);  // coul_table_eval
  for (int g = 0; g < N; ++g) kk[g] = _mm256_min_epi32(_mm256_cvttps_epi32(v[g]), k.last);
  for (int g = 0; g < N; ++g) table_lines(k.table, kk[g], cm[g]);
  for (int g = 0; g < N; ++g) rinv[g] = _mm256_div_ps(k.one, rinv[g]);
  for (int g = 0; g < N; ++g) x[g] = _mm256_sub_ps(_mm256_mul_ps(k.two, _mm256_sub_ps(v[g], _mm256_cvtepi32_ps(kk[g]))), k.one);
  for (int g = 0; g < N; ++g) r2i[g] = _mm256_mul_ps(rinv[g], rinv[g]);
  for (int g = 0; g < N; ++g) pv[g] = dd[g] = cm[g][3];
  for (int w = 2; w >= 1; --w)
    for (int g = 0; g < N; ++g) {
      pv[g] = _mm256_add_ps(_mm256_mul_ps(pv[g], x[g]), cm[g][w]);
      dd[g] = _mm256_add_ps(_mm256_mul_ps(dd[g], x[g]), pv[g]);
    }
  for (int g = 0; g < N; ++g) pv[g] = _mm256_add_ps(_mm256_mul_ps(pv[g], x[g]), cm[g][0]);
  for (int g = 0; g < N; ++g) {
    const __m256 dh = _mm256_mul_ps(dd[g], k.two_inv_ds);
    qm[g] = _mm256_mul_ps(qq[g], in_c[g]);
    t[g].f = _mm256_mul_ps(qm[g], _mm256_add_ps(_mm256_mul_ps(_mm256_mul_ps(fc[g], rinv[g]), r2i[g]), _mm256_mul_ps(k.two, dh)));
  }
  if (energy)
    for (int g = 0; g < N; ++g) {
      t[g].ecoul = _mm256_mul_ps(_mm256_mul_ps(fc[g], qm[g]), _mm256_sub_ps(rinv[g], pv[g]));
      const __m256 neg = _mm256_xor_ps(_mm256_sub_ps(k.one, fc[g]), k.sign);
      t[g].ecorr = _mm256_mul_ps(_mm256_mul_ps(neg, qm[g]), pv[g]);
      t[g].evdwl = _mm256_setzero_ps();
    }
  if (k.lj)
    for (int g = 0; g < N; ++g) {
      const __m256 in_l = _mm256_and_ps(_mm256_cmp_ps(r2[g], lc[g][0], _CMP_LT_OQ), fl[g]);
      const __m256 r6i = _mm256_mul_ps(_mm256_mul_ps(r2i[g], r2i[g]), r2i[g]);
      t[g].f = _mm256_add_ps(t[g].f, _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(in_l, r6i), _mm256_sub_ps(_mm256_mul_ps(lc[g][1], r6i), lc[g][2])), r2i[g]));
      if (energy)
        t[g].evdwl = _mm256_mul_ps(in_l, _mm256_sub_ps(_mm256_mul_ps(r6i, _mm256_sub_ps(_mm256_mul_ps(lc[g][3], r6i), lc[g][4])), lc[g][5]));
    }
}

// The fixed-point terms of 8 pairs (fixed_terms'): f[c][h] the force component c (x, y, z) of lanes
// 4h .. 4h + 3, with `energy` e[h] the energy and v[h] the virial; ok_f and ok_e and-ed with the
// lanes' range masks.
struct Fixed {
  __m256i f[3][2], e[2], v[2];
};
// fixed::units of 4 lanes already in units (v times kUnit) and surely in range: the rounding alone.
__attribute__((target("avx2"))) inline __m256i fixed4_in_range(__m256d s) {
  const __m256i bits = _mm256_castpd_si256(_mm256_add_pd(s, _mm256_set1_pd(fixed::kMagic)));
  return _mm256_sub_epi64(bits, _mm256_set1_epi64x(static_cast<long long>(fixed::kMagicBits)));
}
// Whether all 8 lanes' terms are surely within fixed::units' range (2^26), from their fp32 values
// (NaN fails): |F/r| <= 2^15 and r^2 <= 1024, so each force component (|d| < 32.001) and the virial
// r^2 F/r stay below 2^25; with `energy`, each of the three energies at most 2^24 (their sum below
// 2^26). Water's pairs are orders of magnitude inside it.
__attribute__((target("avx2"))) inline bool surely_in_range(const Terms& t, __m256 r2, bool energy) {
  const __m256 mag = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 ok = _mm256_and_ps(_mm256_cmp_ps(_mm256_and_ps(t.f, mag), _mm256_set1_ps(0x1p15f), _CMP_LE_OQ),
                            _mm256_cmp_ps(r2, _mm256_set1_ps(1024.0f), _CMP_LE_OQ));
  if (energy) {
    const __m256 e24 = _mm256_set1_ps(0x1p24f);
    ok = _mm256_and_ps(ok, _mm256_cmp_ps(_mm256_and_ps(t.evdwl, mag), e24, _CMP_LE_OQ));
    ok = _mm256_and_ps(ok, _mm256_cmp_ps(_mm256_and_ps(t.ecoul, mag), e24, _CMP_LE_OQ));
    ok = _mm256_and_ps(ok, _mm256_cmp_ps(_mm256_and_ps(t.ecorr, mag), e24, _CMP_LE_OQ));
  }
  return _mm256_movemask_ps(ok) == 0xff;
}
// fixed::units on 4 lanes: with Fast, of values already in units and surely in range (the rounding
// alone), else checked (fixed4).
template <bool Fast>
__attribute__((target("avx2"))) inline __m256i units4(__m256d v, __m256d& ok) {
  if constexpr (Fast)
    return fixed4_in_range(v);
  else
    return fixed4(v, ok);
}
// to_fixed with Fast: the range checks skipped, and kUnit (a power of two) taken into F/r and the
// energy once: in fp32, d (F/r kUnit) is (d F/r) kUnit exactly but below fp32's normal range (where
// both are 0 units), and in fp64 the energy's and virial's products are exact, so the same units.
template <bool Fast>
__attribute__((target("avx2"), always_inline)) inline void to_fixed_as(const Terms& t, __m256 dx, __m256 dy, __m256 dz, __m256 r2, bool energy,
                                                        Fixed& out, __m256d& ok_f, __m256d& ok_e) {
  const __m256d unit = _mm256_set1_pd(fixed::kUnit);
  __m256d d2[2];
  // The force components: fp32 products (fixed_terms'), in the fast case of F/r taken in units
  // first (exact; a product that this changes, one below fp32's normal range, is 0 units either way).
  const __m256 comp[3] = {dx, dy, dz};
  const __m256 fu = Fast ? _mm256_mul_ps(t.f, _mm256_set1_ps(0x1p24f)) : t.f;
  for (int w = 0; w < 3; ++w) {
    widen(_mm256_mul_ps(comp[w], fu), d2[0], d2[1]);
    for (int h = 0; h < 2; ++h) out.f[w][h] = units4<Fast>(d2[h], ok_f);
  }
  if (energy) {
    __m256d f2[2];
    widen(t.f, f2[0], f2[1]);
    if constexpr (Fast)
      for (int h = 0; h < 2; ++h) f2[h] = _mm256_mul_pd(f2[h], unit);
    __m256d ev[2], ec[2], ek[2], rr[2];
    widen(t.evdwl, ev[0], ev[1]);
    widen(t.ecoul, ec[0], ec[1]);
    widen(t.ecorr, ek[0], ek[1]);
    widen(r2, rr[0], rr[1]);
    for (int h = 0; h < 2; ++h) {
      __m256d e = _mm256_add_pd(_mm256_add_pd(ev[h], ec[h]), ek[h]);
      if constexpr (Fast) e = _mm256_mul_pd(e, unit);
      out.e[h] = units4<Fast>(e, ok_e);
      out.v[h] = units4<Fast>(_mm256_mul_pd(rr[h], f2[h]), ok_e);
    }
  }
}
__attribute__((target("avx2"), always_inline)) inline void to_fixed(const Terms& t, __m256 dx, __m256 dy, __m256 dz, __m256 r2, bool energy,
                                                     Fixed& out, __m256d& ok_f, __m256d& ok_e) {
  if (surely_in_range(t, r2, energy))
    to_fixed_as<true>(t, dx, dy, dz, r2, energy, out, ok_f, ok_e);
  else
    to_fixed_as<false>(t, dx, dy, dz, r2, energy, out, ok_f, ok_e);
}

// Up to 8 types: a type's LJ coefficients against each partner type, a register per field
// (row[w] lane t: field w against type t), so that a permute picks the partners' (no gathers).
__attribute__((target("avx2"))) inline void lj_rows(const Tables& tb, int ti, __m256 row[6]) {
  for (int w = 0; w < 6; ++w) row[w] = _mm256_load_ps(tb.rows[ti][w]);
}

CUMULUS_SIMD_WARNINGS_ON

}  // namespace cumulus::md::mixed_simd
#endif
