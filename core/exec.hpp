#pragma once
// Backends and kernel launch: for_each and reductions over index boxes. A kernel body is written
// once, as a lambda `[=] CUMULUS_HD (int i, int j, int k)`, and runs as a CUDA kernel or as an
// OpenMP loop; which one is decided at run time by the Exec it is launched on.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include <omp.h>

#include "core/box.hpp"
#include "core/error.hpp"
#include "core/exact_sum.hpp"
#include "core/macros.hpp"

#if CUMULUS_COMPILING_CUDA
#include <cuda_runtime.h>
#include <cub/block/block_reduce.cuh>
#endif

struct CUstream_st;  // cudaStream_t is CUstream_st*; named here so host-only code needs no CUDA header

namespace cumulus {

enum class Backend { host, cuda };
const char* to_string(Backend b);

using StreamHandle = CUstream_st*;

// Where kernels run: the backend, and on CUDA the device and stream.
class Exec {
 public:
  Exec() = default;  // host
  static Exec host() { return Exec(); }
  static Exec cuda(int device, StreamHandle stream) { return Exec(Backend::cuda, device, stream); }

  Backend backend() const { return backend_; }
  bool is_cuda() const { return backend_ == Backend::cuda; }
  int device() const { return device_; }
  StreamHandle stream() const { return stream_; }
  // Waits until every kernel and copy queued on this Exec has finished.
  void synchronize() const;

