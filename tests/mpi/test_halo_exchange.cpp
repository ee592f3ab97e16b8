// Halo exchange against a serial reference: after an exchange every ghost cell holds the value of
// the global cell it mirrors (periodic wrap included), and ghost cells beyond a physical boundary
// are untouched. Every neighbour direction, ghost width 1-3, 1 and 19 components, odd and uneven
// sizes, periodic and not; run at 1-4 ranks by ctest.
#include <gtest/gtest.h>

#include <cstdint>

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

INSTANTIATE_TEST_SUITE_P(Backends, HaloTest, ::testing::ValuesIn(built_backends()), backend_name);
