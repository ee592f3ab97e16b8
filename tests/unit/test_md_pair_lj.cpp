// The lj/cut force term (solvers/md/force.hpp, pair_lj_cut.cpp), made from a job's keys as the md solver makes it,
// on two or three atoms at known separations: forces, energies and virials against the analytic
// Lennard-Jones 12-6 potential, shifted or not; nothing beyond the cutoff; Newton's third law; the
// force as minus the energy's derivative; the mixing rules of two types against values by hand;
// the tail corrections against the integrals they stand for. The force kernels are driven through
// the lists md uses: the host builder's half list (one thread), its full list (two threads) and
// the kernel builder's list.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/memory.hpp"
#include "solvers/md/atoms.hpp"
#include "solvers/md/neighbor_list.hpp"
#include "core/comm.hpp"
#include "solvers/md/force.hpp"
#include "solvers/model.hpp"

using namespace cumulus;
using namespace cumulus::md;

namespace {

constexpr double kPi = 3.14159265358979323846;

// A job with the md solver's schema (every pair style's keys), as `cumulus` parses one.
Config md_config(const std::string& md_keys) {
  const std::string text = "solver = \"md\"\n[md]\n" + md_keys;
  return parse_job_text(text, "test.toml", {},
                        [](const std::string& s, Schema& schema) { SolverRegistry::all().build_schema(s, schema); });
}

std::unique_ptr<ForceTerm> lj(const Config& cfg, int ntypes, const Exec& ex) {
  return force_style("lj/cut").create(cfg, ntypes, ex);
}

// The analytic potential of one pair: U(r) = 4 eps ((s/r)^12 - (s/r)^6) and -dU/dr.
struct Lj {
  double eps, sigma;
  double u(double r) const {
    const double s6 = std::pow(sigma / r, 6);
    return 4 * eps * (s6 * s6 - s6);
  }
  double f(double r) const {  // -dU/dr
    const double s6 = std::pow(sigma / r, 6);
    return 24 * eps * (2 * s6 * s6 - s6) / r;
  }
};

// What the force call leaves per atom.
struct Result {
  std::vector<double> f[3], pe, virial;
  std::array<double, 6> tensor{};  // the virial tensor xx, yy, zz, xy, xz, yz
};

// host_half_2: the half list at two threads, which the host builder makes only for a style whose
// sums do not depend on order (md.precision = "mixed"); otherwise it is the full list.
enum class ListKind { host_half, host_full, kernels, host_half_2 };
const char* to_string(ListKind k) {
  switch (k) {
    case ListKind::host_half: return "host half list";
    case ListKind::host_full: return "host full list";
    case ListKind::kernels: return "kernel list";
    default: return "host half list at 2 threads";
  }
}

// Atoms (owned only, types 0-based) in a periodic box: the list at `reach`, then the style's force
// call, as md's rebuild and force step do it.
Result forces(const ForceTerm& style, const std::vector<std::array<double, 3>>& x, const std::vector<int>& type,
              const double box[3], double reach, ListKind kind, const Exec& ex) {
  const int n = static_cast<int>(x.size());
  MdAtoms atoms(ex, std::vector<double>(2, 1.0));
  atoms.store.resize_owned(n);
  for (int i = 0; i < n; ++i) {
    for (int d = 0; d < 3; ++d) atoms.hx(d)[i] = x[static_cast<std::size_t>(i)][static_cast<std::size_t>(d)];
    atoms.hid()[i] = 1 + i;
    atoms.htype()[i] = type[static_cast<std::size_t>(i)];
  }
  atoms.store.upload();
  const int saved = omp_get_max_threads();
  // The host builder makes its half list at one thread, its full list at more; the kernel list is
  // full at any count. One thread wherever it is enough: a two-thread team waits at every barrier
  // for a core, which on a loaded machine costs milliseconds per call.
  omp_set_num_threads(kind == ListKind::host_full || kind == ListKind::host_half_2 ? 2 : 1);
  std::unique_ptr<NeighborList> list =
      kind == ListKind::kernels ? make_kernel_neighbor_list(ex, false) : make_host_neighbor_list(ex);
  // As md sets it, but host_full asks for the full list whatever the style.
  list->allow_threaded_half(style.order_free_sums() && kind != ListKind::host_full);
  atoms.fit_scratch(atoms.nown());
  list->build(atoms, box, reach);
  atoms.fit_scratch(list->half() ? atoms.nlocal() : atoms.nown());
  EXPECT_EQ(list->half(), kind == ListKind::host_half || (kind == ListKind::host_half_2 && style.order_free_sums()));
  style.compute(ex, atoms.view(list.get(), box));
  Result r;
  r.tensor = style.virial_tensor(ex, Comm::self(), atoms.view(list.get(), box));
  omp_set_num_threads(saved);
  const Atoms a = atoms.view(list.get(), box);
  auto get = [&](std::vector<double>& out, const double* p) {
    out.resize(static_cast<std::size_t>(n));
    memory::copy(ex, Backend::host, out.data(), ex.backend(), p, sizeof(double) * out.size());
  };
  get(r.f[0], a.fx);
  get(r.f[1], a.fy);
  get(r.f[2], a.fz);
  get(r.pe, a.pe);
  get(r.virial, a.virial);
  return r;
}

constexpr ListKind kKinds[] = {ListKind::host_half, ListKind::host_full, ListKind::kernels};
const double kBox[3] = {12.0, 13.0, 14.0};

// Relative closeness, for values computed in a different order than the reference.
::testing::AssertionResult near(double got, double want, double rel = 1e-13) {
  if (std::fabs(got - want) <= rel * std::max(std::fabs(want), 1e-300)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << got << " vs " << want << " (relative " << (got - want) / want << ")";
}

}  // namespace

// Two atoms along a unit vector (0.48, 0.6, 0.64) at separations on both sides of the minimum,
// one pair across the periodic boundary: each atom's force is -dU/dr along the line, equal and
// opposite; each takes half of U and half of r . F = r (-dU/dr).
TEST(PairLjCut, TwoAtomsMatchTheAnalyticPotential) {
  Exec ex;
  const auto style = lj(md_config(""), 1, ex);  // eps 1, sigma 1, cutoff 2.5, no shift
  EXPECT_EQ(style->reach(), 2.5);
  const Lj pot{1.0, 1.0};
  const double u[3] = {0.48, 0.6, 0.64};
  for (ListKind kind : kKinds)
    for (double r : {0.93, 1.02, 1.1, 1.37, 2.0, 2.49}) {  // not at U = 0 or F = 0
      SCOPED_TRACE(::testing::Message() << to_string(kind) << ", r = " << r);
      for (bool across : {false, true}) {
        // Inside the box, or atom 1 near the upper faces and atom 0 through them near the lower ones.
        const std::array<double, 3> x0 =
            across ? std::array<double, 3>{0.1, 0.2, 0.15} : std::array<double, 3>{5.0, 6.0, 7.0};
        std::array<double, 3> x1;
        for (int d = 0; d < 3; ++d) {
          x1[static_cast<std::size_t>(d)] = x0[static_cast<std::size_t>(d)] - r * u[d];
          if (x1[static_cast<std::size_t>(d)] < 0) x1[static_cast<std::size_t>(d)] += kBox[d];
        }
        const Result res = forces(*style, {x0, x1}, {0, 0}, kBox, 2.8, kind, ex);
        for (int d = 0; d < 3; ++d) {
          EXPECT_TRUE(near(res.f[d][0], pot.f(r) * u[d], 1e-12)) << "axis " << d;
          EXPECT_EQ(res.f[d][1], -res.f[d][0]) << "Newton's third law, axis " << d;
        }
        for (int i = 0; i < 2; ++i) {
          EXPECT_TRUE(near(res.pe[static_cast<std::size_t>(i)], 0.5 * pot.u(r), 1e-12)) << "energy of atom " << i;
          EXPECT_TRUE(near(res.virial[static_cast<std::size_t>(i)], 0.5 * r * pot.f(r), 1e-12))
              << "virial of atom " << i;
        }
        // The tensor: W_ab = r_a F_b = r F(r) u_a u_b (both atoms' halves).
        const int ab[6][2] = {{0, 0}, {1, 1}, {2, 2}, {0, 1}, {0, 2}, {1, 2}};
        for (int c = 0; c < 6; ++c)
          EXPECT_TRUE(near(res.tensor[static_cast<std::size_t>(c)], r * pot.f(r) * u[ab[c][0]] * u[ab[c][1]], 1e-12))
              << "virial tensor component " << c;
      }
    }
}

// Within the list (reach 2.8) but at or beyond the cutoff 2.5: no force, no energy, no virial, not
// even the shift's constant; just inside, the shifted energy is U(r) - U(rc) and the force as
// without the shift.
TEST(PairLjCut, CutoffAndShift) {
  Exec ex;
  const auto plain = lj(md_config(""), 1, ex);
  const auto shifted = lj(md_config("shift = true\n"), 1, ex);
  const Lj pot{1.0, 1.0};
  for (ListKind kind : kKinds) {
    SCOPED_TRACE(to_string(kind));
    for (double r : {2.5, 2.5000001, 2.7}) {
      for (const auto* style : {plain.get(), shifted.get()}) {
        const Result res = forces(*style, {{{4.0, 4.0, 4.0}}, {{4.0 + r, 4.0, 4.0}}}, {0, 0}, kBox, 2.8, kind, ex);
        for (int i = 0; i < 2; ++i) {
          EXPECT_EQ(res.f[0][static_cast<std::size_t>(i)], 0.0) << r;
          EXPECT_EQ(res.pe[static_cast<std::size_t>(i)], 0.0) << r;
          EXPECT_EQ(res.virial[static_cast<std::size_t>(i)], 0.0) << r;
        }
      }
    }
    for (double r : {1.1, 2.0, 2.4999}) {
      const Result p = forces(*plain, {{{4.0, 4.0, 4.0}}, {{4.0 + r, 4.0, 4.0}}}, {0, 0}, kBox, 2.8, kind, ex);
      const Result s = forces(*shifted, {{{4.0, 4.0, 4.0}}, {{4.0 + r, 4.0, 4.0}}}, {0, 0}, kBox, 2.8, kind, ex);
      EXPECT_EQ(s.f[0][0], p.f[0][0]) << r;
      EXPECT_TRUE(near(s.f[0][0], -pot.f(r), 1e-12)) << r;
      EXPECT_NEAR(s.pe[0], 0.5 * (pot.u(r) - pot.u(2.5)), 1e-15) << r;  // a difference: absolute
      EXPECT_TRUE(near(p.pe[0], 0.5 * pot.u(r), 1e-12)) << r;
    }
  }
}

// Three atoms with three pairs: each force is the sum of its two analytic pair forces, the forces
// sum to zero, the virials sum to the pairs' r . F, and the force is minus the derivative of the
// total energy (central differences, every coordinate of every atom).
TEST(PairLjCut, ThreeAtomsNewtonVirialAndEnergyDerivative) {
  Exec ex;
  const auto style = lj(md_config("epsilon = 1.3\nsigma = 0.9\n"), 1, ex);
  const Lj pot{1.3, 0.9};
  const std::vector<std::array<double, 3>> x = {{{3.0, 3.1, 2.9}}, {{3.95, 3.3, 3.05}}, {{3.4, 4.05, 3.5}}};
  const std::vector<int> type = {0, 0, 0};
  for (ListKind kind : kKinds) {
    SCOPED_TRACE(to_string(kind));
    const Result res = forces(*style, x, type, kBox, 2.8, kind, ex);
    double sum[3] = {0, 0, 0}, virial = 0, pair_virial = 0;
    for (int i = 0; i < 3; ++i) {
      double want[3] = {0, 0, 0}, scale = 0;  // scale: the pair forces' magnitudes (they may cancel)
      for (int j = 0; j < 3; ++j) {
        if (j == i) continue;
        double dx[3], r2 = 0;
        for (int d = 0; d < 3; ++d) {
          dx[d] = x[static_cast<std::size_t>(i)][static_cast<std::size_t>(d)] -
                  x[static_cast<std::size_t>(j)][static_cast<std::size_t>(d)];
          r2 += dx[d] * dx[d];
        }
        const double r = std::sqrt(r2);
        for (int d = 0; d < 3; ++d) want[d] += pot.f(r) * dx[d] / r;
        scale += std::fabs(pot.f(r));
        if (j > i) pair_virial += r * pot.f(r);
      }
      for (int d = 0; d < 3; ++d) {
        EXPECT_NEAR(res.f[d][static_cast<std::size_t>(i)], want[d], 1e-13 * scale) << "atom " << i << " axis " << d;
        sum[d] += res.f[d][static_cast<std::size_t>(i)];
      }
      virial += res.virial[static_cast<std::size_t>(i)];
    }
    for (int d = 0; d < 3; ++d) EXPECT_NEAR(sum[d], 0.0, 1e-12) << "axis " << d;
    EXPECT_TRUE(near(virial, pair_virial, 1e-12));

    // F = -dE/dx: (E(x - h) - E(x + h)) / 2h, error of order h^2 E''' (about 1e-8 here).
    // The full-list kernel's energies equal the half list's bit for bit (EveryListGivesTheSameBits):
    // the slower two-thread builder is left out here.
    if (kind == ListKind::host_full) continue;
    const double h = 1e-5;
    for (int i = 0; i < 3; ++i)
      for (int d = 0; d < 3; ++d) {
        double e[2];
        for (int s = 0; s < 2; ++s) {
          std::vector<std::array<double, 3>> y = x;
          y[static_cast<std::size_t>(i)][static_cast<std::size_t>(d)] += s == 0 ? -h : h;
          const Result moved = forces(*style, y, type, kBox, 2.8, kind, ex);
          e[s] = moved.pe[0] + moved.pe[1] + moved.pe[2];
        }
        const double f = res.f[d][static_cast<std::size_t>(i)];
        EXPECT_NEAR((e[0] - e[1]) / (2 * h), f, 1e-6 * std::max(1.0, std::fabs(f))) << "atom " << i << " axis " << d;
      }
  }
}

// The half list (one thread), the full list (two threads) and the kernel list give the same bits
// for every atom of a random liquid-like configuration (the pair terms are summed in ascending
// partner id whoever built the list).
TEST(PairLjCut, EveryListGivesTheSameBits) {
  Exec ex;
  const auto style = lj(md_config(""), 1, ex);
  std::mt19937_64 rng(3);
  // At least three list bins per axis (reach 2.8): the builders' binned paths.
  const double box[3] = {9.0, 9.3, 10.1};
  const int cells[3] = {10, 10, 11};
  // A jittered simple cubic lattice, about 0.9 apart (no atoms on top of each other).
  std::vector<std::array<double, 3>> x;
  for (int k = 0; k < cells[2]; ++k)
    for (int j = 0; j < cells[1]; ++j)
      for (int i = 0; i < cells[0]; ++i) {
        const int c[3] = {i, j, k};
        std::array<double, 3> p;
        for (int d = 0; d < 3; ++d) {
          const double jitter = (static_cast<double>(rng() >> 11) * 0x1p-53 - 0.5) * 0.2;
          p[static_cast<std::size_t>(d)] = (c[d] + 0.5) * box[d] / cells[d] + jitter;
        }
        x.push_back(p);
      }
  const std::vector<int> type(x.size(), 0);
  const Result half = forces(*style, x, type, box, 2.8, ListKind::host_half, ex);
  for (ListKind kind : {ListKind::host_full, ListKind::kernels}) {
    const Result other = forces(*style, x, type, box, 2.8, kind, ex);
    for (std::size_t i = 0; i < x.size(); ++i) {
      for (int d = 0; d < 3; ++d) ASSERT_EQ(other.f[d][i], half.f[d][i]) << to_string(kind) << ", atom " << i;
      ASSERT_EQ(other.pe[i], half.pe[i]) << to_string(kind) << ", atom " << i;
      ASSERT_EQ(other.virial[i], half.virial[i]) << to_string(kind) << ", atom " << i;
    }
    // The virial tensor too (each atom's share summed exactly); its trace is the per-atom virials'
    // sum, to rounding.
    for (int c = 0; c < 6; ++c)
      EXPECT_EQ(other.tensor[static_cast<std::size_t>(c)], half.tensor[static_cast<std::size_t>(c)])
          << to_string(kind) << ", component " << c;
    double sum = 0;
    for (double v : other.virial) sum += v;
    EXPECT_TRUE(near(other.tensor[0] + other.tensor[1] + other.tensor[2], sum, 1e-12)) << to_string(kind);
  }
}

// Two types: type 1 eps 1 sigma 1 cutoff md.cutoff = 2.5; type 2 eps 0.5 sigma 1.4 cutoff 3. The
// 1-2 pair is mixed: Lorentz-Berthelot eps sqrt(0.5), sigma 1.2, cutoff 2.75; geometric eps
// sqrt(0.5), sigma sqrt(1.4), cutoff sqrt(7.5) = 2.7386. At r = 2.745 only the first interacts.
TEST(PairLjCut, MixingRulesOfTwoTypes) {
  Exec ex;
  const std::string types = "[md.pairs.bb]\ntypes = [2, 2]\nepsilon = 0.5\nsigma = 1.4\ncutoff = 3.0\n";
  const auto lb = lj(md_config(types), 2, ex);
  const auto geo = lj(md_config("mixing = \"geometric\"\n" + types), 2, ex);
  EXPECT_EQ(lb->reach(), 3.0);
  EXPECT_EQ(force_style("lj/cut").reach(md_config(types), 2), 3.0);
  const Lj lb12{std::sqrt(0.5), 1.2}, geo12{std::sqrt(0.5), std::sqrt(1.4)}, p22{0.5, 1.4}, p11{1.0, 1.0};
  const double reach = 3.3;
  for (ListKind kind : kKinds) {
    SCOPED_TRACE(to_string(kind));
    for (double r : {1.05, 1.3, 2.2, 2.745}) {
      const std::vector<std::array<double, 3>> x = {{{4.0, 4.0, 4.0}}, {{4.0 + r, 4.0, 4.0}}};
      const Result a = forces(*lb, x, {0, 1}, kBox, reach, kind, ex);
      const Result b = forces(*geo, x, {1, 0}, kBox, reach, kind, ex);
      EXPECT_TRUE(near(a.f[0][1], lb12.f(r), 1e-12)) << r;
      EXPECT_TRUE(near(a.pe[0], 0.5 * lb12.u(r), 1e-12)) << r;
      if (r < std::sqrt(7.5)) {
        EXPECT_TRUE(near(b.f[0][1], geo12.f(r), 1e-12)) << r;
        EXPECT_TRUE(near(b.pe[1], 0.5 * geo12.u(r), 1e-12)) << r;
      } else {
        EXPECT_EQ(b.f[0][1], 0.0) << r;
        EXPECT_EQ(b.pe[1], 0.0) << r;
      }
      // Like pairs are not mixed: 1-1 up to 2.5, 2-2 up to 3.
      const Result c = forces(*geo, x, {1, 1}, kBox, reach, kind, ex);
      EXPECT_TRUE(near(c.f[0][1], p22.f(r), 1e-12)) << r;
      const Result d = forces(*lb, x, {0, 0}, kBox, reach, kind, ex);
      if (r < 2.5) {
        EXPECT_TRUE(near(d.f[0][1], p11.f(r), 1e-12)) << r;
      } else {
        EXPECT_EQ(d.f[0][1], 0.0) << r;
      }
    }
  }
  // mixing = "none" needs every unlike pair given.
  EXPECT_THROW(lj(md_config("mixing = \"none\"\n" + types), 2, ex), Error);
  EXPECT_NO_THROW(lj(
      md_config("mixing = \"none\"\n" + types + "[md.pairs.ab]\ntypes = [1, 2]\nepsilon = 0.7\nsigma = 1.1\n"), 2, ex));
}

// Tail corrections for a uniform fluid beyond each pair's cutoff, against the integrals they stand
// for (Allen & Tildesley, section 2.8): E = (2 pi / V) sum_ab N_a N_b int_rc^inf r^2 U_ab dr and
// P = -(2 pi / 3 V^2) sum_ab N_a N_b int_rc^inf r^3 U_ab' dr, integrated numerically (Simpson's
// rule after r = rc / t, which makes both integrands polynomials in t on [0, 1]).
TEST(PairLjCut, TailCorrectionsAreTheIntegralsBeyondTheCutoff) {
  Exec ex;
  struct PairParams {
    double eps, sigma, rc;
  };
  auto integrals = [](const PairParams& p, double* e_int, double* p_int) {
    const int m = 2000;  // intervals
    long double se = 0, sp = 0;
    for (int k = 0; k <= m; ++k) {
      const long double t = static_cast<long double>(k) / m, w = (k == 0 || k == m) ? 1 : (k % 2 ? 4 : 2);
      // r = rc / t, dr = rc / t^2 dt; s6 = (sigma / r)^6 = (sigma t / rc)^6.
      // With a6 = (sigma / rc)^6: r^2 U dr = rc^3 4 eps (a6^2 t^8 - a6 t^2) dt and
      // r^3 U' dr = rc^3 4 eps (-12 a6^2 t^8 + 6 a6 t^2) dt.
      const long double a6 = std::pow(static_cast<long double>(p.sigma / p.rc), 6);
      const long double fe = 4 * p.eps * (a6 * a6 * std::pow(t, 8) - a6 * std::pow(t, 2));
      const long double fp = 4 * p.eps * (-12 * a6 * a6 * std::pow(t, 8) + 6 * a6 * std::pow(t, 2));
      se += w * fe;
      sp += w * fp;
    }
    const double rc3 = p.rc * p.rc * p.rc;
    *e_int = static_cast<double>(se / (3 * m)) * rc3;
    *p_int = static_cast<double>(sp / (3 * m)) * rc3;
  };
  const double V = 11.0 * 12.0 * 13.0;
  {  // one type: eps 1.2, sigma 0.95, cutoff 2.2
    const auto style = lj(md_config("epsilon = 1.2\nsigma = 0.95\ncutoff = 2.2\ntail_correction = true\n"), 1, ex);
    double ei, pi;
    integrals({1.2, 0.95, 2.2}, &ei, &pi);
    const auto [e, p] = style->tail({500.0}, V);
    EXPECT_TRUE(near(e, 2 * kPi / V * 500.0 * 500.0 * ei, 1e-12));
    EXPECT_TRUE(near(p, -2 * kPi / (3 * V * V) * 500.0 * 500.0 * pi, 1e-12));
    EXPECT_LT(e, 0.0);
    EXPECT_LT(p, 0.0);
    const auto off = lj(md_config("epsilon = 1.2\nsigma = 0.95\ncutoff = 2.2\n"), 1, ex)->tail({500.0}, V);
    EXPECT_EQ(off.first, 0.0);
    EXPECT_EQ(off.second, 0.0);
  }
  {  // two types, Lorentz-Berthelot: 1-1 (1, 1, 2.5), 2-2 (0.5, 1.4, 3), 1-2 (sqrt 0.5, 1.2, 2.75)
    const auto style = lj(
        md_config("tail_correction = true\n[md.pairs.bb]\ntypes = [2, 2]\nepsilon = 0.5\nsigma = 1.4\ncutoff = 3.0\n"),
        2, ex);
    const double n[2] = {300.0, 120.0};
    const PairParams pp[2][2] = {{{1.0, 1.0, 2.5}, {std::sqrt(0.5), 1.2, 2.75}},
                                 {{std::sqrt(0.5), 1.2, 2.75}, {0.5, 1.4, 3.0}}};
    double e_want = 0, p_want = 0;
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 2; ++b) {
        double ei, pi;
        integrals(pp[a][b], &ei, &pi);
        e_want += 2 * kPi / V * n[a] * n[b] * ei;
        p_want += -2 * kPi / (3 * V * V) * n[a] * n[b] * pi;
      }
    const auto [e, p] = style->tail({n[0], n[1]}, V);
    EXPECT_TRUE(near(e, e_want, 1e-12));
    EXPECT_TRUE(near(p, p_want, 1e-12));
  }
}

