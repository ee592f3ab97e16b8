// Kernel bodies of the lj/cut force term (one source per backend pass: core/kernel_pass.hpp). Each
// atom sums its own pairs in list order, so forces and energies have the same bits on the host and
// on CUDA.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>
#if defined(__x86_64__) && !defined(__CUDACC__)
#include <immintrin.h>
#endif

#include "solvers/md/pair_lj_cut.hpp"

namespace cumulus::md {
namespace lj_kernels::CUMULUS_PASS {

// Full list: every pair is seen from both atoms, each taking its own force and half the energy
// and virial (no atomic updates, no order dependence). One type: its coefficients stay in
// registers; several: looked up per pair from the table.
namespace {
// One pair's F(r) / r and energy, both zero beyond the cutoff.
CUMULUS_HD inline void lj_pair(const LjCoefficients& lj, double r2, double* fpair, double* e) {
  const double in = r2 < lj.cut2 ? 1.0 : 0.0;
  const double r2i = 1.0 / r2, r6i = r2i * r2i * r2i;
  *fpair = r6i * (lj.lj1 * r6i - lj.lj2) * r2i * in;
  *e = (r6i * (lj.lj3 * r6i - lj.lj4) - lj.offset) * in;
}

struct PairSum {
  double fx = 0, fy = 0, fz = 0, pe = 0, vir = 0;
  // Branch-free: about a third of the list lies in the skin, beyond the cutoff, and a branch on it
  // is mispredicted often. Every pair is computed and its terms multiplied by 1 or 0: the sums
  // have exactly the bits of skipping (x * 1 = x; s + 0 = s, and no sum is -0).
  CUMULUS_HD inline void add(const LjCoefficients& lj, double dx, double dy, double dz) {
    const double r2 = dx * dx + dy * dy + dz * dz;
    double fpair, e;
    lj_pair(lj, r2, &fpair, &e);
    fx += dx * fpair;
    fy += dy * fpair;
    fz += dz * fpair;
    pe += e;
    vir += r2 * fpair;
  }
};
}  // namespace

// The host's vectorised pair terms, shared by the half list (lj_forces_half, below) and the full
// list on the host.
#if !defined(__CUDACC__)
namespace {
// The per-pair terms of a chunk of neighbours, in a loop the compiler vectorises (partners'
// coordinates gathered beforehand): t = (dx fpair, dy fpair, dz fpair, e, r^2 fpair), the very
// products lj_forces takes. Compiled for AVX-512, AVX2 and the baseline and chosen at run time;
// IEEE operations per lane (no contraction: ISO C++) give every version the same bits. The loop
// runs over whole vectors of 8 (the caller pads the chunk with copies of its last partner, whose
// terms are never read): a slot has about 40 partners, and a scalar remainder of up to 7 of them
// cost as much as the vector part.
constexpr int kChunk = 64;
constexpr int kLanes = 8;
struct alignas(64) Chunk {
  double x[kChunk], y[kChunk], z[kChunk];
  double cut2[kChunk], lj1[kChunk], lj2[kChunk], lj3[kChunk], lj4[kChunk], off[kChunk];
  double tx[kChunk], ty[kChunk], tz[kChunk], te[kChunk], tv[kChunk];
};
inline int padded(int m) { return (m + kLanes - 1) / kLanes * kLanes; }
__attribute__((target_clones("avx512f", "avx2", "default"))) void pair_terms_one(
    int m, double xi, double yi, double zi, const double* box, const LjCoefficients& c, bool energy, Chunk& k) {
  const int mp = padded(m);
  const double bx = box[0], by = box[1], bz = box[2];
  const double cut2 = c.cut2, lj1 = c.lj1, lj2 = c.lj2, lj3 = c.lj3, lj4 = c.lj4, offset = c.offset;
  for (int q = 0; q < mp; ++q) {
    const double dx = minimum_image(xi - k.x[q], bx);
    const double dy = minimum_image(yi - k.y[q], by);
    const double dz = minimum_image(zi - k.z[q], bz);
    const double r2 = dx * dx + dy * dy + dz * dz;
    const double in = r2 < cut2 ? 1.0 : 0.0;
    const double r2i = 1.0 / r2, r6i = r2i * r2i * r2i;
    const double fpair = r6i * (lj1 * r6i - lj2) * r2i * in;
    k.tx[q] = dx * fpair;
    k.ty[q] = dy * fpair;
    k.tz[q] = dz * fpair;
    if (energy) {
      k.te[q] = (r6i * (lj3 * r6i - lj4) - offset) * in;
      k.tv[q] = r2 * fpair;
    }
  }
}
#if defined(__x86_64__)
// pair_terms_one with the partners' coordinates gathered in the vector loop (AVX-512 by hand), the
// same operations in the same order (so the same bits); lanes past m take a partner one unit off
// in x, finite and never read back.
__attribute__((target("avx512f,avx512vl"))) inline __m512d image512(__m512d d, __m512d L, __m512d h, __m512d mh) {
  const __mmask8 gt = _mm512_cmp_pd_mask(d, h, _CMP_GT_OQ);
  const __mmask8 lt = _mm512_cmp_pd_mask(d, mh, _CMP_LT_OQ);
  return _mm512_mask_add_pd(_mm512_mask_sub_pd(d, gt, d, L), static_cast<__mmask8>(lt & ~gt), d, L);
}
__attribute__((target("avx512f,avx512vl"))) void pair_terms_one_gather(
    int m, const int* nb, const double* x, const double* y, const double* z, double xi, double yi, double zi,
    const double* box, const LjCoefficients& c, bool energy, Chunk& k) {
  const __m512d bx = _mm512_set1_pd(box[0]), by = _mm512_set1_pd(box[1]), bz = _mm512_set1_pd(box[2]);
  const __m512d hx = _mm512_set1_pd(0.5 * box[0]), hy = _mm512_set1_pd(0.5 * box[1]), hz = _mm512_set1_pd(0.5 * box[2]);
  const __m512d mhx = _mm512_set1_pd(-(0.5 * box[0])), mhy = _mm512_set1_pd(-(0.5 * box[1])), mhz = _mm512_set1_pd(-(0.5 * box[2]));
  const __m512d vxi = _mm512_set1_pd(xi), vyi = _mm512_set1_pd(yi), vzi = _mm512_set1_pd(zi);
  const __m512d fill_x = _mm512_set1_pd(xi + 1.0);
  const __m512d cut2 = _mm512_set1_pd(c.cut2), lj1 = _mm512_set1_pd(c.lj1), lj2 = _mm512_set1_pd(c.lj2),
                lj3 = _mm512_set1_pd(c.lj3), lj4 = _mm512_set1_pd(c.lj4), off = _mm512_set1_pd(c.offset);
  const __m512d one = _mm512_set1_pd(1.0);
  for (int q = 0; q < m; q += 8) {
    const __mmask8 live = m - q >= 8 ? __mmask8(0xFF) : __mmask8((1u << (m - q)) - 1u);
    const __m256i idx = _mm256_maskz_loadu_epi32(live, nb + q);
    const __m512d xj = _mm512_mask_i32gather_pd(fill_x, live, idx, x, 8);
    const __m512d yj = _mm512_mask_i32gather_pd(vyi, live, idx, y, 8);
    const __m512d zj = _mm512_mask_i32gather_pd(vzi, live, idx, z, 8);
    const __m512d dx = image512(_mm512_sub_pd(vxi, xj), bx, hx, mhx);
    const __m512d dy = image512(_mm512_sub_pd(vyi, yj), by, hy, mhy);
    const __m512d dz = image512(_mm512_sub_pd(vzi, zj), bz, hz, mhz);
    const __m512d r2 = _mm512_add_pd(_mm512_add_pd(_mm512_mul_pd(dx, dx), _mm512_mul_pd(dy, dy)), _mm512_mul_pd(dz, dz));
    const __m512d in = _mm512_maskz_mov_pd(_mm512_cmp_pd_mask(r2, cut2, _CMP_LT_OQ), one);
    const __m512d r2i = _mm512_div_pd(one, r2);
    const __m512d r6i = _mm512_mul_pd(_mm512_mul_pd(r2i, r2i), r2i);
    const __m512d fpair =
        _mm512_mul_pd(_mm512_mul_pd(_mm512_mul_pd(r6i, _mm512_sub_pd(_mm512_mul_pd(lj1, r6i), lj2)), r2i), in);
    _mm512_store_pd(k.tx + q, _mm512_mul_pd(dx, fpair));
    _mm512_store_pd(k.ty + q, _mm512_mul_pd(dy, fpair));
    _mm512_store_pd(k.tz + q, _mm512_mul_pd(dz, fpair));
    if (energy) {
      _mm512_store_pd(k.te + q, _mm512_mul_pd(_mm512_sub_pd(_mm512_mul_pd(r6i, _mm512_sub_pd(_mm512_mul_pd(lj3, r6i), lj4)), off), in));
      _mm512_store_pd(k.tv + q, _mm512_mul_pd(r2, fpair));
    }
  }
}
#endif
__attribute__((target_clones("avx512f", "avx2", "default"))) void pair_terms_many(
    int m, double xi, double yi, double zi, const double* box, bool energy, Chunk& k) {
  const int mp = padded(m);
  const double bx = box[0], by = box[1], bz = box[2];
  for (int q = 0; q < mp; ++q) {
    const double dx = minimum_image(xi - k.x[q], bx);
    const double dy = minimum_image(yi - k.y[q], by);
    const double dz = minimum_image(zi - k.z[q], bz);
    const double r2 = dx * dx + dy * dy + dz * dz;
    const double in = r2 < k.cut2[q] ? 1.0 : 0.0;
    const double r2i = 1.0 / r2, r6i = r2i * r2i * r2i;
    const double fpair = r6i * (k.lj1[q] * r6i - k.lj2[q]) * r2i * in;
    k.tx[q] = dx * fpair;
    k.ty[q] = dy * fpair;
    k.tz[q] = dz * fpair;
    if (energy) {
      k.te[q] = (r6i * (k.lj3[q] * r6i - k.lj4[q]) - k.off[q]) * in;
      k.tv[q] = r2 * fpair;
    }
  }
}
inline bool has_avx512() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl");
#else
  return false;
#endif
}
// The terms of one chunk of atom (xi, yi, zi)'s neighbours nb[0 .. m) into k.tx .. k.tv (row: its
// row of the pair table): the AVX-512 gather for one type where the CPU has it, else the partners
// gathered into k (padding lanes copy the last, never read back) and the portable loops. Both
// force loops (half list and full list) take their terms from here.
inline void chunk_terms(int m, const int* nb, const Atoms& a, double xi, double yi, double zi,
                        const LjCoefficients* row, int ntypes, bool avx512, Chunk& k) {
#if defined(__x86_64__)
  if (ntypes == 1 && avx512) {
    pair_terms_one_gather(m, nb, a.x, a.y, a.z, xi, yi, zi, a.box, row[0], a.energy, k);
    return;
  }
#else
  (void)avx512;
#endif
  for (int q = 0; q < padded(m); ++q) {
    const int j = nb[q < m ? q : m - 1];
    k.x[q] = a.x[j];
    k.y[q] = a.y[j];
    k.z[q] = a.z[j];
  }
  if (ntypes == 1) {
    pair_terms_one(m, xi, yi, zi, a.box, row[0], a.energy, k);
    return;
  }
  for (int q = 0; q < padded(m); ++q) {
    const LjCoefficients& c = row[a.type[nb[q < m ? q : m - 1]]];
    k.cut2[q] = c.cut2;
    k.lj1[q] = c.lj1;
    k.lj2[q] = c.lj2;
    k.lj3[q] = c.lj3;
    k.lj4[q] = c.lj4;
    k.off[q] = c.offset;
  }
  pair_terms_many(m, xi, yi, zi, a.box, a.energy, k);
}
}  // namespace
#endif

// The half list (Newton's third law), host and one thread: every pair once, from its atom of
// smaller id. The slots run in ascending id and each slot's neighbours are in ascending id, so every
// owned atom receives its pairs' terms in ascending partner id (smaller partners while their slots
// pass, larger ones in its own slot), the order of the full list; the partner's term is the exact
// negative (x_j - x_i = -(x_i - x_j), the same r^2 and fpair): forces, energies and virials have
// the full list's bits, at half the pair work. Ghost slots only add to owned partners. The terms
// are computed a chunk of neighbours at a time (vectorised), then added in list order.
void lj_forces_half(const Atoms& a, const LjTable& lj) {
  // Local copies of the pointers: stores through them cannot then make the compiler reload them.
  double* const __restrict fx = a.fx;
  double* const __restrict fy = a.fy;
  double* const __restrict fz = a.fz;
  double* const __restrict pe = a.pe;
  double* const __restrict vir = a.virial;
  const double* const __restrict x = a.x;
  const double* const __restrict y = a.y;
  const double* const __restrict z = a.z;
  // Owned atoms and, after them, a scratch entry per ghost (the host build sizes the arrays so):
  // ghosts' terms land there unread, and the loop needs no branch on the partner.
  for (int i = 0; i < a.nslots; ++i) {
    fx[i] = 0;
    fy[i] = 0;
    fz[i] = 0;
    pe[i] = 0;
    vir[i] = 0;
  }
  const int nown = a.n;
#if !defined(__CUDACC__)
  const bool energy = a.energy;  // (the CUDA pass's copy of this host-only loop sums every term)
  Chunk k;
  static const bool avx512 = has_avx512();
#endif
  for (int s = 0; s < a.nslots; ++s) {
    const int i = a.order[s];
    const bool own = i < nown;
    const double xi = x[i], yi = y[i], zi = z[i];
    const LjCoefficients* row = lj.c + (lj.ntypes == 1 ? 0 : a.type[i] * lj.ntypes);
    PairSum si;
    if (own) {
      si.fx = fx[i];
      si.fy = fy[i];
      si.fz = fz[i];
      si.pe = pe[i];
      si.vir = vir[i];
    }
#if !defined(__CUDACC__)
    for (std::int64_t k0 = a.start[s]; k0 < a.start[s + 1]; k0 += kChunk) {
      const int m = static_cast<int>(a.start[s + 1] - k0 < kChunk ? a.start[s + 1] - k0 : kChunk);
      const int* const __restrict nb = a.neighbors + k0;
      chunk_terms(m, nb, a, xi, yi, zi, row, lj.ntypes, avx512, k);
      if (energy) {
        for (int q = 0; q < m; ++q) {
          si.fx += k.tx[q];
          si.fy += k.ty[q];
          si.fz += k.tz[q];
          si.pe += k.te[q];
          si.vir += k.tv[q];
          const int j = nb[q];
          fx[j] -= k.tx[q];
          fy[j] -= k.ty[q];
          fz[j] -= k.tz[q];
          pe[j] += k.te[q];
          vir[j] += k.tv[q];
        }
      } else {
        for (int q = 0; q < m; ++q) {
          si.fx += k.tx[q];
          si.fy += k.ty[q];
          si.fz += k.tz[q];
          const int j = nb[q];
          fx[j] -= k.tx[q];
          fy[j] -= k.ty[q];
          fz[j] -= k.tz[q];
        }
      }
    }
#else
    for (std::int64_t kk = a.start[s]; kk < a.start[s + 1]; ++kk) {
      const int j = a.neighbors[kk];
      const double dx = minimum_image(xi - x[j], a.box[0]);
      const double dy = minimum_image(yi - y[j], a.box[1]);
      const double dz = minimum_image(zi - z[j], a.box[2]);
      const LjCoefficients& c = row[lj.ntypes == 1 ? 0 : a.type[j]];
      double fpair, e;
      lj_pair(c, dx * dx + dy * dy + dz * dz, &fpair, &e);
      si.fx += dx * fpair;
      si.fy += dy * fpair;
      si.fz += dz * fpair;
      si.pe += e;
      si.vir += (dx * dx + dy * dy + dz * dz) * fpair;
      if (j < nown) {
        fx[j] -= dx * fpair;
        fy[j] -= dy * fpair;
        fz[j] -= dz * fpair;
        pe[j] += e;
        vir[j] += (dx * dx + dy * dy + dz * dz) * fpair;
      }
    }
#endif
    if (own) {
      fx[i] = si.fx;
      fy[i] = si.fy;
      fz[i] = si.fz;
      pe[i] = si.pe;
      vir[i] = si.vir;
    }
  }
  for (int i = 0; i < a.n; ++i) {
    pe[i] = 0.5 * pe[i];
    vir[i] = 0.5 * vir[i];
  }
}

#if !defined(__CUDACC__)
namespace {
// The full list on the host (several threads): each atom's terms a chunk of neighbours at a time,
// vectorised as in the half list, then added in list order: PairSum::add's operations in its order,
// so the bits of the plain loop below, which ran 6x slower per pair (the neighbour loop, inside the
// vectorised loop over atoms, went scalar through gathers). Energies and virials only when asked.
void lj_forces_full_host(const Atoms& a, const LjTable& lj) {
  static const bool avx512 = has_avx512();
  const bool energy = a.energy;
#pragma omp parallel
  {
    Chunk k;
#pragma omp for schedule(static)
    for (int i = 0; i < a.n; ++i) {
      const double xi = a.x[i], yi = a.y[i], zi = a.z[i];
      const LjCoefficients* row = lj.c + (lj.ntypes == 1 ? 0 : a.type[i] * lj.ntypes);
      PairSum si;
      for (std::int64_t k0 = a.start[i]; k0 < a.start[i + 1]; k0 += kChunk) {
        const int m = static_cast<int>(a.start[i + 1] - k0 < kChunk ? a.start[i + 1] - k0 : kChunk);
        const int* const nb = a.neighbors + k0;
        chunk_terms(m, nb, a, xi, yi, zi, row, lj.ntypes, avx512, k);
        for (int q = 0; q < m; ++q) {
          si.fx += k.tx[q];
          si.fy += k.ty[q];
          si.fz += k.tz[q];
        }
        if (energy)
          for (int q = 0; q < m; ++q) {
            si.pe += k.te[q];
            si.vir += k.tv[q];
          }
      }
      a.fx[i] = si.fx;
      a.fy[i] = si.fy;
      a.fz[i] = si.fz;
      if (energy) {
        a.pe[i] = 0.5 * si.pe;
        a.virial[i] = 0.5 * si.vir;
      }
    }
  }
}
}  // namespace
#endif

void lj_forces(const Exec& ex, const Atoms& a, const LjTable& lj) {
#if !defined(__CUDACC__)
  if (!ex.is_cuda()) {
    detail::KernelTimer<int> timer(ex, "md.forces");
    lj_forces_full_host(a, lj);
    return;
  }
#endif
  for_each(ex, "md.forces", Box(0, 0, 0, a.n, 1, 1), [=] CUMULUS_HD(int i, int, int) {
    const double xi = a.x[i], yi = a.y[i], zi = a.z[i];
    PairSum s;
    if (lj.ntypes == 1) {
      const LjCoefficients c = lj.c[0];
      for (std::int64_t k = a.start[i]; k < a.start[i + 1]; ++k) {
        const int j = a.neighbors[k];
        s.add(c, minimum_image(xi - a.x[j], a.box[0]), minimum_image(yi - a.y[j], a.box[1]),
              minimum_image(zi - a.z[j], a.box[2]));
      }
    } else {
      const LjCoefficients* row = lj.c + a.type[i] * lj.ntypes;
      for (std::int64_t k = a.start[i]; k < a.start[i + 1]; ++k) {
        const int j = a.neighbors[k];
        s.add(row[a.type[j]], minimum_image(xi - a.x[j], a.box[0]), minimum_image(yi - a.y[j], a.box[1]),
              minimum_image(zi - a.z[j], a.box[2]));
      }
    }
    a.fx[i] = s.fx;
    a.fy[i] = s.fy;
    a.fz[i] = s.fz;
    a.pe[i] = 0.5 * s.pe;
    a.virial[i] = 0.5 * s.vir;
  });
}

// One component of the virial tensor (thermo rows only: it is not in the time loop). The full list:
// each owned atom sums its pairs' d_a d_b F(r)/r in list order (ascending partner id), half of
// which is its share. The half list (host): every pair's term, the same for both atoms ((-d_a)(-d_b)
// = d_a d_b), added to both in slot order, so each atom receives its terms in ascending partner id
// as in the full list: the same per-atom sums. The atoms' shares are then summed exactly, so the
// tensor has the same bits at any rank count, list and backend.
namespace {
CUMULUS_HD inline double tensor_term(int component, double dx, double dy, double dz) {
  switch (component) {
    case 0: return dx * dx;
    case 1: return dy * dy;
    case 2: return dz * dz;
    case 3: return dx * dy;
    case 4: return dx * dz;
    default: return dy * dz;
  }
}
}  // namespace

ExactSum lj_virial(const Exec& ex, const Atoms& a, const LjTable& lj, int component, int e) {
  const double to_units = ::ldexp(0.5, -e);  // the atom's half, in units of 2^e
#if !defined(__CUDACC__)
  if (a.half) {
    std::vector<double> acc(static_cast<std::size_t>(a.nslots), 0.0);
    for (int s = 0; s < a.nslots; ++s) {
      const int i = a.order[s];
      const LjCoefficients* row = lj.c + (lj.ntypes == 1 ? 0 : a.type[i] * lj.ntypes);
      for (std::int64_t k = a.start[s]; k < a.start[s + 1]; ++k) {
        const int j = a.neighbors[k];
        const double dx = minimum_image(a.x[i] - a.x[j], a.box[0]), dy = minimum_image(a.y[i] - a.y[j], a.box[1]),
                     dz = minimum_image(a.z[i] - a.z[j], a.box[2]);
        double fpair, en;
        lj_pair(row[lj.ntypes == 1 ? 0 : a.type[j]], dx * dx + dy * dy + dz * dz, &fpair, &en);
        const double t = tensor_term(component, dx, dy, dz) * fpair;
        acc[static_cast<std::size_t>(i)] += t;
        acc[static_cast<std::size_t>(j)] += t;
      }
    }
    ExactSum sum;
    for (int i = 0; i < a.n; ++i) sum = sum + ExactSum::of_units(acc[static_cast<std::size_t>(i)] * to_units);
    return sum;
  }
#endif
  return reduce(ex, "md.virial", Box(0, 0, 0, a.n, 1, 1), ExactSum{}, SumOp{}, [=] CUMULUS_HD(int i, int, int) {
    const LjCoefficients* row = lj.c + (lj.ntypes == 1 ? 0 : a.type[i] * lj.ntypes);
    double t = 0;
    for (std::int64_t k = a.start[i]; k < a.start[i + 1]; ++k) {
      const int j = a.neighbors[k];
      const double dx = minimum_image(a.x[i] - a.x[j], a.box[0]), dy = minimum_image(a.y[i] - a.y[j], a.box[1]),
                   dz = minimum_image(a.z[i] - a.z[j], a.box[2]);
      double fpair, en;
      lj_pair(row[lj.ntypes == 1 ? 0 : a.type[j]], dx * dx + dy * dy + dz * dz, &fpair, &en);
      t += tensor_term(component, dx, dy, dz) * fpair;
    }
    return ExactSum::of_units(t * to_units);
  });
}

}  // namespace lj_kernels::CUMULUS_PASS
}  // namespace cumulus::md
