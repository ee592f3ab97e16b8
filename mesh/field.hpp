#pragma once
// Fields on a rank's block of a structured grid: components x (box grown by ghost layers), in the
// memory of the run's backend (structure of arrays: component slowest, i fastest).
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "core/box.hpp"
#include "core/memory.hpp"

namespace cumulus {

// A non-owning view indexed with global cell indices. Trivially copyable: kernels capture it by
// value. No bounds checks (a view is a pointer and strides).
template <class T>
struct View {
  T* data = nullptr;
  int lo0 = 0, lo1 = 0, lo2 = 0;
  std::int64_t sj = 0, sk = 0, sc = 0;

  CUMULUS_HD T& operator()(int i, int j, int k, int c = 0) const {
    return data[(i - lo0) + (j - lo1) * sj + (k - lo2) * sk + c * sc];
  }
};
static_assert(std::is_trivially_copyable_v<View<double>>);

template <class T>
class Field {
 public:
  Field() = default;
  Field(std::string name, Backend space, const Box& interior, const Index3& ghost, int ncomp)
      : name_(std::move(name)), interior_(interior), ghost_(ghost), ncomp_(ncomp),
        alloc_(interior.grown(ghost)),
        data_(space, static_cast<std::size_t>(alloc_.volume()) * static_cast<std::size_t>(ncomp)) {}

  const std::string& name() const { return name_; }
  const Box& interior() const { return interior_; }
  const Box& allocated() const { return alloc_; }
  const Index3& ghost() const { return ghost_; }
  int ncomp() const { return ncomp_; }
  Backend space() const { return data_.space(); }
  Buffer<T>& buffer() { return data_; }
  const Buffer<T>& buffer() const { return data_; }

  View<T> view() const {
    View<T> v;
    v.data = data_.data();
    v.lo0 = alloc_.lo[0];
    v.lo1 = alloc_.lo[1];
    v.lo2 = alloc_.lo[2];
    v.sj = alloc_.size(0);
    v.sk = v.sj * alloc_.size(1);
    v.sc = v.sk * alloc_.size(2);
    return v;
  }

  // The interior values on the host, ordered (c, k, j, i) with i fastest.
  std::vector<T> interior_to_host(const Exec& ex) const {
    const std::vector<T> all = data_.to_host(ex);
    std::vector<T> out;
    out.reserve(static_cast<std::size_t>(interior_.volume() * ncomp_));
    const View<const T> v{all.data(), alloc_.lo[0], alloc_.lo[1], alloc_.lo[2], alloc_.size(0),
                          static_cast<std::int64_t>(alloc_.size(0)) * alloc_.size(1),
                          alloc_.volume()};
    for (int c = 0; c < ncomp_; ++c)
      for (int k = interior_.lo[2]; k < interior_.hi[2]; ++k)
        for (int j = interior_.lo[1]; j < interior_.hi[1]; ++j)
          for (int i = interior_.lo[0]; i < interior_.hi[0]; ++i) out.push_back(v(i, j, k, c));
    return out;
  }

  // Replaces the interior values from the host, same order as interior_to_host.
  void interior_from_host(const Exec& ex, const std::vector<T>& in) {
    if (in.size() != static_cast<std::size_t>(interior_.volume() * ncomp_))
      throw Error("Field::interior_from_host: size mismatch for '" + name_ + "'");
    std::vector<T> all = data_.to_host(ex);
    const View<T> v{all.data(), alloc_.lo[0], alloc_.lo[1], alloc_.lo[2], alloc_.size(0),
                    static_cast<std::int64_t>(alloc_.size(0)) * alloc_.size(1), alloc_.volume()};
    std::size_t n = 0;
    for (int c = 0; c < ncomp_; ++c)
      for (int k = interior_.lo[2]; k < interior_.hi[2]; ++k)
        for (int j = interior_.lo[1]; j < interior_.hi[1]; ++j)
          for (int i = interior_.lo[0]; i < interior_.hi[0]; ++i) v(i, j, k, c) = in[n++];
    data_.from_host(ex, all);
  }

  void swap(Field& o) noexcept {
    std::swap(name_, o.name_);
    std::swap(interior_, o.interior_);
    std::swap(ghost_, o.ghost_);
    std::swap(ncomp_, o.ncomp_);
    std::swap(alloc_, o.alloc_);
    data_.swap(o.data_);
  }

 private:
  std::string name_;
  Box interior_;
  Index3 ghost_{0, 0, 0};
  int ncomp_ = 1;
  Box alloc_;
  Buffer<T> data_;
};

// Splits the part of `box` outside `inner` into disjoint slabs (at most six), so that a kernel
// can update the interior while halos are in flight and the rim afterwards.
std::vector<Box> rim_boxes(const Box& box, const Box& inner);

}  // namespace cumulus
