// Lattice Boltzmann building blocks: the velocity sets' moments, and the binary16 conversions
// behind fp16 storage (checked against the compiler's own _Float16 rounding).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/half.hpp"
#include "mesh/field.hpp"
#include "solvers/lbm/lattice.hpp"
#include "solvers/lbm/lbm_kernels.hpp"

using namespace cumulus;

namespace {
template <class L>
void check_lattice() {
  double w = 0, c1[3] = {0, 0, 0}, c2[3][3] = {}, c4_xxxx = 0, c4_xxyy = 0;
  for (int q = 0; q < L::Q; ++q) {
    const int o = lbm::opposite(q);
    for (int a = 0; a < 3; ++a) EXPECT_EQ(L::c(o, a), -L::c(q, a)) << L::name << " q " << q;
    EXPECT_EQ(L::w(o), L::w(q));
    w += L::w(q);
    for (int a = 0; a < 3; ++a) {
      c1[a] += L::w(q) * L::c(q, a);
      for (int b = 0; b < 3; ++b) c2[a][b] += L::w(q) * L::c(q, a) * L::c(q, b);
    }
    c4_xxxx += L::w(q) * std::pow(L::c(q, 0), 4);
    c4_xxyy += L::w(q) * L::c(q, 0) * L::c(q, 0) * L::c(q, 1) * L::c(q, 1);
    for (int p = 0; p < q; ++p) {  // directions are distinct
      bool same = true;
      for (int a = 0; a < 3; ++a) same = same && L::c(p, a) == L::c(q, a);
      EXPECT_FALSE(same) << L::name << " " << p << " " << q;
    }
  }
  EXPECT_NEAR(w, 1.0, 1e-15);
  for (int a = 0; a < 3; ++a) {
    EXPECT_NEAR(c1[a], 0.0, 1e-15);
    for (int b = 0; b < 3; ++b) EXPECT_NEAR(c2[a][b], (a == b && a < L::D) ? 1.0 / 3.0 : 0.0, 1e-15);
  }
  // Fourth-order isotropy (what the Navier-Stokes limit needs): sum w c^4 = 3 cs^4, sum w cx^2 cy^2 = cs^4.
  EXPECT_NEAR(c4_xxxx, 3.0 / 9.0, 1e-15);
  EXPECT_NEAR(c4_xxyy, 1.0 / 9.0, 1e-15);
}

std::uint16_t reference_half(float f) {
  const _Float16 h = static_cast<_Float16>(f);
  std::uint16_t u;
  std::memcpy(&u, &h, 2);
  if ((u & 0x7c00) == 0x7c00 && (u & 0x3ff)) return 0x7fff;  // NaNs: one canonical pattern
  return u;
}
}  // namespace

TEST(LbmLattice, MomentsAndOpposites) {
  check_lattice<lbm::D2Q9>();
  check_lattice<lbm::D3Q19>();
  check_lattice<lbm::D3Q27>();
}

TEST(Half, EveryHalfRoundTrips) {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const float f = half_to_float(static_cast<std::uint16_t>(h));
    const std::uint16_t back = float_to_half(f);
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) {
      EXPECT_EQ(back, 0x7fff);  // NaN
    } else {
      EXPECT_EQ(back, h) << std::hex << h;
    }
    _Float16 ref;
    const std::uint16_t hs = static_cast<std::uint16_t>(h);
    std::memcpy(&ref, &hs, 2);
    if (f == f) {
      EXPECT_EQ(f, static_cast<float>(ref)) << std::hex << h;
    }
  }
}

