// ParticleStore's gathers. A kernel source: compiled once per backend (g++ for the host, nvcc for
// CUDA), each pass in its own namespace (core/kernel_pass.hpp).
#include "mesh/particle_kernels.hpp"

namespace cumulus {
namespace particle_kernels::CUMULUS_PASS {

void gather_u32(const Exec& ex, const std::uint32_t* in, std::uint32_t* out, const int* perm, int n) {
  for_each(ex, "particles.reorder", Box(0, 0, 0, n, 1, 1), [=] CUMULUS_HD(int k, int, int) { out[k] = in[perm[k]]; });
}
void gather_u64(const Exec& ex, const std::uint64_t* in, std::uint64_t* out, const int* perm, int n) {
  for_each(ex, "particles.reorder", Box(0, 0, 0, n, 1, 1), [=] CUMULUS_HD(int k, int, int) { out[k] = in[perm[k]]; });
}

}  // namespace particle_kernels::CUMULUS_PASS
}  // namespace cumulus
