#pragma once
// Constraints of the md solver (md.constrain_bonds, md.constrain_angles): which atoms are held at
// fixed distances and by which solver, the keys and checks against the data file, and the
// interface every constraint solver offers velocity Verlet's step (md.cpp).
//
// Every bond of a constrained bond type is held at its r0, and every angle of a constrained angle
// type at its theta0 (its two bonds from the vertex must be constrained: the angle then holds the
// distance between its end atoms), as LAMMPS's `fix shake b .. a ..` takes them. The atoms joined
// by constrained bonds make clusters. A cluster that is a rigid three-site molecule with two equal
// arms and end atoms of one mass (water) goes to SETTLE (settle.hpp: closed form) unless
// md.settle = false; every other cluster to SHAKE/RATTLE (shake.hpp): up to 4 atoms (a central
// atom and up to three partners, as LAMMPS takes them, or any other shape that small) and up to 3
// constrained distances. The constrained bonds and angles are left out of md.bond_style and
// md.angle_style. Each constrained distance removes one degree of freedom from the temperature's
// count.
//
// The step (md.cpp), the same for every solver:
//   1. the positions at the start of the step are kept (keep_reference: reference_position, to
//      ghosts too);
//   2. kick and drift as usual, then the ghosts' new positions;
//   3. positions(): every cluster back to its lengths by displacements along its old bonds (the
//      constraint forces' directions); v += displacement / dt; the ghosts' positions again;
//   4. forces, the second half kick, the ghosts' velocities;
//   5. velocities(): no relative velocity along any constrained distance (RATTLE's second half).
// The pressure's constraint virial is the constraint forces' at the instant of the thermo row (the
// two virial_part calls of md.cpp's constraint_virial; settle.hpp says why not a step's).
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/comm.hpp"
#include "core/config.hpp"
#include "core/exec.hpp"
#include "solvers/md/atoms.hpp"
#include "solvers/md/data_file.hpp"
#include "solvers/md/settle_kernels.hpp"
#include "solvers/md/shake_kernels.hpp"

namespace cumulus::md {

void declare_constraint_keys(Schema& s);
bool uses_constraints(const Config& cfg);

// SETTLE's molecules, per data-file atom (k indexing d.id): its molecule's ids (the vertex first;
// zero-based) or -1s, and its geometry's index; the geometries; the molecule count.
struct RigidWater {
  std::vector<std::array<std::int64_t, 3>> atoms;
  std::vector<int> type;
  std::vector<SettleGeometry> geometry;
  std::int64_t molecules = 0;
};
// SHAKE's clusters, per data-file atom: its cluster's ids in ascending order (zero-based, -1 for
// unused places) or -1s, and its geometry's index; the geometries; the cluster count and the
// constrained distances in all.
struct ShakeClusters {
  std::vector<std::array<std::int64_t, kShakeAtoms>> atoms;
  std::vector<int> type;
  std::vector<ShakeGeometry> geometry;
  std::int64_t clusters = 0, constraints = 0;
};
struct ConstraintTopology {
  RigidWater water;
  ShakeClusters shake;
  // The constrained bond and angle types (1-based flags) for the bonded styles to leave out.
  std::vector<bool> bond_type_constrained, angle_type_constrained;
};
// Checks (cfg.fail, exit 2, naming the data file and the key): constrained types that exist and
// have coefficients (r0 > 0; 0 < theta0 < 180); every constrained angle's two bonds constrained;
// every cluster within SHAKE's size (4 atoms, 3 distances). Returns the clusters (empty without
// constraints).
ConstraintTopology constraint_topology(const Config& cfg, const DataFile* d);

class ConstraintSolver {
 public:
  virtual ~ConstraintSolver() = default;
  virtual std::string describe() const = 0;
  // Degrees of freedom the constraints remove: one per constrained distance.
  virtual double removed_dof() const = 0;
  // Step 3 on the owned atoms (collective): with_velocities, v += displacement / dt. A cluster the
  // solver cannot place (the step too long for the motion) is an Error, exit 3, naming its first
  // atom and the step (fail()). With `deferred` (ex's memory; md/step_checks.hpp) that check is
  // not waited for: the first failing id (or int64 max) is stored there, and the caller calls fail()
  // when it reads one; the positions are moved either way, a cluster that failed not at all.
  virtual void positions(const Comm& comm, MdAtoms& atoms, const Atoms& a, const TopologyView& t, double dt, std::int64_t step,
                         bool with_velocities, std::int64_t* deferred = nullptr) = 0;
  // Throws positions()'s Error for the cluster of data-file index `bad` (0-based) at `step`.
  [[noreturn]] virtual void fail(std::int64_t bad, std::int64_t step) const = 0;
  // Step 5 on the owned atoms (the ghosts' velocities current).
  virtual void velocities(MdAtoms& atoms, const Atoms& a, const TopologyView& t, double dt) = 0;
  // The constraint forces' virial at this instant (settle.hpp's Settle::virial_part has the two
  // parts): each atom's share accumulates (`accumulate` false: starts from zero); sum_virial adds
  // the shares over every atom of every rank (collective; exact).
  virtual void virial_part(MdAtoms& atoms, const Atoms& a, const TopologyView& t, double dt, double centripetal,
                           bool accumulate) = 0;
  virtual double sum_virial(const Comm& comm, const MdAtoms& atoms) const = 0;
};

// Step 1: the positions at the start of the step (owned atoms; the ghosts' follow with the
// positions, reference_position going to ghosts), of the local atoms from `first` on (the time
// step's first half kick keeps the owned atoms' in its own pass: md_kernels.hpp's KeptPositions).
void keep_reference(const Exec& ex, MdAtoms& atoms, int first = 0);

// The exact sum of n per-atom virial shares over every rank (collective): the same bits at any
// rank count.
double sum_constraint_virial(const Exec& ex, const Comm& comm, const double* v, int n);

}  // namespace cumulus::md