TEST(Half, RoundsToNearestEvenLikeTheCompiler) {
  // Around every rounding boundary (the midpoint between neighbouring halves, +-1 float ulp) ...
  for (std::uint32_t h = 0; h < 0x7bff; ++h) {
    const float a = half_to_float(static_cast<std::uint16_t>(h)), b = half_to_float(static_cast<std::uint16_t>(h + 1));
    const float mid = 0.5f * (a + b);
    for (float x : {std::nextafter(mid, 0.0f), mid, std::nextafter(mid, 1e9f)})
      for (float s : {x, -x}) ASSERT_EQ(float_to_half(s), reference_half(s)) << s;
  }
  // ... and a sweep of float bit patterns: subnormals, overflow, infinities and NaNs included.
  for (std::uint64_t u = 0; u < 0x100000000ull; u += 4093) {
    float f;
    const std::uint32_t b = static_cast<std::uint32_t>(u);
    std::memcpy(&f, &b, 4);
    ASSERT_EQ(float_to_half(f), reference_half(f)) << std::hex << b;
  }
}

// fp16 storage: on an AVX-512 host the stream-collide kernel converts whole rows in hardware into
// fp32 row buffers (lbm_kernels_impl.hpp, stream_collide_half_rows). Its definition is "load each
// population in software, run the fp32 body, store in software"; the row path must give exactly
// those bits, for rows whose length is not a multiple of the 16-wide conversions, with a TRT and a
// Smagorinsky collision and a body force. (Without AVX-512 both sides take the software path.)
TEST(LbmHalfRows, RowConversionsGiveTheSoftwareBits) {
  using L = lbm::D3Q19;
  const Box box(0, 0, 0, 37, 5, 4);
  const Index3 ghost{1, 1, 1};
  Field<std::uint16_t> src16("src16", Backend::host, box, ghost, L::Q), dst16("dst16", Backend::host, box, ghost, L::Q);
  Field<float> srcf("srcf", Backend::host, box, ghost, L::Q), dstf("dstf", Backend::host, box, ghost, L::Q);
  // Shifted populations near a moving equilibrium: (f - w) 2^15, as fp16 storage holds them.
  std::uint64_t z = 88172645463325252ull;
  const std::size_t n = src16.buffer().size();
  std::vector<std::uint16_t> h(n);
  for (std::size_t k = 0; k < n; ++k) {
    z ^= z << 13;
    z ^= z >> 7;
    z ^= z << 17;
    const float dev = static_cast<float>(static_cast<double>(z >> 11) / 9007199254740992.0 - 0.5) * 0.02f;
    h[k] = float_to_half(dev * 32768.0f);
  }
  src16.buffer().from_host(Exec::host(), h);
  std::vector<float> f(n);
  for (std::size_t k = 0; k < n; ++k) f[k] = lbm::Storage<std::uint16_t>::load(h[k]);
  srcf.buffer().from_host(Exec::host(), f);
  for (const double smagorinsky : {0.0, 0.15}) {
    lbm::StepParams p;
    p.omega = 1.0 / 0.56;
    p.magic = 3.0 / 16.0;
    p.omega_minus = 1.0 / (p.magic / (1.0 / p.omega - 0.5) + 0.5);
    p.smagorinsky = smagorinsky;
    p.force[0] = 1e-5;
    p.force[2] = -2e-6;
    lbm::kernels::host_pass::stream_collide<L, std::uint16_t>(Exec::host(), src16.view(), dst16.view(), box, p);
    lbm::kernels::host_pass::stream_collide<L, float>(Exec::host(), srcf.view(), dstf.view(), box, p);
    const std::vector<std::uint16_t> got = dst16.buffer().to_host(Exec::host());
    const std::vector<float> ref = dstf.buffer().to_host(Exec::host());
    const View<std::uint16_t> vg{const_cast<std::uint16_t*>(got.data()), -1, -1, -1, 39, 39 * 7, 39 * 7 * 6};
    const View<float> vr{const_cast<float*>(ref.data()), -1, -1, -1, 39, 39 * 7, 39 * 7 * 6};
    long differ = 0, cells = 0;
    for (int q = 0; q < L::Q; ++q)
      for (int k = 0; k < 4; ++k)
        for (int j = 0; j < 5; ++j)
          for (int i = 0; i < 37; ++i, ++cells)
            differ += vg(i, j, k, q) != lbm::Storage<std::uint16_t>::store(vr(i, j, k, q));
    EXPECT_EQ(differ, 0) << "of " << cells << " populations, Smagorinsky " << smagorinsky;
  }
}
