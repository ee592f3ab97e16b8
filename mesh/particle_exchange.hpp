#pragma once
// Particles on a CartesianDecomposition: which rank owns a position, which ranks a rank must talk
// to, and the neighbour-only messages that move particles between them (docs/particles.md).
//
// - ParticleDomain: geometry only (no MPI). A periodic orthorhombic box [0, L) is cut into the
//   equal bins of decomp.global_cells(); rank r owns the particles in the bins of decomp.box_of(r).
// - ParticleExchange: point-to-point messages with a fixed list of peer ranks (never all ranks):
//   records of unknown count (migration, ghost selection at a rebuild), then the fixed pattern of
//   the last ghost selection reused every step, forward (owners -> ghosts) and reverse (ghosts ->
//   owners), each in begin/finish halves like HaloExchange.
// - GlobalIdMap: global particle id -> local index, rebuilt at each rebuild.
// This layer knows nothing of forces: records are bytes or doubles packed by the caller.
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/comm.hpp"
#include "mesh/decomposition.hpp"

namespace cumulus {

class ParticleDomain {
 public:
  // `box`: the box lengths; `rank`: the rank this object answers for (peers_within).
  ParticleDomain(const CartesianDecomposition& decomp, std::array<double, 3> box, int rank);

  const CartesianDecomposition& decomposition() const { return decomp_; }
  const std::array<double, 3>& box() const { return box_; }
  const std::array<double, 3>& bin_width() const { return binw_; }
  int rank() const { return rank_; }

  // The bin along axis d holding coordinate x; coordinates outside [0, L) go to the end bins.
  int bin_index(double x, int d) const;
  // The rank owning position p (the rank whose block holds p's bin).
  int owner_of(const double p[3]) const;
  // Squared distance from p to rank r's block through the periodic boundaries (the nearest of the
  // images -L, 0, +L along each axis). Ghost selection: p goes to r when this is below reach^2.
  double distance2_to_block(const double p[3], int r) const;
  // Ranks other than this one with a position in this rank's block (coordinates in [0, L]) whose
  // distance2_to_block to them is below reach^2, in ascending order. Exact, not padded: the same
  // floating-point arithmetic as distance2_to_block at the block's extreme coordinates, so a ghost
  // selection that loops over these peers finds what a loop over all ranks would. With blocks at
  // least `reach` wide these are the adjacent blocks: at most 26.
  std::vector<int> peers_within(double reach) const;

 private:
  // The smallest and largest coordinate along axis d that bin_index puts in bins [lo, hi).
  std::array<double, 2> coordinate_range(int d, int lo, int hi) const;

  CartesianDecomposition decomp_;
  std::array<double, 3> box_, binw_;
  std::array<int, 3> nbins_;
  // Along each axis, bin -> the process-grid coordinate of the block holding it.
  std::array<std::vector<int>, 3> coord_of_bin_;
  int rank_;
};

// Point-to-point messages with a fixed, ascending list of peer ranks. Nonblocking: begin posts
// MPI_Irecv/MPI_Isend, finish waits. One operation at a time per object. Buffers are members,
// reused: once sizes have settled nothing is allocated. The caller's send data is copied in
// begin, so it may be reused at once.
class ParticleExchange {
 public:
  // `peers`: distinct ranks of `comm` other than this one (ascending order is imposed here).
  ParticleExchange(const Comm& comm, std::vector<int> peers);
  ~ParticleExchange();
  ParticleExchange(const ParticleExchange&) = delete;
  ParticleExchange& operator=(const ParticleExchange&) = delete;

  const std::vector<int>& peers() const { return peers_; }
  int peer_index(int rank) const;  // -1 when `rank` is not a peer

  // Migration's guard: the slot in peers() of `owner`, the new owner of particle `id` that has
  // left this rank's block. Throws Error naming the particle, both ranks and `step` when `owner`
  // is not a peer: it moved further than one exchange carries, and dropping it would lose it.
  // Local (no communication): in cumulus an Error raised on one rank aborts the run.
  int migration_slot(int owner, std::int64_t id, std::int64_t step) const;

