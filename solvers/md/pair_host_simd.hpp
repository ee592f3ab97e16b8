#pragma once
// What the host's hand-vectorised pair loops share (pair_lj_cut_coul_long_kernels.cpp in double,
// pair_lj_cut_coul_long_mixed_kernels.cpp in mixed precision): the special-partner cursor, the
// AVX2 loops' lane compaction, row loads and transposes, fp32 first pass (pack_filter32,
// filter_chunk: the double AVX2 loop's) and minimum-image constants,
// the CPU check and the minimum image in AVX-512. Host code only. (The double AVX-512 loop keeps
// its fp64 first pass: the fp32 one measured no faster there, 2026-12-04.)
#if !defined(__CUDACC__)
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "solvers/md/md_kernels.hpp"

namespace cumulus::md::pair_simd {

// Atom i's special partners as a cursor: partners' ids ascend along a list and along i's specials.
struct SpecialCursor {
  const Atoms* a;
  int i, k = 0;
  int level(std::int64_t idj) {
    for (; k < a->nspecial; ++k) {
      const std::int64_t v = a->special[k][i];
      if (v < 0 || (v >> 2) > idj) return 0;
      if ((v >> 2) == idj) return static_cast<int>(v & 3);
    }
    return 0;
  }
  // Whether every special partner is behind (level() returns 0 from here on).
  bool exhausted() const { return k >= a->nspecial || a->special[k][i] < 0; }
};

// Compaction of 8 lanes of 32 bits by an 8-bit mask (AVX2 has no compress instruction): for each
// mask, _mm256_permutevar8x32 indices putting the kept lanes first, in order (8 KB): the AVX2
// loops' fp32 first pass, 8 partners at a time.
struct Compact8 {
  alignas(32) std::int32_t idx[256][8];
};
constexpr Compact8 make_compact8() {
  Compact8 t{};
  for (int m = 0; m < 256; ++m) {
    int n = 0;
    for (int l = 0; l < 8; ++l)
      if ((m >> l) & 1) t.idx[m][n++] = l;
    for (; n < 8; ++n) t.idx[m][n] = 0;
  }
  return t;
}
inline constexpr Compact8 kCompact8 = make_compact8();

#if defined(__x86_64__)
// The 8 partners' rows of fp32 x, y, z, w (4 floats an atom, 16-byte aligned) loaded whole and
// transposed into out[0 .. 3] = x, y, z, w of the 8 lanes (lane k: partner jj[k]).
__attribute__((target("avx2"))) inline void rows8(const float* xyzw, const int* jj, __m256 out[4]) {
  __m256 r[4];
  for (int k = 0; k < 4; ++k)
    r[k] = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_load_ps(xyzw + 4 * static_cast<std::ptrdiff_t>(jj[k]))),
                                _mm_load_ps(xyzw + 4 * static_cast<std::ptrdiff_t>(jj[k + 4])), 1);
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);  // x0 x1 y0 y1, z0 z1 w0 w1
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  out[0] = _mm256_shuffle_ps(t0, t2, 0x44);
  out[1] = _mm256_shuffle_ps(t0, t2, 0xee);
  out[2] = _mm256_shuffle_ps(t1, t3, 0x44);
  out[3] = _mm256_shuffle_ps(t1, t3, 0xee);
}
// The 4 partners' rows of x, y, z, q (4 doubles an atom, 32-byte aligned) loaded whole and
// transposed 4 x 4 into out[0 .. 3] = x, y, z, q of the 4 lanes (no gathers).
__attribute__((target("avx2"))) inline void rows4(const double* xyzq, __m128i j, __m256d out[4]) {
  const __m256d r0 = _mm256_load_pd(xyzq + 4 * _mm_extract_epi32(j, 0));
  const __m256d r1 = _mm256_load_pd(xyzq + 4 * _mm_extract_epi32(j, 1));
  const __m256d r2 = _mm256_load_pd(xyzq + 4 * _mm_extract_epi32(j, 2));
  const __m256d r3 = _mm256_load_pd(xyzq + 4 * _mm_extract_epi32(j, 3));
  const __m256d a0 = _mm256_unpacklo_pd(r0, r1), a1 = _mm256_unpackhi_pd(r0, r1);
  const __m256d a2 = _mm256_unpacklo_pd(r2, r3), a3 = _mm256_unpackhi_pd(r2, r3);
  out[0] = _mm256_permute2f128_pd(a0, a2, 0x20);
  out[1] = _mm256_permute2f128_pd(a1, a3, 0x20);
  out[2] = _mm256_permute2f128_pd(a0, a2, 0x31);
  out[3] = _mm256_permute2f128_pd(a1, a3, 0x31);
}