 private:
  Exec(Backend b, int device, StreamHandle s) : backend_(b), device_(device), stream_(s) {}
  Backend backend_ = Backend::host;
  int device_ = -1;
  StreamHandle stream_ = nullptr;
};

// Backends compiled into this binary, and CUDA devices visible to this process (0 when the
// driver or device is missing: never an error). `why`, when given, receives the CUDA runtime's
// answer when there are none ("no CUDA-capable device", "driver too old for this runtime", ...),
// so that a driver problem does not read as a machine without a GPU.
bool cuda_built();
int cuda_device_count(std::string* why = nullptr);
std::string cuda_device_name(int device);
// The memory of a CUDA device in bytes (0 without CUDA or when the runtime does not say).
double cuda_device_bytes(int device);

// Picks the backend for this rank. `request` is "auto", "cuda" or "host"; `local_rank` is the
// rank's index on its node (one rank per GPU: device = local_rank mod devices). `why` receives a
// sentence for the log. Throws InputError for "cuda" without a usable device.
Exec select_backend(const std::string& request, int local_rank, std::string* why);
void release_backend(Exec& exec);
// Bytes of device memory in use on exec's GPU (0 on the host backend).
double device_memory_used(const Exec& exec);

// Whether every CUDA launch is followed by a synchronisation and a check (environment variable
// CUMULUS_CUDA_SYNC=1, read once). Off by default: it serialises the host with the device. On, a
// kernel that faults is named with its box at once instead of surfacing as an error at the next
// synchronisation, which can only name the last kernel queued (scripts/gpu-check's first pass).
bool cuda_sync_launches();
// Whether kernels launched on CUDA are timed by a pair of CUDA events each (the timing table's
// kernel rows): yes unless CUMULUS_KERNEL_TIMERS=0 in the environment. Two event records a launch
// cost host time where a step is made of many small launches (an MD step of a small box): the
// switch measures that cost and spares it. Host kernels are timed either way (a clock read).
bool cuda_kernel_timers();

namespace detail {
// Kernel timing by label: on the host a wall clock, on CUDA a pair of events read back lazily,
// so that timing never forces a synchronisation inside the time loop.
int kernel_timer_begin(const Exec& ex, const char* label);
void kernel_timer_end(const Exec& ex, int token);
[[noreturn]] void throw_not_compiled_for_cuda(const char* label);
// After every launch: takes (and clears) the launch error, so that one failure is reported once,
// against the kernel that caused it; remembers the label for errors found later at a
// synchronisation; with cuda_sync_launches(), waits for the kernel and reports a fault with its box.
void check_cuda_launch(const Exec& ex, const char* label, const Box& box);
// An exception from inside a CUDA library call (Thrust/CUB's system_error, an allocation) turned
// into the project's error, naming the kernel: the run then ends as "failed" in status.json.
[[noreturn]] void throw_cuda_library_error(const char* label, const Box& box, const char* what);
// Waits for everything queued on `stream` (cudaStreamSynchronize), the wait timed under
// "cuda.waits" in the run's table: its count is the host's waits for the device, its time how long
// the host sat idle in them (much of a step: the device is the bottleneck; little: the host's
// launches are). Returns the CUDA error code (0: none). CUDA builds only.
int wait_for_stream(CUstream_st* stream);
// reduce's scratch: `bytes` of device memory for the partials and a page-locked host slot of
// `result_bytes` for the answer, both kept from call to call (grown when a call needs more). Every
// reduce waits for its answer before it returns, so one set serves them all in turn; allocating
// them per call (even from the stream-ordered pool) cost two runtime calls a reduction, and
// molecular dynamics reduces several times a step. The first call per size, or a failure, throws
// the project's error naming the kernel. (CUDA builds only.)
struct ReduceScratch {
  void* partial;
  void* result;
};
ReduceScratch reduce_scratch(std::size_t bytes, std::size_t result_bytes, const char* label, const Box& box);

// Calls part(sub) for consecutive sub-boxes of `box` of at most `max_cells` cells each: whole
// k-slabs when a k-plane fits, else runs of whole rows (j) within one plane. The device kernel
// then indexes a part with 32-bit arithmetic (a 64-bit division or remainder is a long emulated
// sequence on the GPU, two per cell). A single row longer than max_cells is refused.
template <class F>
void split_for_32bit_index(const char* label, const Box& box, std::int64_t max_cells, F&& part) {
  const std::int64_t row = box.size(0);
  if (row > max_cells)
    throw Error(std::string(label) + ": a box row of " + std::to_string(row) + " cells is longer than one launch indexes");
  const std::int64_t plane = row * box.size(1);
  if (plane <= max_cells) {
    const int slab = static_cast<int>(std::max<std::int64_t>(1, max_cells / plane));  // k-planes per part
    for (int k0 = box.lo[2]; k0 < box.hi[2]; k0 += slab) {
      Box b = box;
      b.lo[2] = k0;
      b.hi[2] = static_cast<int>(std::min<std::int64_t>(box.hi[2], std::int64_t{k0} + slab));
      part(b);
    }
    return;
  }
  const int rows = static_cast<int>(max_cells / row);  // j-rows per part, >= 1
  for (int k = box.lo[2]; k < box.hi[2]; ++k)
    for (int j0 = box.lo[1]; j0 < box.hi[1]; j0 += rows) {
      Box b = box;
      b.lo[1] = j0;
      b.hi[1] = static_cast<int>(std::min<std::int64_t>(box.hi[1], std::int64_t{j0} + rows));
      b.lo[2] = k;
      b.hi[2] = k + 1;
      part(b);
    }
}

template <class F>
struct KernelTimer {
  const Exec& ex;
  int token;
  KernelTimer(const Exec& e, const char* label) : ex(e), token(kernel_timer_begin(e, label)) {}
  ~KernelTimer() { kernel_timer_end(ex, token); }
};

#if CUMULUS_COMPILING_CUDA
// 32-bit index arithmetic: a 64-bit division or remainder is a long emulated sequence on the GPU,
// two per cell; for_each launches boxes of more than 2^30 cells in slabs along k instead.
template <class F>
__global__ void for_each_kernel(Box box, int n, F body) {
  const int ni = box.size(0), nj = box.size(1);
  const unsigned stride = blockDim.x * gridDim.x;
  for (unsigned idx = blockIdx.x * blockDim.x + threadIdx.x; idx < static_cast<unsigned>(n); idx += stride) {
    const int cell = static_cast<int>(idx);
    const int i = cell % ni;
    const int r = cell / ni;
    const int j = r % nj;
    const int k = r / nj;
    body(box.lo[0] + i, box.lo[1] + j, box.lo[2] + k);
  }
}

// reduce's kernels. Written here rather than taken from thrust::transform_reduce because of
// build time: Thrust compiles a reduction four times (32- and 64-bit sizes, single and multiple
// tiles) with the body inlined into each several times over (CUB's items per thread), so a heavy
// body such as SHAKE's cluster solve took ptxas 97 s in one file. Here the body is compiled once,
// in a grid-stride loop that is not unrolled; CUB's block reduction combines each block's threads.
// The grid is at most kReduceMaxBlocks blocks whatever the device, and the partials are combined
// in block order, so the result depends on the box alone (not on the GPU model).
constexpr int kReduceBlock = 256;
constexpr int kReduceMaxBlocks = 1024;

// Each block's fold of its cells into partial[blockIdx.x] (combined with what is there unless
// `first`: a box launched in several parts, see split_for_32bit_index).
template <class T, class Op, class F>
__global__ void __launch_bounds__(kReduceBlock) reduce_blocks_kernel(Box box, int n, T init, Op op, F body, T* partial,
                                                                     bool first) {
  using BlockReduce = cub::BlockReduce<T, kReduceBlock>;
  __shared__ typename BlockReduce::TempStorage temp;
  const int ni = box.size(0), nj = box.size(1);
  const unsigned stride = blockDim.x * gridDim.x;
  T mine = init;
#pragma unroll 1
  for (unsigned idx = blockIdx.x * blockDim.x + threadIdx.x; idx < static_cast<unsigned>(n); idx += stride) {
    const int cell = static_cast<int>(idx);
    const int i = cell % ni;
    const int r = cell / ni;
    mine = op(mine, body(box.lo[0] + i, box.lo[1] + r % nj, box.lo[2] + r / nj));
  }
  const T b = BlockReduce(temp).Reduce(mine, op);
  if (threadIdx.x == 0) partial[blockIdx.x] = first ? b : op(partial[blockIdx.x], b);
}

// One block: partial[0, n) combined into *out.
template <class T, class Op>
__global__ void __launch_bounds__(kReduceBlock) reduce_partials_kernel(const T* partial, int n, T init, Op op, T* out) {
  using BlockReduce = cub::BlockReduce<T, kReduceBlock>;
  __shared__ typename BlockReduce::TempStorage temp;
  T mine = init;
  for (int b = static_cast<int>(threadIdx.x); b < n; b += kReduceBlock) mine = op(mine, partial[b]);
  const T r = BlockReduce(temp).Reduce(mine, op);
  if (threadIdx.x == 0) *out = r;
}

#endif
}  // namespace detail

// The host loop of for_each and for_each_multiarch, written once. A macro, not a function: the
// OpenMP region must sit in the function that carries the ISA clones for it to be cloned too.
// Small boxes (halo faces) run serially: a parallel region costs more than they do. The body is
// copied per thread: the compiler then knows the captured views and constants do not change inside
// the loop, and keeps them in registers. The threads share out the rows (j, k); a box of one row
// (a loop over atoms, Box(0, 0, 0, n, 1, 1)) is shared out along i instead: over rows, one thread
// would take it all (the water benchmark's PME forces and SETTLE ran on one of two threads).
#define CUMULUS_DETAIL_HOST_LOOP(box_, body_) CUMULUS_DETAIL_HOST_LOOP_W(box_, body_, 1)
#define CUMULUS_DETAIL_HOST_LOOP_W(box_, body_, weight_)                                               \
  {                                                                                                 \
    const int i0_ = (box_).lo[0], i1_ = (box_).hi[0], j0_ = (box_).lo[1], j1_ = (box_).hi[1];        \
    const int k0_ = (box_).lo[2], k1_ = (box_).hi[2];                                               \
    const bool parallel_ = (box_).volume() * (weight_) > 32768;                                     \
    if (parallel_ && j1_ - j0_ == 1 && k1_ - k0_ == 1) {                                            \
      _Pragma("omp parallel") {                                                                     \
        const auto local_ = (body_);                                                                \
        _Pragma("omp for simd schedule(simd: static)") for (int i = i0_; i < i1_; ++i) local_(i, j0_, k0_); \
      }                                                                                             \
    } else {                                                                                        \
      _Pragma("omp parallel if (parallel_)") {                                                      \
        const auto local_ = (body_);                                                                \
        _Pragma("omp for collapse(2) schedule(static)") for (int k = k0_; k < k1_; ++k) for (int j = j0_; j < j1_; ++j) \
            _Pragma("omp simd") for (int i = i0_; i < i1_; ++i) local_(i, j, k);                     \
      }                                                                                             \
    }                                                                                               \
  }

// Runs body(i, j, k) for every cell of `box`, in no particular order. `label` names the kernel in
// the timing table. Asynchronous on CUDA (ordered on the Exec's stream). On the host, boxes of up
// to 32768 cells run on one thread (a parallel region costs more than they do); `weight` counts
// the elements a body moves per cell where that is many (halo copies of several components), so
// that such boxes still spread over the threads.
template <class F>
void for_each(const Exec& ex, const char* label, const Box& box, F body, std::int64_t weight = 1) {
  if (box.empty()) return;
  detail::KernelTimer<F> timer(ex, label);
  if (ex.is_cuda()) {
#if CUMULUS_COMPILING_CUDA
    constexpr int block = 256;
    detail::split_for_32bit_index(label, box, std::int64_t{1} << 30, [&](const Box& part) {
      const std::int64_t n = part.volume();
      const std::int64_t blocks = std::min<std::int64_t>((n + block - 1) / block, 1 << 20);
      detail::for_each_kernel<<<static_cast<unsigned>(blocks), block, 0, ex.stream()>>>(part, static_cast<int>(n), body);
      detail::check_cuda_launch(ex, label, part);
    });
    return;
#else
    detail::throw_not_compiled_for_cuda(label);
#endif
  }
  CUMULUS_DETAIL_HOST_LOOP_W(box, body, weight)
}

namespace detail {
// The host loop of for_each_multiarch, compiled for AVX-512, AVX2 and the baseline and chosen at
// run time (GCC function multi-versioning; the OpenMP region is cloned with it, and a body marked
// CUMULUS_INLINE is inlined into each clone). Portable binaries then run bandwidth-bound kernels
// with wide vectors where the CPU has them. The same bits on every version: no contraction
// (-ffp-contract=off) and no reassociation, so lanes compute what scalar code would.
template <class F>
#if !defined(__CUDACC__) && defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void host_loop_multiarch(const Box& box, const F& body) {
  CUMULUS_DETAIL_HOST_LOOP(box, body)
}
}  // namespace detail

