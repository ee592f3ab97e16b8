// Kernel bodies of lj/cut/coul/long and coul/long (one source per backend pass:
// core/kernel_pass.hpp). Plain loops: each owned atom sums its pairs in list order (ascending
// partner id), so the full list, the half list and CUDA give the same bits.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <functional>
#include <thread>
#include <type_traits>
#include <vector>
#if !defined(__CUDACC__)
#include <omp.h>
#endif
#if defined(__x86_64__) && !defined(__CUDACC__)
#include <immintrin.h>
#endif

#include "core/macros.hpp"
#include "solvers/md/pair_lj_cut_coul_long.hpp"
#include "solvers/md/pair_host_simd.hpp"

namespace cumulus::md {
namespace coul_kernels::CUMULUS_PASS {

namespace {
CUMULUS_HD inline const LjCoefficients& coefficients(const Atoms& a, const LjTable& lj, int i, int j) {
  return lj.c[lj.ntypes == 1 ? 0 : a.type[i] * lj.ntypes + a.type[j]];
}
CUMULUS_HD inline double share(int which, double dx, double dy, double dz, const CoulTerms& t) {
  switch (which) {
    case 0:
      return dx * dx * t.fpair;
    case 1:
      return dy * dy * t.fpair;
    case 2:
      return dz * dz * t.fpair;
    case 3:
      return dx * dy * t.fpair;
    case 4:
      return dx * dz * t.fpair;
    case 5:
      return dy * dz * t.fpair;
    case 6:
      return t.evdwl;
    case 7:
      return t.ecoul;
    default:
      return t.ecorr;
  }
}
}  // namespace

// One owned atom's pairs over the full list: its force, and half of each pair's energy and virial.
CUMULUS_HD inline void coul_atom(const Atoms& a, const LjTable& lj, const CoulParams& p, int i, bool energy) {
  const double xi = a.x[i], yi = a.y[i], zi = a.z[i], qi = a.q[i];
  double fx = 0, fy = 0, fz = 0, pe = 0, vir = 0;
  for (std::int64_t k = a.start[i]; k < a.start[i + 1]; ++k) {
    const int j = a.neighbors[k];
    const double dx = minimum_image(xi - a.x[j], a.box[0]), dy = minimum_image(yi - a.y[j], a.box[1]),
                 dz = minimum_image(zi - a.z[j], a.box[2]);
    const double r2 = dx * dx + dy * dy + dz * dz;
    const int level = a.nspecial > 0 ? special_level(a, i, a.id[j]) : 0;
    const CoulTerms t = coul_pair(coefficients(a, lj, i, j), p, r2, qi * a.q[j], level);
    fx += dx * t.fpair;
    fy += dy * t.fpair;
    fz += dz * t.fpair;
    pe += t.evdwl + t.ecoul + t.ecorr;
    vir += r2 * t.fpair;
  }
  a.fx[i] = fx;
  a.fy[i] = fy;
  a.fz[i] = fz;
  if (energy) {
    a.pe[i] = 0.5 * pe;
    a.virial[i] = 0.5 * vir;
  }
}

#if !defined(__CUDACC__)
// The host's loops are compiled three times and chosen at run time (as lj/cut's): with FMA in the
// instruction set, hd::erfc's and hd::exp's fused multiply-adds are single instructions rather
// than calls into libm (which took a fifth of the time); an FMA is correctly rounded either way, and
// the build forbids contraction (-ffp-contract=off), so every version gives the same bits.
#define CUMULUS_COUL_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
namespace {
using pair_simd::SpecialCursor;
#if defined(__x86_64__)
using pair_simd::has_avx512;
using pair_simd::image512;
using pair_simd::rows4;
#endif

// The tabulated terms of a chunk of one atom's neighbours (md.coul_table): the partners' indices,
// types and special levels gathered first (in list order, so the special partners merge with the
// list: both ascending in id), then coul_pair_tabulated over the chunk into t = (dx fpair,
// dy fpair, dz fpair, evdwl + ecoul + ecorr, r^2 fpair): coul_atom's very products, so the bits of
// coul_atom. The generic loop (coul_chunk_terms) stays scalar: GCC 12 does not vectorise its
// gathers at the generic tuning; the AVX-512 loop below (coul_chunk_avx512) is that loop by hand.
// Loops run over whole vectors of 8; lanes past m repeat the last partner and are never read.
// 256 entries a chunk: water's rows (about 350 entries at 12 A) in two, where chunks of 64 cost
// each row six rounds of the passes' set-up, loop exits and padding (one thread, user time of the
// water case: 4-7 % less in double, 8-10 % in mixed); long enough rows still cross chunks in the tests.
constexpr int kChunk = 256;
constexpr int kLanes = 8;
// The entries a chunk takes this force call (pair_simd::chunk_entries: kChunk, or fewer in the
// tests), set by coul_fast before any parallel region.
int chunk_len = kChunk;
struct alignas(64) CoulChunk {
  // The AVX-512 loop stores whole vectors of 8 at the count kept so far, which is at most the
  // entry the vector starts at (a multiple of 8 below kChunk): they end within the arrays.
  int j[kChunk], level[kChunk], type[kChunk], line[kChunk];  // line: the table's interval (AVX2)
  double dx[kChunk], dy[kChunk], dz[kChunk], r2[kChunk], qj[kChunk];  // the AVX-512 loop's kept pairs
  double f[kChunk], ev[kChunk], ec[kChunk], ek[kChunk];  // F / r and the three energies (AVX-512)
  double x[kChunk];  // the AVX2 loop's place in the table's interval
  // The kept pairs' terms: the chunk's own arrays, or (a thread that stores its rows for the
  // replay) where it stores them: written there directly, no copy (coul_forces_half). Room for
  // whole vectors past the count kept, as above.
  double* tx = own_[0];
  double* ty = own_[1];
  double* tz = own_[2];
  double* te = own_[3];
  double* tv = own_[4];
  void own_terms() { tx = own_[0], ty = own_[1], tz = own_[2], te = own_[3], tv = own_[4]; }
  CoulChunk() = default;
  CoulChunk(const CoulChunk&) = delete;  // the pointers are into this object
  CoulChunk& operator=(const CoulChunk&) = delete;

