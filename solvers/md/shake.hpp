#pragma once
// SHAKE/RATTLE for every constrained cluster that is not SETTLE's (constraints.hpp says which, and
// has the order of a step; shake_kernels.hpp the arithmetic): X-H bonds, groups such as CH3 (a
// central atom and up to three partners), and three-atom clusters with their angle held whose
// shape SETTLE does not take (unequal arms or end masses). Positions to md.shake_tolerance within
// md.shake_iterations Newton iterations; velocities exactly. The constraint virial is the
// constraint forces' at the instant, as SETTLE's (settle.hpp). One degree of freedom per
// constrained distance is removed from the temperature's count.
#include <cstdint>
#include <string>
#include <vector>

#include "core/memory.hpp"
#include "solvers/md/constraints.hpp"
#include "solvers/md/shake_kernels.hpp"

namespace cumulus::md {

class Shake : public ConstraintSolver {
 public:
  Shake(const Exec& ex, const ShakeClusters& clusters, double tolerance, int max_iterations);
  Shake(const Exec&& ex, const ShakeClusters& clusters, double tolerance, int max_iterations) = delete;
  std::string describe() const override;
  double removed_dof() const override { return static_cast<double>(constraints_); }
  // A cluster that does not converge names its first atom (lowest id).
  void positions(const Comm& comm, MdAtoms& atoms, const Atoms& a, const TopologyView& t, double dt, std::int64_t step,
                 bool with_velocities, std::int64_t* deferred = nullptr) override;
  [[noreturn]] void fail(std::int64_t bad, std::int64_t step) const override;
  void velocities(MdAtoms& atoms, const Atoms& a, const TopologyView& t, double dt) override;
  void virial_part(MdAtoms& atoms, const Atoms& a, const TopologyView& t, double dt, double centripetal, bool accumulate) override;
  double sum_virial(const Comm& comm, const MdAtoms& atoms) const override;

 private:
  const Exec* ex_;
  std::vector<ShakeGeometry> host_;
  Buffer<ShakeGeometry> geometry_;
  std::int64_t clusters_, constraints_;
  double tolerance_;
  int max_iterations_;
  Buffer<double> d_[3], virial_;
};

}  // namespace cumulus::md
