// Initial velocities: counter-based Gaussian draws keyed by (seed, atom id, component).
#include "solvers/md/velocities.hpp"

#include <cmath>

#include "core/constants.hpp"
#include "solvers/md/random.hpp"

namespace cumulus::md {

namespace {
// Rounds to about 12 significant digits: sums over ranks then agree at any rank count.
double round_to(double v) {
  if (v == 0) return 0;
  const double e = std::pow(10.0, 11 - std::floor(std::log10(std::fabs(v))));
  return std::round(v * e) / e;
}
}  // namespace

void initial_velocities(const Setup& s, std::int64_t n_total, const Comm& comm, int n, const std::int64_t* id,
                        const int* type, double* const v[3]) {
  // Gaussian components of variance kT / m (unit variance, divided by sqrt(m)) by Box-Muller.
  double p[3] = {0, 0, 0}, msum = 0;
  for (int i = 0; i < n; ++i) {
    const double m = s.masses[static_cast<std::size_t>(type[i])] * s.units.mvv2e;  // in energy units (units.hpp)
    msum += m;
    for (int d = 0; d < 3; ++d) {
      const std::uint64_t aid = static_cast<std::uint64_t>(id[i]);
      const double u1 = uniform(static_cast<std::uint64_t>(s.seed), aid, 2 * d);
      const double u2 = uniform(static_cast<std::uint64_t>(s.seed), aid, 2 * d + 1);
      const double x = std::sqrt(-2 * std::log(u1)) * std::cos(2 * kPi * u2) / std::sqrt(m);
      v[d][i] = x;
      p[d] += m * x;
    }
  }
  // Global sums in id order would need a gather; the sums below differ between rank counts only
  // by rounding, so the mean and scale are rounded to 12 digits' worth: the same velocities at any
  // rank count. (Sums of ~N Gaussians carry ~1e-16 N relative error.)
  const double mtotal = round_to(comm.sum(msum));
  double mean[3];
  for (int d = 0; d < 3; ++d) mean[d] = round_to(comm.sum(p[d]) / mtotal);
  double ke2 = 0;
  for (int i = 0; i < n; ++i) {
    const double m = s.masses[static_cast<std::size_t>(type[i])] * s.units.mvv2e;  // in energy units (units.hpp)
    for (int d = 0; d < 3; ++d) {
      v[d][i] -= mean[d];
      ke2 += m * v[d][i] * v[d][i];
    }
  }
  const double scale = round_to(std::sqrt(s.temperature * s.units.boltz * (3.0 * n_total - 3) / comm.sum(ke2)));
  for (int d = 0; d < 3; ++d)
    for (int i = 0; i < n; ++i) v[d][i] *= scale;
}

}  // namespace cumulus::md
