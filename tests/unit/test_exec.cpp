// Kernel source (nvcc in a CUDA build): for_each and reductions on every built backend.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <tuple>
#include <vector>

#include <omp.h>

#include "../backends.hpp"
#include "core/exact_sum.hpp"
#include "core/memory.hpp"
#include "core/timers.hpp"
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
std::int64_t count_into(const Exec& ex, const View<double>& v, const Box& b, double x, std::int64_t* into) {
  return reduce_into(ex, "test.count_into", b, std::int64_t{0}, SumOp{},
                     [=] CUMULUS_HD(int i, int j, int k) -> std::int64_t { return v(i, j, k, 0) > x ? 1 : 0; }, into);
}
double max_into(const Exec& ex, const View<double>& v, const Box& b, double* into) {
  return reduce_into(ex, "test.max_into", b, -1e300, MaxOp{}, [=] CUMULUS_HD(int i, int j, int k) { return v(i, j, k, 0); }, into);
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

// of_units_floor rounds each term down (md's thermo sums); value_rounded gives the exact sum rounded
// once, to nearest even: against 128-bit integer sums converted once, and a tie that a limb below
// the top three decides (value() rounds it twice and gets it wrong).
TEST(ExactSum, FloorTermsAndCorrectlyRoundedValue) {
  double v = 0;
  const double floors[][2] = {{1.75, 1}, {-1.75, -2}, {-2.0, -2}, {-0.25, -1}, {0.5, 0}, {-0x1p60, -0x1p60}};
  for (const auto& f : floors) {
    ASSERT_TRUE(ExactSum::of_units_floor(f[0]).value_rounded(0, &v));
    EXPECT_EQ(v, f[1]) << f[0];
  }
  std::uint64_t r = 99;
  for (int trial = 0; trial < 2000; ++trial) {
    ExactSum s;
    __int128 exact = 0;
    const int n = 1 + trial % 17;
    for (int k = 0; k < n; ++k) {
      r = r * 6364136223846793005ull + 1442695040888963407ull;
      const int shift = static_cast<int>((r >> 7) % 62);
      std::int64_t t = static_cast<std::int64_t>(r >> (shift + 2));
      if (r & 2) t = -t;
      s = s + ExactSum::of_units(static_cast<double>(t));
      exact += static_cast<std::int64_t>(static_cast<double>(t));  // what the term is as a double
    }
    ASSERT_TRUE(s.value_rounded(-7, &v));
    EXPECT_EQ(v, std::ldexp(static_cast<double>(exact), -7)) << "trial " << trial;
  }
  // 2^128 + 2^75 + 1 units: above a tie (2^75 is half the ulp of 2^128), so it rounds up.
  ExactSum tie;
  tie.word[4] = 1;
  tie.word[2] = std::int64_t{1} << 11;
  tie.word[0] = 1;
  ASSERT_TRUE(tie.value_rounded(0, &v));
  EXPECT_EQ(v, 0x1p128 + 0x1p76);
  ASSERT_TRUE(tie.value(0, &v));
  EXPECT_EQ(v, 0x1p128) << "value() rounds twice (this is why value_rounded exists)";
  tie.word[0] = 0;  // an exact tie: to even
  ASSERT_TRUE(tie.value_rounded(0, &v));
  EXPECT_EQ(v, 0x1p128);
  for (auto& w : tie.word) w = -w;  // and the same below zero
  tie.word[0] = -1;
  ASSERT_TRUE(tie.value_rounded(0, &v));
  EXPECT_EQ(v, -(0x1p128 + 0x1p76));
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

#if !defined(__CUDACC__)
// A box of one row (a loop over atoms) is shared out along i over the threads (before, over rows,
// one thread took it all): every cell once, every thread at work; reductions whose grouping does
// not matter (integers, ExactSum) give the same bits at any thread count, and a double sum keeps
// its serial order.
TEST(Exec, OneRowLoopsShareTheThreads) {
  const Exec ex = Exec::host();
  const int n = 40000;  // over for_each's serial limit
  const Box row(0, 0, 0, n, 1, 1);
  std::vector<int> visits(n, 0), thread(n, -1);
  int* const pv = visits.data();
  int* const pt = thread.data();
  const int saved = omp_get_max_threads();
  omp_set_num_threads(2);
  for_each(ex, "test.row", row, [=](int i, int, int) {
    ++pv[i];
    pt[i] = omp_get_thread_num();
  });
  for (int i = 0; i < n; ++i) ASSERT_EQ(visits[i], 1) << i;
  EXPECT_EQ(thread.front(), 0);
  EXPECT_EQ(thread.back(), 1);
  auto term = [](int i) { return std::ldexp(static_cast<double>((i * 7919) % 1000 - 500), (i % 60) - 30); };
  auto sums = [&] {
    const std::int64_t si = reduce(ex, "test.int", row, std::int64_t{0}, SumOp{},
                                   [=](int i, int, int) -> std::int64_t { return (i * 7919LL) % 1000 - 500; });
    const std::int64_t mi = reduce(ex, "test.min", row, std::int64_t{1} << 62, MinOp{},
                                   [=](int i, int, int) -> std::int64_t { return (i * 7919LL) % 100003; });
    const ExactSum se = reduce(ex, "test.exact", row, ExactSum{}, SumOp{},
                               [=](int i, int, int) { return ExactSum::of_units(term(i) * 0x1p40); });
    const double sd = reduce(ex, "test.double", row, 0.0, SumOp{}, [=](int i, int, int) { return term(i); });
    return std::make_tuple(si, mi, se, sd);
  };
  const auto two = sums();
  omp_set_num_threads(1);
  const auto one = sums();
  omp_set_num_threads(saved);
  EXPECT_EQ(std::get<0>(two), std::get<0>(one));
  EXPECT_EQ(std::get<1>(two), std::get<1>(one));
  for (int w = 0; w < ExactSum::kWords; ++w) EXPECT_EQ(std::get<2>(two).word[w], std::get<2>(one).word[w]) << w;
  double serial = 0;
  for (int i = 0; i < n; ++i) serial += term(i);
  EXPECT_EQ(std::get<3>(two), serial);  // bitwise: the row's double sum stays in order
  EXPECT_EQ(std::get<3>(one), serial);
}
#endif

TEST_P(ExecTest, EmptyBoxesDoNothing) {
  CUMULUS_EXEC_OR_SKIP(ex, GetParam());
  Field<double> f("f", ex.backend(), Box(0, 0, 0, 2, 2, 1), {0, 0, 0}, 1);
  EXPECT_EQ(sum_of(ex, f.view(), Box(0, 0, 0, 0, 2, 1)), 0.0);
  fill_index(ex, f.view(), Box(1, 1, 0, 1, 1, 1));
}

// reduce_into stores the answer in the backend's memory and returns init; reductions queued after
// it (which share its scratch on a GPU) do not disturb it; an empty box stores init; without a
// target it is reduce.
TEST_P(ExecTest, ReduceIntoStoresItsAnswerForLater) {
  CUMULUS_EXEC_OR_SKIP(ex, GetParam());
  const Box b(0, 0, 0, 37, 11, 5);
  Field<double> f("f", ex.backend(), b, {0, 0, 0}, 1);
  fill_index(ex, f.view(), b);
  Buffer<std::int64_t> counts(ex.backend(), 3);
  Buffer<double> maxima(ex.backend(), 1);
  counts.from_host(ex, {-7, -7, -7});
  EXPECT_EQ(count_into(ex, f.view(), b, 20000.5, counts.data()), 0);  // returns init, stores the count
  EXPECT_EQ(max_into(ex, f.view(), Box(0, 0, 0, 10, 3, 2), maxima.data()), -1e300);
  EXPECT_EQ(count_into(ex, f.view(), Box(0, 0, 0, 0, 11, 5), 0.0, counts.data() + 1), 0);  // empty: stores 0
  EXPECT_EQ(sum_of(ex, f.view(), b), sum_of(ex, f.view(), b));  // waited-for reductions in between
  EXPECT_EQ(count_into(ex, f.view(), b, 10000.5, counts.data() + 2), 0);
  const std::vector<std::int64_t> h = counts.to_host(ex);
  EXPECT_EQ(h[0], 2 * 37 * 11 + 37 * 11 - 1);  // k = 3, 4 all; k = 2 all but i = j = 0
  EXPECT_EQ(h[1], 0);
  EXPECT_EQ(h[2], count_if_above(ex, f.view(), b, 10000.5));
  EXPECT_EQ(h[0], count_if_above(ex, f.view(), b, 20000.5));
  EXPECT_EQ(maxima.to_host(ex)[0], 9 + 100.0 * 2 + 10000.0 * 1);
  EXPECT_EQ(count_into(ex, f.view(), b, 20000.5, nullptr), h[0]);  // no target: the answer, waited for
}

TEST(Exec, CudaWithoutDeviceIsAnInputError) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is visible";
  // The runtime's own reason is kept (a missing driver must not read as "no GPU" without a word).
  std::string reason;
  EXPECT_EQ(cuda_device_count(&reason), 0);
  EXPECT_FALSE(reason.empty());
  try {
    select_backend("cuda", 0, nullptr);
    ADD_FAILURE() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
  }
  std::string why;
  EXPECT_EQ(select_backend("auto", 0, &why).backend(), Backend::host);
  EXPECT_NE(why.find(reason), std::string::npos) << why;
}

// The parts a CUDA launch is split into: every cell exactly once, in order, no part over the limit,
// whole k-slabs while a plane fits, runs of rows when a plane alone is too large (a 2D box over
// 2^30 cells), and a row too long for any part refused.
TEST(Exec, LaunchPartsCoverTheBoxWithinTheIndexLimit) {
  struct Case {
    Box box;
    std::int64_t max_cells;
  };
  for (const Case& c : {Case{Box(-3, 2, 1, 7, 9, 12), 70}, Case{Box(0, 0, 0, 10, 7, 1), 25},
                        Case{Box(0, 0, 0, 10, 7, 3), 10}, Case{Box(5, -4, -2, 6, 3, 4), 1000},
                        Case{Box(0, 0, 0, 33, 40, 2), 100}}) {
    std::vector<std::int64_t> seen(static_cast<std::size_t>(c.box.volume()), 0);
    std::int64_t cells = 0;
    int parts = 0;
    detail::split_for_32bit_index("test", c.box, c.max_cells, [&](const Box& p) {
      ++parts;
      EXPECT_LE(p.volume(), c.max_cells) << p.str();
      EXPECT_FALSE(p.empty());
      EXPECT_EQ(p.lo[0], c.box.lo[0]);  // whole rows always
      EXPECT_EQ(p.hi[0], c.box.hi[0]);
      for (int k = p.lo[2]; k < p.hi[2]; ++k)
        for (int j = p.lo[1]; j < p.hi[1]; ++j)
          for (int i = p.lo[0]; i < p.hi[0]; ++i) {
            const std::int64_t n = ((std::int64_t{k} - c.box.lo[2]) * c.box.size(1) + (j - c.box.lo[1])) * c.box.size(0) +
                                   (i - c.box.lo[0]);
            ASSERT_GE(n, 0);
            ASSERT_LT(n, c.box.volume());
            EXPECT_EQ(seen[static_cast<std::size_t>(n)]++, 0) << "cell visited twice";
            EXPECT_EQ(n, cells++) << "parts out of order";
          }
    });
    EXPECT_EQ(cells, c.box.volume()) << c.box.str();
    const std::int64_t plane = std::int64_t{c.box.size(0)} * c.box.size(1);
    if (plane <= c.max_cells) {  // whole k-slabs: as few parts as the limit allows
      EXPECT_EQ(parts, (c.box.size(2) + c.max_cells / plane - 1) / (c.max_cells / plane)) << c.box.str();
    }
  }
  EXPECT_THROW(detail::split_for_32bit_index("test", Box(0, 0, 0, 11, 2, 2), 10, [](const Box&) {}), Error);
}

// A failed allocation is the project's error and names what it was for.
TEST(Exec, FailedAllocationNamesItsArray) {
  try {
    void* p = memory::allocate(Backend::host, std::size_t{1} << 62, "test.huge_field");
    memory::release(Backend::host, p);
    ADD_FAILURE() << "an allocation of 4 EiB succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("test.huge_field"), std::string::npos) << e.what();
  }
}

// Timer entries outlive a reset (pending GPU timings and open scopes hold pointers to them), and
// a reset hides them until they are used again.
TEST(Exec, TimerSlotsSurviveReset) {
  TimerRegistry& r = TimerRegistry::instance();
  TimerStat* s = r.slot("test.slot.a.label.longer.than.sso");
  TimerRegistry::add(s, 1.5);
  EXPECT_EQ(r.slot("test.slot.a.label.longer.than.sso"), s);
  EXPECT_EQ(r.snapshot().at("test.slot.a.label.longer.than.sso").calls, 1);
  r.reset();
  EXPECT_EQ(r.snapshot().count("test.slot.a.label.longer.than.sso"), 0u);
  { ScopedTimer t("test.slot.a.label.longer.than.sso"); }
  EXPECT_EQ(s->calls, 1);
  EXPECT_EQ(r.snapshot().at("test.slot.a.label.longer.than.sso").calls, 1);
}

#if CUMULUS_COMPILING_CUDA
namespace {
__global__ void noop_kernel() {}
}  // namespace

// A launch that fails (an invalid configuration: not sticky) is reported once, against its own
// kernel, and the next kernel runs: the error is taken, not peeked at (peeking never clears, and
// every later launch would be blamed).
TEST(ExecCuda, LaunchErrorIsReportedOnceAgainstItsKernel) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const Exec ex = select_backend("cuda", 0, nullptr);
  noop_kernel<<<1, 4096, 0, ex.stream()>>>();  // over the 1024 threads a block may have
  try {
    detail::check_cuda_launch(ex, "test.bad_launch", Box(0, 0, 0, 1, 1, 1));
    ADD_FAILURE() << "no error for a bad launch";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("test.bad_launch"), std::string::npos) << e.what();
  }
  Field<double> f("f", ex.backend(), Box(0, 0, 0, 4, 3, 2), {0, 0, 0}, 1);
  EXPECT_NO_THROW(fill_index(ex, f.view(), Box(0, 0, 0, 4, 3, 2)));
  EXPECT_NO_THROW(ex.synchronize());
}
#endif

INSTANTIATE_TEST_SUITE_P(Backends, ExecTest, ::testing::ValuesIn(built_backends()), backend_name);
