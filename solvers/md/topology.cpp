// Special pairs from the bond graph: a breadth-first search three bonds deep from every atom.
#include "solvers/md/topology.hpp"

#include <algorithm>
#include <map>

namespace cumulus::md {

std::vector<std::vector<std::int64_t>> special_partners(const DataFile& d) {
  const std::size_t n = d.id.size();
  std::vector<std::vector<std::int64_t>> out(n);
  if (d.bonds.empty()) return out;
  std::map<std::int64_t, std::size_t> index;  // file id -> position in d's arrays
  for (std::size_t k = 0; k < n; ++k) index[d.id[k]] = k;
  std::vector<std::vector<std::size_t>> bonded(n);
  for (const Bonded& b : d.bonds) {
    const std::size_t i = index.at(b.atom[0]), j = index.at(b.atom[1]);
    bonded[i].push_back(j);
    bonded[j].push_back(i);
  }
  std::vector<int> level(n, 0);  // scratch: 0 unvisited, else the level found
  for (std::size_t k = 0; k < n; ++k) {
    if (bonded[k].empty()) continue;
    std::vector<std::size_t> frontier{k}, reached;
    level[k] = -1;  // the atom itself
    for (int depth = 1; depth <= 3; ++depth) {
      std::vector<std::size_t> next;
      for (std::size_t a : frontier)
        for (std::size_t b : bonded[a])
          if (level[b] == 0) {
            level[b] = depth;
            next.push_back(b);
            reached.push_back(b);
          }
      frontier.swap(next);
    }
    std::vector<std::int64_t>& s = out[k];
    for (std::size_t b : reached) s.push_back((d.id[b] - 1) * 4 + level[b]);
    std::sort(s.begin(), s.end());
    for (std::size_t b : reached) level[b] = 0;
    level[k] = 0;
  }
  return out;
}

std::vector<AtomBonded> bonded_terms(const DataFile& d, bool bonds, bool angles, const std::vector<bool>& skip_bond_types,
                                     const std::vector<bool>& skip_angle_types) {
  auto skipped = [](const std::vector<bool>& skip, int type) {
    return static_cast<std::size_t>(type) < skip.size() && skip[static_cast<std::size_t>(type)];
  };
  const std::size_t n = d.id.size();
  std::vector<AtomBonded> out(n);
  if ((!bonds || d.bonds.empty()) && (!angles || d.angles.empty())) return out;
  std::map<std::int64_t, std::size_t> index;  // file id -> position in d's arrays
  for (std::size_t k = 0; k < n; ++k) index[d.id[k]] = k;
  if (bonds)
    for (const Bonded& b : d.bonds) {
      if (skipped(skip_bond_types, b.type)) continue;
      const std::size_t i = index.at(b.atom[0]), j = index.at(b.atom[1]);
      out[i].bonds.push_back({b.atom[1] - 1, b.type - 1});
      out[j].bonds.push_back({b.atom[0] - 1, b.type - 1});
    }
  if (angles)
    for (const Bonded& a : d.angles) {
      if (skipped(skip_angle_types, a.type)) continue;
      const std::array<std::int64_t, 3> ids{a.atom[0] - 1, a.atom[1] - 1, a.atom[2] - 1};
      for (int m = 0; m < 3; ++m) out[index.at(a.atom[static_cast<std::size_t>(m)])].angles.push_back({ids, a.type - 1});
    }
  return out;
}

}  // namespace cumulus::md
