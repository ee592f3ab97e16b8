// Kernel source (nvcc in a CUDA build): for_each and reductions on every built backend.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "../backends.hpp"
#include "core/exact_sum.hpp"
#include "core/memory.hpp"
#include "mesh/field.hpp"

using namespace cumulus;
using cumulus::testing::backend_name;
using cumulus::testing::built_backends;

class ExecTest : public ::testing::TestWithParam<Backend> {};

namespace {
// Free functions: nvcc needs extended lambdas outside private members and test bodies' classes.
void fill_index(const Exec& ex, const View<double>& v, const Box& b) {
  for_each(ex, "test.fill", b, [=] CUMULUS_HD(int i, int j, int k) { v(i, j, k, 0) = i + 100.0 * j + 10000.0 * k; });
}
double sum_of(const Exec& ex, const View<double>& v, const Box& b) {
  return reduce(ex, "test.sum", b, 0.0, SumOp{}, [=] CUMULUS_HD(int i, int j, int k) { return v(i, j, k, 0); });
}
std::int64_t count_if_above(const Exec& ex, const View<double>& v, const Box& b, double x) {
  return reduce(ex, "test.count", b, std::int64_t{0}, SumOp{},
                [=] CUMULUS_HD(int i, int j, int k) -> std::int64_t { return v(i, j, k, 0) > x ? 1 : 0; });
}
double max_of(const Exec& ex, const View<double>& v, const Box& b) {
  return reduce(ex, "test.max", b, -1e300, MaxOp{}, [=] CUMULUS_HD(int i, int j, int k) { return v(i, j, k, 0); });
}
ExactSum exact_sum_of(const Exec& ex, const View<double>& v, const Box& b, int e) {
  const double to_units = std::ldexp(1.0, -e);
  return reduce(ex, "test.exact", b, ExactSum{}, SumOp{},
                [=] CUMULUS_HD(int i, int j, int k) { return ExactSum::of_units(v(i, j, k, 0) * to_units); });
}
}  // namespace

// Terms of both signs over twelve orders of magnitude, summed by the backend's reduction, by the
// host in reverse order and in two interleaved halves: the same bits every way, and the value
// within rounding of a compensated sum of the terms (each is a multiple of 2^e, so it is exact).
TEST_P(ExecTest, ExactSumIsTheSameInAnyOrder) {
  CUMULUS_EXEC_OR_SKIP(ex, GetParam());
  const Box b(0, 0, 0, 37, 11, 5);
  const int e = -80;  // below every term's last bit (2^-73)
  std::vector<double> x(static_cast<std::size_t>(b.volume()));
  std::uint64_t r = 12345;
  for (double& t : x) {
    r = r * 6364136223846793005ull + 1442695040888963407ull;
    const double mant = static_cast<double>(r >> 11) / 9007199254740992.0;  // [0, 1)
    const int expo = static_cast<int>((r >> 3) % 40) - 20;                 // 2^-20 .. 2^19
    t = std::ldexp(std::trunc(std::ldexp(mant, 52)), expo - 52 - (r & 1 ? 0 : 1));
    if (r & 4) t = -t;
  }
  Field<double> f("f", ex.backend(), b, {0, 0, 0}, 1);
  f.interior_from_host(ex, x);
  const ExactSum dev = exact_sum_of(ex, f.view(), b, e);
  ExactSum rev, even, odd;
  for (std::size_t n = x.size(); n-- > 0;) rev = rev + ExactSum::of(x[n], e);
  for (std::size_t n = 0; n < x.size(); ++n) (n % 2 ? odd : even) = (n % 2 ? odd : even) + ExactSum::of(x[n], e);
  const ExactSum halves = odd + even;
  for (int l = 0; l < kExactSumLimbs; ++l) {
    EXPECT_EQ(dev.limb(l), rev.limb(l)) << "limb " << l;
    EXPECT_EQ(halves.limb(l), rev.limb(l)) << "limb " << l;
  }
  double v = 0;
  ASSERT_TRUE(dev.value(e, &v));
  long double ref = 0;
  for (double t : x) ref += t;  // 64-bit mantissa: exact here up to a few ulps of the double
  EXPECT_NEAR(v, static_cast<double>(ref), 4e-16 * std::fabs(static_cast<double>(ref)));
}