 private:
  alignas(64) double own_[5][kChunk];
};
inline int padded(int m) { return (m + kLanes - 1) / kLanes * kLanes; }

// minimum_image as an added shift: the same result (d + -L is d - L) but for the sign of a zero
// difference, whose terms are zeros either way; GCC if-converts a choice between constants, not
// one between subtractions (which might raise a floating-point exception), and vectorises only then.
inline double image(double d, double L) {
  const double h = 0.5 * L;
  return d + (d > h ? -L : (d < -h ? L : 0.0));
}

// The loop, with the energy, the LJ part and a single type made constants (each its own loop, no
// branch inside) and the parameters a local copy (no aliasing with the chunk's stores).
template <bool kEnergy, bool kLj, bool kOneType>
__attribute__((always_inline)) inline void coul_chunk_loop(int mp, const Atoms& a, const LjCoefficients* row,
                                                           const CoulParams p, int i, CoulChunk& c) {
  const double xi = a.x[i], yi = a.y[i], zi = a.z[i], qi = a.q[i];
  const double bx = a.box[0], by = a.box[1], bz = a.box[2];
  const double* __restrict x = a.x;
  const double* __restrict y = a.y;
  const double* __restrict z = a.z;
  const double* __restrict q = a.q;
  double* __restrict tx = c.tx;  // (the terms' arrays alias nothing the loop reads)
  double* __restrict ty = c.ty;
  double* __restrict tz = c.tz;
  double* __restrict te = c.te;
  double* __restrict tv = c.tv;
  for (int k = 0; k < mp; ++k) {
    const int j = c.j[k];
    const double dx = image(xi - x[j], bx), dy = image(yi - y[j], by), dz = image(zi - z[j], bz);
    const double r2 = dx * dx + dy * dy + dz * dz;
    const int lev = c.level[k];
    double fpair, evdwl, ecoul, ecorr;
    coul_pair_tabulated(p, row[kOneType ? 0 : c.type[k]], r2, p.qqr2e * (qi * q[j]), p.special_coul[lev],
                        p.special_lj[lev], kLj, &fpair, &evdwl, &ecoul, &ecorr);
    tx[k] = dx * fpair;
    ty[k] = dy * fpair;
    tz[k] = dz * fpair;
    if (kEnergy) {
      te[k] = evdwl + ecoul + ecorr;
      tv[k] = r2 * fpair;
    }
  }
}

CUMULUS_COUL_CLONES void coul_chunk_terms(int m, const Atoms& a, const LjTable& lj, const CoulParams& p, int i,
                                          bool energy, CoulChunk& c) {
  const int mp = padded(m);
  const LjCoefficients* row = lj.c + (lj.ntypes == 1 ? 0 : a.type[i] * lj.ntypes);
  // The three flags as template arguments, one at a time.
  auto with_types = [&](auto e, auto l) {
    if (lj.ntypes == 1)
      coul_chunk_loop<decltype(e)::value, decltype(l)::value, true>(mp, a, row, p, i, c);
    else
      coul_chunk_loop<decltype(e)::value, decltype(l)::value, false>(mp, a, row, p, i, c);
  };
  auto with_lj = [&](auto e) {
    if (p.lj)
      with_types(e, std::true_type{});
    else
      with_types(e, std::false_type{});
  };
  if (energy)
    with_lj(std::true_type{});
  else
    with_lj(std::false_type{});
}

// What the hand-written loops need beyond CoulParams, prepared once per force call: the reach (the
// largest cutoff: pairs beyond it are dropped, their terms being zeros), up to 8 types, each
// type's row of LJ coefficients field by field (lane t: partner type t), for permutations, and
// which types have no LJ at all (water's hydrogens: the AVX-512 and AVX2 loops skip the LJ part of
// their rows, whose terms are +0 and change no sum).
constexpr int kFields = sizeof(LjCoefficients) / sizeof(double);
struct CoulFast {
  const double* xyzq = nullptr;  // each local atom's x, y, z, q together (32 bytes)
  double reach2 = 0;
  bool few_types = false;
  bool no_lj[8] = {};
  alignas(64) double fields[8][kFields][8] = {};
  alignas(64) double special_coul[8] = {}, special_lj[8] = {};
  void init(const LjTable& lj, const CoulParams& p) {
    reach2 = p.cut2;
    few_types = lj.ntypes <= 8;
    for (int t = 0; t < lj.ntypes * lj.ntypes && p.lj; ++t) reach2 = reach2 > lj.c[t].cut2 ? reach2 : lj.c[t].cut2;
    if (few_types)
      for (int ti = 0; ti < lj.ntypes; ++ti) {
        no_lj[ti] = true;
        for (int tj = 0; tj < lj.ntypes; ++tj) {
          const LjCoefficients& c = lj.c[ti * lj.ntypes + tj];
          const double* f = &c.cut2;
          for (int k = 0; k < kFields; ++k) fields[ti][k][tj] = f[k];
          if (c.lj1 != 0 || c.lj2 != 0 || c.lj3 != 0 || c.lj4 != 0 || c.offset != 0) no_lj[ti] = false;
        }
      }
    for (int l = 0; l < 4; ++l) special_coul[l] = p.special_coul[l], special_lj[l] = p.special_lj[l];
  }
  // Whether type ti's pairs have no LJ part (every coefficient 0: F/r and the energy get +0).
  bool skip_lj(int ti) const { return few_types && no_lj[ti]; }
};

#if defined(__x86_64__)
CUMULUS_SIMD_WARNINGS_OFF  // core/macros.hpp
// coul_chunk_terms by hand in AVX-512 (GCC 12 does not vectorise the gathers from the atoms and
// the table at its generic tuning): coul_pair_tabulated's operations in its order, lane by lane, so
// the same bits. Lanes past m repeat the last partner (the chunk's padding) and are never read.
// All eight lanes (the masked form: GCC 12's unmasked one warns of an uninitialised source).
__attribute__((target("avx512f,avx512vl"))) inline __m512d gather(__m256i idx, const double* base) {
  return _mm512_mask_i32gather_pd(_mm512_setzero_pd(), static_cast<__mmask8>(0xFF), idx, base, 8);
}
// Two passes over a chunk of atom i's list: (1) the partners' separations, keeping (compressed, in
// list order) those within the reach, typically 60 % of a list with a 2 A skin, and those whose
// r^2 is NaN (their forces NaN, as the generic loop's); (2) the terms of the kept ones. Returns
// how many were kept: their partners in c.j, their terms in c.tx ...
__attribute__((target("avx512f,avx512vl"))) int coul_chunk_avx512(int m, const int* nb, const Atoms& a,
                                                                  const LjTable& lj, const CoulParams& p,
                                                                  const CoulFast& cf, int i, SpecialCursor& sc,
                                                                  bool energy, CoulChunk& c) {
  const __m512d one = _mm512_set1_pd(1.0), two = _mm512_set1_pd(2.0), zero = _mm512_setzero_pd();
  const __m512d xi = _mm512_set1_pd(a.x[i]), yi = _mm512_set1_pd(a.y[i]), zi = _mm512_set1_pd(a.z[i]);
  // (1) separations
  int mc = 0;
  {
    __m512d L[3], h[3], mh[3];
    for (int d = 0; d < 3; ++d) {
      L[d] = _mm512_set1_pd(a.box[d]);
      h[d] = _mm512_set1_pd(0.5 * a.box[d]);
      mh[d] = _mm512_set1_pd(-(0.5 * a.box[d]));
    }
    const __m512d reach2 = _mm512_set1_pd(cf.reach2);
    for (int q = 0; q < m; q += 8) {
      const __mmask8 live = m - q >= 8 ? __mmask8(0xFF) : __mmask8((1u << (m - q)) - 1u);
      const __m256i j = _mm256_maskz_loadu_epi32(live, nb + q);
      // The 8 partners' (x, y, z, q), 32 bytes each, loaded whole and transposed (12 shuffles
      // where 4 gathers cost more); dead lanes read atom 0 and are not kept.
      alignas(32) int jj[8];
      _mm256_store_si256(reinterpret_cast<__m256i*>(jj), j);
      const double* const pk = cf.xyzq;
      __m512d pr[4];
      for (int l = 0; l < 4; ++l)
        pr[l] = _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_loadu_pd(pk + 4 * jj[2 * l])),
                                   _mm256_loadu_pd(pk + 4 * jj[2 * l + 1]), 1);
      const __m512d t0 = _mm512_unpacklo_pd(pr[0], pr[1]), t1 = _mm512_unpackhi_pd(pr[0], pr[1]);
      const __m512d t2 = _mm512_unpacklo_pd(pr[2], pr[3]), t3 = _mm512_unpackhi_pd(pr[2], pr[3]);
      const __m512i even = _mm512_setr_epi64(0, 4, 1, 5, 8, 12, 9, 13),
                    odd = _mm512_setr_epi64(2, 6, 3, 7, 10, 14, 11, 15);
      const __m512d xj = _mm512_permutex2var_pd(t0, even, t2), zj = _mm512_permutex2var_pd(t0, odd, t2);
      const __m512d yj = _mm512_permutex2var_pd(t1, even, t3), qj = _mm512_permutex2var_pd(t1, odd, t3);
      const __m512d dx = image512(_mm512_sub_pd(xi, xj), L[0], h[0], mh[0]);
      const __m512d dy = image512(_mm512_sub_pd(yi, yj), L[1], h[1], mh[1]);
      const __m512d dz = image512(_mm512_sub_pd(zi, zj), L[2], h[2], mh[2]);
      const __m512d r2 =
          _mm512_add_pd(_mm512_add_pd(_mm512_mul_pd(dx, dx), _mm512_mul_pd(dy, dy)), _mm512_mul_pd(dz, dz));
      const __mmask8 keep = _mm512_mask_cmp_pd_mask(live, r2, reach2, _CMP_NGE_UQ);  // NaN kept
      // Compressed in registers and stored whole (the lanes past the kept ones are overwritten or
      // never read; see CoulChunk): a compressing store to memory is microcoded on
      // AMD Zen 4, about 65 % of this loop's time there (perf annotate, water case), where the
      // register form is a few cycles.
      _mm512_storeu_pd(c.dx + mc, _mm512_maskz_compress_pd(keep, dx));
      _mm512_storeu_pd(c.dy + mc, _mm512_maskz_compress_pd(keep, dy));
      _mm512_storeu_pd(c.dz + mc, _mm512_maskz_compress_pd(keep, dz));
      _mm512_storeu_pd(c.r2 + mc, _mm512_maskz_compress_pd(keep, r2));
      _mm512_storeu_pd(c.qj + mc, _mm512_maskz_compress_pd(keep, qj));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(c.j + mc), _mm256_maskz_compress_epi32(keep, j));
      mc += __builtin_popcount(keep);
    }
  }
  if (mc == 0) return 0;
  // Padding to whole vectors: atom i itself at a unit distance (finite terms, never read).
  const int mp = padded(mc);
  for (int k = mc; k < mp; ++k) {
    c.dx[k] = c.dy[k] = c.dz[k] = 0;
    c.r2[k] = 1;
    c.qj[k] = 0;
    c.j[k] = i;
  }
  if (a.nspecial > 0) {  // partners ascend in id: past i's last special partner, every level is 0
    for (int k = 0; k < mp; ++k) c.level[k] = 0;
    for (int k = 0; k < mc && !sc.exhausted(); ++k) c.level[k] = sc.level(a.id[c.j[k]]);
  }
  // (2) terms: coul_pair_tabulated
  const __m512i sign = _mm512_set1_epi64(static_cast<long long>(0x8000000000000000ULL));
  const __m512d qi = _mm512_set1_pd(a.q[i]), qqr2e = _mm512_set1_pd(p.qqr2e), cut2 = _mm512_set1_pd(p.cut2);
  const __m512d smax = _mm512_set1_pd(p.table.smax), inv_ds = _mm512_set1_pd(p.table.inv_ds);
  const __m512d two_inv_ds = _mm512_set1_pd(2 * p.table.inv_ds);
  const __m256i last = _mm256_set1_epi32(p.table.n - 1);
  const double* const tc = p.table.c;
  const bool one_type = lj.ntypes == 1, special = a.nspecial > 0;
  const int ti = one_type ? 0 : a.type[i];
  const double* const rowd = &lj.c[ti * lj.ntypes].cut2;  // kFields doubles per partner type
  // The row's LJ part, unless all of it is +0 (water's hydrogens' rows): F/r + 0 and 0 + ... change
  // no bit of a sum, as in the AVX2 loop.
  const bool with_lj = p.lj && !cf.skip_lj(ti);
  __m512d rowv[kFields];
  if (with_lj && cf.few_types)
    for (int k = 0; k < kFields; ++k) rowv[k] = one_type ? _mm512_set1_pd(rowd[k]) : _mm512_load_pd(cf.fields[ti][k]);
  const __m512d scv = _mm512_load_pd(cf.special_coul), slv = _mm512_load_pd(cf.special_lj);
  for (int q = 0; q < mp; q += 8) {
    const __m256i j = _mm256_load_si256(reinterpret_cast<const __m256i*>(c.j + q));
    const __m512d dx = _mm512_load_pd(c.dx + q), dy = _mm512_load_pd(c.dy + q), dz = _mm512_load_pd(c.dz + q);
    const __m512d r2 = _mm512_load_pd(c.r2 + q);
    const __m512d qq = _mm512_mul_pd(qqr2e, _mm512_mul_pd(qi, _mm512_load_pd(c.qj + q)));
    __m512d fc = one, fl = one;
    if (special) {
      const __m512i lev = _mm512_cvtepi32_epi64(_mm256_load_si256(reinterpret_cast<const __m256i*>(c.level + q)));
      fc = _mm512_permutexvar_pd(lev, scv);
      fl = _mm512_permutexvar_pd(lev, slv);
    }
    const __m512d in_c = _mm512_maskz_mov_pd(_mm512_cmp_pd_mask(r2, cut2, _CMP_LT_OQ), one);
    const __m512d rinv = _mm512_div_pd(one, _mm512_sqrt_pd(r2)), r2i = _mm512_mul_pd(rinv, rinv);
    // coul_table_eval
    const __m512d v = _mm512_mul_pd(_mm512_min_pd(r2, smax), inv_ds);
    const __m256i k = _mm256_min_epi32(_mm512_cvttpd_epi32(v), last);
    const __m512d x = _mm512_sub_pd(_mm512_mul_pd(two, _mm512_sub_pd(v, _mm512_cvtepi32_pd(k))), one);
    // The 8 lanes' coefficient lines (64 bytes each), loaded whole and transposed: 8 loads and 24
    // shuffles where 8 gathers cost more (measured: 6.2 against 7.2 ms per step for the real space of molten NaCl,
    // 10,648 ions).
    alignas(32) int kk[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(kk), k);
    __m512d cf8[8];
    {
      __m512d r[8], t[8], u[8];
      for (int l = 0; l < 8; ++l) r[l] = _mm512_loadu_pd(tc + 8 * kk[l]);
      for (int l = 0; l < 8; l += 2) {
        t[l] = _mm512_unpacklo_pd(r[l], r[l + 1]);
        t[l + 1] = _mm512_unpackhi_pd(r[l], r[l + 1]);
      }
      for (int g = 0; g < 8; g += 4) {
        u[g + 0] = _mm512_shuffle_f64x2(t[g + 0], t[g + 2], 0x88);
        u[g + 1] = _mm512_shuffle_f64x2(t[g + 0], t[g + 2], 0xDD);
        u[g + 2] = _mm512_shuffle_f64x2(t[g + 1], t[g + 3], 0x88);
        u[g + 3] = _mm512_shuffle_f64x2(t[g + 1], t[g + 3], 0xDD);
      }
      cf8[0] = _mm512_shuffle_f64x2(u[0], u[4], 0x88);
      cf8[4] = _mm512_shuffle_f64x2(u[0], u[4], 0xDD);
      cf8[2] = _mm512_shuffle_f64x2(u[1], u[5], 0x88);
      cf8[6] = _mm512_shuffle_f64x2(u[1], u[5], 0xDD);
      cf8[1] = _mm512_shuffle_f64x2(u[2], u[6], 0x88);
      cf8[5] = _mm512_shuffle_f64x2(u[2], u[6], 0xDD);
      cf8[3] = _mm512_shuffle_f64x2(u[3], u[7], 0x88);
      cf8[7] = _mm512_shuffle_f64x2(u[3], u[7], 0xDD);
    }
    __m512d pv = cf8[7], dv = pv;
    for (int mm = 6; mm >= 1; --mm) {
      pv = _mm512_add_pd(_mm512_mul_pd(pv, x), cf8[mm]);
      dv = _mm512_add_pd(_mm512_mul_pd(dv, x), pv);
    }
    pv = _mm512_add_pd(_mm512_mul_pd(pv, x), cf8[0]);
    const __m512d dh = _mm512_mul_pd(dv, two_inv_ds);
    const __m512d qm = _mm512_mul_pd(qq, in_c);
    __m512d f = _mm512_mul_pd(qm, _mm512_add_pd(_mm512_mul_pd(_mm512_mul_pd(fc, rinv), r2i), _mm512_mul_pd(two, dh)));
    const __m512d ecoul = _mm512_mul_pd(_mm512_mul_pd(fc, qm), _mm512_sub_pd(rinv, pv));
    const __m512d neg = _mm512_castsi512_pd(_mm512_xor_si512(_mm512_castpd_si512(_mm512_sub_pd(one, fc)), sign));
    const __m512d ecorr = _mm512_mul_pd(_mm512_mul_pd(neg, qm), pv);
    __m512d evdwl = zero;
    if (with_lj) {
      // The partner type's coefficients: a permutation of the row's up to 8 types, gathers beyond.
      __m512d lcut2, lj1, lj2, lj3, lj4, off;
      if (one_type) {
        lcut2 = rowv[0], lj1 = rowv[1], lj2 = rowv[2], lj3 = rowv[3], lj4 = rowv[4], off = rowv[5];
      } else {
        const __m256i t = _mm256_mmask_i32gather_epi32(_mm256_setzero_si256(), __mmask8(0xFF), j, a.type, 4);
        if (cf.few_types) {
          const __m512i t64 = _mm512_cvtepi32_epi64(t);
          lcut2 = _mm512_permutexvar_pd(t64, rowv[0]);
          lj1 = _mm512_permutexvar_pd(t64, rowv[1]);
          lj2 = _mm512_permutexvar_pd(t64, rowv[2]);
          lj3 = _mm512_permutexvar_pd(t64, rowv[3]);
          lj4 = _mm512_permutexvar_pd(t64, rowv[4]);
          off = _mm512_permutexvar_pd(t64, rowv[5]);
        } else {
          const __m256i t6 = _mm256_mullo_epi32(t, _mm256_set1_epi32(kFields));
          lcut2 = gather(t6, rowd + 0);
          lj1 = gather(t6, rowd + 1);
          lj2 = gather(t6, rowd + 2);
          lj3 = gather(t6, rowd + 3);
          lj4 = gather(t6, rowd + 4);
          off = gather(t6, rowd + 5);
        }
      }
      const __m512d in_l = _mm512_maskz_mov_pd(_mm512_cmp_pd_mask(r2, lcut2, _CMP_LT_OQ), fl);
      const __m512d r6i = _mm512_mul_pd(_mm512_mul_pd(r2i, r2i), r2i);
      f = _mm512_add_pd(
          f, _mm512_mul_pd(_mm512_mul_pd(_mm512_mul_pd(in_l, r6i), _mm512_sub_pd(_mm512_mul_pd(lj1, r6i), lj2)), r2i));
      evdwl = _mm512_mul_pd(in_l, _mm512_sub_pd(_mm512_mul_pd(r6i, _mm512_sub_pd(_mm512_mul_pd(lj3, r6i), lj4)), off));
    }
    _mm512_storeu_pd(c.tx + q, _mm512_mul_pd(dx, f));
    _mm512_storeu_pd(c.ty + q, _mm512_mul_pd(dy, f));
    _mm512_storeu_pd(c.tz + q, _mm512_mul_pd(dz, f));
    if (energy) {
      _mm512_storeu_pd(c.te + q, _mm512_add_pd(_mm512_add_pd(evdwl, ecoul), ecorr));
      _mm512_storeu_pd(c.tv + q, _mm512_mul_pd(r2, f));
      // The terms apart, for coul_sums_half.
      _mm512_store_pd(c.f + q, f);
      _mm512_store_pd(c.ev + q, evdwl);
      _mm512_store_pd(c.ec + q, ecoul);
      _mm512_store_pd(c.ek + q, ecorr);
    }
  }
  return mc;
}
CUMULUS_SIMD_WARNINGS_ON
#endif

