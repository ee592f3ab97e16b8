#pragma once
// Molecular dynamics (solver = "md"), first part: Lennard-Jones 12-6 atoms of one type on an fcc,
// bcc or sc lattice in a periodic orthorhombic box, a cell-list-built Verlet list with a skin
// (rebuilt when an atom has moved half the skin), velocity Verlet (NVE), LAMMPS-style thermo, and a
// spatial decomposition over MPI ranks with bit-identical trajectories at any rank count.
// docs/md.md says what is there and what is not yet.
#include "solvers/model.hpp"

namespace cumulus::md {

void register_solver(SolverRegistry& r);
void declare_keys(Schema& s);
void check(const Config& cfg, int nranks);
std::unique_ptr<Model> create(const Config& cfg, const Context& ctx);

}  // namespace cumulus::md
