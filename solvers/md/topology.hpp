#pragma once
// Special pairs (exclusions) of the md solver, from a data file's bond topology: for each atom, its
// 1-2 partners (bonded), 1-3 (two bonds away) and 1-4 (three bonds away), as LAMMPS's
// special_bonds finds them from the bond graph. The pair styles scale a special pair's terms by
// md.special_lj / md.special_coul (one factor per level; default 0 0 0: excluded), and a Coulomb
// pair with k-space takes the k-space's correction for what it leaves out (pair_lj_cut_coul_long).
#include <array>
#include <cstdint>
#include <vector>

#include "solvers/md/data_file.hpp"

namespace cumulus::md {

// special[k] (k indexing d.id) lists atom k's partners, each as (partner id - 1) * 4 + level
// (level 1: 1-2, 2: 1-3, 3: 1-4; the closest level when there are several paths), ascending.
// Partners are zero-based ids, as the md solver numbers atoms.
std::vector<std::vector<std::int64_t>> special_partners(const DataFile& d);

// The bonded terms each atom takes part in (k indexing d.id), in the file's order: its bonds as
// (partner id, type) and its angles as (the three ids in the file's order, the vertex second;
// type); ids and types zero-based. Every atom of a term holds it (LAMMPS's newton_bond off), so
// that the rank owning an atom computes all of its bonded forces from the same numbers at any rank
// count. `bonds`, `angles`: whether to collect each (a style that uses them is set).
struct AtomBonded {
  std::vector<std::pair<std::int64_t, int>> bonds;
  std::vector<std::pair<std::array<std::int64_t, 3>, int>> angles;
};
// `skip_bond_types`, `skip_angle_types` (indexed by 1-based type; may be empty): types left out,
// the constrained ones (constraints.hpp).
std::vector<AtomBonded> bonded_terms(const DataFile& d, bool bonds, bool angles, const std::vector<bool>& skip_bond_types = {},
                                     const std::vector<bool>& skip_angle_types = {});

}  // namespace cumulus::md
