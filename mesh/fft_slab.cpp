// The distributed FFT's host slab path. Where every rank holds whole x- and y-lines (a P1 = 1 slab
// or a single rank, so that one transpose over all ranks remains) and the fields' bricks are the
// x-pencils (z-slabs), a transform is two passes over memory with one exchange between them:
//
//   forward:  for each z-plane of the slab, in a cache-resident buffer: x-lines, then y-lines, whose
//             results go straight into the transpose's messages (this rank's own part straight into
//             the receive buffer); the exchange; the z-lines gathered from the messages as they
//             arrived, written to the spectrum.
//   backward: the same in reverse.
//
// Where all ranks of the transpose share one node (one GPU server's ranks, the common case), the
// receive buffers are one MPI shared-memory window and the exchange is no copy at all: the forward
// pass writes each block straight into its receiver's buffer and the backward pass reads it from
// there, a barrier between (make_shared_transpose). Otherwise, and with force_staging, the blocks
// travel as MPI_Alltoallv messages.
//
// The general path (fft_lines.cpp, fft.cpp) writes the whole slab out between the x and the y stage
// and unpacks the messages before the z stage: four passes over memory and an unpacking. Here every
// line still goes through the same plan on the same contiguous values, so the spectrum has the same
// bits as on the general path, at every rank count (tests/mpi/test_fft.cpp compares them).
#include <sys/statvfs.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/timers.hpp"
#include "mesh/fft.hpp"
#include "mesh/fft_host.hpp"