  // 1) Records of counts unknown to the receivers. send[p]: the records for peers()[p], `width`
  //    bytes each. The counts travel first (one message to every peer, also when zero), then the
  //    non-empty payloads. finish returns the arrivals concatenated in ascending peer order and
  //    the records from each peer in *recv_counts; the returned buffer stays valid until the next
  //    exchange_begin.
  void exchange_begin(const std::vector<std::vector<std::byte>>& send, int width);
  const std::vector<std::byte>& exchange_finish(std::vector<int>* recv_counts);

  // 2) The fixed pattern of the last ghost selection, in records per peer: this rank sends
  //    send_counts[p] records to peers()[p] and receives recv_counts[p] from it.
  void plan(std::vector<int> send_counts, std::vector<int> recv_counts);
  // Forward: `ncomp` doubles per record, packed by the caller in peer order (sum(send_counts)
  // records); finish fills `recv` with sum(recv_counts) records in peer order.
  void forward_begin(const double* send, int ncomp);
  void forward_finish(double* recv);
  // Reverse: the opposite direction with the same plan. `send` holds sum(recv_counts) records
  // (one per ghost, in the order forward delivered them); finish fills `recv` with
  // sum(send_counts) records in the order this rank packed its forward send: record k is what
  // the ghost of forward record k held, so an owner can add them in a fixed order.
  void reverse_begin(const double* send, int ncomp);
  void reverse_finish(double* recv);

  int planned_sends() const { return plan_send_total_; }     // records, sum(send_counts)
  int planned_receives() const { return plan_recv_total_; }  // records, sum(recv_counts)

  // Messages and bytes this rank has sent: each MPI_Isend is one message; empty payloads are not
  // sent, the counts of (1) always are.
  struct Traffic {
    std::int64_t messages = 0, bytes = 0;
  };
  const Traffic& traffic() const { return traffic_; }
  void reset_traffic() { traffic_ = {}; }

 private:
  enum class Phase { idle, exchange, forward, reverse };
  void isend(const void* data, std::size_t bytes, int peer, int tag);
  void irecv(void* data, std::size_t bytes, int peer, int tag);
  void wait_all(const char* what);
  void start(Phase p);
  void finish(Phase p);
  void post_fixed(const double* send, const std::vector<int>& send_counts, const std::vector<int>& recv_counts,
                  int ncomp, int tag);

  Comm comm_;
  int me_;
  std::vector<int> peers_;
  Phase phase_ = Phase::idle;
  Traffic traffic_;
  std::vector<MPI_Request> requests_;  // all posted and not yet waited for
  // (1): counts and payloads.
  int width_ = 0;
  std::vector<int> xsend_counts_, xrecv_counts_;
  std::vector<std::byte> xsend_, xrecv_;
  // (2): the plan and its buffers.
  std::vector<int> plan_send_, plan_recv_;
  int plan_send_total_ = 0, plan_recv_total_ = 0;
  int ncomp_ = 0;
  std::vector<double> fsend_, frecv_;
};

// Global particle id -> local index (owned and ghosts), rebuilt at each rebuild. An open-addressing
// hash table (linear probing, at most half full): about 1.5 probes a successful lookup on average
// against a sorted vector's log2(n) dependent loads, and a build in O(n) without a sort. Lookups serve bonded terms
// and other by-id references, not the pair loop.
// Records to any rank, counts unknown to the receivers: one MPI_Alltoall of counts and one
// MPI_Alltoallv over the whole communicator. Not for the time loop (its cost grows with the rank
// count): for the one migration after a restart, when each rank has read an arbitrary run of the
// checkpoint's atoms whose owners may be anywhere. send[r]: the records for rank r (its own entry
// is ignored), `width` bytes each; returns the arrivals concatenated in ascending sender rank.
std::vector<std::byte> exchange_with_all(const Comm& comm, const std::vector<std::vector<std::byte>>& send, int width);

class GlobalIdMap {
 public:
  // Maps ids[i] -> i. An id given more than once maps to its lowest index (owned atoms come
  // before ghosts, so to the owned copy).
  void build(const std::int64_t* ids, int n);
  int find(std::int64_t id) const;  // -1 when absent
  int size() const { return n_; }   // distinct ids

 private:
  struct Slot {
    std::int64_t id;
    int index;  // -1: empty
  };
  std::size_t home(std::int64_t id) const;
  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  int n_ = 0;
};

}  // namespace cumulus
