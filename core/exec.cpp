// Backend selection, device memory and kernel timing. Compiled by g++ in every build; the CUDA
// runtime API is plain C, so this file needs no nvcc, only the CUMULUS_HAVE_CUDA definition.
#include "core/exec.hpp"

#include <cstdlib>
#include <cstring>
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

int cuda_device_count() {
#ifdef CUMULUS_HAVE_CUDA
  // Without a driver this returns cudaErrorInsufficientDriver and leaves n unwritten (PLATFORM.md).
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error
    return 0;
  }
  return n;
#else
  return 0;
#endif
}

std::string cuda_device_name(int device) {
#ifdef CUMULUS_HAVE_CUDA
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, device) == cudaSuccess) return p.name;
#endif
  (void)device;
  return "?";
}

void Exec::synchronize() const {
#ifdef CUMULUS_HAVE_CUDA
  if (is_cuda()) cuda_check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
#endif
}

Exec select_backend(const std::string& request, int local_rank, std::string* why) {
  const int devices = cuda_device_count();
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
      throw InputError("backend \"cuda\" requested, but no CUDA device is visible to this process "
                       "(check the driver and CUDA_VISIBLE_DEVICES, or use backend = \"host\")");
    return use_host("auto: host backend (no CUDA device visible)");
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

void* allocate(Backend where, std::size_t bytes) {
  if (bytes == 0) return nullptr;
  if (where == Backend::cuda) {
#ifdef CUMULUS_HAVE_CUDA
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, bytes);
    if (e != cudaSuccess)
      throw Error(strprintf("cannot allocate %.3g GB on the GPU: %s", bytes / 1e9, cudaGetErrorString(e)));
    return p;
#else
    throw Error("device memory requested in a build without CUDA");
#endif
  }
  const std::size_t align = 64, rounded = (bytes + align - 1) / align * align;
  void* p = std::aligned_alloc(align, rounded);
  if (!p) throw Error(strprintf("cannot allocate %.3g GB of host memory", bytes / 1e9));
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

void copy(const Exec& ex, Backend dst_space, void* dst, Backend src_space, const void* src, std::size_t bytes) {
  copy_async(ex, dst_space, dst, src_space, src, bytes);
  if (dst_space != Backend::host || src_space != Backend::host) ex.synchronize();
}

}  // namespace memory

// ---- kernel timing ----------------------------------------------------------
namespace detail {
namespace {
struct HostMark {
  const char* label;
  double t0;
};
std::vector<HostMark> host_marks;
#ifdef CUMULUS_HAVE_CUDA
struct EventPair {
  std::string label;
  cudaEvent_t start, stop;
};
std::vector<EventPair> pending_events;
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
      TimerRegistry::instance().add(p.label, ms * 1e-3);
    free_events.push_back(p.start);
    free_events.push_back(p.stop);
  }
  pending_events.clear();
#endif
}

int kernel_timer_begin(const Exec& ex, const char* label) {
#ifdef CUMULUS_HAVE_CUDA
  if (ex.is_cuda()) {
    if (pending_events.size() > 4096) flush_event_timers();  // bound the pool
    EventPair p{label, take_event(), take_event()};
    cudaEventRecord(p.start, ex.stream());
    pending_events.push_back(p);
    return -static_cast<int>(pending_events.size());  // negative: an event pair
  }
#endif
  (void)ex;
  host_marks.push_back({label, wall_seconds()});
  return static_cast<int>(host_marks.size()) - 1;
}

void kernel_timer_end(const Exec& ex, int token) {
#ifdef CUMULUS_HAVE_CUDA
  if (token < 0) {
    cudaEventRecord(pending_events[static_cast<std::size_t>(-token - 1)].stop, ex.stream());
    return;
  }
#endif
  (void)ex;
  const HostMark m = host_marks[static_cast<std::size_t>(token)];
  host_marks.resize(static_cast<std::size_t>(token));
  TimerRegistry::instance().add(m.label, wall_seconds() - m.t0);
}

void throw_not_compiled_for_cuda(const char* label) {
  throw Error(strprintf("kernel '%s' was compiled without CUDA but launched on the CUDA backend "
                        "(its source must be listed in cumulus_kernel_sources)", label));
}

void check_cuda_launch(const char* label) {
#ifdef CUMULUS_HAVE_CUDA
  const cudaError_t e = cudaPeekAtLastError();
  if (e != cudaSuccess) throw Error(strprintf("CUDA kernel '%s' failed to launch: %s", label, cudaGetErrorString(e)));
#else
  (void)label;
#endif
}
}  // namespace detail

}  // namespace cumulus
