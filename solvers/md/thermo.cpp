// Exact thermo sums: two fixed-point parts per atom (units 2^-20 and 2^-52), integer sums over
// ranks. (core/exact_sum.hpp does the same job with truncation toward zero and five limbs; MD keeps
// its own two-part floor split because switching would change the last bits of every thermo value
// and of Nose-Hoover trajectories: docs/md.md says so.)
#include "solvers/md/thermo.hpp"

#include <cstdint>

namespace cumulus::md {

namespace {
double combine(const Comm& comm, std::int64_t part0, std::int64_t part1) {
  std::int64_t total[2] = {part0, part1};
  comm.sum_in_place(total, 2);  // two's complement: wrapping integer sums, exact in any order
  return static_cast<double>(total[0]) * (1.0 / 1048576.0) + static_cast<double>(total[1]) * (1.0 / 4503599627370496.0);
}
}  // namespace

double thermo_sum(const Exec& ex, const Comm& comm, const Atoms& a, ThermoSum which) {
  const int w = static_cast<int>(which);
  return combine(comm, CUMULUS_KERNEL(ex, kernels, thermo_fixed)(ex, a, w, 0), CUMULUS_KERNEL(ex, kernels, thermo_fixed)(ex, a, w, 1));
}

double kinetic2_sum(const Exec& ex, const Comm& comm, const Atoms& a) {
  return combine(comm, CUMULUS_KERNEL(ex, kernels, kinetic_fixed)(ex, a, 0), CUMULUS_KERNEL(ex, kernels, kinetic_fixed)(ex, a, 1));
}

}  // namespace cumulus::md
