// The halo exchange plan and its MPI side (host code; the pack/unpack kernels are in
// halo_kernels.cpp).
#include "mesh/halo_exchange.hpp"
#include "mesh/halo_kernels.hpp"

#include <cstdint>
#include <exception>

#include "core/strings.hpp"
#include "core/timers.hpp"

namespace cumulus {

namespace {
int direction_index(const Index3& d) { return (d[0] + 1) + 3 * (d[1] + 1) + 9 * (d[2] + 1); }
int popcount(std::uint32_t m) { return __builtin_popcount(m); }
}  // namespace

HaloExchange::HaloExchange(const CartesianDecomposition& decomp, const Comm& comm, const Exec& exec,
                           const Index3& ghost, int ncomp, std::size_t elem_bytes, const char* label,
                           bool force_staging, const ComponentMask& needs)
    : comm_(comm), exec_(exec), interior_(decomp.box_of(comm.rank())), ghost_(ghost), ncomp_(ncomp),
      elem_bytes_(elem_bytes), label_pack_(std::string(label) + ".pack"),
      label_unpack_(std::string(label) + ".unpack"), label_wait_(std::string(label) + ".wait"),
      label_self_(std::string(label) + ".self") {
  if (decomp.nranks() != comm.size()) throw Error("HaloExchange: decomposition and communicator sizes differ");
  for (int d = 0; d < 3; ++d) {
    if (ghost[d] < 0 || ghost[d] > kMaxGhost)
      throw Error(strprintf("HaloExchange: ghost width must be 0 to %d", kMaxGhost));
    if (d >= decomp.ndim() && ghost[d] != 0) throw Error("HaloExchange: ghost layers along an unused axis");
    if (ghost[d] > 0 && interior_.size(d) < ghost[d])
      throw InputError(strprintf("rank %d owns %d cells along axis %d, fewer than the %d ghost layers: use fewer ranks",
                                 comm.rank(), interior_.size(d), d, ghost[d]));
  }
  if (needs && ncomp > 32) throw Error("HaloExchange: component masks cover at most 32 components");
  self_.start[0] = 0;
  const std::uint32_t all = ncomp >= 32 ? 0xffffffffu : ((1u << ncomp) - 1u);
  auto mask_for = [&](const Index3& dir) { return needs ? (needs(dir) & all) : all; };
  const int me = comm.rank();
  for (int dz = -1; dz <= 1; ++dz)
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx) {
        const Index3 dir{dx, dy, dz};
        if (dx == 0 && dy == 0 && dz == 0) continue;
        bool skip = false;
        for (int d = 0; d < 3; ++d)
          if (dir[d] != 0 && ghost[d] == 0) skip = true;
        if (skip) continue;
        const int nb = decomp.neighbor(me, dir);
        if (nb < 0) continue;
        if (nb == me) {
          const std::uint32_t mask = mask_for(dir);
          SelfAdd a{interior_, {0, 0, 0}, mask};
          for (int d = 0; d < 3; ++d) {
            if (dir[d] < 0) {
              a.box.lo[d] = interior_.lo[d] - ghost[d];
              a.box.hi[d] = interior_.lo[d];
            } else if (dir[d] > 0) {
              a.box.lo[d] = interior_.hi[d];
              a.box.hi[d] = interior_.hi[d] + ghost[d];
            }
            a.shift[d] = -dir[d] * interior_.size(d);
          }
          if (mask != 0) self_adds_.push_back(a);
        }
        if (nb == me && dy == 0 && dz == 0) {  // both x faces wrap onto this rank: one fused copy
          wrap_x_ = true;
          wrap_lo_mask_ = mask_for({-1, 0, 0});
          wrap_hi_mask_ = mask_for({1, 0, 0});
          continue;
        }
        if (nb == me) {  // periodic wrap onto this rank: copy, no message
          const std::uint32_t mask = mask_for(dir);
          if (mask == 0) continue;
          const int n = self_.count++;
          Box& b = self_.box[n];
          b = interior_;
          for (int d = 0; d < 3; ++d) {
            if (dir[d] < 0) {
              b.lo[d] = interior_.lo[d] - ghost[d];
              b.hi[d] = interior_.lo[d];
            } else if (dir[d] > 0) {
              b.lo[d] = interior_.hi[d];
              b.hi[d] = interior_.hi[d] + ghost[d];
            }
            self_.shift[n][d] = -dir[d] * interior_.size(d);
          }
          self_.mask[n] = mask;
          self_.start[n + 1] = self_.start[n] + b.volume();
          continue;
        }
        Link l;
        l.send_mask = mask_for({-dir[0], -dir[1], -dir[2]});  // the neighbour's ghosts lie opposite
        l.recv_mask = mask_for(dir);
        if (l.send_mask == 0 && l.recv_mask == 0) continue;
        l.direction = direction_index(dir);
        l.rank = nb;
        l.send_box = l.recv_box = interior_;
        for (int d = 0; d < 3; ++d) {
          if (dir[d] < 0) {
            l.send_box.hi[d] = interior_.lo[d] + ghost[d];
            l.recv_box.lo[d] = interior_.lo[d] - ghost[d];
            l.recv_box.hi[d] = interior_.lo[d];
          } else if (dir[d] > 0) {
            l.send_box.lo[d] = interior_.hi[d] - ghost[d];
            l.recv_box.lo[d] = interior_.hi[d];
            l.recv_box.hi[d] = interior_.hi[d] + ghost[d];
          }
        }
        l.send_offset = total_send_;
        l.recv_offset = total_recv_;
        total_send_ += static_cast<std::size_t>(l.send_box.volume()) * popcount(l.send_mask);
        total_recv_ += static_cast<std::size_t>(l.recv_box.volume()) * popcount(l.recv_mask);
        links_.push_back(l);
      }
  // The self adds as one gather: the targets are the interior cells within the ghost width of a
  // face along the axes that wrap onto this rank, cut into at most 6 disjoint boxes (the two slabs
  // of x, then of y within x's inner range, then of z), and each direction's mask.
  gather_on_ = exec.is_cuda();
  for (int d = 0; d < 3; ++d) {
    gather_.lo[d] = interior_.lo[d];
    gather_.hi[d] = interior_.hi[d];
    gather_.g[d] = 0;
  }
  for (std::uint32_t& m : gather_.mask) m = 0;
  for (const SelfAdd& a : self_adds_) {
    Index3 dir{0, 0, 0};
    for (int d = 0; d < 3; ++d) {
      dir[d] = a.shift[d] < 0 ? 1 : (a.shift[d] > 0 ? -1 : 0);  // shift = -dir * size
      if (dir[d] != 0) gather_.g[d] = ghost[d];
    }
    gather_.mask[direction_index(dir)] = a.mask;
  }
  gather_.start[0] = 0;
  if (!self_adds_.empty()) {
    Box rest = interior_;
    for (int d = 0; d < 3 && !rest.empty(); ++d) {
      const int g = gather_.g[d];
      if (g == 0) continue;
      if (2 * g >= rest.size(d)) {  // the two slabs meet: all that is left
        gather_.box[gather_.count++] = rest;
        rest.hi[d] = rest.lo[d];
        break;
      }
      Box low = rest, high = rest;
      low.hi[d] = rest.lo[d] + g;
      high.lo[d] = rest.hi[d] - g;
      gather_.box[gather_.count++] = low;
      gather_.box[gather_.count++] = high;
      rest.lo[d] += g;
      rest.hi[d] -= g;
    }
    for (int n = 0; n < gather_.count; ++n) gather_.start[n + 1] = gather_.start[n] + gather_.box[n].volume();
  }
  const Backend space = exec.backend();
  staged_ = force_staging || (exec.is_cuda() && !Comm::cuda_aware());
  send_ = Buffer<unsigned char>(space, total_send_ * elem_bytes);
  recv_ = Buffer<unsigned char>(space, total_recv_ * elem_bytes);
  if (staged_) {
    send_host_ = memory::allocate_pinned(total_send_ * elem_bytes);
    recv_host_ = memory::allocate_pinned(total_recv_ * elem_bytes);
  }
}