// Cancellation leaves the small remainder exactly (a double sum would lose it), negative totals
// come back negative, and a term beyond the range or NaN makes value() fail.
TEST(ExactSum, KeepsWhatCancellationLeavesAndReportsOverflow) {
  const int e = -80;
  const double big = std::ldexp(1.0, 70), tiny = std::ldexp(3.0, -79);
  ExactSum s = ExactSum::of(big, e) + ExactSum::of(tiny, e) + ExactSum::of(-big, e);
  double v = 0;
  ASSERT_TRUE(s.value(e, &v));
  EXPECT_EQ(v, tiny);
  s = ExactSum::of(big, e) + ExactSum::of(-big, e) + ExactSum::of(-tiny, e);
  ASSERT_TRUE(s.value(e, &v));
  EXPECT_EQ(v, -tiny);
  EXPECT_EQ((big + tiny) - big, 0.0);  // what the doubles would give
  // Limbs of many terms, opposite in sign, that cancel but for one unit.
  ExactSum many;
  many.word[0] = (std::int64_t{1} << 62) + 1;
  many.word[1] = -(std::int64_t{1} << 30);
  ASSERT_TRUE(many.value(e, &v));
  EXPECT_EQ(v, std::ldexp(1.0, e));
  EXPECT_FALSE((ExactSum::of(std::ldexp(1.0, e + kExactSumBits), e) + s).value(e, &v));
  EXPECT_FALSE(ExactSum::of(std::nan(""), e).value(e, &v));
  // Below the unit: truncated toward zero, whatever the sign.
  ASSERT_TRUE((ExactSum::of(std::ldexp(1.75, e), e) + ExactSum::of(std::ldexp(-1.75, e), e)).value(e, &v));
  EXPECT_EQ(v, 0.0);
}

TEST_P(ExecTest, ForEachVisitsEveryCellOnce) {
  CUMULUS_EXEC_OR_SKIP(ex, GetParam());
  const Box b(-2, 3, 1, 17, 9, 5);  // odd sizes, negative lower corner
  Field<double> f("f", ex.backend(), b, {1, 1, 1}, 1);
  fill_index(ex, f.view(), b);
  const std::vector<double> h = f.interior_to_host(ex);
  std::size_t n = 0;
  double expect_sum = 0;
  for (int k = b.lo[2]; k < b.hi[2]; ++k)
    for (int j = b.lo[1]; j < b.hi[1]; ++j)
      for (int i = b.lo[0]; i < b.hi[0]; ++i) {
        EXPECT_EQ(h[n++], i + 100.0 * j + 10000.0 * k);
        expect_sum += i + 100.0 * j + 10000.0 * k;
      }
  EXPECT_DOUBLE_EQ(sum_of(ex, f.view(), b), expect_sum);
  EXPECT_EQ(max_of(ex, f.view(), b), 16 + 800.0 + 40000.0);
  EXPECT_EQ(count_if_above(ex, f.view(), b, 30000.0), 19 * 6 * 2);  // k = 3 and 4
}

TEST_P(ExecTest, EmptyBoxesDoNothing) {
  CUMULUS_EXEC_OR_SKIP(ex, GetParam());
  Field<double> f("f", ex.backend(), Box(0, 0, 0, 2, 2, 1), {0, 0, 0}, 1);
  EXPECT_EQ(sum_of(ex, f.view(), Box(0, 0, 0, 0, 2, 1)), 0.0);
  fill_index(ex, f.view(), Box(1, 1, 0, 1, 1, 1));
}

TEST(Exec, CudaWithoutDeviceIsAnInputError) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is visible";
  EXPECT_THROW(select_backend("cuda", 0, nullptr), InputError);
  std::string why;
  EXPECT_EQ(select_backend("auto", 0, &why).backend(), Backend::host);
  EXPECT_FALSE(why.empty());
}

INSTANTIATE_TEST_SUITE_P(Backends, ExecTest, ::testing::ValuesIn(built_backends()), backend_name);
