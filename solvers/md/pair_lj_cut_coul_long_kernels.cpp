// Kernel bodies of lj/cut/coul/long and coul/long (one source per backend pass:
// core/kernel_pass.hpp). Plain loops: each owned atom sums its pairs in list order (ascending
// partner id), so the full list, the half list and CUDA give the same bits.
#include <cstdint>
#include <vector>

#include "solvers/md/pair_lj_cut_coul_long.hpp"

namespace cumulus::md {
namespace coul_kernels::CUMULUS_PASS {

namespace {
CUMULUS_HD inline const LjCoefficients& coefficients(const Atoms& a, const LjTable& lj, int i, int j) {
  return lj.c[lj.ntypes == 1 ? 0 : a.type[i] * lj.ntypes + a.type[j]];
}
CUMULUS_HD inline double share(int which, double dx, double dy, double dz, const CoulTerms& t) {
  switch (which) {
    case 0: return dx * dx * t.fpair;
    case 1: return dy * dy * t.fpair;
    case 2: return dz * dz * t.fpair;
    case 3: return dx * dy * t.fpair;
    case 4: return dx * dz * t.fpair;
    case 5: return dy * dz * t.fpair;
    case 6: return t.evdwl;
    case 7: return t.ecoul;
    default: return t.ecorr;
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
CUMULUS_COUL_CLONES void coul_forces_full_host(const Atoms& a, const LjTable& lj, const CoulParams& p) {
  const bool energy = a.energy;
#pragma omp parallel for schedule(static)
  for (int i = 0; i < a.n; ++i) coul_atom(a, lj, p, i, energy);
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
  for_each(ex, "md.forces", Box(0, 0, 0, a.n, 1, 1), [=] CUMULUS_HD(int i, int, int) { coul_atom(a, lj, p, i, energy); });
}

#if !defined(__CUDACC__)
// The half list: each pair once, from the slot of the smaller id; its terms added to both atoms
// (the partner's force the exact negative), so each owned atom receives them in ascending partner id
// as the full list gives them. Ghost entries are scratch.
CUMULUS_COUL_CLONES void coul_forces_half(const Atoms& a, const LjTable& lj, const CoulParams& p) {
  auto zero = [&](int i) {
    a.fx[i] = a.fy[i] = a.fz[i] = 0;
    a.pe[i] = a.virial[i] = 0;
  };
  for (int s = 0; s < a.nslots; ++s) zero(a.order[s]);
  for (int i = 0; i < a.n; ++i) zero(i);
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
  for (int i = 0; i < a.n; ++i) {
    a.pe[i] = 0.5 * a.pe[i];
    a.virial[i] = 0.5 * a.virial[i];
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
        const CoulTerms t = coul_pair(coefficients(a, lj, i, j), p, dx * dx + dy * dy + dz * dz, a.q[i] * a.q[j], level);
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
  return reduce(ex, "md.coul_sum", Box(0, 0, 0, a.n, 1, 1), ExactSum{}, SumOp{}, [=] CUMULUS_HD(int i, int, int) {
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
