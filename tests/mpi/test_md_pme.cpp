// Smooth PME (solvers/md/pme.*): its B-splines, its energy, forces and virial against the Ewald
// reciprocal sum evaluated directly, and the same bits at every rank count (run at 1-4 and 6 ranks).
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../backends.hpp"
#include "core/comm.hpp"
#include "core/constants.hpp"
#include "mesh/particle_exchange.hpp"
#include "solvers/md/pme.hpp"

using namespace cumulus;
using namespace cumulus::md;

TEST(PmeBspline, PartitionOfUnityAndKnownValues) {
  for (int p = 2; p <= kPmeMaxOrder; ++p)
    for (double w : {0.0, 0.125, 0.5, 0.9}) {
      double m[kPmeMaxOrder], dm[kPmeMaxOrder];
      pme_bspline(w, p, m, dm);
      double s = 0, ds = 0;
      for (int i = 0; i < p; ++i) {
        s += m[i];
        ds += dm[i];
      }
      EXPECT_NEAR(s, 1.0, 1e-15) << "order " << p << " w " << w;
      EXPECT_NEAR(ds, 0.0, 1e-15) << "order " << p << " w " << w;
    }
  double m[kPmeMaxOrder];
  pme_bspline(0.0, 4, m, nullptr);  // M_4 at 0, 1, 2, 3
  EXPECT_DOUBLE_EQ(m[0], 0.0);
  EXPECT_DOUBLE_EQ(m[1], 1.0 / 6);
  EXPECT_DOUBLE_EQ(m[2], 2.0 / 3);
  EXPECT_DOUBLE_EQ(m[3], 1.0 / 6);
  // The derivative against a central difference of M_5 at w + 2.
  double a[kPmeMaxOrder], b[kPmeMaxOrder], d[kPmeMaxOrder];
  const double w = 0.3, eps = 1e-6;
  pme_bspline(w + eps, 5, a, nullptr);
  pme_bspline(w - eps, 5, b, nullptr);
  pme_bspline(w, 5, m, d);
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(d[i], (a[i] - b[i]) / (2 * eps), 1e-8) << i;
}

namespace {
struct Charges {
  std::vector<double> x, y, z, q;
  std::array<double, 3> box{};
};

// A neutral random set of charges (+-1 and +-0.5), positions in [0, L).
Charges random_charges(int n, std::array<double, 3> box, unsigned seed) {
  Charges c;
  c.box = box;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int i = 0; i < n; ++i) {
    c.x.push_back(u(rng) * box[0]);
    c.y.push_back(u(rng) * box[1]);
    c.z.push_back(u(rng) * box[2]);
    c.q.push_back((i % 2 == 0 ? 1.0 : -1.0) * (i % 4 < 2 ? 1.0 : 0.5));
  }
  return c;
}

struct Reference {
  double energy = 0;
  std::array<double, 6> virial{};
  std::vector<double> fx, fy, fz;
};

// The Ewald reciprocal sum term by term over every m with |m_a L_a| <= kmax (tin-foil).
Reference ewald_reciprocal(const Charges& c, double alpha, double coulomb, int kmax) {
  const int n = static_cast<int>(c.q.size());
  const double V = c.box[0] * c.box[1] * c.box[2];
  Reference r;
  r.fx.assign(n, 0.0);
  r.fy.assign(n, 0.0);
  r.fz.assign(n, 0.0);
  for (int a = -kmax; a <= kmax; ++a)
    for (int b = -kmax; b <= kmax; ++b)
      for (int g = -kmax; g <= kmax; ++g) {
        if (a == 0 && b == 0 && g == 0) continue;
        const double m[3] = {a / c.box[0], b / c.box[1], g / c.box[2]};
        const double m2 = m[0] * m[0] + m[1] * m[1] + m[2] * m[2];
        const double f = std::exp(-kPi * kPi * m2 / (alpha * alpha)) / m2;
        std::complex<double> s = 0;
        std::vector<std::complex<double>> phase(static_cast<std::size_t>(n));
        for (int j = 0; j < n; ++j) {
          phase[j] = std::polar(1.0, 2 * kPi * (m[0] * c.x[j] + m[1] * c.y[j] + m[2] * c.z[j]));
          s += c.q[j] * phase[j];
        }
        const double e = coulomb / (2 * kPi * V) * f * std::norm(s);
        r.energy += e;
        const double vf = 2 * (1 + kPi * kPi * m2 / (alpha * alpha)) / m2;
        const double d[6] = {1 - vf * m[0] * m[0], 1 - vf * m[1] * m[1], 1 - vf * m[2] * m[2],
                             -vf * m[0] * m[1], -vf * m[0] * m[2], -vf * m[1] * m[2]};
        for (int v = 0; v < 6; ++v) r.virial[v] += e * d[v];
        for (int j = 0; j < n; ++j) {
          const double im = (phase[j] * std::conj(s)).imag();
          const double k = 2 * coulomb / V * f * c.q[j] * im;
          r.fx[j] += k * m[0];
          r.fy[j] += k * m[1];
          r.fz[j] += k * m[2];
        }
      }
  return r;
}

