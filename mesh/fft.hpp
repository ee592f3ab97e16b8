#pragma once
// The distributed 3D (and 2D) FFT: a plan made once for a global grid N0 x N1 x N2 (2D: N2 = 1)
// over the ranks of a communicator, on the host (FFTW) or the GPU (cuFFT), double or single
// precision, real-to-complex / complex-to-real or complex-to-complex.
//
//   FftPlan<double> fft(decomp, comm, exec, FftKind::real_to_complex);
//   Buffer<FftComplex<double>> u_hat = fft.make_spectral_buffer();
//   fft.forward(u.view(), u_hat);                      // u: a Field on decomp.box_of(rank)
//   auto s = fft.spectral_view(u_hat);
//   const FftWavenumbers w = fft.wavenumbers();
//   for_each(exec, "poisson", fft.spectral_box(), [=] CUMULUS_HD (int i, int j, int k) { ... s(i, j, k) ... });
//   fft.backward(u_hat, u.view());                     // unnormalised: N0 N1 N2 times the input
//
// Input and output are each rank's brick of the CartesianDecomposition the fields use (any split,
// uneven included). The transform runs in pencils on a P1 x P2 process grid: x-lines (y split over
// P1, z over P2), then y-lines (kx over P1, z over P2), then z-lines (kx over P1, ky over P2); the
// spectrum stays in z-pencils (2D: y-pencils). Between stages MPI_Alltoallv in the row (P1) and
// column (P2) sub-communicators; pack and unpack are kernels on the backend. Every 1D transform
// runs on a contiguous line, in batches of a fixed number of lines (the last batch padded), with
// a plan that depends on the global sizes only: the spectrum has the same bits at any rank count
// and process grid. docs/fft.md has the layout, the normalisation and the figures.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/comm.hpp"
#include "core/memory.hpp"
#include "mesh/decomposition.hpp"
#include "mesh/fft_kernels.hpp"
#include "mesh/field.hpp"

namespace cumulus {

enum class FftKind { real_to_complex, complex_to_complex };

// The P1 x P2 process grid of the pencils (P1 splits y, then kx; P2 splits z, then ky). {0, 0}:
// the plan chooses (a slab, P1 = 1, when the sizes allow it; else the most even pencils).
struct FftProcessGrid {
  int p1 = 0, p2 = 0;
  bool operator==(const FftProcessGrid&) const = default;
};


template <class T>
class FftPlan {
 public:
  using Complex = FftComplex<T>;

  // For fields on `bricks` (its rank count must be comm.size()). `grid` forces the process grid;
  // `force_staging` sends every transpose as MPI messages through host buffers even where a faster
  // path exists (MPI reading the device's memory; on the host slab path, ranks of one node writing
  // each other's receive buffers), so that the portable path is tested anywhere. Throws InputError for a size
  // that is not positive, a grid with fewer cells along an axis than the process grid splits it
  // into, or one that does not fit the node's memory; every buffer and 1D plan is made here.
  FftPlan(const CartesianDecomposition& bricks, const Comm& comm, const Exec& exec, FftKind kind,
          FftProcessGrid grid = {}, bool force_staging = false);
  ~FftPlan();
  FftPlan(const FftPlan&) = delete;
  FftPlan& operator=(const FftPlan&) = delete;

  // Real-to-complex forward and complex-to-real backward (kind real_to_complex). `in`/`out` are
  // fields' views on this rank's brick (ghost layers allowed and untouched); the spectrum is a
  // buffer of spectral_buffer_size() elements on the backend. Backward leaves `in` unchanged.
  void forward(const View<T>& in, Buffer<Complex>& out);
  void backward(const Buffer<Complex>& in, const View<T>& out);
  // Complex-to-complex, both ways (kind complex_to_complex).
  void forward(const View<Complex>& in, Buffer<Complex>& out);
  void backward(const Buffer<Complex>& in, const View<Complex>& out);

  // Forward is e^{-2 pi i k.x/N}, backward e^{+2 pi i k.x/N}, neither scaled (as FFTW and cuFFT):
  // backward(forward(u)) = N0 N1 N2 u. normalisation() is 1 / (N0 N1 N2).
  double normalisation() const { return 1.0 / (static_cast<double>(n_[0]) * n_[1] * n_[2]); }

