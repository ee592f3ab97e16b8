#pragma once
// Atomic addition that a kernel body can call on either backend (core/kernel_pass.hpp compiles one
// body with g++ for the host's OpenMP threads and with nvcc for CUDA). Integers only: their sums do
// not depend on the order of the additions, which is why a deposit that many threads make into one
// cell (PME's fixed-point charge grid) stays the same bits whatever the threads' interleaving.
#include <cstdint>

#include "core/macros.hpp"

namespace cumulus {

CUMULUS_HD inline void atomic_add(std::int64_t* p, std::int64_t v) {
#if defined(__CUDA_ARCH__)
  // Two's complement: adding as unsigned 64-bit gives the signed sum's bits.
  atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
#else
  __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
#endif
}

}  // namespace cumulus
