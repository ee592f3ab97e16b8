#pragma once
// The Verlet list of the md solver behind one interface, with two builders: on the host
// (neighbor_host.cpp: cell bins and a vectorised scan, a half list at one thread or for
// order-free force sums) and by kernels on
// the backend (neighbor_backend.cpp: radix-sorted bins, count, prefix sum, fill; the default on
// CUDA). Both list, for each owned atom, its partners within cutoff + skin among the owned atoms
// and ghosts in ascending global id, so forces sum in the same order whoever built the list:
// the same trajectory bits either way.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/exec.hpp"
#include "core/memory.hpp"
#include "solvers/md/atoms.hpp"
#include "solvers/md/md_kernels.hpp"

namespace cumulus::md {

class NeighborList {
 public:
  virtual ~NeighborList() = default;
  // "built on the host", ...: for the log.
  virtual std::string describe() const = 0;
  // Builds the list of the owned atoms over owned + ghost atoms, pairs within `reach` (cutoff +
  // skin) in a periodic box. The host builder reads the host mirror; the kernel builder the
  // backend's arrays (and, when it reorders, moves the owned atoms into bin order there).
  virtual void build(MdAtoms& atoms, const double box[3], double reach) = 0;
  // Whether the atoms stay on the backend between builds (no host copy needed to rebuild).
  virtual bool resident() const { return false; }

  // The list (backend memory), as md_kernels.hpp's Atoms describes it.
  bool half() const { return half_; }
  int nslots() const { return nslots_; }
  const std::int64_t* start() const { return start_.data(); }
  const int* neighbors() const { return nbr_.data(); }
  const int* order() const { return order_.data(); }
  // The rows' distance shells (md_kernels.hpp's ListShells), where the host builder made a half
  // list whose partners need not be in id order; else end is null.
  ListShells shells() const {
    ListShells s;
    if (shell_end_.empty()) return s;
    s.end = shell_end_.data();
    s.x0 = shell_x0_.data();
    s.nlocal = static_cast<int>(shell_x0_.size() / 3);
    s.reach = shell_reach_;
    for (int d = 0; d < 3; ++d) s.box[d] = shell_box_[d];
    return s;
  }
  // Full-list entries (each pair once per owned atom of it) on this rank; builds so far.
  double pairs() const { return pairs_; }
  long builds() const { return builds_; }

  // Whether the host builder may make a half list at more than one thread: the force term takes
  // one (ForceTerm::threaded_half: order-free sums, or the one-thread order kept).
  void allow_threaded_half(bool allow) { threaded_half_ = allow; }
  // Whether the force term takes a pair in either of its atoms' slots (ForceTerm::either_slot:
  // order-free sums and antisymmetric pair terms): the host builder's half list, where no slot is
  // a ghost's, then holds the pairs of owned atoms by a spatial half stencil (half the
  // candidates) rather than in the slot of the smaller id. Partners in id order where id_order().
  void allow_either_slot(bool allow) { either_slot_ = allow; }
  // Whether a half list at several ranks gives ghosts slots (the default): a ghost's slot holds
  // the pairs whose ghost has the smaller id, which its owner's rank also computes (for its own
  // atom). Without them (the host builder; a force term that hands its ghosts' shares back to
  // their owners: ForceTerm::fills_fixed_rows) each pair across ranks is listed on one rank only,
  // the one that owns its smaller-id atom.
  void set_ghost_slots(bool keep) { ghost_slots_ = keep; }
  bool ghost_slots() const { return ghost_slots_; }
  // Whether each atom's partners are put in ascending global id (the default). The builders without
  // it leave them in the order their bins hand them over (deterministic, but not the same for
  // both): for force terms whose sums do not depend on the order (ForceTerm::needs_id_order).
  void set_id_order(bool on) { id_order_ = on; }
  bool id_order() const { return id_order_; }
  // A host copy of the list for host-side computes (the RDF), kept when asked for.
  void keep_host_copy(bool keep) { keep_host_ = keep; }
  const std::vector<std::int64_t>& host_start() const { return host_start_; }
  const std::vector<int>& host_list() const { return host_list_; }
  const std::vector<int>& host_order() const { return host_order_; }  // empty for a full list

 protected:
  explicit NeighborList(const Exec& ex) : ex_(&ex) {}
  const Exec* ex_;
  bool half_ = false, keep_host_ = false, threaded_half_ = false, ghost_slots_ = true, id_order_ = true;
  bool either_slot_ = false;
  int nslots_ = 0;
  double pairs_ = 0;
  long builds_ = 0;
  Buffer<std::int64_t> start_;
  Buffer<int> nbr_, order_;
  std::vector<std::int64_t> host_start_;
  std::vector<int> shell_end_;      // per slot, ListShells::kCount ends (host)
  std::vector<double> shell_x0_;    // the local atoms' positions at the build, 3 an atom
  double shell_reach_ = 0, shell_box_[3] = {0, 0, 0};
  std::vector<int> host_list_, host_order_;
};

std::unique_ptr<NeighborList> make_host_neighbor_list(const Exec& ex);
// `reorder`: the atoms are put in bin order at every build and stay on the backend between builds
// (one rank: no migration, no ghosts).
std::unique_ptr<NeighborList> make_kernel_neighbor_list(const Exec& ex, bool reorder);

// order[r] = the index of the r-th smallest of `ids` (distinct, non-negative), by radix sort.
void sort_by_id(const std::vector<std::int64_t>& ids, std::vector<int>& order);
void sort_by_id(const std::int64_t* ids, std::size_t n, std::vector<int>& order);

}  // namespace cumulus::md
