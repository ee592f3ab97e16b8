#pragma once
// The LAMMPS data file reader of the md solver (md.data_file).
#include <cstdint>
#include <string>
#include <vector>

namespace cumulus::md {

// A LAMMPS data file, atom_style atomic, orthogonal box: header counts and box, Masses, Atoms
// (id type x y z [ix iy iz]), optional Velocities (id vx vy vz). Errors name the file and line.
struct DataFile {
  std::int64_t natoms = 0;
  int ntypes = 0;
  double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
  std::vector<double> mass;  // per type (1-based types: mass[t - 1])
  std::vector<std::int64_t> id;
  std::vector<int> type;
  std::vector<double> x[3], v[3];
  std::vector<int> image[3];
  bool has_velocities = false;
};

// Reads `path` (with header_only, the header's counts and box alone). Throws InputError naming the
// file and line.
DataFile read_data_file(const std::string& path, bool header_only);

}  // namespace cumulus::md