struct Outcome {
  Pme::Result result;
  std::vector<double> fx, fy, fz;  // for every atom (zero for those another rank owns)
  std::vector<char> mine;
  double pe_sum = 0, virial_sum = 0;  // the per-atom shares, summed over atoms and ranks
  bool forces_without_energy_differ = false;
  // The step into arrays already holding other terms, in place, against into arrays of -0 added
  // to those after (KSpace::adds_once): entries that differ (0: the same bits).
  std::int64_t adds_apart_differ = -1;
};

// PME over `comm` with the atoms owned by block (the atoms' decomposition `bins`), shifted by up to
// `jiggle` outside it (within the drift) so that stencils cross into ghost layers and wrap.
// `owners`: the positions ownership was decided at (the last migration), default c's. R: the
// grid's precision (float: md.precision = "mixed").
template <class R = double>
Outcome run_pme(const Charges& c, const PmeParams& p, const Comm& comm, const Index3& bins, double drift,
                const Charges* owners = nullptr) {
  if (!owners) owners = &c;
  const CartesianDecomposition atoms(bins, {true, true, true}, comm.size(), 3, 1);
  const ParticleDomain dom(atoms, c.box, comm.rank());
  const Exec ex = Exec::host();
  const int n = static_cast<int>(c.q.size());
  Outcome o;
  o.mine.assign(n, 0);
  std::vector<int> idx;
  std::vector<double> x, y, z, q;
  for (int i = 0; i < n; ++i) {
    const double at[3] = {owners->x[i], owners->y[i], owners->z[i]};
    if (dom.owner_of(at) != comm.rank()) continue;
    const double pos[3] = {c.x[i], c.y[i], c.z[i]};
    o.mine[i] = 1;
    idx.push_back(i);
    x.push_back(pos[0]);
    y.push_back(pos[1]);
    z.push_back(pos[2]);
    q.push_back(c.q[i]);
  }
  std::vector<double> fx(x.size(), 0.0), fy(x.size(), 0.0), fz(x.size(), 0.0);
  double qmax = 0;
  for (double v : c.q) qmax = std::max(qmax, std::abs(v));
  PmeT<R> pme(p, atoms, c.box, drift, qmax, comm, ex);
  std::vector<double> pe(x.size(), 0.0), vir(x.size(), 0.0);
  PmeAtoms a{x.data(), y.data(), z.data(), q.data(), fx.data(), fy.data(), fz.data(), static_cast<int>(x.size())};
  a.pe = pe.data();  // a thermo step: energy, virial and the per-atom shares
  a.virial = vir.data();
  o.result = pme.compute(a);
  for (std::size_t s = 0; s < x.size(); ++s) {
    o.pe_sum += pe[s];
    o.virial_sum += vir[s];
  }
  o.pe_sum = comm.sum(o.pe_sum);
  o.virial_sum = comm.sum(o.virial_sum);
  // A step without energies: the same forces, no sums.
  std::vector<double> gx(x.size(), 0.0), gy(x.size(), 0.0), gz(x.size(), 0.0);
  PmeAtoms b{x.data(), y.data(), z.data(), q.data(), gx.data(), gy.data(), gz.data(), static_cast<int>(x.size())};
  const Pme::Result none = pme.compute(b);
  o.forces_without_energy_differ = std::memcmp(gx.data(), fx.data(), sizeof(double) * fx.size()) != 0 ||
                                   std::memcmp(gy.data(), fy.data(), sizeof(double) * fy.size()) != 0 ||
                                   std::memcmp(gz.data(), fz.data(), sizeof(double) * fz.size()) != 0 || none.energy != 0;
  {
    const std::size_t m = x.size();
    std::vector<double> in_place[5], apart[5], base[5];
    for (int w = 0; w < 5; ++w) {
      base[w].resize(m);
      for (std::size_t s = 0; s < m; ++s)  // other terms, signed zeros among them
        base[w][s] = s % 5 == 0 ? (s % 2 ? -0.0 : 0.0) : std::sin(1.0 + static_cast<double>(s) + 10.0 * w);
      in_place[w] = base[w];
      apart[w].assign(m, -0.0);
    }
    PmeAtoms c1{x.data(), y.data(), z.data(), q.data(), in_place[0].data(), in_place[1].data(), in_place[2].data(), static_cast<int>(m)};
    c1.pe = in_place[3].data();
    c1.virial = in_place[4].data();
    pme.compute(c1);
    PmeAtoms c2{x.data(), y.data(), z.data(), q.data(), apart[0].data(), apart[1].data(), apart[2].data(), static_cast<int>(m)};
    c2.pe = apart[3].data();
    c2.virial = apart[4].data();
    pme.compute(c2);
    o.adds_apart_differ = 0;
    for (int w = 0; w < 5; ++w)
      for (std::size_t s = 0; s < m; ++s) {
        const double sum = base[w][s] + apart[w][s];
        o.adds_apart_differ += std::memcmp(&sum, &in_place[w][s], sizeof(double)) != 0;
      }
    o.adds_apart_differ = comm.sum(o.adds_apart_differ);
  }
  o.fx.assign(n, 0.0);
  o.fy.assign(n, 0.0);
  o.fz.assign(n, 0.0);
  for (std::size_t s = 0; s < idx.size(); ++s) {
    o.fx[idx[s]] = fx[s];
    o.fy[idx[s]] = fy[s];
    o.fz[idx[s]] = fz[s];
  }
  return o;
}
}  // namespace