// for_each for the hot, bandwidth-bound kernels: on the host, the loop above (ISA clones); on
// CUDA, for_each itself.
template <class F>
void for_each_multiarch(const Exec& ex, const char* label, const Box& box, F body) {
  if (box.empty()) return;
  if (ex.is_cuda()) {
    for_each(ex, label, box, body);
    return;
  }
  detail::KernelTimer<F> timer(ex, label);
  detail::host_loop_multiarch(box, body);
}

// Reduction operators usable on both backends.
struct SumOp {
  template <class T>
  CUMULUS_HD T operator()(T a, T b) const { return a + b; }
};
struct MinOp {
  template <class T>
  CUMULUS_HD T operator()(T a, T b) const { return b < a ? b : a; }
};
struct MaxOp {
  template <class T>
  CUMULUS_HD T operator()(T a, T b) const { return a < b ? b : a; }
};

namespace detail {
// Whether combining T's with Op gives the same bits in any grouping and order: integers (sum,
// minimum, maximum) and ExactSum's sums. (A double's minimum is not: NaN and -0 depend on order.)
template <class T, class Op>
struct OrderFree : std::bool_constant<std::is_integral_v<T>> {};
template <>
struct OrderFree<ExactSum, SumOp> : std::true_type {};
}  // namespace detail

