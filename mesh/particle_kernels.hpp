#pragma once
// ParticleStore's reordering kernels, declared once per backend pass (core/kernel_pass.hpp): a
// gather of 4- or 8-byte words, out[k] = in[perm[k]] (bit copies, whatever the array's type).
#include <cstdint>

#include "core/exec.hpp"
#include "core/kernel_pass.hpp"

namespace cumulus {

#define CUMULUS_PARTICLE_KERNELS                                                                     \
  void gather_u32(const Exec& ex, const std::uint32_t* in, std::uint32_t* out, const int* perm, int n); \
  void gather_u64(const Exec& ex, const std::uint64_t* in, std::uint64_t* out, const int* perm, int n);
CUMULUS_DECLARE_KERNEL_PASSES(particle_kernels, CUMULUS_PARTICLE_KERNELS)
#undef CUMULUS_PARTICLE_KERNELS

}  // namespace cumulus
