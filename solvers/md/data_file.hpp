#pragma once
// The LAMMPS data file reader of the md solver (md.data_file).
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace cumulus::md {

// One bonded term of the topology: its type (1-based) and its atoms' ids (file ids), as many as the
// section has (2 for Bonds, 3 for Angles, 4 for Dihedrals and Impropers; the rest zero).
struct Bonded {
  int type = 0;
  std::array<std::int64_t, 4> atom{0, 0, 0, 0};
};

// A LAMMPS data file, orthogonal box, atom_style atomic (id type x y z), charge (id type q x y z)
// or full (id molecule type q x y z), each with optional image flags ix iy iz: header counts and
// box, Masses, Atoms, optional Velocities (id vx vy vz), the topology (Bonds, Angles, Dihedrals,
// Impropers) and the coefficient sections (Pair, Bond, Angle Coeffs: the numbers of each type's
// line, kept as given). Errors name the file and line.
struct DataFile {
  std::int64_t natoms = 0;
  int ntypes = 0;
  double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
  std::string atom_style = "atomic";  // atomic, charge or full
  std::vector<double> mass;  // per type (1-based types: mass[t - 1])
  std::vector<std::int64_t> id;
  std::vector<int> type;
  std::vector<double> q;                 // charge per atom (0 for atomic)
  std::vector<std::int64_t> molecule;    // molecule id per atom (0 unless full)
  std::vector<double> x[3], v[3];
  std::vector<int> image[3];
  bool has_velocities = false;
  bool has_image_flags = false;  // some Atoms line gave image flags
  // Topology: header counts and types, and the sections' entries.
  std::int64_t nbonds = 0, nangles = 0, ndihedrals = 0, nimpropers = 0;
  int nbond_types = 0, nangle_types = 0, ndihedral_types = 0, nimproper_types = 0;
  std::vector<Bonded> bonds, angles, dihedrals, impropers;
  // Coefficient sections, per type (empty when the file has none).
  std::vector<std::vector<double>> pair_coeffs, bond_coeffs, angle_coeffs;
};

// Reads `path` (with header_only, the header's counts and box alone). Throws InputError naming the
// file and line.
DataFile read_data_file(const std::string& path, bool header_only);

}  // namespace cumulus::md
