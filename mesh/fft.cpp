// The distributed FFT's plan: the process grid, the stages' layouts, the transposes (MPI) and the
// order of a transform. Host code; the 1D line transforms are in fft_lines.cpp, the pack/unpack
// kernels in fft_kernels.cpp.
#include "mesh/fft.hpp"

#include <algorithm>
#include <exception>
#include <cstdlib>
#include <climits>
#include <cmath>
#include <cstring>

#include "core/strings.hpp"
#include "core/timers.hpp"

#ifdef CUMULUS_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace cumulus {

// ---- process grid -------------------------------------------------------------------------------

template <class T>
std::vector<FftProcessGrid> FftPlan<T>::feasible_grids(const Index3& n, FftKind kind, int nranks) {
  if (n[0] <= 0 || n[1] <= 0 || n[2] <= 0 || nranks <= 0)
    throw InputError(strprintf("FFT of %dx%dx%d cells on %d ranks: every size must be positive", n[0], n[1], n[2],
                               nranks));
  const int m0 = kind == FftKind::real_to_complex ? n[0] / 2 + 1 : n[0];
  std::vector<FftProcessGrid> out;
  for (int p1 = 1; p1 <= nranks; ++p1) {
    if (nranks % p1) continue;
    const int p2 = nranks / p1;
    bool ok;
    if (n[2] == 1)  // 2D: x-lines split y over P1, then y-lines split kx over P1
      ok = p2 == 1 && n[1] >= p1 && m0 >= p1;
    else  // x-pencils split (y, z), y-pencils (kx, z), z-pencils (kx, ky)
      ok = n[1] >= p1 && n[2] >= p2 && m0 >= p1 && n[1] >= p2;
    if (ok) out.push_back({p1, p2});
  }
  if (out.empty())
    throw InputError(strprintf(
        "an FFT of %dx%dx%d cells cannot be split over %d ranks: a P1 x P2 process grid needs at least P1 cells "
        "along y and along the %d stored x-wavenumbers, and P2 along z and along y; use fewer ranks",
        n[0], n[1], n[2], nranks, m0));
  return out;
}

// Fewest bytes through MPI: a transpose in a group of p ranks sends the fraction 1 - 1/p of the
// data, so a slab (one transpose over all ranks) beats pencils (two) whenever the sizes allow one,
// and among pencils the most uneven grid wins; ties go to the smaller P1.
template <class T>
FftProcessGrid FftPlan<T>::choose_grid(const Index3& n, FftKind kind, int nranks) {
  const auto grids = feasible_grids(n, kind, nranks);
  FftProcessGrid best = grids.front();
  double best_cost = 1e300;
  for (const auto& g : grids) {
    const double cost = (1.0 - 1.0 / g.p1) + (1.0 - 1.0 / g.p2);
    if (cost < best_cost - 1e-12) {
      best_cost = cost;
      best = g;
    }
  }
  return best;
}

// ---- set-up -------------------------------------------------------------------------------------

