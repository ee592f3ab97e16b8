#include "mesh/decomposition.hpp"

#include <limits>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/strings.hpp"

namespace cumulus {

CartesianDecomposition::CartesianDecomposition(const Index3& global_cells, const std::array<bool, 3>& periodic,
                                               int nranks, int ndim, int min_cells, Index3 dims)
    : cells_(global_cells), periodic_(periodic), nranks_(nranks), ndim_(ndim), dims_(dims) {
  if (ndim < 1 || ndim > 3) throw Error("CartesianDecomposition: ndim must be 1, 2 or 3");
  for (int d = 0; d < 3; ++d) {
    if (cells_[d] < 1) throw InputError(strprintf("the grid needs at least one cell along axis %d", d));
    if (d >= ndim && cells_[d] != 1) throw Error("CartesianDecomposition: unused axes must have one cell");
  }
  if (nranks < 1) throw Error("CartesianDecomposition: nranks < 1");
  const bool given = dims_[0] > 0;
  if (!given) {
    // Every factorisation p0*p1*p2 = nranks with at least min_cells per rank on each split axis;
    // keep the one with the least halo surface (ties: split the slowest axis first, so that
    // ranks own whole contiguous rows). Deterministic: every rank finds the same.
    double best = std::numeric_limits<double>::max();
    for (int p0 = 1; p0 <= nranks; ++p0) {
      if (nranks % p0) continue;
      for (int p1 = 1; p1 <= nranks / p0; ++p1) {
        if ((nranks / p0) % p1) continue;
        const int p2 = nranks / p0 / p1;
        const Index3 p{p0, p1, p2};
        bool ok = true;
        for (int d = 0; d < 3; ++d) {
          if (d >= ndim && p[d] != 1) ok = false;
          if (p[d] > 1 && cells_[d] / p[d] < min_cells) ok = false;
        }
        if (!ok) continue;
        double surface = 0;
        for (int d = 0; d < ndim; ++d) {
          if (p[d] == 1 && !periodic_[d]) continue;
          double face = 1;
          for (int e = 0; e < ndim; ++e)
            if (e != d) face *= static_cast<double>(cells_[e]) / p[e];
          surface += face;
        }
        // Prefer splitting high axes: ties resolved towards larger p2, then p1.
        surface += 1e-9 * (p0 * 4.0 + p1 * 2.0);
        if (surface < best) {
          best = surface;
          dims_ = p;
        }
      }
    }
    if (best == std::numeric_limits<double>::max())
      throw InputError(strprintf("cannot split a %dx%dx%d grid over %d ranks with at least %d cell(s) per rank "
                                 "along each split axis: use fewer ranks or more cells",
                                 cells_[0], cells_[1], cells_[2], nranks, min_cells));
  } else {
    if (dims_[0] * dims_[1] * dims_[2] != nranks) throw InputError("the process grid does not match the rank count");
    for (int d = 0; d < 3; ++d)
      if (dims_[d] > 1 && cells_[d] / dims_[d] < min_cells)
        throw InputError(strprintf("%d ranks along axis %d leave fewer than %d cells per rank", dims_[d], d, min_cells));
  }
}

Index3 CartesianDecomposition::coords_of(int rank) const {
  return {rank % dims_[0], (rank / dims_[0]) % dims_[1], rank / (dims_[0] * dims_[1])};
}

int CartesianDecomposition::rank_of(const Index3& c) const { return c[0] + dims_[0] * (c[1] + dims_[1] * c[2]); }

Box CartesianDecomposition::box_of(int rank) const {
  const Index3 c = coords_of(rank);
  Box b;
  for (int d = 0; d < 3; ++d) {
    b.lo[d] = split_lo(cells_[d], dims_[d], c[d]);
    b.hi[d] = split_lo(cells_[d], dims_[d], c[d] + 1);
  }
  return b;
}

int CartesianDecomposition::neighbor(int rank, const Index3& dir) const {
  Index3 c = coords_of(rank);
  for (int d = 0; d < 3; ++d) {
    if (dir[d] == 0) continue;
    if (d >= ndim_) return -1;
    c[d] += dir[d];
    if (c[d] < 0 || c[d] >= dims_[d]) {
      if (!periodic_[d]) return -1;
      c[d] = (c[d] + dims_[d]) % dims_[d];
    }
  }
  return rank_of(c);
}

bool CartesianDecomposition::on_boundary(int rank, int axis, int side) const {
  const Index3 c = coords_of(rank);
  return side == 0 ? c[axis] == 0 : c[axis] == dims_[axis] - 1;
}

std::string CartesianDecomposition::describe() const {
  std::string s = strprintf("%d rank%s as %dx%dx%d over %dx%dx%d cells", nranks_, nranks_ == 1 ? "" : "s", dims_[0],
                            dims_[1], dims_[2], cells_[0], cells_[1], cells_[2]);
  return s;
}

void check_decomposition(const Config& cfg, const std::string& key, const Index3& global_cells,
                         const std::array<bool, 3>& periodic, int nranks, int ndim, int min_cells,
                         const std::string& context) {
  try {
    CartesianDecomposition(global_cells, periodic, nranks, ndim, min_cells);
  } catch (const InputError& e) {
    cfg.fail(key, context.empty() ? std::string(e.what()) : context + ": " + e.what());
  }
}

}  // namespace cumulus
