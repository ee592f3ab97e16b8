// The cross-rank halves of the grid solvers' shared helpers (issue #17): Comm::all_gather_v (the
// shallow-water solver's tile-order sums), the lowest bad cell over all ranks, and HaloOverlap (the
// heat and LBM step's sweep around the halo exchange). Run at 1-4 ranks by ctest; every assertion
// is on a count reduced over ranks, so all ranks agree on pass or fail.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "../backends.hpp"
#include "core/comm.hpp"
#include "core/error.hpp"
#include "mesh/field.hpp"
#include "mesh/halo_exchange.hpp"

using namespace cumulus;
using cumulus::testing::backend_name;
using cumulus::testing::built_backends;

// Rank r sends r + 1 values; the result puts the ranks in reverse order (displacements are honoured,
// not assumed to follow the rank order), and every rank receives the whole.
TEST(GridCommonMpi, AllGatherVPlacesEveryRanksValues) {
  const Comm comm = Comm::world();
  const int np = comm.size(), me = comm.rank();
  std::vector<int> counts(np), displs(np);
  int total = 0;
  for (int r = np - 1; r >= 0; --r) {
    counts[r] = r + 1;
    displs[r] = total;
    total += counts[r];
  }
  std::vector<double> mine(static_cast<std::size_t>(me + 1));
  for (int n = 0; n <= me; ++n) mine[n] = 100.0 * me + n + 0.25;
  std::vector<double> all(static_cast<std::size_t>(total), -1.0);
  comm.all_gather_v(mine, all, counts, displs);
  std::int64_t wrong = 0;
  for (int r = 0; r < np; ++r)
    for (int n = 0; n < counts[r]; ++n) wrong += all[displs[r] + n] != 100.0 * r + n + 0.25;
  EXPECT_EQ(comm.sum(wrong), 0);

  // A result too small, or counts for another rank count, are refused before MPI is called (on
  // every rank: the arguments are the same everywhere).
  std::vector<double> small(static_cast<std::size_t>(total - 1));
  EXPECT_THROW(comm.all_gather_v(mine, small, counts, displs), Error);
  EXPECT_THROW(comm.all_gather_v(mine, all, std::vector<int>(np + 1, 1), std::vector<int>(np + 1, 0)), Error);
}

// Each rank reports its own first bad cell; the location is the lowest over ranks, and the same on all.
TEST(GridCommonMpi, FirstBadCellIsTheLowestOverRanks) {
  const Comm comm = Comm::world();
  const int np = comm.size(), me = comm.rank();
  const Box global(0, 0, 0, 10, 6, 4);
  auto at = [](int i, int j, int k) { return (static_cast<std::int64_t>(k) * 6 + j) * 10 + i; };
  // The highest rank has the lowest cell, (9, 2, 1) - r; rank 0 none (at more than one rank).
  const std::int64_t local = (me == 0 && np > 1) ? kNoBadCell : at(9, 2, 1) - me;
  const std::optional<std::string> where = first_bad_cell_location(comm, local, global);
  ASSERT_TRUE(where.has_value());
  const int lowest = at(9, 2, 1) - (np - 1);  // (9 - (np - 1), 2, 1) for np <= 4
  EXPECT_EQ(*where, "cell (" + std::to_string(lowest % 10) + ", 2, 1)");
  const std::optional<Index3> cell = lowest_bad_cell(comm, local, global);  // what shallow water decodes
  ASSERT_TRUE(cell.has_value());
  EXPECT_EQ(*cell, (Index3{lowest % 10, 2, 1}));
  EXPECT_FALSE(first_bad_cell_location(comm, kNoBadCell, global).has_value());
}

