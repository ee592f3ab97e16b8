#pragma once
// Rigid three-site water by SETTLE (md.constrain_bonds, md.constrain_angles): which molecules are
// rigid, the checks of the job against the data file, and the constraint step of velocity Verlet.
//
// A molecule is rigid when an angle of a constrained angle type joins two bonds of constrained bond
// types from its vertex (as LAMMPS's `fix shake b 1 a 1` makes a three-atom cluster): the oxygen
// is the vertex, the hydrogens the ends, the O-H distance the bonds' r0 and the H-H distance from
// the angle's theta0 (the data file's Bond and Angle Coeffs; their K is not used, and the
// constrained bonds and angles are left out of md.bond_style and md.angle_style, as LAMMPS leaves
// them out). The step (md.cpp):
//   1. the positions at the start of the step are kept (reference_position, to ghosts too);
//   2. kick and drift as usual, then the ghosts' new positions;
//   3. SETTLE: every rigid molecule back to its geometry, by displacements along its old bonds'
//      plane; v += displacement / dt; the ghosts' positions again;
//   4. forces, the second half kick, the ghosts' velocities;
//   5. the velocity constraints (RATTLE's second half, solved exactly): no relative velocity along
//      any of a molecule's three bonds.
// The pressure's constraint virial is the constraint forces' at the instant of the thermo row,
// computed from the positions, velocities and forces (not from a step's impulses, which estimate it
// to first order in dt only: 19 atm apart from LAMMPS's SHAKE estimate at 2 fs on 100 SPC/E
// molecules, 9 at 1 fs); so it needs no history, and a restarted run's pressure has the same bits.
// Every atom computes its whole molecule from the same numbers (bonded.hpp: partners among the
// ghosts), so trajectories have the same bits at any rank count. Three degrees of freedom per
// molecule are removed from the temperature's count.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/comm.hpp"
#include "core/config.hpp"
#include "core/exec.hpp"
#include "core/memory.hpp"
#include "solvers/md/atoms.hpp"
#include "solvers/md/data_file.hpp"
#include "solvers/md/settle_kernels.hpp"

namespace cumulus::md {

void declare_settle_keys(Schema& s);
bool uses_settle(const Config& cfg);
// The rigid molecules of the data file, for set-up: per data-file atom (k indexing d.id) its
// molecule's ids (oxygen first; zero-based) or -1s, and its geometry's index; the geometries per
// constrained angle type; the molecule count. The constrained bond and angle types (1-based flags)
// for the bonded styles to leave out.
struct RigidWater {
  std::vector<std::array<std::int64_t, 3>> atoms;
  std::vector<int> type;
  std::vector<SettleGeometry> geometry;
  std::int64_t molecules = 0;
  std::vector<bool> bond_type_constrained, angle_type_constrained;
};
// Checks (cfg.fail, exit 2, naming the data file and the key): constrained types that exist and
// have coefficients; every constrained angle a molecule (two constrained bonds from its vertex, of
// one length, to atoms of one mass); theta0 strictly between 0 and 180 degrees; every constrained
// bond in one such molecule (SHAKE/RATTLE for other constrained bonds is not built yet); no atom
// in two. Returns the molecules (empty without constraints).
RigidWater rigid_water(const Config& cfg, const DataFile* d);

class Settle {
 public:
  Settle(const Exec& ex, const std::vector<SettleGeometry>& geometry, std::int64_t molecules);
  Settle(const Exec&& ex, const std::vector<SettleGeometry>& geometry, std::int64_t molecules) = delete;
  std::string describe() const;
  // Degrees of freedom the constraints remove: 3 per molecule.
  double removed_dof() const { return 3.0 * static_cast<double>(molecules_); }
  // Step 1: the positions at the start of the step (owned atoms and ghosts).
  void keep_reference(MdAtoms& atoms) const;
  // Step 3 on the owned atoms (collective): with_velocities, v += displacement / dt. A molecule
  // with no rigid placement (the step too long for the motion) is an Error, exit 3, naming its
  // oxygen and the step.
  void positions(const Comm& comm, MdAtoms& atoms, const Atoms& a, const TopologyView& t, double dt, std::int64_t step,
                 bool with_velocities);
  // Step 5 on the owned atoms (the ghosts' velocities current).
  void velocities(MdAtoms& atoms, const Atoms& a, const TopologyView& t, double dt);
  // The constraint forces' virial at this instant (md.cpp's constraint_virial calls these two): the
  // impulses the velocity constraints would give, the velocities left as they are. `centripetal`
  // = dt/2 with the (rigid) velocities: the part that holds rotating bonds at their lengths; 0
  // after a virtual half kick of dt/2: the part that cancels the forces along the bonds. Each
  // atom's share accumulates (`accumulate` false: starts from zero); sum_virial adds the shares
  // over every atom of every rank (collective; exact).
  void virial_part(MdAtoms& atoms, const Atoms& a, const TopologyView& t, double dt, double centripetal, bool accumulate);
  double sum_virial(const Comm& comm, const MdAtoms& atoms) const;

 private:
  const Exec* ex_;
  std::vector<SettleGeometry> host_;
  Buffer<SettleGeometry> geometry_;
  std::int64_t molecules_;
  Buffer<double> d_[3], virial_;
};

}  // namespace cumulus::md
