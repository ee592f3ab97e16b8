#pragma once
// The shallow-water kernels, declared once per backend pass (core/kernel_pass.hpp). Every field is
// a tile set (mesh/cubed_sphere.hpp): a View indexed (i, j, k) with k the global tile index and a
// ghost ring in i and j.
#include <cstdint>

#include "core/exact_sum.hpp"
#include "core/exec.hpp"
#include "core/kernel_pass.hpp"
#include "mesh/cubed_sphere.hpp"
#include "mesh/field.hpp"

namespace cumulus::sw {

// What a kernel needs to place a cell: the panels, the tiling and the centre tangents.
struct Grid {
  CubePanels panels;
  const double* tc = nullptr;  // tan of centre angles, panel index -kCubeGhost .. n + kCubeGhost - 1 (device memory)
  int n = 0, nx = 0, ny = 0, tx = 1, ty = 1;
  double dangle = 0;  // pi / (2 n)
  double radius = 0;  // a

  CUMULUS_HD void locate(int i, int j, int k, int* p, double* X, double* Y) const {
    const int per = tx * ty, r = k % per;
    *p = k / per;
    *X = tc[(r % tx) * nx + i + kCubeGhost];
    *Y = tc[(r / tx) * ny + j + kCubeGhost];
  }
  CUMULUS_HD CubePoint point(int i, int j, int k) const {
    int p;
    double X, Y;
    locate(i, j, k, &p, &X, &Y);
    return cube_point(panels, p, X, Y);
  }
};

// Physics constants and switches of a tendency evaluation.
struct Physics {
  double gravity = 0;
  double coriolis[3] = {0, 0, 0};  // 2 Omega times the rotation axis: f = coriolis . r
  double nu = 0;                   // hyperviscosity, m^4/s (0: off)
  bool advection_only = false;     // Williamson case 1: the wind is prescribed, only h moves
};

// The metric, precomputed per cell and ghost (host code fills it once; the kernels read it rather
// than evaluate cube_point with its divisions and square root, which made them compute-bound on
// the host): components of the geometry field.
enum Metric : int {
  kR = 0,      // unit position r (3)
  kUA = 3,     // contravariant a^alpha (3)
  kUB = 6,     // contravariant a^beta (3)
  kCA = 9,     // covariant a_alpha (3)
  kCB = 12,    // covariant a_beta (3)
  kSqrtG = 15, // sqrt(g)
  kSgAA = 16,  // sqrt(g) g^{alpha alpha}: the diffusion coefficient of alpha faces
  kSgBB = 17,  // sqrt(g) g^{beta beta}
  kMetricComponents = 18
};

// State layout: component 0 the fluid depth h, components 1-3 the Cartesian velocity (m/s).
#define CUMULUS_SW_KERNELS                                                                                      \
  void point_values(const Exec& ex, const Grid& g, const Physics& ph, const View<double>& m,                   \
                    const View<double>& s, const View<double>& hs, const View<double>& q, const Box& box);     \
  void laplacian(const Exec& ex, const Grid& g, const View<double>& m, const View<double>& area,               \
                 const View<double>& s, const View<double>& l, const Box& box);                                \
  void fluxes(const Exec& ex, const Grid& g, const Physics& ph, const View<double>& m, const View<double>& q,  \
              const View<double>& l, const View<double>& fa, const View<double>& fb, const Box& box);          \
  void tendency(const Exec& ex, const Grid& g, const Physics& ph, const View<double>& m,                       \
                const View<double>& area, const View<double>& s, const View<double>& q, const View<double>& l, \
                const View<double>& fa, const View<double>& fb, const View<double>& ds, const Box& box);       \
  ExactSum edge_outflow(const Exec& ex, const double* faces, const std::int64_t* offsets,                    \
                        const double* outward, std::int64_t n, double to_units);                              \
  void rk_stage(const Exec& ex, const View<double>& u, const View<double>& ds, const View<double>& acc,         \
                const View<double>& stage, const Box& box, double acc_weight, bool first, double stage_dt,     \
                double dh_shift);                                                                               \
  void rk_final(const Exec& ex, const View<double>& u, const View<double>& ds, const View<double>& acc,         \
                const Box& box, double dt6, double dh_shift);                                                    \
  void vorticity(const Exec& ex, const Grid& g, const View<double>& m, const View<double>& s,                  \
                 const View<double>& w, const Box& box);                                                       \
  std::int64_t first_bad_cell(const Exec& ex, const View<double>& s, const Box& box, const Box& tiles,         \
                              bool depth_positive);
CUMULUS_DECLARE_KERNEL_PASSES(kernels, CUMULUS_SW_KERNELS)
#undef CUMULUS_SW_KERNELS

}  // namespace cumulus::sw
