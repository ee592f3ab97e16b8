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
#include "solvers/md/atoms.hpp"

namespace cumulus::md {

class AtomDomain {
 public:
  // Ownership cells of `decomp` over the box; ghosts are the atoms within `reach` (cutoff + skin)
  // of another rank's block.
  AtomDomain(const Comm& comm, const Exec& ex, const CartesianDecomposition& decomp, const double box[3], double reach);

  int owner_of(const double p[3]) const;
  // Owned atoms (host mirror) that left this rank's block go to their new owners. `step` names
  // the step in the error raised for an atom that went further than a neighbour rank.
  void migrate(MdAtoms& atoms, std::int64_t step);
  // Ghosts (host mirror) from the owners, and the plan of forward_positions().
  void exchange_ghosts(MdAtoms& atoms);
  // Every step between rebuilds: the ghosts' new positions from their owners (backend arrays).
  // `host_arrays`: the positions live in host memory and the list was built on the host, so the
  // sent atoms are packed by a loop; otherwise by kernels on the backend.
  void forward_positions(MdAtoms& atoms, bool host_arrays);
  // Whether the backend needs the index of the atoms sent (kernels pack them): after exchange_ghosts.
  void upload_send_index(const MdAtoms& atoms);

 private:
  double distance2_to_block(const double p[3], int r) const;
  int bin_index(double x, int d) const;

  Comm comm_;
  const Exec* ex_;
  const CartesianDecomposition* decomp_;
  int me_, np_;
  double box_[3], binw_[3], reach_;
  int nbins_[3];
  std::vector<int> owner_;
  std::vector<std::vector<int>> send_lists_;
  std::vector<int> recv_counts_;
  Buffer<int> send_index_;
  Buffer<double> fwd_dev_;
  std::vector<double> fwd_send_, fwd_recv_;
  std::vector<int> fwd_scount_, fwd_rcount_, fwd_sdisp_, fwd_rdisp_;
};

}  // namespace cumulus::md