#if defined(__x86_64__)
// coul_chunk_terms by hand in AVX2 (4 fp64 lanes), for machines without AVX-512 (where the generic
// loop stays scalar): coul_pair_tabulated's operations in its order, lane by lane, so the same bits.
// Passes over a chunk of atom i's list: (1) keeping, in list order, the pairs that may be within
// the reach (pair_simd::filter_chunk, in fp32: about 60 % of a list with a 2 A skin) and those
// whose r^2 is NaN (their forces NaN, as the generic loop's); (2) the kept pairs' fp64
// separations and table places; (3) their terms. Returns how many were kept: their partners in c.j, their terms in
// c.tx ... (the pairs dropped have zero terms: x + 0 = x, and no sum here is -0, so the sums' bits
// are the same either way).
CUMULUS_SIMD_WARNINGS_OFF  // core/macros.hpp
inline bool has_avx2() { return __builtin_cpu_supports("avx2"); }
// Whether coul_chunk takes the AVX2 loop: set by coul_fast (before any parallel region) at each
// force call, from the CPU and CUMULUS_NO_AVX512.
bool avx2_chunks = false;
// The local atoms' x, y, z, q packed (4 doubles an atom) for the AVX2 loop, and its constants (the
// reach, the LJ rows by type, the special factors): set by coul_fast with avx2_chunks (the calling
// thread's, kept between calls; read by every thread of a force call).
const double* avx2_xyzq = nullptr;
const CoulFast* avx2_fast = nullptr;
pair_simd::Filter32 avx2_filter;  // the first pass's fp32 rows and threshold
__attribute__((target("avx2"))) int coul_chunk_avx2(int m, const int* nb, const Atoms& a, const LjTable& lj,
                                                    const CoulParams& p, int i, SpecialCursor& sc, bool energy,
                                                    CoulChunk& c) {
  const __m256d one = _mm256_set1_pd(1.0), two = _mm256_set1_pd(2.0);
  const __m256d sign = _mm256_castsi256_pd(_mm256_set1_epi64x(static_cast<long long>(0x8000000000000000ULL)));
  const double* const xyzq = avx2_xyzq;
  const CoulFast& cf = *avx2_fast;
  // (1) which entries may be within reach, in fp32 (pack_filter32): their partners (and types)
  // compacted in list order.
  const int mc = pair_simd::filter_chunk(avx2_filter, a, i, nb, m, lj.ntypes > 1, c.j, c.type);
  if (mc == 0) return 0;
  // Padding to whole vectors: atom i itself, at a unit distance (finite terms, never read).
  const int mp = (mc + 3) / 4 * 4;
  for (int k = mc; k < mp; ++k) c.j[k] = i;
  for (int k = 0; k < mp; ++k) c.level[k] = 0;
  if (a.nspecial > 0)  // partners ascend in id: past i's last special partner, every level is 0
    for (int k = 0; k < mc && !sc.exhausted(); ++k) c.level[k] = sc.level(a.id[c.j[k]]);
  if (lj.ntypes > 1)
    for (int k = mc; k < mp; ++k) c.type[k] = a.type[i];
  const __m256d ci[3] = {_mm256_set1_pd(a.x[i]), _mm256_set1_pd(a.y[i]), _mm256_set1_pd(a.z[i])};
  const pair_simd::Image4 im = pair_simd::image_consts4(a.box);
  const __m256d* const L = im.L;
  const __m256d* const h = im.h;
  const __m256d* const mh = im.mh;
  const __m256d qi = _mm256_set1_pd(a.q[i]), qqr2e = _mm256_set1_pd(p.qqr2e), cut2 = _mm256_set1_pd(p.cut2);
  const __m256d smax = _mm256_set1_pd(p.table.smax), inv_ds = _mm256_set1_pd(p.table.inv_ds);
  const __m256d two_inv_ds = _mm256_set1_pd(2 * p.table.inv_ds);
  const __m128i last = _mm_set1_epi32(p.table.n - 1);
  const bool one_type = lj.ntypes == 1, few_types = !one_type && lj.ntypes <= 4;
  const double* const row = &lj.c[one_type ? 0 : a.type[i] * lj.ntypes].cut2;  // kFields doubles per partner type
  // Up to 4 types: atom i's coefficients against each partner type in a register per field (lane
  // t: type t), picked by a permute of 32-bit halves rather than a gather.
  // (From avx2_fast, prepared once per force call: a row built here in a stack array and loaded
  // whole stalls on the store forwarding, per chunk.)
  __m256d rowv[kFields];
  if (few_types)
    for (int w = 0; w < kFields; ++w) rowv[w] = _mm256_load_pd(cf.fields[a.type[i]][w]);
  const __m256d scv = _mm256_load_pd(cf.special_coul), slv = _mm256_load_pd(cf.special_lj);
  const int nfields = energy ? kFields : 3;  // the energy's fields only when it is wanted
  const bool with_lj = p.lj && !cf.skip_lj(one_type ? 0 : a.type[i]);
  // (2) the kept partners' separations in fp64: the generic loop's minimum image (image()),
  // d + (d > L/2 ? -L : (d < -L/2 ? L : 0)), the same values as d - L and d + L. A loop of its own:
  // with the terms' in one, each vector's chain of latencies (the rows' loads, the image, then the
  // table's lines) was too long for the iterations to overlap.
  const __m256i lane = _mm256_setr_epi64x(0, 1, 2, 3);
  for (int q = 0; q < mp; q += 4) {
    __m256d pos[4];  // x, y, z, q
    rows4(xyzq, _mm_load_si128(reinterpret_cast<const __m128i*>(c.j + q)), pos);
    __m256d dv[3];
    for (int d = 0; d < 3; ++d) {
      const __m256d dd = _mm256_sub_pd(ci[d], pos[d]);
      const __m256d gt = _mm256_cmp_pd(dd, h[d], _CMP_GT_OQ), lt = _mm256_cmp_pd(dd, mh[d], _CMP_LT_OQ);
      dv[d] = _mm256_blendv_pd(_mm256_blendv_pd(dd, _mm256_add_pd(dd, L[d]), lt), _mm256_sub_pd(dd, L[d]), gt);
    }
    __m256d r2 = _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(dv[0], dv[0]), _mm256_mul_pd(dv[1], dv[1])), _mm256_mul_pd(dv[2], dv[2]));
    if (q + 4 > mc)  // the padding's lanes at a unit distance
      r2 = _mm256_blendv_pd(r2, one, _mm256_castsi256_pd(_mm256_cmpgt_epi64(lane, _mm256_set1_epi64x(mc - q - 1))));
    _mm256_store_pd(c.dx + q, dv[0]);
    _mm256_store_pd(c.dy + q, dv[1]);
    _mm256_store_pd(c.dz + q, dv[2]);
    _mm256_store_pd(c.r2 + q, r2);
    _mm256_store_pd(c.qj + q, pos[3]);
    // coul_table_eval's interval and place in it: (3) loads the table's lines without waiting on
    // them. (1 / r stays in (3), where the divider's latency overlaps the polynomial's work: here
    // it made this loop wait on the divider: the forces 7 % slower.)
    const __m256d v = _mm256_mul_pd(_mm256_min_pd(r2, smax), inv_ds);
    const __m128i k = _mm_min_epi32(_mm256_cvttpd_epi32(v), last);
    _mm_store_si128(reinterpret_cast<__m128i*>(c.line + q), k);
    _mm256_store_pd(c.x + q, _mm256_sub_pd(_mm256_mul_pd(two, _mm256_sub_pd(v, _mm256_cvtepi32_pd(k))), one));
  }
  // (3) terms: coul_pair_tabulated
  for (int q = 0; q < mp; q += 4) {
    const __m256d dx = _mm256_load_pd(c.dx + q), dy = _mm256_load_pd(c.dy + q), dz = _mm256_load_pd(c.dz + q);
    const __m256d r2 = _mm256_load_pd(c.r2 + q);
    const __m256d qq = _mm256_mul_pd(qqr2e, _mm256_mul_pd(qi, _mm256_load_pd(c.qj + q)));
    const __m128i lev = _mm_load_si128(reinterpret_cast<const __m128i*>(c.level + q));
    // Each lane's special factors (levels 0-3) by a permute of 32-bit halves: indices 2l, 2l + 1.
    const __m256i l2 = _mm256_slli_epi64(_mm256_cvtepu32_epi64(lev), 1);
    const __m256i lidx = _mm256_or_si256(l2, _mm256_slli_epi64(_mm256_add_epi64(l2, _mm256_set1_epi64x(1)), 32));
    const __m256d fc = _mm256_castps_pd(_mm256_permutevar8x32_ps(_mm256_castpd_ps(scv), lidx));
    const __m256d fl = _mm256_castps_pd(_mm256_permutevar8x32_ps(_mm256_castpd_ps(slv), lidx));
    const __m256d in_c = _mm256_and_pd(_mm256_cmp_pd(r2, cut2, _CMP_LT_OQ), one);
    const __m256d rinv = _mm256_div_pd(one, _mm256_sqrt_pd(r2)), r2i = _mm256_mul_pd(rinv, rinv);
    // coul_table_eval
    const __m256d x = _mm256_load_pd(c.x + q);
    // Each lane's table line (8 coefficients) loaded whole, the two 4 x 4 halves transposed.
    __m256d cm[8];
    {
      const int* const kk = c.line + q;
      for (int half = 0; half < 2; ++half) {
        const __m256d r0 = _mm256_loadu_pd(p.table.c + 8 * kk[0] + 4 * half), r1 = _mm256_loadu_pd(p.table.c + 8 * kk[1] + 4 * half);
        const __m256d r2_ = _mm256_loadu_pd(p.table.c + 8 * kk[2] + 4 * half), r3 = _mm256_loadu_pd(p.table.c + 8 * kk[3] + 4 * half);
        const __m256d a0 = _mm256_unpacklo_pd(r0, r1), a1 = _mm256_unpackhi_pd(r0, r1);
        const __m256d a2 = _mm256_unpacklo_pd(r2_, r3), a3 = _mm256_unpackhi_pd(r2_, r3);
        cm[4 * half] = _mm256_permute2f128_pd(a0, a2, 0x20);
        cm[4 * half + 1] = _mm256_permute2f128_pd(a1, a3, 0x20);
        cm[4 * half + 2] = _mm256_permute2f128_pd(a0, a2, 0x31);
        cm[4 * half + 3] = _mm256_permute2f128_pd(a1, a3, 0x31);
      }
    }
    __m256d pv = cm[7], dd = pv;
    for (int w = 6; w >= 1; --w) {
      pv = _mm256_add_pd(_mm256_mul_pd(pv, x), cm[w]);
      dd = _mm256_add_pd(_mm256_mul_pd(dd, x), pv);
    }
    pv = _mm256_add_pd(_mm256_mul_pd(pv, x), cm[0]);
    const __m256d dh = _mm256_mul_pd(dd, two_inv_ds);
    const __m256d qm = _mm256_mul_pd(qq, in_c);
    __m256d f = _mm256_mul_pd(qm, _mm256_add_pd(_mm256_mul_pd(_mm256_mul_pd(fc, rinv), r2i), _mm256_mul_pd(two, dh)));
    const __m256d ecoul = _mm256_mul_pd(_mm256_mul_pd(fc, qm), _mm256_sub_pd(rinv, pv));
    const __m256d neg = _mm256_xor_pd(_mm256_sub_pd(one, fc), sign);
    const __m256d ecorr = _mm256_mul_pd(_mm256_mul_pd(neg, qm), pv);
    __m256d evdwl = _mm256_setzero_pd();
    if (with_lj) {
      __m256d lc[kFields];
      if (one_type) {
        for (int w = 0; w < nfields; ++w) lc[w] = _mm256_set1_pd(row[w]);
      } else if (few_types) {
        // 32-bit indices 2t, 2t + 1 for each lane's type t.
        const __m256i t64 = _mm256_cvtepu32_epi64(_mm_load_si128(reinterpret_cast<const __m128i*>(c.type + q)));
        const __m256i lo = _mm256_slli_epi64(t64, 1);
        const __m256i idx = _mm256_or_si256(lo, _mm256_slli_epi64(_mm256_add_epi64(lo, _mm256_set1_epi64x(1)), 32));
        for (int w = 0; w < nfields; ++w)
          lc[w] = _mm256_castps_pd(_mm256_permutevar8x32_ps(_mm256_castpd_ps(rowv[w]), idx));
      } else {
        const __m128i t6 = _mm_mullo_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(c.type + q)), _mm_set1_epi32(kFields));
        for (int w = 0; w < nfields; ++w) lc[w] = _mm256_i32gather_pd(row, _mm_add_epi32(t6, _mm_set1_epi32(w)), 8);
      }
      const __m256d in_l = _mm256_and_pd(_mm256_cmp_pd(r2, lc[0], _CMP_LT_OQ), fl);
      const __m256d r6i = _mm256_mul_pd(_mm256_mul_pd(r2i, r2i), r2i);
      f = _mm256_add_pd(f, _mm256_mul_pd(_mm256_mul_pd(_mm256_mul_pd(in_l, r6i), _mm256_sub_pd(_mm256_mul_pd(lc[1], r6i), lc[2])), r2i));
      if (energy)
        evdwl = _mm256_mul_pd(in_l, _mm256_sub_pd(_mm256_mul_pd(r6i, _mm256_sub_pd(_mm256_mul_pd(lc[3], r6i), lc[4])), lc[5]));
    }
    _mm256_storeu_pd(c.tx + q, _mm256_mul_pd(dx, f));
    _mm256_storeu_pd(c.ty + q, _mm256_mul_pd(dy, f));
    _mm256_storeu_pd(c.tz + q, _mm256_mul_pd(dz, f));
    if (energy) {
      _mm256_storeu_pd(c.te + q, _mm256_add_pd(_mm256_add_pd(evdwl, ecoul), ecorr));
      _mm256_storeu_pd(c.tv + q, _mm256_mul_pd(r2, f));
      // The terms apart, for coul_sums_half and coul_sums_full.
      _mm256_store_pd(c.f + q, f);
      _mm256_store_pd(c.ev + q, evdwl);
      _mm256_store_pd(c.ec + q, ecoul);
      _mm256_store_pd(c.ek + q, ecorr);
    }
  }
  return mc;
}
CUMULUS_SIMD_WARNINGS_ON
#endif

