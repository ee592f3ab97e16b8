#pragma once
// Lattice set-up of the md solver: fcc, bcc or sc cells filling the box, and each atom's type.
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "solvers/md/setup.hpp"

namespace cumulus::md {

// Basis of the conventional cubic cell, in lattice units.
std::vector<std::array<double, 3>> basis(const std::string& lattice);
double lattice_constant(const Setup& s);
// Atoms in the lattice (basis x cells).
std::int64_t lattice_atom_count(const Setup& s);
// Calls add(id, type, position) for every lattice atom, id = lattice index (cells x fastest, then
// the basis), types from lattice_types().
void lattice_atoms(const Setup& s, const std::function<void(std::int64_t id, int type, const double p[3])>& add);
// Exactly round(fraction N) atoms of each type (the last type takes the rest), given to the atoms
// in the order of a hash of (seed, id): a random arrangement that does not depend on the rank
// count. Empty for one type.
std::vector<int> lattice_types(const Setup& s, std::int64_t n);

}  // namespace cumulus::md