namespace detail {
#if CUMULUS_COMPILING_CUDA
// reduce's kernels on CUDA, queued on ex's stream: the result is stored at `out` (device memory;
// init for an empty box).
template <class T, class Op, class F>
void reduce_on_device(const Exec& ex, const char* label, const Box& box, T init, Op op, F body, T* partial, T* out) {
  int blocks0 = 0;  // the first part is the largest (split_for_32bit_index): its grid is the widest
  if (!box.empty())
    split_for_32bit_index(label, box, std::int64_t{1} << 30, [&](const Box& part) {
      const std::int64_t n = part.volume();
      int blocks = static_cast<int>(std::min<std::int64_t>((n + kReduceBlock - 1) / kReduceBlock, kReduceMaxBlocks));
      const bool first = blocks0 == 0;
      if (first) blocks0 = blocks;
      blocks = std::min(blocks, blocks0);
      reduce_blocks_kernel<<<static_cast<unsigned>(blocks), kReduceBlock, 0, ex.stream()>>>(part, static_cast<int>(n), init, op,
                                                                                            body, partial, first);
      check_cuda_launch(ex, label, part);
    });
  reduce_partials_kernel<<<1, kReduceBlock, 0, ex.stream()>>>(partial, blocks0, init, op, out);
  check_cuda_launch(ex, label, box);
}
#endif
}  // namespace detail

