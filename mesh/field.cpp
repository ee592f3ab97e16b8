#include "mesh/field.hpp"

namespace cumulus {

std::vector<Box> rim_boxes(const Box& box, const Box& inner_in) {
  std::vector<Box> out;
  Box inner = inner_in.intersect(box);
  if (inner.empty()) {
    out.push_back(box);
    return out;
  }
  Box rest = box;
  for (int d = 0; d < 3; ++d) {
    Box lo = rest, hi = rest;
    lo.hi[d] = inner.lo[d];
    hi.lo[d] = inner.hi[d];
    if (!lo.empty()) out.push_back(lo);
    if (!hi.empty()) out.push_back(hi);
    rest.lo[d] = inner.lo[d];
    rest.hi[d] = inner.hi[d];
  }
  return out;
}

}  // namespace cumulus
