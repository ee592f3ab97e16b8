#pragma once
// The mixed-precision pair terms on 16 fp32 lanes in AVX-512, for the host's SIMD loop where the
// CPU has it (pair_lj_cut_coul_long_mixed_kernels.cpp, mixed_chunk_avx512): pair_mixed_simd.hpp's
// 8-lane operations, the same ones in the same order on twice the lanes, so the generic loop's
// bits (the unit tests compare them). Masks stand in for the AVX2 code's all-ones lanes: a masked
// move of 1.0 (or of a factor) is the and with an all-ones compare. Host code only.
#if !defined(__CUDACC__) && defined(__x86_64__)
#include <immintrin.h>

#include <cstdint>

#include "core/macros.hpp"
#include "solvers/md/fixed_point.hpp"
#include "solvers/md/pair_host_simd.hpp"
#include "solvers/md/pair_mixed_simd.hpp"

#define CUMULUS_AVX512_MIXED __attribute__((target("avx2,avx512f,avx512vl,avx512dq,avx512bw")))

namespace cumulus::md::mixed_simd512 {

CUMULUS_SIMD_WARNINGS_OFF  // core/macros.hpp

// The AVX-512 subsets the loop uses (F, VL, DQ, BW: every AVX-512 CPU since Skylake-SP and Zen 4).
inline bool has_avx512_mixed() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw");
}

// An 8-float table (special factors by level, LJ fields by type) in the low half of a register.
CUMULUS_AVX512_MIXED inline __m512 low8(const float* v) {
  return _mm512_insertf32x8(_mm512_setzero_ps(), _mm256_load_ps(v), 0);
}

struct Consts {
  __m512 one, two, sign, qqr2e, cut2, smax, inv_ds, two_inv_ds, scv, slv;
  __m512i last;
  const float* table;
  bool lj;
};
CUMULUS_AVX512_MIXED inline Consts consts(const CoulParams32& p, const mixed_simd::Tables& tb) {
  Consts k;
  k.one = _mm512_set1_ps(1.0f);
  k.two = _mm512_set1_ps(2.0f);
  k.sign = _mm512_castsi512_ps(_mm512_set1_epi32(static_cast<int>(0x80000000u)));
  k.qqr2e = _mm512_set1_ps(p.qqr2e);
  k.cut2 = _mm512_set1_ps(p.cut2);
  k.smax = _mm512_set1_ps(p.table.smax);
  k.inv_ds = _mm512_set1_ps(p.table.inv_ds);
  k.two_inv_ds = _mm512_set1_ps(2 * p.table.inv_ds);
  k.last = _mm512_set1_epi32(p.table.n - 1);
  k.scv = low8(tb.special_coul);
  k.slv = low8(tb.special_lj);
  k.table = p.table.c;
  k.lj = p.lj;
  return k;
}

// 16 rows of 4 floats (16 bytes each; row l at base + 4 idx[l]) loaded whole and
// transposed: out[w] lane l is field w of row l. Rows 4g + k go to 128-bit lane g of r[k], then each
// lane's 4 x 4 block is transposed. The first pass's partner rows (x, y, z, charge) and the fp32
// table's lines.
CUMULUS_AVX512_MIXED inline void rows16(const float* base, const int* idx, __m512 out[4]) {
  __m512 r[4];
  auto row = [&](int l) { return _mm_loadu_ps(base + 4 * static_cast<std::ptrdiff_t>(idx[l])); };
  for (int k = 0; k < 4; ++k) {
    r[k] = _mm512_castps128_ps512(row(k));
    r[k] = _mm512_insertf32x4(r[k], row(4 + k), 1);
    r[k] = _mm512_insertf32x4(r[k], row(8 + k), 2);
    r[k] = _mm512_insertf32x4(r[k], row(12 + k), 3);
  }
  const __m512 t0 = _mm512_unpacklo_ps(r[0], r[1]), t1 = _mm512_unpackhi_ps(r[0], r[1]);
  const __m512 t2 = _mm512_unpacklo_ps(r[2], r[3]), t3 = _mm512_unpackhi_ps(r[2], r[3]);
  out[0] = _mm512_shuffle_ps(t0, t2, 0x44);
  out[1] = _mm512_shuffle_ps(t0, t2, 0xee);
  out[2] = _mm512_shuffle_ps(t1, t3, 0x44);
  out[3] = _mm512_shuffle_ps(t1, t3, 0xee);
}

// coul_table_eval's fp32 lines (degree 3: 4 coefficients) for 16 lanes, by rows16.
CUMULUS_AVX512_MIXED inline void table_lines(const float* c, __m512i k, __m512 cm[4]) {
  alignas(64) int kk[16];
  _mm512_store_si512(kk, k);
  rows16(c, kk, cm);
}

