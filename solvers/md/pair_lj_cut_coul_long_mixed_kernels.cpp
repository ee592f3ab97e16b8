// Kernel bodies of lj/cut/coul/long and coul/long in mixed precision (md.precision = "mixed"; one
// source per backend pass: core/kernel_pass.hpp): pair_lj_cut_coul_long.hpp says what is fp32 and
// what fp64. The loops are the double path's plain loops (pair_lj_cut_coul_long_kernels.cpp), in
// the same order: each owned atom sums its pairs in list order (ascending partner id), so the full
// list, the half list and CUDA give the same bits.
#include <cstdint>
#include <vector>

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

void coul_forces_mixed(const Exec& ex, const Atoms& a, const LjTable32& lj, const CoulParams32& p) {
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