namespace {
// A periodic 2D field whose interior holds each cell's global number, swept once. Checked: every
// box the sweep updates that reads ghosts sees them finished (holding their neighbours' values);
// when the sweep splits (CUDA, or split_on_host, with MPI links) the inner box comes first, before
// the exchange finishes, then after_finish, then the rim; otherwise one update of the whole box,
// after after_finish. Either way the boxes cover the rank's box exactly once.
void check_sweep(Backend backend, bool split_on_host) {
  CUMULUS_EXEC_OR_SKIP(ex, backend);
  const Comm comm = Comm::world();
  const Index3 cells{12, 10, 1};
  const CartesianDecomposition d(cells, {true, true, false}, comm.size(), 2, 1);
  const Index3 ghost{1, 1, 0};
  const Box box = d.box_of(comm.rank());
  Field<double> f("f", ex.backend(), box, ghost, 1);
  auto global_number = [&](int i, int j) {
    return static_cast<double>((j + cells[1]) % cells[1] * cells[0] + (i + cells[0]) % cells[0]);
  };
  const View<double> shape = f.view();
  auto index = [&](int i, int j) { return static_cast<std::size_t>((i - shape.lo0) + (j - shape.lo1) * shape.sj); };
  std::vector<double> h(f.buffer().size(), -1.0);
  for (int j = box.lo[1]; j < box.hi[1]; ++j)
    for (int i = box.lo[0]; i < box.hi[0]; ++i) h[index(i, j)] = global_number(i, j);
  f.buffer().from_host(ex, h);

  HaloExchange halo(d, comm, ex, ghost, 1, sizeof(double), "test.overlap");
  const HaloOverlap overlap(halo, box, ghost, split_on_host);
  const bool splits = overlap.splits(ex);
  // Split only where there is a transfer to hide, and on the host only when asked.
  const bool right_choice = splits == (halo.has_mpi_neighbors() && (ex.is_cuda() || split_on_host));
  EXPECT_EQ(comm.sum(static_cast<std::int64_t>(!right_choice)), 0);
  EXPECT_EQ(comm.sum(static_cast<std::int64_t>(splits && !(overlap.inner() == box.grown({-1, -1, 0})))), 0);

  std::int64_t stale_ghosts = 0, finishes = 0, bad_order = 0;
  std::vector<int> covered(static_cast<std::size_t>(box.volume()), 0);
  std::vector<Box> updated;
  overlap.sweep(
      ex, halo, f,
      [&](const Box& b) {
        const bool inner = splits && updated.empty();
        updated.push_back(b);
        if (inner) {
          // The inner box: while the exchange is in flight, and reading no ghost.
          bad_order += finishes != 0 || !(b == overlap.inner());
        } else {
          bad_order += finishes != 1;
          const std::vector<double> now = f.buffer().to_host(ex);
          for (int j = b.lo[1] - 1; j <= b.hi[1]; ++j)
            for (int i = b.lo[0] - 1; i <= b.hi[0]; ++i) stale_ghosts += now[index(i, j)] != global_number(i, j);
        }
        for (int j = b.lo[1]; j < b.hi[1]; ++j)
          for (int i = b.lo[0]; i < b.hi[0]; ++i)
            ++covered[static_cast<std::size_t>((j - box.lo[1]) * box.size(0) + (i - box.lo[0]))];
      },
      [&] { ++finishes; });
  std::int64_t not_once = 0;
  for (int c : covered) not_once += c != 1;
  EXPECT_EQ(comm.sum(stale_ghosts), 0);
  EXPECT_EQ(comm.sum(bad_order), 0);
  EXPECT_EQ(comm.sum(finishes), comm.size());
  EXPECT_EQ(comm.sum(not_once), 0);
  const std::int64_t expected_updates = splits ? 1 + static_cast<std::int64_t>(overlap.rim().size()) : 1;
  EXPECT_EQ(comm.sum(static_cast<std::int64_t>(updated.size()) - expected_updates), 0);
  // At more than one rank some axis is split: the split path did run (it is not vacuous).
  EXPECT_EQ(comm.sum(static_cast<std::int64_t>(split_on_host && comm.size() > 1 && !splits)), 0);
}

}  // namespace

// Named <suite>/HaloOverlapTest.*/<backend>: scripts/gpu-check counts the cases ending in /cuda.
class HaloOverlapTest : public ::testing::TestWithParam<Backend> {};
class HaloOverlapSplitOnHostTest : public ::testing::TestWithParam<Backend> {};
TEST_P(HaloOverlapTest, UpdatesSeeFinishedGhostsAndCoverTheBoxOnce) { check_sweep(GetParam(), false); }
TEST_P(HaloOverlapSplitOnHostTest, UpdatesSeeFinishedGhostsAndCoverTheBoxOnce) { check_sweep(GetParam(), true); }
INSTANTIATE_TEST_SUITE_P(Backends, HaloOverlapTest, ::testing::ValuesIn(built_backends()), backend_name);
INSTANTIATE_TEST_SUITE_P(Backends, HaloOverlapSplitOnHostTest, ::testing::ValuesIn(built_backends()), backend_name);