struct Terms {
  __m512 f, evdwl, ecoul, ecorr;
};
// mixed_simd::terms on N groups of 16 lanes.
template <int N>
CUMULUS_AVX512_MIXED __attribute__((always_inline)) inline void terms(const Consts& k, const __m512* r2, const __m512* qq,
                                                                       const __m512i* lev, const __m512 (*lc)[6], bool energy,
                                                                       Terms* t) {
  __m512 fc[N], fl[N], in_c[N], rinv[N], r2i[N], v[N], x[N], pv[N], dd[N], qm[N];
  __m512i kk[N];
  __m512 cm[N][4];
  for (int g = 0; g < N; ++g) fc[g] = _mm512_permutexvar_ps(lev[g], k.scv);
  for (int g = 0; g < N; ++g) fl[g] = _mm512_permutexvar_ps(lev[g], k.slv);
  for (int g = 0; g < N; ++g) in_c[g] = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(r2[g], k.cut2, _CMP_LT_OQ), k.one);
  for (int g = 0; g < N; ++g) rinv[g] = _mm512_sqrt_ps(r2[g]);
  for (int g = 0; g < N; ++g) v[g] = _mm512_mul_ps(_mm512_min_ps(r2[g], k.smax), k.inv_ds);
  for (int g = 0; g < N; ++g) kk[g] = _mm512_min_epi32(_mm512_cvttps_epi32(v[g]), k.last);
  for (int g = 0; g < N; ++g) table_lines(k.table, kk[g], cm[g]);
  for (int g = 0; g < N; ++g) rinv[g] = _mm512_div_ps(k.one, rinv[g]);
  for (int g = 0; g < N; ++g) x[g] = _mm512_sub_ps(_mm512_mul_ps(k.two, _mm512_sub_ps(v[g], _mm512_cvtepi32_ps(kk[g]))), k.one);
  for (int g = 0; g < N; ++g) r2i[g] = _mm512_mul_ps(rinv[g], rinv[g]);
  for (int g = 0; g < N; ++g) pv[g] = dd[g] = cm[g][3];
  for (int w = 2; w >= 1; --w)
    for (int g = 0; g < N; ++g) {
      pv[g] = _mm512_add_ps(_mm512_mul_ps(pv[g], x[g]), cm[g][w]);
      dd[g] = _mm512_add_ps(_mm512_mul_ps(dd[g], x[g]), pv[g]);
    }
  for (int g = 0; g < N; ++g) pv[g] = _mm512_add_ps(_mm512_mul_ps(pv[g], x[g]), cm[g][0]);
  for (int g = 0; g < N; ++g) {
    const __m512 dh = _mm512_mul_ps(dd[g], k.two_inv_ds);
    qm[g] = _mm512_mul_ps(qq[g], in_c[g]);
    t[g].f = _mm512_mul_ps(qm[g], _mm512_add_ps(_mm512_mul_ps(_mm512_mul_ps(fc[g], rinv[g]), r2i[g]), _mm512_mul_ps(k.two, dh)));
  }
  if (energy)
    for (int g = 0; g < N; ++g) {
      t[g].ecoul = _mm512_mul_ps(_mm512_mul_ps(fc[g], qm[g]), _mm512_sub_ps(rinv[g], pv[g]));
      const __m512 neg = _mm512_xor_ps(_mm512_sub_ps(k.one, fc[g]), k.sign);
      t[g].ecorr = _mm512_mul_ps(_mm512_mul_ps(neg, qm[g]), pv[g]);
      t[g].evdwl = _mm512_setzero_ps();
    }
  if (k.lj)
    for (int g = 0; g < N; ++g) {
      const __m512 in_l = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(r2[g], lc[g][0], _CMP_LT_OQ), fl[g]);
      const __m512 r6i = _mm512_mul_ps(_mm512_mul_ps(r2i[g], r2i[g]), r2i[g]);
      t[g].f = _mm512_add_ps(t[g].f, _mm512_mul_ps(_mm512_mul_ps(_mm512_mul_ps(in_l, r6i), _mm512_sub_ps(_mm512_mul_ps(lc[g][1], r6i), lc[g][2])), r2i[g]));
      if (energy)
        t[g].evdwl = _mm512_mul_ps(in_l, _mm512_sub_ps(_mm512_mul_ps(r6i, _mm512_sub_ps(_mm512_mul_ps(lc[g][3], r6i), lc[g][4])), lc[g][5]));
    }
}