template <class T>
FftPlan<T>::FftPlan(const CartesianDecomposition& bricks, const Comm& comm, const Exec& exec, FftKind kind,
                    FftProcessGrid grid, bool force_staging)
    : comm_(comm), exec_(exec), kind_(kind), n_(bricks.global_cells()) {
  if (bricks.nranks() != comm.size())
    throw Error(strprintf("FftPlan: the decomposition has %d ranks, the communicator %d", bricks.nranks(), comm.size()));
  const auto grids = feasible_grids(n_, kind, comm.size());
  m0_ = kind == FftKind::real_to_complex ? n_[0] / 2 + 1 : n_[0];
  if (grid.p1 == 0 && grid.p2 == 0) {
    grid_ = choose_grid(n_, kind, comm.size());
  } else {
    if (std::find(grids.begin(), grids.end(), grid) == grids.end())
      throw InputError(strprintf("an FFT of %dx%dx%d cells cannot use a %d x %d process grid on %d ranks (P1 x P2 "
                                 "must be the rank count, P2 = 1 in 2D, and each rank needs at least one line: "
                                 "P1 <= %d and P1 <= %d, P2 <= %d and P2 <= %d)",
                                 n_[0], n_[1], n_[2], grid.p1, grid.p2, comm.size(), n_[1], m0_, n_[2], n_[1]));
    grid_ = grid;
  }
  p1_index_ = comm.rank() % grid_.p1;
  p2_index_ = comm.rank() / grid_.p1;
  brick_ = bricks.box_of(comm.rank());
  batch_ = line_batch(exec, n_);
  staged_ = force_staging || (exec.is_cuda() && !Comm::cuda_aware());

  make_stages();
  check_memory();
  // Row: the ranks that share p2 (ordered by p1); column: those that share p1 (ordered by p2).
  mpi_check(MPI_Comm_split(comm.raw(), p2_index_, p1_index_, &row_), "MPI_Comm_split (FFT rows)");
  mpi_check(MPI_Comm_split(comm.raw(), p1_index_, p2_index_, &col_), "MPI_Comm_split (FFT columns)");
  mpi_check(MPI_Type_contiguous(static_cast<int>(sizeof(T)), MPI_BYTE, &real_type_), "MPI_Type_contiguous");
  mpi_check(MPI_Type_commit(&real_type_), "MPI_Type_commit");
  mpi_check(MPI_Type_contiguous(static_cast<int>(sizeof(Complex)), MPI_BYTE, &complex_type_), "MPI_Type_contiguous");
  mpi_check(MPI_Type_commit(&complex_type_), "MPI_Type_commit");
  make_transposes(bricks);
  // Every rank must take the same path: the ranks whose bricks are not their pencils exchange in
  // the first transpose (MPI_Alltoallv over all ranks), which the others would otherwise skip.
  in_place_ = comm.min(bricks_are_pencils() ? 1.0 : 0.0) == 1.0;

  std::int64_t work = 0, buf = 0;
  for (int s = 0; s <= last_stage(); ++s)
    work = std::max(work, stage_[s].padded_lines * (s == 0 ? std::max(n_[0], m0_) : n_[stage_[s].axis]));
  for (const Transpose* t : {&to_pencils_, &x_to_y_, &y_to_z_}) buf = std::max({buf, t->send_total, t->recv_total});
  const Backend space = exec.backend();
  work_a_ = Buffer<Complex>(space, static_cast<std::size_t>(work), "fft.work_a");
  work_b_ = Buffer<Complex>(space, static_cast<std::size_t>(work), "fft.work_b");
  send_ = Buffer<unsigned char>(space, static_cast<std::size_t>(buf) * sizeof(Complex), "fft.send");
  recv_ = Buffer<unsigned char>(space, static_cast<std::size_t>(buf) * sizeof(Complex), "fft.recv");
  {
    // Padding lines are never read into a real line (batched lines are independent); zeroed once
    // so that no uninitialised memory is ever transformed.
    const std::vector<Complex> zeros(static_cast<std::size_t>(work), Complex{0, 0});
    work_a_.from_host(exec, zeros);
    work_b_.from_host(exec, zeros);
  }
  if (staged_) {
    send_host_ = memory::allocate_pinned(send_.bytes());
    recv_host_ = memory::allocate_pinned(recv_.bytes());
  }
  make_line_plans();
  make_slab(force_staging);
  std::size_t members = 1;
  for (const Transpose* t : {&to_pencils_, &x_to_y_, &y_to_z_}) members = std::max(members, t->send.size());
  to_views_.resize(members);
}

template <class T>
FftPlan<T>::~FftPlan() {
  destroy_line_plans();
  memory::release_pinned(send_host_);
  memory::release_pinned(recv_host_);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  // Freeing a window is collective (Open MPI waits in a barrier): a plan destroyed while an error
  // unwinds on this rank alone would hang the job that main() is about to abort. MPI_Finalize
  // releases a window left as it is.
  if (shared_win_ != MPI_WIN_NULL && std::uncaught_exceptions() == 0) {
    MPI_Win_unlock_all(shared_win_);
    MPI_Win_free(&shared_win_);
  }
  if (row_ != MPI_COMM_NULL) MPI_Comm_free(&row_);
  if (col_ != MPI_COMM_NULL) MPI_Comm_free(&col_);
  if (real_type_ != MPI_DATATYPE_NULL) MPI_Type_free(&real_type_);
  if (complex_type_ != MPI_DATATYPE_NULL) MPI_Type_free(&complex_type_);
}