// The terms of a chunk of atom i's list nb[0 .. m): returns how many pairs it kept, their
// partners in c.j and terms in c.tx ...: all m (the generic loop) or, with AVX-512 or AVX2, those
// within the reach (the rest have zero terms: x + 0 = x, and no sum here is -0, so the sums' bits are the
// same either way).
inline int coul_chunk(int m, const int* nb, const Atoms& a, const LjTable& lj, const CoulParams& p, const CoulFast* cf,
                      int i, SpecialCursor& sc, bool energy, CoulChunk& c) {
#if defined(__x86_64__)
  if (cf) return coul_chunk_avx512(m, nb, a, lj, p, *cf, i, sc, energy, c);
  if (avx2_chunks) return coul_chunk_avx2(m, nb, a, lj, p, i, sc, energy, c);
#endif
  for (int k = 0; k < padded(m); ++k) c.j[k] = nb[k < m ? k : m - 1];
  for (int k = 0; k < padded(m); ++k) c.level[k] = 0;
  if (a.nspecial > 0)  // partners ascend in id: past i's last special partner, every level is 0
    for (int k = 0; k < m && !sc.exhausted(); ++k) c.level[k] = sc.level(a.id[c.j[k]]);
  if (lj.ntypes > 1)
    for (int k = 0; k < padded(m); ++k) c.type[k] = a.type[c.j[k]];
  coul_chunk_terms(m, a, lj, p, i, energy, c);
  return m;
}
// The AVX-512 loop's constants where the CPU has it (else null: the generic loop), with the
// atoms' positions and charges packed: the calling thread's, kept between calls (no allocation in
// the time loop once the buffer has grown), valid until its next call.
// CUMULUS_NO_AVX512 set in the environment takes the generic loop, CUMULUS_HOST_AVX2 the AVX2
// loop where the CPU also has AVX-512: the tests compare every loop the CPU can run.
inline const CoulFast* coul_fast(const Atoms& a, const LjTable& lj, const CoulParams& p) {
  chunk_len = pair_simd::chunk_entries(kChunk);
#if defined(__x86_64__)
  static const bool avx512_cpu = has_avx512(), avx2 = has_avx2();
  const bool generic = std::getenv("CUMULUS_NO_AVX512") != nullptr;
  const bool avx512 = avx512_cpu && std::getenv("CUMULUS_HOST_AVX2") == nullptr;
  avx2_chunks = !avx512 && avx2 && !generic;  // AVX2 where AVX-512 is missing
  if (avx2_chunks) {
    thread_local std::vector<double> packed2;
    packed2.resize(static_cast<std::size_t>(std::max(a.nlocal, a.n)) * 4 + 4);
    // 32-byte aligned (the loop loads whole rows)
    double* const d0 = packed2.data() + (4 - (reinterpret_cast<std::uintptr_t>(packed2.data()) / sizeof(double)) % 4) % 4;
    for (int i = 0; i < std::max(a.nlocal, a.n); ++i) {
      double* const d = d0 + static_cast<std::size_t>(i) * 4;
      d[0] = a.x[i], d[1] = a.y[i], d[2] = a.z[i], d[3] = a.q[i];
    }
    avx2_xyzq = d0;
    thread_local CoulFast cf2;
    cf2.init(lj, p);
    avx2_fast = &cf2;
    thread_local std::vector<float> packed2f;
    avx2_filter = pair_simd::pack_filter32(a, std::max(a.nlocal, a.n), cf2.reach2, packed2f);
  }
  if (avx512 && !generic) {
    thread_local CoulFast cf;
    thread_local std::vector<double> packed;
    cf.init(lj, p);
    packed.resize(static_cast<std::size_t>(a.nlocal) * 4);
    for (int i = 0; i < a.nlocal; ++i) {
      double* const d = packed.data() + static_cast<std::size_t>(i) * 4;
      d[0] = a.x[i], d[1] = a.y[i], d[2] = a.z[i], d[3] = a.q[i];
    }
    cf.xyzq = packed.data();
    return &cf;
  }
#else
  (void)a;
#endif
  return nullptr;
}

