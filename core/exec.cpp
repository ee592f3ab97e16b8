// Backend selection, device memory and kernel timing. Compiled by g++ in every build; the CUDA
// runtime API is plain C, so this file needs no nvcc, only the CUMULUS_HAVE_CUDA definition.
#include "core/exec.hpp"

#include <cstdlib>
#include <cstring>
#include <sys/mman.h>
#include <vector>

#include "core/memory.hpp"
#include "core/strings.hpp"
#include "core/timers.hpp"

#ifdef CUMULUS_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace cumulus {

const char* to_string(Backend b) { return b == Backend::cuda ? "cuda" : "host"; }

#ifdef CUMULUS_HAVE_CUDA
namespace {
void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(strprintf("CUDA error in %s: %s", what, cudaGetErrorString(e)));
}
}  // namespace
#endif

bool cuda_built() {
#ifdef CUMULUS_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

int cuda_device_count(std::string* why) {
#ifdef CUMULUS_HAVE_CUDA
  // Without a driver this returns cudaErrorInsufficientDriver and leaves n unwritten (PLATFORM.md).
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear the error: the process goes on, on the host
    if (why) *why = strprintf("%s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
    return 0;
  }
  if (why) *why = n == 0 ? "the CUDA runtime lists no device" : "";
  return n;
#else
  if (why) *why = "this binary was built without CUDA";
  return 0;
#endif
}

bool cuda_sync_launches() {
  static const bool on = [] {
    const char* v = std::getenv("CUMULUS_CUDA_SYNC");
    return v && *v && std::strcmp(v, "0") != 0;
  }();
  return on;
}

bool cuda_kernel_timers() {
  static const bool on = [] {
    const char* v = std::getenv("CUMULUS_KERNEL_TIMERS");
    return !(v && std::strcmp(v, "0") == 0);
  }();
  return on;
}

#ifdef CUMULUS_HAVE_CUDA
namespace {
// The label of the last kernel launched, copied (the label's owner may be gone by the time an
// error surfaces at a synchronisation). A fixed buffer: no allocation per launch.
char last_kernel[96] = "";
void remember_kernel(const char* label) {
  std::strncpy(last_kernel, label, sizeof(last_kernel) - 1);
  last_kernel[sizeof(last_kernel) - 1] = '\0';
}
}  // namespace
#endif

std::string cuda_device_name(int device) {
#ifdef CUMULUS_HAVE_CUDA
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, device) == cudaSuccess) return p.name;
#endif
  (void)device;
  return "?";
}

double cuda_device_bytes(int device) {
#ifdef CUMULUS_HAVE_CUDA
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, device) == cudaSuccess) return static_cast<double>(p.totalGlobalMem);
  cudaGetLastError();
#endif
  (void)device;
  return 0;
}

void Exec::synchronize() const {
#ifdef CUMULUS_HAVE_CUDA
  if (!is_cuda()) return;
  const cudaError_t e = static_cast<cudaError_t>(detail::wait_for_stream(stream_));
  if (e != cudaSuccess)
    throw Error(strprintf("CUDA error at a synchronisation: %s (%s); the last kernel queued was '%s' (an "
                          "earlier one may have failed: run with CUMULUS_CUDA_SYNC=1 to name it)",
                          cudaGetErrorString(e), cudaGetErrorName(e), last_kernel[0] ? last_kernel : "none"));
#endif
}