namespace {
// Stage s's box for the rank at (p1, p2) of the process grid: the transform axis whole, the other
// two split (split_lo: as evenly as possible, as CartesianDecomposition splits).
Box stage_box(int s, int p1, int p2, const FftProcessGrid& g, const Index3& n, int m0) {
  auto part = [](int cells, int parts, int index, int& lo, int& hi) {
    lo = split_lo(cells, parts, index);
    hi = split_lo(cells, parts, index + 1);
  };
  Box b(0, 0, 0, m0, n[1], n[2]);
  if (s == 0) {  // x-lines: y over P1, z over P2
    part(n[1], g.p1, p1, b.lo[1], b.hi[1]);
    part(n[2], g.p2, p2, b.lo[2], b.hi[2]);
  } else if (s == 1) {  // y-lines: kx over P1, z over P2
    part(m0, g.p1, p1, b.lo[0], b.hi[0]);
    part(n[2], g.p2, p2, b.lo[2], b.hi[2]);
  } else {  // z-lines: kx over P1, ky over P2
    part(m0, g.p1, p1, b.lo[0], b.hi[0]);
    part(n[1], g.p2, p2, b.lo[1], b.hi[1]);
  }
  return b;
}
}  // namespace

template <class T>
void FftPlan<T>::make_stages() {
  for (int s = 0; s <= last_stage(); ++s) {
    Stage& st = stage_[s];
    st.box = stage_box(s, p1_index_, p2_index_, grid_, n_, m0_);
    st.axis = s;
    // The transform axis is contiguous; then x (for the y and z stages), then the remaining axis.
    const int a = s, b = s == 0 ? 1 : 0, c = s == 2 ? 1 : 2;
    st.stride[a] = 1;
    st.stride[b] = st.box.size(a);
    st.stride[c] = st.stride[b] * st.box.size(b);
    st.lines = st.box.volume() / st.box.size(a);
    st.padded_lines = (st.lines + batch_ - 1) / batch_ * batch_;
  }
}