// The AVX2 loops' first pass decides in fp32, 8 lanes at a time, which list entries can be within
// reach; their second pass computes the kept pairs' separations and terms as before (fp64 rows,
// the minimum image of the generic loop), so the terms' bits do not depend on the filter. It must
// never drop a pair whose separation is within reach: its threshold is the reach widened by a
// bound on the fp32 errors. Each coordinate's rounding to fp32 is within 2^-24 of its size, and so
// is each operation's; with X the largest coordinate and L the largest box length, a component of
// the separation (rounded coordinates, difference, minus n L for n = round(d / L), which may take
// the other image than fp64's only where the two are within these errors of L / 2) is within
// eps = 2^-20 (X + L) of fp64's, 3 eps counting the other image, so r within 6 eps; the threshold
// is (reach + 8 eps)^2, widened by 2^-19 for the rounding of r^2, rounded up to fp32. A NaN or an
// infinite coordinate makes r^2 NaN (kept, as in fp64) or the threshold infinite (all kept).
struct Filter32 {
  const float* xyzt = nullptr;  // each local atom's fp32 x, y, z and its type's bits (16 bytes)
  float reach2 = 0;
};
inline Filter32 pack_filter32(const Atoms& a, int n, double reach2, std::vector<float>& buf) {
  buf.resize(4 * static_cast<std::size_t>(n) + 4);
  float* const f0 = buf.data() + (4 - (reinterpret_cast<std::uintptr_t>(buf.data()) / sizeof(float)) % 4) % 4;
  double big = 0;
  for (int i = 0; i < n; ++i) {
    float* const f = f0 + 4 * static_cast<std::size_t>(i);
    f[0] = static_cast<float>(a.x[i]), f[1] = static_cast<float>(a.y[i]), f[2] = static_cast<float>(a.z[i]);
    const std::int32_t t = a.type[i];
    std::memcpy(f + 3, &t, sizeof t);
    const double m = std::max(std::fabs(a.x[i]), std::max(std::fabs(a.y[i]), std::fabs(a.z[i])));
    if (!(m <= big)) big = m;  // NaN stays (a NaN threshold keeps every pair)
  }
  const double L = std::max(a.box[0], std::max(a.box[1], a.box[2]));
  const double eps = 0x1p-20 * (big + L), r = std::sqrt(reach2) + 8 * eps;
  Filter32 out;
  out.xyzt = f0;
  out.reach2 = std::nextafter(static_cast<float>(r * r * (1 + 0x1p-19)), std::numeric_limits<float>::infinity());
  return out;
}

// Four columns of 4 lanes (x, y, z, w) to four rows (x_l, y_l, z_l, w_l), l = 0 .. 3: the
// half lists' additions on rows of 4 (bit moves only: for fp64 and, cast, for int64).
__attribute__((target("avx2"))) inline void columns_to_rows4(__m256d x, __m256d y, __m256d z, __m256d w, __m256d row[4]) {
  const __m256d a0 = _mm256_unpacklo_pd(x, y), a1 = _mm256_unpackhi_pd(x, y);  // x0 y0 x2 y2, x1 y1 x3 y3
  const __m256d b0 = _mm256_unpacklo_pd(z, w), b1 = _mm256_unpackhi_pd(z, w);  // z0 w0 z2 w2, z1 w1 z3 w3
  row[0] = _mm256_permute2f128_pd(a0, b0, 0x20);
  row[1] = _mm256_permute2f128_pd(a1, b1, 0x20);
  row[2] = _mm256_permute2f128_pd(a0, b0, 0x31);
  row[3] = _mm256_permute2f128_pd(a1, b1, 0x31);
}

// The minimum image's constants on 4 fp64 lanes (the AVX2 loops' separations): each axis's L,
// L / 2 and -(L / 2).
struct Image4 {
  __m256d L[3], h[3], mh[3];
};
__attribute__((target("avx2"))) inline Image4 image_consts4(const double* box) {
  Image4 c;
  for (int d = 0; d < 3; ++d) {
    c.L[d] = _mm256_set1_pd(box[d]);
    c.h[d] = _mm256_set1_pd(0.5 * box[d]);
    c.mh[d] = _mm256_set1_pd(-(0.5 * box[d]));
  }
  return c;
}