  // The spectral index space: [0, M0) x [0, N1) x [0, N2), M0 = N0 / 2 + 1 for real-to-complex,
  // N0 otherwise. This rank's cells of it, and a view that addresses them in a spectral buffer.
  Box spectral_global_box() const { return Box(0, 0, 0, m0_, n_[1], n_[2]); }
  Box spectral_box() const { return stage_[last_stage()].box; }
  StridedView<Complex> spectral_view(const Buffer<Complex>& b) const;
  FftWavenumbers wavenumbers() const { return FftWavenumbers{n_[0], n_[1], n_[2], kind_ == FftKind::real_to_complex}; }
  // Elements of a spectral buffer: the spectral box's cells and the padding of the last batch.
  std::size_t spectral_buffer_size() const;
  Buffer<Complex> make_spectral_buffer() const;

  // The whole spectrum on `root`, ordered (k, j, i) with i fastest over spectral_global_box();
  // empty elsewhere (tests, diagnostics).
  std::vector<Complex> gather_spectrum(const Buffer<Complex>& b, int root = 0) const;

  FftKind kind() const { return kind_; }
  const Index3& global_cells() const { return n_; }
  FftProcessGrid process_grid() const { return grid_; }
  bool slab() const { return n_[2] > 1 && (grid_.p1 == 1 || grid_.p2 == 1); }
  bool staged() const { return staged_; }
  // Whether the host slab path runs (fft_slab.cpp: x- and y-lines a z-plane at a time), and whether
  // its transpose goes through one node's shared memory (no MPI messages: see make_slab).
  bool plane_at_a_time() const { return slab_; }
  bool shared_memory_transpose() const { return shared_win_ != MPI_WIN_NULL; }
  int lines_per_batch() const { return batch_; }
  std::string describe() const;

  // Every process grid the sizes allow on `nranks` ranks, and the one the plan picks. Throws
  // InputError naming the sizes when there is none.
  static std::vector<FftProcessGrid> feasible_grids(const Index3& cells, FftKind kind, int nranks);
  static FftProcessGrid choose_grid(const Index3& cells, FftKind kind, int nranks);
  // Whether cuFFT can be loaded (it is opened at run time, not linked); `why` receives the reason.
  static bool cuda_fft_available(std::string* why = nullptr);

  // Wall time spent since creation in the transposes (pack, MPI, unpack) and in the 1D line
  // transforms, and the bytes this rank sends to other ranks per transform (benchmarks). On CUDA the
  // line transforms are queued and their time is counted where the next transpose waits.
  double seconds_transposes() const { return t_transposes_; }
  double seconds_lines() const { return t_lines_; }
  // Host: of seconds_lines(), the time inside FFTW's execute calls alone (the slowest thread's per
  // pass), so that the rest of a transform is the moving of data: gathers, scatters, exchanges.
  // 0 on CUDA.
  double seconds_line_compute() const { return t_compute_; }
  std::int64_t bytes_sent_per_transform() const;
  // Bytes this rank packs (and unpacks) per transform, its own share included: what the transposes
  // move through memory once each way.
  std::int64_t bytes_transposed_per_transform() const;

  // One pencil orientation: this rank's box in the stage's index space, the axis whose lines are
  // transformed (contiguous in memory), and how the lines are stored (public for the helpers in
  // fft.cpp).
  struct Stage {
    Box box;
    int axis = 0;
    std::int64_t lines = 0, padded_lines = 0;
    std::int64_t stride[3] = {0, 0, 0};  // in elements, of the stage's array
  };
  // One redistribution between two layouts over a communicator: per member, the box this rank sends
  // to it (forward) and the box it receives from it; the reverse swaps the roles.
  struct Transpose {
    MPI_Comm comm = MPI_COMM_NULL;
    std::vector<Box> send, recv;
    std::vector<int> send_count, send_displ, recv_count, recv_displ;  // in elements
    std::vector<int> send_count_mpi, recv_count_mpi;  // the same without this rank's own part (copied)
    std::int64_t send_total = 0, recv_total = 0;
    int self = 0;  // this rank's index among the members
    // Axis orders (fastest first) of the source and destination layouts of the forward direction.
    Index3 src_order{0, 1, 2}, dst_order{0, 1, 2};
  };