// Whether coul_chunk takes a hand-written loop (AVX-512: cf; AVX2), whose chunks carry each kept
// pair's separation and terms apart (c.dx ..., c.f, c.ev, c.ec, c.ek) for the sums.
inline bool hand_chunks(const CoulFast* cf) {
#if defined(__x86_64__)
  return cf != nullptr || avx2_chunks;
#else
  return cf != nullptr;
#endif
}

CUMULUS_COUL_CLONES void coul_forces_full_host(const Atoms& a, const LjTable& lj, const CoulParams& p) {
  const bool energy = a.energy;
  if (!p.table.c) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < a.n; ++i) coul_atom(a, lj, p, i, energy);
    return;
  }
  // Tabulated: each atom's terms a chunk at a time, then added in list order (coul_atom's sums).
  const CoulFast* const cf = coul_fast(a, lj, p);
#pragma omp parallel
  {
    CoulChunk c;
#pragma omp for schedule(static)
    for (int i = 0; i < a.n; ++i) {
      double fx = 0, fy = 0, fz = 0, pe = 0, vir = 0;
      SpecialCursor sc{&a, i};
      for (std::int64_t k0 = a.start[i]; k0 < a.start[i + 1]; k0 += chunk_len) {
        const int n = static_cast<int>(a.start[i + 1] - k0 < chunk_len ? a.start[i + 1] - k0 : chunk_len);
        const int m = coul_chunk(n, a.neighbors + k0, a, lj, p, cf, i, sc, energy, c);
        for (int k = 0; k < m; ++k) {
          fx += c.tx[k];
          fy += c.ty[k];
          fz += c.tz[k];
        }
        if (energy)
          for (int k = 0; k < m; ++k) {
            pe += c.te[k];
            vir += c.tv[k];
          }
      }
      a.fx[i] = fx;
      a.fy[i] = fy;
      a.fz[i] = fz;
      if (energy) {
        a.pe[i] = 0.5 * pe;
        a.virial[i] = 0.5 * vir;
      }
    }
  }
}
}  // namespace
#endif

void coul_forces(const Exec& ex, const Atoms& a, const LjTable& lj, const CoulParams& p) {
#if !defined(__CUDACC__)
  if (!ex.is_cuda()) {
    detail::KernelTimer<int> timer(ex, "md.forces");
    coul_forces_full_host(a, lj, p);
    return;
  }
#endif
  const bool energy = a.energy;
  for_each(ex, "md.forces", Box(0, 0, 0, a.n, 1, 1),
           [=] CUMULUS_HD(int i, int, int) { coul_atom(a, lj, p, i, energy); });
}

