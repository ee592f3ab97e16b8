// Halo exchange against a serial reference: after an exchange every ghost cell holds the value of
// the global cell it mirrors (periodic wrap included), and ghost cells beyond a physical boundary
// are untouched. Every neighbour direction, ghost width 1-3, 1 and 19 components, odd and uneven
// sizes, periodic and not; and the accumulating (reverse) exchange, ghost width 1-6. Run at 1-4
// ranks by ctest.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "../backends.hpp"
#include "core/comm.hpp"
#include "mesh/halo_exchange.hpp"

using namespace cumulus;
using cumulus::testing::backend_name;
using cumulus::testing::built_backends;

namespace {
constexpr double kSentinel = -7.0;

// Exactly representable and distinct for every (cell, component) of the test grids.
double value_at(int i, int j, int k, int c) { return i + 64.0 * j + 4096.0 * k + 262144.0 * c + 0.5; }

struct Case {
  Index3 cells;
  int ndim;
  std::array<bool, 3> periodic;
  int ghost;
  int ncomp;
};

// Returns the number of wrong cells on this rank.
std::int64_t run_case(const Case& tc, const Exec& ex, const Comm& comm, bool force_staging) {
  const CartesianDecomposition d(tc.cells, tc.periodic, comm.size(), tc.ndim, tc.ghost);
  const Index3 ghost{tc.ghost, tc.ghost, tc.ndim == 3 ? tc.ghost : 0};
  const Box box = d.box_of(comm.rank());
  Field<double> f("f", ex.backend(), box, ghost, tc.ncomp);
  const Box a = f.allocated();
  const View<double> shape = f.view();  // for index arithmetic on the host copy
  auto index = [&](int i, int j, int k, int c) {
    return static_cast<std::size_t>((i - shape.lo0) + (j - shape.lo1) * shape.sj + (k - shape.lo2) * shape.sk +
                                    c * shape.sc);
  };
  std::vector<double> h(f.buffer().size(), kSentinel);
  for (int c = 0; c < tc.ncomp; ++c)
    for (int k = box.lo[2]; k < box.hi[2]; ++k)
      for (int j = box.lo[1]; j < box.hi[1]; ++j)
        for (int i = box.lo[0]; i < box.hi[0]; ++i) h[index(i, j, k, c)] = value_at(i, j, k, c);
  f.buffer().from_host(ex, h);

  HaloExchange halo(d, comm, ex, ghost, tc.ncomp, sizeof(double), "test.halo", force_staging);
  auto x = halo.begin(f);
  x.finish();
  h = f.buffer().to_host(ex);

  std::int64_t wrong = 0;
  for (int c = 0; c < tc.ncomp; ++c)
    for (int k = a.lo[2]; k < a.hi[2]; ++k)
      for (int j = a.lo[1]; j < a.hi[1]; ++j)
        for (int i = a.lo[0]; i < a.hi[0]; ++i) {
          int g[3] = {i, j, k};
          bool outside = false;
          for (int dd = 0; dd < 3; ++dd) {
            if (g[dd] >= 0 && g[dd] < tc.cells[dd]) continue;
            if (tc.periodic[dd] && dd < tc.ndim) g[dd] = (g[dd] + tc.cells[dd]) % tc.cells[dd];
            else outside = true;
          }
          const double expect = outside ? kSentinel : value_at(g[0], g[1], g[2], c);
          if (h[index(i, j, k, c)] != expect) ++wrong;
        }
  return wrong;
}
}  // namespace

class HaloTest : public ::testing::TestWithParam<Backend> {};

TEST_P(HaloTest, GhostsMatchTheSerialReference) {
  CUMULUS_EXEC_OR_SKIP(ex, GetParam());
  const Comm comm = Comm::world();
  const std::vector<std::array<bool, 3>> periodicities{
      {true, true, true}, {false, false, false}, {true, false, true}, {false, true, false}};
  int cases = 0;
  for (int ghost = 1; ghost <= 3; ++ghost)
    for (const auto& per : periodicities)
      for (int ncomp : {1, 19}) {
        // 2D: 37 cells over up to 4 ranks is uneven; 3D: odd sizes everywhere.
        for (const Case tc : {Case{{37, 13, 1}, 2, per, ghost, ncomp}, Case{{13, 11, 9}, 3, per, ghost, ncomp}}) {
          // Every other case through the host staging buffers (the non-CUDA-aware path).
          const bool staging = cases % 2 == 1;
          const std::int64_t wrong = comm.sum(run_case(tc, ex, comm, staging));
          EXPECT_EQ(wrong, 0) << (staging ? "staged " : "") << tc.ndim << "D " << tc.cells[0] << "x" << tc.cells[1] << "x" << tc.cells[2]
                              << " ghost " << ghost << " ncomp " << ncomp << " periodic " << per[0] << per[1]
                              << per[2] << " on " << comm.size() << " ranks";
          ++cases;
        }
      }
  EXPECT_EQ(cases, 48);
}

