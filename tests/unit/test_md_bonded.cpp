// The harmonic bond and angle terms (solvers/md/bonded.*), through their force calls on each built
// backend: energies against their closed forms, forces against
// finite differences of the energy, the virial's trace against the per-atom virials, and the
// terms across the periodic boundary and at a straight angle.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <memory>
#include <vector>

#include "../backends.hpp"
#include "core/comm.hpp"
#include "core/memory.hpp"
#include "solvers/md/atoms.hpp"
#include "solvers/md/bonded.hpp"

using namespace cumulus;
using namespace cumulus::md;

namespace {

constexpr double kPiL = 3.14159265358979323846;

// A small molecular system: positions, bonds (i, j, type), angles (i, j, k with j the vertex; type).
struct System {
  std::vector<std::array<double, 3>> x;
  std::vector<std::array<int, 3>> bonds;
  std::vector<std::array<int, 4>> angles;
  double box[3] = {6, 7, 8};
};

// Coefficients per type as a data file gives them: bonds K r0, angles K theta0 (degrees).
const std::vector<std::vector<double>> kBondCoeffs = {{450.0, 1.0}, {300.0, 1.4}};
const std::vector<std::vector<double>> kAngleCoeffs = {{55.0, 104.52}, {40.0, 120.0}, {30.0, 180.0}};

// Two bent triatomics (one across the box's corner), a four-atom chain and a triatomic near its
// straight equilibrium (sin theta above the 0.001 at which the force is held, as in LAMMPS).
System molecules() {
  System s;
  s.x = {{0.2, 0.3, 0.1}, {5.4, 0.5, 0.2}, {0.6, 6.6, 7.7},     // across the periodic boundaries
         {3.0, 3.0, 3.0}, {3.9, 3.4, 3.1}, {2.6, 3.9, 2.7},     // in the middle
         {1.0, 4.0, 5.0}, {2.3, 4.2, 5.1}, {2.9, 5.4, 5.5}, {4.2, 5.6, 4.9},  // chain
         {4.0, 1.0, 6.0}, {5.05, 1.1, 6.0}, {2.97, 1.05, 6.02}};             // 172 degrees, theta0 180
  s.bonds = {{0, 1, 0}, {0, 2, 0}, {3, 4, 0}, {3, 5, 0}, {6, 7, 1}, {7, 8, 1}, {8, 9, 1}, {10, 11, 0}, {10, 12, 0}};
  s.angles = {{1, 0, 2, 0}, {4, 3, 5, 0}, {6, 7, 8, 1}, {7, 8, 9, 1}, {11, 10, 12, 2}};
  return s;
}

// The closed forms, in long double with acos: the energy of every term.
long double bond_energy(const System& s) {
  long double e = 0;
  for (const auto& b : s.bonds) {
    long double r2 = 0;
    for (int d = 0; d < 3; ++d) {
      long double dx = s.x[b[0]][d] - s.x[b[1]][d];
      dx -= s.box[d] * std::round(static_cast<double>(dx / s.box[d]));
      r2 += dx * dx;
    }
    const std::vector<double>& c = kBondCoeffs[b[2]];
    const long double dr = std::sqrt(r2) - c[1];
    e += c[0] * dr * dr;
  }
  return e;
}
long double angle_energy(const System& s) {
  long double e = 0;
  for (const auto& a : s.angles) {
    long double d1[3], d3[3], dot = 0, n1 = 0, n3 = 0;
    for (int d = 0; d < 3; ++d) {
      d1[d] = s.x[a[0]][d] - s.x[a[1]][d];
      d3[d] = s.x[a[2]][d] - s.x[a[1]][d];
      d1[d] -= s.box[d] * std::round(static_cast<double>(d1[d] / s.box[d]));
      d3[d] -= s.box[d] * std::round(static_cast<double>(d3[d] / s.box[d]));
      dot += d1[d] * d3[d];
      n1 += d1[d] * d1[d];
      n3 += d3[d] * d3[d];
    }
    const std::vector<double>& c = kAngleCoeffs[a[3]];
    const long double theta = std::acos(dot / std::sqrt(n1 * n3)), dt = theta - c[1] * kPiL / 180;
    e += c[0] * dt * dt;
  }
  return e;
}

struct Result {
  std::vector<double> f[3], pe, virial;
  double e_bond = 0, e_angle = 0;
  std::array<double, 6> tensor{};
};

// The system as md holds it (every atom holding its terms; ids 0-based), the topology resolved,
// then both terms' force calls on zeroed forces, energies and virial tensors.
Result evaluate(const System& s, const Exec& ex) {
  const int n = static_cast<int>(s.x.size());
  std::vector<std::vector<std::pair<int, int>>> bonds(static_cast<std::size_t>(n));
  std::vector<std::vector<std::array<int, 4>>> angles(static_cast<std::size_t>(n));
  for (const auto& b : s.bonds) {
    bonds[b[0]].push_back({b[1], b[2]});
    bonds[b[1]].push_back({b[0], b[2]});
  }
  for (const auto& a : s.angles)
    for (int m = 0; m < 3; ++m) angles[a[m]].push_back(a);
  std::size_t nb = 0, na = 0;
  for (int i = 0; i < n; ++i) {
    nb = std::max(nb, bonds[i].size());
    na = std::max(na, angles[i].size());
  }
  MdAtoms atoms(ex, std::vector<double>(1, 1.0), AtomLayout{.nbond = static_cast<int>(nb), .nangle = static_cast<int>(na)});
  atoms.store.resize_owned(n);
  ParticleStore& st = atoms.store;
  for (int i = 0; i < n; ++i) {
    for (int d = 0; d < 3; ++d) atoms.hx(d)[i] = s.x[i][d];
    atoms.hid()[i] = i;
    atoms.htype()[i] = 0;
    for (std::size_t c = 0; c < nb; ++c) {
      const bool used = c < bonds[i].size();
      st.host<std::int64_t>(atoms.bond_atom, static_cast<int>(c))[i] = used ? bonds[i][c].first : -1;
      st.host<int>(atoms.bond_type, static_cast<int>(c))[i] = used ? bonds[i][c].second : 0;
    }
    for (std::size_t c = 0; c < na; ++c) {
      const bool used = c < angles[i].size();
      for (int m = 0; m < 3; ++m)
        st.host<std::int64_t>(atoms.angle_atom, static_cast<int>(3 * c) + m)[i] = used ? angles[i][c][m] : -1;
      st.host<int>(atoms.angle_type, static_cast<int>(c))[i] = used ? angles[i][c][3] : 0;
    }
  }
  st.upload();
  atoms.fit_scratch(n);
  BondedTopology topo(ex, n);
  topo.resolve(Comm::self(), atoms, 0);
  Atoms a = atoms.view(nullptr, s.box);
  const std::vector<double> zeros(static_cast<std::size_t>(n), 0.0);
  for (double* p : {a.fx, a.fy, a.fz, a.pe, a.virial})
    memory::copy(ex, ex.backend(), p, Backend::host, zeros.data(), sizeof(double) * zeros.size());
  const auto bond = make_bond_harmonic(kBondCoeffs, ex);
  const auto angle = make_angle_harmonic(kAngleCoeffs, ex);
  bond->compute(ex, a, topo.view());
  angle->compute(ex, a, topo.view());
  Result r;
  for (int d = 0; d < 3; ++d) {
    r.f[d].resize(static_cast<std::size_t>(n));
    memory::copy(ex, Backend::host, r.f[d].data(), ex.backend(), d == 0 ? a.fx : (d == 1 ? a.fy : a.fz), sizeof(double) * n);
  }
  r.pe.resize(static_cast<std::size_t>(n));
  r.virial.resize(static_cast<std::size_t>(n));
  memory::copy(ex, Backend::host, r.pe.data(), ex.backend(), a.pe, sizeof(double) * n);
  memory::copy(ex, Backend::host, r.virial.data(), ex.backend(), a.virial, sizeof(double) * n);
  r.e_bond = bond->energy(ex, Comm::self(), a, topo.view());
  r.e_angle = angle->energy(ex, Comm::self(), a, topo.view());
  const auto wb = bond->virial_tensor(ex, Comm::self(), a, topo.view());
  const auto wa = angle->virial_tensor(ex, Comm::self(), a, topo.view());
  for (int c = 0; c < 6; ++c) r.tensor[static_cast<std::size_t>(c)] = wb[static_cast<std::size_t>(c)] + wa[static_cast<std::size_t>(c)];
  return r;
}

class MdBonded : public ::testing::TestWithParam<Backend> {};

TEST_P(MdBonded, EnergiesMatchTheClosedForms) {
  CUMULUS_EXEC_OR_SKIP(ex, GetParam());
  const System s = molecules();
  const Result r = evaluate(s, ex);
  const double eb = static_cast<double>(bond_energy(s)), ea = static_cast<double>(angle_energy(s));
  EXPECT_NEAR(r.e_bond, eb, 1e-13 * std::fabs(eb));
  EXPECT_NEAR(r.e_angle, ea, 1e-12 * std::fabs(ea));
  double pe = 0;
  for (double v : r.pe) pe += v;
  EXPECT_NEAR(pe, eb + ea, 1e-12 * (eb + ea)) << "the atoms' shares add up to the terms' energies";
  double w = 0;
  for (double v : r.virial) w += v;
  EXPECT_NEAR(w, r.tensor[0] + r.tensor[1] + r.tensor[2], 1e-10 * std::fabs(w) + 1e-10) << "virial: trace against the atoms' sum";
}

// F = -grad E by central differences of the closed-form energy (long double), every atom and axis.
TEST_P(MdBonded, ForcesAreMinusTheGradient) {
  CUMULUS_EXEC_OR_SKIP(ex, GetParam());
  const System s = molecules();
  const Result r = evaluate(s, ex);
  const double h = 1e-6;
  double worst = 0, scale = 0;
  for (std::size_t i = 0; i < s.x.size(); ++i)
    for (int d = 0; d < 3; ++d) {
      System p = s, m = s;
      p.x[i][d] += h;
      m.x[i][d] -= h;
      const long double ep = bond_energy(p) + angle_energy(p), em = bond_energy(m) + angle_energy(m);
      const double want = static_cast<double>(-(ep - em) / (2 * h));
      worst = std::max(worst, std::fabs(r.f[d][i] - want));
      scale = std::max(scale, std::fabs(want));
      EXPECT_NEAR(r.f[d][i], want, 1e-6 * (1 + std::fabs(want))) << "atom " << i << " axis " << d;
    }
  std::printf("[ bonded ] largest force error against finite differences: %.3g of the largest force %.3g\n", worst, scale);
  // Newton's third law: the forces of every term sum to zero.
  for (int d = 0; d < 3; ++d) {
    double sum = 0;
    for (double f : r.f[d]) sum += f;
    EXPECT_NEAR(sum, 0.0, 1e-11 * scale);
  }
}

// The host is the oracle: a CUDA device gives the same bits (hd::atan2, one expression per term).
TEST(MdBondedBackends, CudaMatchesHostBitwise) {
  CUMULUS_EXEC_OR_SKIP(ex, Backend::cuda);
  const System s = molecules();
  const Result h = evaluate(s, Exec::host()), c = evaluate(s, ex);
  for (int d = 0; d < 3; ++d) EXPECT_TRUE(h.f[d] == c.f[d]) << "axis " << d;
  EXPECT_TRUE(h.pe == c.pe);
  EXPECT_TRUE(h.virial == c.virial);
  EXPECT_EQ(h.e_bond, c.e_bond);
  EXPECT_EQ(h.e_angle, c.e_angle);
}

INSTANTIATE_TEST_SUITE_P(Backends, MdBonded, ::testing::ValuesIn(cumulus::testing::built_backends()),
                         cumulus::testing::backend_name);

}  // namespace