#if !defined(__CUDACC__)
namespace {
// One slot's row of the half list, tabulated: its terms a chunk at a time (vectorised), each chunk's
// kept pairs handed to put(c, m) in list order.
template <class Put>
inline void coul_row(const Atoms& a, const LjTable& lj, const CoulParams& p, const CoulFast* cf, int s, CoulChunk& c,
                     Put put) {
  const int i = a.order[s];
  SpecialCursor sc{&a, i};
  for (std::int64_t k0 = a.start[s]; k0 < a.start[s + 1]; k0 += chunk_len) {
    const int n = static_cast<int>(a.start[s + 1] - k0 < chunk_len ? a.start[s + 1] - k0 : chunk_len);
    put(c, coul_chunk(n, a.neighbors + k0, a, lj, p, cf, i, sc, a.energy, c));
  }
}

// A row's kept terms added in list order to the slot's atom i (from its sums so far, *s: x, y, z,
// energy, virial) and subtracted from (energies added to) each partner: the one sequence of
// additions that every path below performs, so that each atom's sums take its pairs in ascending
// partner id (the full list's bits).
struct RowTerms {
  const int* j;
  const double *tx, *ty, *tz, *te, *tv;
};
inline void add_row(const Atoms& a, const RowTerms& t, int m, double* s) {
  double* const __restrict fx = a.fx;
  double* const __restrict fy = a.fy;
  double* const __restrict fz = a.fz;
  for (int k = 0; k < m; ++k) {
    s[0] += t.tx[k];
    s[1] += t.ty[k];
    s[2] += t.tz[k];
    const int j = t.j[k];
    fx[j] -= t.tx[k];
    fy[j] -= t.ty[k];
    fz[j] -= t.tz[k];
  }
  if (a.energy)
    for (int k = 0; k < m; ++k) {
      s[3] += t.te[k];
      s[4] += t.tv[k];
      const int j = t.j[k];
      a.pe[j] += t.te[k];
      a.virial[j] += t.tv[k];
    }
}
inline void begin_row(const Atoms& a, int i, double* s) {
  s[0] = a.fx[i], s[1] = a.fy[i], s[2] = a.fz[i], s[3] = a.pe[i], s[4] = a.virial[i];
}
inline void end_row(const Atoms& a, int i, const double* s) {
  a.fx[i] = s[0], a.fy[i] = s[1], a.fz[i] = s[2], a.pe[i] = s[3], a.virial[i] = s[4];
}

#if defined(__x86_64__)
// add_row with the sums as rows of 4 doubles, where the CPU has AVX2: each atom's (fx, fy, fz, pe)
// in g (32-byte aligned), atom i's running sums in one register, the terms transposed from the
// chunk's columns 4 pairs at a time: i adds (tx, ty, tz, te), a partner subtracts (tx, ty, tz, -te)
// (x - (-y) is x + y, zeros' signs included). Without the energy, the fourth lanes are -0 for i
// and +0 for the partner, which change nothing (x + -0 and x - +0 are x). The same additions in the
// same order as add_row, lane by lane, so the same bits, in half the instructions (a load, a
// subtraction and a store per partner rather than three of each). The virial, on thermo steps
// only, stays scalar.
struct Rows4 {
  double* g = nullptr;  // 4 doubles an atom
};
// s: atom i's running sums (x, y, z, energy; 32-byte aligned), sv its virial's.
__attribute__((target("avx2"))) inline void add_row4(const Atoms& a, const Rows4& r, const RowTerms& t, int m, double* s, double& sv) {
  double* const g = r.g;
  __m256d s4 = _mm256_load_pd(s);
  const bool energy = a.energy;
  const __m256d flip = _mm256_setr_pd(0.0, 0.0, 0.0, -0.0);  // the fourth lane's sign
  const __m256d no_e = _mm256_set1_pd(-0.0);
  int k = 0;
  for (; k + 4 <= m; k += 4) {
    const __m256d x = _mm256_loadu_pd(t.tx + k), y = _mm256_loadu_pd(t.ty + k), z = _mm256_loadu_pd(t.tz + k);
    const __m256d e = energy ? _mm256_loadu_pd(t.te + k) : no_e;
    __m256d row[4];
    pair_simd::columns_to_rows4(x, y, z, e, row);
    for (int l = 0; l < 4; ++l) {
      s4 = _mm256_add_pd(s4, row[l]);
      double* const gj = g + 4 * static_cast<std::size_t>(t.j[k + l]);
      _mm256_store_pd(gj, _mm256_sub_pd(_mm256_load_pd(gj), _mm256_xor_pd(row[l], flip)));
    }
  }
  for (; k < m; ++k) {
    const __m256d row = _mm256_setr_pd(t.tx[k], t.ty[k], t.tz[k], energy ? t.te[k] : -0.0);
    s4 = _mm256_add_pd(s4, row);
    double* const gj = g + 4 * static_cast<std::size_t>(t.j[k]);
    _mm256_store_pd(gj, _mm256_sub_pd(_mm256_load_pd(gj), _mm256_xor_pd(row, flip)));
  }
  _mm256_store_pd(s, s4);
  if (energy)
    for (k = 0; k < m; ++k) {
      sv += t.tv[k];
      a.virial[t.j[k]] += t.tv[k];
    }
}
inline void begin_row4(const Atoms& a, const Rows4& r, int i, double* s, double& sv) {
  std::copy(r.g + 4 * static_cast<std::size_t>(i), r.g + 4 * static_cast<std::size_t>(i) + 4, s);
  sv = a.virial[i];
}
inline void end_row4(const Atoms& a, const Rows4& r, int i, const double* s, double sv) {
  std::copy(s, s + 4, r.g + 4 * static_cast<std::size_t>(i));
  a.virial[i] = sv;
}
// The sums into rows (before the pairs: the calling thread's buffer, kept between calls) and back
// (after), over the local atoms.
Rows4 pack_rows4(const Atoms& a) {
  thread_local std::vector<double> buf;
  const std::size_t nl = static_cast<std::size_t>(std::max(a.nlocal, a.n));
  buf.resize(4 * nl + 4);
  Rows4 r;
  r.g = buf.data() + (4 - (reinterpret_cast<std::uintptr_t>(buf.data()) / sizeof(double)) % 4) % 4;
  for (std::size_t k = 0; k < nl; ++k) {
    double* const gk = r.g + 4 * k;
    gk[0] = a.fx[k], gk[1] = a.fy[k], gk[2] = a.fz[k], gk[3] = a.pe[k];
  }
  return r;
}
void unpack_rows4(const Atoms& a, const Rows4& r) {
  const std::size_t nl = static_cast<std::size_t>(std::max(a.nlocal, a.n));
  for (std::size_t k = 0; k < nl; ++k) {
    const double* const gk = r.g + 4 * k;
    a.fx[k] = gk[0], a.fy[k] = gk[1], a.fz[k] = gk[2], a.pe[k] = gk[3];
  }
}
#endif


// The terms of the rows a thread computes ahead, kept until their turn (coul_forces_half_tabulated):
// the kept pairs' partners and terms in row order, and each row's count. The buffers keep their
// capacity between calls (no allocation in the time loop once they have grown).
struct StoredRows {
  std::vector<int> j, count;
  std::vector<double> tx, ty, tz, te, tv;
};

// The half list, tabulated, at any number of threads: the slots in ranges of about equal list
// entries. Thread 0 takes ranges from the front, computes their rows and adds them at once; the
// other threads take ranges from the back at the same time and store their terms; after them, the
// stored rows are added in slot order by one thread. The additions are those of one thread walking
// every row in slot order (add_row), so the bits are the full list's at any thread count, wherever
// the threads meet. The stored rows' replay is serial (about 8 cycles a pair against some 25 to
// compute it): on the water benchmark 2 threads take about 0.55 of one thread's time, where the
// full list takes 1.0 (each pair computed twice). A replay shared out by destination atom was tried
// and not kept: a row's partners spread over the later slots, so the threads' shares were uneven
// and, each walking the stored rows, together they did twice the serial replay's work.
void coul_forces_half_tabulated(const Atoms& a, const LjTable& lj, const CoulParams& p, const std::function<void()>* other) {
  const CoulFast* const cf = coul_fast(a, lj, p);  // before the region: it sets the loops' shared inputs
  const int nthreads = a.nslots > 0 ? std::min(omp_get_max_threads(), a.nslots) : 1;
#if defined(__x86_64__)
  // The hand-written loops' rows add by add_row4 (the generic loop's by add_row: the tests compare them).
  const Rows4 rows = hand_chunks(cf) && has_avx2() ? pack_rows4(a) : Rows4{};
#endif
  // Slot s's row: its terms computed and added.
  auto compute_and_add = [&](int s, CoulChunk& c) {
#if defined(__x86_64__)
    if (rows.g) {
      alignas(32) double s4[4];
      double sv;
      begin_row4(a, rows, a.order[s], s4, sv);
      coul_row(a, lj, p, cf, s, c, [&](const CoulChunk& ch, int m) { add_row4(a, rows, {ch.j, ch.tx, ch.ty, ch.tz, ch.te, ch.tv}, m, s4, sv); });
      end_row4(a, rows, a.order[s], s4, sv);
      return;
    }
#endif
    double sum[5];
    begin_row(a, a.order[s], sum);
    coul_row(a, lj, p, cf, s, c, [&](const CoulChunk& ch, int m) { add_row(a, {ch.j, ch.tx, ch.ty, ch.tz, ch.te, ch.tv}, m, sum); });
    end_row(a, a.order[s], sum);
  };
  // Slot s's stored row added.
  auto add_stored = [&](int s, const RowTerms& t, int m) {
#if defined(__x86_64__)
    if (rows.g) {
      alignas(32) double s4[4];
      double sv;
      begin_row4(a, rows, a.order[s], s4, sv);
      add_row4(a, rows, t, m, s4, sv);
      end_row4(a, rows, a.order[s], s4, sv);
      return;
    }
#endif
    double sum[5];
    begin_row(a, a.order[s], sum);
    add_row(a, t, m, sum);
    end_row(a, a.order[s], sum);
  };
  auto finish = [&] {
#if defined(__x86_64__)
    if (rows.g) unpack_rows4(a, rows);
#endif
  };
  if (nthreads == 1) {
    CoulChunk c;
    for (int s = 0; s < a.nslots; ++s) compute_and_add(s, c);
    finish();
    if (other) (*other)();
    return;
  }
  // Ranges of slots of about equal list entries, kRangesPerThread a thread (the calling thread's
  // vectors, kept between calls: no allocation in the time loop once they have grown).
  constexpr int kRangesPerThread = 32;
  const int nranges = std::min(a.nslots, kRangesPerThread * nthreads);
  thread_local std::vector<int> bound_here;
  std::vector<int>& bound = bound_here;
  bound.assign(static_cast<std::size_t>(nranges) + 1, a.nslots);
  bound[0] = 0;
  {
    const std::int64_t first = a.start[0], total = a.start[a.nslots] - first;
    int s = 0;
    for (int q = 1; q < nranges; ++q) {
      while (s < a.nslots && (a.start[s] - first) * nranges < total * q) ++s;
      bound[static_cast<std::size_t>(q)] = s;
    }
  }
  // Where each range's terms went: thread 0 (added at once) or a thread's stored rows, from its
  // entry `entry` and row `row` on.
  struct Stored {
    int thread = 0;
    std::size_t entry = 0, row = 0;
  };
  thread_local std::vector<Stored> where_here;
  std::vector<Stored>& where = where_here;
  where.assign(static_cast<std::size_t>(nranges), Stored{});
  // The calling thread's buffers, one per thread past the first (named by a reference here: inside
  // the region, the thread_local name would be each thread's own).
  thread_local std::vector<StoredRows> stored_here;
  std::vector<StoredRows>& stored = stored_here;
  if (stored.size() < static_cast<std::size_t>(nthreads)) stored.resize(static_cast<std::size_t>(nthreads));
  const bool energy = a.energy;
  // Thread 0 takes ranges from the front and adds their rows at once; the others take them from
  // the back and store their terms. They meet where their speeds put them (storing costs more than
  // adding: a fixed split left thread 0 waiting a fifth of the call), and thread 0 adds the stored
  // rows after them, in slot order.
  // CUMULUS_HALF_FRONT=k (a test hook) stops thread 0 after k ranges, so that the tests can put
  // the meeting anywhere (k = 0: every row stored and replayed).
  // With `other` (ForceTerm::compute_with: the k-space into arrays of its own) at two threads, the
  // calling thread runs it as soon as its own ranges are added, and thread 1 adds the stored rows
  // once every range is taken and computed: the replay and `other` at the same time, rather than
  // thread 1 waiting through the replay and the k-space after it (about a fifth of the call).
  // `other` (and MPI, if it calls any) stays on the calling thread, its own parallel loops on that
  // one thread; it writes none of the rows or virials the replay does. Thread 0's share of the
  // ranges is then capped so that the two finish together (`other` took longer than the replay:
  // thread 0 should compute less): the cap follows where the threads met, a range a call towards
  // the balance, kept from call to call (the bits do not depend on where the threads meet). At
  // more threads (measured at two only) `other` runs after the replay, on all of them.
  thread_local int front_cap = 1 << 30;
  const bool overlap = other != nullptr && nthreads == 2;
  const char* const hook = std::getenv("CUMULUS_HALF_FRONT");
  const int front_most = hook ? std::max(0, std::atoi(hook)) : overlap ? std::clamp(front_cap, 1, nranges) : nranges;
  int front = 0, back = nranges;  // the ranges not yet taken: [front, back)
  // alone: a team of one (OMP_DYNAMIC), which takes every range whatever the cap.
  auto take = [&](bool from_front, bool alone) {
    int q = -1;
#pragma omp critical(cumulus_coul_half_take)
    if (front < back && (!from_front || alone || front < front_most)) q = from_front ? front++ : --back;
    return q;
  };
  // The stored ranges, in slot order, by one thread.
  auto replay = [&] {
    for (int q = 0; q < nranges; ++q) {
      const Stored w = where[static_cast<std::size_t>(q)];
      if (w.thread == 0) continue;
      const StoredRows& st = stored[static_cast<std::size_t>(w.thread)];
      std::size_t n = w.entry, row = w.row;
      for (int s = bound[static_cast<std::size_t>(q)]; s < bound[static_cast<std::size_t>(q) + 1]; ++s) {
        const int m = st.count[row++];
        add_stored(s, {st.j.data() + n, st.tx.data() + n, st.ty.data() + n, st.tz.data() + n, energy ? st.te.data() + n : nullptr,
                       energy ? st.tv.data() + n : nullptr},
                   m);
        n += static_cast<std::size_t>(m);
      }
    }
  };
  std::atomic<int> done{0};         // the threads whose ranges are all computed (and thread 0's added)
  std::atomic<bool> failed{false};  // a thread's exception (kept in `failure`): no replay
  int team = 1;
  double end_other = 0, end_replay = 0;
  std::exception_ptr failure;
  auto keep = [&] {
#pragma omp critical(cumulus_coul_half_failure)
    if (!failure) failure = std::current_exception();
    failed.store(true, std::memory_order_release);
  };
#pragma omp parallel num_threads(nthreads)
  {
    const int t = omp_get_thread_num();
    if (t == 0) team = omp_get_num_threads();
    CoulChunk c;
    try {
      if (t == 0) {
        const bool alone = omp_get_num_threads() == 1;
        for (int q; (q = take(true, alone)) >= 0;)
          for (int s = bound[static_cast<std::size_t>(q)]; s < bound[static_cast<std::size_t>(q) + 1]; ++s)
            compute_and_add(s, c);
      } else {
        StoredRows& st = stored[static_cast<std::size_t>(t)];
        std::size_t n = 0, rows_done = 0;
        for (int q; (q = take(false, false)) >= 0;) {
          const int s0 = bound[static_cast<std::size_t>(q)], s1 = bound[static_cast<std::size_t>(q) + 1];
          where[static_cast<std::size_t>(q)] = Stored{t, n, rows_done};
          // Room for every entry of the range (a row keeps at most its entries; growing keeps what
          // is stored).
          const std::size_t need = n + static_cast<std::size_t>(a.start[s1] - a.start[s0]) + kChunk;
          const std::size_t room = std::max(need, st.j.size() + st.j.size() / 2);
          if (st.j.size() < need) {
            st.j.resize(room);
            for (auto* v : {&st.tx, &st.ty, &st.tz}) v->resize(room);
          }
          if (energy && st.te.size() < need) {
            st.te.resize(room);
            st.tv.resize(room);
          }
          if (st.count.size() < rows_done + static_cast<std::size_t>(s1 - s0))
            st.count.resize(rows_done + static_cast<std::size_t>(s1 - s0));
          // coul_row's chunks, each chunk's terms written where they are stored (copied there,
          // they were 6 % of a two-thread step's samples).
          for (int s = s0; s < s1; ++s) {
            const std::size_t n0 = n;
            const int i = a.order[s];
            SpecialCursor sc{&a, i};
            for (std::int64_t k0 = a.start[s]; k0 < a.start[s + 1]; k0 += chunk_len) {
              const int len = static_cast<int>(a.start[s + 1] - k0 < chunk_len ? a.start[s + 1] - k0 : chunk_len);
              c.tx = st.tx.data() + n, c.ty = st.ty.data() + n, c.tz = st.tz.data() + n;
              if (energy) c.te = st.te.data() + n, c.tv = st.tv.data() + n;
              const int m = coul_chunk(len, a.neighbors + k0, a, lj, p, cf, i, sc, a.energy, c);
              std::copy(c.j, c.j + m, st.j.data() + n);
              n += static_cast<std::size_t>(m);
            }
            st.count[rows_done++] = static_cast<int>(n - n0);
          }
          c.own_terms();
        }
      }
    } catch (...) {  // (an exception may not leave an OpenMP region)
      keep();
    }
    done.fetch_add(1, std::memory_order_acq_rel);  // by every thread, whatever happened: nobody waits forever
    if (overlap) {
      const int nt = omp_get_num_threads();
      try {
        if (t == 0) {
          omp_set_num_threads(1);  // this thread's own regions in `other`: one thread, whether or not nested ones may be active
          (*other)();
          end_other = omp_get_wtime();
        } else if (t == 1) {
          for (int spins = 0; done.load(std::memory_order_acquire) < nt; ++spins)
            if (spins < 4096)
              CUMULUS_SPIN_PAUSE();
            else
              std::this_thread::yield();  // more threads than cores: let the ones it waits for run
          if (!failed.load(std::memory_order_acquire)) replay();
          end_replay = omp_get_wtime();
        }
      } catch (...) {
        keep();
      }
    }
  }
  if (failure) std::rethrow_exception(failure);
  if (!overlap || team == 1) replay();  // after the region (a team of one under OMP_DYNAMIC: `other` ran in it)
  finish();
  if (other && !overlap) (*other)();
  // Thread 0 took `front` ranges: one fewer next time if it finished last, one more otherwise.
  if (overlap && team > 1 && !hook) front_cap = std::clamp(front + (end_other > end_replay ? -1 : 1), 1, nranges);
}
}  // namespace
#endif

