#pragma once
// Initial velocities of the md solver (md.temperature, md.seed).
#include <cstdint>

#include "core/comm.hpp"
#include "solvers/md/setup.hpp"

namespace cumulus::md {

// Gaussian components of variance kT / m for the n owned atoms (ids, 0-based types), the centre of
// mass at rest, scaled to exactly s.temperature with 3N - 3 degrees of freedom (N = n_total):
// the same velocities at any rank count (velocities.cpp says how). Collective.
void initial_velocities(const Setup& s, std::int64_t n_total, const Comm& comm, int n, const std::int64_t* id,
                        const int* type, double* const v[3]);

}  // namespace cumulus::md
