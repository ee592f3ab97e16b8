// Kernel bodies of lj/cut/coul/long and coul/long in mixed precision (md.precision = "mixed"; one
// source per backend pass: core/kernel_pass.hpp): pair_lj_cut_coul_long.hpp says what is fp32 and
// what fp64. The loops are the double path's plain loops (pair_lj_cut_coul_long_kernels.cpp), in
// the same order: each owned atom sums its pairs in list order (ascending partner id), so the full
// list, the half list and CUDA give the same bits.
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "solvers/md/pair_host_simd.hpp"
#include "solvers/md/pair_lj_cut_coul_long.hpp"

namespace cumulus::md {
namespace coul_mixed_kernels::CUMULUS_PASS {

namespace {

// One pair (i, j) at special level `level`: the fp32 separation and terms, returned in fp64 (exact
// conversions) for the caller's fp64 products and sums. Antisymmetric in (i, j) bit for bit (the
// minimum image and the rounding to fp32 are), so the half list's partner gets the exact negative.
struct MixedPair {
  double dx, dy, dz, r2;
  CoulTerms t;
};
CUMULUS_HD inline MixedPair mixed_pair(const Atoms& a, const LjTable32& lj, const CoulParams32& p, int i, int j, int level) {
  const float dx = static_cast<float>(minimum_image(a.x[i] - a.x[j], a.box[0]));
  const float dy = static_cast<float>(minimum_image(a.y[i] - a.y[j], a.box[1]));
  const float dz = static_cast<float>(minimum_image(a.z[i] - a.z[j], a.box[2]));
  const float r2 = dx * dx + dy * dy + dz * dz;
  const float qq = p.qqr2e * (static_cast<float>(a.q[i]) * static_cast<float>(a.q[j]));
  const LjCoefficients32& c = lj.c[lj.ntypes == 1 ? 0 : a.type[i] * lj.ntypes + a.type[j]];
  float f, ev, ec, ek;
  coul_pair_tabulated(p, c, r2, qq, p.special_coul[level], p.special_lj[level], p.lj, &f, &ev, &ec, &ek);
  MixedPair m;
  m.dx = dx;
  m.dy = dy;
  m.dz = dz;
  m.r2 = r2;
  m.t.fpair = f;
  m.t.evdwl = ev;
  m.t.ecoul = ec;
  m.t.ecorr = ek;
  return m;
}

CUMULUS_HD inline double share(int which, const MixedPair& m) {
  const double f = m.t.fpair;
  switch (which) {
    case 0:
      return m.dx * m.dx * f;
    case 1:
      return m.dy * m.dy * f;
    case 2:
      return m.dz * m.dz * f;
    case 3:
      return m.dx * m.dy * f;
    case 4:
      return m.dx * m.dz * f;
    case 5:
      return m.dy * m.dz * f;
    case 6:
      return m.t.evdwl;
    case 7:
      return m.t.ecoul;
    default:
      return m.t.ecorr;
  }
}

}  // namespace

#if !defined(__CUDACC__) && defined(__x86_64__)
// The host's loop by hand in AVX2, 8 fp32 lanes: mixed_pair's operations in its order, lane by
// lane, so the same bits as the generic loop (which GCC 12 does not vectorise: its gathers). Every
// partner of a chunk is computed (no compression: a pair beyond the cutoffs has zero terms, which
// change no sum), the separations in fp64 (the minimum image, two times 4 lanes) rounded to fp32,
// the terms in fp32, their products with the separations in fp64. AVX2 rather than AVX-512: every
// x86-64 machine this runs on has it (AVX-512's 16 lanes are the next step), and the tests check
// its bits wherever they run.
namespace {
using pair_simd::SpecialCursor;
constexpr int kChunk = 64;  // a multiple of 8
struct alignas(64) MixedChunk {
  int j[kChunk], level[kChunk];
  double tx[kChunk], ty[kChunk], tz[kChunk], te[kChunk], tv[kChunk];
};
// The AVX2 loop where the CPU has it (CUMULUS_NO_AVX512 in the environment, as for the double
// path's hand-written loop: the generic loops; the tests compare the two).
bool mixed_simd() {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2 && !std::getenv("CUMULUS_NO_AVX512");
}

// GCC 12's AVX2 headers pass _mm256_undefined_pd() as the unused source of their gathers, which
// -Wuninitialized reports once they inline here (a known header issue, as in the double loop's file).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
// minimum_image on 4 lanes: d - L above L/2, d + L below -L/2.
__attribute__((target("avx2"))) inline __m256d image4(__m256d d, __m256d L, __m256d h, __m256d mh) {
  const __m256d gt = _mm256_cmp_pd(d, h, _CMP_GT_OQ), lt = _mm256_cmp_pd(d, mh, _CMP_LT_OQ);
  return _mm256_blendv_pd(_mm256_blendv_pd(d, _mm256_add_pd(d, L), lt), _mm256_sub_pd(d, L), gt);
}
// fp32 x 8 as two fp64 x 4 (exact).
__attribute__((target("avx2"))) inline void widen(__m256 v, __m256d& lo, __m256d& hi) {
  lo = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
  hi = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
}

// Atom i's partners nb[0 .. m) (m <= kChunk): their terms into c.tx ..., in list order; lanes past
// m repeat the last partner and are never read.
__attribute__((target("avx2"))) void mixed_chunk_avx2(int m, const int* nb, const Atoms& a, const LjTable32& lj,
                                                      const CoulParams32& p, int i, SpecialCursor& sc, bool energy,
                                                      MixedChunk& c) {
  const int mp = (m + 7) / 8 * 8;
  for (int k = 0; k < mp; ++k) c.j[k] = nb[k < m ? k : m - 1];
  for (int k = 0; k < mp; ++k) c.level[k] = a.nspecial > 0 && k < m ? sc.level(a.id[c.j[k]]) : 0;
  const __m256d xi = _mm256_set1_pd(a.x[i]), yi = _mm256_set1_pd(a.y[i]), zi = _mm256_set1_pd(a.z[i]);
  __m256d L[3], h[3], mh[3];
  for (int d = 0; d < 3; ++d) {
    L[d] = _mm256_set1_pd(a.box[d]);
    h[d] = _mm256_set1_pd(0.5 * a.box[d]);
    mh[d] = _mm256_set1_pd(-(0.5 * a.box[d]));
  }
  const __m256 one = _mm256_set1_ps(1.0f), two = _mm256_set1_ps(2.0f);
  const __m256 sign = _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(0x80000000u)));
  const __m256 qi = _mm256_set1_ps(static_cast<float>(a.q[i])), qqr2e = _mm256_set1_ps(p.qqr2e), cut2 = _mm256_set1_ps(p.cut2);
  const __m256 smax = _mm256_set1_ps(p.table.smax), inv_ds = _mm256_set1_ps(p.table.inv_ds);
  const __m256 two_inv_ds = _mm256_set1_ps(2 * p.table.inv_ds);
  const __m256i last = _mm256_set1_epi32(p.table.n - 1);
  alignas(32) float scf[8] = {}, slf[8] = {};
  for (int l = 0; l < 4; ++l) scf[l] = p.special_coul[l], slf[l] = p.special_lj[l];
  const __m256 scv = _mm256_load_ps(scf), slv = _mm256_load_ps(slf);
  const bool one_type = lj.ntypes == 1;
  const float* const row = &lj.c[one_type ? 0 : a.type[i] * lj.ntypes].cut2;  // 6 floats per partner type
  for (int q = 0; q < mp; q += 8) {
    const __m256i j = _mm256_load_si256(reinterpret_cast<const __m256i*>(c.j + q));
    // The separations, two times 4 lanes in fp64, rounded to fp32.
    __m256 dv[3], qj;
    {
      const __m128i jl = _mm256_castsi256_si128(j), jh = _mm256_extracti128_si256(j, 1);
      const double* xs[3] = {a.x, a.y, a.z};
      const __m256d ci[3] = {xi, yi, zi};
      for (int d = 0; d < 3; ++d) {
        const __m256d lo = image4(_mm256_sub_pd(ci[d], _mm256_i32gather_pd(xs[d], jl, 8)), L[d], h[d], mh[d]);
        const __m256d hi = image4(_mm256_sub_pd(ci[d], _mm256_i32gather_pd(xs[d], jh, 8)), L[d], h[d], mh[d]);
        dv[d] = _mm256_set_m128(_mm256_cvtpd_ps(hi), _mm256_cvtpd_ps(lo));
      }
      qj = _mm256_set_m128(_mm256_cvtpd_ps(_mm256_i32gather_pd(a.q, jh, 8)), _mm256_cvtpd_ps(_mm256_i32gather_pd(a.q, jl, 8)));
    }
    const __m256 dx = dv[0], dy = dv[1], dz = dv[2];
    const __m256 r2 = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(dx, dx), _mm256_mul_ps(dy, dy)), _mm256_mul_ps(dz, dz));
    const __m256 qq = _mm256_mul_ps(qqr2e, _mm256_mul_ps(qi, qj));
    const __m256i lev = _mm256_load_si256(reinterpret_cast<const __m256i*>(c.level + q));
    const __m256 fc = _mm256_permutevar8x32_ps(scv, lev), fl = _mm256_permutevar8x32_ps(slv, lev);
    const __m256 in_c = _mm256_and_ps(_mm256_cmp_ps(r2, cut2, _CMP_LT_OQ), one);
    const __m256 rinv = _mm256_div_ps(one, _mm256_sqrt_ps(r2)), r2i = _mm256_mul_ps(rinv, rinv);
    // coul_table_eval
    const __m256 v = _mm256_mul_ps(_mm256_min_ps(r2, smax), inv_ds);
    const __m256i k = _mm256_min_epi32(_mm256_cvttps_epi32(v), last);
    const __m256 x = _mm256_sub_ps(_mm256_mul_ps(two, _mm256_sub_ps(v, _mm256_cvtepi32_ps(k))), one);
    const __m256i k8 = _mm256_slli_epi32(k, 3);
    __m256 cm[8];
    for (int w = 0; w < 8; ++w) cm[w] = _mm256_i32gather_ps(p.table.c, _mm256_add_epi32(k8, _mm256_set1_epi32(w)), 4);
    __m256 pv = cm[7], dd = pv;
    for (int w = 6; w >= 1; --w) {
      pv = _mm256_add_ps(_mm256_mul_ps(pv, x), cm[w]);
      dd = _mm256_add_ps(_mm256_mul_ps(dd, x), pv);
    }
    pv = _mm256_add_ps(_mm256_mul_ps(pv, x), cm[0]);
    const __m256 dh = _mm256_mul_ps(dd, two_inv_ds);
    const __m256 qm = _mm256_mul_ps(qq, in_c);
    __m256 f = _mm256_mul_ps(qm, _mm256_add_ps(_mm256_mul_ps(_mm256_mul_ps(fc, rinv), r2i), _mm256_mul_ps(two, dh)));
    const __m256 ecoul = _mm256_mul_ps(_mm256_mul_ps(fc, qm), _mm256_sub_ps(rinv, pv));
    const __m256 neg = _mm256_xor_ps(_mm256_sub_ps(one, fc), sign);
    const __m256 ecorr = _mm256_mul_ps(_mm256_mul_ps(neg, qm), pv);
    __m256 evdwl = _mm256_setzero_ps();
    if (p.lj) {
      __m256 lc[6];
      if (one_type) {
        for (int w = 0; w < 6; ++w) lc[w] = _mm256_set1_ps(row[w]);
      } else {
        const __m256i t6 = _mm256_mullo_epi32(_mm256_i32gather_epi32(a.type, j, 4), _mm256_set1_epi32(6));
        for (int w = 0; w < 6; ++w) lc[w] = _mm256_i32gather_ps(row, _mm256_add_epi32(t6, _mm256_set1_epi32(w)), 4);
      }
      const __m256 in_l = _mm256_and_ps(_mm256_cmp_ps(r2, lc[0], _CMP_LT_OQ), fl);
      const __m256 r6i = _mm256_mul_ps(_mm256_mul_ps(r2i, r2i), r2i);
      f = _mm256_add_ps(f, _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(in_l, r6i), _mm256_sub_ps(_mm256_mul_ps(lc[1], r6i), lc[2])), r2i));
      evdwl = _mm256_mul_ps(in_l, _mm256_sub_ps(_mm256_mul_ps(r6i, _mm256_sub_ps(_mm256_mul_ps(lc[3], r6i), lc[4])), lc[5]));
    }
    // fp64 from here: the products with the separations, and the energy's sum (mixed_pair's).
    __m256d f2[2], d2[2];
    widen(f, f2[0], f2[1]);
    const __m256 comp[3] = {dx, dy, dz};
    double* const out[3] = {c.tx + q, c.ty + q, c.tz + q};
    for (int w = 0; w < 3; ++w) {
      widen(comp[w], d2[0], d2[1]);
      _mm256_store_pd(out[w], _mm256_mul_pd(d2[0], f2[0]));
      _mm256_store_pd(out[w] + 4, _mm256_mul_pd(d2[1], f2[1]));
    }
    if (energy) {
      __m256d ev[2], ec[2], ek[2], rr[2];
      widen(evdwl, ev[0], ev[1]);
      widen(ecoul, ec[0], ec[1]);
      widen(ecorr, ek[0], ek[1]);
      widen(r2, rr[0], rr[1]);
      for (int hh = 0; hh < 2; ++hh) {
        _mm256_store_pd(c.te + q + 4 * hh, _mm256_add_pd(_mm256_add_pd(ev[hh], ec[hh]), ek[hh]));
        _mm256_store_pd(c.tv + q + 4 * hh, _mm256_mul_pd(rr[hh], f2[hh]));
      }
    }
  }
}