 private:
  int last_stage() const { return n_[2] > 1 ? 2 : 1; }
  void make_stages();
  void make_transposes(const CartesianDecomposition& bricks);
  void make_line_plans();
  void destroy_line_plans();
  // Lines per batch: fixed by the global sizes only (fft_lines.cpp).
  static int line_batch(const Exec& exec, const Index3& n);
  void check_memory() const;
  template <class E>
  void transpose(const Transpose& t, bool reverse, const StridedView<E>& src, const StridedView<E>& dst,
                 const char* label_pack, const char* label_unpack);
  // 1D transforms of stage s's lines, in batches, from `in` to `out` (both padded to whole batches).
  void lines(int s, bool forward, const void* in, void* out);
  // One batch on the host through plan p: batch_ lines at `pitch_in` / `pitch_out` bytes apart
  // (exactly a line apart for a batch plan; any aligned pitch for a one-line plan). A one-line plan
  // may run fewer lines (`count`). Returns the seconds spent in FFTW.
  double run_host_batch(int p, bool real_side, bool forward, unsigned char* in, std::size_t pitch_in, unsigned char* out,
                        std::size_t pitch_out, int count = -1) const;
  // Whether plan p runs one line at a time and every line `pitch` bytes apart from `first` is at
  // FFTW's SIMD alignment: it may then read (or write) them where they lie.
  bool host_lines_in_place(int p, const void* first, std::size_t pitch) const;
  // The pitch of lines of `bytes` in a batch's scratch for plan p: exactly a line for a batch plan,
  // the next 64-byte boundary for a one-line plan (each line at FFTW's alignment).
  std::size_t host_pitch(int p, std::size_t bytes) const { return host_single_[p] ? (bytes + 63) / 64 * 64 : bytes; }
  // Adds the slowest thread's compute seconds of a parallel pass (called by each thread once).
  void add_compute(double seconds);
  // Host, 3D: stage s's lines from `in` (the stage's storage; real x-pencils for an r2c forward)
  // transformed a batch at a time and scattered straight into transpose t's destinations (this
  // rank's own part into `dst`, the others' into the send buffer in the receiver's order), then
  // the exchange: one pass over memory where lines() and transpose() make two or three. A batch
  // is batch_ lines consecutive along the destination's contiguous axis, gathered into a
  // cache-resident buffer; the plan is the same, so every line has the same bits as in lines().
  // `in_strides`: the input's strides in elements when it is not the stage's storage (the caller's
  // brick, read in place by a forward transform whose bricks are its x-pencils); `in` then points
  // at the element at the stage box's lower corner.
  void lines_into_transpose(int s, bool forward, const void* in, const Transpose& t, bool reverse,
                            const StridedView<Complex>& dst, const std::int64_t* in_strides = nullptr);
  // Host, 3D, bricks that are the x-pencils: the backward x-lines from work_a written a batch at a
  // time into the caller's brick `out` (unit stride along x), with no copy through the pencils.
  template <class E>
  void lines_to_bricks(const StridedView<E>& out);
  // Whether the bricks are this rank's x-pencils (this rank alone: in_place_ is the collective answer).
  bool bricks_are_pencils() const;
  // The second half of transpose(): the exchange and the unpacking, the send buffer already packed
  // and this rank's own part already in `dst`.
  template <class E>
  void exchange(const Transpose& t, bool reverse, const StridedView<E>& dst, const char* label_unpack);
  bool fused() const { return !exec_.is_cuda() && last_stage() == 2; }
  // Host slab path (fft_slab.cpp): with whole x- and y-lines on every rank (P1 = 1) and the bricks
  // the x-pencils, the x- and y-lines a z-plane at a time in cache and straight into the one
  // transpose's messages, the z-lines straight from them: two passes over memory a direction.
  void make_slab(bool force_messages);
  // Where every member of the one transpose is on this node: its receive buffers in one MPI shared
  // window, each rank writing (forward) and reading (backward) its blocks in the others' directly.
  void make_shared_transpose();
  void shared_fence() const;  // every member's writes to the window visible to all (a barrier)
  void slab_enter();          // before a transform's first write: the others done reading (shared memory)
  template <class E>
  void slab_forward(const StridedView<E>& in, Complex* spectrum);
  template <class E>
  void slab_backward(const Complex* spectrum, const StridedView<E>& out);
  void slab_exchange(bool reverse);
  void end_slab_pass(double t0);  // a pass's compute and wall time to the counters
  // This OpenMP thread's scratch: a batch in and out, and its two planes of y-lines.
  struct SlabScratch {
    unsigned char *tin, *tout;
    Complex *p, *q;
  };
  SlabScratch slab_scratch() const;
  // Whether plan p (a one-line x plan) can read or write the rows of v where they lie: every row and
  // every plane's first row at FFTW's alignment.
  template <class E>
  bool rows_in_place(int p, const StridedView<E>& v, int z) const;
  // The block of the one transpose's messages for member m: this rank's own in the receive buffer;
  // in shared memory, the block in member m's receive buffer that this rank writes or reads.
  Complex* slab_block(int m) const;
  StridedView<Complex> stage_view(int s, Complex* data) const;
  StridedView<T> real_view(T* data) const;  // the x stage's real lines
  void check_spectral(const Buffer<Complex>& b, const char* what) const;
  template <class E>
  void forward_impl(const StridedView<E>& in);
  template <class E>
  void backward_impl(const StridedView<E>& out);

