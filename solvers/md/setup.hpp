#pragma once
// The md solver's job: its keys, their checks, and the set-up read from them (the box, the
// decomposition into ownership cells).
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "mesh/decomposition.hpp"
#include "solvers/md/data_file.hpp"
#include "solvers/md/units.hpp"

namespace cumulus::md {

// Everything the model reads from the job, once.
struct Setup {
  std::string lattice;
  double density = 0, temperature = 0, cutoff = 0, skin = 0, dt = 0;
  int ntypes = 1;
  std::vector<double> masses;     // per type (a data file's Masses replace them)
  std::vector<double> fractions;  // lattice: share of each type
  std::string pair_style;
  std::array<int, 3> cells{1, 1, 1};
  std::int64_t seed = 0;
  std::string thermostat;
  double damping = 1, t_bath = 0, nhc_damping = 0.5;
  int nhc_length = 3;
  std::string data_file;
  std::int64_t rdf_every = 0, rdf_bins = 100, neighbor_every = 1;
  bool neighbor_check = true;
  std::string neighbor_build = "auto";
  double rdf_range = 0;
  Units units;  // md.units: lj or real (units.hpp)
  double constraint_dof = 0;  // degrees of freedom the constraints remove (set by the model: settle.hpp)
};

void declare_keys(Schema& s);
// Relations between keys (cfg.fail: exit 2), for a run on `nranks` ranks.
void check(const Config& cfg, int nranks);
// md.data_file resolved against the job file's directory (empty: none).
std::string data_file_path(const Config& cfg);
// `file_types`: the atom types a data file's header declares (0: no data file). md.types left at
// its default takes them.
Setup read_setup(const Config& cfg, int file_types);
// The box lengths: the lattice's, or the data file's.
std::array<double, 3> box_lengths(const Setup& s, const DataFile* data);
// The charges of a data file, summed in file order (the same numbers on every rank).
struct ChargeTotals;
ChargeTotals charge_totals(const DataFile& d);
// The data file's Pair Coeffs (lj/cut's form: "type epsilon sigma [cutoff]") as the job's per-type
// LJ pairs, [md.pairs.data_type<N>] with types [N, N], for the LJ pair styles. The job's own keys
// win, as LAMMPS's pair_coeff commands in an input script override a data file's: a type whose
// [md.pairs] table the job gives keeps it, and a job that sets md.epsilon or md.sigma (pair_coeff
// * *) takes none of the file's. Unlike pairs then mix (md.mixing) as before.
Config with_data_pair_coeffs(const Config& cfg, const DataFile& d);
// The real-space Coulomb cutoff: md.coul_cutoff, or md.cutoff where it is 0.
double coul_cutoff(const Config& cfg);
// Ownership cells and their split over ranks (setup.cpp says why they are finer than the list's bins).
CartesianDecomposition make_decomposition(const Setup& s, const std::array<double, 3>& L, int nranks);

}  // namespace cumulus::md
