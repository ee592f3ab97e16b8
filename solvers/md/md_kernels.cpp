// Kernel bodies of the molecular dynamics solver (one source per backend pass). Each atom sums its
// own pairs in list order, so forces and energies have the same bits on the host and on CUDA.
#include <cmath>
#include <cstdint>
#include <limits>

#include "solvers/md/md_kernels.hpp"

namespace cumulus::md {
namespace kernels::CUMULUS_PASS {

namespace {
CUMULUS_HD inline double minimum_image(double d, double L) { return d - L * floor(d / L + 0.5); }
}  // namespace

// Full list: every pair is seen from both atoms, each taking its own force and half the energy
// and virial (no atomic updates, no order dependence).
void forces(const Exec& ex, const Atoms& a, const LjCoefficients& lj) {
  for_each(ex, "md.forces", Box(0, 0, 0, a.n, 1, 1), [=] CUMULUS_HD(int i, int, int) {
    const double xi = a.x[i], yi = a.y[i], zi = a.z[i];
    double fx = 0, fy = 0, fz = 0, pe = 0, vir = 0;
    for (std::int64_t k = a.start[i]; k < a.start[i + 1]; ++k) {
      const int j = a.neighbors[k];
      const double dx = minimum_image(xi - a.x[j], a.box[0]);
      const double dy = minimum_image(yi - a.y[j], a.box[1]);
      const double dz = minimum_image(zi - a.z[j], a.box[2]);
      const double r2 = dx * dx + dy * dy + dz * dz;
      if (r2 < lj.cut2) {
        const double r2i = 1.0 / r2, r6i = r2i * r2i * r2i;
        const double fpair = r6i * (lj.lj1 * r6i - lj.lj2) * r2i;
        fx += dx * fpair;
        fy += dy * fpair;
        fz += dz * fpair;
        pe += r6i * (lj.lj3 * r6i - lj.lj4) - lj.offset;
        vir += r2 * fpair;
      }
    }
    a.fx[i] = fx;
    a.fy[i] = fy;
    a.fz[i] = fz;
    a.pe[i] = 0.5 * pe;
    a.virial[i] = 0.5 * vir;
  });
}

// Velocity Verlet's first half: v += dt/2 f/m, x += dt v, then wrap into the box (image counts).
void kick_drift(const Exec& ex, const Atoms& a, double h, double dt) {
  for_each(ex, "md.integrate", Box(0, 0, 0, a.n, 1, 1), [=] CUMULUS_HD(int i, int, int) {
    double* x[3] = {a.x, a.y, a.z};
    double* v[3] = {a.vx, a.vy, a.vz};
    const double* f[3] = {a.fx, a.fy, a.fz};
    int* im[3] = {a.ix, a.iy, a.iz};
    for (int d = 0; d < 3; ++d) {
      const double vn = v[d][i] + h * f[d][i];
      double xn = x[d][i] + dt * vn;
      if (xn < 0) {
        xn += a.box[d];
        im[d][i] -= 1;
      } else if (xn >= a.box[d]) {
        xn -= a.box[d];
        im[d][i] += 1;
      }
      v[d][i] = vn;
      x[d][i] = xn;
    }
  });
}

void kick(const Exec& ex, const Atoms& a, double h) {
  for_each(ex, "md.integrate", Box(0, 0, 0, a.n, 1, 1), [=] CUMULUS_HD(int i, int, int) {
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

double sum_kinetic(const Exec& ex, const Atoms& a) {
  return reduce(ex, "md.thermo", Box(0, 0, 0, a.n, 1, 1), 0.0, SumOp{}, [=] CUMULUS_HD(int i, int, int) {
    return a.vx[i] * a.vx[i] + a.vy[i] * a.vy[i] + a.vz[i] * a.vz[i];
  });
}
double sum_potential(const Exec& ex, const Atoms& a) {
  return reduce(ex, "md.thermo", Box(0, 0, 0, a.n, 1, 1), 0.0, SumOp{}, [=] CUMULUS_HD(int i, int, int) { return a.pe[i]; });
}
double sum_virial(const Exec& ex, const Atoms& a) {
  return reduce(ex, "md.thermo", Box(0, 0, 0, a.n, 1, 1), 0.0, SumOp{}, [=] CUMULUS_HD(int i, int, int) { return a.virial[i]; });
}

std::int64_t first_bad_atom(const Exec& ex, const Atoms& a) {
  return reduce(ex, "md.health", Box(0, 0, 0, a.n, 1, 1), std::numeric_limits<std::int64_t>::max(), MinOp{},
                [=] CUMULUS_HD(int i, int, int) -> std::int64_t {
                  const double s = a.x[i] + a.y[i] + a.z[i] + a.vx[i] + a.vy[i] + a.vz[i];
                  return (s - s == 0) ? std::numeric_limits<std::int64_t>::max() : i;
                });
}

}  // namespace kernels::CUMULUS_PASS
}  // namespace cumulus::md
