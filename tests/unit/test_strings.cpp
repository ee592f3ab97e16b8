#include <gtest/gtest.h>

#include "core/strings.hpp"

using namespace cumulus;

TEST(Strings, EditDistance) {
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("same", "same"), 0u);
}

TEST(Strings, ClosestMatchSuggestsTyposOnly) {
  const std::vector<std::string> keys{"heat.diffusivity", "heat.cells", "run.end_time"};
  EXPECT_EQ(closest_match("heat.difusivity", keys), "heat.diffusivity");
  EXPECT_EQ(closest_match("heat.cels", keys), "heat.cells");
  EXPECT_EQ(closest_match("completely.different", keys), "");
}

TEST(Strings, FormatHms) {
  EXPECT_EQ(format_hms(3723), "01:02:03");
  EXPECT_EQ(format_hms(-1), "--:--:--");
}
