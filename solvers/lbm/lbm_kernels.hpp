#pragma once
// The lattice Boltzmann kernels, declared once per backend pass (core/kernel_pass.hpp) and
// instantiated for every (lattice, storage) pair the solver offers.
//
// Populations are stored shifted, fs_q = f_q - w_q (the rest state at density 1 is all zeros), so
// that fp32 and fp16 keep their digits for the deviation from rest rather than for w_q itself.
// fp16 storage keeps fs_q * 2^15 as IEEE binary16 (core/half.hpp); arithmetic is then fp32.
#include <cstdint>

#include "core/exec.hpp"
#include "core/half.hpp"
#include "core/kernel_pass.hpp"
#include "mesh/field.hpp"
#include "solvers/lbm/lattice.hpp"

namespace cumulus::lbm {

// Cell types (the low 6 bits of a flag byte). Faces are numbered 2 * axis + side (side 1: high).
enum CellType : std::uint8_t {
  kFluid = 0,
  kWall = 1,          // resting wall (halfway bounce-back)
  kMovingWall = 2,    // 2 + face: a wall moving with that face's velocity
  kInlet = 8,         // 8 + face: velocity inlet ghost
  kOutlet = 14,       // 14 + face: pressure outlet ghost
  kObstacle = 32,     // 32 + k: resting obstacle k (forces are summed per obstacle)
  kObstacleEnd = 64,
};
constexpr std::uint8_t kNear = 0x80;  // a cell whose update needs boundary handling
constexpr std::uint8_t kOpen = 0x40;  // ... and draws from an inlet or outlet (needs its own moments)
// Per boundary cell: bit q set when direction q bounces back from a resting wall or obstacle;
// kGeneralPath when the cell is solid or draws from a moving wall, inlet or outlet.
constexpr std::uint32_t kGeneralPath = 1u << 31;
constexpr int kMaxObstacles = kObstacleEnd - kObstacle;

CUMULUS_HD inline int cell_type(std::uint8_t flag) { return flag & 0x3f; }
CUMULUS_HD inline bool is_solid(int t) { return t == kWall || (t >= kMovingWall && t < kInlet) || t >= kObstacle; }

// What a face of the domain does, in lattice units.
struct FaceSpec {
  int kind = 0;           // 0 periodic or another rank; 1 wall; 2 moving wall; 3 inlet; 4 outlet
  double u[3] = {0, 0, 0};  // wall velocity, or the inlet velocity (its maximum for a parabolic profile)
  int parabolic = 0;        // inlet profile: 4 s (1 - s) across every bounded tangential axis
  double rho = 1;           // outlet density
};

// Everything a step needs, passed by value to the kernels.
struct StepParams {
  double omega = 1;        // 1 / tau
  double omega_minus = 1;  // TRT antisymmetric rate (= omega for BGK)
  double magic = -1;       // TRT magic parameter (used with Smagorinsky; < 0: BGK)
  double smagorinsky = 0;  // Smagorinsky constant C_s (0: off)
  double force[3] = {0, 0, 0};  // body force density, lattice units (Guo forcing)
  FaceSpec face[6];
  double ramp = 1;            // factor on inlet and moving-wall velocities (lbm.ramp_time)
  int global[3] = {1, 1, 1};  // global cells, for inlet profiles
  int periodic[3] = {1, 1, 1};
};

// Storage precisions: load to and store from the arithmetic type R.
template <class S>
struct Storage;
template <>
struct Storage<double> {
  using R = double;
  CUMULUS_HD CUMULUS_INLINE static R load(double v) { return v; }
  CUMULUS_HD CUMULUS_INLINE static double store(R v) { return v; }
};
template <>
struct Storage<float> {
  using R = float;
  CUMULUS_HD CUMULUS_INLINE static R load(float v) { return v; }
  CUMULUS_HD CUMULUS_INLINE static float store(R v) { return v; }
};
template <>
struct Storage<std::uint16_t> {
  using R = float;
  CUMULUS_HD CUMULUS_INLINE static R load(std::uint16_t v) { return half_to_float(v) * 3.0517578125e-05f; }  // 2^-15
  CUMULUS_HD CUMULUS_INLINE static std::uint16_t store(R v) { return float_to_half(v * 32768.0f); }
};

struct Vec3 {
  double x = 0, y = 0, z = 0;
  CUMULUS_HD Vec3 operator+(const Vec3& o) const { return {x + o.x, y + o.y, z + o.z}; }
};

// Sums over fluid cells for the diagnostics (lattice units).
struct Totals {
  double mass = 0, energy = 0;
  CUMULUS_HD Totals operator+(const Totals& o) const { return {mass + o.mass, energy + o.energy}; }
};

#define CUMULUS_LBM_KERNELS                                                                                        \
  template <class L, class S>                                                                                      \
  void stream_collide(const Exec& ex, const View<S>& src, const View<S>& dst, const Box& box, const StepParams& p); \
  template <class L, class S>                                                                                      \
  void boundary_cells(const Exec& ex, const View<S>& src, const View<S>& dst, const View<std::uint8_t>& flags,     \
                      const std::int32_t* list, const std::uint32_t* links, const float* delta, std::int64_t n,   \
                      const Box& interior, const StepParams& p);                                                   \
  template <class L, class S>                                                                                      \
  void wall_fill(const Exec& ex, const View<S>& f, const std::int32_t* list, const std::uint32_t* walls,           \
                 const std::uint32_t* moving, const std::int8_t* moving_face, std::int64_t n, const Box& interior, \
                 const StepParams& p);                                                                             \
  template <class L, class S>                                                                                      \
  void macroscopic(const Exec& ex, const View<S>& f, const View<std::uint8_t>& flags, const View<double>& out,      \
                   const Box& box, const StepParams& p);                                                           \
  template <class L, class S>                                                                                      \
  Vec3 obstacle_force(const Exec& ex, const View<S>& f, const View<std::uint8_t>& flags, const std::int32_t* list, \
                      const float* delta, std::int64_t n, const Box& interior, int type);                          \
  template <class L, class S>                                                                                      \
  Totals totals(const Exec& ex, const View<S>& f, const View<std::uint8_t>& flags, const Box& box,                \
                const StepParams& p);                                                                              \
  template <class L, class S>                                                                                      \
  std::int64_t first_bad_cell(const Exec& ex, const View<S>& f, const View<std::uint8_t>& flags, const Box& box,  \
                              const Box& global, double max_speed);                                                \
  template <class S>                                                                                               \
  void fill_zero(const Exec& ex, const View<S>& f, const Box& box, int ncomp);                                     \
  void vorticity(const Exec& ex, const View<double>& macro, const View<double>& out, const Box& box, bool three_d);  \
  double probe_sum(const Exec& ex, const View<double>& macro, const View<std::uint8_t>& flags, const Box& box,      \
                   const double pos[3], int ndim, bool weights);
CUMULUS_DECLARE_KERNEL_PASSES(kernels, CUMULUS_LBM_KERNELS)
#undef CUMULUS_LBM_KERNELS

}  // namespace cumulus::lbm
