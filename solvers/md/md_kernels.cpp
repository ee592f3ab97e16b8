// Kernel bodies of the molecular dynamics solver (one source per backend pass). Each atom sums its
// own pairs in list order, so forces and energies have the same bits on the host and on CUDA.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>
#if defined(__CUDACC__)
#include <cuda_runtime.h>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#endif
#if defined(__x86_64__) && !defined(__CUDACC__)
#include <immintrin.h>
#endif

#include "solvers/md/md_kernels.hpp"

namespace cumulus::md {
namespace kernels::CUMULUS_PASS {

namespace {
// Coordinates are wrapped into [0, L), so |d| < L and one comparison finds the nearest image (the
// same values as d - L floor(d / L + 0.5), without the division).
CUMULUS_HD inline double minimum_image(double d, double L) {
  const double h = 0.5 * L;
  return d > h ? d - L : (d < -h ? d + L : d);
}
// A coordinate that moved less than a box length, back into [0, L), counting the crossing.
CUMULUS_HD inline double wrap(double x, double L, int& image) {
  if (x < 0) {
    image -= 1;
    return x + L;
  }
  if (x >= L) {
    image += 1;
    return x - L;
  }
  return x;
}
}  // namespace

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

// The half list (Newton's third law), host and one thread: every pair once, from its atom of
// smaller id. The slots run in ascending id and each slot's neighbours are in ascending id, so every
// owned atom receives its pairs' terms in ascending partner id (smaller partners while their slots
// pass, larger ones in its own slot), the order of the full list; the partner's term is the exact
// negative (x_j - x_i = -(x_i - x_j), the same r^2 and fpair): forces, energies and virials have
// the full list's bits, at half the pair work. Ghost slots only add to owned partners.
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
  const bool energy = a.energy;
#if !defined(__CUDACC__)
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

// Velocity Verlet's first half: v += dt/2 f/m, x += dt v, then wrap into the box (image counts).
void kick_drift(const Exec& ex, const Atoms& a, double half_dt, double dt) {
  for_each(ex, "md.integrate", Box(0, 0, 0, a.n, 1, 1), [=] CUMULUS_HD(int i, int, int) {
    double* x[3] = {a.x, a.y, a.z};
    double* v[3] = {a.vx, a.vy, a.vz};
    const double* f[3] = {a.fx, a.fy, a.fz};
    int* im[3] = {a.ix, a.iy, a.iz};
    const double h = half_dt / a.mass[a.type[i]];
    for (int d = 0; d < 3; ++d) {
      const double vn = v[d][i] + h * f[d][i];
      v[d][i] = vn;
      x[d][i] = wrap(x[d][i] + dt * vn, a.box[d], im[d][i]);
    }
  });
}

namespace {
CUMULUS_HD inline std::uint64_t mix64(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
// A unit-variance, zero-mean random number keyed by (seed, atom id, step, component): the sum of
// four uniforms (Irwin-Hall), scaled. Integer hashing and +, *, so the host and CUDA draw the same
// bits, and a run is independent of the rank count and continues the same stream after a restart.
CUMULUS_HD inline double noise(std::uint64_t seed, std::uint64_t id, std::uint64_t step, int comp) {
  std::uint64_t z = mix64(mix64(seed ^ mix64(id)) ^ (step * 4 + static_cast<std::uint64_t>(comp)));
  double sum = 0;
  for (int k = 0; k < 4; ++k) {
    z = mix64(z + static_cast<std::uint64_t>(k));
    sum += static_cast<double>(z >> 11) * (1.0 / 9007199254740992.0);
  }
  return (sum - 2.0) * 1.7320508075688772;  // variance 4/12 -> 1
}
}  // namespace

// Langevin dynamics, BAOAB (Leimkuhler & Matthews): half kick, half drift, the Ornstein-Uhlenbeck
// step v = c1 v + c2 xi (c1 = exp(-gamma dt), c2 = sqrt((1 - c1^2) kT / m)), half drift; the force
// and the second half kick follow after the list check. `work` accumulates the kinetic energy the
// O step removed, so that total energy + work is conserved (the reported conserved quantity).
void kick_drift_langevin(const Exec& ex, const Atoms& a, double half_dt, double dt, double c1, double kT,
                         std::uint64_t seed, std::uint64_t step) {
  for_each(ex, "md.integrate", Box(0, 0, 0, a.n, 1, 1), [=] CUMULUS_HD(int i, int, int) {
    double* x[3] = {a.x, a.y, a.z};
    double* v[3] = {a.vx, a.vy, a.vz};
    const double* f[3] = {a.fx, a.fy, a.fz};
    int* im[3] = {a.ix, a.iy, a.iz};
    const double mass = a.mass[a.type[i]], h = half_dt / mass;
    const double c2 = sqrt((1 - c1 * c1) * kT / mass);
    const std::uint64_t id = static_cast<std::uint64_t>(a.id[i]);
    double dke = 0;
    for (int d = 0; d < 3; ++d) {
      double vn = v[d][i] + h * f[d][i];
      double xn = x[d][i] + 0.5 * dt * vn;
      const double vo = c1 * vn + c2 * noise(seed, id, step, d);
      dke += vn * vn - vo * vo;
      v[d][i] = vo;
      x[d][i] = wrap(xn + 0.5 * dt * vo, a.box[d], im[d][i]);
    }
    a.work[i] += 0.5 * mass * dke;
  });
}


void kick(const Exec& ex, const Atoms& a, double half_dt) {
  for_each(ex, "md.integrate", Box(0, 0, 0, a.n, 1, 1), [=] CUMULUS_HD(int i, int, int) {
    const double h = half_dt / a.mass[a.type[i]];
    a.vx[i] += h * a.fx[i];
    a.vy[i] += h * a.fy[i];
    a.vz[i] += h * a.fz[i];
  });
}

// Largest squared displacement since the list was built (minimum image): the list stays valid
// while it is below (skin / 2)^2.
double max_displacement2(const Exec& ex, const Atoms& a) {
  return reduce(ex, "md.neighbor_check", Box(0, 0, 0, a.n, 1, 1), 0.0, MaxOp{}, [=] CUMULUS_HD(int i, int, int) {
    const double dx = minimum_image(a.x[i] - a.x0[i], a.box[0]);
    const double dy = minimum_image(a.y[i] - a.y0[i], a.box[1]);
    const double dz = minimum_image(a.z[i] - a.z0[i], a.box[2]);
    return dx * dx + dy * dy + dz * dz;
  });
}


// Twice the kinetic energy as an exact fixed-point sum, for the Nose-Hoover thermostat, whose
// velocity scaling must not depend on the order atoms are added in (rank count, backend): each
// atom's m v^2 times 2^20 is split into its integer part (part 0) and the next 32 bits of its
// fraction (part 1); integer sums are exact in any order (unsigned, wrapping: exact whenever the
// total fits, 2^43 in units of m v^2 for part 0). The caller adds part0 2^-20 + part1 2^-52.
std::int64_t kinetic_fixed(const Exec& ex, const Atoms& a, int part) {
  const std::uint64_t sum = reduce(ex, "md.thermo", Box(0, 0, 0, a.n, 1, 1), std::uint64_t{0}, SumOp{},
                                   [=] CUMULUS_HD(int i, int, int) -> std::uint64_t {
    double x = a.mass[a.type[i]] * (a.vx[i] * a.vx[i] + a.vy[i] * a.vy[i] + a.vz[i] * a.vz[i]) * 1048576.0;
    if (!(x < 4503599627370496.0)) x = 4503599627370496.0;  // 2^52 (non-finite: caught by the health check)
    const double whole = floor(x);
    if (part == 0) return static_cast<std::uint64_t>(whole);
    return static_cast<std::uint64_t>(floor((x - whole) * 4294967296.0));
  });
  return static_cast<std::int64_t>(sum);
}

// Nose-Hoover: every velocity times the same factor.
void scale_velocities(const Exec& ex, const Atoms& a, double factor) {
  for_each(ex, "md.integrate", Box(0, 0, 0, a.n, 1, 1), [=] CUMULUS_HD(int i, int, int) {
    a.vx[i] *= factor;
    a.vy[i] *= factor;
    a.vz[i] *= factor;
  });
}
// The thermo sums, exactly: one per-atom quantity (0: m v^2, 1: potential energy, 2: virial r.F,
// 3: the thermostat's work) times 2^20, split into its floor (part 0) and the next 32 bits of its
// fraction (part 1, below 2^-52 truncated); integer sums are exact in any order (two's complement,
// wrapping), so the reported energies and pressure have the same bits at any rank count, in any
// storage layout and on the host and CUDA. The caller adds part0 2^-20 + part1 2^-52.
std::int64_t thermo_fixed(const Exec& ex, const Atoms& a, int which, int part) {
  const std::uint64_t sum = reduce(ex, "md.thermo", Box(0, 0, 0, a.n, 1, 1), std::uint64_t{0}, SumOp{},
                                   [=] CUMULUS_HD(int i, int, int) -> std::uint64_t {
    double v;
    if (which == 0) v = a.mass[a.type[i]] * (a.vx[i] * a.vx[i] + a.vy[i] * a.vy[i] + a.vz[i] * a.vz[i]);
    else if (which == 1) v = a.pe[i];
    else if (which == 2) v = a.virial[i];
    else v = a.work[i];
    double x = v * 1048576.0;
    if (!(x < 4503599627370496.0 && x > -4503599627370496.0)) x = 0;  // non-finite: the health check reports it
    const double whole = floor(x);
    if (part == 0) return static_cast<std::uint64_t>(static_cast<std::int64_t>(whole));
    return static_cast<std::uint64_t>(floor((x - whole) * 4294967296.0));
  });
  return static_cast<std::int64_t>(sum);
}

std::int64_t first_bad_atom(const Exec& ex, const Atoms& a) {
  return reduce(ex, "md.health", Box(0, 0, 0, a.n, 1, 1), std::numeric_limits<std::int64_t>::max(), MinOp{},
                [=] CUMULUS_HD(int i, int, int) -> std::int64_t {
                  const double s = a.x[i] + a.y[i] + a.z[i] + a.vx[i] + a.vy[i] + a.vz[i];
                  return (s - s == 0) ? std::numeric_limits<std::int64_t>::max() : i;
                });
}


// ------------------------------------------------------------------------------------------------
// The neighbour list built by kernels: what md.cpp's build_list_kernels runs, on CUDA (where the
// atoms stay on the device) and, for testing and as the oracle's twin, on the host. Binning is a
// stable radix sort of the atoms by list bin (CUB; no atomics, so the bins' contents come in a
// fixed order), bin boundaries from the sorted keys, then two passes over each owned atom's 27
// bins: count, prefix sum, fill. Every atom's neighbours are then sorted by global id, so that
// its forces sum in the order of the host's list: the same bits on both backends.
namespace {
CUMULUS_HD inline int list_bin(double x, int nb, double L) {
  const int b = static_cast<int>(floor(x * nb / L));
  return b < 0 ? 0 : (b > nb - 1 ? nb - 1 : b);
}
CUMULUS_HD inline int wrap_bin(int b, int nb) { return b < 0 ? b + nb : (b >= nb ? b - nb : b); }
// Calls visit(j) for every local atom j other than i within cutoff + skin of atom i (minimum
// image; for a pair within reach that is the host builder's shifted difference, bit for bit).
template <class Visit>
CUMULUS_HD inline void for_each_partner(const ListInput& in, int i, Visit&& visit) {
  const double xi = in.x[i], yi = in.y[i], zi = in.z[i];
  const double rl2 = in.g.rl2, bx = in.g.box[0], by = in.g.box[1], bz = in.g.box[2];
  if (in.g.brute) {
    const std::int64_t idi = in.id[i];
    for (int j = 0; j < in.nlocal; ++j) {
      const double dx = minimum_image(xi - in.x[j], bx), dy = minimum_image(yi - in.y[j], by),
                   dz = minimum_image(zi - in.z[j], bz);
      if (in.id[j] != idi && dx * dx + dy * dy + dz * dz < rl2) visit(j);
    }
    return;
  }
  const int n0 = in.g.nb[0], n1 = in.g.nb[1], n2 = in.g.nb[2];
  const int b0 = list_bin(xi, n0, bx), b1 = list_bin(yi, n1, by), b2 = list_bin(zi, n2, bz);
  for (int dz = -1; dz <= 1; ++dz) {
    const int cz = wrap_bin(b2 + dz, n2);
    for (int dy = -1; dy <= 1; ++dy) {
      const int cy = wrap_bin(b1 + dy, n1);
      for (int dx = -1; dx <= 1; ++dx) {
        const int b = (cz * n1 + cy) * n0 + wrap_bin(b0 + dx, n0);
        for (int k = in.bin_start[b]; k < in.bin_start[b + 1]; ++k) {
          const int j = in.bin_atoms ? in.bin_atoms[k] : k;
          const double ex = minimum_image(xi - in.x[j], bx), ey = minimum_image(yi - in.y[j], by),
                       ez = minimum_image(zi - in.z[j], bz);
          if (j != i && ex * ex + ey * ey + ez * ez < rl2) visit(j);
        }
      }
    }
  }
}
}  // namespace

void bin_keys(const Exec& ex, const ListInput& in, int n, int* key, int* seq) {
  for_each(ex, "md.neighbor_kernels", Box(0, 0, 0, n, 1, 1), [=] CUMULUS_HD(int i, int, int) {
    const ListGrid& g = in.g;
    key[i] = (list_bin(in.z[i], g.nb[2], g.box[2]) * g.nb[1] + list_bin(in.y[i], g.nb[1], g.box[1])) * g.nb[0] +
             list_bin(in.x[i], g.nb[0], g.box[0]);
    seq[i] = i;
  });
}

// Stable sort of (key, value) pairs by key, keys in [0, nbins). CUDA: CUB's radix sort over the
// key bits in use; `temp` is its scratch (temp == nullptr: *temp_bytes receives the size needed).
// Host: a counting sort (stable), no scratch.
void sort_pairs(const Exec& ex, const int* keys_in, int* keys_out, const int* vals_in, int* vals_out, int n,
                int nbins, void* temp, std::size_t* temp_bytes) {
  int bits = 1;
  while (bits < 31 && (1 << bits) < nbins) ++bits;
  if (ex.is_cuda()) {
#if CUMULUS_COMPILING_CUDA
    std::size_t bytes = *temp_bytes;
    const cudaError_t e = cub::DeviceRadixSort::SortPairs(temp, bytes, keys_in, keys_out, vals_in, vals_out, n, 0, bits,
                                                          ex.stream());
    if (e != cudaSuccess) throw Error(std::string("md.neighbor_build: CUB radix sort: ") + cudaGetErrorString(e));
    if (temp == nullptr) *temp_bytes = bytes;
    else detail::check_cuda_launch(ex, "md.neighbor_build.sort", Box(0, 0, 0, n, 1, 1));
    return;
#endif
  }
  if (temp == nullptr) {
    *temp_bytes = 0;
    return;
  }
  std::vector<int> start(static_cast<std::size_t>(nbins) + 1, 0);
  for (int i = 0; i < n; ++i) ++start[static_cast<std::size_t>(keys_in[i]) + 1];
  for (int b = 0; b < nbins; ++b) start[static_cast<std::size_t>(b) + 1] += start[static_cast<std::size_t>(b)];
  for (int i = 0; i < n; ++i) {
    const int at = start[static_cast<std::size_t>(keys_in[i])]++;
    keys_out[at] = keys_in[i];
    vals_out[at] = vals_in[i];
  }
}

// bin_start[b] = the first position k with sorted_keys[k] >= b (bin_start[nbins] = n): each entry
// written once, by the position where the key sequence steps past it.
void bin_bounds(const Exec& ex, const int* sorted_keys, int n, int nbins, int* bin_start) {
  for_each(ex, "md.neighbor_kernels", Box(0, 0, 0, n + 1, 1, 1), [=] CUMULUS_HD(int k, int, int) {
    const int prev = k == 0 ? -1 : sorted_keys[k - 1];
    const int cur = k == n ? nbins : sorted_keys[k];
    for (int b = prev + 1; b <= cur; ++b) bin_start[b] = k;
  });
}

// start[0] = 0, start[k + 1] = counts[0] + ... + counts[k] (CUB's scan on CUDA, scratch as sort_pairs).
void prefix_sum(const Exec& ex, const std::int64_t* counts, std::int64_t* start, int n, void* temp,
                std::size_t* temp_bytes) {
  if (ex.is_cuda()) {
#if CUMULUS_COMPILING_CUDA
    std::size_t bytes = *temp_bytes;
    cudaError_t e = cub::DeviceScan::InclusiveSum(temp, bytes, counts, start + 1, n, ex.stream());
    if (e == cudaSuccess && temp != nullptr) e = cudaMemsetAsync(start, 0, sizeof(std::int64_t), ex.stream());
    if (e != cudaSuccess) throw Error(std::string("md.neighbor_build: CUB scan: ") + cudaGetErrorString(e));
    if (temp == nullptr) *temp_bytes = bytes;
    else detail::check_cuda_launch(ex, "md.neighbor_build.scan", Box(0, 0, 0, n, 1, 1));
    return;
#endif
  }
  if (temp == nullptr) {
    *temp_bytes = 0;
    return;
  }
  start[0] = 0;
  for (int k = 0; k < n; ++k) start[k + 1] = start[k] + counts[k];
}

void list_count(const Exec& ex, const ListInput& in, std::int64_t* counts) {
  for_each(ex, "md.neighbor_kernels", Box(0, 0, 0, in.nown, 1, 1), [=] CUMULUS_HD(int i, int, int) {
    std::int64_t c = 0;
    for_each_partner(in, i, [&](int) { ++c; });
    counts[i] = c;
  });
}

// Writes atom i's neighbours at neighbors[start[i] ..], then sorts them by global id (insertion
// sort: a few dozen entries, and the bins of a lattice-born system hand them over nearly sorted).
void list_fill(const Exec& ex, const ListInput& in, const std::int64_t* start, int* neighbors) {
  for_each(ex, "md.neighbor_kernels", Box(0, 0, 0, in.nown, 1, 1), [=] CUMULUS_HD(int i, int, int) {
    int* const out = neighbors + start[i];
    int m = 0;
    for_each_partner(in, i, [&](int j) { out[m++] = j; });
    for (int p = 1; p < m; ++p) {
      const int j = out[p];
      const std::int64_t key = in.id[j];
      int q = p - 1;
      while (q >= 0 && in.id[out[q]] > key) {
        out[q + 1] = out[q];
        --q;
      }
      out[q + 1] = j;
    }
  });
}

// out[k] = in[perm[k]]: the atoms' arrays put into a new order (the spatial re-sort).
void gather_f64(const Exec& ex, const double* in, double* out, const int* perm, int n) {
  for_each(ex, "md.neighbor_kernels", Box(0, 0, 0, n, 1, 1), [=] CUMULUS_HD(int k, int, int) { out[k] = in[perm[k]]; });
}
void gather_i32(const Exec& ex, const int* in, int* out, const int* perm, int n) {
  for_each(ex, "md.neighbor_kernels", Box(0, 0, 0, n, 1, 1), [=] CUMULUS_HD(int k, int, int) { out[k] = in[perm[k]]; });
}
void gather_i64(const Exec& ex, const std::int64_t* in, std::int64_t* out, const int* perm, int n) {
  for_each(ex, "md.neighbor_kernels", Box(0, 0, 0, n, 1, 1), [=] CUMULUS_HD(int k, int, int) { out[k] = in[perm[k]]; });
}


// Ghost positions every step, on the backend: the owned atoms others need, three coordinates each
// (out[3k .. 3k + 2] = atom idx[k]), and what arrived, into atoms first .. first + n - 1.
void pack_positions(const Exec& ex, const Atoms& a, const int* idx, int n, double* out) {
  for_each(ex, "md.ghosts", Box(0, 0, 0, n, 1, 1), [=] CUMULUS_HD(int k, int, int) {
    const int i = idx[k];
    out[3 * k] = a.x[i];
    out[3 * k + 1] = a.y[i];
    out[3 * k + 2] = a.z[i];
  });
}
void unpack_positions(const Exec& ex, const Atoms& a, const double* in, int first, int n) {
  for_each(ex, "md.ghosts", Box(0, 0, 0, n, 1, 1), [=] CUMULUS_HD(int k, int, int) {
    a.x[first + k] = in[3 * k];
    a.y[first + k] = in[3 * k + 1];
    a.z[first + k] = in[3 * k + 2];
  });
}

}  // namespace kernels::CUMULUS_PASS
}  // namespace cumulus::md