namespace cumulus {

namespace {

using fft_host::max_threads;
using fft_host::this_thread;

// d[r * drs + c * dcs] = s[r * srs + c * scs] for r < rows, c < cols, in square blocks of one cache
// line's worth of elements: where one side is contiguous along r and the other along c (a
// transposition), a block reads whole cache lines on one side and writes whole lines on the other.
template <class E>
void copy_tiled(int rows, int cols, const E* s, std::int64_t srs, std::int64_t scs, E* d, std::int64_t drs,
                std::int64_t dcs) {
  constexpr int kb = static_cast<int>(64 / sizeof(E));
  for (int r0 = 0; r0 < rows; r0 += kb) {
    const int r1 = std::min(rows, r0 + kb);
    for (int c0 = 0; c0 < cols; c0 += kb) {
      const int c1 = std::min(cols, c0 + kb);
      for (int r = r0; r < r1; ++r)
        for (int c = c0; c < c1; ++c) d[r * drs + c * dcs] = s[r * srs + c * scs];
    }
  }
}

}  // namespace

template <class T>
void FftPlan<T>::make_slab(bool force_messages) {
  slab_ = !exec_.is_cuda() && last_stage() == 2 && grid_.p1 == 1 && in_place_;
  if (!slab_) return;
  slab_recv_ = reinterpret_cast<Complex*>(recv_.data());
  if (!force_messages && y_to_z_.send.size() > 1) make_shared_transpose();
  // Per thread, two planes of y-lines (P[kx * N1 + y], the kx padded to whole batches: the
  // padding lines are zero and their results never read), beside the fused passes' batch scratch.
  const std::size_t padded_m0 = static_cast<std::size_t>((m0_ + batch_ - 1) / batch_ * batch_);
  plane_bytes_ = (padded_m0 * static_cast<std::size_t>(n_[1]) * sizeof(Complex) + 63) / 64 * 64;
  planes_ = Buffer<unsigned char>(Backend::host, 2 * plane_bytes_ * static_cast<std::size_t>(scratch_threads_),
                                  "fft.planes");
  std::memset(planes_.data(), 0, planes_.bytes());
  // The messages of the one transpose hold, per pair of ranks, the cells (kx, ky, z) with kx
  // fastest, then ky, then z; so for each global z the received lines' cells lie at one offset
  // from the z-line's index kx + M0 (ky - ky_lo): z_base_[z].
  const Transpose& t = y_to_z_;
  z_base_.assign(static_cast<std::size_t>(n_[2]), 0);
  for (std::size_t m = 0; m < t.recv.size(); ++m) {
    const Box& b = t.recv[m];
    if (b.empty()) continue;
    for (int z = b.lo[2]; z < b.hi[2]; ++z)
      z_base_[static_cast<std::size_t>(z)] =
          t.recv_displ[m] + static_cast<std::int64_t>(m0_) * b.size(1) * (z - b.lo[2]);
  }
}

template <class T>
void FftPlan<T>::make_shared_transpose() {
  const Transpose& t = y_to_z_;
  const int members = static_cast<int>(t.send.size());
  // Decided alike on every member: all of them on this node, and the window allocated everywhere.
  MPI_Comm node = MPI_COMM_NULL;
  mpi_check(MPI_Comm_split_type(t.comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node), "MPI_Comm_split_type (FFT)");
  int on_node = 0, all = 0;
  mpi_check(MPI_Comm_size(node, &on_node), "MPI_Comm_size");
  MPI_Comm_free(&node);
  const auto bytes = static_cast<MPI_Aint>(std::max<std::int64_t>(1, t.recv_total) * sizeof(Complex));
  // The window's backing file lives in Open MPI's osc_sm_backing_directory (/dev/shm unless set).
  // A container's small /dev/shm (64 MB by default under Docker and Kubernetes) cannot hold a large
  // window, and then Open MPI fails on one rank while the others wait in the collective for ever
  // (tried with a 64 MB tmpfs): so the space is checked first, with a quarter and 16 MB to spare
  // for MPI's own segments, and every member must find it.
  double need = static_cast<double>(bytes);
  mpi_check(MPI_Allreduce(MPI_IN_PLACE, &need, 1, MPI_DOUBLE, MPI_SUM, t.comm), "MPI_Allreduce (FFT shared memory)");
  const char* dir = std::getenv("OMPI_MCA_osc_sm_backing_directory");
  struct statvfs fs {};
  const bool room = statvfs(dir && *dir ? dir : "/dev/shm", &fs) == 0 &&
                    static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize) >= 1.25 * need + (16 << 20);
  int one_node = on_node == members && room ? 1 : 0;
  mpi_check(MPI_Allreduce(&one_node, &all, 1, MPI_INT, MPI_MIN, t.comm), "MPI_Allreduce (FFT shared memory)");
  if (all == 0) return;
  // Each member's segment in its own pages (first touched by it, so on its NUMA node).
  MPI_Info info = MPI_INFO_NULL;
  mpi_check(MPI_Info_create(&info), "MPI_Info_create");
  MPI_Info_set(info, "alloc_shared_noncontig", "true");
  void* base = nullptr;
  MPI_Win win = MPI_WIN_NULL;
  const int rc = MPI_Win_allocate_shared(bytes, static_cast<int>(sizeof(Complex)), info, t.comm, &base, &win);
  MPI_Info_free(&info);
  // Should it fail everywhere all the same, the messages remain.
  int ok = rc == MPI_SUCCESS ? 1 : 0;
  mpi_check(MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, t.comm), "MPI_Allreduce (FFT shared memory)");
  if (ok == 0) {
    if (rc == MPI_SUCCESS) MPI_Win_free(&win);
    return;
  }
  shared_win_ = win;
  mpi_check(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN), "MPI_Win_set_errhandler");
  mpi_check(MPI_Win_lock_all(MPI_MODE_NOCHECK, win), "MPI_Win_lock_all (FFT)");
  std::memset(base, 0, static_cast<std::size_t>(bytes));
  slab_recv_ = static_cast<Complex*>(base);
  // Where this rank's block lies in each member's receive buffer: member m's recv_displ[this rank].
  std::vector<int> at(static_cast<std::size_t>(members));
  mpi_check(MPI_Alltoall(t.recv_displ.data(), 1, MPI_INT, at.data(), 1, MPI_INT, t.comm), "MPI_Alltoall (FFT)");
  peer_blocks_.resize(static_cast<std::size_t>(members));
  for (int m = 0; m < members; ++m) {
    MPI_Aint size = 0;
    int unit = 0;
    void* seg = nullptr;
    mpi_check(MPI_Win_shared_query(win, m, &size, &unit, &seg), "MPI_Win_shared_query (FFT)");
    peer_blocks_[static_cast<std::size_t>(m)] = static_cast<Complex*>(seg) + at[static_cast<std::size_t>(m)];
  }
  // The messages' buffers are not needed on this path.
  send_ = Buffer<unsigned char>();
  recv_ = Buffer<unsigned char>();
}