  Comm comm_;
  Exec exec_;
  FftKind kind_;
  Index3 n_;
  int m0_ = 0;  // spectral extent along x
  FftProcessGrid grid_;
  int p1_index_ = 0, p2_index_ = 0;  // this rank's place in the process grid
  MPI_Comm row_ = MPI_COMM_NULL, col_ = MPI_COMM_NULL;
  MPI_Datatype real_type_ = MPI_DATATYPE_NULL, complex_type_ = MPI_DATATYPE_NULL;
  int batch_ = 16;
  bool staged_ = false;
  Box brick_;
  std::array<Stage, 3> stage_;
  Transpose to_pencils_, x_to_y_, y_to_z_;
  Buffer<Complex> work_a_, work_b_;  // a stage's input and output lines
  Buffer<unsigned char> send_, recv_;
  void* send_host_ = nullptr;
  void* recv_host_ = nullptr;
  // 1D plans per stage and direction (fftw_plan / fftwf_plan, or cuFFT handles), opaque here so
  // that this header needs neither library.
  std::array<void*, 6> host_plans_{};
  // Whether a host plan transforms one line (run batch_ times per batch, each line at its own
  // aligned place) rather than a whole batch: see make_line_plans.
  std::array<bool, 6> host_single_{};
  std::array<int, 6> cuda_plans_{};
  bool cuda_plans_made_ = false;
  void* cuda_work_ = nullptr;  // cuFFT's work area, from the stream-ordered pool
  double t_transposes_ = 0, t_lines_ = 0, t_compute_ = 0, pass_compute_ = 0;
  // Host: per-thread scratch for the fused passes (two halves of scratch_slot_ bytes: a batch in, a batch out).
  Buffer<unsigned char> scratch_;
  std::size_t scratch_slot_ = 0;
  int scratch_threads_ = 1;
  // Whether every rank's brick is its x-pencils (decided collectively at set-up): the x-lines then
  // read and write the bricks in place.
  bool in_place_ = false;
  std::vector<StridedView<Complex>> to_views_;  // lines_into_transpose's destinations, sized once
  // The slab path: whether it is taken (decided alike on every rank), each thread's two planes of
  // y-lines, and per global z the offset of its cells in the messages (see make_slab).
  bool slab_ = false;
  Buffer<unsigned char> planes_;
  std::size_t plane_bytes_ = 0;
  std::vector<std::int64_t> z_base_;
  // The transpose's receive buffer (recv_, or this rank's segment of the shared window) and, in
  // shared memory, the window and per member the block this rank exchanges with it.
  Complex* slab_recv_ = nullptr;
  MPI_Win shared_win_ = MPI_WIN_NULL;
  std::vector<Complex*> peer_blocks_;
};

extern template class FftPlan<double>;
extern template class FftPlan<float>;

}  // namespace cumulus
