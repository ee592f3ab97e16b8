// The cubed-sphere grid: exact areas, a consistent metric, ghost values interpolated to fourth
// order along the neighbour's grid lines, panel-edge faces paired once each, and plans that do
// not depend on the tiling.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "core/comm.hpp"
#include "core/constants.hpp"
#include "mesh/cubed_sphere.hpp"

using namespace cumulus;

namespace {

double smooth(const double r[3]) { return std::sin(2 * r[0] + 1) + r[1] * r[2] + std::cos(3 * r[2]) * r[0]; }

CubePoint centre(const CubedSphere& g, int p, int I, int J) {
  return cube_point(g.panels(), p, g.centre_tan(I), g.centre_tan(J));
}
}  // namespace

TEST(CubedSphere, AreasSumToTheSphere) {
  for (int n : {8, 24, 96, 333}) {
    const CubedSphere g(n, 1, 1);
    long double sum = 0;
    double max_rel = 0;
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) {
        sum += 6.0L * g.cell_area(i, j);
        // The exact area agrees with sqrt(g) dalpha dbeta to second order.
        const CubePoint c = centre(g, 0, i, j);
        max_rel = std::max(max_rel, std::fabs(g.cell_area(i, j) / (c.sqrtg * g.dangle() * g.dangle()) - 1));
      }
    EXPECT_NEAR(static_cast<double>(sum), 4 * kPi, 4 * kPi * 1e-14) << "C" << n;
    EXPECT_LT(max_rel, 3.0 / (n * n)) << "C" << n;
  }
}

TEST(CubedSphere, MetricIsConsistent) {
  const CubedSphere g(16, 1, 1);
  for (int p = 0; p < 6; ++p)
    for (int I = -2; I <= 17; I += 3)
      for (int J = -2; J <= 17; J += 5) {
        const CubePoint c = centre(g, p, I, J);
        auto dot = [](const double* a, const double* b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; };
        EXPECT_NEAR(dot(c.r, c.r), 1, 1e-15);
        EXPECT_NEAR(dot(c.ua, c.ca), 1, 1e-14);
        EXPECT_NEAR(dot(c.ub, c.cb), 1, 1e-14);
        EXPECT_NEAR(dot(c.ua, c.cb), 0, 1e-14);
        EXPECT_NEAR(dot(c.r, c.ca), 0, 1e-15);
        const double x[3] = {c.ca[1] * c.cb[2] - c.ca[2] * c.cb[1], c.ca[2] * c.cb[0] - c.ca[0] * c.cb[2],
                             c.ca[0] * c.cb[1] - c.ca[1] * c.cb[0]};
        EXPECT_NEAR(dot(x, c.r), c.sqrtg, 1e-14);  // right-handed, outward
      }
}

// Fill the ghost ring from a smooth function's cell values and compare with the function at the
// ghosts' (extended-grid) positions: fourth-order interpolation, so the error falls 16x per halving.
TEST(CubedSphere, GhostsInterpolateToFourthOrder) {
  double prev = 0;
  for (int n : {12, 24, 48}) {
    const CubedSphere g(n, 2, 1);
    const CubeLayout layout(g, 1);
    const int nx = g.tile_nx(), ny = g.tile_ny();
    const int G = kCubeGhost;
    std::vector<double> data(static_cast<std::size_t>(g.ntiles()) * (nx + 2 * G) * (ny + 2 * G), 0.0);
    for (int t = 0; t < g.ntiles(); ++t) {
      int p, i0, j0;
      g.tile_origin(t, &p, &i0, &j0);
      for (int j = 0; j < ny; ++j)
        for (int i = 0; i < nx; ++i) data[static_cast<std::size_t>(layout.cell(t, i, j))] = smooth(centre(g, p, i0 + i, j0 + j).r);
    }
    CubeGatherPlan plan(layout.ghost_fill(0), Comm::self(), Exec::host(), "test");
    plan.apply(data.data(), 1, 0);
    double err = 0;
    int checked = 0;
    for (int t = 0; t < g.ntiles(); ++t) {
      int p, i0, j0;
      g.tile_origin(t, &p, &i0, &j0);
      for (int j = -G; j < ny + G; ++j)
        for (int i = -G; i < nx + G; ++i) {
          if ((i < 0 || i >= nx) == (j < 0 || j >= ny)) continue;  // interior or diagonal corner
          const double want = smooth(centre(g, p, i0 + i, j0 + j).r);
          err = std::max(err, std::fabs(data[static_cast<std::size_t>(layout.cell(t, i, j))] - want));
          ++checked;
        }
    }
    EXPECT_EQ(checked, g.ntiles() * 2 * G * (nx + ny));
    if (prev > 0) {
      EXPECT_GT(prev / err, 11.0) << "C" << n << ": error " << err << " after " << prev;
    }
    prev = err;
  }
  EXPECT_LT(prev, 5e-6);  // C48, a function of size 1
}

