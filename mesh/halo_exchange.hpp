#pragma once
// Halo exchange for fields on a CartesianDecomposition: faces, edges and corners, ghost width 1-12,
// any number of components, periodic or not per axis. The plan (neighbours, boxes, buffers) is
// built once; each exchange packs on the backend, posts nonblocking MPI, and is finished later so
// that interior work overlaps the transfer:
//   auto x = halo.begin(f); update_interior(); x.finish(); update_rim();
// Device data goes to MPI directly when the library is CUDA-aware, through pinned host buffers
// otherwise (Debian's Open MPI is not).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/comm.hpp"
#include "core/memory.hpp"
#include "mesh/decomposition.hpp"
#include "mesh/field.hpp"
#include "mesh/halo_kernels.hpp"

namespace cumulus {

class HaloExchange;

// One exchange in flight. finish() completes it (also called by the destructor if forgotten).
template <class T>
class [[nodiscard]] HaloTransfer {
 public:
  HaloTransfer(HaloExchange* h, Field<T>* f) : halo_(h), field_(f) {}
  HaloTransfer(HaloTransfer&& o) noexcept : halo_(o.halo_), field_(o.field_) { o.halo_ = nullptr; }
  HaloTransfer(const HaloTransfer&) = delete;
  HaloTransfer& operator=(const HaloTransfer&) = delete;
  HaloTransfer& operator=(HaloTransfer&&) = delete;
  ~HaloTransfer();
  void finish();

 private:
  HaloExchange* halo_;
  Field<T>* field_;
};

class HaloExchange {
 public:
  // Ghost layers per axis at most (PME's charge grid needs its spline order plus the atoms' drift).
  static constexpr int kMaxGhost = 12;
  // For fields whose interior is `decomp.box_of(comm.rank())`, with `ghost` layers and `ncomp`
  // components of `elem_bytes` each (the largest element type exchanged with this plan).
  // `force_staging` sends through the host mirror buffers even when it is not needed, so that the
  // staging path (the one device halos take with a non-CUDA-aware MPI) is tested on any machine.
  //
  // `needs`, when given, says which components (bit c of the mask) the ghost cells in direction
  // `dir` (each of -1, 0, 1 per axis, seen from the receiving rank) are read for; only those are
  // sent. A lattice Boltzmann step reads from a ghost cell only the populations that stream
  // out of it into the interior: 5 of D3Q19's 19 across a face, 1 across an edge.
  using ComponentMask = std::function<std::uint32_t(const Index3& dir)>;
  HaloExchange(const CartesianDecomposition& decomp, const Comm& comm, const Exec& exec, const Index3& ghost,
               int ncomp, std::size_t elem_bytes, const char* label = "halo", bool force_staging = false,
               const ComponentMask& needs = {});
  ~HaloExchange();
  HaloExchange(const HaloExchange&) = delete;
  HaloExchange& operator=(const HaloExchange&) = delete;

  template <class T>
  HaloTransfer<T> begin(Field<T>& f);
  template <class T>
  void finish(Field<T>& f);
  template <class T>
  void exchange(Field<T>& f) {
    begin(f).finish();
  }

  // The reverse, accumulating exchange: every ghost cell's value is added into the interior cell
  // it mirrors, on whichever rank owns that cell (its own, across a periodic axis that is not
  // split). For quantities deposited onto a grid from particles near a rank's edge (PME's charge
  // grid): deposit into interior and ghost cells, then accumulate. Ghost values are left as they
  // were. Every ghost cell is added exactly once; the adds into a cell come in a fixed order (this
  // rank's periodic images by direction, then the neighbours' by direction), so with integer
  // values (a fixed-point grid) the result is the same bits at any rank count and decomposition,
  // and with doubles the same for a given decomposition. Integer (std::int64_t) and double fields.
  template <class T>
  void accumulate_begin(Field<T>& f);
  template <class T>
  void accumulate_finish(Field<T>& f);
  template <class T>
  void accumulate(Field<T>& f) {
    accumulate_begin(f);
    accumulate_finish(f);
  }

  bool staged() const { return staged_; }  // device data through pinned host buffers
  // Whether accumulate() adds this rank's own periodic images in one gather launch
  // (SelfAddGather: the default on CUDA) or one loop a box (the default on the host, where the
  // loops vectorise and a launch costs nothing). The same bits either way; tests set it.
  void set_self_add_gather(bool on) { gather_on_ = on; }
  // Neighbour links (faces, edges, corners); a link to this rank itself (a periodic axis that
  // is not split) is a direct copy, not a message.
  int message_count() const { return static_cast<int>(links_.size()) + self_.count + (wrap_x_ ? 2 : 0); }
  // Whether an exchange sends anything through MPI (false on one rank, and along unsplit axes).
  bool has_mpi_neighbors() const { return !links_.empty(); }
  std::size_t bytes_per_exchange() const;  // sent by this rank