#pragma GCC diagnostic pop

// Atom i's pairs nb[0 .. n) a chunk at a time: calls add(c, m) with each chunk's m pairs.
template <class Add>
void mixed_pairs(const Atoms& a, const LjTable32& lj, const CoulParams32& p, int i, const int* nb, std::int64_t n, MixedChunk& c,
                 Add add) {
  SpecialCursor sc{&a, i};
  for (std::int64_t k0 = 0; k0 < n; k0 += kChunk) {
    const int len = static_cast<int>(n - k0 < kChunk ? n - k0 : kChunk);
    mixed_chunk_avx2(len, nb + k0, a, lj, p, i, sc, a.energy, c);
    add(c, len);
  }
}
}  // namespace
#endif

void coul_forces_mixed(const Exec& ex, const Atoms& a, const LjTable32& lj, const CoulParams32& p) {
#if !defined(__CUDACC__) && defined(__x86_64__)
  if (!ex.is_cuda() && mixed_simd()) {
    detail::KernelTimer<int> timer(ex, "md.forces");
#pragma omp parallel
    {
      MixedChunk c;
#pragma omp for schedule(static)
      for (int i = 0; i < a.n; ++i) {
        double fx = 0, fy = 0, fz = 0, pe = 0, vir = 0;
        mixed_pairs(a, lj, p, i, a.neighbors + a.start[i], a.start[i + 1] - a.start[i], c, [&](const MixedChunk& ch, int m) {
          for (int k = 0; k < m; ++k) {
            fx += ch.tx[k];
            fy += ch.ty[k];
            fz += ch.tz[k];
          }
          if (a.energy)
            for (int k = 0; k < m; ++k) {
              pe += ch.te[k];
              vir += ch.tv[k];
            }
        });
        a.fx[i] = fx;
        a.fy[i] = fy;
        a.fz[i] = fz;
        if (a.energy) {
          a.pe[i] = 0.5 * pe;
          a.virial[i] = 0.5 * vir;
        }
      }
    }
    return;
  }
#endif
  const bool energy = a.energy;
  for_each(ex, "md.forces", Box(0, 0, 0, a.n, 1, 1), [=] CUMULUS_HD(int i, int, int) {
    double fx = 0, fy = 0, fz = 0, pe = 0, vir = 0;
    for (std::int64_t k = a.start[i]; k < a.start[i + 1]; ++k) {
      const int j = a.neighbors[k];
      const MixedPair m = mixed_pair(a, lj, p, i, j, a.nspecial > 0 ? special_level(a, i, a.id[j]) : 0);
      fx += m.dx * m.t.fpair;
      fy += m.dy * m.t.fpair;
      fz += m.dz * m.t.fpair;
      pe += m.t.evdwl + m.t.ecoul + m.t.ecorr;
      vir += m.r2 * m.t.fpair;
    }
    a.fx[i] = fx;
    a.fy[i] = fy;
    a.fz[i] = fz;
    if (energy) {
      a.pe[i] = 0.5 * pe;
      a.virial[i] = 0.5 * vir;
    }
  });
}