TEST(Pme, MatchesTheEwaldReciprocalSum) {
  const Charges c = random_charges(48, {9.0, 10.0, 11.0}, 7);
  const double alpha = 0.45, coulomb = 332.06371;
  const Reference ref = ewald_reciprocal(c, alpha, coulomb, 10);
  double frms = 0;
  for (std::size_t j = 0; j < c.q.size(); ++j) frms += ref.fx[j] * ref.fx[j] + ref.fy[j] * ref.fy[j] + ref.fz[j] * ref.fz[j];
  frms = std::sqrt(frms / c.q.size());
  // Order 6 on a 0.22 spacing: measured 8e-9 of the energy, forces within 1.3e-7 of their rms;
  // order 4 on a 0.45 spacing: 8e-5 and 7e-4. The bounds are a few times those.
  struct Try {
    Index3 grid;
    int order;
    double energy_tol, force_tol;
  };
  for (const Try& t : {Try{{40, 45, 50}, 6, 5e-8, 1e-6}, Try{{20, 24, 24}, 4, 3e-4, 3e-3}}) {
    PmeParams p;
    p.grid = t.grid;
    p.order = t.order;
    p.alpha = alpha;
    p.coulomb = coulomb;
    const Outcome o = run_pme(c, p, Comm::self(), {3, 3, 3}, 0.5);
    EXPECT_NEAR(o.result.energy, ref.energy, t.energy_tol * std::abs(ref.energy)) << "order " << t.order;
    double ferr = 0;
    for (std::size_t j = 0; j < c.q.size(); ++j)
      ferr = std::max({ferr, std::abs(o.fx[j] - ref.fx[j]), std::abs(o.fy[j] - ref.fy[j]), std::abs(o.fz[j] - ref.fz[j])});
    EXPECT_LT(ferr, t.force_tol * frms) << "order " << t.order << ": largest force error " << ferr << ", rms force " << frms;
    for (int v = 0; v < 6; ++v)
      EXPECT_NEAR(o.result.virial[v], ref.virial[v], t.energy_tol * 2 * std::abs(ref.energy)) << "virial " << v;
    // The per-atom shares add up to the totals (to the fixed point's rounding and the sum's order).
    EXPECT_NEAR(o.pe_sum, o.result.energy, 1e-10 * std::abs(o.result.energy));
    const double trace = o.result.virial[0] + o.result.virial[1] + o.result.virial[2];
    EXPECT_NEAR(o.virial_sum, trace, 1e-10 * std::abs(trace));
    EXPECT_FALSE(o.forces_without_energy_differ);
  }
}

