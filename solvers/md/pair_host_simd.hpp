#pragma once
// What the host's hand-vectorised pair loops share (pair_lj_cut_coul_long_kernels.cpp in double,
// pair_lj_cut_coul_long_mixed_kernels.cpp in mixed precision): the special-partner cursor, the
// lane compaction of the AVX2 loops, the CPU check and the minimum image in AVX-512. Host code only.
#if !defined(__CUDACC__)
#include <cstdint>
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

// Compaction of 4 lanes by a 4-bit mask (AVX2 has no compress instruction): for each mask, the
// kept lanes first, in order. pd: 32-bit element indices for _mm256_permutevar8x32 over 4 64-bit
// lanes (two elements a lane); ps: lane indices for _mm_permutevar_ps over 4 32-bit lanes. The
// hand-written AVX2 pair loops keep only the pairs within reach before computing their terms.
struct Compact4 {
  alignas(32) std::int32_t pd[16][8];
  alignas(16) std::int32_t ps[16][4];
};
constexpr Compact4 make_compact4() {
  Compact4 t{};
  for (int m = 0; m < 16; ++m) {
    int n = 0;
    for (int l = 0; l < 4; ++l)
      if ((m >> l) & 1) {
        t.pd[m][2 * n] = 2 * l;
        t.pd[m][2 * n + 1] = 2 * l + 1;
        t.ps[m][n++] = l;
      }
    for (; n < 4; ++n) t.pd[m][2 * n] = 0, t.pd[m][2 * n + 1] = 1, t.ps[m][n] = 0;
  }
  return t;
}
inline constexpr Compact4 kCompact4 = make_compact4();

#if defined(__x86_64__)
// The AVX2 loops' first pass, 4 partners at a time: nb[q .. q + 4) of a chunk of m entries (the
// last one repeated past m: no read beyond the list).
__attribute__((target("avx2"))) inline __m128i partners4(const int* nb, int q, int m) {
  const int live = m - q < 4 ? m - q : 4;
  return live == 4 ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(nb + q))
                   : _mm_setr_epi32(nb[q], nb[q + (live > 1 ? 1 : 0)], nb[q + (live > 2 ? 2 : 0)], nb[q + (live > 3 ? 3 : 0)]);
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