// Every member's writes into the window are complete and visible before any member reads on:
// MPI's memory-model pattern for a shared window in a passive epoch (sync, barrier, sync).
template <class T>
void FftPlan<T>::shared_fence() const {
  mpi_check(MPI_Win_sync(shared_win_), "MPI_Win_sync (FFT)");
  mpi_check(MPI_Barrier(y_to_z_.comm), "MPI_Barrier (FFT)");
  mpi_check(MPI_Win_sync(shared_win_), "MPI_Win_sync (FFT)");
}

// Before a transform writes into the receive buffers: in shared memory, every member done reading
// them in the previous transform (its z-lines forward, its y-lines backward).
template <class T>
void FftPlan<T>::slab_enter() {
  if (shared_win_ == MPI_WIN_NULL) return;
  const double t0 = wall_seconds();
  shared_fence();
  t_transposes_ += wall_seconds() - t0;
}

template <class T>
typename FftPlan<T>::SlabScratch FftPlan<T>::slab_scratch() const {
  const auto th = static_cast<std::size_t>(this_thread());
  unsigned char* tin = scratch_.data() + th * scratch_slot_;
  auto* p = reinterpret_cast<Complex*>(planes_.data() + 2 * th * plane_bytes_);
  return {tin, tin + scratch_slot_ / 2, p, p + plane_bytes_ / sizeof(Complex)};
}

template <class T>
template <class E>
bool FftPlan<T>::rows_in_place(int p, const StridedView<E>& v, int z) const {
  const void* first = &v(0, 0, z);
  return host_lines_in_place(p, first, static_cast<std::size_t>(v.s1) * sizeof(E)) &&
         host_lines_in_place(p, first, static_cast<std::size_t>(v.s2) * sizeof(E));
}

template <class T>
typename FftPlan<T>::Complex* FftPlan<T>::slab_block(int m) const {
  const Transpose& t = y_to_z_;
  const auto i = static_cast<std::size_t>(m);
  if (shared_win_ != MPI_WIN_NULL) return peer_blocks_[i];
  return m == t.self ? slab_recv_ + t.recv_displ[i]
                     : reinterpret_cast<Complex*>(send_.data()) + t.send_displ[i];
}

template <class T>
void FftPlan<T>::end_slab_pass(double t0) {
  t_compute_ += pass_compute_;
  t_lines_ += wall_seconds() - t0;
}

// The one transpose's exchange: forward from the send buffer to the receive buffer, reverse back
// (this rank's own part never moves: it is written to, and read from, the receive buffer). In
// shared memory the blocks are already where they are read: only the fence.
template <class T>
void FftPlan<T>::slab_exchange(bool reverse) {
  const double t0 = wall_seconds();
  const Transpose& t = y_to_z_;
  if (shared_win_ != MPI_WIN_NULL) {
    shared_fence();
  } else if (t.send.size() > 1) {
    void* s = reverse ? recv_.data() : send_.data();
    void* r = reverse ? send_.data() : recv_.data();
    const auto& sc = reverse ? t.recv_count_mpi : t.send_count_mpi;
    const auto& sd = reverse ? t.recv_displ : t.send_displ;
    const auto& rc = reverse ? t.send_count_mpi : t.recv_count_mpi;
    const auto& rd = reverse ? t.send_displ : t.recv_displ;
    mpi_check(MPI_Alltoallv(s, sc.data(), sd.data(), complex_type_, r, rc.data(), rd.data(), complex_type_, t.comm),
              "MPI_Alltoallv (FFT transpose)");
  }
  t_transposes_ += wall_seconds() - t0;
}