// md.precision = "mixed": the fp32 pair terms summed in fixed point. Two types (one pair mixed),
// shifted, on the jittered lattice above: the same bits over the half list at one and two threads,
// the full list and the kernel list; within fp32's rounding of the double path; and a pair too
// close for the fixed-point range makes exactly its two atoms' forces NaN (the health check's
// cue), on every list.
TEST(PairLjCut, MixedPrecisionIsDoubleToFp32AndTheSameOverEveryList) {
  Exec ex;
  const std::string keys = "types = 2\nshift = true\n[md.pairs.b]\ntypes = [2, 2]\nepsilon = 0.6\nsigma = 1.1\ncutoff = 2.7\n";
  const auto dbl = lj(md_config(keys), 2, ex);
  const auto mixed = lj(md_config("precision = \"mixed\"\n" + keys), 2, ex);
  EXPECT_FALSE(dbl->order_free_sums());
  EXPECT_TRUE(mixed->order_free_sums());
  std::mt19937_64 rng(5);
  const double box[3] = {9.0, 9.3, 10.1};
  const int cells[3] = {10, 10, 11};
  std::vector<std::array<double, 3>> x;
  std::vector<int> type;
  for (int k = 0; k < cells[2]; ++k)
    for (int j = 0; j < cells[1]; ++j)
      for (int i = 0; i < cells[0]; ++i) {
        const int c[3] = {i, j, k};
        std::array<double, 3> p;
        for (int d = 0; d < 3; ++d) {
          const double jitter = (static_cast<double>(rng() >> 11) * 0x1p-53 - 0.5) * 0.2;
          p[static_cast<std::size_t>(d)] = (c[d] + 0.5) * box[d] / cells[d] + jitter;
        }
        x.push_back(p);
        type.push_back(static_cast<int>(rng() & 1));
      }
  const std::size_t n = x.size();
  const Result ref = forces(*dbl, x, type, box, 3.0, ListKind::host_half, ex);
  const Result m = forces(*mixed, x, type, box, 3.0, ListKind::host_half, ex);
  for (ListKind kind : {ListKind::host_half_2, ListKind::host_full, ListKind::kernels}) {
    const Result other = forces(*mixed, x, type, box, 3.0, kind, ex);
    for (std::size_t i = 0; i < n; ++i) {
      for (int d = 0; d < 3; ++d) ASSERT_EQ(other.f[d][i], m.f[d][i]) << to_string(kind) << ", atom " << i;
      ASSERT_EQ(other.pe[i], m.pe[i]) << to_string(kind) << ", atom " << i;
      ASSERT_EQ(other.virial[i], m.virial[i]) << to_string(kind) << ", atom " << i;
    }
    for (int c = 0; c < 6; ++c)
      EXPECT_EQ(other.tensor[static_cast<std::size_t>(c)], m.tensor[static_cast<std::size_t>(c)]) << to_string(kind) << ", component " << c;
  }
  double df = 0, f2 = 0, pe_d = 0, pe_m = 0;
  for (std::size_t i = 0; i < n; ++i) {
    for (int d = 0; d < 3; ++d) {
      df += (m.f[d][i] - ref.f[d][i]) * (m.f[d][i] - ref.f[d][i]);
      f2 += ref.f[d][i] * ref.f[d][i];
    }
    pe_d += ref.pe[i];
    pe_m += m.pe[i];
  }
  const double rms = std::sqrt(df / f2), epot = std::fabs(pe_m - pe_d) / std::fabs(pe_d);
  std::printf("[ mixed ] lj/cut: RMS force error %.2e of the RMS force, energy %.2e relative\n", rms, epot);
  // fp32 terms and fp32 coordinates (separation32: each within 2^-25 of itself, 3e-7 A at 10 A,
  // felt times the pair force's stiffness, 13 for LJ at contact): 4.8e-6 here.
  EXPECT_LT(rms, 1e-5);
  EXPECT_GT(rms, 1e-10);  // and fp32 indeed
  EXPECT_LT(epot, 1e-6);
  for (int c = 0; c < 3; ++c)
    EXPECT_TRUE(near(m.tensor[static_cast<std::size_t>(c)], ref.tensor[static_cast<std::size_t>(c)], 1e-5)) << "component " << c;

  // Atoms 0 and 1 put 0.05 apart: a force term of about 4e18, beyond the range of 2^26.
  x[1] = x[0];
  x[1][0] += 0.05;
  for (ListKind kind : {ListKind::host_half, ListKind::host_half_2, ListKind::host_full, ListKind::kernels}) {
    const Result bad = forces(*mixed, x, type, box, 3.0, kind, ex);
    int nan_atoms = 0;
    for (std::size_t i = 0; i < n; ++i)
      if (std::isnan(bad.f[0][i]) || std::isnan(bad.f[1][i]) || std::isnan(bad.f[2][i])) ++nan_atoms;
    EXPECT_EQ(nan_atoms, 2) << to_string(kind);
    EXPECT_TRUE(std::isnan(bad.f[0][0]) && std::isnan(bad.f[0][1])) << to_string(kind);
    EXPECT_TRUE(std::isnan(bad.tensor[0])) << to_string(kind);
  }
}