HaloExchange::~HaloExchange() {
  if (in_flight_) {
    for (auto& r : requests_) MPI_Cancel(&r);
  }
  memory::release_pinned(send_host_);
  memory::release_pinned(recv_host_);
}

std::size_t HaloExchange::bytes_per_exchange() const { return total_send_ * elem_bytes_; }

void HaloExchange::check_field(const Box& interior, const Index3& ghost, int ncomp, std::size_t elem_bytes) const {
  if (!(interior == interior_) || ghost != ghost_ || ncomp != ncomp_ || elem_bytes > elem_bytes_)
    throw Error("HaloExchange: field does not match the plan (box, ghost width, components or type)");
  if (in_flight_) throw Error("HaloExchange: begin() while an exchange is in flight");
}

void HaloExchange::post(std::size_t elem_bytes) {
  ScopedTimer t(label_wait_);
  unsigned char* sbuf = staged_ ? static_cast<unsigned char*>(send_host_) : send_.data();
  unsigned char* rbuf = staged_ ? static_cast<unsigned char*>(recv_host_) : recv_.data();
  const std::size_t total = total_send_ * elem_bytes;
  // Nothing goes through MPI (one rank, or only unsplit periodic axes): no wait for the device,
  // whose kernels stay queued behind one another on the stream.
  if (links_.empty()) return;
  if (staged_) memory::copy_async(exec_, Backend::host, sbuf, exec_.backend(), send_.data(), total);
  exec_.synchronize();  // packed data must be complete before MPI reads it
  requests_.assign(2 * links_.size(), MPI_REQUEST_NULL);
  for (std::size_t n = 0; n < links_.size(); ++n) {
    const Link& l = links_[n];
    const int count = static_cast<int>(static_cast<std::size_t>(l.recv_box.volume()) * popcount(l.recv_mask) * elem_bytes);
    // A message arriving from direction d was sent by that neighbour in direction 26 - d.
    mpi_check(MPI_Irecv(rbuf + l.recv_offset * elem_bytes, count, MPI_BYTE, l.rank, 26 - l.direction, comm_.raw(),
                        &requests_[2 * n]),
              "MPI_Irecv (halo)");
  }
  for (std::size_t n = 0; n < links_.size(); ++n) {
    const Link& l = links_[n];
    const int count = static_cast<int>(static_cast<std::size_t>(l.send_box.volume()) * popcount(l.send_mask) * elem_bytes);
    mpi_check(MPI_Isend(sbuf + l.send_offset * elem_bytes, count, MPI_BYTE, l.rank, l.direction, comm_.raw(),
                        &requests_[2 * n + 1]),
              "MPI_Isend (halo)");
  }
  in_flight_ = true;
}