#if !defined(__CUDACC__)
// The half list: each pair once, from the slot of the smaller id; its terms added to both atoms
// (the partner's force the exact negative), so each owned atom receives them in ascending partner id
// as the full list gives them. Ghost entries are scratch.
CUMULUS_COUL_CLONES void coul_forces_half(const Atoms& a, const LjTable& lj, const CoulParams& p, const std::function<void()>* other) {
  auto zero = [&](int i) {
    a.fx[i] = a.fy[i] = a.fz[i] = 0;
    a.pe[i] = a.virial[i] = 0;
  };
  for (int s = 0; s < a.nslots; ++s) zero(a.order[s]);
  for (int i = 0; i < a.n; ++i) zero(i);
  if (p.table.c) {
    coul_forces_half_tabulated(a, lj, p, other);
    other = nullptr;  // run there
  } else {
    for (int s = 0; s < a.nslots; ++s) {
      const int i = a.order[s];
      const double xi = a.x[i], yi = a.y[i], zi = a.z[i], qi = a.q[i];
      for (std::int64_t k = a.start[s]; k < a.start[s + 1]; ++k) {
        const int j = a.neighbors[k];
        const double dx = minimum_image(xi - a.x[j], a.box[0]), dy = minimum_image(yi - a.y[j], a.box[1]),
                     dz = minimum_image(zi - a.z[j], a.box[2]);
        const double r2 = dx * dx + dy * dy + dz * dz;
        const int level = a.nspecial > 0 ? special_level(a, i, a.id[j]) : 0;
        const CoulTerms t = coul_pair(coefficients(a, lj, i, j), p, r2, qi * a.q[j], level);
        const double e = t.evdwl + t.ecoul + t.ecorr, v = r2 * t.fpair;
        a.fx[i] += dx * t.fpair;
        a.fy[i] += dy * t.fpair;
        a.fz[i] += dz * t.fpair;
        a.pe[i] += e;
        a.virial[i] += v;
        a.fx[j] -= dx * t.fpair;
        a.fy[j] -= dy * t.fpair;
        a.fz[j] -= dz * t.fpair;
        a.pe[j] += e;
        a.virial[j] += v;
      }
    }
  }
  for (int i = 0; i < a.n; ++i) {
    a.pe[i] = 0.5 * a.pe[i];
    a.virial[i] = 0.5 * a.virial[i];
  }
  if (other) (*other)();
}
#endif