// The plan sends one message per existing neighbour: 8 in 2D and 26 in 3D when fully periodic.
TEST_P(HaloTest, MessageCountCoversFacesEdgesCorners) {
  CUMULUS_EXEC_OR_SKIP(ex, GetParam());
  const Comm comm = Comm::world();
  const CartesianDecomposition d3({12, 12, 12}, {true, true, true}, comm.size(), 3, 2);
  HaloExchange h3(d3, comm, ex, {2, 2, 2}, 1, sizeof(double));
  EXPECT_EQ(comm.min(static_cast<std::int64_t>(h3.message_count())), 26);
  const CartesianDecomposition d2({12, 12, 1}, {true, true, false}, comm.size(), 2, 1);
  HaloExchange h2(d2, comm, ex, {1, 1, 0}, 1, sizeof(double));
  EXPECT_EQ(comm.min(static_cast<std::int64_t>(h2.message_count())), 8);
  const CartesianDecomposition closed({12, 12, 1}, {false, false, false}, comm.size(), 2, 1);
  HaloExchange hc(closed, comm, ex, {1, 1, 0}, 1, sizeof(double));
  if (comm.size() == 1) {
    EXPECT_EQ(hc.message_count(), 0);
  }
  EXPECT_EQ(h3.staged(), ex.is_cuda() && !Comm::cuda_aware());
}


namespace {
// What rank r deposits into cell (i, j, k) of its interior or ghost layers: distinct per rank and
// cell, so that a ghost added twice, to the wrong cell or not at all changes the sums.
std::int64_t deposit(int r, int i, int j, int k) {
  return (r + 1) * std::int64_t{1000003} + (i + 16) * std::int64_t{7} + (j + 16) * std::int64_t{131} + (k + 16) * std::int64_t{8191};
}

// The accumulating exchange against a brute-force reference: every rank fills its interior and
// ghost cells; afterwards each interior cell must hold its own deposit plus the deposits of every
// ghost cell, on any rank, that mirrors it (periodic wrap included; ghosts beyond a physical
// boundary add nowhere). Returns the number of wrong cells on this rank.
template <class T>
std::int64_t run_accumulate(const Index3& cells, int ndim, const std::array<bool, 3>& periodic, int ghost,
                            const Exec& ex, const Comm& comm, bool force_staging, bool gather) {
  const CartesianDecomposition d(cells, periodic, comm.size(), ndim, ghost);
  const Index3 gw{ghost, ghost, ndim == 3 ? ghost : 0};
  const int me = comm.rank();
  const Box box = d.box_of(me);
  Field<T> f("acc", ex.backend(), box, gw, 1);
  const View<T> shape = f.view();
  auto index = [&](int i, int j, int k) {
    return static_cast<std::size_t>((i - shape.lo0) + (j - shape.lo1) * shape.sj + (k - shape.lo2) * shape.sk);
  };
  const Box a = f.allocated();
  std::vector<T> h(f.buffer().size(), T{0});
  for (int k = a.lo[2]; k < a.hi[2]; ++k)
    for (int j = a.lo[1]; j < a.hi[1]; ++j)
      for (int i = a.lo[0]; i < a.hi[0]; ++i) h[index(i, j, k)] = static_cast<T>(deposit(me, i, j, k));
  f.buffer().from_host(ex, h);
  HaloExchange halo(d, comm, ex, gw, 1, sizeof(T), "test.accumulate", force_staging);
  halo.set_self_add_gather(gather);
  halo.accumulate(f);
  h = f.buffer().to_host(ex);

  std::vector<std::int64_t> expect(static_cast<std::size_t>(box.volume()));
  for (int k = box.lo[2]; k < box.hi[2]; ++k)
    for (int j = box.lo[1]; j < box.hi[1]; ++j)
      for (int i = box.lo[0]; i < box.hi[0]; ++i)
        expect[static_cast<std::size_t>(((k - box.lo[2]) * box.size(1) + (j - box.lo[1])) * box.size(0) + (i - box.lo[0]))] =
            deposit(me, i, j, k);
  for (int r = 0; r < comm.size(); ++r) {
    const Box in = d.box_of(r);
    Box al = in;
    for (int dd = 0; dd < 3; ++dd) {
      al.lo[dd] -= gw[dd];
      al.hi[dd] += gw[dd];
    }
    for (int k = al.lo[2]; k < al.hi[2]; ++k)
      for (int j = al.lo[1]; j < al.hi[1]; ++j)
        for (int i = al.lo[0]; i < al.hi[0]; ++i) {
          if (in.contains(i, j, k)) continue;
          int g[3] = {i, j, k};
          bool outside = false;
          for (int dd = 0; dd < 3; ++dd) {
            if (g[dd] >= 0 && g[dd] < cells[dd]) continue;
            if (periodic[dd] && dd < ndim)
              g[dd] = (g[dd] + cells[dd]) % cells[dd];
            else
              outside = true;
          }
          if (outside || !box.contains(g[0], g[1], g[2])) continue;
          expect[static_cast<std::size_t>(((g[2] - box.lo[2]) * box.size(1) + (g[1] - box.lo[1])) * box.size(0) + (g[0] - box.lo[0]))] +=
              deposit(r, i, j, k);
        }
  }
  std::int64_t wrong = 0;
  for (int k = box.lo[2]; k < box.hi[2]; ++k)
    for (int j = box.lo[1]; j < box.hi[1]; ++j)
      for (int i = box.lo[0]; i < box.hi[0]; ++i)
        if (h[index(i, j, k)] !=
            static_cast<T>(expect[static_cast<std::size_t>(((k - box.lo[2]) * box.size(1) + (j - box.lo[1])) * box.size(0) + (i - box.lo[0]))]))
          ++wrong;
  return wrong;
}
}  // namespace

