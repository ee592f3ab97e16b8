#pragma once
// Molecular dynamics (solver = "md"): atoms of one or several types (pair styles behind a registry,
// solvers/md/force.hpp; Lennard-Jones 12-6 today) on an fcc,
// bcc or sc lattice in a periodic orthorhombic box, a cell-list-built Verlet list with a skin
// (rebuilt when an atom has moved half the skin), velocity Verlet (NVE), Langevin or Nose-Hoover
// chains (NVT), LAMMPS-style thermo, and a
// spatial decomposition over MPI ranks with bit-identical trajectories at any rank count.
// docs/md.md says what is there and what is not yet.
#include "solvers/model.hpp"

namespace cumulus::md {

void register_solver(SolverRegistry& r);
void declare_keys(Schema& s);
void check(const Config& cfg, int nranks);
std::unique_ptr<Model> create(const Config& cfg, const Context& ctx);

}  // namespace cumulus::md
