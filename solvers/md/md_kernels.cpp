// Kernel bodies of the molecular dynamics solver's integrator, thermostats, thermo sums, health
// check and ghost positions (one source per backend pass: core/kernel_pass.hpp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "solvers/md/md_kernels.hpp"

namespace cumulus::md {
namespace kernels::CUMULUS_PASS {

// Velocity Verlet's first half: v += dt/2 f/m, x += dt v, then wrap into the box (image counts).
void kick_drift(const Exec& ex, const Atoms& a, double half_dt, double dt, double scale, KeptPositions keep) {
  for_each(ex, "md.integrate", Box(0, 0, 0, a.n, 1, 1), [=] CUMULUS_HD(int i, int, int) {
    double* x[3] = {a.x, a.y, a.z};
    double* v[3] = {a.vx, a.vy, a.vz};
    const double* f[3] = {a.fx, a.fy, a.fz};
    int* im[3] = {a.ix, a.iy, a.iz};
    if (keep.x) {
      keep.x[i] = a.x[i];
      keep.y[i] = a.y[i];
      keep.z[i] = a.z[i];
    }
    const double h = half_dt / a.mass[a.type[i]];
    for (int d = 0; d < 3; ++d) {
      const double vn = v[d][i] * scale + h * f[d][i];  // * 1 is exact: NVE's bits as before
      v[d][i] = vn;
      x[d][i] = wrap(x[d][i] + dt * vn, a.box[d], im[d][i]);
    }
  }, 8);  // weight: 13 arrays an atom (a water box's 9,000 atoms share the threads rather than take one)
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
                         std::uint64_t seed, std::uint64_t step, KeptPositions keep) {
  for_each(ex, "md.integrate", Box(0, 0, 0, a.n, 1, 1), [=] CUMULUS_HD(int i, int, int) {
    double* x[3] = {a.x, a.y, a.z};
    double* v[3] = {a.vx, a.vy, a.vz};
    const double* f[3] = {a.fx, a.fy, a.fz};
    int* im[3] = {a.ix, a.iy, a.iz};
    if (keep.x) {
      keep.x[i] = a.x[i];
      keep.y[i] = a.y[i];
      keep.z[i] = a.z[i];
    }
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
  }, 16);  // weight: kick_drift's and three draws of 5 hashes
}


void kick(const Exec& ex, const Atoms& a, double half_dt) {
  for_each(ex, "md.integrate", Box(0, 0, 0, a.n, 1, 1), [=] CUMULUS_HD(int i, int, int) {
    const double h = half_dt / a.mass[a.type[i]];
    a.vx[i] += h * a.fx[i];
    a.vy[i] += h * a.fy[i];
    a.vz[i] += h * a.fz[i];
  }, 4);  // weight: 8 arrays an atom
}

// Largest squared displacement since the list was built (minimum image): the list stays valid
// while it is below (skin / 2)^2. With `into` (ex's memory) stored there without a wait
// (reduce_into; md/step_checks.hpp reads it).
double max_displacement2(const Exec& ex, const Atoms& a, double* into) {
  return reduce_into(ex, "md.neighbor_check", Box(0, 0, 0, a.n, 1, 1), 0.0, MaxOp{}, [=] CUMULUS_HD(int i, int, int) {
    const double dx = minimum_image(a.x[i] - a.x0[i], a.box[0]);
    const double dy = minimum_image(a.y[i] - a.y0[i], a.box[1]);
    const double dz = minimum_image(a.z[i] - a.z0[i], a.box[2]);
    return dx * dx + dy * dy + dz * dz;
  }, into);
}


// Twice the kinetic energy as an exact sum (core/exact_sum.hpp), for the Nose-Hoover thermostat,
// whose velocity scaling must not depend on the order atoms are added in (rank count, backend):
// each atom's m v^2 in units of 2^-52, rounded down (m v^2 clamped below 2^32; a larger one is a
// blow-up, which the health check reports).
ExactSum kinetic_exact(const Exec& ex, const Atoms& a) {
  return reduce(ex, "md.thermo", Box(0, 0, 0, a.n, 1, 1), ExactSum{}, SumOp{}, [=] CUMULUS_HD(int i, int, int) {
    double x = a.mass[a.type[i]] * (a.vx[i] * a.vx[i] + a.vy[i] * a.vy[i] + a.vz[i] * a.vz[i]) * 1048576.0;
    if (!(x < 4503599627370496.0)) x = 4503599627370496.0;  // 2^52 (non-finite: caught by the health check)
    return ExactSum::of_units_floor(x * 4294967296.0);
  });
}

// Nose-Hoover: every velocity times the same factor.
void scale_velocities(const Exec& ex, const Atoms& a, double factor) {
  for_each(ex, "md.integrate", Box(0, 0, 0, a.n, 1, 1), [=] CUMULUS_HD(int i, int, int) {
    a.vx[i] *= factor;
    a.vy[i] *= factor;
    a.vz[i] *= factor;
  }, 4);  // weight: as kick's
}
// The thermo sums, exactly: one per-atom quantity (0: m v^2, 1: potential energy, 2: virial r.F,
// 3: the thermostat's work) in units of 2^-52, rounded down, summed as integers (core/exact_sum.hpp),
// so the reported energies and pressure have the same bits at any rank count, in any storage
// layout and on the host and CUDA. A value of 2^32 or more counts as 0 (a blow-up: the health
// check reports it).
ExactSum thermo_exact(const Exec& ex, const Atoms& a, int which) {
  return reduce(ex, "md.thermo", Box(0, 0, 0, a.n, 1, 1), ExactSum{}, SumOp{}, [=] CUMULUS_HD(int i, int, int) {
    double v;
    if (which == 0) v = a.mass[a.type[i]] * (a.vx[i] * a.vx[i] + a.vy[i] * a.vy[i] + a.vz[i] * a.vz[i]);
    else if (which == 1) v = a.pe[i];
    else if (which == 2) v = a.virial[i];
    else v = a.work[i];
    double x = v * 1048576.0;
    if (!(x < 4503599627370496.0 && x > -4503599627370496.0)) x = 0;
    return ExactSum::of_units_floor(x * 4294967296.0);
  });
}

std::int64_t first_bad_atom(const Exec& ex, const Atoms& a) {
  return reduce(ex, "md.health", Box(0, 0, 0, a.n, 1, 1), std::numeric_limits<std::int64_t>::max(), MinOp{},
                [=] CUMULUS_HD(int i, int, int) -> std::int64_t {
                  const double s = a.x[i] + a.y[i] + a.z[i] + a.vx[i] + a.vy[i] + a.vz[i];
                  return (s - s == 0) ? std::numeric_limits<std::int64_t>::max() : i;
                });
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