void HaloExchange::wait() {
  ScopedTimer t(label_wait_);
  mpi_check(MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE),
            "MPI_Waitall (halo)");
  in_flight_ = false;
  if (staged_)
    memory::copy_async(exec_, exec_.backend(), recv_.data(), Backend::host, recv_host_, total_recv_ * elem_bytes_);
}


void HaloExchange::post_reverse(std::size_t elem_bytes) {
  ScopedTimer t(label_wait_);
  // The roles of the buffers swap: the ghosts go out of recv_, the neighbours' ghosts come into send_.
  unsigned char* out = staged_ ? static_cast<unsigned char*>(recv_host_) : recv_.data();
  unsigned char* in = staged_ ? static_cast<unsigned char*>(send_host_) : send_.data();
  if (links_.empty()) return;
  if (staged_) memory::copy_async(exec_, Backend::host, out, exec_.backend(), recv_.data(), total_recv_ * elem_bytes);
  exec_.synchronize();
  requests_.assign(2 * links_.size(), MPI_REQUEST_NULL);
  // Tags above the forward exchange's 0-26: the ghosts of direction d go to the neighbour there,
  // which receives them on its link of direction 26 - d.
  constexpr int kReverseTag = 32;
  for (std::size_t n = 0; n < links_.size(); ++n) {
    const Link& l = links_[n];
    const int count = static_cast<int>(static_cast<std::size_t>(l.send_box.volume()) * popcount(l.send_mask) * elem_bytes);
    mpi_check(MPI_Irecv(in + l.send_offset * elem_bytes, count, MPI_BYTE, l.rank, kReverseTag + 26 - l.direction,
                        comm_.raw(), &requests_[2 * n]),
              "MPI_Irecv (halo accumulate)");
  }
  for (std::size_t n = 0; n < links_.size(); ++n) {
    const Link& l = links_[n];
    const int count = static_cast<int>(static_cast<std::size_t>(l.recv_box.volume()) * popcount(l.recv_mask) * elem_bytes);
    mpi_check(MPI_Isend(out + l.recv_offset * elem_bytes, count, MPI_BYTE, l.rank, kReverseTag + l.direction,
                        comm_.raw(), &requests_[2 * n + 1]),
              "MPI_Isend (halo accumulate)");
  }
  reverse_in_flight_ = true;
}

template <class T>
void HaloExchange::accumulate_begin(Field<T>& f) {
  check_field(f.interior(), f.ghost(), f.ncomp(), sizeof(T));
  if (reverse_in_flight_) throw Error("HaloExchange: accumulate_begin() while an accumulation is in flight");
  const View<T> v = f.view();
  T* buf = reinterpret_cast<T*>(recv_.data());
  for (const Link& l : links_)
    CUMULUS_KERNEL(exec_, halo_kernels, pack_box<T>)(exec_, label_pack_.c_str(), v, l.recv_box, ncomp_, l.recv_mask,
                                                     buf + l.recv_offset);
  post_reverse(sizeof(T));
}

