// Kernel bodies of CubeGatherPlan (one source, compiled per backend: core/kernel_pass.hpp).
#include "mesh/cube_kernels.hpp"

namespace cumulus {
namespace cube_kernels::CUMULUS_PASS {

// buf[s * ncomp + c] = data[offsets[s] + c * stride]: a peer's values stay contiguous.
void cube_pack(const Exec& ex, const double* data, const std::int64_t* offsets, std::int64_t n, int ncomp,
               std::int64_t stride, double* buf) {
  for_each(ex, "cube.pack", Box(0, 0, 0, static_cast<int>(n), ncomp, 1), [=] CUMULUS_HD(int s, int c, int) {
    buf[static_cast<std::int64_t>(s) * ncomp + c] = data[offsets[s] + c * stride];
  });
}

// result[c * ndst + d] = sum over t of weight[d][t] * source, the terms in table order (a fixed
// order: the same bits whatever the rank layout). Index >= 0: local data; < 0: receive buffer.
void cube_combine(const Exec& ex, const double* data, const double* recv, const std::int64_t* index,
                  const double* weight, std::int64_t ndst, int nterms, int ncomp, std::int64_t stride,
                  double* result) {
  for_each(ex, "cube.combine", Box(0, 0, 0, static_cast<int>(ndst), ncomp, 1), [=] CUMULUS_HD(int d, int c, int) {
    double v = 0;
    for (int t = 0; t < nterms; ++t) {
      const std::int64_t e = static_cast<std::int64_t>(d) * nterms + t;
      const std::int64_t ix = index[e];
      if (ix == kCubePad) break;  // the row's terms end here
      const double w = weight[e];
      const double x = ix >= 0 ? data[ix + c * stride] : recv[(-1 - ix) * ncomp + c];
      v = t == 0 ? w * x : v + w * x;
    }
    result[static_cast<std::int64_t>(c) * ndst + d] = v;
  });
}

void cube_scatter(const Exec& ex, double* data, const std::int64_t* dst, std::int64_t ndst, int ncomp,
                  std::int64_t stride, const double* result) {
  for_each(ex, "cube.scatter", Box(0, 0, 0, static_cast<int>(ndst), ncomp, 1), [=] CUMULUS_HD(int d, int c, int) {
    data[dst[d] + c * stride] = result[static_cast<std::int64_t>(c) * ndst + d];
  });
}

}  // namespace cube_kernels::CUMULUS_PASS
}  // namespace cumulus
