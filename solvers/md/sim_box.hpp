#pragma once
// The md solver's periodic orthorhombic box, [0, L) along each axis: an object rather than three
// numbers because it may change during a run (a barostat scales it; every change bumps version(),
// so that whoever derived something from the lengths, such as the ownership cells or the list's
// bins, can tell). The state description hands the current lengths to the writers each time (H5MD
// records them as a time series).
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