TEST(Pme, SameBitsAtAnyRankCount) {
  const Comm world = Comm::world();
  Charges c = random_charges(300, {12.0, 13.0, 14.0}, 11);
  PmeParams p;
  p.grid = {24, 26, 30};
  p.order = 5;
  p.alpha = 0.35;
  p.coulomb = 1.0;
  // The atoms moved since their owners were decided, by up to 0.45 (the drift allows 0.5), wrapped
  // into the box: their stencils reach into ghost layers and across the periodic boundary.
  Charges moved = c;
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(-0.45, 0.45);
  for (std::size_t j = 0; j < c.q.size(); ++j) {
    double* r[3] = {&moved.x[j], &moved.y[j], &moved.z[j]};
    for (int d = 0; d < 3; ++d) {
      *r[d] += u(rng);
      if (*r[d] < 0) *r[d] += c.box[d];
      if (*r[d] >= c.box[d]) *r[d] -= c.box[d];
    }
  }
  // Both precisions (float: md.precision = "mixed").
  for (bool mixed : {false, true}) {
    SCOPED_TRACE(mixed ? "fp32 grid" : "fp64 grid");
    const Outcome one = mixed ? run_pme<float>(moved, p, Comm::self(), {6, 6, 6}, 0.5, &c)
                              : run_pme<double>(moved, p, Comm::self(), {6, 6, 6}, 0.5, &c);
    const Outcome all = mixed ? run_pme<float>(moved, p, world, {6, 6, 6}, 0.5, &c) : run_pme<double>(moved, p, world, {6, 6, 6}, 0.5, &c);
    EXPECT_EQ(std::memcmp(&one.result.energy, &all.result.energy, sizeof(double)), 0)
        << one.result.energy << " vs " << all.result.energy;
    for (int v = 0; v < 6; ++v) EXPECT_EQ(std::memcmp(&one.result.virial[v], &all.result.virial[v], sizeof(double)), 0) << v;
    std::int64_t differ = 0, owned = 0;
    for (std::size_t j = 0; j < c.q.size(); ++j) {
      if (!all.mine[j]) continue;
      ++owned;
      if (std::memcmp(&one.fx[j], &all.fx[j], sizeof(double)) || std::memcmp(&one.fy[j], &all.fy[j], sizeof(double)) ||
          std::memcmp(&one.fz[j], &all.fz[j], sizeof(double)))
        ++differ;
    }
    EXPECT_EQ(world.sum(owned), static_cast<std::int64_t>(c.q.size()));
    EXPECT_EQ(world.sum(differ), 0);
    // KSpace::adds_once (PME's): its terms computed apart and added after, the bits in place.
    EXPECT_EQ(one.adds_apart_differ, 0);
    EXPECT_EQ(all.adds_apart_differ, 0);
  }
}

