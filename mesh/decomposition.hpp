#pragma once
// Cartesian domain decomposition: global cells + periodic flags + rank count -> each rank's box
// and its neighbours. Pure arithmetic (no MPI), so every rank computes the same answer and tests
// can check any rank count without launching ranks.
#include <array>
#include <string>

#include "core/box.hpp"

namespace cumulus {

class CartesianDecomposition {
 public:
  // `ndim` is 2 or 3 (the z extent of a 2D grid is 1). `min_cells` is the fewest cells a rank may
  // own along a split axis (at least the ghost width, so halos come from direct neighbours only).
  // `dims` forces the process grid (0 = choose). Throws InputError when the split is impossible.
  CartesianDecomposition(const Index3& global_cells, const std::array<bool, 3>& periodic, int nranks, int ndim,
                         int min_cells = 1, Index3 dims = {0, 0, 0});

  int ndim() const { return ndim_; }
  int nranks() const { return nranks_; }
  const Index3& dims() const { return dims_; }
  const Index3& global_cells() const { return cells_; }
  Box global_box() const { return Box::from_extent(cells_); }
  const std::array<bool, 3>& periodic() const { return periodic_; }

  Index3 coords_of(int rank) const;
  int rank_of(const Index3& coords) const;
  Box box_of(int rank) const;
  // The rank across the face/edge/corner in direction `dir` (components -1, 0, 1), or -1 when
  // that side is a physical (non-periodic) boundary.
  int neighbor(int rank, const Index3& dir) const;
  // Whether `rank`'s box touches the low (side 0) or high (side 1) global boundary along `axis`.
  bool on_boundary(int rank, int axis, int side) const;
  std::string describe() const;  // "2 x 2 x 1 ranks, 32x32x1 cells each (uneven: ...)"

 private:
  Index3 cells_;
  std::array<bool, 3> periodic_;
  int nranks_, ndim_;
  Index3 dims_;
};

class Config;

// For a solver's check(): tries the split the model will make (the constructor's arguments) and
// turns an impossible one into a config error on `key`, so that the job is refused with the key to
// change before anything is allocated. `context`, when given, goes before the reason.
void check_decomposition(const Config& cfg, const std::string& key, const Index3& global_cells,
                         const std::array<bool, 3>& periodic, int nranks, int ndim, int min_cells = 1,
                         const std::string& context = "");

// Splits n cells over p parts as evenly as possible: the first n % p parts get one more.
inline int split_lo(int n, int p, int part) { return part * (n / p) + (part < n % p ? part : n % p); }

}  // namespace cumulus