template <class T>
template <class E>
void FftPlan<T>::slab_forward(const StridedView<E>& in, Complex* spectrum) {
  const bool real = kind_ == FftKind::real_to_complex;
  const int nx = n_[0], ny = n_[1], nz = n_[2];
  const int zlo = stage_[0].box.lo[2], zhi = stage_[0].box.hi[2];
  const Transpose& t = y_to_z_;
  const int members = static_cast<int>(t.send.size());
  Complex* rbuf = slab_recv_;
  // x-lines as in lines_into_transpose (host_pitch: a one-line plan takes each line at a 64-byte boundary).
  const std::size_t row_in = static_cast<std::size_t>(nx) * sizeof(E);
  const std::size_t pitch_in = host_pitch(0, row_in);
  const std::size_t pitch_out = host_pitch(0, m0_ * sizeof(Complex));
  const std::int64_t out_pitch = static_cast<std::int64_t>(pitch_out / sizeof(Complex));
  const std::size_t ypitch = static_cast<std::size_t>(ny) * sizeof(Complex);
  const int ybatches = (m0_ + batch_ - 1) / batch_;
  // A one-line x plan reads the brick's rows where they lie when every row (and every plane's
  // first row) keeps FFTW's alignment: no copy into the scratch (a real-to-complex or out-of-place
  // transform leaves its input as it was).
  const std::size_t brick_pitch = static_cast<std::size_t>(in.s1) * sizeof(E);
  const bool direct = rows_in_place(0, in, zlo);

  slab_enter();
  double t0 = wall_seconds();
  pass_compute_ = 0;
#pragma omp parallel num_threads(std::min(max_threads(), scratch_threads_))
  {
    double busy = 0;
    const SlabScratch w = slab_scratch();  // (not a structured binding: clang 14's OpenMP cannot capture one)
    unsigned char *tin = w.tin, *tout = w.tout;
    Complex *p = w.p, *q = w.q;
#pragma omp for schedule(static)
    for (int z = zlo; z < zhi; ++z) {
      // The plane's x-lines, a batch of rows at a time, into p as y-lines.
      for (int y0 = 0; y0 < ny; y0 += batch_) {
        const int cnt = std::min(batch_, ny - y0);
        if (direct) {
          busy += run_host_batch(0, real, true, reinterpret_cast<unsigned char*>(&in(0, y0, z)), brick_pitch, tout,
                                 pitch_out, cnt);
        } else {
          for (int r = 0; r < cnt; ++r) std::memcpy(tin + r * pitch_in, &in(0, y0 + r, z), row_in);
          if (cnt < batch_) std::memset(tin + cnt * pitch_in, 0, (batch_ - cnt) * pitch_in);
          busy += run_host_batch(0, real, true, tin, pitch_in, tout, pitch_out);
        }
        copy_tiled(cnt, m0_, reinterpret_cast<const Complex*>(tout), out_pitch, 1, p + y0, 1, ny);
      }
      // The plane's y-lines: batches of consecutive kx, back to back as the batch plan wants them.
      for (int b = 0; b < ybatches; ++b) {
        const std::size_t at = static_cast<std::size_t>(b) * batch_ * ny;
        busy += run_host_batch(2, false, true, reinterpret_cast<unsigned char*>(p + at), ypitch,
                               reinterpret_cast<unsigned char*>(q + at), ypitch);
      }
      // Each member's ky range into its message (this rank's own into the receive buffer).
      for (int m = 0; m < members; ++m) {
        const Box& b = t.send[static_cast<std::size_t>(m)];
        if (b.empty()) continue;
        const int nky = b.size(1);
        Complex* msg = slab_block(m) + static_cast<std::int64_t>(m0_) * nky * (z - zlo);
        copy_tiled(nky, m0_, q + b.lo[1], 1, ny, msg, m0_, 1);
      }
    }
    add_compute(busy);
  }
  end_slab_pass(t0);
  slab_exchange(false);
  t0 = wall_seconds();

  // The z-lines, a batch of consecutive spectral lines at a time: for each z their cells lie side
  // by side in the message from z's owner.
  const Stage& st = stage_[2];
  const std::int64_t lines = st.lines, batches = st.padded_lines / batch_;
  const std::size_t zpitch = static_cast<std::size_t>(nz) * sizeof(Complex);
  const std::int64_t* zb = z_base_.data();
  constexpr int kLine = static_cast<int>(64 / sizeof(Complex));
  pass_compute_ = 0;
#pragma omp parallel num_threads(std::min(max_threads(), scratch_threads_))
  {
    double busy = 0;
    auto* tin = reinterpret_cast<Complex*>(scratch_.data() + static_cast<std::size_t>(this_thread()) * scratch_slot_);
#pragma omp for schedule(static)
    for (std::int64_t b = 0; b < batches; ++b) {
      const std::int64_t l0 = b * batch_;
      const int cnt = static_cast<int>(std::min<std::int64_t>(batch_, lines - l0));
      // A cache line's worth of z at a time: a whole line of each of the batch's lines is written at once.
      for (int z0 = 0; z0 < nz; z0 += kLine) {
        const int z1 = std::min(nz, z0 + kLine);
        for (int r = 0; r < cnt; ++r)
          for (int z = z0; z < z1; ++z) tin[static_cast<std::int64_t>(r) * nz + z] = rbuf[zb[z] + l0 + r];
      }
      if (cnt < batch_) std::memset(static_cast<void*>(tin + static_cast<std::int64_t>(cnt) * nz), 0, (batch_ - cnt) * zpitch);
      busy += run_host_batch(4, false, true, reinterpret_cast<unsigned char*>(tin), zpitch,
                             reinterpret_cast<unsigned char*>(spectrum + l0 * nz), zpitch);
    }
    add_compute(busy);
  }
  end_slab_pass(t0);
}