Exec select_backend(const std::string& request, int local_rank, std::string* why) {
  std::string no_device;
  const int devices = cuda_device_count(&no_device);
  auto use_host = [&](const std::string& reason) {
    if (why) *why = reason;
    return Exec::host();
  };
  if (request == "host") return use_host("host backend requested");
  if (request != "auto" && request != "cuda")
    throw InputError("backend must be \"auto\", \"cuda\" or \"host\", got \"" + request + "\"");
  if (!cuda_built()) {
    if (request == "cuda")
      throw InputError("backend \"cuda\" requested, but this binary was built without CUDA "
                       "(rebuild with -DCUMULUS_CUDA=ON, or use backend = \"host\")");
    return use_host("auto: host backend (this binary was built without CUDA)");
  }
  if (devices == 0) {
    if (request == "cuda")
      throw InputError("backend \"cuda\" requested, but no CUDA device is visible to this process: " + no_device +
                       " (check the driver and CUDA_VISIBLE_DEVICES, or use backend = \"host\")");
    return use_host("auto: host backend (no CUDA device visible: " + no_device + ")");
  }
#ifdef CUMULUS_HAVE_CUDA
  const int device = local_rank % devices;
  cuda_check(cudaSetDevice(device), "cudaSetDevice");
  // Reductions take their scratch from the device's stream-ordered pool (exec.hpp): keep what the
  // pool has reserved instead of returning it to the driver at every synchronisation.
  cudaMemPool_t pool = nullptr;
  if (cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess) {
    std::uint64_t keep = UINT64_MAX;
    cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
  }
  cudaStream_t s = nullptr;
  cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  if (why)
    *why = strprintf("%s: CUDA device %d of %d (%s), chosen by node-local rank %d",
                     request == "auto" ? "auto" : "cuda requested", device, devices,
                     cuda_device_name(device).c_str(), local_rank);
  return Exec::cuda(device, s);
#else
  (void)local_rank;
  return use_host("host");
#endif
}

double device_memory_used(const Exec& exec) {
#ifdef CUMULUS_HAVE_CUDA
  if (exec.is_cuda()) {
    std::size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) == cudaSuccess) return static_cast<double>(total - free);
  }
#endif
  (void)exec;
  return 0;
}

void release_backend(Exec& exec) {
  TimerRegistry::instance().flush();
#ifdef CUMULUS_HAVE_CUDA
  if (exec.is_cuda() && exec.stream()) cudaStreamDestroy(exec.stream());
#endif
  exec = Exec::host();
}

// ---- memory -----------------------------------------------------------------
namespace memory {

void* allocate(Backend where, std::size_t bytes, const char* what) {
  if (bytes == 0) return nullptr;
  const std::string for_what = what && *what ? strprintf(" for '%s'", what) : std::string();
  if (where == Backend::cuda) {
#ifdef CUMULUS_HAVE_CUDA
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, bytes);
    if (e != cudaSuccess) {
      cudaGetLastError();  // out of memory is not sticky: clear it so that it is reported here, once
      std::size_t free = 0, total = 0;
      const bool known = cudaMemGetInfo(&free, &total) == cudaSuccess;
      throw Error(strprintf("cannot allocate %.3g GB on the GPU%s: %s%s", bytes / 1e9, for_what.c_str(),
                            cudaGetErrorString(e),
                            known ? strprintf(" (%.3g GB of %.3g GB free)", free / 1e9, total / 1e9).c_str() : ""));
    }
    return p;
#else
    throw Error("device memory requested in a build without CUDA");
#endif
  }
  // Buffers of 2 MB and more start at a 2 MB boundary and are advised as transparent huge pages
  // (Debian's default THP mode is "madvise"): a strided pass over a large buffer (the FFT's z-lines
  // gathered from its messages, 128^3: 3-5 % faster on 2 ranks) then misses the TLB far less.
  constexpr std::size_t huge = std::size_t{2} << 20;
  const std::size_t align = bytes >= huge ? huge : 64, rounded = (bytes + 63) / 64 * 64;
  void* p = nullptr;
  if (posix_memalign(&p, align, rounded) != 0) p = nullptr;
  if (!p) throw Error(strprintf("cannot allocate %.3g GB of host memory%s", bytes / 1e9, for_what.c_str()));
  if (align == huge) madvise(p, rounded / 4096 * 4096, MADV_HUGEPAGE);  // advice only: its failure changes nothing
  // First touch by the threads that will use it (NUMA placement), and no uninitialised reads.
  auto* c = static_cast<unsigned char*>(p);
  const long pages = static_cast<long>((rounded + 4095) / 4096);
#pragma omp parallel for schedule(static) if (pages > 256)
  for (long pg = 0; pg < pages; ++pg) {
    const std::size_t off = static_cast<std::size_t>(pg) * 4096;
    std::memset(c + off, 0, std::min<std::size_t>(4096, rounded - off));
  }
  return p;
}

