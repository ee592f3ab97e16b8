// What the grid solvers share (issue #17): the node-memory and decomposition checks of check(),
// the description of a field for checkpoints and output (grid_array), the first bad cell's number
// and location, a host list copied for the kernels (Buffer::copy_of), and pi. Each case feeds a
// helper what a solver would and checks what it returns or refuses; the cross-rank halves (the
// lowest bad cell over ranks, Comm::all_gather_v, HaloOverlap) are in tests/mpi/test_grid_common.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "../input_error.hpp"
#include "core/comm.hpp"
#include "core/config.hpp"
#include "core/constants.hpp"
#include "core/error.hpp"
#include "core/memory.hpp"
#include "io/state.hpp"
#include "mesh/decomposition.hpp"
#include "mesh/field.hpp"

using namespace cumulus;

namespace {
// A job with one key, set on line 3 of job.toml: what a failed check names.
Config job_with(const std::string& key) {
  Config c;
  c.set_file("job.toml");
  c.set(key, Value{std::vector<std::int64_t>{8, 8}}, "job.toml:3");
  return c;
}

std::string error_of(const std::function<void()>& f) { return cumulus::testing::input_error_of(f); }
}  // namespace

TEST(GridCommon, PiIsTheNearestDouble) {
  EXPECT_EQ(kPi, 0x1.921fb54442d18p+1);
  EXPECT_EQ(kPi, std::acos(-1.0));
}

TEST(GridCommon, NodeMemoryCheckPassesWhatFits) {
  const Config c = job_with("heat.cells");
  EXPECT_GT(memory::node_bytes(), 0.0);  // Linux says how much memory it has
  EXPECT_NO_THROW(check_node_memory(c, "heat.cells", 64.0 * 64.0, 16.0, 1));
  // Exactly the node's memory still fits; a byte more per rank does not.
  const double node = memory::node_bytes();
  EXPECT_NO_THROW(check_node_memory(c, "heat.cells", node, 1.0, 1));
  EXPECT_NO_THROW(check_node_memory(c, "heat.cells", 2 * node, 1.0, 2));
  EXPECT_THROW(check_node_memory(c, "heat.cells", node + 4096, 1.0, 1), InputError);
}

TEST(GridCommon, NodeMemoryCheckNamesTheKeyAndWhatTheBytesAre) {
  const Config c = job_with("lbm.cells");
  // 1e12 cells of 1 kB on 4 ranks: 250 TB per rank, on no node.
  const std::string e =
      error_of([&] { check_node_memory(c, "lbm.cells", 1e12, 1000.0, 4, "two fp32 population buffers"); });
  EXPECT_NE(e.find("job.toml:3: key 'lbm.cells'"), std::string::npos) << e;
  EXPECT_NE(e.find("1e+12 cells need 2.5e+05 GB per rank on 4 rank(s) (two fp32 population buffers), more than this "
                   "node's"),
            std::string::npos)
      << e;
  // Without `what`, no parentheses.
  const std::string h = error_of([&] { check_node_memory(c, "lbm.cells", 1e12, 16.0, 1); });
  EXPECT_NE(h.find("per rank on 1 rank(s), more than"), std::string::npos) << h;
  // Past 1e13 cells a grid is refused whatever the memory (the index arithmetic's limit).
  EXPECT_THROW(check_node_memory(c, "lbm.cells", 2e13, 1e-20, 1 << 20), InputError);
}

TEST(GridCommon, DecompositionCheckTurnsAnImpossibleSplitIntoAConfigError) {
  const Config c = job_with("heat.cells");
  EXPECT_NO_THROW(check_decomposition(c, "heat.cells", {8, 8, 1}, {true, true, false}, 4, 2));
  // 3 x 3 cells cannot give 11 ranks (prime, more than either axis) a cell each.
  std::string direct;
  try {
    CartesianDecomposition({3, 3, 1}, {false, false, false}, 11, 2);
  } catch (const InputError& e) {
    direct = e.what();
  }
  ASSERT_FALSE(direct.empty());
  const std::string e = error_of([&] {
    check_decomposition(c, "heat.cells", {3, 3, 1}, {false, false, false}, 11, 2);
  });
  EXPECT_EQ(e, "job.toml:3: key 'heat.cells': " + direct);
  // min_cells is passed on: 8 cells over 4 ranks fit at 2 per rank, not at 3.
  EXPECT_NO_THROW(check_decomposition(c, "heat.cells", {8, 1, 1}, {false, false, false}, 4, 1, 2));
  EXPECT_THROW(check_decomposition(c, "heat.cells", {8, 1, 1}, {false, false, false}, 4, 1, 3), InputError);
  // A context goes before the reason.
  const std::string m = error_of([&] {
    check_decomposition(c, "heat.cells", {3, 3, 1}, {false, false, false}, 11, 2, 1, "too few bins for 11 ranks");
  });
  EXPECT_EQ(m, "job.toml:3: key 'heat.cells': too few bins for 11 ranks: " + direct);
}

TEST(GridCommon, FirstBadCellLocationDecodesTheGlobalIndex) {
  const Comm self = Comm::self();
  const Box global(0, 0, 0, 7, 5, 3);
  EXPECT_FALSE(first_bad_cell_location(self, kNoBadCell, global).has_value());
  // (k ny + j) nx + i, as the health kernels encode it.
  auto at = [&](int i, int j, int k) { return (static_cast<std::int64_t>(k) * 5 + j) * 7 + i; };
  EXPECT_EQ(first_bad_cell_location(self, at(0, 0, 0), global).value(), "cell (0, 0, 0)");
  EXPECT_EQ(first_bad_cell_location(self, at(6, 4, 2), global).value(), "cell (6, 4, 2)");
  EXPECT_EQ(first_bad_cell_location(self, at(3, 1, 2), global).value(), "cell (3, 1, 2)");
  EXPECT_EQ(first_bad_cell_location(self, at(5, 0, 1), global).value(), "cell (5, 0, 1)");
}