template <class T>
template <class E>
void FftPlan<T>::slab_backward(const Complex* spectrum, const StridedView<E>& out) {
  const bool real = kind_ == FftKind::real_to_complex;
  const int nx = n_[0], ny = n_[1], nz = n_[2];
  const int zlo = stage_[0].box.lo[2], zhi = stage_[0].box.hi[2];
  const Transpose& t = y_to_z_;
  const int members = static_cast<int>(t.send.size());
  Complex* rbuf = slab_recv_;

  // The z-lines from the spectrum (read in place: a complex-to-complex transform out of place
  // leaves its input as it was), scattered into the messages to z's owners.
  const Stage& st = stage_[2];
  const std::int64_t lines = st.lines, batches = st.padded_lines / batch_;
  const std::size_t zpitch = static_cast<std::size_t>(nz) * sizeof(Complex);
  const std::int64_t* zb = z_base_.data();
  constexpr int kLine = static_cast<int>(64 / sizeof(Complex));
  auto* spec = reinterpret_cast<unsigned char*>(const_cast<Complex*>(spectrum));
  slab_enter();
  double t0 = wall_seconds();
  pass_compute_ = 0;
#pragma omp parallel num_threads(std::min(max_threads(), scratch_threads_))
  {
    double busy = 0;
    unsigned char* tout =
        scratch_.data() + static_cast<std::size_t>(this_thread()) * scratch_slot_ + scratch_slot_ / 2;
    const auto* o = reinterpret_cast<const Complex*>(tout);
#pragma omp for schedule(static)
    for (std::int64_t b = 0; b < batches; ++b) {
      const std::int64_t l0 = b * batch_;
      const int cnt = static_cast<int>(std::min<std::int64_t>(batch_, lines - l0));
      busy += run_host_batch(5, false, false, spec + static_cast<std::size_t>(l0) * zpitch, zpitch, tout, zpitch);
      for (int z0 = 0; z0 < nz; z0 += kLine) {
        const int z1 = std::min(nz, z0 + kLine);
        for (int r = 0; r < cnt; ++r)
          for (int z = z0; z < z1; ++z) rbuf[zb[z] + l0 + r] = o[static_cast<std::int64_t>(r) * nz + z];
      }
    }
    add_compute(busy);
  }
  end_slab_pass(t0);
  slab_exchange(true);
  t0 = wall_seconds();

  // Per z-plane: the messages into y-lines, the y-lines, then the x-lines a batch of rows at a time
  // into the caller's brick.
  const std::size_t row_in = static_cast<std::size_t>(m0_) * sizeof(Complex);
  const std::size_t row_out = static_cast<std::size_t>(nx) * sizeof(E);
  const std::size_t pitch_in = host_pitch(1, row_in);
  const std::size_t pitch_out = host_pitch(1, row_out);
  const std::int64_t in_pitch = static_cast<std::int64_t>(pitch_in / sizeof(Complex));
  const std::size_t ypitch = static_cast<std::size_t>(ny) * sizeof(Complex);
  const int ybatches = (m0_ + batch_ - 1) / batch_;
  // A one-line x plan writes the brick's rows where they lie when they keep FFTW's alignment.
  const std::size_t brick_pitch = static_cast<std::size_t>(out.s1) * sizeof(E);
  const bool direct = rows_in_place(1, out, zlo);
  pass_compute_ = 0;
#pragma omp parallel num_threads(std::min(max_threads(), scratch_threads_))
  {
    double busy = 0;
    const SlabScratch w = slab_scratch();  // (not a structured binding: clang 14's OpenMP cannot capture one)
    unsigned char *tin = w.tin, *tout = w.tout;
    Complex *p = w.p, *q = w.q;
#pragma omp for schedule(static)
    for (int z = zlo; z < zhi; ++z) {
      for (int m = 0; m < members; ++m) {
        const Box& b = t.send[static_cast<std::size_t>(m)];
        if (b.empty()) continue;
        const int nky = b.size(1);
        const Complex* msg = slab_block(m) + static_cast<std::int64_t>(m0_) * nky * (z - zlo);
        copy_tiled(nky, m0_, msg, m0_, 1, q + b.lo[1], 1, ny);
      }
      for (int b = 0; b < ybatches; ++b) {
        const std::size_t at = static_cast<std::size_t>(b) * batch_ * ny;
        busy += run_host_batch(3, false, false, reinterpret_cast<unsigned char*>(q + at), ypitch,
                               reinterpret_cast<unsigned char*>(p + at), ypitch);
      }
      for (int y0 = 0; y0 < ny; y0 += batch_) {
        const int cnt = std::min(batch_, ny - y0);
        auto* ti = reinterpret_cast<Complex*>(tin);
        copy_tiled(cnt, m0_, p + y0, 1, ny, ti, in_pitch, 1);
        if (direct) {
          busy += run_host_batch(1, real, false, tin, pitch_in, reinterpret_cast<unsigned char*>(&out(0, y0, z)),
                                 brick_pitch, cnt);
          continue;
        }
        if (cnt < batch_) std::memset(tin + cnt * pitch_in, 0, (batch_ - cnt) * pitch_in);
        busy += run_host_batch(1, real, false, tin, pitch_in, tout, pitch_out);
        for (int r = 0; r < cnt; ++r) std::memcpy(&out(0, y0 + r, z), tout + r * pitch_out, row_out);
      }
    }
    add_compute(busy);
  }
  end_slab_pass(t0);
}