// The host's hand-written path (every atom's splines computed once, 16 atoms at a time in vectors,
// for the spreading and the interpolation both; the spread in AVX2, each row's first 4 deposits
// rounded by adding 1.5 2^52) puts the same integers on the grid and gives the same forces as
// CUDA's kernel bodies, which compute each atom's splines where they use them, with llrint
// (CUMULUS_NO_AVX512 takes them): the same bits, at each order the host unrolls and in both
// precisions. Where the CPU lacks AVX2 both runs take CUDA's bodies.
TEST(Pme, HandWrittenSpreadGivesTheGenericBits) {
  const Charges c = random_charges(200, {12.0, 13.0, 14.0}, 23);
  for (int order : {4, 5, 6})
    for (bool mixed : {false, true}) {
      SCOPED_TRACE(std::string(mixed ? "fp32" : "fp64") + " grid, order " + std::to_string(order));
      PmeParams p;
      p.grid = {24, 26, 30};
      p.order = order;
      p.alpha = 0.35;
      p.coulomb = 332.06371;
      auto run = [&](bool generic) {
        if (generic) ::setenv("CUMULUS_NO_AVX512", "1", 1);
        const Outcome o = mixed ? run_pme<float>(c, p, Comm::self(), {3, 3, 3}, 0.5) : run_pme<double>(c, p, Comm::self(), {3, 3, 3}, 0.5);
        ::unsetenv("CUMULUS_NO_AVX512");
        return o;
      };
      const Outcome hand = run(false), generic = run(true);
      EXPECT_EQ(std::memcmp(&hand.result.energy, &generic.result.energy, sizeof(double)), 0)
          << hand.result.energy << " vs " << generic.result.energy;
      for (int v = 0; v < 6; ++v) EXPECT_EQ(std::memcmp(&hand.result.virial[v], &generic.result.virial[v], sizeof(double)), 0) << v;
      EXPECT_EQ(std::memcmp(hand.fx.data(), generic.fx.data(), sizeof(double) * c.q.size()), 0);
      EXPECT_EQ(std::memcmp(hand.fy.data(), generic.fy.data(), sizeof(double) * c.q.size()), 0);
      EXPECT_EQ(std::memcmp(hand.fz.data(), generic.fz.data(), sizeof(double) * c.q.size()), 0);
      EXPECT_NE(hand.result.energy, 0.0);
    }
}

// md.precision = "mixed": the fp32 grid against the fp64 one and the Ewald sum. The fp32 rounding
// (about 6e-8 of each value, through the FFT's log2 N stages) stays far below PME's own error at
// any grid a run would choose.
TEST(Pme, MixedPrecisionIsTheFp64ResultToFp32) {
  const Charges c = random_charges(48, {9.0, 10.0, 11.0}, 7);
  const double alpha = 0.45, coulomb = 332.06371;
  const Reference ref = ewald_reciprocal(c, alpha, coulomb, 10);
  PmeParams p;
  p.grid = {40, 45, 50};
  p.order = 6;
  p.alpha = alpha;
  p.coulomb = coulomb;
  const Outcome d = run_pme<double>(c, p, Comm::self(), {3, 3, 3}, 0.5);
  const Outcome f = run_pme<float>(c, p, Comm::self(), {3, 3, 3}, 0.5);
  double frms = 0, df = 0, dref = 0;
  for (std::size_t j = 0; j < c.q.size(); ++j) {
    frms += ref.fx[j] * ref.fx[j] + ref.fy[j] * ref.fy[j] + ref.fz[j] * ref.fz[j];
    df = std::max({df, std::abs(f.fx[j] - d.fx[j]), std::abs(f.fy[j] - d.fy[j]), std::abs(f.fz[j] - d.fz[j])});
    dref = std::max({dref, std::abs(f.fx[j] - ref.fx[j]), std::abs(f.fy[j] - ref.fy[j]), std::abs(f.fz[j] - ref.fz[j])});
  }
  frms = std::sqrt(frms / c.q.size());
  if (Comm::world().is_root())
    std::printf("[ pme ] fp32 grid: largest force difference from the fp64 grid %.2e of the rms force, from the Ewald sum "
              "%.2e; energy %.2e relative\n", df / frms, dref / frms, std::abs(f.result.energy - d.result.energy) / std::abs(d.result.energy));
  EXPECT_LT(df, 1e-5 * frms);
  EXPECT_GT(df, 0.0);  // fp32 indeed
  EXPECT_LT(dref, 1e-5 * frms);
  EXPECT_NEAR(f.result.energy, d.result.energy, 1e-6 * std::abs(d.result.energy));
  EXPECT_NEAR(f.pe_sum, f.result.energy, 1e-6 * std::abs(f.result.energy));
  EXPECT_FALSE(f.forces_without_energy_differ);
}

