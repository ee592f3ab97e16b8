// Exact thermo sums: each atom's value in units of 2^-52, rounded down (md_kernels.cpp), summed as
// integers over atoms and ranks (core/exact_sum.hpp), then rounded once to the nearest double.
// The two-part fixed point md used before gave the same bits while its low part's sum stayed below
// 2^53 (up to about 2 million atoms); beyond that it rounded twice, and this is the exact one.
#include "solvers/md/thermo.hpp"

#include "core/error.hpp"

namespace cumulus::md {

namespace {
constexpr int kUnitExponent = -52;
double total(const Comm& comm, ExactSum s) {
  comm.sum_in_place(s.words(), ExactSum::kWords);
  double v = 0;
  if (!s.value_rounded(kUnitExponent, &v)) throw Error("md: a thermo sum overflowed its fixed point");
  return v;
}
}  // namespace

double thermo_sum(const Exec& ex, const Comm& comm, const Atoms& a, ThermoSum which) {
  return total(comm, CUMULUS_KERNEL(ex, kernels, thermo_exact)(ex, a, static_cast<int>(which)));
}

double kinetic2_sum(const Exec& ex, const Comm& comm, const Atoms& a) {
  return total(comm, CUMULUS_KERNEL(ex, kernels, kinetic_exact)(ex, a));
}

}  // namespace cumulus::md