void release(Backend where, void* p) noexcept {
  if (!p) return;
#ifdef CUMULUS_HAVE_CUDA
  if (where == Backend::cuda) {
    cudaFree(p);
    return;
  }
#endif
  (void)where;
  std::free(p);
}

// Page-locked memory only helps device transfers: without a device (a CUDA build on a CPU node,
// or a host run that forces the staging path) ordinary host memory serves.
void* allocate_pinned(std::size_t bytes) {
  if (bytes == 0) return nullptr;
#ifdef CUMULUS_HAVE_CUDA
  if (cuda_device_count() > 0) {
    void* p = nullptr;
    cuda_check(cudaMallocHost(&p, bytes), "cudaMallocHost");
    return p;
  }
#endif
  return allocate(Backend::host, bytes);
}

void release_pinned(void* p) noexcept {
  if (!p) return;
#ifdef CUMULUS_HAVE_CUDA
  if (cuda_device_count() > 0) {
    cudaFreeHost(p);
    return;
  }
#endif
  release(Backend::host, p);
}

void copy_async(const Exec& ex, Backend dst_space, void* dst, Backend src_space, const void* src,
                std::size_t bytes) {
  if (bytes == 0) return;
  if (dst_space == Backend::host && src_space == Backend::host) {
    std::memcpy(dst, src, bytes);
    return;
  }
#ifdef CUMULUS_HAVE_CUDA
  cuda_check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, ex.stream()), "cudaMemcpyAsync");
#else
  (void)ex;
  throw Error("device copy requested in a build without CUDA");
#endif
}

// Device to device needs no wait: the copy is queued on ex's stream, so every later kernel and copy
// on it sees the result, and the host can see it only through a copy to the host, which waits. A
// wait there cost a step of molecular dynamics three device synchronisations (SETTLE's reference
// positions, a copy per axis) for nothing.
void copy(const Exec& ex, Backend dst_space, void* dst, Backend src_space, const void* src, std::size_t bytes) {
  copy_async(ex, dst_space, dst, src_space, src, bytes);
  if (dst_space == Backend::host || src_space == Backend::host) ex.synchronize();
}

}  // namespace memory

