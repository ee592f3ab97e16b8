#include <gtest/gtest.h>

#include "core/error.hpp"
#include "mesh/decomposition.hpp"

using namespace cumulus;

TEST(Decomposition, UnevenSplit37Over4) {
  EXPECT_EQ(split_lo(37, 4, 0), 0);
  EXPECT_EQ(split_lo(37, 4, 1), 10);
  EXPECT_EQ(split_lo(37, 4, 2), 19);
  EXPECT_EQ(split_lo(37, 4, 3), 28);
  EXPECT_EQ(split_lo(37, 4, 4), 37);
  const CartesianDecomposition d({37, 1, 1}, {false, false, false}, 4, 1);
  EXPECT_EQ(d.dims()[0], 4);
  EXPECT_EQ(d.box_of(0).size(0), 10);
  EXPECT_EQ(d.box_of(3).size(0), 9);
}

// For every rank count and shape: boxes tile the global box, and neighbours are mutual.
TEST(Decomposition, BoxesTileAndNeighboursAreMutual) {
  const std::vector<std::pair<Index3, int>> shapes{{{37, 23, 1}, 2}, {{13, 11, 7}, 3}, {{64, 64, 1}, 2}, {{8, 8, 8}, 3}};
  for (auto [cells, ndim] : shapes)
    for (int p = 1; p <= 12; ++p)
      for (bool per : {false, true}) {
        if (cells == Index3{8, 8, 8} && p == 11) {  // 11 is prime and larger than 8: no split
          EXPECT_THROW(CartesianDecomposition(cells, {per, !per, per}, p, ndim), InputError);
          continue;
        }
        const CartesianDecomposition d(cells, {per, !per, per}, p, ndim);
        EXPECT_EQ(d.dims()[0] * d.dims()[1] * d.dims()[2], p);
        if (ndim == 2) {
          EXPECT_EQ(d.dims()[2], 1);
        }
        std::int64_t vol = 0;
        for (int r = 0; r < p; ++r) {
          const Box b = d.box_of(r);
          vol += b.volume();
          EXPECT_EQ(d.rank_of(d.coords_of(r)), r);
          for (int q = r + 1; q < p; ++q) EXPECT_TRUE(b.intersect(d.box_of(q)).empty());
          for (int dz = -1; dz <= 1; ++dz)
            for (int dy = -1; dy <= 1; ++dy)
              for (int dx = -1; dx <= 1; ++dx) {
                const int nb = d.neighbor(r, {dx, dy, dz});
                if (nb >= 0) {
                  EXPECT_EQ(d.neighbor(nb, {-dx, -dy, -dz}), r);
                }
              }
        }
        EXPECT_EQ(vol, d.global_box().volume());
      }
}

TEST(Decomposition, NonPeriodicEdgesHaveNoNeighbour) {
  const CartesianDecomposition d({16, 16, 1}, {true, false, false}, 4, 2, 1, {2, 2, 1});
  EXPECT_EQ(d.neighbor(0, {0, -1, 0}), -1);    // bottom wall
  EXPECT_EQ(d.neighbor(0, {-1, 0, 0}), 1);     // periodic wrap in x
  EXPECT_EQ(d.neighbor(0, {-1, -1, 0}), -1);   // corner through the wall
  EXPECT_EQ(d.neighbor(0, {0, 0, 1}), -1);     // 2D: nothing along z
  EXPECT_TRUE(d.on_boundary(0, 1, 0));
  EXPECT_FALSE(d.on_boundary(0, 1, 1));
}

TEST(Decomposition, TooManyRanksIsAnInputError) {
  EXPECT_THROW(CartesianDecomposition({3, 1, 1}, {false, false, false}, 4, 1), InputError);
  EXPECT_THROW(CartesianDecomposition({4, 4, 1}, {false, false, false}, 17, 2), InputError);
  // With ghost width 3, 8 cells cannot go to 3 ranks along one axis (2-3 cells each) ...
  EXPECT_THROW(CartesianDecomposition({8, 1, 1}, {false, false, false}, 3, 1, 3), InputError);
  // ... but 2 ranks (4 cells each) can.
  EXPECT_NO_THROW(CartesianDecomposition({8, 1, 1}, {false, false, false}, 2, 1, 3));
}

TEST(Decomposition, PrefersLeastSurface) {
  const CartesianDecomposition d({64, 64, 1}, {true, true, false}, 4, 2);
  EXPECT_EQ(d.dims()[0], 2);
  EXPECT_EQ(d.dims()[1], 2);
  const CartesianDecomposition thin({1024, 8, 1}, {true, true, false}, 4, 2);
  EXPECT_EQ(thin.dims()[0], 4);
}