  // One neighbour link: what goes where (public so that the pack kernels can read it).
  struct Link {
    int direction;  // 0..26, (dx+1) + 3 (dy+1) + 9 (dz+1)
    int rank;
    Box send_box, recv_box;
    std::uint32_t send_mask, recv_mask;  // components sent and received
    std::size_t send_offset, recv_offset;  // in elements, into the send and receive buffers
  };

 private:
  void check_field(const Box& interior, const Index3& ghost, int ncomp, std::size_t elem_bytes) const;
  void post(std::size_t elem_bytes);
  void wait();
  void post_reverse(std::size_t elem_bytes);

  Comm comm_;
  Exec exec_;
  Box interior_;
  Index3 ghost_;
  int ncomp_;
  std::size_t elem_bytes_;
  std::string label_pack_, label_unpack_, label_wait_, label_self_;
  bool staged_ = false;
  bool in_flight_ = false;
  std::vector<Link> links_;  // to other ranks, through MPI
  SelfCopies self_;       // same-rank copies (a periodic axis not split), done in one launch
  bool wrap_x_ = false;  // the +-x faces are self links, done by one fused kernel
  // Every self link as (ghost box, shift to the interior cells it mirrors, mask), x faces included,
  // in direction order: the accumulating exchange adds them one box at a time.
  struct SelfAdd {
    Box box;
    Index3 shift;
    std::uint32_t mask;
  };
  std::vector<SelfAdd> self_adds_;
  SelfAddGather gather_;  // the same adds as one gather (made from self_adds_)
  bool gather_on_ = false;
  bool reverse_in_flight_ = false;
  std::uint32_t wrap_lo_mask_ = 0, wrap_hi_mask_ = 0;
  std::size_t total_send_ = 0, total_recv_ = 0;
  Buffer<unsigned char> send_, recv_;             // in the backend's memory
  void* send_host_ = nullptr;                     // pinned mirrors when staged
  void* recv_host_ = nullptr;
  std::vector<MPI_Request> requests_;
};

// One step's sweep over a rank's box, overlapped with the halo exchange of the field the step
// reads: begin the exchange, update the inner cells (whose stencil reaches no ghost), finish, then
// the rim. It overlaps only on CUDA and only where the exchange has MPI links. On the host nothing
// runs while MPI moves the halo, and the thin rim slabs cost a cache miss per cell; with no MPI
// link (one rank, or unsplit periodic axes) there is no transfer to hide, and the rim's six thin
// launches would be pure overhead. Then the exchange finishes first and one sweep covers the box.
// Each cell's arithmetic is the same either way, so both paths give the same bits. Heat and LBM
// build one per model (the split is computed once).
class HaloOverlap {
 public:
  HaloOverlap() = default;
  // `box`: the cells the step updates (the field's interior); `reach`: how far its stencil reads
  // along each axis (the ghost width; 0 on an unused axis). `split_on_host` splits on the host too,
  // so that the overlapped path is tested on any machine (as HaloExchange's force_staging).
  HaloOverlap(const HaloExchange& halo, const Box& box, const Index3& reach, bool split_on_host = false);

  // `update(b)` launches the step's kernel on box b (called once or up to seven times);
  // `after_finish()` runs once the ghosts are in and before any cell that reads them is updated
  // (LBM fills the ghosts of its walls there).
  template <class T, class Update, class AfterFinish>
  void sweep(const Exec& ex, HaloExchange& halo, Field<T>& field, Update&& update, AfterFinish&& after_finish) const {
    auto transfer = halo.begin(field);
    if (splits(ex)) {
      update(inner_);  // overlaps the halo transfer
      transfer.finish();
      after_finish();
      for (const Box& b : rim_) update(b);
    } else {
      transfer.finish();
      after_finish();
      update(box_);
    }
  }
  template <class T, class Update>
  void sweep(const Exec& ex, HaloExchange& halo, Field<T>& field, Update&& update) const {
    sweep(ex, halo, field, update, [] {});
  }

  // Whether sweep() on `ex` updates the inner box during the exchange and the rim after it.
  bool splits(const Exec& ex) const { return overlap_ && (ex.is_cuda() || split_on_host_); }
  const Box& inner() const { return inner_; }
  const std::vector<Box>& rim() const { return rim_; }

 private:
  bool overlap_ = false;  // the exchange has MPI links
  bool split_on_host_ = false;
  Box box_, inner_;       // inner_ and rim_: only when overlap_
  std::vector<Box> rim_;  // the rest of box_, in at most six slabs
};

}  // namespace cumulus