// The kernels' numbering: x fastest, consecutive over the global box, and decoded back exactly.
TEST(GridCommon, GlobalCellNumbersAreXFastestAndDecodeBack) {
  const Box global(0, 0, 0, 7, 5, 3);
  const GlobalCellNumber number(global);
  std::int64_t expected = 0;
  for (int k = 0; k < 3; ++k)
    for (int j = 0; j < 5; ++j)
      for (int i = 0; i < 7; ++i, ++expected) {
        ASSERT_EQ(number(i, j, k), expected);
        ASSERT_EQ(number.cell(expected), (Index3{i, j, k}));
      }
  // Past 2^31 cells the number still fits (64-bit arithmetic from the first product).
  const GlobalCellNumber big(Box(0, 0, 0, 1 << 16, 1 << 16, 4));
  EXPECT_EQ(big(5, 6, 3), (3 * 65536LL + 6) * 65536LL + 5);
  EXPECT_EQ(big.cell(big(5, 6, 3)), (Index3{5, 6, 3}));
}

// A host list handed to the kernels: the copy, and room for at least `at_least` elements.
TEST(GridCommon, BufferCopyOfAHostList) {
  const Exec ex;
  const std::vector<std::int32_t> list{4, -1, 7};
  const Buffer<std::int32_t> b = Buffer<std::int32_t>::copy_of(ex, list);
  EXPECT_EQ(b.space(), Backend::host);
  EXPECT_EQ(b.to_host(ex), list);
  const Buffer<std::int32_t> padded = Buffer<std::int32_t>::copy_of(ex, list, 5);
  ASSERT_EQ(padded.size(), 5u);
  EXPECT_EQ(std::vector<std::int32_t>(padded.data(), padded.data() + 3), list);
  const Buffer<float> none = Buffer<float>::copy_of(ex, {}, 19);  // an empty list still gives a pointer
  EXPECT_EQ(none.size(), 19u);
  EXPECT_NE(none.data(), nullptr);
  EXPECT_EQ(Buffer<float>::copy_of(ex, {}).size(), 0u);
}

TEST(GridCommon, DtypeOfEveryStorableType) {
  static_assert(dtype_of<double>() == DType::f64);
  static_assert(dtype_of<float>() == DType::f32);
  static_assert(dtype_of<std::int32_t>() == DType::i32);
  static_assert(dtype_of<std::uint16_t>() == DType::u16);
  static_assert(dtype_of<std::uint8_t>() == DType::u8);
  SUCCEED();
}

// A host field with ghosts and two components: the description reads its interior in (c, k, j, i)
// order, points the writers at the allocation, and a restore writes the interior only.
TEST(GridCommon, GridArrayDescribesAHostFieldWithItsInPlaceShortcut) {
  const Exec ex;
  const Box box(2, 1, 0, 6, 4, 1), global(0, 0, 0, 10, 8, 1);
  Field<float> f("speed", Backend::host, box, {1, 1, 0}, 2);
  std::vector<float> all(f.buffer().size());
  std::iota(all.begin(), all.end(), 0.0f);
  f.buffer().from_host(ex, all);

  GridArray a = grid_array(f, ex, global, "speed", "m/s");
  EXPECT_EQ(a.name, "speed");
  EXPECT_EQ(a.units, "m/s");
  EXPECT_EQ(a.dtype, DType::f32);
  EXPECT_EQ(a.ncomp, 2);
  EXPECT_EQ(a.global_box, global);
  EXPECT_EQ(a.local_box, box);
  EXPECT_TRUE(a.in_checkpoint);
  EXPECT_TRUE(a.in_output);
  EXPECT_EQ(a.host_base, reinterpret_cast<const unsigned char*>(f.buffer().data()));
  EXPECT_EQ(a.host_alloc, f.allocated());
  EXPECT_EQ(a.read_local(), f.interior_bytes(ex));
  ASSERT_EQ(a.read_local().size(), static_cast<std::size_t>(box.volume()) * 2 * sizeof(float));

  // Restore: the interior takes the new values, the ghosts keep theirs.
  std::vector<float> fresh(static_cast<std::size_t>(box.volume()) * 2);
  for (std::size_t n = 0; n < fresh.size(); ++n) fresh[n] = -1.0f - static_cast<float>(n);
  std::vector<unsigned char> bytes(fresh.size() * sizeof(float));
  std::memcpy(bytes.data(), fresh.data(), bytes.size());
  ASSERT_TRUE(a.write_local);
  a.write_local(bytes);
  EXPECT_EQ(f.interior_to_host(ex), fresh);
  const View<float> v = f.view();
  EXPECT_EQ(v(box.lo[0] - 1, box.lo[1] - 1, 0, 1), all[static_cast<std::size_t>(v.sc)]);  // a ghost, component 1
  // The description follows the field it was made from (the lambdas hold the field, not a copy).
  f.set_interior_bytes(ex, std::vector<unsigned char>(bytes.size(), 0));
  EXPECT_EQ(a.read_local(), std::vector<unsigned char>(bytes.size(), 0));
}
