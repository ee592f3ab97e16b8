#pragma once
// The state description (checkpoints, output) of a particle store, generated from its registered
// arrays: each array marked `checkpoint` becomes a dataset of n_total entries in which every rank
// holds a contiguous run (a prefix sum of the owned counts). Restoring one replaces the owned
// atoms' values; `restored` is then called (the model sends the atoms to their owners).
#include <cstdint>
#include <functional>

#include "core/comm.hpp"
#include "io/state.hpp"
#include "mesh/particle_store.hpp"

namespace cumulus::md {

StateDescription describe_particles(ParticleStore& store, const Comm& comm, std::int64_t n_total, const double box[3],
                                    std::function<void()> restored);

}  // namespace cumulus::md
