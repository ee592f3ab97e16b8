#pragma once
// The shallow-water dynamical core on the cubed sphere (solver = "shallow_water"): the rotating
// shallow-water equations with topography, flux-form finite volumes for the depth (mass conserved
// to round-off by an exact global sum, each panel keeping its own panel-edge fluxes), 3D Cartesian
// velocity in vector-invariant form, sixth-order centred differences across duo-grid ghost cells
// (fourth order overall in case 2), classical RK4 and a del^4 hyperviscosity. Williamson et al. (1992)
// cases 1, 2, 5, 6 and Galewsky et al. (2004). docs/shallow-water.md has the equations and keys.
#include "solvers/model.hpp"

namespace cumulus::sw {

void register_solver(SolverRegistry& r);
void declare_keys(Schema& s);
void check(const Config& cfg, int nranks);
std::unique_ptr<Model> create(const Config& cfg, const Context& ctx);

}  // namespace cumulus::sw