// ---- kernel timing ----------------------------------------------------------
namespace detail {
namespace {
struct HostMark {
  TimerStat* stat;
  double t0;
};
std::vector<HostMark> host_marks;
#ifdef CUMULUS_HAVE_CUDA
struct EventPair {
  TimerStat* stat;  // the label's entry (TimerRegistry::slot): no string per launch
  cudaEvent_t start, stop;
};
std::vector<EventPair> pending_events;
constexpr int kUntimed = -(1 << 30);  // a CUDA launch not timed (CUMULUS_KERNEL_TIMERS=0); pairs are -1 .. -4097
std::vector<cudaEvent_t> free_events;
cudaEvent_t take_event() {
  if (!free_events.empty()) {
    cudaEvent_t e = free_events.back();
    free_events.pop_back();
    return e;
  }
  cudaEvent_t e;
  cuda_check(cudaEventCreate(&e), "cudaEventCreate");
  return e;
}
#endif
}  // namespace

void flush_event_timers() {
#ifdef CUMULUS_HAVE_CUDA
  for (auto& p : pending_events) {
    float ms = 0;
    if (cudaEventSynchronize(p.stop) == cudaSuccess && cudaEventElapsedTime(&ms, p.start, p.stop) == cudaSuccess)
      TimerRegistry::add(p.stat, ms * 1e-3);
    free_events.push_back(p.start);
    free_events.push_back(p.stop);
  }
  pending_events.clear();
#endif
}

int kernel_timer_begin(const Exec& ex, const char* label) {
#ifdef CUMULUS_HAVE_CUDA
  if (ex.is_cuda()) {
    if (!cuda_kernel_timers()) return kUntimed;
    if (pending_events.size() > 4096) flush_event_timers();  // bound the pool
    EventPair p{TimerRegistry::instance().slot(label), take_event(), take_event()};
    cudaEventRecord(p.start, ex.stream());
    pending_events.push_back(p);
    return -static_cast<int>(pending_events.size());  // negative: an event pair
  }
#endif
  (void)ex;
  host_marks.push_back({TimerRegistry::instance().slot(label), wall_seconds()});
  return static_cast<int>(host_marks.size()) - 1;
}

void kernel_timer_end(const Exec& ex, int token) {
#ifdef CUMULUS_HAVE_CUDA
  if (token == kUntimed) return;
  if (token < 0) {
    cudaEventRecord(pending_events[static_cast<std::size_t>(-token - 1)].stop, ex.stream());
    return;
  }
#endif
  (void)ex;
  const HostMark m = host_marks[static_cast<std::size_t>(token)];
  host_marks.resize(static_cast<std::size_t>(token));
  TimerRegistry::add(m.stat, wall_seconds() - m.t0);
}

void throw_not_compiled_for_cuda(const char* label) {
  throw Error(strprintf("kernel '%s' was compiled without CUDA but launched on the CUDA backend "
                        "(its source must be listed in cumulus_kernel_sources)", label));
}

void check_cuda_launch(const Exec& ex, const char* label, const Box& box) {
#ifdef CUMULUS_HAVE_CUDA
  static TimerStat* const launches = TimerRegistry::instance().slot("cuda.launches");  // a count: no time
  TimerRegistry::add(launches, 0.0);
  remember_kernel(label);
  // cudaGetLastError, not cudaPeekAtLastError: peeking never clears, so one unchecked failure would
  // make every later launch throw and blame an innocent kernel.
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    throw Error(strprintf("CUDA kernel '%s' failed to launch on box %s: %s (%s)", label, box.str().c_str(),
                          cudaGetErrorString(e), cudaGetErrorName(e)));
  if (cuda_sync_launches()) {
    e = cudaStreamSynchronize(ex.stream());
    if (e != cudaSuccess)
      throw Error(strprintf("CUDA kernel '%s' failed on box %s: %s (%s)", label, box.str().c_str(),
                            cudaGetErrorString(e), cudaGetErrorName(e)));
  }
#else
  (void)ex, (void)label, (void)box;
#endif
}

#ifdef CUMULUS_HAVE_CUDA
int wait_for_stream(CUstream_st* stream) {
  static TimerStat* const waits = TimerRegistry::instance().slot("cuda.waits");
  const double t0 = wall_seconds();
  const cudaError_t e = cudaStreamSynchronize(stream);
  TimerRegistry::add(waits, wall_seconds() - t0);
  return static_cast<int>(e);
}

ReduceScratch reduce_scratch(std::size_t bytes, std::size_t result_bytes, const char* label, const Box& box) {
  // Kept for the life of the process (one device a process): freed at exit with everything else.
  static void* partial = nullptr;
  static void* result = nullptr;
  static std::size_t have = 0, have_result = 0;
  if (bytes > have) {
    if (partial) cudaFree(partial);  // waits for the device: no reduction still reads it
    partial = nullptr;
    have = 0;
    const cudaError_t e = cudaMalloc(&partial, bytes);
    if (e != cudaSuccess) {
      cudaGetLastError();  // an allocation failure is not sticky: clear it, report it once, here
      partial = nullptr;
      throw_cuda_library_error(label, box, strprintf("cannot allocate %zu bytes of reduction scratch on the GPU: %s", bytes,
                                                     cudaGetErrorString(e)).c_str());
    }
    have = bytes;
  }
  if (result_bytes > have_result) {
    if (result) cudaFreeHost(result);
    result = nullptr;
    have_result = 0;
    const std::size_t want = std::max<std::size_t>(result_bytes, 4096);
    const cudaError_t e = cudaMallocHost(&result, want);
    if (e != cudaSuccess) {
      cudaGetLastError();
      result = nullptr;
      throw_cuda_library_error(label, box, strprintf("cannot allocate %zu bytes of page-locked memory for a reduction's result: %s",
                                                     want, cudaGetErrorString(e)).c_str());
    }
    have_result = want;
  }
  return {partial, result};
}
#endif

void throw_cuda_library_error(const char* label, const Box& box, const char* what) {
  throw Error(strprintf("CUDA reduction '%s' on box %s failed: %s", label, box.str().c_str(), what));
}
}  // namespace detail

}  // namespace cumulus
