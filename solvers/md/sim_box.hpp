#pragma once
// The md solver's periodic orthorhombic box, [0, L) along each axis: an object rather than three
// numbers because a barostat (issue #19) will change it during a run; every change bumps
// version(). Nothing reads version() yet: the box does not change today, and the ownership cells
// (AtomDomain, mesh/ParticleDomain) and the decomposition copy the lengths when they are made, so
// the barostat must rebuild them when the version moves. The state description hands the current
// lengths to the writers each time (H5MD records them as a time series).
#include <array>
#include <cstdint>

namespace cumulus::md {

class SimBox {
 public:
  explicit SimBox(const std::array<double, 3>& lengths) {
    for (int d = 0; d < 3; ++d) l_[d] = lengths[static_cast<std::size_t>(d)];
  }
  // For kernels and functions that take double[3].
  const double* lengths() const { return l_; }
  double length(int axis) const { return l_[axis]; }
  double volume() const { return l_[0] * l_[1] * l_[2]; }
  void set_lengths(const std::array<double, 3>& lengths) {
    for (int d = 0; d < 3; ++d) l_[d] = lengths[static_cast<std::size_t>(d)];
    ++version_;
  }
  std::uint64_t version() const { return version_; }

 private:
  double l_[3] = {0, 0, 0};
  std::uint64_t version_ = 0;
};

}  // namespace cumulus::md
