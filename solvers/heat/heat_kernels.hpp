#pragma once
// The heat solver's kernels, declared once per backend pass (core/kernel_pass.hpp): the model
// calls CUMULUS_KERNEL(exec, kernels, name)(...), which picks the pass compiled for exec's backend.
#include <cstdint>

#include "core/exec.hpp"
#include "core/hd_math.hpp"
#include "core/kernel_pass.hpp"
#include "mesh/field.hpp"
#include "solvers/heat/heat.hpp"

namespace cumulus::heat {

// Inline: both passes (and the model) use it; it runs on the host and on the device. hd::exp, sin
// and pow (core/hd_math.hpp), not the libraries', so that both backends fill the same bits.
CUMULUS_HD inline double Analytic::operator()(int i, int j, int k, double t) const {
  const double x[3] = {(i + 0.5) * h[0], (j + 0.5) * h[1], (k + 0.5) * h[2]};
  if (kind == 0) {
    double v = amplitude * hd::exp(-decay * t);
    for (int d = 0; d < ndim; ++d) v *= hd::sin(wave[d] * x[d]);
    return offset + v;
  }
  // Free-space Gaussian: sigma^2(t) = sigma^2 + 2 alpha t, amplitude scaled by (sigma/sigma(t))^ndim.
  const double s2 = width * width, st2 = s2 + 2 * alpha * t;
  double r2 = 0;
  for (int d = 0; d < ndim; ++d) r2 += (x[d] - center[d]) * (x[d] - center[d]);
  return offset + amplitude * hd::pow(s2 / st2, 0.5 * ndim) * hd::exp(-r2 / (2 * st2));
}


#define CUMULUS_HEAT_KERNELS                                                                                     \
  void fill(const Exec& ex, const View<double>& u, const Box& box, const Analytic& a, double t);                 \
  void update(const Exec& ex, const View<double>& u, const View<double>& un, const Box& box, double cx, double cy, \
              double cz, bool three_d);                                                                          \
  void fixed_face(const Exec& ex, const View<double>& u, const Box& ghost_layer, int axis, int face, double value); \
  std::int64_t first_nonfinite(const Exec& ex, const View<double>& u, const Box& box, const Box& global);       \
  double sum(const Exec& ex, const View<double>& u, const Box& box);                                            \
  double minimum(const Exec& ex, const View<double>& u, const Box& box);                                        \
  double maximum(const Exec& ex, const View<double>& u, const Box& box);                                        \
  double error_sq(const Exec& ex, const View<double>& u, const Box& box, const Analytic& a, double t);           \
  double error_max(const Exec& ex, const View<double>& u, const Box& box, const Analytic& a, double t);
CUMULUS_DECLARE_KERNEL_PASSES(kernels, CUMULUS_HEAT_KERNELS)
#undef CUMULUS_HEAT_KERNELS

}  // namespace cumulus::heat