// The 8 list entries from q of nb[0 .. m) for an 8-lane pass: nb + q, or where fewer than 8 are
// left, `tail` holding them with the last one repeated (no read beyond the list).
inline const int* entries8(const int* nb, int q, int m, int* tail) {
  const int live = m - q < 8 ? m - q : 8;
  if (live == 8) return nb + q;
  for (int k = 0; k < 8; ++k) tail[k] = nb[q + (k < live ? k : live - 1)];
  return tail;
}

// The AVX2 loops' first pass over atom i's list entries nb[0 .. m) (a chunk): 8 at a
// time in fp32, the minimum image by rounding, those whose r^2 is not at or beyond f.reach2 (NaN
// kept) compacted in list order into j, their types into type when several_types (each array with
// room for 8 entries past the last kept one: the compacted vector is stored whole, at most at the
// entry it came from). Returns how many were kept.
__attribute__((target("avx2"))) inline int filter_chunk(const Filter32& f, const Atoms& a, int i, const int* nb, int m,
                                                        bool several_types, int* j, int* type) {
  __m256 ci[3], L[3], iL[3];
  const double* const xi[3] = {a.x, a.y, a.z};
  for (int d = 0; d < 3; ++d) {
    ci[d] = _mm256_set1_ps(static_cast<float>(xi[d][i]));
    L[d] = _mm256_set1_ps(static_cast<float>(a.box[d]));
    iL[d] = _mm256_set1_ps(static_cast<float>(1.0 / a.box[d]));
  }
  const __m256 reach2 = _mm256_set1_ps(f.reach2);
  const float* const xyzt = f.xyzt;
  alignas(32) int tail[8];
  int mc = 0;
  for (int q = 0; q < m; q += 8) {
    const int live = m - q < 8 ? m - q : 8;
    const int* const jj = entries8(nb, q, m, tail);
    __m256 pos[4];  // x, y, z, type bits
    rows8(xyzt, jj, pos);
    __m256 r2 = _mm256_setzero_ps();
    for (int d = 0; d < 3; ++d) {
      __m256 dd = _mm256_sub_ps(ci[d], pos[d]);
      const __m256 n = _mm256_round_ps(_mm256_mul_ps(dd, iL[d]), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      dd = _mm256_sub_ps(dd, _mm256_mul_ps(L[d], n));
      r2 = _mm256_add_ps(r2, _mm256_mul_ps(dd, dd));
    }
    const int keep = _mm256_movemask_ps(_mm256_cmp_ps(r2, reach2, _CMP_NGE_UQ)) & ((1 << live) - 1);
    const __m256i perm = _mm256_load_si256(reinterpret_cast<const __m256i*>(kCompact8.idx[keep]));
    const __m256i jv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(jj));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(j + mc), _mm256_permutevar8x32_epi32(jv, perm));
    if (several_types)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(type + mc), _mm256_permutevar8x32_epi32(_mm256_castps_si256(pos[3]), perm));
    mc += __builtin_popcount(static_cast<unsigned>(keep));
  }
  return mc;
}

// How many list entries a hand-written loop takes per chunk: `most` (its arrays' length), or fewer
// where CUMULUS_PAIR_CHUNK is set in the environment (rounded down to a multiple of 16, at least
// 16): the tests make rows of a few hundred entries cross chunks with it. Read at each force call,
// before the parallel regions, as CUMULUS_NO_AVX512 is. The chunks change no bits.
inline int chunk_entries(int most) {
  const char* v = std::getenv("CUMULUS_PAIR_CHUNK");
  if (!v) return most;
  const int n = std::atoi(v) / 16 * 16;
  return n < 16 ? 16 : (n > most ? most : n);
}

inline bool has_avx512() { return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl"); }
// minimum_image on 8 lanes: d - L above L/2, d + L below -L/2 (the same results).
__attribute__((target("avx512f,avx512vl"))) inline __m512d image512(__m512d d, __m512d L, __m512d h, __m512d mh) {
  const __mmask8 gt = _mm512_cmp_pd_mask(d, h, _CMP_GT_OQ);
  const __mmask8 lt = _mm512_cmp_pd_mask(d, mh, _CMP_LT_OQ);
  return _mm512_mask_add_pd(_mm512_mask_sub_pd(d, gt, d, L), static_cast<__mmask8>(lt & ~gt), d, L);
}
#endif

}  // namespace cumulus::md::pair_simd
#endif
