// SHAKE/RATTLE's constraint step (constraints.hpp has the order of a step; shake_kernels.* the
// arithmetic; the displacements and velocity changes are applied by settle_kernels' passes).
#include "solvers/md/shake.hpp"

#include <algorithm>
#include <limits>

#include "core/error.hpp"
#include "core/strings.hpp"
#include "solvers/md/settle_kernels.hpp"

namespace cumulus::md {

Shake::Shake(const Exec& ex, const ShakeClusters& clusters, double tolerance, int max_iterations)
    : ex_(&ex), host_(clusters.geometry), geometry_(Buffer<ShakeGeometry>::copy_of(ex, clusters.geometry, 1)),
      clusters_(clusters.clusters), constraints_(clusters.constraints), tolerance_(tolerance), max_iterations_(max_iterations) {}

std::string Shake::describe() const {
  std::string out = strprintf("; SHAKE/RATTLE: %lld clusters, %lld constrained distances, tolerance %g (", static_cast<long long>(clusters_),
                              static_cast<long long>(constraints_), tolerance_);
  for (std::size_t k = 0; k < host_.size(); ++k) {
    const ShakeGeometry& g = host_[k];
    out += strprintf("%s%d atoms:", k ? "; " : "", g.natoms);
    for (int e = 0; e < g.nconstraints; ++e) out += strprintf(" %d-%d %g", g.p[e] + 1, g.q[e] + 1, g.length[e]);
  }
  return out + ")";
}

void Shake::fail(std::int64_t bad, std::int64_t step) const {
  throw Error(strprintf("md: SHAKE did not converge for the cluster of atom %lld (its data-file id) at step %lld within "
                        "md.shake_iterations = %d to md.shake_tolerance = %g: its atoms moved too far in one step (the time "
                        "step is too long, or the run blew up)",
                        static_cast<long long>(bad + 1), static_cast<long long>(step), max_iterations_, tolerance_),
              ExitCode::blow_up);
}

void Shake::positions(const Comm& comm, MdAtoms& atoms, const Atoms& a, const TopologyView& t, double dt, std::int64_t step,
                      bool with_velocities, std::int64_t* deferred) {
  const Exec& ex = *ex_;
  const int n = atoms.nown();
  for (auto& b : d_) fit(ex, b, static_cast<std::size_t>(std::max(n, 1)));
  const std::int64_t none = std::numeric_limits<std::int64_t>::max();
  std::int64_t bad = none;
  if (n > 0 || deferred) {  // deferred with no atoms here: "none" stored on the stream (an empty reduction)
    const ParticleStore& st = atoms.store;
    bad = CUMULUS_KERNEL(ex, shake_kernels, shake_displacements)(
        ex, a, t, geometry_.data(), st.device<double>(atoms.reference_position, 0), st.device<double>(atoms.reference_position, 1),
        st.device<double>(atoms.reference_position, 2), tolerance_, max_iterations_, d_[0].data(), d_[1].data(), d_[2].data(),
        deferred);
  }
  if (!deferred) {
    bad = comm.min(bad);
    if (bad != none) fail(bad, step);
  }
  if (n > 0)
    CUMULUS_KERNEL(ex, settle_kernels, settle_apply_positions)(ex, a, d_[0].data(), d_[1].data(), d_[2].data(),
                                                               with_velocities ? 1 / dt : 0.0);
}

void Shake::velocities(MdAtoms& atoms, const Atoms& a, const TopologyView& t, double dt) {
  if (atoms.nown() == 0) return;
  virial_part(atoms, a, t, dt, 0.0, false);
  const Exec& ex = *ex_;
  CUMULUS_KERNEL(ex, settle_kernels, settle_apply_velocities)(ex, a, d_[0].data(), d_[1].data(), d_[2].data());
}

void Shake::virial_part(MdAtoms& atoms, const Atoms& a, const TopologyView& t, double dt, double centripetal, bool accumulate) {
  const Exec& ex = *ex_;
  const int n = atoms.nown();
  if (n == 0) return;
  for (auto& b : d_) fit(ex, b, static_cast<std::size_t>(n));
  fit(ex, virial_, static_cast<std::size_t>(n));
  CUMULUS_KERNEL(ex, shake_kernels, shake_velocity_changes)(ex, a, t, geometry_.data(), d_[0].data(), d_[1].data(), d_[2].data(),
                                                            virial_.data(), 2 / dt, centripetal, accumulate);
}

double Shake::sum_virial(const Comm& comm, const MdAtoms& atoms) const {
  return sum_constraint_virial(*ex_, comm, virial_.data(), atoms.nown());
}

}  // namespace cumulus::md
