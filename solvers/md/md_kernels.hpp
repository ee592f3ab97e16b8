#pragma once
// Molecular dynamics kernels (velocity Verlet, Langevin, Nose-Hoover scaling, thermo sums, the
// kernel-built neighbour list, ghost positions), declared once per backend pass; each force term
// declares its own (pair_lj_cut.hpp). Atoms are structure-of-arrays: x, y, z
// each n doubles; types index per-type tables (masses, pair coefficients).
#include <cstddef>
#include <cstdint>

#include "core/exact_sum.hpp"
#include "core/exec.hpp"
#include "core/kernel_pass.hpp"

namespace cumulus::md {

// The host builder's distance shells (NeighborList::shells; order-free force terms only): each
// slot's row holds its partners grouped by their distance at the build, nearest shell first, so
// that a force call can leave out the far end of every row while no atom has moved far enough
// for a pair there to have come within its cutoff, and skip the within-reach test at the near
// end (pair_lj_cut_coul_long_mixed_kernels.cpp). Host memory.
struct ListShells {
  static constexpr int kCount = 8;
  // Shell k >= 1 holds the partners whose distance r at the build was at least edge(k - 1), shell
  // k < kCount - 1 those below edge(k) (to a few roundings: the builder computes shell(r^2)).
  // Edges from 0.66 to 0.96 of the reach, 0.6 A apart at 12 A (7.9 to 11.5 A): the force calls'
  // decisions fall within a skin of the cutoff (water: 10 A, skin 2 A).
  static double edge(int k, double reach) { return reach * (0.66 + 0.05 * k); }
  static int shell(double r2, double inv_reach) {
    const double t = (__builtin_sqrt(r2) * inv_reach - 0.66) * 20 + 1;
    return static_cast<int>(t < 0 ? 0 : (t > kCount - 1 ? kCount - 1 : t));
  }
  const int* end = nullptr;      // slot s's shell k ends at start[s] + end[s * kCount + k]
  const double* x0 = nullptr;    // the local atoms' positions at the build: atom k's x, y, z at 3k
  int nlocal = 0;                // local atoms at the build
  double reach = 0;              // the list's reach (cutoff + skin)
  double box[3] = {0, 0, 0};     // the box at the build
};

// Atoms and their list, as raw pointers into one backend's memory (captured by value by kernels).
struct Atoms {
  double *x = nullptr, *y = nullptr, *z = nullptr;
  double *vx = nullptr, *vy = nullptr, *vz = nullptr;
  double *fx = nullptr, *fy = nullptr, *fz = nullptr;
  double *pe = nullptr, *virial = nullptr;  // per atom: half of each pair's energy and r . F
  int *ix = nullptr, *iy = nullptr, *iz = nullptr;  // image counts (box crossings)
  double *x0 = nullptr, *y0 = nullptr, *z0 = nullptr;  // positions at the last list build
  double* work = nullptr;  // energy the thermostat has taken out of each atom so far
  const int* type = nullptr;      // per atom, owned and ghosts: 0 .. ntypes - 1
  const double* mass = nullptr;   // per type
  const std::int64_t* id = nullptr;  // global atom ids (the thermostat's random numbers are keyed by them)
  // Charged atoms (a Coulomb pair style, a data file with charges): the charge of each owned atom
  // and ghost (null otherwise).
  const double* q = nullptr;
  // Special partners (exclusions, topology.hpp): atom i's k-th is special[k][i], encoded as
  // partner id * 4 + level (1: 1-2, 2: 1-3, 3: 1-4), -1 when unused; nspecial columns, owned atoms
  // and ghosts, in ascending partner id.
  static constexpr int kMaxSpecial = 32;
  const std::int64_t* special[kMaxSpecial] = {};
  int nspecial = 0;
  // The host's mixed-precision pair loops: each special partner's local index,
  // special_local[k * nlocal + i] (-1: unused, or not on this rank), host memory, set by the pair
  // term once a list build (list_build: the list's builds so far). Null: the loops find the
  // special partners by their ids.
  const int* special_local = nullptr;
  long list_build = 0;
  const std::int64_t* start = nullptr;  // CSR neighbour list: atom i's neighbours are
  const int* neighbors = nullptr;       // neighbors[start[i] .. start[i + 1])
  int n = 0;
  int nlocal = 0;  // owned atoms and ghosts (the partners' indices are below it)
  // Half list (host, one thread): slot s holds atom order[s] (owned and ghosts in ascending global
  // id) and its neighbours of larger id in neighbors[start[s] .. start[s + 1]) (a ghost's: owned
  // atoms only), in ascending id; for a force term that takes a pair in either atom's slot
  // (ForceTerm::either_slot) and no ghost slots, an owned atom's owned neighbours in the forward
  // half of its stencil instead (NeighborList::allow_either_slot), in ascending id only where the
  // term needs it (ForceTerm::needs_id_order). Full list otherwise: slot i is owned atom i, every
  // neighbour listed.
  bool half = false;
  const int* order = nullptr;
  int nslots = 0;
  ListShells shells;  // end null: none (the kernel builder, or partners in id order)
  // Whether the force call must also fill pe and virial (thermo steps); the half-list kernel skips
  // them otherwise. Forces are the same bits either way.
  bool energy = true;
  double box[3] = {0, 0, 0};
  // Newton's third law across ranks (ForceTerm::fills_fixed_rows; the host's half list without
  // ghost slots): when set, the pair term leaves every local atom's sums here, fixed::kRow
  // integers an atom (owned, then ghosts), and writes no forces; the solver adds the ghosts' rows
  // into their owners' and stores them (fixed::store_rows).
  std::int64_t* fixed_rows = nullptr;
};

// The neighbour list built by kernels (md.neighbor_build = "kernels", the default on CUDA): the
// atoms' list bins, at least cutoff + skin wide, searched one bin out (all pairs where an axis holds
// fewer than three).
struct ListGrid {
  int nb[3] = {1, 1, 1};
  double box[3] = {0, 0, 0};
  double rl2 = 0;
  bool brute = true;
};
// What the list kernels read: positions and global ids of the local atoms (owned first, then
// ghosts), and the atoms grouped by bin: bin b's atoms are bin_atoms[bin_start[b] .. bin_start[b+1])
// (bin_atoms null: the atoms themselves are in bin order).
struct ListInput {
  const double *x = nullptr, *y = nullptr, *z = nullptr;
  const std::int64_t* id = nullptr;
  const int* bin_start = nullptr;
  const int* bin_atoms = nullptr;
  int nown = 0, nlocal = 0;
  ListGrid g;
};

// Coordinates are wrapped into [0, L), so |d| < L and one comparison finds the nearest image (the
// same values as d - L floor(d / L + 0.5), without the division).
CUMULUS_HD inline double minimum_image(double d, double L) {
  const double h = 0.5 * L;
  return d > h ? d - L : (d < -h ? d + L : d);
}
// md.precision = "mixed": one component of a pair's separation from the coordinates rounded to
// fp32, their difference in fp32, the nearest image as minimum_image finds it (L rounded to fp32, h
// its exact half). The pair loops of every backend, generic and hand-written, compute it so, and the
// host's SIMD first pass keeps its values for the terms. The coordinates' rounding makes the
// separation's error about 2^-24 of the box, felt times a close pair's stiffness: the largest part of
// a mixed pair's force error (6e-6 of the RMS force on the unit tests' ions, against 7e-7 from fp64
// separations), as with GROMACS's and OpenMM's fp32 coordinates. Antisymmetric bit for bit (a - b = -(b - a); the tests swap the
// partners), so a pair's partner gets the exact negative.
CUMULUS_HD inline float separation32(double xi, double xj, double L) {
  const float d = static_cast<float>(xi) - static_cast<float>(xj), l = static_cast<float>(L), h = 0.5f * l;
  return d > h ? d - l : (d < -h ? d + l : d);
}
// A coordinate that moved less than a box length, back into [0, L), counting the crossing.
CUMULUS_HD inline double wrap(double x, double L, int& image) {
  if (x < 0) {
    image -= 1;
    return x + L;
  }
  if (x >= L) {
    image += 1;
    return x - L;
  }
  return x;
}

// Where the first half kick and drift keep each owned atom's position from before the drift: the
// constraint solvers' reference positions (null: none kept). One pass for what were a copy per
// axis and the kick.
struct KeptPositions {
  double *x = nullptr, *y = nullptr, *z = nullptr;
};

// kick_drift: v = v scale + dt/2 F/m (scale: the Nose-Hoover chain's half-step factor, applied here
// rather than by a pass of its own; 1 otherwise), x += dt v. The same bits as scaling, then kicking.
#define CUMULUS_MD_KERNELS                                                                           \
  void kick_drift(const Exec& ex, const Atoms& a, double half_dt, double dt, double scale, KeptPositions keep); \
  void kick(const Exec& ex, const Atoms& a, double half_dt);                                          \
  void kick_drift_langevin(const Exec& ex, const Atoms& a, double half_dt, double dt, double c1, double kT, \
                           std::uint64_t seed, std::uint64_t step, KeptPositions keep);                   \
  void scale_velocities(const Exec& ex, const Atoms& a, double factor);                               \
  ExactSum kinetic_exact(const Exec& ex, const Atoms& a);                                            \
  ExactSum thermo_exact(const Exec& ex, const Atoms& a, int which);                                  \
  double max_displacement2(const Exec& ex, const Atoms& a, double* into);                            \
  std::int64_t first_bad_atom(const Exec& ex, const Atoms& a);                                       \
  void bin_keys(const Exec& ex, const ListInput& in, int n, int* key, int* seq);                      \
  void sort_pairs(const Exec& ex, const int* keys_in, int* keys_out, const int* vals_in, int* vals_out, int n, \
                  int nbins, void* temp, std::size_t* temp_bytes);                                    \
  void bin_bounds(const Exec& ex, const int* sorted_keys, int n, int nbins, int* bin_start);          \
  void prefix_sum(const Exec& ex, const std::int64_t* counts, std::int64_t* start, int n, void* temp,  \
                  std::size_t* temp_bytes);                                                           \
  void list_count(const Exec& ex, const ListInput& in, std::int64_t* counts);                         \
  void list_fill(const Exec& ex, const ListInput& in, const std::int64_t* start, int* neighbors);     \
  void list_count_bins(const Exec& ex, const ListInput& in, std::int64_t* counts);                    \
  void list_fill_bins(const Exec& ex, const ListInput& in, const std::int64_t* start, int* neighbors); \
  void list_starts(const Exec& ex, const std::int64_t* bin_starts, int n, std::int64_t* start);       \
  void list_sort(const Exec& ex, const ListInput& in, const std::int64_t* start, int* neighbors);     \
  void pack_positions(const Exec& ex, const Atoms& a, const int* idx, int n, double* out);            \
  void unpack_positions(const Exec& ex, const Atoms& a, const double* in, int first, int n);
CUMULUS_DECLARE_KERNEL_PASSES(kernels, CUMULUS_MD_KERNELS)
#undef CUMULUS_MD_KERNELS

}  // namespace cumulus::md
