// The lattice Boltzmann kernels of D3Q27 with fp64 storage. D3Q27, the largest lattice, has one kernel
// source per storage precision: as one source its CUDA pass was the longest nvcc compile of the
// build (lbm_kernels_impl.hpp; docs/architecture.md, "Build time").
#include "solvers/lbm/lbm_kernels_impl.hpp"

namespace cumulus::lbm::kernels::CUMULUS_PASS {
CUMULUS_LBM_INSTANTIATE(D3Q27, double)
}  // namespace cumulus::lbm::kernels::CUMULUS_PASS
