// Kernel bodies of SHAKE/RATTLE (one source per backend pass: core/kernel_pass.hpp). As SETTLE's,
// each pass computes every owned atom's change into scratch arrays; settle_kernels' apply passes
// then add them (an atom's partners may be owned atoms of the same rank).
#include <cstdint>
#include <limits>

#include "solvers/md/shake_kernels.hpp"

namespace cumulus::md {
namespace shake_kernels::CUMULUS_PASS {

namespace {
// The cluster of owned atom i: its atoms' local indices, inverse masses and this atom's place in
// it. False when the atom is in no cluster.
struct Cluster {
  int local[kShakeAtoms];
  double inv_m[kShakeAtoms];
  int me;
};
CUMULUS_HD inline bool cluster_of(const Atoms& a, const TopologyView& t, const ShakeGeometry* geometry, int i, Cluster& c,
                                  const ShakeGeometry*& g) {
  if (t.shake_atom[i] < 0) return false;
  g = &geometry[t.shake_type[i]];
  c.me = 0;
  for (int k = 0; k < g->natoms; ++k) {
    c.local[k] = t.shake_atom[k * t.nown + i];
    c.inv_m[k] = 1 / a.mass[a.type[c.local[k]]];
    if (c.local[k] == i) c.me = k;
  }
  return true;
}
// x[k] - x[first] by the minimum image, for every atom k of the cluster.
CUMULUS_HD inline void relative(const double* x, const double* y, const double* z, const Cluster& c, int n, const double* box,
                                double out[][3]) {
  const int f = c.local[0];
  for (int k = 0; k < n; ++k) {
    const int j = c.local[k];
    out[k][0] = minimum_image(x[j] - x[f], box[0]);
    out[k][1] = minimum_image(y[j] - y[f], box[1]);
    out[k][2] = minimum_image(z[j] - z[f], box[2]);
  }
}
}  // namespace

// The displacement of every owned atom of a cluster (0 for the others). Returns the smallest id of
// a cluster's first atom whose constraints did not converge (int64 max: none).
// With `into` (ex's memory) that id is stored there instead, without a wait (reduce_into).
std::int64_t shake_displacements(const Exec& ex, const Atoms& a, const TopologyView& t, const ShakeGeometry* geometry,
                                 const double* rx, const double* ry, const double* rz, double tolerance, int max_iterations,
                                 double* dx, double* dy, double* dz, std::int64_t* into) {
  return reduce_into(ex, "md.shake", Box(0, 0, 0, t.nown, 1, 1), std::numeric_limits<std::int64_t>::max(), MinOp{},
                [=] CUMULUS_HD(int i, int, int) -> std::int64_t {
                  dx[i] = dy[i] = dz[i] = 0;
                  Cluster c{};
                  const ShakeGeometry* g = nullptr;
                  if (!cluster_of(a, t, geometry, i, c, g)) return std::numeric_limits<std::int64_t>::max();
                  double x0[kShakeAtoms][3], x1[kShakeAtoms][3], d[kShakeAtoms][3];
                  relative(rx, ry, rz, c, g->natoms, a.box, x0);
                  relative(a.x, a.y, a.z, c, g->natoms, a.box, x1);
                  if (shake_positions_term(*g, c.inv_m, x0, x1, tolerance, max_iterations, d) < 0) return a.id[c.local[0]];
                  dx[i] = d[c.me][0];
                  dy[i] = d[c.me][1];
                  dz[i] = d[c.me][2];
                  return std::numeric_limits<std::int64_t>::max();
                }, into);
}

// Every owned atom's velocity change under its cluster's velocity constraints; the cluster's
// constraint virial (2/dt times the impulses') goes to its first atom's virial[i] (0 elsewhere;
// with `accumulate`, added to it).
void shake_velocity_changes(const Exec& ex, const Atoms& a, const TopologyView& t, const ShakeGeometry* geometry, double* dx,
                            double* dy, double* dz, double* virial, double two_over_dt, double centripetal, bool accumulate) {
  for_each(ex, "md.shake_velocities", Box(0, 0, 0, t.nown, 1, 1), [=] CUMULUS_HD(int i, int, int) {
    dx[i] = dy[i] = dz[i] = 0;
    if (!accumulate) virial[i] = 0;
    Cluster c{};
    const ShakeGeometry* g = nullptr;
    if (!cluster_of(a, t, geometry, i, c, g)) return;
    double x[kShakeAtoms][3], v[kShakeAtoms][3], dv[kShakeAtoms][3];
    relative(a.x, a.y, a.z, c, g->natoms, a.box, x);
    for (int k = 0; k < g->natoms; ++k) {
      const int j = c.local[k];
      v[k][0] = a.vx[j];
      v[k][1] = a.vy[j];
      v[k][2] = a.vz[j];
    }
    const double w = shake_velocities_term(*g, c.inv_m, x, v, dv, centripetal);
    dx[i] = dv[c.me][0];
    dy[i] = dv[c.me][1];
    dz[i] = dv[c.me][2];
    if (c.me == 0) virial[i] += w * two_over_dt;
  });
}

}  // namespace shake_kernels::CUMULUS_PASS
}  // namespace cumulus::md
