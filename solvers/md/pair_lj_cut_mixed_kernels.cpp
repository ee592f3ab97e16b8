// Kernel bodies of lj/cut in mixed precision (md.precision = "mixed"; one source per backend pass:
// core/kernel_pass.hpp), as lj/cut/coul/long's (pair_lj_cut_coul_long_mixed_kernels.cpp): each
// pair's separation from fp32 coordinates (separation32), its F(r)/r and energy in fp32 from fp32
// coefficients, the force components fp32 products and the virial an fp64 one (exact: two fp32
// factors), each rounded once to fixed point and summed as integers (fixed_point.hpp). The sums do
// not depend on the order of the pairs: the host's half list serves any number of threads, and the
// full list, CUDA and every rank count give the same bits.
#include <algorithm>
#include <cstdint>
#include <vector>
#if !defined(__CUDACC__)
#include <omp.h>
#endif

#include "solvers/md/fixed_point.hpp"
#include "solvers/md/pair_lj_cut.hpp"

namespace cumulus::md {
namespace lj_mixed_kernels::CUMULUS_PASS {

namespace {

// One pair (i, j): the fp32 separation, F(r)/r and energy (zero beyond the pair's cutoff),
// returned in fp64 (exact conversions). Antisymmetric in (i, j) bit for bit (separation32 is; the
// table is symmetric), so the half list's partner gets the exact
// negative. The operations of lj/cut's double path (pair_lj_cut_kernels.cpp), in fp32.
struct LjMixedPair {
  double d[3], r2, fpair, e;
};
CUMULUS_HD inline LjMixedPair lj_mixed_pair(const Atoms& a, const LjTable32& lj, int i, int j) {
  const float dx = separation32(a.x[i], a.x[j], a.box[0]);
  const float dy = separation32(a.y[i], a.y[j], a.box[1]);
  const float dz = separation32(a.z[i], a.z[j], a.box[2]);
  const float r2 = dx * dx + dy * dy + dz * dz;
  const LjCoefficients32& c = lj.c[lj.ntypes == 1 ? 0 : a.type[i] * lj.ntypes + a.type[j]];
  const float in = r2 < c.cut2 ? 1.0f : 0.0f;
  const float r2i = 1.0f / r2, r6i = r2i * r2i * r2i;
  const float f = r6i * (c.lj1 * r6i - c.lj2) * r2i * in;
  const float e = (r6i * (c.lj3 * r6i - c.lj4) - c.offset) * in;
  return {{dx, dy, dz}, r2, f, e};
}

// One pair's force components, energy and virial r^2 F/r in fixed-point units. bad: bit 0 a force
// term out of range (or NaN), bit 1 an energy or virial term.
struct LjFixed {
  std::int64_t f[3] = {0, 0, 0}, e = 0, v = 0;
  int bad = 0;
};
CUMULUS_HD inline LjFixed lj_fixed(const LjMixedPair& m, bool energy) {
  LjFixed u;
  // Every conversion runs (no short circuit): each writes its term.
  // The force components as fp32 products (lj/cut/coul/long's fixed_terms'); m's values are fp32's.
  const auto product32 = [&](int c) -> double { return static_cast<float>(m.d[c]) * static_cast<float>(m.fpair); };
  const bool okx = fixed::units(product32(0), &u.f[0]), oky = fixed::units(product32(1), &u.f[1]),
             okz = fixed::units(product32(2), &u.f[2]);
  u.bad = okx && oky && okz ? 0 : 1;
  if (energy) {
    const bool oke = fixed::units(m.e, &u.e), okv = fixed::units(m.r2 * m.fpair, &u.v);
    if (!(oke && okv)) u.bad |= 2;
  }
  return u;
}

// Atom i's sums into its arrays (NaN where bad; each atom takes half of its pairs' energies and
// virials): fixed_point.hpp's, shared with lj/cut/coul/long.
using fixed::store_sums;

// The virial tensor's component of one pair: d_a d_b F(r)/r (0 xx, 1 yy, 2 zz, 3 xy, 4 xz, 5 yz).
CUMULUS_HD inline double tensor_share(int component, const LjMixedPair& m) {
  const double f = m.fpair;
  switch (component) {
    case 0: return m.d[0] * m.d[0] * f;
    case 1: return m.d[1] * m.d[1] * f;
    case 2: return m.d[2] * m.d[2] * f;
    case 3: return m.d[0] * m.d[1] * f;
    case 4: return m.d[0] * m.d[2] * f;
    default: return m.d[1] * m.d[2] * f;
  }
}

CUMULUS_HD inline ExactSum nan_sum() { return ExactSum::of_units(hd::detail::from_bits(0x7ff8000000000000ULL)); }

}  // namespace

// The full list, on either backend: each owned atom sums its own pairs.
void lj_forces_mixed(const Exec& ex, const Atoms& a, const LjTable32& lj) {
  const bool energy = a.energy;
  for_each(ex, "md.forces", Box(0, 0, 0, a.n, 1, 1), [=] CUMULUS_HD(int i, int, int) {
    std::int64_t s[5] = {0, 0, 0, 0, 0};
    int bad = 0;
    for (std::int64_t k = a.start[i]; k < a.start[i + 1]; ++k) {
      const LjFixed u = lj_fixed(lj_mixed_pair(a, lj, i, a.neighbors[k]), energy);
      s[0] += u.f[0];
      s[1] += u.f[1];
      s[2] += u.f[2];
      s[3] += u.e;
      s[4] += u.v;
      bad |= u.bad;
    }
    store_sums(a, i, s, bad, energy);
  });
}

// One virial component over the full list, either backend: each owned atom's pairs' shares in
// units, an integer sum, taken as half (the atom's share of each pair) exactly.
ExactSum lj_virial_mixed(const Exec& ex, const Atoms& a, const LjTable32& lj, int component, int e) {
  return reduce(ex, "md.virial", Box(0, 0, 0, a.n, 1, 1), ExactSum{}, SumOp{}, [=] CUMULUS_HD(int i, int, int) {
    std::int64_t t = 0;
    bool ok = true;
    for (std::int64_t k = a.start[i]; k < a.start[i + 1]; ++k) {
      std::int64_t u;
      if (!fixed::units(tensor_share(component, lj_mixed_pair(a, lj, i, a.neighbors[k])), &u)) ok = false;
      t += u;
    }
    return ok ? fixed::exact_half_units(t, e) : nan_sum();
  });
}

#if !defined(__CUDACC__)
namespace {
constexpr int kCols = 6;  // force x, y, z, energy, virial, bad bits
}  // namespace

// The half list, at any number of threads: each pair once, from either atom's slot (the slot of the
// smaller id, or the spatial half list's choice: NeighborList::allow_either_slot); both
// atoms' terms go to the arrays of the thread that computes it (the partner's the exact negative
// for the force), and the threads' arrays are added at the end (integers: the same bits in any
// grouping). Ghost entries are scratch, or with a.fixed_rows their owners' shares (the rows go
// back to them). `scratch`: the per-thread arrays, kept by the caller.
void lj_forces_half_mixed(const Atoms& a, const LjTable32& lj, std::vector<std::int64_t>& scratch) {
  const int nthreads = omp_get_max_threads();
  const std::size_t nl = static_cast<std::size_t>(a.nlocal > a.n ? a.nlocal : a.n), per = kCols * nl;
  if (scratch.size() < per * static_cast<std::size_t>(nthreads)) scratch.resize(per * static_cast<std::size_t>(nthreads));
  const bool energy = a.energy;
#pragma omp parallel num_threads(nthreads)
  {
    // The team that runs (fewer than asked under OMP_DYNAMIC): only its arrays are zeroed and added.
    const int team = omp_get_num_threads();
    std::int64_t* const mine = scratch.data() + per * static_cast<std::size_t>(omp_get_thread_num());
    std::int64_t* const col[kCols] = {mine, mine + nl, mine + 2 * nl, mine + 3 * nl, mine + 4 * nl, mine + 5 * nl};
    std::fill(mine, mine + per, std::int64_t{0});
#pragma omp for schedule(dynamic, 32)
    for (int s = 0; s < a.nslots; ++s) {
      const int i = a.order[s];
      std::int64_t si[5] = {0, 0, 0, 0, 0};
      int bad_i = 0;
      for (std::int64_t k = a.start[s]; k < a.start[s + 1]; ++k) {
        const int j = a.neighbors[k];
        const LjFixed u = lj_fixed(lj_mixed_pair(a, lj, i, j), energy);
        for (int w = 0; w < 3; ++w) {
          si[w] += u.f[w];
          col[w][j] -= u.f[w];
        }
        si[3] += u.e;
        si[4] += u.v;
        col[3][j] += u.e;
        col[4][j] += u.v;
        bad_i |= u.bad;
        col[5][j] |= u.bad;
      }
      for (int w = 0; w < 5; ++w) col[w][i] += si[w];
      col[5][i] |= bad_i;
    }
    // (the implicit barrier of the loop above: every thread's arrays are complete)
    // With a.fixed_rows (Newton's third law across ranks) every local atom's sums, ghosts' too,
    // go there as rows for the solver to add across ranks; otherwise the owned atoms' are stored.
    std::int64_t* const rows = a.fixed_rows;
    const int nsum = rows ? a.nlocal : a.n;
#pragma omp for schedule(static)
    for (int i = 0; i < nsum; ++i) {
      std::int64_t t[5] = {0, 0, 0, 0, 0};
      std::int64_t bad = 0;
      for (int th = 0; th < team; ++th) {
        const std::int64_t* const o = scratch.data() + per * static_cast<std::size_t>(th) + static_cast<std::size_t>(i);
        for (int w = 0; w < 5; ++w) t[w] += o[w * nl];
        bad |= o[5 * nl];
      }
      if (rows)
        fixed::put_row(rows, i, t, bad);
      else
        store_sums(a, i, t, static_cast<int>(bad), energy);
    }
  }
}

// The six virial components over the half list in one pass, threads as above: each pair's shares
// in units, counted once for each of its atoms that this rank owns (in halves of units; with
// a.fixed_rows a pair across ranks is on one rank only, counted there for both), totalled per
// thread in 128 bits and added exactly: lj_virial_mixed's values.
void lj_virial_half_mixed(const Atoms& a, const LjTable32& lj, int e, ExactSum* out) {
  __int128 total[6] = {};
  int bad_all = 0;
#pragma omp parallel
  {
    __int128 mine[6] = {};
    int bad = 0;
#pragma omp for schedule(dynamic, 32)
    for (int s = 0; s < a.nslots; ++s) {
      const int i = a.order[s];
      for (std::int64_t k = a.start[s]; k < a.start[s + 1]; ++k) {
        const int j = a.neighbors[k];
        const int w = a.fixed_rows ? 2 : (i < a.n) + (j < a.n);
        const LjMixedPair m = lj_mixed_pair(a, lj, i, j);
        for (int q = 0; q < 6; ++q) {
          std::int64_t u;
          if (!fixed::units(tensor_share(q, m), &u)) bad = 1;
          mine[q] += static_cast<__int128>(w * u);
        }
      }
    }
#pragma omp critical(cumulus_lj_virial_half_mixed)
    {
      for (int q = 0; q < 6; ++q) total[q] += mine[q];
      bad_all |= bad;
    }
  }
  for (int q = 0; q < 6; ++q) out[q] = bad_all ? nan_sum() : fixed::exact_half_units(total[q], e);
}
#endif

}  // namespace lj_mixed_kernels::CUMULUS_PASS
}  // namespace cumulus::md