// Combines body(i, j, k) over `box` with `op`. `init` must be op's identity (0 for a sum, the
// largest value for a minimum): every host thread and GPU thread starts from it. Synchronous:
// returns the value on the host. The result is deterministic: on the host for a given thread
// count, on CUDA for a given box.
template <class T, class Op, class F>
T reduce(const Exec& ex, const char* label, const Box& box, T init, Op op, F body) {
  if (box.empty()) return init;
  detail::KernelTimer<F> timer(ex, label);
  if (ex.is_cuda()) {
#if CUMULUS_COMPILING_CUDA
    const detail::ReduceScratch scratch =
        detail::reduce_scratch((detail::kReduceMaxBlocks + 1) * sizeof(T), sizeof(T), label, box);
    T* partial = static_cast<T*>(scratch.partial);
    detail::reduce_on_device(ex, label, box, init, op, body, partial, partial + detail::kReduceMaxBlocks);
    cudaError_t e =
        cudaMemcpyAsync(scratch.result, partial + detail::kReduceMaxBlocks, sizeof(T), cudaMemcpyDeviceToHost, ex.stream());
    if (e == cudaSuccess) e = static_cast<cudaError_t>(detail::wait_for_stream(ex.stream()));
    if (e != cudaSuccess) detail::throw_cuda_library_error(label, box, cudaGetErrorString(e));
    T r = init;
    std::memcpy(static_cast<void*>(&r), scratch.result, sizeof(T));
    return r;
#else
    detail::throw_not_compiled_for_cuda(label);
#endif
  }
  const int j0 = box.lo[1], nj = box.size(1), k0 = box.lo[2];
  const std::int64_t rows = static_cast<std::int64_t>(nj) * box.size(2);
  // One partial per thread, combined in thread order: the same answer on every call.
  std::vector<T> partial(static_cast<std::size_t>(omp_get_max_threads()), init);
  // One row (a loop over atoms) shared out along i where the answer does not depend on how the
  // terms are grouped (integers, ExactSum): the same bits at any thread count. Other types keep
  // the row on one thread, as before (a double sum's bits depend on its grouping).
  if constexpr (detail::OrderFree<T, Op>::value) {
    if (rows == 1 && box.size(0) >= 1024) {
#pragma omp parallel
      {
        T mine = init;
#pragma omp for schedule(static)
        for (int i = box.lo[0]; i < box.hi[0]; ++i) mine = op(mine, body(i, j0, k0));
        partial[static_cast<std::size_t>(omp_get_thread_num())] = mine;
      }
      T result = init;
      for (const T& p : partial) result = op(result, p);
      return result;
    }
  }
#pragma omp parallel
  {
    T mine = init;
#pragma omp for schedule(static)
    for (std::int64_t r = 0; r < rows; ++r) {
      const int j = j0 + static_cast<int>(r % nj), k = k0 + static_cast<int>(r / nj);
      for (int i = box.lo[0]; i < box.hi[0]; ++i) mine = op(mine, body(i, j, k));
    }
    partial[static_cast<std::size_t>(omp_get_thread_num())] = mine;
  }
  T result = init;
  for (const T& p : partial) result = op(result, p);
  return result;
}

// reduce without the wait, for a check whose answer the host can take later, together with others
// in one read (a molecular dynamics step's: md/step_checks.hpp): the result is stored at `into`,
// ex's memory (device memory on CUDA), queued on ex's stream like a kernel (init for an empty box).
// With `into` null it is reduce, waiting, and returns the result; otherwise it returns init.
template <class T, class Op, class F>
T reduce_into(const Exec& ex, const char* label, const Box& box, T init, Op op, F body, T* into) {
  if (!into) return reduce(ex, label, box, init, op, body);
  if (ex.is_cuda()) {
#if CUMULUS_COMPILING_CUDA
    detail::KernelTimer<F> timer(ex, label);
    // The shared scratch is safe without a wait: a later reduction's kernels run after these on the
    // stream, and growing the scratch (cudaFree) waits for the device.
    const detail::ReduceScratch scratch =
        detail::reduce_scratch((detail::kReduceMaxBlocks + 1) * sizeof(T), sizeof(T), label, box);
    detail::reduce_on_device(ex, label, box, init, op, body, static_cast<T*>(scratch.partial), into);
#else
    detail::throw_not_compiled_for_cuda(label);
#endif
    return init;
  }
  *into = reduce(ex, label, box, init, op, body);
  return init;
}

}  // namespace cumulus
