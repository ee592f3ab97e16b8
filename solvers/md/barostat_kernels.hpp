#pragma once
// The barostat's rescaling kernels (barostat_kernels.cpp; one source per backend pass).
#include "core/exec.hpp"
#include "core/kernel_pass.hpp"
#include "solvers/md/bonded_kernels.hpp"
#include "solvers/md/md_kernels.hpp"

namespace cumulus::md {

#define CUMULUS_BAROSTAT_KERNELS                                                                               \
  void rescale_shifts(const Exec& ex, const Atoms& a, const TopologyView& t, double mu, double* sx, double* sy,  \
                      double* sz);                                                                             \
  void rescale_apply(const Exec& ex, const Atoms& a, const double* sx, const double* sy, const double* sz,       \
                     double inv_mu, const double* new_box);
CUMULUS_DECLARE_KERNEL_PASSES(barostat_kernels, CUMULUS_BAROSTAT_KERNELS)
#undef CUMULUS_BAROSTAT_KERNELS

}  // namespace cumulus::md
