#include "mesh/field.hpp"

#include "core/comm.hpp"
#include "core/strings.hpp"

namespace cumulus {

std::optional<Index3> lowest_bad_cell(const Comm& comm, std::int64_t local, const Box& global) {
  const std::int64_t first = comm.min(local);
  if (first == kNoBadCell) return std::nullopt;
  return GlobalCellNumber(global).cell(first);
}

std::optional<std::string> first_bad_cell_location(const Comm& comm, std::int64_t local, const Box& global) {
  const std::optional<Index3> c = lowest_bad_cell(comm, local, global);
  if (!c) return std::nullopt;
  return strprintf("cell (%d, %d, %d)", (*c)[0], (*c)[1], (*c)[2]);
}

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