// The fixed-point terms of 16 pairs: f[c][h] the force component c of lanes 8h .. 8h + 7, with
// `energy` e[h] and v[h]; ok_f and ok_e and-ed with the lanes' range masks (mixed_simd::Fixed's).
struct Fixed {
  __m512i f[3][2], e[2], v[2];
};
CUMULUS_AVX512_MIXED inline void widen(__m512 v, __m512d& lo, __m512d& hi) {
  lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
  hi = _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1));
}
// mixed_simd::fixed4 (fixed::units) on 8 lanes.
CUMULUS_AVX512_MIXED inline __m512i fixed8(__m512d v, __mmask8& ok) {
  const __m512d s = _mm512_mul_pd(v, _mm512_set1_pd(fixed::kUnit));
  ok &= _mm512_cmp_pd_mask(_mm512_abs_pd(s), _mm512_set1_pd(fixed::kLimit), _CMP_LE_OQ);
  const __m512i bits = _mm512_castpd_si512(_mm512_add_pd(s, _mm512_set1_pd(fixed::kMagic)));
  return _mm512_sub_epi64(bits, _mm512_set1_epi64(static_cast<long long>(fixed::kMagicBits)));
}
// mixed_simd::fixed4_in_range on 8 lanes.
CUMULUS_AVX512_MIXED inline __m512i fixed8_in_range(__m512d s) {
  const __m512i bits = _mm512_castpd_si512(_mm512_add_pd(s, _mm512_set1_pd(fixed::kMagic)));
  return _mm512_sub_epi64(bits, _mm512_set1_epi64(static_cast<long long>(fixed::kMagicBits)));
}
// mixed_simd::surely_in_range on 16 lanes.
CUMULUS_AVX512_MIXED inline bool surely_in_range(const Terms& t, __m512 r2, bool energy) {
  __mmask16 ok = _mm512_cmp_ps_mask(_mm512_abs_ps(t.f), _mm512_set1_ps(0x1p15f), _CMP_LE_OQ) &
                 _mm512_cmp_ps_mask(r2, _mm512_set1_ps(1024.0f), _CMP_LE_OQ);
  if (energy) {
    const __m512 e24 = _mm512_set1_ps(0x1p24f);
    ok &= _mm512_cmp_ps_mask(_mm512_abs_ps(t.evdwl), e24, _CMP_LE_OQ);
    ok &= _mm512_cmp_ps_mask(_mm512_abs_ps(t.ecoul), e24, _CMP_LE_OQ);
    ok &= _mm512_cmp_ps_mask(_mm512_abs_ps(t.ecorr), e24, _CMP_LE_OQ);
  }
  return ok == 0xFFFF;
}
template <bool Fast>
CUMULUS_AVX512_MIXED inline __m512i units8(__m512d v, __mmask8& ok) {
  if constexpr (Fast)
    return fixed8_in_range(v);
  else
    return fixed8(v, ok);
}
// mixed_simd::to_fixed_as on 16 lanes.
template <bool Fast>
CUMULUS_AVX512_MIXED __attribute__((always_inline)) inline void to_fixed_as(const Terms& t, __m512 dx, __m512 dy, __m512 dz,
                                                                             __m512 r2, bool energy, Fixed& out, __mmask8& ok_f,
                                                                             __mmask8& ok_e) {
  const __m512d unit = _mm512_set1_pd(fixed::kUnit);
  // The force components: fp32 products (fixed_terms'). In the fast case F/r is taken in units
  // first (exact; a product that this changes, one below fp32's normal range, is 0 units either
  // way) and each product converted to an integer directly (to nearest, ties to even: MXCSR's
  // default, as fixed::units rounds; within 2^44 units, exact in fp32's range).
  const __m512 comp[3] = {dx, dy, dz};
  if constexpr (Fast) {
    const __m512 fu = _mm512_mul_ps(t.f, _mm512_set1_ps(0x1p24f));
    for (int w = 0; w < 3; ++w) {
      const __m512 s = _mm512_mul_ps(comp[w], fu);
      out.f[w][0] = _mm512_cvtps_epi64(_mm512_castps512_ps256(s));
      out.f[w][1] = _mm512_cvtps_epi64(_mm512_extractf32x8_ps(s, 1));
    }
  } else {
    __m512d d2[2];
    for (int w = 0; w < 3; ++w) {
      widen(_mm512_mul_ps(comp[w], t.f), d2[0], d2[1]);
      for (int h = 0; h < 2; ++h) out.f[w][h] = fixed8(d2[h], ok_f);
    }
  }
  if (energy) {
    __m512d f2[2];
    widen(t.f, f2[0], f2[1]);
    if constexpr (Fast)
      for (int h = 0; h < 2; ++h) f2[h] = _mm512_mul_pd(f2[h], unit);
    __m512d ev[2], ec[2], ek[2], rr[2];
    widen(t.evdwl, ev[0], ev[1]);
    widen(t.ecoul, ec[0], ec[1]);
    widen(t.ecorr, ek[0], ek[1]);
    widen(r2, rr[0], rr[1]);
    for (int h = 0; h < 2; ++h) {
      __m512d e = _mm512_add_pd(_mm512_add_pd(ev[h], ec[h]), ek[h]);
      if constexpr (Fast) e = _mm512_mul_pd(e, unit);
      out.e[h] = units8<Fast>(e, ok_e);
      out.v[h] = units8<Fast>(_mm512_mul_pd(rr[h], f2[h]), ok_e);
    }
  }
}
CUMULUS_AVX512_MIXED __attribute__((always_inline)) inline void to_fixed(const Terms& t, __m512 dx, __m512 dy, __m512 dz, __m512 r2,
                                                                          bool energy, Fixed& out, __mmask8& ok_f, __mmask8& ok_e) {
  if (surely_in_range(t, r2, energy))
    to_fixed_as<true>(t, dx, dy, dz, r2, energy, out, ok_f, ok_e);
  else
    to_fixed_as<false>(t, dx, dy, dz, r2, energy, out, ok_f, ok_e);
}

CUMULUS_SIMD_WARNINGS_ON

}  // namespace cumulus::md::mixed_simd512
#endif
