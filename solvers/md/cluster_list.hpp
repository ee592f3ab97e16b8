#pragma once
// A cluster pair list for the host's SIMD pair kernels (as GROMACS's nbnxm): the local atoms in
// clusters of kClusterSize that are close in space, and for each cluster the clusters whose
// bounding boxes come within the list's reach, so that a kernel computes a cluster pair as
// kClusterSize x kClusterSize pairs from contiguous, packed data: no gathers, no per-pair list
// entries, one store per partner cluster. It computes more pairs than an atom list (every pair of
// two close clusters, masked beyond the cutoff), and each far more cheaply.
//
// Clusters: the box's x-y plane in square columns about kClusterSize / density^(2/3) wide, each
// column's atoms sorted by z and cut into clusters of kClusterSize (the last one padded), owned
// atoms and ghosts apart (owned clusters first). Pairs: each owned cluster with itself (the pairs
// j > i), with every owned cluster after it and with every ghost cluster whose box is within
// reach (by minimum image): each pair of atoms with an owned atom once. Special pairs (exclusions)
// are marked per cluster pair: two bits per atom pair, the level.
//
// Built with the atom list (the same reach: cutoff + skin, so the same pairs are covered until the
// next build); the force term rebuilds it when the atom list was rebuilt (Atoms::list_builds).
// Results do not depend on the clusters: the kernels sum in fixed point (fixed_point.hpp).
#include <cstdint>
#include <vector>

#include "solvers/md/md_kernels.hpp"

namespace cumulus::md {

inline constexpr int kClusterSize = 8;

struct ClusterList {
  int nclusters = 0, nown = 0;  // clusters in all; owned ones (0 .. nown - 1)
  // atom[c * kClusterSize + l]: the local index of lane l of cluster c, -1 for padding.
  std::vector<int> atom;
  // Cluster c's partners: pair_j[pair_start[c] .. pair_start[c + 1]) (owned c only), and for each
  // pair its special levels (pair_special[p] >= 0: the index of 8 words in `special`; word l holds
  // lane l's levels against the partner's lanes, 2 bits each), or -1 when it has none.
  std::vector<std::int64_t> pair_start;
  std::vector<int> pair_j, pair_special;
  std::vector<std::uint16_t> special;
  std::int64_t pairs() const { return pair_start.empty() ? 0 : pair_start.back(); }

  // Builds the clusters and their pairs from the atoms' positions now (host memory), within
  // `reach` (cutoff + skin; less than half the box).
  void build(const Atoms& a, double reach);
};

}  // namespace cumulus::md