#define CUMULUS_FFT_SLAB_MEMBERS(T)                                                                        \
  template void FftPlan<T>::make_slab(bool);                                                               \
  template void FftPlan<T>::make_shared_transpose();                                                       \
  template void FftPlan<T>::shared_fence() const;                                                          \
  template void FftPlan<T>::slab_enter();                                                                  \
  template void FftPlan<T>::end_slab_pass(double);                                                         \
  template typename FftPlan<T>::SlabScratch FftPlan<T>::slab_scratch() const;                              \
  template bool FftPlan<T>::rows_in_place<T>(int, const StridedView<T>&, int) const;                      \
  template bool FftPlan<T>::rows_in_place<FftComplex<T>>(int, const StridedView<FftComplex<T>>&, int) const; \
  template FftComplex<T>* FftPlan<T>::slab_block(int) const;                                               \
  template void FftPlan<T>::slab_exchange(bool);                                                           \
  template void FftPlan<T>::slab_forward<T>(const StridedView<T>&, FftComplex<T>*);                        \
  template void FftPlan<T>::slab_forward<FftComplex<T>>(const StridedView<FftComplex<T>>&, FftComplex<T>*); \
  template void FftPlan<T>::slab_backward<T>(const FftComplex<T>*, const StridedView<T>&);                 \
  template void FftPlan<T>::slab_backward<FftComplex<T>>(const FftComplex<T>*, const StridedView<FftComplex<T>>&);
CUMULUS_FFT_SLAB_MEMBERS(double)
CUMULUS_FFT_SLAB_MEMBERS(float)
#undef CUMULUS_FFT_SLAB_MEMBERS

}  // namespace cumulus
