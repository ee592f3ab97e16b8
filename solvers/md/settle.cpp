// SETTLE's constraint step (constraints.hpp has the order of a step; settle_kernels.* the
// arithmetic).
#include "solvers/md/settle.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "core/constants.hpp"
#include "core/error.hpp"
#include "core/strings.hpp"
#include "solvers/md/setup.hpp"

namespace cumulus::md {

Settle::Settle(const Exec& ex, const std::vector<SettleGeometry>& geometry, std::int64_t molecules)
    : ex_(&ex), host_(geometry), geometry_(Buffer<SettleGeometry>::copy_of(ex, geometry, 1)), molecules_(molecules) {}

std::string Settle::describe() const {
  std::string out = strprintf("; SETTLE: %lld rigid molecules", static_cast<long long>(molecules_));
  for (const SettleGeometry& g : host_) out += strprintf(" (O-H %g, H-H %g)", g.r_oh, g.r_hh);
  return out;
}

void Settle::fail(std::int64_t bad, std::int64_t step) const {
  throw Error(strprintf("md: SETTLE found no rigid placement for the molecule of oxygen %lld (its data-file id) at step %lld: "
                        "its atoms moved too far in one step (the time step is too long, or the run blew up)",
                        static_cast<long long>(bad + 1), static_cast<long long>(step)),
              ExitCode::blow_up);
}

void Settle::positions(const Comm& comm, MdAtoms& atoms, const Atoms& a, const TopologyView& t, double dt, std::int64_t step,
                       bool with_velocities, std::int64_t* deferred) {
  const Exec& ex = *ex_;
  const int n = atoms.nown();
  for (auto& b : d_) fit(ex, b, static_cast<std::size_t>(std::max(n, 1)));
  const std::int64_t none = std::numeric_limits<std::int64_t>::max();
  std::int64_t bad = none;
  if (n > 0 || deferred) {  // deferred with no atoms here: "none" stored on the stream (an empty reduction)
    const ParticleStore& st = atoms.store;
    bad = CUMULUS_KERNEL(ex, settle_kernels, settle_displacements)(
        ex, a, t, geometry_.data(), st.device<double>(atoms.reference_position, 0), st.device<double>(atoms.reference_position, 1),
        st.device<double>(atoms.reference_position, 2), d_[0].data(), d_[1].data(), d_[2].data(), deferred);
  }
  if (!deferred) {
    bad = comm.min(bad);
    if (bad != none) fail(bad, step);
  }
  if (n > 0)
    CUMULUS_KERNEL(ex, settle_kernels, settle_apply_positions)(ex, a, d_[0].data(), d_[1].data(), d_[2].data(),
                                                               with_velocities ? 1 / dt : 0.0);
}

// The velocity changes are virial_part's; here they are applied.
void Settle::velocities(MdAtoms& atoms, const Atoms& a, const TopologyView& t, double dt) {
  if (atoms.nown() == 0) return;
  virial_part(atoms, a, t, dt, 0.0, false);
  const Exec& ex = *ex_;
  CUMULUS_KERNEL(ex, settle_kernels, settle_apply_velocities)(ex, a, d_[0].data(), d_[1].data(), d_[2].data());
}

void Settle::virial_part(MdAtoms& atoms, const Atoms& a, const TopologyView& t, double dt, double centripetal, bool accumulate) {
  const Exec& ex = *ex_;
  const int n = atoms.nown();
  if (n == 0) return;
  for (auto& b : d_) fit(ex, b, static_cast<std::size_t>(n));
  fit(ex, virial_, static_cast<std::size_t>(n));
  CUMULUS_KERNEL(ex, settle_kernels, settle_velocity_changes)(ex, a, t, d_[0].data(), d_[1].data(), d_[2].data(),
                                                              virial_.data(), 2 / dt, centripetal, accumulate);
}

double Settle::sum_virial(const Comm& comm, const MdAtoms& atoms) const {
  return sum_constraint_virial(*ex_, comm, virial_.data(), atoms.nown());
}

}  // namespace cumulus::md
