#pragma once
// Kernels of CubeGatherPlan (pack the values other ranks need; combine weighted terms; scatter
// the results into the destination slots), declared once per backend pass.
#include <cstdint>

#include "core/exec.hpp"
#include "core/kernel_pass.hpp"

namespace cumulus {

// Pads the rows of the term table.
inline constexpr std::int64_t kCubePad = INT64_MIN;

#define CUMULUS_CUBE_KERNELS                                                                                   \
  void cube_pack(const Exec& ex, const double* data, const std::int64_t* offsets, std::int64_t n, int ncomp,   \
                 std::int64_t stride, double* buf);                                                            \
  void cube_combine(const Exec& ex, const double* data, const double* recv, const std::int64_t* index,         \
                    const double* weight, std::int64_t ndst, int nterms, int ncomp, std::int64_t stride,       \
                    double* result);                                                                           \
  void cube_scatter(const Exec& ex, double* data, const std::int64_t* dst, std::int64_t ndst, int ncomp,       \
                    std::int64_t stride, const double* result);
CUMULUS_DECLARE_KERNEL_PASSES(cube_kernels, CUMULUS_CUBE_KERNELS)
#undef CUMULUS_CUBE_KERNELS

}  // namespace cumulus
