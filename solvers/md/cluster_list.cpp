// The cluster pair list (cluster_list.hpp): columns, clusters, bounding boxes, pairs, special
// levels. Host code: it reads the atoms' host arrays.
#include "solvers/md/cluster_list.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace cumulus::md {

namespace {

// The gap between [alo, ahi] and [blo, bhi] on a periodic axis of length L (the nearest images).
double periodic_gap(double alo, double ahi, double blo, double bhi, double L) {
  double best = 1e300;
  for (double s : {-L, 0.0, L}) {
    const double g = std::max({0.0, blo + s - ahi, alo - bhi - s});
    best = std::min(best, g);
  }
  return best;
}

}  // namespace

void ClusterList::build(const Atoms& a, double reach) {
  const int n = a.n, nl = std::max(a.nlocal, a.n);
  const double* const L = a.box;
  const double* const pos[3] = {a.x, a.y, a.z};
  // Columns about as wide as a cluster is tall: the owned atoms' density over their extent (one
  // rank: the box; more: its block).
  double lo[3] = {1e300, 1e300, 1e300}, hi[3] = {-1e300, -1e300, -1e300};
  for (int i = 0; i < n; ++i)
    for (int d = 0; d < 3; ++d) {
      lo[d] = std::min(lo[d], pos[d][i]);
      hi[d] = std::max(hi[d], pos[d][i]);
    }
  double volume = 1;
  for (int d = 0; d < 3; ++d) volume *= n > 0 ? std::max(hi[d] - lo[d], 1e-3 * L[d]) : L[d];
  const double width = n > 0 ? std::cbrt(kClusterSize * volume / n) : L[0];
  const int ncol[2] = {std::max(1, static_cast<int>(L[0] / width)), std::max(1, static_cast<int>(L[1] / width))};
  const double colw[2] = {L[0] / ncol[0], L[1] / ncol[1]};
  const int ncols = ncol[0] * ncol[1];
  auto column_of = [&](int i) {
    const int cx = std::clamp(static_cast<int>(a.x[i] / colw[0]), 0, ncol[0] - 1);
    const int cy = std::clamp(static_cast<int>(a.y[i] / colw[1]), 0, ncol[1] - 1);
    return cx + ncol[0] * cy;
  };

  // Clusters: owned atoms, then ghosts, each by column, sorted by z, in runs of kClusterSize.
  atom.clear();
  std::vector<int> cluster_col;                      // each cluster's column
  std::vector<std::vector<int>> col_clusters(ncols);  // each column's clusters
  std::vector<std::pair<double, int>> items;
  std::vector<int> count(static_cast<std::size_t>(ncols) + 1);
  for (int part = 0; part < 2; ++part) {
    const int first = part == 0 ? 0 : n, last = part == 0 ? n : nl;
    std::fill(count.begin(), count.end(), 0);
    for (int i = first; i < last; ++i) ++count[static_cast<std::size_t>(column_of(i)) + 1];
    for (int c = 0; c < ncols; ++c) count[static_cast<std::size_t>(c) + 1] += count[static_cast<std::size_t>(c)];
    items.assign(static_cast<std::size_t>(last - first), {0.0, 0});
    std::vector<int> at(count.begin(), count.end() - 1);
    for (int i = first; i < last; ++i) items[static_cast<std::size_t>(at[static_cast<std::size_t>(column_of(i))]++)] = {a.z[i], i};
    for (int c = 0; c < ncols; ++c) {
      const auto b = items.begin() + count[static_cast<std::size_t>(c)], e = items.begin() + count[static_cast<std::size_t>(c) + 1];
      std::sort(b, e);
      for (auto it = b; it < e; it += std::min<std::ptrdiff_t>(kClusterSize, e - it)) {
        col_clusters[static_cast<std::size_t>(c)].push_back(static_cast<int>(cluster_col.size()));
        cluster_col.push_back(c);
        for (int l = 0; l < kClusterSize; ++l) atom.push_back(it + l < e ? (it + l)->second : -1);
      }
    }
    if (part == 0) nown = static_cast<int>(cluster_col.size());
  }
  nclusters = static_cast<int>(cluster_col.size());

  // Bounding boxes, and each cluster's range of ids and of its atoms' special partners' ids.
  const std::size_t nc = static_cast<std::size_t>(nclusters);
  std::vector<double> blo(3 * nc, 1e300), bhi(3 * nc, -1e300);
  std::vector<std::int64_t> idlo(nc, INT64_MAX), idhi(nc, -1), splo(nc, INT64_MAX), sphi(nc, -1);
  for (std::size_t c = 0; c < nc; ++c)
    for (int l = 0; l < kClusterSize; ++l) {
      const int i = atom[c * kClusterSize + static_cast<std::size_t>(l)];
      if (i < 0) continue;
      for (int d = 0; d < 3; ++d) {
        blo[3 * c + static_cast<std::size_t>(d)] = std::min(blo[3 * c + static_cast<std::size_t>(d)], pos[d][i]);
        bhi[3 * c + static_cast<std::size_t>(d)] = std::max(bhi[3 * c + static_cast<std::size_t>(d)], pos[d][i]);
      }
      idlo[c] = std::min(idlo[c], a.id[i]);
      idhi[c] = std::max(idhi[c], a.id[i]);
      for (int k = 0; k < a.nspecial; ++k) {
        const std::int64_t v = a.special[k][i];
        if (v < 0) break;
        splo[c] = std::min(splo[c], v >> 2);
        sphi[c] = std::max(sphi[c], v >> 2);
      }
    }

  // Pairs: each owned cluster against the clusters of the columns within reach.
  const double r2 = reach * reach;
  const int rx = static_cast<int>(std::ceil(reach / colw[0])), ry = static_cast<int>(std::ceil(reach / colw[1]));
  std::vector<int> cols;  // the candidate columns of one column (each once, however few columns)
  pair_start.assign(static_cast<std::size_t>(nown) + 1, 0);
  pair_j.clear();
  pair_special.clear();
  special.clear();
  std::vector<char> seen(static_cast<std::size_t>(ncols), 0);
  for (int ci = 0; ci < nown; ++ci) {
    const std::size_t i3 = 3 * static_cast<std::size_t>(ci);
    const int cx = cluster_col[static_cast<std::size_t>(ci)] % ncol[0], cy = cluster_col[static_cast<std::size_t>(ci)] / ncol[0];
    cols.clear();
    for (int dy = -ry; dy <= ry; ++dy)
      for (int dx = -rx; dx <= rx; ++dx) {
        const int c = (cx + dx % ncol[0] + ncol[0]) % ncol[0] + ncol[0] * ((cy + dy % ncol[1] + ncol[1]) % ncol[1]);
        if (!seen[static_cast<std::size_t>(c)]) {
          seen[static_cast<std::size_t>(c)] = 1;
          cols.push_back(c);
        }
      }
    for (int c : cols) seen[static_cast<std::size_t>(c)] = 0;
    for (int c : cols)
      for (int cj : col_clusters[static_cast<std::size_t>(c)]) {
        if (cj < nown && cj < ci) continue;  // owned pairs from the smaller cluster
        const std::size_t j3 = 3 * static_cast<std::size_t>(cj);
        double g2 = 0;
        for (int d = 0; d < 3; ++d) {
          const double g = periodic_gap(blo[i3 + static_cast<std::size_t>(d)], bhi[i3 + static_cast<std::size_t>(d)],
                                        blo[j3 + static_cast<std::size_t>(d)], bhi[j3 + static_cast<std::size_t>(d)], L[d]);
          g2 += g * g;
        }
        if (g2 >= r2) continue;
        pair_j.push_back(cj);
        // Special levels, where the partners' ids can be among the cluster's special partners.
        int sp = -1;
        if (a.nspecial > 0 && splo[static_cast<std::size_t>(ci)] <= idhi[static_cast<std::size_t>(cj)] &&
            idlo[static_cast<std::size_t>(cj)] <= sphi[static_cast<std::size_t>(ci)]) {
          std::uint16_t w[kClusterSize] = {};
          bool any = false;
          for (int il = 0; il < kClusterSize; ++il) {
            const int i = atom[static_cast<std::size_t>(ci) * kClusterSize + static_cast<std::size_t>(il)];
            if (i < 0) continue;
            for (int k = 0; k < a.nspecial; ++k) {
              const std::int64_t v = a.special[k][i];
              if (v < 0) break;
              for (int jl = 0; jl < kClusterSize; ++jl) {
                const int j = atom[static_cast<std::size_t>(cj) * kClusterSize + static_cast<std::size_t>(jl)];
                if (j >= 0 && a.id[j] == (v >> 2)) {
                  w[il] = static_cast<std::uint16_t>(w[il] | ((v & 3) << (2 * jl)));
                  any = true;
                }
              }
            }
          }
          if (any) {
            sp = static_cast<int>(special.size() / kClusterSize);
            special.insert(special.end(), w, w + kClusterSize);
          }
        }
        pair_special.push_back(sp);
      }
    pair_start[static_cast<std::size_t>(ci) + 1] = static_cast<std::int64_t>(pair_j.size());
  }
}

}  // namespace cumulus::md
