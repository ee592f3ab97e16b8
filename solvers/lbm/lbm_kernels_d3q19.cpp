// The lattice Boltzmann kernels of D3Q19, for every storage precision: a kernel source of its own,
// so that its CUDA pass is a separate nvcc compile (lbm_kernels_impl.hpp).
#include "solvers/lbm/lbm_kernels_impl.hpp"

namespace cumulus::lbm::kernels::CUMULUS_PASS {
CUMULUS_LBM_INSTANTIATE_ALL(D3Q19)
}  // namespace cumulus::lbm::kernels::CUMULUS_PASS