// Every panel-edge face appears twice over all ranks (once from each panel), at distinct slots,
// outward-signed: -1 on west and south faces, +1 on east and north ones; a rank whose tiles touch
// no panel edge (the centre tile of a 3 x 3 panel, alone on its rank) gets none.
TEST(CubedSphere, PanelEdgeFacesOnceFromEachSide) {
  for (auto [tx, ty, nranks] : {std::array<int, 3>{1, 1, 1}, {3, 2, 5}, {3, 3, 54}}) {
    const CubedSphere g(12, tx, ty);
    const CubeLayout layout(g, nranks);
    std::size_t total = 0, empty = 0;
    double sign_sum = 0;
    for (int r = 0; r < nranks; ++r) {
      const auto faces = layout.panel_edge_faces(r);
      std::set<std::int64_t> slots;
      for (const auto& f : faces) {
        EXPECT_TRUE(f.outward == 1.0 || f.outward == -1.0);
        EXPECT_TRUE(slots.insert(f.offset).second) << "slot " << f.offset << " twice on rank " << r;
        EXPECT_LT(f.offset, layout.faces_size(r));
        sign_sum += f.outward;
      }
      total += faces.size();
      empty += faces.empty();
    }
    EXPECT_EQ(total, static_cast<std::size_t>(6 * 4 * 12)) << tx << "x" << ty;
    EXPECT_EQ(sign_sum, 0.0);
    EXPECT_EQ(empty, nranks == 54 ? 6u : 0u);
  }
}

// The same global cells with the same weights feed each ghost whatever the tiling.
TEST(CubedSphere, PlansDoNotDependOnTheTiling) {
  auto ghost_terms = [](int tx, int ty, int nranks) {
    const CubedSphere g(16, tx, ty);
    const CubeLayout layout(g, nranks);
    // (panel, I, J) of every cell offset, per rank, to name sources globally.
    std::map<std::pair<int, std::int64_t>, std::array<int, 3>> name;
    for (int t = 0; t < g.ntiles(); ++t) {
      int p, i0, j0;
      g.tile_origin(t, &p, &i0, &j0);
      for (int j = -kCubeGhost; j < g.tile_ny() + kCubeGhost; ++j)
        for (int i = -kCubeGhost; i < g.tile_nx() + kCubeGhost; ++i)
          name[{layout.owner(t), layout.cell(t, i, j)}] = {p, i0 + i, j0 + j};
    }
    std::map<std::array<int, 3>, std::vector<std::pair<std::array<int, 3>, double>>> out;
    for (int r = 0; r < nranks; ++r)
      for (const auto& d : layout.ghost_fill(r)) {
        auto& v = out[name.at({r, d.offset})];
        for (const auto& t : d.terms) v.push_back({name.at({t.rank, t.offset}), t.weight});
      }
    return out;
  };
  const auto a = ghost_terms(1, 1, 1);
  const auto b = ghost_terms(2, 4, 5);
  // The 2x4 tiling has more ghosts (tile edges inside panels); the panel-edge ones must agree.
  std::size_t compared = 0;
  for (const auto& [cell, terms] : a) {
    ASSERT_TRUE(b.count(cell));
    EXPECT_EQ(b.at(cell), terms);
    ++compared;
  }
  EXPECT_EQ(compared, static_cast<std::size_t>(6 * 4 * 16 * kCubeGhost));
}