TEST(Pme, BadSetupsNameTheNumbers) {
  const Charges c = random_charges(8, {10.0, 10.0, 10.0}, 3);
  PmeParams p;
  p.grid = {16, 16, 16};
  p.order = 7;
  p.alpha = 0.3;
  try {
    run_pme(c, p, Comm::self(), {2, 2, 2}, 0.5);
    FAIL() << "order 7 accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("order is 7"), std::string::npos) << e.what();
  }
  p.order = 5;
  p.grid = {8, 16, 16};
  try {
    run_pme(c, p, Comm::self(), {2, 2, 2}, 0.5);
    FAIL() << "an 8-point axis accepted for order 5";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("too coarse"), std::string::npos) << e.what();
  }
}

// On a GPU against the host: the same spreading (integers), cuFFT against FFTW and nvcc's fused
// multiply-adds in the splines, so not bitwise: energy, virial and forces within 1e-12 relative
// (of the energy, of the RMS force). Skipped without a device; scripts/gpu-check runs it.
TEST(PmeBackends, CudaMatchesHost) {
  if (!cuda_built()) GTEST_SKIP() << "built without CUDA";
  CUMULUS_EXEC_OR_SKIP(ex, Backend::cuda);
  // A GPU without cuFFT is a broken installation, not a machine to skip on: fail and say why.
  std::string why;
  ASSERT_TRUE(FftPlan<double>::cuda_fft_available(&why)) << "a CUDA device but no cuFFT: " << why;
  const Charges c = random_charges(200, {10.0, 11.0, 12.0}, 17);
  PmeParams p;
  p.grid = {30, 32, 36};
  p.order = 5;
  p.alpha = 0.4;
  p.coulomb = 332.06371;
  const CartesianDecomposition atoms({4, 4, 4}, {true, true, true}, 1, 3, 1);
  const int n = static_cast<int>(c.q.size());
  auto run = [&](const Exec& e, std::vector<double>& f) {
    Pme pme(p, atoms, c.box, 0.5, 1.0, Comm::self(), e);
    auto x = Buffer<double>::copy_of(e, c.x), y = Buffer<double>::copy_of(e, c.y), z = Buffer<double>::copy_of(e, c.z),
         q = Buffer<double>::copy_of(e, c.q);
    const std::vector<double> zero(static_cast<std::size_t>(n), 0.0);
    auto fx = Buffer<double>::copy_of(e, zero), fy = Buffer<double>::copy_of(e, zero), fz = Buffer<double>::copy_of(e, zero),
         pe = Buffer<double>::copy_of(e, zero), vir = Buffer<double>::copy_of(e, zero);
    PmeAtoms a{x.data(), y.data(), z.data(), q.data(), fx.data(), fy.data(), fz.data(), n};
    a.pe = pe.data();
    a.virial = vir.data();
    const Pme::Result r = pme.compute(a);
    f = fx.to_host(e);
    const auto gy = fy.to_host(e), gz = fz.to_host(e);
    f.insert(f.end(), gy.begin(), gy.end());
    f.insert(f.end(), gz.begin(), gz.end());
    return r;
  };
  std::vector<double> fh, fd;
  const Pme::Result host = run(Exec::host(), fh);
  const Pme::Result dev = run(ex, fd);
  EXPECT_NEAR(dev.energy, host.energy, 1e-12 * std::abs(host.energy));
  for (int v = 0; v < 6; ++v) EXPECT_NEAR(dev.virial[v], host.virial[v], 1e-12 * std::abs(host.energy)) << v;
  double rms = 0, worst = 0;
  for (std::size_t k = 0; k < fh.size(); ++k) {
    rms += fh[k] * fh[k];
    worst = std::max(worst, std::abs(fd[k] - fh[k]));
  }
  rms = std::sqrt(rms / static_cast<double>(fh.size()));
  EXPECT_LT(worst, 1e-12 * rms) << "largest force difference " << worst << ", rms force " << rms;
}