TEST_P(HaloTest, AccumulateAddsEveryGhostIntoItsOwnerOnce) {
  CUMULUS_EXEC_OR_SKIP(ex, GetParam());
  const Comm comm = Comm::world();
  struct AccCase {
    Index3 cells;
    int ndim;
    std::array<bool, 3> periodic;
    int ghost;
  };
  // Ghost widths up to PME's (spline order plus drift), odd sizes, 2D, and closed axes.
  const AccCase cases[] = {{{13, 10, 9}, 3, {true, true, true}, 1}, {{13, 10, 9}, 3, {true, true, true}, 2},
                           {{17, 16, 18}, 3, {true, true, true}, 4}, {{24, 20, 22}, 3, {true, true, true}, 6},
                           {{12, 11, 1}, 2, {true, true, false}, 3}, {{14, 12, 10}, 3, {false, true, false}, 2}};
  for (const AccCase& c : cases)
    for (bool staged : {false, true})
      for (bool gather : {false, true}) {
        const std::string what = std::to_string(c.cells[0]) + "x" + std::to_string(c.cells[1]) + "x" +
                                 std::to_string(c.cells[2]) + " ghost " + std::to_string(c.ghost) + (staged ? " staged" : "") +
                                 (gather ? ", self adds gathered" : ", self adds by box");
        EXPECT_EQ(comm.sum(run_accumulate<std::int64_t>(c.cells, c.ndim, c.periodic, c.ghost, ex, comm, staged, gather)), 0) << what;
        EXPECT_EQ(comm.sum(run_accumulate<double>(c.cells, c.ndim, c.periodic, c.ghost, ex, comm, staged, gather)), 0)
            << what << " (double)";
      }
}

// The same-rank adds as one gather (CUDA's way) and one loop a box (the host's) give the same bits
// on doubles whose sums depend on their order: every cell and ghost a different non-integer.
TEST_P(HaloTest, AccumulateSelfAddsGatheredGiveTheBoxLoopsBits) {
  CUMULUS_EXEC_OR_SKIP(ex, GetParam());
  const Comm comm = Comm::world();
  for (const int ghost : {1, 3, 5}) {
    const Index3 cells{14, 12, 16};
    const CartesianDecomposition d(cells, {true, true, true}, comm.size(), 3, ghost);
    const Index3 gw{ghost, ghost, ghost};
    std::vector<double> out[2];
    for (int way = 0; way < 2; ++way) {
      Field<double> f("acc", ex.backend(), d.box_of(comm.rank()), gw, 1);
      std::vector<double> h(f.buffer().size());
      for (std::size_t k = 0; k < h.size(); ++k)
        h[k] = 1.0 / (3.0 + static_cast<double>(k % 977)) + 1e-3 * std::sqrt(static_cast<double>(k + 7 * comm.rank()));
      f.buffer().from_host(ex, h);
      HaloExchange halo(d, comm, ex, gw, 1, sizeof(double), "test.accumulate");
      halo.set_self_add_gather(way == 1);
      halo.accumulate(f);
      out[way] = f.buffer().to_host(ex);
    }
    std::int64_t differ = 0;
    for (std::size_t k = 0; k < out[0].size(); ++k) differ += std::memcmp(&out[0][k], &out[1][k], sizeof(double)) != 0;
    EXPECT_EQ(comm.sum(differ), 0) << "ghost " << ghost;
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, HaloTest, ::testing::ValuesIn(built_backends()), backend_name);
