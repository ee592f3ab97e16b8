#pragma once
// Fields on a rank's block of a structured grid: components x (box grown by ghost layers), in the
// memory of the run's backend (structure of arrays: component slowest, i fastest).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
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
  using value_type = T;
  Field() = default;
  Field(std::string name, Backend space, const Box& interior, const Index3& ghost, int ncomp)
      : name_(std::move(name)), interior_(interior), ghost_(ghost), ncomp_(ncomp),
        alloc_(interior.grown(ghost)),
        data_(space, static_cast<std::size_t>(alloc_.volume()) * static_cast<std::size_t>(ncomp), name_.c_str()) {}

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

  // The interior values on the host as raw bytes, ordered (c, k, j, i) with i fastest: what
  // checkpoints and output write. Whole rows are copied; host fields are read in place.
  std::vector<unsigned char> interior_bytes(const Exec& ex) const {
    std::vector<unsigned char> out(static_cast<std::size_t>(interior_.volume()) * ncomp_ * sizeof(T));
    copy_rows(ex, reinterpret_cast<T*>(out.data()), true);
    return out;
  }
  void set_interior_bytes(const Exec& ex, const std::vector<unsigned char>& in) {
    if (in.size() != static_cast<std::size_t>(interior_.volume()) * ncomp_ * sizeof(T))
      throw Error("Field::set_interior_bytes: size mismatch for '" + name_ + "'");
    copy_rows(ex, const_cast<T*>(reinterpret_cast<const T*>(in.data())), false);
  }
  std::vector<T> interior_to_host(const Exec& ex) const {
    std::vector<T> out(static_cast<std::size_t>(interior_.volume()) * ncomp_);
    copy_rows(ex, out.data(), true);
    return out;
  }
  void interior_from_host(const Exec& ex, const std::vector<T>& in) {
    if (in.size() != static_cast<std::size_t>(interior_.volume() * ncomp_))
      throw Error("Field::interior_from_host: size mismatch for '" + name_ + "'");
    copy_rows(ex, const_cast<T*>(in.data()), false);
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
  // Copies the interior between the field and a packed (c, k, j, i) array, row by row. Device
  // fields go through one host copy of the whole allocation.
  void copy_rows(const Exec& ex, T* packed, bool to_packed) const {
    std::vector<T> staging;
    T* base = data_.data();
    if (data_.space() != Backend::host) {
      staging = data_.to_host(ex);
      base = staging.data();
    }
    const std::int64_t sj = alloc_.size(0), sk = sj * alloc_.size(1), sc = sk * alloc_.size(2);
    const int ni = interior_.size(0), nj = interior_.size(1), nk = interior_.size(2);
    const std::int64_t rows = static_cast<std::int64_t>(ncomp_) * nk * nj;
#pragma omp parallel for schedule(static) if (rows > 64)
    for (std::int64_t r = 0; r < rows; ++r) {
      const int j = static_cast<int>(r % nj), k = static_cast<int>((r / nj) % nk), c = static_cast<int>(r / nj / nk);
      T* field_row = base + (interior_.lo[0] - alloc_.lo[0]) + (interior_.lo[1] + j - alloc_.lo[1]) * sj +
                     (interior_.lo[2] + k - alloc_.lo[2]) * sk + c * sc;
      T* packed_row = packed + r * ni;
      if (to_packed) std::copy(field_row, field_row + ni, packed_row);
      else std::copy(packed_row, packed_row + ni, field_row);
    }
    if (!to_packed && data_.space() != Backend::host) memory::copy(ex, data_.space(), data_.data(), Backend::host, base, data_.bytes());
  }

  std::string name_;
  Box interior_;
  Index3 ghost_{0, 0, 0};
  int ncomp_ = 1;
  Box alloc_;
  Buffer<T> data_;
};

class Comm;

// The grid health checks find the first bad cell in one order at any rank count: each rank's
// kernel reduces its part with MinOp over the cells' numbers in the global box (x fastest), or
// kNoBadCell where all are good; lowest_bad_cell takes the lowest over the ranks and decodes it.
// Numbering and decoding are here, together, so that they cannot disagree.
inline constexpr std::int64_t kNoBadCell = std::numeric_limits<std::int64_t>::max();
struct GlobalCellNumber {  // trivially copyable: kernels capture it
  std::int64_t nx = 0, ny = 0;
  GlobalCellNumber() = default;
  explicit GlobalCellNumber(const Box& global) : nx(global.size(0)), ny(global.size(1)) {}
  CUMULUS_HD std::int64_t operator()(int i, int j, int k) const { return (k * ny + j) * nx + i; }
  Index3 cell(std::int64_t n) const {
    return {static_cast<int>(n % nx), static_cast<int>((n / nx) % ny), static_cast<int>(n / nx / ny)};
  }
};
static_assert(std::is_trivially_copyable_v<GlobalCellNumber>);
// Collective: the lowest-numbered bad cell over all ranks, (i, j, k) in `global`, or nothing when
// no rank has one. `local` is this rank's kernel result.
std::optional<Index3> lowest_bad_cell(const Comm& comm, std::int64_t local, const Box& global);
// The same as a HealthIssue's location: "cell (i, j, k)".
std::optional<std::string> first_bad_cell_location(const Comm& comm, std::int64_t local, const Box& global);

// Splits the part of `box` outside `inner` into disjoint slabs (at most six), so that a kernel
// can update the interior while halos are in flight and the rim afterwards.
std::vector<Box> rim_boxes(const Box& box, const Box& inner);

}  // namespace cumulus
