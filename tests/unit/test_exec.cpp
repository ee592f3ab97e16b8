// Kernel source (nvcc in a CUDA build): for_each and reductions on every built backend.
#include <gtest/gtest.h>

#include <cstdint>

#include "../backends.hpp"
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
}  // namespace

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
