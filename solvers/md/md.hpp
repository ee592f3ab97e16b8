#pragma once
// Molecular dynamics (solver = "md"), first part: Lennard-Jones 12-6 atoms of one type on an fcc,
// bcc or sc lattice in a periodic orthorhombic box, a cell-list-built Verlet list with a skin
// (rebuilt when an atom has moved half the skin), velocity Verlet (NVE), and LAMMPS-style thermo.
// One rank so far; docs/md.md says what is there and what is not.
#include "solvers/model.hpp"

namespace cumulus::md {

void register_solver(SolverRegistry& r);
void declare_keys(Schema& s);
void check(const Config& cfg, int nranks);
std::unique_ptr<Model> create(const Config& cfg, const Context& ctx);

}  // namespace cumulus::md
