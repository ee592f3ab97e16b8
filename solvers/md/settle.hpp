#pragma once
// Rigid three-site water by SETTLE (constraints.hpp says which molecules are SETTLE's and has the
// order of a step): positions in closed form (settle_kernels.hpp), velocities by the exact solution
// of the three velocity constraints.
//
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
#include "solvers/md/constraints.hpp"
#include "solvers/md/settle_kernels.hpp"

namespace cumulus::md {

class Settle : public ConstraintSolver {
 public:
  Settle(const Exec& ex, const std::vector<SettleGeometry>& geometry, std::int64_t molecules);
  Settle(const Exec&& ex, const std::vector<SettleGeometry>& geometry, std::int64_t molecules) = delete;
  std::string describe() const override;
  // 3 per molecule.
  double removed_dof() const override { return 3.0 * static_cast<double>(molecules_); }
  // A molecule with no rigid placement names its oxygen.
  void positions(const Comm& comm, MdAtoms& atoms, const Atoms& a, const TopologyView& t, double dt, std::int64_t step,
                 bool with_velocities, std::int64_t* deferred = nullptr) override;
  [[noreturn]] void fail(std::int64_t bad, std::int64_t step) const override;
  void velocities(MdAtoms& atoms, const Atoms& a, const TopologyView& t, double dt) override;
  // The constraint forces' virial at this instant (md.cpp's constraint_virial calls these two): the
  // impulses the velocity constraints would give, the velocities left as they are. `centripetal`
  // = dt/2 with the (rigid) velocities: the part that holds rotating bonds at their lengths; 0
  // after a virtual half kick of dt/2: the part that cancels the forces along the bonds. Each
  // atom's share accumulates (`accumulate` false: starts from zero); sum_virial adds the shares
  // over every atom of every rank (collective; exact).
  void virial_part(MdAtoms& atoms, const Atoms& a, const TopologyView& t, double dt, double centripetal, bool accumulate) override;
  double sum_virial(const Comm& comm, const MdAtoms& atoms) const override;

 private:
  const Exec* ex_;
  std::vector<SettleGeometry> host_;
  Buffer<SettleGeometry> geometry_;
  std::int64_t molecules_;
  Buffer<double> d_[3], virial_;
};

}  // namespace cumulus::md