template <class T>
void FftPlan<T>::check_memory() const {
  // Per rank: two work arrays of padded lines, the send and receive buffers and the caller's
  // spectrum. Estimated for the rank at (0, 0) of the process grid, which holds the most (split_lo
  // gives the first parts the extra cells), so that every rank takes the same decision.
  double cells = 0, lines_pad = 0;
  for (int s = 0; s <= last_stage(); ++s) {
    const Box b = stage_box(s, 0, 0, grid_, n_, m0_);
    const double lines = static_cast<double>(b.volume()) / b.size(s);
    cells = std::max(cells, static_cast<double>(b.volume()));
    lines_pad = std::max(lines_pad, std::ceil(lines / batch_) * batch_ * std::max(n_[0], n_[s]));
  }
  const double bytes = (2 * std::max(cells, lines_pad) + 3 * cells) * sizeof(Complex);
  if (cells > static_cast<double>(INT_MAX))
    throw InputError(strprintf("an FFT of %dx%dx%d cells puts %.3g cells on a rank, more than one MPI_Alltoallv "
                               "moves (2^31 - 1 elements): use more ranks",
                               n_[0], n_[1], n_[2], cells));
  double have = 0;
  const char* where = "host";
  if (exec_.is_cuda()) {
#ifdef CUMULUS_HAVE_CUDA
    std::size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) have = static_cast<double>(total_b);
    where = "GPU";
#endif
  } else {
    // The ranks on this node share its memory.
    MPI_Comm node;
    mpi_check(MPI_Comm_split_type(comm_.raw(), MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
    int node_ranks = 1;
    MPI_Comm_size(node, &node_ranks);
    MPI_Comm_free(&node);
    have = memory::node_bytes() / node_ranks;
  }
  // The tightest node decides for all (a throw on some ranks only would leave the others waiting).
  have = comm_.min(have > 0 ? have : 1e300);
  if (bytes > have)
    throw InputError(strprintf("an FFT of %dx%dx%d cells needs about %.3g GB per rank on %d ranks, more than the "
                               "%.3g GB of %s memory a rank has: use more ranks or a smaller grid",
                               n_[0], n_[1], n_[2], bytes / 1e9, comm_.size(), have / 1e9, where));
}

namespace {
// Fills a transpose from the boxes each member holds before (src) and after (dst): this rank sends
// its src box's part of each member's dst box, and receives its dst box's part of each member's src.
template <class Tr>
void fill_transpose(Tr& t, MPI_Comm comm, int self, const Box& my_src, const Box& my_dst, const std::vector<Box>& src_of,
                    const std::vector<Box>& dst_of, const Index3& n) {
  t.comm = comm;
  t.self = self;
  const int members = static_cast<int>(src_of.size());
  t.send.resize(members);
  t.recv.resize(members);
  t.send_count.assign(members, 0);
  t.send_displ.assign(members, 0);
  t.recv_count.assign(members, 0);
  t.recv_displ.assign(members, 0);
  std::int64_t so = 0, ro = 0;
  for (int m = 0; m < members; ++m) {
    t.send[m] = my_src.intersect(dst_of[m]);
    t.recv[m] = src_of[m].intersect(my_dst);
    const std::int64_t sv = t.send[m].empty() ? 0 : t.send[m].volume();
    const std::int64_t rv = t.recv[m].empty() ? 0 : t.recv[m].volume();
    t.send_displ[m] = static_cast<int>(so);
    t.recv_displ[m] = static_cast<int>(ro);
    t.send_count[m] = static_cast<int>(sv);
    t.recv_count[m] = static_cast<int>(rv);
    so += sv;
    ro += rv;
  }
  if (so > INT_MAX || ro > INT_MAX)
    throw InputError(strprintf("an FFT of %dx%dx%d cells moves more than 2^31 - 1 elements per rank in one "
                               "transpose: use more ranks",
                               n[0], n[1], n[2]));
  t.send_total = so;
  t.recv_total = ro;
  t.send_count_mpi = t.send_count;
  t.recv_count_mpi = t.recv_count;
  t.send_count_mpi[self] = t.recv_count_mpi[self] = 0;
}

// Axis orders, fastest first: a field's brick and the x stage (x, y, z), the y stage (y, x, z), the
// z stage (z, x, y).
constexpr Index3 kOrder[3] = {{0, 1, 2}, {1, 0, 2}, {2, 0, 1}};

// `v` restricted to box `b` and permuted to `order`: element (p, q, r) of the result is the cell
// whose coordinate along order[0] is b.lo + p, and so on; `p` receives the permuted extent.
template <class E>
StridedView<E> permuted(const StridedView<E>& v, const Box& b, const Index3& order, Box& p) {
  E* corner = v.data + (b.lo[0] - v.lo0) * v.s0 + (b.lo[1] - v.lo1) * v.s1 + (b.lo[2] - v.lo2) * v.s2;
  const std::int64_t s[3] = {v.s0, v.s1, v.s2};
  p = Box(0, 0, 0, b.size(order[0]), b.size(order[1]), b.size(order[2]));
  return StridedView<E>{corner, 0, 0, 0, s[order[0]], s[order[1]], s[order[2]]};
}
}  // namespace

template <class T>
void FftPlan<T>::make_transposes(const CartesianDecomposition& bricks) {
  const int nranks = comm_.size();
  // Bricks to x-pencils, over the whole communicator. The x-pencils of the input side hold N0 cells
  // along x (real values, or complex of a complex-to-complex transform).
  std::vector<Box> bricks_of(nranks), xin_of(nranks);
  auto xin = [&](int p1, int p2) {
    Box b = stage_box(0, p1, p2, grid_, n_, m0_);
    b.hi[0] = n_[0];
    return b;
  };
  for (int r = 0; r < nranks; ++r) {
    bricks_of[r] = bricks.box_of(r);
    xin_of[r] = xin(r % grid_.p1, r / grid_.p1);
  }
  fill_transpose(to_pencils_, comm_.raw(), comm_.rank(), brick_, xin(p1_index_, p2_index_), bricks_of, xin_of, n_);
  // x to y within the row (members differ in p1), y to z within the column (members differ in p2).
  std::vector<Box> a(grid_.p1), b(grid_.p1);
  for (int m = 0; m < grid_.p1; ++m) {
    a[m] = stage_box(0, m, p2_index_, grid_, n_, m0_);
    b[m] = stage_box(1, m, p2_index_, grid_, n_, m0_);
  }
  fill_transpose(x_to_y_, row_, p1_index_, stage_[0].box, stage_[1].box, a, b, n_);
  x_to_y_.src_order = kOrder[0];
  x_to_y_.dst_order = kOrder[1];
  if (last_stage() == 2) {
    std::vector<Box> c(grid_.p2), d(grid_.p2);
    for (int m = 0; m < grid_.p2; ++m) {
      c[m] = stage_box(1, p1_index_, m, grid_, n_, m0_);
      d[m] = stage_box(2, p1_index_, m, grid_, n_, m0_);
    }
    fill_transpose(y_to_z_, col_, p2_index_, stage_[1].box, stage_[2].box, c, d, n_);
    y_to_z_.src_order = kOrder[1];
    y_to_z_.dst_order = kOrder[2];
  }
}

// ---- transforms ---------------------------------------------------------------------------------

template <class T>
bool FftPlan<T>::bricks_are_pencils() const {
  const Transpose& t = to_pencils_;
  for (std::size_t m = 0; m < t.send_count_mpi.size(); ++m)
    if (t.send_count_mpi[m] != 0 || t.recv_count_mpi[m] != 0) return false;
  const Box& self = t.send[static_cast<std::size_t>(t.self)];
  return self == brick_ && brick_.lo[0] == 0 && brick_.hi[0] == n_[0] && brick_.lo[1] == stage_[0].box.lo[1] &&
         brick_.hi[1] == stage_[0].box.hi[1] && brick_.lo[2] == stage_[0].box.lo[2] && brick_.hi[2] == stage_[0].box.hi[2];
}

template <class T>
template <class E>
void FftPlan<T>::transpose(const Transpose& t, bool reverse, const StridedView<E>& src, const StridedView<E>& dst,
                           const char* label_pack, const char* label_unpack) {
  const double t0 = wall_seconds();
  const auto& out_box = reverse ? t.recv : t.send;
  const auto& out_count = reverse ? t.recv_count_mpi : t.send_count_mpi;
  const auto& out_displ = reverse ? t.recv_displ : t.send_displ;
  // Messages are laid out in the destination's order: the pack transposes, the unpack copies rows.
  const Index3 order = reverse ? t.src_order : t.dst_order;
  E* sbuf = reinterpret_cast<E*>(send_.data());
  const int members = static_cast<int>(out_box.size());
  Box p;
  for (int m = 0; m < members; ++m)
    if (out_count[m] > 0) {
      const StridedView<E> v = permuted(src, out_box[m], order, p);
      CUMULUS_KERNEL(exec_, fft_kernels, pack<E>)(exec_, label_pack, v, p, sbuf + out_displ[m]);
    }
  // This rank's own part: one copy, no message.
  if (!out_box[t.self].empty()) {
    const StridedView<E> from = permuted(src, out_box[t.self], order, p);
    const StridedView<E> to = permuted(dst, out_box[t.self], order, p);
    CUMULUS_KERNEL(exec_, fft_kernels, copy<E>)(exec_, "fft.copy", from, to, p);
  }
  t_transposes_ += wall_seconds() - t0;
  exchange(t, reverse, dst, label_unpack);
}

template <class T>
template <class E>
void FftPlan<T>::exchange(const Transpose& t, bool reverse, const StridedView<E>& dst, const char* label_unpack) {
  const double t0 = wall_seconds();
  const auto& in_box = reverse ? t.send : t.recv;
  const auto& out_count = reverse ? t.recv_count_mpi : t.send_count_mpi;
  const auto& out_displ = reverse ? t.recv_displ : t.send_displ;
  const auto& in_count = reverse ? t.send_count_mpi : t.recv_count_mpi;
  const auto& in_displ = reverse ? t.send_displ : t.recv_displ;
  const std::int64_t out_total = reverse ? t.recv_total : t.send_total;
  const std::int64_t in_total = reverse ? t.send_total : t.recv_total;
  const Index3 order = reverse ? t.src_order : t.dst_order;
  E* sbuf = reinterpret_cast<E*>(send_.data());
  E* rbuf = reinterpret_cast<E*>(recv_.data());
  const int members = static_cast<int>(in_box.size());
  Box p;
  if (members > 1) {
    const MPI_Datatype type = sizeof(E) == sizeof(T) ? real_type_ : complex_type_;
    void* s = staged_ ? send_host_ : static_cast<void*>(sbuf);
    void* r = staged_ ? recv_host_ : static_cast<void*>(rbuf);
    if (staged_) memory::copy_async(exec_, Backend::host, s, exec_.backend(), sbuf, out_total * sizeof(E));
    exec_.synchronize();  // packed data must be complete before MPI reads it
    mpi_check(MPI_Alltoallv(s, out_count.data(), out_displ.data(), type, r, in_count.data(), in_displ.data(), type,
                            t.comm),
              "MPI_Alltoallv (FFT transpose)");
    if (staged_) memory::copy_async(exec_, exec_.backend(), rbuf, Backend::host, r, in_total * sizeof(E));
    for (int m = 0; m < members; ++m)
      if (in_count[m] > 0) {
        const StridedView<E> v = permuted(dst, in_box[m], order, p);
        CUMULUS_KERNEL(exec_, fft_kernels, unpack<E>)(exec_, label_unpack, v, p, rbuf + in_displ[m]);
      }
  }
  t_transposes_ += wall_seconds() - t0;
}

template <class T>
StridedView<typename FftPlan<T>::Complex> FftPlan<T>::stage_view(int s, Complex* data) const {
  const Stage& st = stage_[s];
  return StridedView<Complex>{data, st.box.lo[0], st.box.lo[1], st.box.lo[2], st.stride[0], st.stride[1], st.stride[2]};
}

template <class T>
StridedView<T> FftPlan<T>::real_view(T* data) const {
  const Box& b = stage_[0].box;
  return StridedView<T>{data, 0, b.lo[1], b.lo[2], 1, n_[0], static_cast<std::int64_t>(n_[0]) * b.size(1)};
}

template <class T>
StridedView<typename FftPlan<T>::Complex> FftPlan<T>::spectral_view(const Buffer<Complex>& b) const {
  return stage_view(last_stage(), b.data());
}

template <class T>
std::size_t FftPlan<T>::spectral_buffer_size() const {
  const Stage& st = stage_[last_stage()];
  return static_cast<std::size_t>(st.padded_lines * st.box.size(st.axis));
}

template <class T>
Buffer<typename FftPlan<T>::Complex> FftPlan<T>::make_spectral_buffer() const {
  Buffer<Complex> b(exec_.backend(), spectral_buffer_size(), "fft.spectrum");
  if (exec_.is_cuda()) b.from_host(exec_, std::vector<Complex>(b.size(), Complex{0, 0}));
  return b;
}

template <class T>
void FftPlan<T>::check_spectral(const Buffer<Complex>& b, const char* what) const {
  if (b.size() < spectral_buffer_size() || b.space() != exec_.backend())
    throw Error(strprintf("FftPlan::%s: the spectral buffer holds %zu elements in %s memory, the plan needs %zu in %s "
                          "memory (make_spectral_buffer)",
                          what, b.size(), to_string(b.space()), spectral_buffer_size(), to_string(exec_.backend())));
}

namespace {
template <class E>
StridedView<E> brick_view(const View<E>& v) {
  return StridedView<E>{v.data, v.lo0, v.lo1, v.lo2, 1, v.sj, v.sk};
}
}  // namespace

template <class T>
template <class E>
void FftPlan<T>::forward_impl(const StridedView<E>& in) {
  // Bricks to x-pencils, x-lines (a -> b), x to y, y-lines, [y to z, z-lines]; the last stage's
  // lines are written to the caller's spectrum by the caller of this function.
  E* a_in = reinterpret_cast<E*>(work_a_.data());
  const Stage& x = stage_[0];
  const StridedView<E> xin{a_in, 0, x.box.lo[1], x.box.lo[2], 1, n_[0], static_cast<std::int64_t>(n_[0]) * x.box.size(1)};
  if (fused()) {
    if (in_place_ && in.s0 == 1) {
      // The bricks are the x-pencils: the x-lines read them in place (no copy to the pencils).
      const std::int64_t strides[3] = {1, in.s1, in.s2};
      lines_into_transpose(0, true, &in(0, stage_[0].box.lo[1], stage_[0].box.lo[2]), x_to_y_, false,
                           stage_view(1, work_b_.data()), strides);
    } else {
      transpose(to_pencils_, false, in, xin, "fft.pack", "fft.unpack");
      lines_into_transpose(0, true, work_a_.data(), x_to_y_, false, stage_view(1, work_b_.data()));
    }
    exchange(x_to_y_, false, stage_view(1, work_b_.data()), "fft.unpack");
    lines_into_transpose(1, true, work_b_.data(), y_to_z_, false, stage_view(2, work_a_.data()));
    exchange(y_to_z_, false, stage_view(2, work_a_.data()), "fft.unpack");
    return;
  }
  transpose(to_pencils_, false, in, xin, "fft.pack", "fft.unpack");
  lines(0, true, work_a_.data(), work_b_.data());
  transpose(x_to_y_, false, stage_view(0, work_b_.data()), stage_view(1, work_a_.data()), "fft.pack", "fft.unpack");
  if (last_stage() == 2) {
    lines(1, true, work_a_.data(), work_b_.data());
    transpose(y_to_z_, false, stage_view(1, work_b_.data()), stage_view(2, work_a_.data()), "fft.pack", "fft.unpack");
  }
}

template <class T>
template <class E>
void FftPlan<T>::backward_impl(const StridedView<E>& out) {
  // The caller has transformed the last stage's lines into work_b (fused: has scattered them into
  // the y stage in work_b and exchanged them).
  if (fused()) {
    lines_into_transpose(1, false, work_b_.data(), x_to_y_, true, stage_view(0, work_a_.data()));
    exchange(x_to_y_, true, stage_view(0, work_a_.data()), "fft.unpack");
  } else {
    if (last_stage() == 2) {
      transpose(y_to_z_, true, stage_view(2, work_b_.data()), stage_view(1, work_a_.data()), "fft.pack", "fft.unpack");
      lines(1, false, work_a_.data(), work_b_.data());
    }
    transpose(x_to_y_, true, stage_view(1, work_b_.data()), stage_view(0, work_a_.data()), "fft.pack", "fft.unpack");
  }
  if (fused() && in_place_ && out.s0 == 1) {
    // The bricks are the x-pencils: the x-lines are written into them (no copy from the pencils).
    lines_to_bricks(out);
    return;
  }
  lines(0, false, work_a_.data(), work_b_.data());
  E* b_out = reinterpret_cast<E*>(work_b_.data());
  const Stage& x = stage_[0];
  const StridedView<E> xout{b_out, 0, x.box.lo[1], x.box.lo[2], 1, n_[0], static_cast<std::int64_t>(n_[0]) * x.box.size(1)};
  transpose(to_pencils_, true, xout, out, "fft.pack", "fft.unpack");
}

template <class T>
void FftPlan<T>::forward(const View<T>& in, Buffer<Complex>& out) {
  if (kind_ != FftKind::real_to_complex) throw Error("FftPlan::forward: a real input to a complex-to-complex plan");
  check_spectral(out, "forward");
  if (slab_) {
    slab_forward(brick_view(in), out.data());
    return;
  }
  forward_impl(brick_view(in));
  lines(last_stage(), true, work_a_.data(), out.data());
}

template <class T>
void FftPlan<T>::forward(const View<Complex>& in, Buffer<Complex>& out) {
  if (kind_ != FftKind::complex_to_complex) throw Error("FftPlan::forward: a complex input to a real-to-complex plan");
  check_spectral(out, "forward");
  if (slab_) {
    slab_forward(brick_view(in), out.data());
    return;
  }
  forward_impl(brick_view(in));
  lines(last_stage(), true, work_a_.data(), out.data());
}

template <class T>
void FftPlan<T>::backward(const Buffer<Complex>& in, const View<T>& out) {
  if (kind_ != FftKind::real_to_complex) throw Error("FftPlan::backward: a real output from a complex-to-complex plan");
  check_spectral(in, "backward");
  if (slab_) {
    slab_backward(in.data(), brick_view(out));
    return;
  }
  if (fused()) {
    lines_into_transpose(2, false, in.data(), y_to_z_, true, stage_view(1, work_b_.data()));
    exchange(y_to_z_, true, stage_view(1, work_b_.data()), "fft.unpack");
  } else {
    lines(last_stage(), false, in.data(), work_b_.data());
  }
  backward_impl(brick_view(out));
}

template <class T>
void FftPlan<T>::backward(const Buffer<Complex>& in, const View<Complex>& out) {
  if (kind_ != FftKind::complex_to_complex) throw Error("FftPlan::backward: a complex output from a real-to-complex plan");
  check_spectral(in, "backward");
  if (slab_) {
    slab_backward(in.data(), brick_view(out));
    return;
  }
  if (fused()) {
    lines_into_transpose(2, false, in.data(), y_to_z_, true, stage_view(1, work_b_.data()));
    exchange(y_to_z_, true, stage_view(1, work_b_.data()), "fft.unpack");
  } else {
    lines(last_stage(), false, in.data(), work_b_.data());
  }
  backward_impl(brick_view(out));
}

// ---- description, gathering ---------------------------------------------------------------------

template <class T>
std::int64_t FftPlan<T>::bytes_sent_per_transform() const {
  std::int64_t bytes = 0;
  const int me[3] = {comm_.rank(), p1_index_, p2_index_};
  const Transpose* ts[3] = {&to_pencils_, &x_to_y_, &y_to_z_};
  for (int n = 0; n < 3; ++n) {
    const Transpose& t = *ts[n];
    const std::size_t esize = (n == 0 && kind_ == FftKind::real_to_complex) ? sizeof(T) : sizeof(Complex);
    for (std::size_t m = 0; m < t.send_count.size(); ++m)
      if (static_cast<int>(m) != me[n]) bytes += static_cast<std::int64_t>(t.send_count[m]) * static_cast<std::int64_t>(esize);
  }
  return bytes;
}

template <class T>
std::int64_t FftPlan<T>::bytes_transposed_per_transform() const {
  const std::size_t first = kind_ == FftKind::real_to_complex ? sizeof(T) : sizeof(Complex);
  return to_pencils_.send_total * static_cast<std::int64_t>(first) +
         (x_to_y_.send_total + y_to_z_.send_total) * static_cast<std::int64_t>(sizeof(Complex));
}

template <class T>
std::string FftPlan<T>::describe() const {
  const char* k = kind_ == FftKind::real_to_complex ? "real-to-complex" : "complex-to-complex";
  std::string shape;
  if (n_[2] == 1)
    shape = strprintf("%d ranks along y (x-pencils), then along kx (y-pencils: the spectrum)", grid_.p1);
  else if (grid_.p1 == 1 || grid_.p2 == 1)
    shape = comm_.size() == 1 ? std::string("one rank: the transposes are local copies")
                              : strprintf("slabs: %d x %d process grid, one transpose %s", grid_.p1, grid_.p2,
                                          shared_memory_transpose() ? "through this node's shared memory (no MPI messages)"
                                                                    : "through MPI");
  else
    shape = strprintf("pencils: %d x %d process grid (x-lines split y by %d and z by %d; the spectrum in z-pencils)",
                      grid_.p1, grid_.p2, grid_.p1, grid_.p2);
  return strprintf("FFT %dx%dx%d %s, %s precision, on %d ranks (%s): %s; 1D lines in batches of %d (%s)%s", n_[0],
                   n_[1], n_[2], k, sizeof(T) == 8 ? "double" : "single", comm_.size(), to_string(exec_.backend()),
                   (shape + (slab_ ? "; x- and y-lines a z-plane at a time" : "")).c_str(), batch_,
                   exec_.is_cuda() ? "cuFFT" : "FFTW_ESTIMATE",
                   staged_ ? "; MPI through pinned host buffers" : "");
}

template <class T>
std::vector<typename FftPlan<T>::Complex> FftPlan<T>::gather_spectrum(const Buffer<Complex>& b, int root) const {
  check_spectral(b, "gather_spectrum");
  const std::vector<Complex> local = b.to_host(exec_);
  const Box mine = spectral_box();
  const StridedView<const Complex> v{local.data(), mine.lo[0], mine.lo[1], mine.lo[2], stage_[last_stage()].stride[0],
                                     stage_[last_stage()].stride[1], stage_[last_stage()].stride[2]};
  std::vector<Complex> packed;
  packed.reserve(static_cast<std::size_t>(mine.volume()));
  for (int k = mine.lo[2]; k < mine.hi[2]; ++k)
    for (int j = mine.lo[1]; j < mine.hi[1]; ++j)
      for (int i = mine.lo[0]; i < mine.hi[0]; ++i) packed.push_back(v(i, j, k));
  const int nranks = comm_.size();
  std::vector<int> counts(nranks), displs(nranks);
  std::vector<Box> boxes(nranks);
  std::int64_t total = 0;
  for (int r = 0; r < nranks; ++r) {
    boxes[r] = stage_box(last_stage(), r % grid_.p1, r / grid_.p1, grid_, n_, m0_);
    counts[r] = static_cast<int>(boxes[r].volume());
    displs[r] = static_cast<int>(total);
    total += boxes[r].volume();
  }
  const bool am_root = comm_.rank() == root;
  std::vector<Complex> all(am_root ? static_cast<std::size_t>(total) : 0);
  mpi_check(MPI_Gatherv(packed.data(), static_cast<int>(packed.size()), complex_type_, all.data(), counts.data(),
                        displs.data(), complex_type_, root, comm_.raw()),
            "MPI_Gatherv (FFT spectrum)");
  if (!am_root) return {};
  const Box g = spectral_global_box();
  std::vector<Complex> out(static_cast<std::size_t>(g.volume()));
  for (int r = 0; r < nranks; ++r) {
    const Box& bx = boxes[r];
    std::size_t n = static_cast<std::size_t>(displs[r]);
    for (int k = bx.lo[2]; k < bx.hi[2]; ++k)
      for (int j = bx.lo[1]; j < bx.hi[1]; ++j)
        for (int i = bx.lo[0]; i < bx.hi[0]; ++i)
          out[(static_cast<std::size_t>(k) * g.size(1) + j) * g.size(0) + i] = all[n++];
  }
  return out;
}

template class FftPlan<double>;
template class FftPlan<float>;

}  // namespace cumulus