#if !defined(__CUDACC__)
// All nine of coul_sum's sums in one walk of the host's half list (thermo steps: one walk where
// nine took as long as nine force calls): each pair's terms from coul_pair, half to each atom, each
// atom's share then exact.
void coul_sums_half(const Atoms& a, const LjTable& lj, const CoulParams& p, int e, ExactSum* out) {
  const double to_units = ::ldexp(0.5, -e);
  std::vector<double> acc(static_cast<std::size_t>(a.nslots) * 9, 0.0);
  const CoulFast* const cf = p.table.c ? coul_fast(a, lj, p) : nullptr;
  const bool chunks = p.table.c && hand_chunks(cf);
  if (chunks) {
    // The hand-written loops' terms (the same bits as coul_pair's), with share()'s products.
    CoulChunk c;
    for (int s = 0; s < a.nslots; ++s) {
      const int i = a.order[s];
      double* const ai = acc.data() + static_cast<std::size_t>(i) * 9;
      SpecialCursor sc{&a, i};
      for (std::int64_t k0 = a.start[s]; k0 < a.start[s + 1]; k0 += chunk_len) {
        const int n = static_cast<int>(a.start[s + 1] - k0 < chunk_len ? a.start[s + 1] - k0 : chunk_len);
        const int m = coul_chunk(n, a.neighbors + k0, a, lj, p, cf, i, sc, true, c);
        for (int k = 0; k < m; ++k) {
          const double dx = c.dx[k], dy = c.dy[k], dz = c.dz[k], f = c.f[k];
          const double v[9] = {dx * dx * f, dy * dy * f, dz * dz * f, dx * dy * f, dx * dz * f,
                               dy * dz * f, c.ev[k],     c.ec[k],     c.ek[k]};
          double* const aj = acc.data() + static_cast<std::size_t>(c.j[k]) * 9;
          for (int w = 0; w < 9; ++w) {
            ai[w] += v[w];
            aj[w] += v[w];
          }
        }
      }
    }
  }
  for (int s = 0; s < (chunks ? 0 : a.nslots); ++s) {
    const int i = a.order[s];
    double* const ai = acc.data() + static_cast<std::size_t>(i) * 9;
    for (std::int64_t k = a.start[s]; k < a.start[s + 1]; ++k) {
      const int j = a.neighbors[k];
      const double dx = minimum_image(a.x[i] - a.x[j], a.box[0]), dy = minimum_image(a.y[i] - a.y[j], a.box[1]),
                   dz = minimum_image(a.z[i] - a.z[j], a.box[2]);
      const int level = a.nspecial > 0 ? special_level(a, i, a.id[j]) : 0;
      const CoulTerms t = coul_pair(coefficients(a, lj, i, j), p, dx * dx + dy * dy + dz * dz, a.q[i] * a.q[j], level);
      double* const aj = acc.data() + static_cast<std::size_t>(j) * 9;
      for (int w = 0; w < 9; ++w) {
        const double v = share(w, dx, dy, dz, t);
        ai[w] += v;
        aj[w] += v;
      }
    }
  }
  for (int w = 0; w < 9; ++w) out[w] = ExactSum{};
  for (int i = 0; i < a.n; ++i)
    for (int w = 0; w < 9; ++w)
      out[w] = out[w] + ExactSum::of_units(acc[static_cast<std::size_t>(i) * 9 + w] * to_units);
}

// The nine sums over the full list in one pass, threads over the atoms: each atom's nine sums in
// list order (coul_sum's, the same values), then exactly.
void coul_sums_full(const Atoms& a, const LjTable& lj, const CoulParams& p, int e, ExactSum* out) {
  const double to_units = ::ldexp(0.5, -e);
  const CoulFast* const cf = p.table.c ? coul_fast(a, lj, p) : nullptr;
  const bool chunks = p.table.c && hand_chunks(cf);
  for (int w = 0; w < 9; ++w) out[w] = ExactSum{};
#pragma omp parallel
  {
    ExactSum mine[9];
    CoulChunk c;
#pragma omp for schedule(dynamic, 64)
    for (int i = 0; i < a.n; ++i) {
      double t[9] = {};
      if (chunks) {
        SpecialCursor sc{&a, i};
        for (std::int64_t k0 = a.start[i]; k0 < a.start[i + 1]; k0 += chunk_len) {
          const int n = static_cast<int>(a.start[i + 1] - k0 < chunk_len ? a.start[i + 1] - k0 : chunk_len);
          const int m = coul_chunk(n, a.neighbors + k0, a, lj, p, cf, i, sc, true, c);
          for (int k = 0; k < m; ++k) {
            const double dx = c.dx[k], dy = c.dy[k], dz = c.dz[k], f = c.f[k];
            const double v[9] = {dx * dx * f, dy * dy * f, dz * dz * f, dx * dy * f, dx * dz * f, dy * dz * f, c.ev[k], c.ec[k], c.ek[k]};
            for (int w = 0; w < 9; ++w) t[w] += v[w];
          }
        }
      } else {
        for (std::int64_t k = a.start[i]; k < a.start[i + 1]; ++k) {
          const int j = a.neighbors[k];
          const double dx = minimum_image(a.x[i] - a.x[j], a.box[0]), dy = minimum_image(a.y[i] - a.y[j], a.box[1]),
                       dz = minimum_image(a.z[i] - a.z[j], a.box[2]);
          const int level = a.nspecial > 0 ? special_level(a, i, a.id[j]) : 0;
          const CoulTerms ct = coul_pair(coefficients(a, lj, i, j), p, dx * dx + dy * dy + dz * dz, a.q[i] * a.q[j], level);
          for (int w = 0; w < 9; ++w) t[w] += share(w, dx, dy, dz, ct);
        }
      }
      for (int w = 0; w < 9; ++w) mine[w] = mine[w] + ExactSum::of_units(t[w] * to_units);
    }
#pragma omp critical(cumulus_coul_sums_full)
    for (int w = 0; w < 9; ++w) out[w] = out[w] + mine[w];
  }
}
#endif

ExactSum coul_sum(const Exec& ex, const Atoms& a, const LjTable& lj, const CoulParams& p, int which, int e) {
  const double to_units = ::ldexp(0.5, -e);  // the atom's half, in units of 2^e
#if !defined(__CUDACC__)
  if (a.half) {
    std::vector<double> acc(static_cast<std::size_t>(a.nslots), 0.0);
    for (int s = 0; s < a.nslots; ++s) {
      const int i = a.order[s];
      for (std::int64_t k = a.start[s]; k < a.start[s + 1]; ++k) {
        const int j = a.neighbors[k];
        const double dx = minimum_image(a.x[i] - a.x[j], a.box[0]), dy = minimum_image(a.y[i] - a.y[j], a.box[1]),
                     dz = minimum_image(a.z[i] - a.z[j], a.box[2]);
        const int level = a.nspecial > 0 ? special_level(a, i, a.id[j]) : 0;
        const CoulTerms t =
            coul_pair(coefficients(a, lj, i, j), p, dx * dx + dy * dy + dz * dz, a.q[i] * a.q[j], level);
        const double v = share(which, dx, dy, dz, t);
        acc[static_cast<std::size_t>(i)] += v;
        acc[static_cast<std::size_t>(j)] += v;
      }
    }
    ExactSum sum;
    for (int i = 0; i < a.n; ++i) sum = sum + ExactSum::of_units(acc[static_cast<std::size_t>(i)] * to_units);
    return sum;
  }
#endif
  return reduce(ex, "md.coul_sum.pairs", Box(0, 0, 0, a.n, 1, 1), ExactSum{}, SumOp{}, [=] CUMULUS_HD(int i, int, int) {
    double t = 0;
    for (std::int64_t k = a.start[i]; k < a.start[i + 1]; ++k) {
      const int j = a.neighbors[k];
      const double dx = minimum_image(a.x[i] - a.x[j], a.box[0]), dy = minimum_image(a.y[i] - a.y[j], a.box[1]),
                   dz = minimum_image(a.z[i] - a.z[j], a.box[2]);
      const int level = a.nspecial > 0 ? special_level(a, i, a.id[j]) : 0;
      const CoulTerms c = coul_pair(coefficients(a, lj, i, j), p, dx * dx + dy * dy + dz * dz, a.q[i] * a.q[j], level);
      t += share(which, dx, dy, dz, c);
    }
    return ExactSum::of_units(t * to_units);
  });
}

}  // namespace coul_kernels::CUMULUS_PASS
}  // namespace cumulus::md
