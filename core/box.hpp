#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>

#include "core/macros.hpp"

namespace cumulus {

using Index3 = std::array<int, 3>;

// A half-open box of cell indices [lo, hi) in 1 to 3 dimensions. Unused dimensions have the
// extent [0, 1), so every loop is a 3D loop and 2D grids cost nothing extra.
struct Box {
  int lo[3] = {0, 0, 0};
  int hi[3] = {0, 0, 0};

  Box() = default;
  CUMULUS_HD Box(int lx, int ly, int lz, int hx, int hy, int hz) : lo{lx, ly, lz}, hi{hx, hy, hz} {}
  static Box from_extent(const Index3& n) { return Box(0, 0, 0, n[0], n[1], n[2]); }

  CUMULUS_HD int size(int d) const { return hi[d] > lo[d] ? hi[d] - lo[d] : 0; }
  CUMULUS_HD bool empty() const { return size(0) == 0 || size(1) == 0 || size(2) == 0; }
  CUMULUS_HD std::int64_t volume() const {
    return static_cast<std::int64_t>(size(0)) * size(1) * size(2);
  }
  CUMULUS_HD bool contains(int i, int j, int k) const {
    return i >= lo[0] && i < hi[0] && j >= lo[1] && j < hi[1] && k >= lo[2] && k < hi[2];
  }
  Box grown(const Index3& g) const {
    return Box(lo[0] - g[0], lo[1] - g[1], lo[2] - g[2], hi[0] + g[0], hi[1] + g[1], hi[2] + g[2]);
  }
  Box shifted(const Index3& s) const {
    return Box(lo[0] + s[0], lo[1] + s[1], lo[2] + s[2], hi[0] + s[0], hi[1] + s[1], hi[2] + s[2]);
  }
  Box intersect(const Box& o) const {
    return Box(std::max(lo[0], o.lo[0]), std::max(lo[1], o.lo[1]), std::max(lo[2], o.lo[2]),
               std::min(hi[0], o.hi[0]), std::min(hi[1], o.hi[1]), std::min(hi[2], o.hi[2]));
  }
  bool operator==(const Box& o) const {
    return std::equal(lo, lo + 3, o.lo) && std::equal(hi, hi + 3, o.hi);
  }
  std::string str() const;
};

}  // namespace cumulus
