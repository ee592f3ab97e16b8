#pragma once
// The lattice Boltzmann solver (solver = "lbm"): D2Q9, D3Q19 and D3Q27; BGK or TRT collision with
// an optional Smagorinsky model and Guo body forcing; fp64, fp32 or fp16 population storage;
// bounce-back walls, moving walls, velocity inlets and pressure outlets on any face; sphere,
// cylinder, box and STL obstacles with momentum-exchange forces. Job files speak physical units;
// the solver picks lattice units and prints the mapping. docs/lbm.md has the equations and keys.
#include "solvers/model.hpp"

namespace cumulus::lbm {

void register_solver(SolverRegistry& r);
void declare_keys(Schema& s);
void check(const Config& cfg, int nranks);
std::unique_ptr<Model> create(const Config& cfg, const Context& ctx);

}  // namespace cumulus::lbm
