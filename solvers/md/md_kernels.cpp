// Kernel bodies of the molecular dynamics solver (one source per backend pass). Each atom sums its
// own pairs in list order, so forces and energies have the same bits on the host and on CUDA.
#include <cmath>
#include <cstdint>
#include <limits>

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
void kick_drift_langevin(const Exec& ex, const Atoms& a, double h, double dt, double c1, double c2, double mass,
                         std::uint64_t seed, std::uint64_t step) {
  for_each(ex, "md.integrate", Box(0, 0, 0, a.n, 1, 1), [=] CUMULUS_HD(int i, int, int) {
    double* x[3] = {a.x, a.y, a.z};
    double* v[3] = {a.vx, a.vy, a.vz};
    const double* f[3] = {a.fx, a.fy, a.fz};
    int* im[3] = {a.ix, a.iy, a.iz};
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

double sum_work(const Exec& ex, const Atoms& a) {
  return reduce(ex, "md.thermo", Box(0, 0, 0, a.n, 1, 1), 0.0, SumOp{}, [=] CUMULUS_HD(int i, int, int) { return a.work[i]; });
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
