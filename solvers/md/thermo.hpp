#pragma once
// The md solver's thermo sums over every atom of every rank, exactly (core/exact_sum.hpp through
// md_kernels' thermo_exact and kinetic_exact), so the same bits at any rank count, in any storage
// layout and on the host and CUDA.
#include "core/comm.hpp"
#include "core/exec.hpp"
#include "solvers/md/md_kernels.hpp"

namespace cumulus::md {

enum class ThermoSum { mv2 = 0, energy = 1, virial = 2, work = 3 };
// The sum of one per-atom quantity over all owned atoms of all ranks. Collective.
double thermo_sum(const Exec& ex, const Comm& comm, const Atoms& a, ThermoSum which);
// Twice the kinetic energy (Nose-Hoover's input), the same number on every rank. Collective.
double kinetic2_sum(const Exec& ex, const Comm& comm, const Atoms& a);

}  // namespace cumulus::md