template <class T>
void HaloExchange::accumulate_finish(Field<T>& f) {
  const View<T> v = f.view();
  // This rank's own periodic images first (the ghosts were packed for the neighbours already), in
  // direction order, one box at a time (boxes may mirror onto the same interior cells), or as one
  // gather that adds in the same order.
  if (gather_on_)
    CUMULUS_KERNEL(exec_, halo_kernels, add_self_gather<T>)(exec_, label_self_.c_str(), v, gather_, ncomp_);
  else
    for (const SelfAdd& a : self_adds_)
      CUMULUS_KERNEL(exec_, halo_kernels, add_shifted<T>)(exec_, label_self_.c_str(), v, a.box, a.shift, ncomp_, a.mask);
  if (!reverse_in_flight_) return;
  {
    ScopedTimer t(label_wait_);
    mpi_check(MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE),
              "MPI_Waitall (halo accumulate)");
  }
  reverse_in_flight_ = false;
  if (staged_)
    memory::copy_async(exec_, exec_.backend(), send_.data(), Backend::host, send_host_, total_send_ * elem_bytes_);
  const T* buf = reinterpret_cast<const T*>(send_.data());
  for (const Link& l : links_)
    CUMULUS_KERNEL(exec_, halo_kernels, add_box<T>)(exec_, label_unpack_.c_str(), v, l.send_box, ncomp_, l.send_mask,
                                                    buf + l.send_offset);
}

template <class T>
HaloTransfer<T> HaloExchange::begin(Field<T>& f) {
  check_field(f.interior(), f.ghost(), f.ncomp(), sizeof(T));
  const View<T> v = f.view();
  T* buf = reinterpret_cast<T*>(send_.data());
  for (const Link& l : links_) CUMULUS_KERNEL(exec_, halo_kernels, pack_box<T>)(exec_, label_pack_.c_str(), v, l.send_box, ncomp_, l.send_mask, buf + l.send_offset);
  // Ghosts filled from this rank's own interior read only interior cells: safe before the sends.
  if (wrap_x_)
    CUMULUS_KERNEL(exec_, halo_kernels, wrap_x<T>)(exec_, label_self_.c_str(), v, interior_, ghost_[0], ncomp_, wrap_lo_mask_, wrap_hi_mask_);
  CUMULUS_KERNEL(exec_, halo_kernels, copy_self<T>)(exec_, label_self_.c_str(), v, self_, ncomp_);
  post(sizeof(T));
  return HaloTransfer<T>(this, &f);
}

template <class T>
void HaloExchange::finish(Field<T>& f) {
  if (!in_flight_) return;
  wait();
  const View<T> v = f.view();
  const T* buf = reinterpret_cast<const T*>(recv_.data());
  for (const Link& l : links_)
    CUMULUS_KERNEL(exec_, halo_kernels, unpack_box<T>)(exec_, label_unpack_.c_str(), v, l.recv_box, ncomp_, l.recv_mask, buf + l.recv_offset);
}

template <class T>
void HaloTransfer<T>::finish() {
  if (halo_) halo_->finish(*field_);
  halo_ = nullptr;
}

template <class T>
HaloTransfer<T>::~HaloTransfer() {
  // Forgotten finish(): complete it, unless we are unwinding from an error (waiting could hang).
  if (halo_ && std::uncaught_exceptions() == 0) {
    try {
      finish();
    } catch (...) {
    }
  }
}

#define CUMULUS_INSTANTIATE_HALO(T)                         \
  template HaloTransfer<T> HaloExchange::begin<T>(Field<T>&); \
  template void HaloExchange::finish<T>(Field<T>&);           \
  template class HaloTransfer<T>;
CUMULUS_INSTANTIATE_HALO(double)
CUMULUS_INSTANTIATE_HALO(float)
CUMULUS_INSTANTIATE_HALO(std::uint16_t)
CUMULUS_INSTANTIATE_HALO(std::int32_t)
CUMULUS_INSTANTIATE_HALO(std::int64_t)
#define CUMULUS_INSTANTIATE_ACCUMULATE(T)                \
  template void HaloExchange::accumulate_begin<T>(Field<T>&); \
  template void HaloExchange::accumulate_finish<T>(Field<T>&);
CUMULUS_INSTANTIATE_ACCUMULATE(double)
CUMULUS_INSTANTIATE_ACCUMULATE(std::int64_t)
#undef CUMULUS_INSTANTIATE_ACCUMULATE
#undef CUMULUS_INSTANTIATE_HALO

HaloOverlap::HaloOverlap(const HaloExchange& halo, const Box& box, const Index3& reach, bool split_on_host)
    : overlap_(halo.has_mpi_neighbors()), split_on_host_(split_on_host), box_(box) {
  if (overlap_) {
    inner_ = box.grown({-reach[0], -reach[1], -reach[2]});
    rim_ = rim_boxes(box, inner_);
  }
}

}  // namespace cumulus
