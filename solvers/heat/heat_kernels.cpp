// The heat solver's kernel bodies. A kernel source: compiled once per backend (g++ for the host,
// nvcc for CUDA), each pass in its own namespace (core/kernel_pass.hpp).
#include <cmath>
#include <cstdint>
#include <limits>

#include "solvers/heat/heat_kernels.hpp"

namespace cumulus::heat {

namespace kernels::CUMULUS_PASS {
// Free functions: nvcc takes extended lambdas only in free or public functions.

void fill(const Exec& ex, const View<double>& u, const Box& box, const Analytic& a, double t) {
  for_each(ex, "heat.initial", box, [=] CUMULUS_HD(int i, int j, int k) { u(i, j, k) = a(i, j, k, t); });
}

// Forward Euler with the 2d+1-point Laplacian. One body for 2D and one for 3D: a branch inside
// the body would keep the host compiler from vectorising the loop.
void update(const Exec& ex, const View<double>& u, const View<double>& un, const Box& box, double cx, double cy,
            double cz, bool three_d) {
  if (three_d) {
    for_each_multiarch(ex, "heat.update", box, [=] CUMULUS_HD(int i, int j, int k) {
      const double c = u(i, j, k);
      un(i, j, k) = c + (cx * (u(i - 1, j, k) - 2 * c + u(i + 1, j, k)) + cy * (u(i, j - 1, k) - 2 * c + u(i, j + 1, k)) +
                         cz * (u(i, j, k - 1) - 2 * c + u(i, j, k + 1)));
    });
  } else {
    for_each_multiarch(ex, "heat.update", box, [=] CUMULUS_HD(int i, int j, int k) {
      const double c = u(i, j, k);
      un(i, j, k) = c + (cx * (u(i - 1, j, k) - 2 * c + u(i + 1, j, k)) + cy * (u(i, j - 1, k) - 2 * c + u(i, j + 1, k)));
    });
  }
}

// Dirichlet value on the face between the last cell and its ghost: ghost = 2 T - mirror cell.
void fixed_face(const Exec& ex, const View<double>& u, const Box& ghost_layer, int axis, int face, double value) {
  for_each(ex, "heat.boundary", ghost_layer, [=] CUMULUS_HD(int i, int j, int k) {
    int m[3] = {i, j, k};
    m[axis] = 2 * face - 1 - m[axis];
    u(i, j, k) = 2 * value - u(m[0], m[1], m[2]);
  });
}

// The lowest GlobalCellNumber of a non-finite cell, or kNoBadCell.
std::int64_t first_nonfinite(const Exec& ex, const View<double>& u, const Box& box, const Box& global) {
  const GlobalCellNumber number(global);
  return reduce(ex, "heat.health", box, kNoBadCell, MinOp{}, [=] CUMULUS_HD(int i, int j, int k) -> std::int64_t {
    const double v = u(i, j, k);
    // v - v is 0 for finite v and NaN for NaN and +-Inf (no isfinite needed on the device).
    return (v - v == 0) ? kNoBadCell : number(i, j, k);
  });
}

double sum(const Exec& ex, const View<double>& u, const Box& box) {
  return reduce(ex, "heat.diagnostics", box, 0.0, SumOp{}, [=] CUMULUS_HD(int i, int j, int k) { return u(i, j, k); });
}
double minimum(const Exec& ex, const View<double>& u, const Box& box) {
  return reduce(ex, "heat.diagnostics", box, std::numeric_limits<double>::max(), MinOp{},
                [=] CUMULUS_HD(int i, int j, int k) { return u(i, j, k); });
}
double maximum(const Exec& ex, const View<double>& u, const Box& box) {
  return reduce(ex, "heat.diagnostics", box, std::numeric_limits<double>::lowest(), MaxOp{},
                [=] CUMULUS_HD(int i, int j, int k) { return u(i, j, k); });
}
double error_sq(const Exec& ex, const View<double>& u, const Box& box, const Analytic& a, double t) {
  return reduce(ex, "heat.diagnostics", box, 0.0, SumOp{}, [=] CUMULUS_HD(int i, int j, int k) {
    const double e = u(i, j, k) - a(i, j, k, t);
    return e * e;
  });
}
double error_max(const Exec& ex, const View<double>& u, const Box& box, const Analytic& a, double t) {
  return reduce(ex, "heat.diagnostics", box, 0.0, MaxOp{}, [=] CUMULUS_HD(int i, int j, int k) {
    const double e = u(i, j, k) - a(i, j, k, t);
    return e < 0 ? -e : e;
  });
}
}  // namespace kernels::CUMULUS_PASS

}  // namespace cumulus::heat
