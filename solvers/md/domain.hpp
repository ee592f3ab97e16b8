#pragma once
// The md solver's spatial decomposition: which rank owns an atom, migration of atoms to their
// owners, ghost copies of the atoms within reach of other ranks' blocks, and the ghosts' positions
// refreshed every step. The messages themselves are mesh/particle_exchange's; this file decides
// what goes where.
#include <array>
#include <cstdint>
#include <vector>

#include "core/comm.hpp"
#include "core/exec.hpp"
#include "core/memory.hpp"
#include "mesh/decomposition.hpp"
#include "mesh/particle_exchange.hpp"
#include "solvers/md/atoms.hpp"

namespace cumulus::md {

class AtomDomain {
 public:
  // Ownership cells of `decomp` over the box; ghosts are the atoms within `reach` (cutoff + skin)
  // of another rank's block.
  AtomDomain(const Comm& comm, const Exec& ex, const CartesianDecomposition& decomp, const double box[3], double reach);

  int owner_of(const double p[3]) const { return geometry_.owner_of(p); }
  // The exchange's peers and messages (for tests and diagnostics).
  const ParticleExchange& exchange() const { return exchange_; }
  // Owned atoms (host mirror) that left this rank's block go to their new owners: in the time loop
  // through the neighbour ranks only (`step` names the step in the error raised for an atom that
  // went further than that); with `any_rank` (after a restart, when a rank holds an arbitrary run of
  // the checkpoint's atoms) to any rank, through one collective over all of them.
  void migrate(MdAtoms& atoms, std::int64_t step, bool any_rank = false);
  // Ghosts (host mirror) from the owners, and the plan of forward_positions().
  void exchange_ghosts(MdAtoms& atoms);
  // Every step between rebuilds: the ghosts' new positions from their owners (backend arrays).
  // `host_arrays`: the positions live in host memory and the list was built on the host, so the
  // sent atoms are packed by a loop; otherwise by kernels on the backend.
  void forward_positions(MdAtoms& atoms, bool host_arrays);
  // The same for the velocities (registered to ghosts with constraints: constraints.hpp).
  void forward_velocities(MdAtoms& atoms, bool host_arrays);
  // Newton's third law across ranks: each ghost's row of `width` integers (host memory, after the
  // owned atoms' rows, fixed::kRow) added into its owner's row on the owner's rank. Integers: the
  // sums do not depend on the order the rows arrive in.
  void reverse_add(std::int64_t* rows, int width, const MdAtoms& atoms);
  // Whether the backend needs the index of the atoms sent (kernels pack them): after exchange_ghosts.
  void upload_send_index(const MdAtoms& atoms);

 private:
  void forward(MdAtoms& atoms, bool host_arrays, int field);
  Comm comm_;
  const Exec* ex_;
  int np_;
  double reach_;
  ParticleDomain geometry_;
  ParticleExchange exchange_;  // with the ranks whose blocks are within reach: at most 26
  std::vector<std::vector<int>> send_lists_;  // per peer: the owned atoms it holds as ghosts
  std::vector<int> recv_counts_;              // per peer: the ghosts it sends
  std::vector<std::vector<std::byte>> records_;
  Buffer<int> send_index_;
  Buffer<double> fwd_dev_;
  std::vector<double> fwd_send_, fwd_recv_, rev_send_, rev_recv_;
};

}  // namespace cumulus::md
