#pragma once
// Molecular dynamics (solver = "md"): atoms of one or several types (force terms behind a registry,
// solvers/md/force.hpp; Lennard-Jones 12-6 today) from an fcc, bcc or sc lattice or a LAMMPS data
// file in a periodic orthorhombic box, a Verlet list with a skin, velocity Verlet (NVE), Langevin
// or Nose-Hoover chains (NVT), LAMMPS-style thermo, and a spatial decomposition over MPI ranks
// (neighbour ranks only) with bit-identical trajectories at any rank count. One concept per file:
// docs/md.md has the table.
#include "solvers/model.hpp"

namespace cumulus::md {

void register_solver(SolverRegistry& r);
void declare_keys(Schema& s);
void check(const Config& cfg, int nranks);
std::unique_ptr<Model> create(const Config& cfg, const Context& ctx);

}  // namespace cumulus::md