#if !defined(__CUDACC__)
// The half list: each pair once, from the slot of the smaller id, its terms added to both atoms
// (the partner's the exact negative), so each owned atom receives them in ascending partner id as
// the full list gives them (coul_forces_half's order). Ghost entries are scratch.
void coul_forces_half_mixed(const Atoms& a, const LjTable32& lj, const CoulParams32& p) {
  auto zero = [&](int i) {
    a.fx[i] = a.fy[i] = a.fz[i] = 0;
    a.pe[i] = a.virial[i] = 0;
  };
  for (int s = 0; s < a.nslots; ++s) zero(a.order[s]);
  for (int i = 0; i < a.n; ++i) zero(i);
#if defined(__x86_64__)
  if (mixed_simd()) {
    MixedChunk c;
    for (int s = 0; s < a.nslots; ++s) {
      const int i = a.order[s];
      double sx = a.fx[i], sy = a.fy[i], sz = a.fz[i], se = a.pe[i], sv = a.virial[i];
      mixed_pairs(a, lj, p, i, a.neighbors + a.start[s], a.start[s + 1] - a.start[s], c, [&](const MixedChunk& ch, int m) {
        for (int k = 0; k < m; ++k) {
          sx += ch.tx[k];
          sy += ch.ty[k];
          sz += ch.tz[k];
          const int j = ch.j[k];
          a.fx[j] -= ch.tx[k];
          a.fy[j] -= ch.ty[k];
          a.fz[j] -= ch.tz[k];
        }
        if (a.energy)
          for (int k = 0; k < m; ++k) {
            se += ch.te[k];
            sv += ch.tv[k];
            const int j = ch.j[k];
            a.pe[j] += ch.te[k];
            a.virial[j] += ch.tv[k];
          }
      });
      a.fx[i] = sx;
      a.fy[i] = sy;
      a.fz[i] = sz;
      a.pe[i] = se;
      a.virial[i] = sv;
    }
  } else
#endif
  for (int s = 0; s < a.nslots; ++s) {
    const int i = a.order[s];
    double sx = a.fx[i], sy = a.fy[i], sz = a.fz[i], se = a.pe[i], sv = a.virial[i];
    for (std::int64_t k = a.start[s]; k < a.start[s + 1]; ++k) {
      const int j = a.neighbors[k];
      const MixedPair m = mixed_pair(a, lj, p, i, j, a.nspecial > 0 ? special_level(a, i, a.id[j]) : 0);
      const double tx = m.dx * m.t.fpair, ty = m.dy * m.t.fpair, tz = m.dz * m.t.fpair;
      const double e = m.t.evdwl + m.t.ecoul + m.t.ecorr, v = m.r2 * m.t.fpair;
      sx += tx;
      sy += ty;
      sz += tz;
      se += e;
      sv += v;
      a.fx[j] -= tx;
      a.fy[j] -= ty;
      a.fz[j] -= tz;
      a.pe[j] += e;
      a.virial[j] += v;
    }
    a.fx[i] = sx;
    a.fy[i] = sy;
    a.fz[i] = sz;
    a.pe[i] = se;
    a.virial[i] = sv;
  }
  for (int i = 0; i < a.n; ++i) {
    a.pe[i] = 0.5 * a.pe[i];
    a.virial[i] = 0.5 * a.virial[i];
  }
}
#endif

ExactSum coul_sum_mixed(const Exec& ex, const Atoms& a, const LjTable32& lj, const CoulParams32& p, int which, int e) {
  const double to_units = ::ldexp(0.5, -e);  // the atom's half, in units of 2^e
#if !defined(__CUDACC__)
  if (a.half) {
    std::vector<double> acc(static_cast<std::size_t>(a.nslots), 0.0);
    for (int s = 0; s < a.nslots; ++s) {
      const int i = a.order[s];
      for (std::int64_t k = a.start[s]; k < a.start[s + 1]; ++k) {
        const int j = a.neighbors[k];
        const double v = share(which, mixed_pair(a, lj, p, i, j, a.nspecial > 0 ? special_level(a, i, a.id[j]) : 0));
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
      t += share(which, mixed_pair(a, lj, p, i, j, a.nspecial > 0 ? special_level(a, i, a.id[j]) : 0));
    }
    return ExactSum::of_units(t * to_units);
  });
}

}  // namespace coul_mixed_kernels::CUMULUS_PASS
}  // namespace cumulus::md
