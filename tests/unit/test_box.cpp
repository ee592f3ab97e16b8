#include <gtest/gtest.h>

#include "core/box.hpp"
#include "mesh/field.hpp"

using namespace cumulus;

TEST(Box, VolumeGrowIntersect) {
  const Box b(0, 0, 0, 4, 3, 1);
  EXPECT_EQ(b.volume(), 12);
  EXPECT_FALSE(b.empty());
  const Box g = b.grown({1, 1, 0});
  EXPECT_EQ(g, Box(-1, -1, 0, 5, 4, 1));
  EXPECT_EQ(g.intersect(Box(2, 2, 0, 9, 9, 1)), Box(2, 2, 0, 5, 4, 1));
  EXPECT_TRUE(b.intersect(Box(5, 0, 0, 6, 1, 1)).empty());
  EXPECT_EQ(b.shifted({1, 2, 0}), Box(1, 2, 0, 5, 5, 1));
}

// The rim slabs and the inner box tile the box exactly once.
TEST(Box, RimBoxesTileTheBox) {
  for (const Box box : {Box(0, 0, 0, 7, 5, 4), Box(3, 2, 0, 5, 9, 1), Box(0, 0, 0, 1, 1, 1), Box(0, 0, 0, 2, 6, 3)}) {
    for (const Index3 shrink : {Index3{1, 1, 1}, Index3{1, 1, 0}, Index3{2, 1, 0}}) {
      const Box inner = box.grown({-shrink[0], -shrink[1], -shrink[2]});
      std::vector<int> hits(static_cast<std::size_t>(box.volume()), 0);
      auto mark = [&](const Box& b) {
        for (int k = b.lo[2]; k < b.hi[2]; ++k)
          for (int j = b.lo[1]; j < b.hi[1]; ++j)
            for (int i = b.lo[0]; i < b.hi[0]; ++i) {
              ASSERT_TRUE(box.contains(i, j, k));
              hits[static_cast<std::size_t>(((k - box.lo[2]) * box.size(1) + (j - box.lo[1])) * box.size(0) +
                                            (i - box.lo[0]))]++;
            }
      };
      if (!inner.intersect(box).empty()) mark(inner.intersect(box));
      for (const Box& r : rim_boxes(box, inner)) mark(r);
      for (int h : hits) EXPECT_EQ(h, 1) << box.str() << " shrink " << shrink[0] << shrink[1] << shrink[2];
    }
  }
}
