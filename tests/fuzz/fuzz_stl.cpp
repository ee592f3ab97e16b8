// libFuzzer target: the STL reader (mesh/stl.cpp), ASCII and binary (the corpus holds both), and
// the voxelizer on a small grid for the meshes it accepts.
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "core/error.hpp"
#include "mesh/stl.hpp"
#include "tests/fuzz/fuzz_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = cumulus::fuzz::scratch_path(".stl");
  cumulus::fuzz::write_file(path, data, size);
  try {
    cumulus::TriangleMesh m = cumulus::read_stl(path);
    // A fixed grid of unit cells, as the LBM voxelizes any mesh a job names onto its own grid,
    // and a 6^3 grid over the mesh's bounding box, where the inside test has work to do.
    const double unit_origin[3] = {-3, -3, -3}, unit_h[3] = {1, 1, 1};
    (void)cumulus::voxelize(m, cumulus::Box(0, 0, 0, 6, 6, 6), unit_origin, unit_h);
    const double origin[3] = {m.lo.x, m.lo.y, m.lo.z};
    const double h[3] = {(m.hi.x - m.lo.x) / 6, (m.hi.y - m.lo.y) / 6, (m.hi.z - m.lo.z) / 6};
    bool usable = true;
    for (const double x : h) usable = usable && std::isfinite(x) && x > 0;
    if (usable) (void)cumulus::voxelize(m, cumulus::Box(0, 0, 0, 6, 6, 6), origin, h);
  } catch (const cumulus::InputError&) {
  }
  return 0;
}
