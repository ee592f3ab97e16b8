#pragma once
// Owning buffers in a backend's memory, with explicit copies (never managed memory).
#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "core/exec.hpp"

namespace cumulus {
class Config;

namespace memory {
// The memory this process may use in bytes: the node's physical memory, or its control group's
// limit when smaller (a Slurm job, a container); 0 when the system does not say.
double node_bytes();
// `what` names the array in the error a failed allocation throws (a field's name, say).
void* allocate(Backend where, std::size_t bytes, const char* what = nullptr);
void release(Backend where, void* p) noexcept;
// Page-locked host memory: the staging area for device halos when MPI is not CUDA-aware.
void* allocate_pinned(std::size_t bytes);
void release_pinned(void* p) noexcept;
// Copies `bytes` between any two spaces, ordered on ex's stream: complete on return when either side
// is the host; device to device it is queued (later kernels and copies on the stream see it).
void copy(const Exec& ex, Backend dst_space, void* dst, Backend src_space, const void* src, std::size_t bytes);
// Queued on ex's stream; complete after ex.synchronize().
void copy_async(const Exec& ex, Backend dst_space, void* dst, Backend src_space, const void* src, std::size_t bytes);
}  // namespace memory

// For a solver's check(): `cells` grid cells of `bytes_per_cell` bytes each (all the rank's fields
// together, ghosts aside), split evenly over `nranks` ranks, must fit the memory of this node, and
// no grid may pass 1e13 cells. Otherwise a config error on `key` (the key that sets the size), so
// that a job too large fails before anything is allocated instead of in the middle of set-up.
// `what`, when given, says what the bytes are, in parentheses after the rank count.
// The estimate is printed (rank 0), and a refusal says on how many ranks (one per node like this
// one) the job would fit.
void check_node_memory(const Config& cfg, const std::string& key, double cells, double bytes_per_cell, int nranks,
                       const std::string& what = "");
// The same for `count` items named `noun` ("atoms"), of `bytes_each` bytes each.
void check_node_memory(const Config& cfg, const std::string& key, double count, double bytes_each, int nranks,
                       const std::string& noun, const std::string& what);

// A move-only array of T in the memory of one backend.
template <class T>
class Buffer {
 public:
  Buffer() = default;
  Buffer(Backend where, std::size_t n, const char* what = nullptr) : where_(where), n_(n) {
    if (n_ > 0) data_ = static_cast<T*>(memory::allocate(where_, n_ * sizeof(T), what));
  }
  // A buffer in ex's memory holding a copy of `h`: how set-up code hands a list it built on the
  // host to the kernels. `at_least` elements are allocated even for a shorter (or empty) list, so
  // that a kernel handed no entries still gets a valid pointer; those past h.size() are not set.
  static Buffer copy_of(const Exec& ex, const std::vector<T>& h, std::size_t at_least = 0, const char* what = nullptr) {
    Buffer b(ex.backend(), std::max(h.size(), at_least), what);
    if (!h.empty()) memory::copy(ex, b.where_, b.data_, Backend::host, h.data(), h.size() * sizeof(T));
    return b;
  }
  ~Buffer() { memory::release(where_, data_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& o) noexcept { swap(o); }
  Buffer& operator=(Buffer&& o) noexcept {
    Buffer tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  void swap(Buffer& o) noexcept {
    std::swap(where_, o.where_);
    std::swap(n_, o.n_);
    std::swap(data_, o.data_);
  }

  T* data() const { return data_; }
  std::size_t size() const { return n_; }
  std::size_t bytes() const { return n_ * sizeof(T); }
  Backend space() const { return where_; }

  std::vector<T> to_host(const Exec& ex) const {
    std::vector<T> h(n_);
    memory::copy(ex, Backend::host, h.data(), where_, data_, bytes());
    return h;
  }
  void from_host(const Exec& ex, const std::vector<T>& h) {
    if (h.size() != n_) throw Error("Buffer::from_host: size mismatch");
    memory::copy(ex, where_, data_, Backend::host, h.data(), bytes());
  }

 private:
  Backend where_ = Backend::host;
  std::size_t n_ = 0;
  T* data_ = nullptr;
};

}  // namespace cumulus
