// Kernel bodies of SETTLE (one source per backend pass: core/kernel_pass.hpp). Each pass first
// computes every owned atom's change into scratch arrays, then applies them: an atom's partners may
// be owned atoms of the same rank, whose positions a single in-place pass would change under it.
#include <cmath>
#include <cstdint>
#include <limits>

#include "solvers/md/settle_kernels.hpp"

namespace cumulus::md {
namespace settle_kernels::CUMULUS_PASS {

namespace {
// A molecule's positions and velocities are solved once, by its leader: the member of smallest
// local index (owned, as the loops' atom is: owned atoms come first), which writes the changes of
// every owned member. Each member once solved it all and kept its own third: three times the work
// for the same values (the solve reads the same inputs, whichever member runs it).
CUMULUS_HD inline int settle_leader(int la, int lb, int lc) {
  const int m = la < lb ? la : lb;
  return m < lc ? m : lc;
}
// The molecule's changes d[k] (k: O, H, H as member[k]) into the owned members' entries; a ghost
// member's owner's rank solves the molecule too.
CUMULUS_HD inline void store_members(const int member[3], int nown, const double* const d[3], double* dx, double* dy, double* dz) {
  for (int k = 0; k < 3; ++k) {
    const int m = member[k];
    if (m >= nown) continue;
    dx[m] = d[k][0];
    dy[m] = d[k][1];
    dz[m] = d[k][2];
  }
}
CUMULUS_HD inline void rel(const double* x, const double* y, const double* z, int i, int j, const double* box, double d[3]) {
  d[0] = minimum_image(x[i] - x[j], box[0]);
  d[1] = minimum_image(y[i] - y[j], box[1]);
  d[2] = minimum_image(z[i] - z[j], box[2]);
}
}  // namespace

// The displacement of every owned atom of a rigid molecule (0 for the others). Returns the smallest
// id of an oxygen whose molecule has no rigid placement (int64 max: none).
// With `into` (ex's memory) that id is stored there instead, without a wait (reduce_into).
std::int64_t settle_displacements(const Exec& ex, const Atoms& a, const TopologyView& t, const SettleGeometry* g,
                                  const double* rx, const double* ry, const double* rz, double* dx, double* dy, double* dz, std::int64_t* into) {
  return reduce_into(ex, "md.settle", Box(0, 0, 0, t.nown, 1, 1), std::numeric_limits<std::int64_t>::max(), MinOp{},
                [=] CUMULUS_HD(int i, int, int) -> std::int64_t {
                  const int la = t.settle_atom[i];
                  if (la < 0) {
                    dx[i] = dy[i] = dz[i] = 0;
                    return std::numeric_limits<std::int64_t>::max();
                  }
                  const int lb = t.settle_atom[t.nown + i], lc = t.settle_atom[2 * t.nown + i];
                  if (i != settle_leader(la, lb, lc)) return std::numeric_limits<std::int64_t>::max();
                  const int member[3] = {la, lb, lc};
                  for (int m : member)
                    if (m < t.nown) dx[m] = dy[m] = dz[m] = 0;
                  double b0[3], c0[3], b1[3], c1[3], dA[3], dB[3], dC[3];
                  rel(rx, ry, rz, lb, la, a.box, b0);
                  rel(rx, ry, rz, lc, la, a.box, c0);
                  rel(a.x, a.y, a.z, lb, la, a.box, b1);
                  rel(a.x, a.y, a.z, lc, la, a.box, c1);
                  const double mo = a.mass[a.type[la]], mh = a.mass[a.type[lb]];
                  if (!settle_positions_term(g[t.settle_type[i]], mo, mh, b0, c0, b1, c1, dA, dB, dC))
                    return a.id[la];
                  const double* const d[3] = {dA, dB, dC};
                  store_members(member, t.nown, d, dx, dy, dz);
                  return std::numeric_limits<std::int64_t>::max();
                }, into);
}

// x += d (back into the box, counting crossings), v += d / dt (inv_dt = 0: positions alone).
void settle_apply_positions(const Exec& ex, const Atoms& a, const double* dx, const double* dy, const double* dz,
                            double inv_dt) {
  for_each(ex, "md.settle", Box(0, 0, 0, a.n, 1, 1), [=] CUMULUS_HD(int i, int, int) {
    const double d[3] = {dx[i], dy[i], dz[i]};
    double* x[3] = {a.x, a.y, a.z};
    double* v[3] = {a.vx, a.vy, a.vz};
    int* im[3] = {a.ix, a.iy, a.iz};
    for (int k = 0; k < 3; ++k) {
      x[k][i] = wrap(x[k][i] + d[k], a.box[k], im[k][i]);
      v[k][i] += d[k] * inv_dt;
    }
  }, 8);  // weight: 9 arrays an atom (a water box's atoms share the threads rather than take one)
}

// Every owned atom's velocity change under its molecule's velocity constraints, and its third of
// the constraint forces' virial (2/dt times the impulses' virial) into virial[i] (0 outside a
// molecule; with `accumulate`, added to it). `centripetal`: settle_velocities_term's.
void settle_velocity_changes(const Exec& ex, const Atoms& a, const TopologyView& t, double* dx, double* dy, double* dz,
                             double* virial, double two_over_dt, double centripetal, bool accumulate) {
  for_each(ex, "md.settle_velocities", Box(0, 0, 0, t.nown, 1, 1), [=] CUMULUS_HD(int i, int, int) {
    const int la = t.settle_atom[i];
    if (la < 0) {
      dx[i] = dy[i] = dz[i] = 0;
      if (!accumulate) virial[i] = 0;
      return;
    }
    const int lb = t.settle_atom[t.nown + i], lc = t.settle_atom[2 * t.nown + i];
    if (i != settle_leader(la, lb, lc)) return;
    double dab[3], dac[3], dbc[3], uab[3], uac[3], ubc[3], dvA[3], dvB[3], dvC[3];
    rel(a.x, a.y, a.z, lb, la, a.box, dab);
    rel(a.x, a.y, a.z, lc, la, a.box, dac);
    rel(a.x, a.y, a.z, lc, lb, a.box, dbc);
    uab[0] = a.vx[lb] - a.vx[la];
    uab[1] = a.vy[lb] - a.vy[la];
    uab[2] = a.vz[lb] - a.vz[la];
    uac[0] = a.vx[lc] - a.vx[la];
    uac[1] = a.vy[lc] - a.vy[la];
    uac[2] = a.vz[lc] - a.vz[la];
    ubc[0] = a.vx[lc] - a.vx[lb];
    ubc[1] = a.vy[lc] - a.vy[lb];
    ubc[2] = a.vz[lc] - a.vz[lb];
    const double mo = a.mass[a.type[la]], mh = a.mass[a.type[lb]];
    const double w = settle_velocities_term(mo, mh, dab, dac, dbc, uab, uac, ubc, dvA, dvB, dvC, centripetal);
    const int member[3] = {la, lb, lc};
    const double* const d[3] = {dvA, dvB, dvC};
    store_members(member, t.nown, d, dx, dy, dz);
    for (int m : member)
      if (m < t.nown) virial[m] = (accumulate ? virial[m] : 0.0) + w * two_over_dt * (1.0 / 3);
  }, 64);  // weight: a molecule's velocity solve per atom (the threads share the atoms: for_each)
}

void settle_apply_velocities(const Exec& ex, const Atoms& a, const double* dx, const double* dy, const double* dz) {
  for_each(ex, "md.settle_velocities", Box(0, 0, 0, a.n, 1, 1), [=] CUMULUS_HD(int i, int, int) {
    a.vx[i] += dx[i];
    a.vy[i] += dy[i];
    a.vz[i] += dz[i];
  }, 8);  // weight: as settle_apply_positions's
}

ExactSum settle_sum(const Exec& ex, const double* v, int n, int e) {
  const double to_units = ::ldexp(1.0, -e);
  return reduce(ex, "md.settle_sum", Box(0, 0, 0, n, 1, 1), ExactSum{}, SumOp{},
                [=] CUMULUS_HD(int i, int, int) { return ExactSum::of_units(v[i] * to_units); });
}

}  // namespace settle_kernels::CUMULUS_PASS
}  // namespace cumulus::md
