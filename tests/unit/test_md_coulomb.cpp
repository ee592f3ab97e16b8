// Charges in md: the LAMMPS data file reader's charge and full styles and topology sections (and
// its errors, which name the file and line), special partners from the bond graph, and the
// lj/cut/coul/long / coul/long pair term on two atoms against the analytic real-space Ewald
// terms, plain and as an excluded (1-2) pair, through the three lists md uses.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/comm.hpp"
#include "core/config.hpp"
#include "core/error.hpp"
#include "core/memory.hpp"
#include "solvers/md/atoms.hpp"
#include "solvers/md/coul_table.hpp"
#include "solvers/md/data_file.hpp"
#include "solvers/md/force.hpp"
#include "solvers/md/md_kernels.hpp"
#include "solvers/md/neighbor_list.hpp"
#include "solvers/md/fixed_point.hpp"
#include "solvers/md/pair_lj_cut.hpp"
#include "solvers/md/pair_lj_cut_coul_long.hpp"
#include "solvers/md/setup.hpp"
#include "solvers/md/topology.hpp"
#include "solvers/model.hpp"

using namespace cumulus;
using namespace cumulus::md;

namespace {

constexpr double kPi = 3.14159265358979323846;

Config md_config(const std::string& md_keys) {
  const std::string text = "solver = \"md\"\n[md]\n" + md_keys;
  return parse_job_text(text, "test.toml", {},
                        [](const std::string& s, Schema& schema) { SolverRegistry::all().build_schema(s, schema); });
}

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

// The message read_data_file throws for `text` (empty if it reads).
std::string data_error(const std::string& text) {
  const std::string path = write_file("bad.data", text);
  try {
    read_data_file(path, false);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

const char* kFull =
    "water-like\n\n4 atoms\n2 atom types\n3 bonds\n1 bond types\n1 angles\n1 angle types\n\n"
    "0 10 xlo xhi\n0 10 ylo yhi\n0 10 zlo zhi\n\nMasses\n\n1 15.9994\n2 1.008\n\n"
    "Pair Coeffs # lj/cut/coul/long\n\n1 0.1553 3.166\n2 0 0\n\nBond Coeffs\n\n1 450 1.0\n\nAngle Coeffs\n\n1 55 "
    "109.47\n\n"
    "Atoms # full\n\n1 7 1 -0.8476 1 1 1\n2 7 2 0.4238 2 1 1 0 0 1\n3 7 2 0.4238 1 2 1\n4 8 2 0.5 5 5 5\n\n"
    "Bonds\n\n1 1 1 2\n2 1 1 3\n3 1 3 4\n\nAngles\n\n1 1 2 1 3\n";

}  // namespace

TEST(MdDataFile, ReadsFullStyleWithTopologyAndCoefficients) {
  const DataFile d = read_data_file(write_file("full.data", kFull), false);
  EXPECT_EQ(d.atom_style, "full");
  ASSERT_EQ(d.id.size(), 4u);
  EXPECT_EQ(d.molecule[0], 7);
  EXPECT_EQ(d.molecule[3], 8);
  EXPECT_EQ(d.type[1], 2);
  EXPECT_EQ(d.q[0], -0.8476);
  EXPECT_EQ(d.q[3], 0.5);
  EXPECT_EQ(d.x[0][1], 2.0);
  EXPECT_EQ(d.image[2][1], 1);
  ASSERT_EQ(d.bonds.size(), 3u);
  EXPECT_EQ(d.bonds[2].atom[0], 3);
  EXPECT_EQ(d.bonds[2].atom[1], 4);
  ASSERT_EQ(d.angles.size(), 1u);
  EXPECT_EQ(d.angles[0].atom[1], 1);
  ASSERT_EQ(d.pair_coeffs.size(), 2u);
  EXPECT_EQ(d.pair_coeffs[0], (std::vector<double>{0.1553, 3.166}));
  EXPECT_EQ(d.bond_coeffs[0], (std::vector<double>{450, 1.0}));
  EXPECT_EQ(d.angle_coeffs[0], (std::vector<double>{55, 109.47}));
}

// Without a style comment the columns decide: 6 (or 9) is atom_style charge.
TEST(MdDataFile, ChargeStyleFromTheColumnCount) {
  const DataFile d =
      read_data_file(write_file("charge.data",
                                "c\n\n2 atoms\n1 atom types\n0 4 xlo xhi\n0 4 ylo yhi\n0 4 zlo zhi\n\nMasses\n\n1 1\n\n"
                                "Atoms\n\n1 1 1.5 0 0 0\n2 1 -1.5 1 1 1 0 0 0\n"),
                     false);
  EXPECT_EQ(d.atom_style, "charge");
  EXPECT_EQ(d.q[1], -1.5);
  EXPECT_EQ(d.molecule[1], 0);
}

TEST(MdDataFile, BadTopologyNamesFileAndLine) {
  std::string full = kFull;
  // A bond to an atom that does not exist (line 43: "3 1 3 9").
  std::string t = full;
  t.replace(t.find("3 1 3 4"), 7, "3 1 3 9");
  EXPECT_NE(data_error(t).find("bad.data:43: Bonds entry 3 names atom 9, which is not in Atoms"), std::string::npos)
      << data_error(t);
  // A bond type beyond the header's.
  t = full;
  t.replace(t.find("3 1 3 4"), 7, "3 2 3 4");
  EXPECT_NE(data_error(t).find(":43: Bonds type 2 is not among the header's 1"), std::string::npos) << data_error(t);
  // A malformed Angles line.
  t = full;
  t.replace(t.find("1 1 2 1 3"), 9, "1 1 2 1");
  EXPECT_NE(data_error(t).find(":47: a Angles line is 'id type' and 3 atom ids"), std::string::npos) << data_error(t);
  // The header promises angles, the file has none.
  t = full.substr(0, full.find("\nAngles"));
  EXPECT_NE(data_error(t).find("the header gives 1 Angles but there is no Angles section"), std::string::npos)
      << data_error(t);
  // A charge that is not a number.
  t = full;
  t.replace(t.find("-0.8476"), 7, "-0.8x76");
  EXPECT_NE(data_error(t).find(":34: expected a number, got '-0.8x76'"), std::string::npos) << data_error(t);
  // An unsupported style and a triclinic box.
  t = full;
  t.replace(t.find("Atoms # full"), 12, "Atoms # bond");
  EXPECT_NE(data_error(t).find(":32: atom_style 'bond' is not supported"), std::string::npos) << data_error(t);
  t = full;
  t.replace(t.find("0 10 zlo zhi"), 12, "0 10 zlo zhi\n0 0 0 xy xz yz");
  EXPECT_NE(data_error(t).find(":13: triclinic boxes"), std::string::npos) << data_error(t);
  // A section twice.
  EXPECT_NE(data_error(full + "\nAngles\n\n1 1 2 1 3\n").find("section 'Angles' appears twice"), std::string::npos);
}

// A chain 1-2-3-4-5 and a branch 3-6: partners up to three bonds away, each at its shortest
// distance in bonds, ascending by id; zero-based ids times 4 plus the level.
TEST(MdTopology, SpecialPartnersFromTheBondGraph) {
  DataFile d;
  for (int k = 1; k <= 7; ++k) d.id.push_back(k);
  for (auto [a, b] : {std::pair{1, 2}, {2, 3}, {3, 4}, {4, 5}, {3, 6}}) {
    Bonded bd;
    bd.type = 1;
    bd.atom = {a, b, 0, 0};
    d.bonds.push_back(bd);
  }
  const auto s = special_partners(d);
  auto code = [](int id, int level) { return static_cast<std::int64_t>(id - 1) * 4 + level; };
  EXPECT_EQ(s[0], (std::vector<std::int64_t>{code(2, 1), code(3, 2), code(4, 3), code(6, 3)}));
  EXPECT_EQ(s[2], (std::vector<std::int64_t>{code(1, 2), code(2, 1), code(4, 1), code(5, 2), code(6, 1)}));
  EXPECT_EQ(s[4], (std::vector<std::int64_t>{code(2, 3), code(3, 2), code(4, 1), code(6, 3)}));
  EXPECT_TRUE(s[6].empty());  // no bonds
}

namespace {
enum class ListKind { host_half, host_full, kernels };

struct PairResult {
  double f[2][3] = {}, pe[2] = {}, virial[2] = {};
};

// Two charged atoms, optionally a special (1-2) pair, through a list of `kind`.
PairResult two_charges(const ForceTerm& style, const double x[2][3], double q0, double q1, bool special, ListKind kind,
                       const Exec& ex) {
  const double box[3] = {12.0, 13.0, 14.0};
  MdAtoms atoms(ex, std::vector<double>(2, 1.0), AtomLayout{.charged = true, .nspecial = 1});
  atoms.store.resize_owned(2);
  for (int i = 0; i < 2; ++i) {
    for (int d = 0; d < 3; ++d) atoms.hx(d)[i] = x[i][d];
    atoms.hid()[i] = i;
    atoms.htype()[i] = 0;
    atoms.store.host<double>(atoms.charge)[i] = i == 0 ? q0 : q1;
    atoms.store.host<std::int64_t>(atoms.special, 0)[i] = special ? (1 - i) * 4 + 1 : -1;
  }
  atoms.store.upload();
  const int saved = omp_get_max_threads();
  omp_set_num_threads(kind == ListKind::host_full ? 2 : 1);
  auto list = kind == ListKind::kernels ? make_kernel_neighbor_list(ex, false) : make_host_neighbor_list(ex);
  atoms.fit_scratch(atoms.nown());
  list->build(atoms, box, style.reach() + 0.3);
  atoms.fit_scratch(list->half() ? atoms.nlocal() : atoms.nown());
  style.compute(ex, atoms.view(list.get(), box));
  omp_set_num_threads(saved);
  const Atoms a = atoms.view(list.get(), box);
  PairResult r;
  std::vector<double> h(2);
  const double* arrays[5] = {a.fx, a.fy, a.fz, a.pe, a.virial};
  for (int k = 0; k < 5; ++k) {
    memory::copy(ex, Backend::host, h.data(), ex.backend(), arrays[k], sizeof(double) * 2);
    for (int i = 0; i < 2; ++i) (k < 3 ? r.f[i][k] : k == 3 ? r.pe[i] : r.virial[i]) = h[static_cast<std::size_t>(i)];
  }
  return r;
}
}  // namespace

// qqr2e q0 q1 erfc(alpha r) / r and its force (real units: qqr2e 332.06371), split in halves; as
// an excluded pair, -qqr2e q0 q1 erf(alpha r) / r; the same bits through the three lists; the
// force is minus the energy's derivative (central differences).
TEST(PairCoulLong, TwoChargesMatchTheRealSpaceEwaldTerm) {
  for (bool tabulated : {true, false}) {
    SCOPED_TRACE(tabulated ? "md.coul_table = true" : "md.coul_table = false");
    Exec ex;
    const Config cfg = md_config(
        std::string("units = \"real\"\npair_style = \"coul/long\"\nkspace_style = \"ewald\"\ncutoff = 5.0\n") +
        "coul_table = " + (tabulated ? "true" : "false") + "\n");
    auto style = force_style("coul/long").create(cfg, 2, ex);
    const double alpha = 0.31;
    style->set_ewald_alpha(alpha);
    EXPECT_TRUE(style->coulomb());
    const double u[3] = {0.48, 0.6, 0.64};
    const double qqr2e = 332.06371, q0 = -0.8476, q1 = 0.4238;
    for (bool special : {false, true})
      for (double r : {0.9, 2.0, 4.7, 5.3}) {  // across the periodic boundary: atom 0 near x = 0
        const double x[2][3] = {{0.2, 6.0, 7.0}, {0.2 - r * u[0] + 12.0, 6.0 - r * u[1], 7.0 - r * u[2]}};
        const double in = r < 5.0 ? 1.0 : 0.0;
        const double e = in * qqr2e * q0 * q1 * (special ? -std::erf(alpha * r) : std::erfc(alpha * r)) / r;
        // -dE/dr
        const double f =
            in * qqr2e * q0 * q1 *
            (special
                 ? 2 * alpha / std::sqrt(kPi) * std::exp(-alpha * alpha * r * r) / r - std::erf(alpha * r) / (r * r)
                 : std::erfc(alpha * r) / (r * r) + 2 * alpha / std::sqrt(kPi) * std::exp(-alpha * alpha * r * r) / r);
        PairResult first;
        for (ListKind kind : {ListKind::host_half, ListKind::host_full, ListKind::kernels}) {
          const PairResult p = two_charges(*style, x, q0, q1, special, kind, ex);
          for (int d = 0; d < 3; ++d) {
            EXPECT_NEAR(p.f[0][d], f * u[d], 1e-12 * std::fabs(f) + 1e-300) << r << " special " << special;
            EXPECT_EQ(p.f[1][d], -p.f[0][d]);
          }
          EXPECT_NEAR(p.pe[0], 0.5 * e, 1e-13 * std::fabs(e)) << r << " special " << special;
          EXPECT_EQ(p.pe[1], p.pe[0]);
          EXPECT_NEAR(p.virial[0], 0.5 * r * f, 1e-12 * std::fabs(r * f)) << r;
          if (kind == ListKind::host_half) {
            first = p;
          } else {
            for (int d = 0; d < 3; ++d) EXPECT_EQ(p.f[0][d], first.f[0][d]) << "lists differ";
            EXPECT_EQ(p.pe[0], first.pe[0]);
          }
        }
        if (r < 5.0 && r > 1.0) {  // central difference of the energy along the line
          const double h = 1e-5;
          double eh[2];
          for (int s = 0; s < 2; ++s) {
            const double rr = r + (s == 0 ? h : -h);
            const double y[2][3] = {{0.2, 6.0, 7.0}, {0.2 - rr * u[0] + 12.0, 6.0 - rr * u[1], 7.0 - rr * u[2]}};
            const PairResult p = two_charges(*style, y, q0, q1, special, ListKind::host_half, ex);
            eh[s] = p.pe[0] + p.pe[1];
          }
          EXPECT_NEAR(-(eh[0] - eh[1]) / (2 * h), f, 1e-6 * std::fabs(f)) << r;
        }
      }
  }
}

// special_coul scales the kept part and corrects the rest: factor c gives
// c qq erfc / r - (1 - c) qq erf / r; special_lj scales the LJ term.
TEST(PairCoulLong, SpecialFactorsScaleBothTerms) {
  Exec ex;
  const Config cfg = md_config(
      "pair_style = \"lj/cut/coul/long\"\nkspace_style = \"ewald\"\ncutoff = 3.0\n"
      "special_lj = [0.5, 0, 0]\nspecial_coul = [0.25, 0, 0]\n");
  auto style = force_style("lj/cut/coul/long").create(cfg, 2, ex);
  const double alpha = 0.9, r = 1.1;
  style->set_ewald_alpha(alpha);
  const double x[2][3] = {{1, 1, 1}, {1 + r, 1, 1}};
  const PairResult p = two_charges(*style, x, 1.0, -1.0, true, ListKind::host_full, ex);
  const double s6 = std::pow(1.0 / r, 6), lj = 4 * (s6 * s6 - s6);
  const double coul = -(0.25 * std::erfc(alpha * r) - 0.75 * std::erf(alpha * r)) / r;
  EXPECT_NEAR(p.pe[0] + p.pe[1], 0.5 * lj + coul, 1e-13);
}

// separation32 (mixed precision's separations, md_kernels.hpp): exactly antisymmetric, so that a
// pair's two atoms get opposite terms, at the nearest image's ties (the difference exactly +-L/2),
// across the boundary, and for NaN and infinite coordinates (which the
// force loops must mark, not hide); within L/2 and the fp32 coordinates' rounding of the fp64
// separation for random pairs.
TEST(Separation32, AntisymmetricAtTiesZerosAndNonFinite) {
  const auto bits = [](float v) {
    std::uint32_t b;
    std::memcpy(&b, &v, sizeof b);
    return b;
  };
  for (double L : {45.0, 9.3, 1000.0}) {
    const float h = 0.5f * static_cast<float>(L);
    const double pairs[][2] = {{0.5, 0.5}, {0.0, 0.0}, {static_cast<double>(h), 0.0}, {L - 0.25, L - 0.25 - h},
                               {0.5, L - 0.2},  {L * 0.75, L * 0.25}, {std::nan(""), 1.0},
                               {std::numeric_limits<double>::infinity(), 1.0}, {-std::numeric_limits<double>::infinity(), 1.0}};
    for (const auto& p : pairs) {
      const float ij = separation32(p[0], p[1], L), ji = separation32(p[1], p[0], L);
      if (std::isnan(ij)) {
        EXPECT_TRUE(std::isnan(ji)) << "L " << L << ": " << p[0] << ", " << p[1];
        EXPECT_FALSE(std::isfinite(p[0]) && std::isfinite(p[1]));
        continue;
      }
      if (ij == 0) {  // equal coordinates: +0 both ways (a zero component's terms are 0 units either way)
        EXPECT_EQ(ji, 0.0f);
        continue;
      }
      EXPECT_EQ(bits(ij), bits(-ji)) << "L " << L << ": " << p[0] << ", " << p[1] << " gives " << ij << " and " << ji;
      if (std::isfinite(p[0])) {
        EXPECT_LE(std::fabs(ij), h) << "L " << L;
      } else {
        EXPECT_TRUE(std::isinf(ij));
      }
    }
    EXPECT_NEAR(separation32(0.5, L - 0.2, L), 0.7, 4e-6 * L);  // across the boundary
    std::uint64_t st = 99;
    auto uniform = [&] {
      st = st * 6364136223846793005ULL + 1442695040888963407ULL;
      return static_cast<double>(st >> 11) * 0x1p-53;
    };
    for (int k = 0; k < 100000; ++k) {
      const double a = L * uniform(), b = L * uniform();
      const float ij = separation32(a, b, L), ji = separation32(b, a, L);
      if (ij != 0) {
        ASSERT_EQ(bits(ij), bits(-ji)) << a << ", " << b;
      }
      ASSERT_LE(std::fabs(ij), h);
      // Against the fp64 minimum image: within the coordinates', the difference's and L's roundings
      // (where |d| is near L/2 the two may take opposite images: the distance is then L/2 either way).
      const double d = minimum_image(a - b, L);
      if (std::fabs(std::fabs(d) - L / 2) > 1e-4 * L) {
        ASSERT_NEAR(ij, d, 0x1p-22 * 3 * L) << a << ", " << b;
      }
    }
  }
}

// The tabulated erf(alpha r) / r (coul_table.hpp) and its derivative in r^2 against long double
// erfl on a dense sweep of r, for the alphas and cutoffs of the validation cases (tolerance 1e-5 to
// 1e-10 at 10 A, NIST's 5.6 / 20 A, a short cutoff): h to an ulp or so, and the force's erfc part
// (1 / r^3 + 2 h') to a few 1e-15 of 1 / r^3 (the derivative amplifies the nodes' long-double
// rounding, most where h' is small beside h: measured 5e-15 to 1.5e-14; LAMMPS's table: about 1e-6).
TEST(CoulTable, MatchesErfOverROfLongDouble) {
  for (const auto& [alpha, rc] :
       std::vector<std::pair<double, double>>{{0.28, 10.0}, {0.2365, 10.0}, {0.33, 10.0}, {0.48, 10.0}, {0.9, 3.0}}) {
    int n = 0;
    double inv_ds = 0;
    const std::vector<double> c = coul_table_build(alpha, rc * rc, &n, &inv_ds);
    ASSERT_EQ(c.size(), static_cast<std::size_t>(n) * kCoulTableStride);
    const CoulTableView t{c.data(), inv_ds, rc * rc, n};
    double worst_h = 0, worst_f = 0;
    for (int k = 1; k <= 20000; ++k) {
      const long double r = static_cast<long double>(rc) * k / 20000, s = r * r, a = alpha;
      double h, dh;
      coul_table_eval(t, static_cast<double>(s), &h, &dh);
      // The table takes s as a double: the reference at that same s.
      const long double sd = static_cast<double>(s), rd = std::sqrt(sd);
      const long double href = std::erf(a * rd) / rd;
      // h'(s) = (alpha / sqrt(pi) exp(-alpha^2 s) - h / 2) / s
      const long double dref = (a / std::sqrt(static_cast<long double>(kPi)) * std::exp(-a * a * sd) - href / 2) / sd;
      worst_h = std::max(worst_h, static_cast<double>(std::fabs(h - href) / href));
      if (r > 0.5L) worst_f = std::max(worst_f, static_cast<double>(std::fabs(2 * (dh - dref)) * rd * rd * rd));
    }
    EXPECT_LT(worst_h, 4e-16) << "alpha " << alpha << " cutoff " << rc;
    EXPECT_LT(worst_f, 3e-14) << "alpha " << alpha << " cutoff " << rc;
    std::printf(
        "alpha %.4g, cutoff %g, %d intervals: max relative error of h %.2e, of the force's erfc part %.2e of 1/r^3\n",
        alpha, rc, n, worst_h, worst_f);
  }
}

// The fp32 table of mixed precision (coul_table_build32: degree 3 on intervals 1/32 wide in u),
// evaluated in fp32, against long double erfl, and against the degree-7 table's lines rounded to
// fp32 (what mixed precision took before): as exact as those, both at fp32's rounding. Errors: h
// relative to itself; the force's erfc part 2 h' in kcal/mol/A per unit charge product and A^3
// (absolute: it is a correction to 1 / r^3 that cancels it near the cutoff).
TEST(CoulTable, Fp32TableIsAsExactAsTheRoundedDegree7Lines) {
  for (const auto& [alpha, rc] :
       std::vector<std::pair<double, double>>{{0.28, 10.0}, {0.2365, 10.0}, {0.33, 10.0}, {0.48, 10.0}, {0.9, 3.0}}) {
    int n = 0, n7 = 0;
    double inv_ds = 0, inv_ds7 = 0;
    const std::vector<float> c = coul_table_build32(alpha, rc * rc, &n, &inv_ds);
    ASSERT_EQ(c.size(), static_cast<std::size_t>(n) * kCoulTable32Stride);
    const std::vector<double> c7d = coul_table_build(alpha, rc * rc, &n7, &inv_ds7);
    const std::vector<float> c7(c7d.begin(), c7d.end());
    const float cut2 = static_cast<float>(rc * rc);
    const CoulTableViewT<float> t{c.data(), static_cast<float>(inv_ds), cut2, n};
    double worst[2][2] = {};  // [table: new, rounded degree 7][h, 2 h']
    for (int k = 1; k <= 20000; ++k) {
      const float s = static_cast<float>(rc * k / 20000 * (rc * k / 20000));
      const long double sd = s, rd = std::sqrt(sd), a = alpha;
      const long double href = std::erf(a * rd) / rd;
      const long double dref = (a / std::sqrt(static_cast<long double>(kPi)) * std::exp(-a * a * sd) - href / 2) / sd;
      float h[2], dh[2];
      coul_table_eval(t, s, &h[0], &dh[0]);
      {  // the degree-7 lines in fp32, by coul_table_eval's degree-7 Horner
        const float v = std::min(s, cut2) * static_cast<float>(inv_ds7);
        const int q = std::min(static_cast<int>(v), n7 - 1);
        const float x = 2 * (v - static_cast<float>(q)) - 1;
        const float* l = c7.data() + static_cast<std::size_t>(q) * kCoulTableStride;
        float p = l[7], d = p;
        for (int w = 6; w >= 1; --w) {
          p = p * x + l[w];
          d = d * x + p;
        }
        h[1] = p * x + l[0];
        dh[1] = d * (2 * static_cast<float>(inv_ds7));
      }
      for (int m = 0; m < 2; ++m) {
        worst[m][0] = std::max(worst[m][0], static_cast<double>(std::fabs(h[m] - href) / href));
        if (rd > 0.5L) worst[m][1] = std::max(worst[m][1], static_cast<double>(std::fabs(2 * (dh[m] - dref))));
      }
    }
    EXPECT_LT(worst[0][0], 1.5 * worst[1][0] + 1e-8) << "alpha " << alpha << " cutoff " << rc;
    EXPECT_LT(worst[0][1], 2.5 * worst[1][1]) << "alpha " << alpha << " cutoff " << rc;
    EXPECT_LT(worst[0][0], 4e-7) << "alpha " << alpha << " cutoff " << rc;
    std::printf("fp32, alpha %.4g, cutoff %g, %d intervals of degree 3: max relative error of h %.2e (degree 7 rounded: %.2e), "
                "of 2 h' %.2e (%.2e)\n",
                alpha, rc, n, worst[0][0], worst[1][0], worst[0][1], worst[1][1]);
  }
}

// The host's tabulated loops (the AVX-512 one where the CPU has it, and the generic one; half list
// at one thread, full list at two) against coul_pair, the scalar function CUDA's coul_atom calls,
// summed in list order: the same bits, for 432 atoms of two types with charges of both signs,
// special (1-2 and 1-3) pairs and partners across the periodic boundary.
// A jittered 6 x 6 x 12 lattice of 432 ions of two types in an 18 A box, in bonded chains of three
// (1-2 and 1-3 special pairs), with the parameters of lj/cut/coul/long: the tabulated loops' test
// system.
struct IonChains {
  static constexpr int n = 432;
  const double box[3] = {18.0, 18.0, 18.0};
  MdAtoms atoms;
  CoulParams p;
  std::vector<double> table;
  std::vector<LjCoefficients> c;
  explicit IonChains(const Exec& ex) : atoms(ex, std::vector<double>{22.99, 35.45}, AtomLayout{.charged = true, .nspecial = 2}) {
    atoms.store.resize_owned(n);
    std::uint64_t z = 0x9E3779B97F4A7C15ull;
    auto uniform = [&z] {
      z ^= z << 13;
      z ^= z >> 7;
      z ^= z << 17;
      return static_cast<double>(z >> 11) / 9007199254740992.0;
    };
    for (int i = 0; i < n; ++i) {
      const int cell[3] = {i % 6, (i / 6) % 6, i / 36};
      const double spacing[3] = {3.0, 3.0, 1.5};
      for (int d = 0; d < 3; ++d) atoms.hx(d)[i] = (cell[d] + 0.5) * spacing[d] + 0.4 * (uniform() - 0.5);
      atoms.hid()[i] = i;
      atoms.htype()[i] = i % 2;
      atoms.store.host<double>(atoms.charge)[i] = (i % 2 ? -1.0 : 1.0) * (0.5 + uniform());
      // Atoms 3k, 3k+1, 3k+2 a bonded chain: 1-2 pairs (level 1) and the 1-3 pair (level 2).
      const int k = i / 3 * 3, r = i % 3;
      std::int64_t sp[2] = {-1, -1};
      if (r == 0) sp[0] = (k + 1) * 4 + 1, sp[1] = (k + 2) * 4 + 2;
      if (r == 1) sp[0] = k * 4 + 1, sp[1] = (k + 2) * 4 + 1;
      if (r == 2) sp[0] = k * 4 + 2, sp[1] = (k + 1) * 4 + 1;
      for (int c2 = 0; c2 < 2; ++c2) atoms.store.host<std::int64_t>(atoms.special, c2)[i] = sp[c2];
    }
    atoms.store.upload();
    p.qqr2e = 332.06371;
    p.alpha = 0.33;
    p.cut2 = 8.0 * 8.0;
    p.special_lj[1] = 0.0, p.special_lj[2] = 0.5, p.special_lj[3] = 0.5;
    p.special_coul[1] = 0.0, p.special_coul[2] = 0.25, p.special_coul[3] = 0.5;
    int nt = 0;
    double inv_ds = 0;
    table = coul_table_build(p.alpha, p.cut2, &nt, &inv_ds);
    p.table = CoulTableView{table.data(), inv_ds, p.cut2, nt};
    c.resize(4);
    const double eps[4] = {0.1, 0.2, 0.2, 0.15}, sigma[4] = {2.5, 3.0, 3.0, 4.0}, cut[4] = {8.0, 7.0, 7.0, 6.5};
    for (int t = 0; t < 4; ++t) {
      const double s6 = std::pow(sigma[t], 6);
      c[static_cast<std::size_t>(t)] = {cut[t] * cut[t],      48 * eps[t] * s6 * s6, 24 * eps[t] * s6,
                                        4 * eps[t] * s6 * s6, 4 * eps[t] * s6,       0.01};
    }
  }
};

// The double path's host loops: the hand-written one the CPU takes (AVX-512, else AVX2), the AVX2
// one where the CPU also has AVX-512 (CUMULUS_HOST_AVX2), and the generic one (CUMULUS_NO_AVX512).
// Where the CPU lacks AVX-512 the first two are the same loop; the tests compare them all.
namespace {
enum class HostLoop { cpu, avx2, generic };
constexpr HostLoop kHostLoops[] = {HostLoop::cpu, HostLoop::avx2, HostLoop::generic};
const char* loop_name(HostLoop l) {
  return l == HostLoop::generic ? "the generic loop (CUMULUS_NO_AVX512)"
                                : (l == HostLoop::avx2 ? "the AVX2 loop (CUMULUS_HOST_AVX2) where the CPU has AVX2"
                                                       : "the hand-written loop (AVX-512, else AVX2) where the CPU has it");
}
void take_loop(HostLoop l) {
  if (l == HostLoop::generic)
    ::setenv("CUMULUS_NO_AVX512", "1", 1);
  else
    ::unsetenv("CUMULUS_NO_AVX512");
  if (l == HostLoop::avx2)
    ::setenv("CUMULUS_HOST_AVX2", "1", 1);
  else
    ::unsetenv("CUMULUS_HOST_AVX2");
}
// Restores the CPU's loop when a test ends, however it ends (a failed ASSERT returns early).
struct RestoreLoop {
  ~RestoreLoop() { take_loop(HostLoop::cpu); }
};
}  // namespace

TEST(PairCoulLong, TabulatedLoopsGiveCoulPairsBits) {
  const RestoreLoop restore;
  Exec ex;
  IonChains ions(ex);
  const int n = IonChains::n;
  const double* const box = ions.box;
  MdAtoms& atoms = ions.atoms;
  CoulParams& p = ions.p;
  const std::vector<LjCoefficients>& c = ions.c;
  for (HostLoop loop : kHostLoops)
    for (bool with_lj : {true, false}) {
      SCOPED_TRACE(loop_name(loop));
      take_loop(loop);
      p.lj = with_lj;
      const LjTable lj{c.data(), 2};
      std::vector<double> ref[5];
      // The full list at 2 threads (the reference), then the half list at 1, 2 and 3 threads (rows
      // the other threads compute stored and added in turn: coul_forces_half), and at 2 threads
      // without the energies (forces only); at 2 and 3 threads also with the first thread stopped
      // after `front` ranges (CUMULUS_HALF_FRONT: 0, every row stored; 1; 5), wherever the threads
      // would meet.
      struct Case {
        int threads;
        bool half, energy;
        const char* front;
      };
      for (const Case cs : {Case{2, false, true, nullptr}, Case{1, true, true, nullptr}, Case{2, true, true, nullptr},
                            Case{3, true, true, nullptr}, Case{2, true, false, nullptr}, Case{2, true, true, "0"},
                            Case{2, true, false, "1"}, Case{3, true, true, "5"}, Case{3, true, true, "0"}}) {
        const int threads = cs.threads;
        SCOPED_TRACE(testing::Message() << threads << " threads, " << (cs.half ? "half" : "full") << " list"
                                        << (cs.energy ? "" : ", no energies") << (cs.front ? ", CUMULUS_HALF_FRONT=" : "")
                                        << (cs.front ? cs.front : ""));
        if (cs.front)
          ::setenv("CUMULUS_HALF_FRONT", cs.front, 1);
        else
          ::unsetenv("CUMULUS_HALF_FRONT");
        const int saved = omp_get_max_threads();
        omp_set_num_threads(threads);
        auto list = make_host_neighbor_list(ex);
        list->allow_threaded_half(cs.half);
        atoms.fit_scratch(atoms.nown());
        list->build(atoms, box, 8.5);
        atoms.fit_scratch(list->half() ? atoms.nlocal() : atoms.nown());
        Atoms a = atoms.view(list.get(), box);
        a.energy = cs.energy;
        if (!cs.half) {
          ASSERT_FALSE(a.half);
          // The reference: coul_pair over the full list in list order, as coul_atom sums.
          for (auto& v : ref) v.assign(static_cast<std::size_t>(n), 0.0);
          for (int i = 0; i < n; ++i) {
            double s[5] = {0, 0, 0, 0, 0};
            for (std::int64_t k = a.start[i]; k < a.start[i + 1]; ++k) {
              const int j = a.neighbors[k];
              const double dx = minimum_image(a.x[i] - a.x[j], box[0]), dy = minimum_image(a.y[i] - a.y[j], box[1]),
                           dz = minimum_image(a.z[i] - a.z[j], box[2]);
              const double r2 = dx * dx + dy * dy + dz * dz;
              const CoulTerms t = coul_pair(c[static_cast<std::size_t>(a.type[i] * 2 + a.type[j])], p, r2,
                                            a.q[i] * a.q[j], special_level(a, i, a.id[j]));
              s[0] += dx * t.fpair;
              s[1] += dy * t.fpair;
              s[2] += dz * t.fpair;
              s[3] += t.evdwl + t.ecoul + t.ecorr;
              s[4] += r2 * t.fpair;
            }
            for (int w = 0; w < 5; ++w) ref[w][static_cast<std::size_t>(i)] = w < 3 ? s[w] : 0.5 * s[w];
          }
          coul_kernels::host_pass::coul_forces(ex, a, lj, p);
        } else {
          ASSERT_TRUE(a.half);
          coul_kernels::host_pass::coul_forces_half(a, lj, p);
        }
        ::unsetenv("CUMULUS_HALF_FRONT");
        omp_set_num_threads(saved);
        const double* got[5] = {a.fx, a.fy, a.fz, a.pe, a.virial};
        const int nw = cs.energy ? 5 : 3;
        long differ = 0, nonzero = 0;
        for (int w = 0; w < nw; ++w)
          for (int i = 0; i < n; ++i) {
            differ += got[w][i] != ref[w][static_cast<std::size_t>(i)];
            nonzero += ref[w][static_cast<std::size_t>(i)] != 0;
          }
        EXPECT_EQ(differ, 0) << (with_lj ? "lj/cut/coul/long" : "coul/long");
        EXPECT_EQ(nonzero, static_cast<long>(nw) * n);
      }
    }
  take_loop(HostLoop::cpu);
}

namespace {
// Nested parallel regions allowed while it lives (OpenMP's default runs them with one thread):
// `other`'s own loops must then still run on one thread inside the pair term's region (the pair
// term sets it), not beside the pair term's other thread.
struct NestedRegionsAllowed {
  const int saved = omp_get_max_active_levels();
  NestedRegionsAllowed() { omp_set_max_active_levels(2); }
  ~NestedRegionsAllowed() { omp_set_max_active_levels(saved); }
};
// What ForceTerm::compute_with's `other` saw (its calls, whether on the calling thread, the OpenMP
// level, its own region's team), with something to do meanwhile; expect(): once, on the calling
// thread, inside the pair term's region at two threads only and there its own loops on one
// thread, the caller's thread count left as it was.
struct OtherProbe {
  int calls = 0, level = -1, inner_team = -1;
  bool on_caller = false;
  double work = 0;
  std::function<void()> fn() {
    return [this] {
      ++calls;
      on_caller = omp_get_thread_num() == 0;
      level = omp_get_level();
#pragma omp parallel
      {
#pragma omp single
        inner_team = omp_get_num_threads();
      }
      for (int k = 1; k < 100000; ++k) work += 1.0 / k;
    };
  }
  void expect(int threads) const {
    EXPECT_EQ(calls, 1);
    EXPECT_TRUE(on_caller);
    EXPECT_EQ(level, threads == 2 ? 1 : 0);
    EXPECT_EQ(inner_team, threads == 2 ? 1 : threads);
    EXPECT_EQ(omp_get_max_threads(), threads);
    EXPECT_GT(work, 0);
  }
};
}  // namespace

// ForceTerm::compute_with's path in double (the k-space at the same time as the half list's stored
// rows are added): coul_forces_half runs `other` once, on the calling thread, at two threads while
// the second thread adds the rows computed ahead, its own parallel regions on one thread (at one
// and three threads, after, on all of them); the forces, energies and virials keep their bits
// wherever the threads meet; the caller's thread count is left as it was; an exception thrown by
// `other` reaches the caller.
TEST(PairCoulLong, HalfListRunsOtherOnTheCallingThread) {
  Exec ex;
  IonChains ions(ex);
  const int n = IonChains::n;
  MdAtoms& atoms = ions.atoms;
  const LjTable lj{ions.c.data(), 2};
  const int saved = omp_get_max_threads();
  for (int threads : {1, 2, 3})
    for (const char* front : {static_cast<const char*>(nullptr), "0", "3"}) {
      SCOPED_TRACE(testing::Message() << threads << " threads" << (front ? ", CUMULUS_HALF_FRONT=" : "") << (front ? front : ""));
      if (front)
        ::setenv("CUMULUS_HALF_FRONT", front, 1);
      else
        ::unsetenv("CUMULUS_HALF_FRONT");
      omp_set_num_threads(threads);
      auto list = make_host_neighbor_list(ex);
      list->allow_threaded_half(true);
      atoms.fit_scratch(atoms.nown());
      list->build(atoms, ions.box, 8.5);
      atoms.fit_scratch(atoms.nlocal());
      Atoms a = atoms.view(list.get(), ions.box);
      ASSERT_TRUE(a.half);
      a.energy = true;
      coul_kernels::host_pass::coul_forces_half(a, lj, ions.p);
      const double* got[5] = {a.fx, a.fy, a.fz, a.pe, a.virial};
      std::vector<double> ref[5];
      for (int w = 0; w < 5; ++w) ref[w].assign(got[w], got[w] + n);
      OtherProbe probe;
      const std::function<void()> other = probe.fn();
      {
        const NestedRegionsAllowed nested;
        coul_kernels::host_pass::coul_forces_half(a, lj, ions.p, &other);
      }
      probe.expect(threads);
      long differ = 0;
      for (int w = 0; w < 5; ++w)
        for (int i = 0; i < n; ++i) differ += std::memcmp(&got[w][i], &ref[w][static_cast<std::size_t>(i)], sizeof(double)) != 0;
      EXPECT_EQ(differ, 0);
      const std::function<void()> throws = [] { throw Error("from other"); };
      EXPECT_THROW(coul_kernels::host_pass::coul_forces_half(a, lj, ions.p, &throws), Error);
    }
  ::unsetenv("CUMULUS_HALF_FRONT");
  omp_set_num_threads(saved);
}

// md.precision = "mixed": the fp32 pair terms, summed in fixed point, against the double path;
// and the same bits over the full list (two threads), the half list at one thread and at two, by
// the generic loops and the AVX2 loop; then a pair out of the fixed-point range.
namespace {
// coul_forces_mixed's rows (fixed::kRow integers an owned atom; host memory), one buffer a test:
// zero on entry, as the pair term makes them (zero_rows, here from a buffer of -1), and zero again
// after every call (mixed_rows_left_zero).
std::vector<std::int64_t>& mixed_rows_buffer() {
  static std::vector<std::int64_t> rows;
  return rows;
}
std::int64_t* mixed_rows(int n) {
  std::vector<std::int64_t>& rows = mixed_rows_buffer();
  rows.assign(static_cast<std::size_t>(fixed::kRow) * static_cast<std::size_t>(n), -1);
  coul_mixed_kernels::host_pass::zero_rows(Exec::host(), rows.data(), rows.size());
  return rows.data();
}
bool mixed_rows_left_zero() {
  for (std::int64_t v : mixed_rows_buffer())
    if (v != 0) return false;
  return true;
}
struct MixedIons {
  IonChains ions;
  CoulParams32 p32;
  std::vector<float> table32;
  std::vector<LjCoefficients32> c32;
  int ntypes = 2;  // c32's types (ntypes x ntypes entries)
  explicit MixedIons(const Exec& ex) : ions(ex) {
    p32.qqr2e = static_cast<float>(ions.p.qqr2e);
    p32.cut2 = static_cast<float>(ions.p.cut2);
    for (int l = 0; l < 4; ++l) {
      p32.special_lj[l] = static_cast<float>(ions.p.special_lj[l]);
      p32.special_coul[l] = static_cast<float>(ions.p.special_coul[l]);
    }
    int n32 = 0;
    double inv_ds32 = 0;
    table32 = coul_table_build32(ions.p.alpha, ions.p.cut2, &n32, &inv_ds32);
    p32.table = CoulTableViewT<float>{table32.data(), static_cast<float>(inv_ds32), p32.cut2, n32};
    for (const LjCoefficients& q : ions.c)
      c32.push_back({static_cast<float>(q.cut2), static_cast<float>(q.lj1), static_cast<float>(q.lj2), static_cast<float>(q.lj3),
                     static_cast<float>(q.lj4), static_cast<float>(q.offset)});
  }
  // The ions' list (built for the current OpenMP thread count; `half`: the threaded half list
  // allowed) into `list`, and the atoms' view over it, energies wanted.
  Atoms listed(const Exec& ex, bool half, std::unique_ptr<NeighborList>& list, bool either_slot = false) {
    list = make_host_neighbor_list(ex);
    list->allow_threaded_half(half);
    list->allow_either_slot(either_slot);
    list->set_id_order(!either_slot);  // as for a mixed-precision term (ForceTerm::needs_id_order)
    ions.atoms.fit_scratch(ions.atoms.nown());
    list->build(ions.atoms, ions.box, 8.5);
    ions.atoms.fit_scratch(list->half() ? ions.atoms.nlocal() : ions.atoms.nown());
    Atoms a = ions.atoms.view(list.get(), ions.box);
    a.energy = true;
    return a;
  }
  // Forces, energies and virials (5 arrays) and the nine sums by one path: `threads` OpenMP
  // threads, the half list or the full one, the generic loops or the AVX2 loop.
  struct Out {
    std::vector<double> w[5];
    double sums[9];
    bool half = false;
  };
  // generic: the generic loops; else the hand-written one for the CPU (AVX-512, else AVX2), or with
  // avx2 the AVX2 one. either_slot: the spatial half list, its partners unordered
  // (NeighborList::allow_either_slot, set_id_order(false));
  // by_local: the special partners given by local index (Atoms::special_local, found here by brute
  // force), as the pair term gives them.
  Out run(const Exec& ex, int threads, bool half, bool generic, bool avx2 = false, bool either_slot = false,
          bool by_local = false) {
    take_loop(generic ? HostLoop::generic : (avx2 ? HostLoop::avx2 : HostLoop::cpu));
    const int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    std::unique_ptr<NeighborList> list;
    Atoms a = listed(ex, half, list, either_slot);
    std::vector<int> special_local;
    if (by_local) {
      special_local.assign(static_cast<std::size_t>(a.nspecial) * static_cast<std::size_t>(a.nlocal), -1);
      for (int k = 0; k < a.nspecial; ++k)
        for (int i = 0; i < a.nlocal; ++i) {
          const std::int64_t v = a.special[k][i];
          if (v < 0) continue;
          for (int j = 0; j < a.nlocal; ++j)
            if (a.id[j] == v >> 2) special_local[static_cast<std::size_t>(k) * static_cast<std::size_t>(a.nlocal) + static_cast<std::size_t>(i)] = j;
        }
      a.special_local = special_local.data();
    }
    const LjTable32 lj32{c32.data(), ntypes};
    Out o;
    o.half = list->half();
    std::vector<std::int64_t> scratch;
    if (o.half)
      coul_mixed_kernels::host_pass::coul_forces_half_mixed(a, lj32, p32, scratch);
    else
      coul_mixed_kernels::host_pass::coul_forces_mixed(ex, a, lj32, p32, mixed_rows(a.n));
    EXPECT_TRUE(o.half || mixed_rows_left_zero()) << "the full list's rows not cleared for the next call";
    const double* got[5] = {a.fx, a.fy, a.fz, a.pe, a.virial};
    for (int w = 0; w < 5; ++w) o.w[w].assign(got[w], got[w] + IonChains::n);
    ExactSum s[9];
    if (o.half)
      coul_mixed_kernels::host_pass::coul_sums_half_mixed(a, lj32, p32, -60, s);
    else
      for (int w = 0; w < 9; ++w) s[w] = coul_mixed_kernels::host_pass::coul_sum_mixed(ex, a, lj32, p32, w, -60);
    for (int w = 0; w < 9; ++w)
      if (!s[w].value_rounded(-60, &o.sums[w])) o.sums[w] = std::nan("");
    omp_set_num_threads(saved);
    take_loop(HostLoop::cpu);
    return o;
  }
};
// Arrays equal bit for bit (NaN equal to NaN: the references are checked with all_finite).
bool same_bits(const std::vector<double>& x, const std::vector<double>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(double)) == 0;
}
// No NaN or infinity (a sum that overflowed its fixed point is NaN in MixedIons::Out): a reference
// that same_bits compares with must be one, or two runs failing alike would pass.
bool all_finite(const std::vector<double>& x) {
  return std::all_of(x.begin(), x.end(), [](double v) { return std::isfinite(v); });
}
}  // namespace

TEST(PairCoulLong, MixedPrecisionIsDoubleToFp32AndTheSameOverEveryListAndThreadCount) {
  const RestoreLoop restore;
  Exec ex;
  MixedIons m(ex);
  const int n = IonChains::n;
  // The double path's full list, as the reference for accuracy.
  std::vector<double> dbl[5];
  {
    const int saved = omp_get_max_threads();
    omp_set_num_threads(2);
    auto list = make_host_neighbor_list(ex);
    m.ions.atoms.fit_scratch(m.ions.atoms.nown());
    list->build(m.ions.atoms, m.ions.box, 8.5);
    ASSERT_FALSE(list->half());
    Atoms a = m.ions.atoms.view(list.get(), m.ions.box);
    a.energy = true;
    coul_kernels::host_pass::coul_forces(ex, a, LjTable{m.ions.c.data(), 2}, m.ions.p);
    const double* got[5] = {a.fx, a.fy, a.fz, a.pe, a.virial};
    for (int w = 0; w < 5; ++w) dbl[w].assign(got[w], got[w] + n);
    omp_set_num_threads(saved);
  }
  struct Path {
    const char* name;
    int threads;
    bool half, generic, avx2;
  };
  const Path paths[] = {{"generic, full list, 2 threads", 2, false, true, false},
                        {"generic, half list, 1 thread", 1, true, true, false},
                        {"generic, half list, 2 threads", 2, true, true, false},
                        {"hand-written (AVX-512, else AVX2), full list, 2 threads", 2, false, false, false},
                        {"hand-written (AVX-512, else AVX2), half list, 1 thread", 1, true, false, false},
                        {"hand-written (AVX-512, else AVX2), half list, 2 threads", 2, true, false, false},
                        {"AVX2 (CUMULUS_HOST_AVX2), full list, 2 threads", 2, false, false, true},
                        {"AVX2 (CUMULUS_HOST_AVX2), half list, 1 thread", 1, true, false, true},
                        {"AVX2 (CUMULUS_HOST_AVX2), half list, 2 threads", 2, true, false, true}};
  std::vector<MixedIons::Out> out;
  for (const Path& q : paths) {
    out.push_back(m.run(ex, q.threads, q.half, q.generic, q.avx2));
    EXPECT_EQ(out.back().half, q.half) << q.name;
  }
  for (std::size_t r = 1; r < out.size(); ++r) {
    for (int w = 0; w < 5; ++w) EXPECT_TRUE(same_bits(out[0].w[w], out[r].w[w])) << paths[r].name << " differs in array " << w;
    for (int w = 0; w < 9; ++w) EXPECT_EQ(out[0].sums[w], out[r].sums[w]) << paths[r].name << ", sum " << w;
  }
  // CUDA's list in mixed precision: each atom's partners as the kernel builder leaves them without
  // the id sort (ForceTerm::needs_id_order is false there), in any order: here the full list's
  // partners reversed. The generic loops (CUDA's) give the same bits, special pairs included.
  {
    ::setenv("CUMULUS_NO_AVX512", "1", 1);
    const int saved = omp_get_max_threads();
    omp_set_num_threads(2);
    auto list = make_kernel_neighbor_list(ex, false);
    m.ions.atoms.fit_scratch(m.ions.atoms.nown());
    list->build(m.ions.atoms, m.ions.box, 8.5);
    Atoms a = m.ions.atoms.view(list.get(), m.ions.box);
    a.energy = true;
    std::vector<int> reversed(a.neighbors, a.neighbors + a.start[a.n]);
    for (int i = 0; i < a.n; ++i) std::reverse(reversed.begin() + a.start[i], reversed.begin() + a.start[i + 1]);
    a.neighbors = reversed.data();
    ASSERT_FALSE(a.half);
    ASSERT_GT(a.nspecial, 0);
    int unsorted = 0;
    for (int i = 0; i < a.n; ++i)
      for (std::int64_t k = a.start[i] + 1; k < a.start[i + 1]; ++k) unsorted += a.id[a.neighbors[k]] < a.id[a.neighbors[k - 1]];
    EXPECT_GT(unsorted, 0) << "the kernel list came in id order: the test would not tell";
    const LjTable32 lj32{m.c32.data(), 2};
    coul_mixed_kernels::host_pass::coul_forces_mixed(ex, a, lj32, m.p32, mixed_rows(a.n));
    const double* got[5] = {a.fx, a.fy, a.fz, a.pe, a.virial};
    for (int w = 0; w < 5; ++w)
      EXPECT_TRUE(same_bits(out[0].w[w], std::vector<double>(got[w], got[w] + n))) << "reversed list, array " << w;
    for (int w = 0; w < 9; ++w) {
      double v = 0;
      if (!coul_mixed_kernels::host_pass::coul_sum_mixed(ex, a, lj32, m.p32, w, -60).value_rounded(-60, &v)) v = std::nan("");
      EXPECT_EQ(out[0].sums[w], v) << "reversed list, sum " << w;
    }
    omp_set_num_threads(saved);
    ::unsetenv("CUMULUS_NO_AVX512");
  }
  double df = 0, f2 = 0, pe_d = 0, pe_m = 0;
  for (int i = 0; i < n; ++i) {
    for (int w = 0; w < 3; ++w) {
      const double e = out[0].w[w][static_cast<std::size_t>(i)] - dbl[w][static_cast<std::size_t>(i)];
      df += e * e;
      f2 += dbl[w][static_cast<std::size_t>(i)] * dbl[w][static_cast<std::size_t>(i)];
    }
    pe_d += dbl[3][static_cast<std::size_t>(i)];
    pe_m += out[0].w[3][static_cast<std::size_t>(i)];
  }
  const double rms = std::sqrt(df / f2), epot = std::fabs(pe_m - pe_d) / std::fabs(pe_d);
  std::printf("[ mixed ] RMS force error %.2e of the RMS force, energy %.2e relative\n", rms, epot);
  // fp32 terms (some units of 2^-24: 6.9e-7 here with fp64 separations) and fp32 coordinates
  // (separation32: each within 2^-25 of itself, 2.4e-7 A at 8 A, which a close pair's force feels
  // times its stiffness): 6.4e-6 here.
  EXPECT_LT(rms, 1.2e-5);
  EXPECT_GT(rms, 1e-10);  // and fp32 indeed
  EXPECT_LT(epot, 1e-6);
  // The thermo sums are the forces' terms: the per-atom energies sum (exactly, in halves of 2^-24)
  // to the three energy sums.
  EXPECT_NEAR(out[0].sums[6] + out[0].sums[7] + out[0].sums[8], pe_m, 1e-9 * std::fabs(pe_m));
}

// A type whose pairs have no LJ part (every coefficient 0, as water's hydrogens): the hand-written
// loops skip the LJ part of its rows (terms of +0, which change no sum), with the generic loops'
// bits, in double (full list, and half list at 1 and 2 threads; forces, and the nine thermo sums
// from the loops' terms) and in mixed precision.
TEST(PairCoulLong, TypesWithoutLjKeepTheGenericBits) {
  const RestoreLoop restore;
  Exec ex;
  MixedIons m(ex);
  for (std::size_t t : {1, 2, 3}) {  // type 1 against either type; type 0 keeps its own LJ
    LjCoefficients& q = m.ions.c[t];
    q.lj1 = q.lj2 = q.lj3 = q.lj4 = q.offset = 0;
    LjCoefficients32& r = m.c32[t];
    r.lj1 = r.lj2 = r.lj3 = r.lj4 = r.offset = 0;
  }
  struct Path {
    int threads;
    bool half;
    HostLoop loop;
  };
  std::vector<double> ref[5], ref_sums;
  for (const Path q : {Path{2, false, HostLoop::generic}, Path{2, false, HostLoop::cpu}, Path{1, true, HostLoop::cpu},
                       Path{2, true, HostLoop::cpu}, Path{2, false, HostLoop::avx2}, Path{1, true, HostLoop::avx2}}) {
    SCOPED_TRACE(testing::Message() << "double, " << q.threads << " threads, " << (q.half ? "half" : "full") << " list, "
                                    << loop_name(q.loop));
    take_loop(q.loop);
    const int saved = omp_get_max_threads();
    omp_set_num_threads(q.threads);
    std::unique_ptr<NeighborList> list;
    Atoms a = m.listed(ex, q.half, list);
    ASSERT_EQ(a.half, q.half);
    const LjTable lj{m.ions.c.data(), 2};
    if (a.half)
      coul_kernels::host_pass::coul_forces_half(a, lj, m.ions.p);
    else
      coul_kernels::host_pass::coul_forces(ex, a, lj, m.ions.p);
    // The nine thermo sums (virial tensor, energies) in one walk of the list.
    ExactSum sums[9];
    if (a.half)
      coul_kernels::host_pass::coul_sums_half(a, lj, m.ions.p, -60, sums);
    else
      coul_kernels::host_pass::coul_sums_full(a, lj, m.ions.p, -60, sums);
    omp_set_num_threads(saved);
    take_loop(HostLoop::cpu);
    const double* got[5] = {a.fx, a.fy, a.fz, a.pe, a.virial};
    for (int w = 0; w < 5; ++w) {
      const std::vector<double> v(got[w], got[w] + IonChains::n);
      if (ref[w].empty())
        ref[w] = v;
      else
        EXPECT_TRUE(same_bits(ref[w], v)) << "array " << w;
    }
    std::vector<double> sv(9);
    for (int w = 0; w < 9; ++w) ASSERT_TRUE(sums[w].value_rounded(-60, &sv[static_cast<std::size_t>(w)]));
    if (ref_sums.empty())
      ref_sums = sv;
    else
      EXPECT_TRUE(same_bits(ref_sums, sv)) << "the nine sums";
  }
  const MixedIons::Out generic = m.run(ex, 2, false, true);
  for (int w = 0; w < 5; ++w) EXPECT_TRUE(all_finite(generic.w[w])) << "mixed, generic: array " << w;
  EXPECT_TRUE(all_finite(std::vector<double>(generic.sums, generic.sums + 9))) << "mixed, generic: the nine sums";
  for (const Path q : {Path{2, false, HostLoop::cpu}, Path{1, true, HostLoop::cpu}, Path{2, true, HostLoop::cpu},
                       Path{2, false, HostLoop::avx2}, Path{1, true, HostLoop::avx2}}) {
    const MixedIons::Out o = m.run(ex, q.threads, q.half, false, q.loop == HostLoop::avx2);
    for (int w = 0; w < 5; ++w)
      EXPECT_TRUE(same_bits(generic.w[w], o.w[w])) << "mixed, " << q.threads << " threads, " << (q.half ? "half" : "full")
                                                   << " list: array " << w;
  }
}

// The mixed-precision loops take a pair in either atom's slot of the half list: the spatial half
// list (each pair of owned atoms from the forward half of one atom's stencil, the host builder's
// for an order-free term) gives the generic full list's bits, with the special partners found by id
// (a compare over the kept partners) or by local index (Atoms::special_local), at 1 and 2
// threads, in every hand-written loop the CPU runs. The chains' atoms are each other's special
// partners (levels 1-3, factors 0 to 0.5): a level missed or misplaced changes the forces.
TEST(PairCoulLong, MixedLoopsTakeEitherSlotAndFindSpecialsByLocalIndex) {
  const RestoreLoop restore;
  Exec ex;
  MixedIons m(ex);
  ASSERT_GT(m.ions.atoms.nown(), 0);
  const MixedIons::Out generic = m.run(ex, 2, false, true);
  for (int w = 0; w < 5; ++w) ASSERT_TRUE(all_finite(generic.w[w])) << "array " << w;
  for (int threads : {1, 2})
    for (bool either : {false, true})
      for (bool by_local : {false, true})
        for (HostLoop loop : {HostLoop::cpu, HostLoop::avx2}) {
          SCOPED_TRACE(testing::Message() << threads << " threads, " << (either ? "spatial" : "id-ranked") << " half list, specials by "
                                          << (by_local ? "local index" : "id") << ", " << loop_name(loop));
          const MixedIons::Out o = m.run(ex, threads, true, false, loop == HostLoop::avx2, either, by_local);
          ASSERT_TRUE(o.half);
          for (int w = 0; w < 5; ++w) EXPECT_TRUE(same_bits(generic.w[w], o.w[w])) << "array " << w;
          EXPECT_TRUE(same_bits(std::vector<double>(generic.sums, generic.sums + 9), std::vector<double>(o.sums, o.sums + 9)))
              << "the nine sums";
        }
}

// The half list's distance shells (ListShells; these ions' box holds two list bins an axis, so
// the all-pairs path builds it): with the atoms moved after the build in x-y (within the half skin
// of 0.25 A), the mixed-precision loops leave out the far shells that no pair can have come within
// the cutoff from (moved 0.05 A: the shell from 8.16 A) and take the near ones without the first
// pass's test: the same bits as the loops over whole rows (CUMULUS_NO_SHELLS) and as the generic
// loops over a list built at the moved positions, at 1 and 2 threads, in every hand-written loop
// the CPU runs. Moved 0.2 A (no shell left out), pairs of the shell from 8.16 A come within the
// cutoff (8 A): a cut that ignored the displacement would lose them.
TEST(PairCoulLong, MixedShellsLeaveTheBits) {
  const RestoreLoop restore;
  Exec ex;
  MixedIons m(ex);
  const int n = m.ions.atoms.nown();
  std::vector<double> at[3];
  for (int d = 0; d < 3; ++d) at[d].assign(m.ions.atoms.hx(d), m.ions.atoms.hx(d) + n);
  // Each atom `by` A along a direction of its own (wrapped into the box).
  auto move = [&](double by) {
    std::uint64_t st = 12345;
    auto uniform = [&] {
      st = st * 6364136223846793005ULL + 1442695040888963407ULL;
      return static_cast<double>(st >> 11) * 0x1p-53;
    };
    for (int k = 0; k < n; ++k) {
      const double phi = 6.283185307179586 * uniform();
      const double dir[3] = {std::cos(phi), std::sin(phi), 0.0};  // in x-y: no nearer than the chains' 1.1 A in z
      for (int d = 0; d < 3; ++d) {
        double x = at[d][static_cast<std::size_t>(k)] + by * dir[d];
        x -= m.ions.box[d] * std::floor(x / m.ions.box[d]);
        m.ions.atoms.hx(d)[k] = x;
      }
    }
    m.ions.atoms.store.upload();  // the host mirror to the backend's arrays (the view's)
  };
  auto restore_positions = [&] {
    for (int d = 0; d < 3; ++d) std::copy(at[d].begin(), at[d].end(), m.ions.atoms.hx(d));
    m.ions.atoms.store.upload();
  };
  for (double by : {0.05, 0.2}) {
  move(by);
  const MixedIons::Out generic = m.run(ex, 2, false, true);  // a list of the moved atoms
  for (int w = 0; w < 5; ++w) ASSERT_TRUE(all_finite(generic.w[w])) << "array " << w;
  const std::vector<double> generic_sums(generic.sums, generic.sums + 9);
  for (int threads : {1, 2})
    for (HostLoop loop : {HostLoop::cpu, HostLoop::avx2})
      for (bool whole_rows : {false, true}) {
        SCOPED_TRACE(testing::Message() << "moved " << by << " A, " << threads << " threads, " << loop_name(loop)
                                        << (whole_rows ? ", whole rows" : ", shells"));
        restore_positions();
        take_loop(loop);
        const int saved = omp_get_max_threads();
        omp_set_num_threads(threads);
        std::unique_ptr<NeighborList> list;
        Atoms a = m.listed(ex, true, list, true);  // built before the move
        ASSERT_TRUE(a.half);
        ASSERT_NE(a.shells.end, nullptr);
        move(by);
        if (whole_rows) ::setenv("CUMULUS_NO_SHELLS", "1", 1);
        const LjTable32 lj32{m.c32.data(), m.ntypes};
        std::vector<std::int64_t> scratch;
        coul_mixed_kernels::host_pass::coul_forces_half_mixed(a, lj32, m.p32, scratch);
        ExactSum sums[9];
        coul_mixed_kernels::host_pass::coul_sums_half_mixed(a, lj32, m.p32, -60, sums);
        ::unsetenv("CUMULUS_NO_SHELLS");
        omp_set_num_threads(saved);
        take_loop(HostLoop::cpu);
        const double* got[5] = {a.fx, a.fy, a.fz, a.pe, a.virial};
        for (int w = 0; w < 5; ++w) EXPECT_TRUE(same_bits(generic.w[w], std::vector<double>(got[w], got[w] + IonChains::n))) << "array " << w;
        std::vector<double> sv(9);
        for (int w = 0; w < 9; ++w)
          if (!sums[w].value_rounded(-60, &sv[static_cast<std::size_t>(w)])) sv[static_cast<std::size_t>(w)] = std::nan("");
        EXPECT_TRUE(same_bits(generic_sums, sv)) << "the nine sums";
      }
  }
  restore_positions();
}

// A position that is not finite after the build (NaN) takes whole rows: no distance shell is left
// out, so every partner of the atom gets its NaN terms (the health check's cue), as over whole rows
// (CUMULUS_NO_SHELLS). shell_cut lost a NaN displacement when a later atom's was finite, and left
// shells out.
TEST(PairCoulLong, MixedShellsTakeWholeRowsForANonFinitePosition) {
  const RestoreLoop restore;
  Exec ex;
  MixedIons m(ex);
  const double x5 = m.ions.atoms.hx(0)[5];
  for (int threads : {1, 2})
    for (HostLoop loop : {HostLoop::cpu, HostLoop::avx2}) {
      std::vector<double> got[2];
      for (int whole = 0; whole < 2; ++whole) {
        SCOPED_TRACE(testing::Message() << threads << " threads, " << loop_name(loop) << (whole ? ", whole rows" : ", shells"));
        take_loop(loop);
        const int saved = omp_get_max_threads();
        omp_set_num_threads(threads);
        std::unique_ptr<NeighborList> list;
        Atoms a = m.listed(ex, true, list, true);
        ASSERT_NE(a.shells.end, nullptr);
        m.ions.atoms.hx(0)[5] = std::nan("");
        m.ions.atoms.store.upload();
        if (whole) ::setenv("CUMULUS_NO_SHELLS", "1", 1);
        const LjTable32 lj32{m.c32.data(), m.ntypes};
        std::vector<std::int64_t> scratch;
        coul_mixed_kernels::host_pass::coul_forces_half_mixed(a, lj32, m.p32, scratch);
        ::unsetenv("CUMULUS_NO_SHELLS");
        omp_set_num_threads(saved);
        take_loop(HostLoop::cpu);
        got[whole].assign(a.fx, a.fx + IonChains::n);
        m.ions.atoms.hx(0)[5] = x5;
        m.ions.atoms.store.upload();
      }
      EXPECT_TRUE(std::isnan(got[0][5]));
      EXPECT_GT(std::count_if(got[1].begin(), got[1].end(), [](double v) { return std::isnan(v); }), 50)
          << "the NaN atom's partners within the cutoff";
      EXPECT_TRUE(same_bits(got[1], got[0])) << threads << " threads, " << loop_name(loop);
    }
}

// The mixed half-list loops' per-thread arrays (lj/cut/coul/long's and lj/cut's) are zeroed and
// added by the team that runs, which can be smaller than omp_get_max_threads() (OMP_DYNAMIC, or a
// call from inside a parallel region, which runs a team of one while the setting stays 2): called
// so, with its scratch full of leftovers, each gives the bits of a plain call.
TEST(PairCoulLong, MixedHalfLoopsAddOnlyTheTeamThatRan) {
  const RestoreLoop restore;
  Exec ex;
  MixedIons m(ex);
  const int saved = omp_get_max_threads();
  omp_set_num_threads(2);
  std::unique_ptr<NeighborList> list;
  Atoms a = m.listed(ex, true, list, true);
  ASSERT_TRUE(a.half);
  const LjTable32 lj32{m.c32.data(), m.ntypes};
  // lj/cut/coul/long's loop, then lj/cut's over the same list.
  for (int term = 0; term < 2; ++term) {
    SCOPED_TRACE(term == 0 ? "lj/cut/coul/long" : "lj/cut");
    auto call = [&](std::vector<std::int64_t>& scratch) {
      if (term == 0)
        coul_mixed_kernels::host_pass::coul_forces_half_mixed(a, lj32, m.p32, scratch);
      else
        lj_mixed_kernels::host_pass::lj_forces_half_mixed(a, lj32, scratch);
    };
    std::vector<std::int64_t> scratch;
    call(scratch);
    std::vector<double> ref[5];
    const double* got[5] = {a.fx, a.fy, a.fz, a.pe, a.virial};
    for (int w = 0; w < 5; ++w) ref[w].assign(got[w], got[w] + IonChains::n);
    for (int w = 0; w < 5; ++w) ASSERT_TRUE(all_finite(ref[w])) << "array " << w;
    std::fill(scratch.begin(), scratch.end(), std::int64_t{0x123456789});
    int inner_team = 0, inner_max = 0;
#pragma omp parallel num_threads(2)
    {
#pragma omp single
      {
#pragma omp parallel
        inner_team = omp_get_num_threads();
        inner_max = omp_get_max_threads();
        call(scratch);
      }
    }
    if (omp_get_max_active_levels() <= 1) {
      EXPECT_EQ(inner_team, 1);
      EXPECT_GT(inner_max, 1) << "the call from inside a region no longer asks for more threads than run: the test has no bite";
    }
    for (int w = 0; w < 5; ++w) EXPECT_TRUE(same_bits(ref[w], std::vector<double>(got[w], got[w] + IonChains::n))) << "array " << w;
  }
  omp_set_num_threads(saved);
}

// ForceTerm::compute_with's path in mixed precision: coul_forces_half_mixed runs `other` once, on
// the calling thread, at two threads before it joins the rows the other thread is taking, its own
// parallel regions on one thread even where nested regions may be active (at one and three
// threads, after, on all of them); the forces, energies and virials keep their bits; the caller's
// thread count is left as it was; an exception thrown by `other` reaches the caller, once, after
// the rows are done.
TEST(PairCoulLong, MixedHalfListRunsOtherOnTheCallingThread) {
  const RestoreLoop restore;
  Exec ex;
  MixedIons m(ex);
  const int saved = omp_get_max_threads();
  const LjTable32 lj32{m.c32.data(), m.ntypes};
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE(testing::Message() << threads << " threads");
    omp_set_num_threads(threads);
    std::unique_ptr<NeighborList> list;
    Atoms a = m.listed(ex, true, list, true);
    ASSERT_TRUE(a.half);
    std::vector<std::int64_t> scratch;
    coul_mixed_kernels::host_pass::coul_forces_half_mixed(a, lj32, m.p32, scratch);
    const double* got[5] = {a.fx, a.fy, a.fz, a.pe, a.virial};
    std::vector<double> ref[5];
    for (int w = 0; w < 5; ++w) ref[w].assign(got[w], got[w] + IonChains::n);
    for (int w = 0; w < 5; ++w) ASSERT_TRUE(all_finite(ref[w])) << "array " << w;
    for (double* g : {a.fx, a.fy, a.fz, a.pe, a.virial}) std::fill(g, g + IonChains::n, 7.0);  // stale values to overwrite
    OtherProbe probe;
    const std::function<void()> other = probe.fn();
    {
      const NestedRegionsAllowed nested;
      coul_mixed_kernels::host_pass::coul_forces_half_mixed(a, lj32, m.p32, scratch, &other);
    }
    probe.expect(threads);
    for (int w = 0; w < 5; ++w) EXPECT_TRUE(same_bits(ref[w], std::vector<double>(got[w], got[w] + IonChains::n))) << "array " << w;
    for (double* g : {a.fx, a.fy, a.fz, a.pe, a.virial}) std::fill(g, g + IonChains::n, 7.0);
    int throw_calls = 0;
    const std::function<void()> throws = [&] {
      ++throw_calls;
      throw Error("from other");
    };
    EXPECT_THROW(coul_mixed_kernels::host_pass::coul_forces_half_mixed(a, lj32, m.p32, scratch, &throws), Error);
    EXPECT_EQ(throw_calls, 1);
    // The rows were done before the exception left: the forces are the call's.
    for (int w = 0; w < 5; ++w) EXPECT_TRUE(same_bits(ref[w], std::vector<double>(got[w], got[w] + IonChains::n))) << "array " << w;
  }
  omp_set_num_threads(saved);
}

// The hand-written loops take a row's list entries in chunks (256; these rows hold 50-200): chunks
// of 16 and 48 (CUMULUS_PAIR_CHUNK), so that rows cross chunks, give the same bits in double (full
// list at 2 threads, half list at 1 and 2: the special partners' cursor, the stored rows and the
// thermo sums across chunks) and in mixed precision (full and half lists).
TEST(PairCoulLong, ChunkBoundariesChangeNoBits) {
  const RestoreLoop restore;
  Exec ex;
  MixedIons m(ex);
  struct Path {
    int threads;
    bool half;
  };
  auto run_double = [&](const Path q) {
    const int saved = omp_get_max_threads();
    omp_set_num_threads(q.threads);
    std::unique_ptr<NeighborList> list;
    Atoms a = m.listed(ex, q.half, list);
    const LjTable lj{m.ions.c.data(), 2};
    ExactSum sums[9];
    if (a.half) {
      coul_kernels::host_pass::coul_forces_half(a, lj, m.ions.p);
      coul_kernels::host_pass::coul_sums_half(a, lj, m.ions.p, -60, sums);
    } else {
      coul_kernels::host_pass::coul_forces(ex, a, lj, m.ions.p);
      coul_kernels::host_pass::coul_sums_full(a, lj, m.ions.p, -60, sums);
    }
    omp_set_num_threads(saved);
    std::vector<double> out;
    for (const double* w : {a.fx, a.fy, a.fz, a.pe, a.virial}) out.insert(out.end(), w, w + IonChains::n);
    for (const ExactSum& e : sums) {
      double v = 0;
      EXPECT_TRUE(e.value_rounded(-60, &v));
      out.push_back(v);
    }
    return out;
  };
  for (const Path q : {Path{2, false}, Path{1, true}, Path{2, true}}) {
    SCOPED_TRACE(testing::Message() << q.threads << " threads, " << (q.half ? "half" : "full") << " list");
    ::unsetenv("CUMULUS_PAIR_CHUNK");
    const std::vector<double> whole = run_double(q);
    const MixedIons::Out mixed = m.run(ex, q.threads, q.half, false);
    EXPECT_TRUE(all_finite(whole)) << "double";
    for (int w = 0; w < 5; ++w) EXPECT_TRUE(all_finite(mixed.w[w])) << "mixed: array " << w;
    EXPECT_TRUE(all_finite(std::vector<double>(mixed.sums, mixed.sums + 9))) << "mixed: the nine sums";
    for (const char* chunk : {"16", "48"}) {
      ::setenv("CUMULUS_PAIR_CHUNK", chunk, 1);
      for (HostLoop loop : {HostLoop::cpu, HostLoop::avx2}) {
        take_loop(loop);
        EXPECT_TRUE(same_bits(whole, run_double(q))) << "double, chunks of " << chunk << ", " << loop_name(loop);
      }
      take_loop(HostLoop::cpu);
      for (bool avx2 : {false, true}) {
        const MixedIons::Out o = m.run(ex, q.threads, q.half, false, avx2);
        const char* loop = avx2 ? ", AVX2" : "";
        for (int w = 0; w < 5; ++w)
          EXPECT_TRUE(same_bits(mixed.w[w], o.w[w])) << "mixed, chunks of " << chunk << loop << ": array " << w;
        EXPECT_TRUE(same_bits(std::vector<double>(mixed.sums, mixed.sums + 9), std::vector<double>(o.sums, o.sums + 9)))
            << "mixed, chunks of " << chunk << loop << ": the nine sums";
      }
    }
    ::unsetenv("CUMULUS_PAIR_CHUNK");
  }
}

// The AVX2 loops' first pass filters the list in fp32 (pair_host_simd.hpp, pack_filter32), with a
// threshold widened by a bound on fp32's errors: it must keep every pair within reach, even far from
// the origin (fp32 steps of 6e-5 A at 1,000 A) and across the periodic boundary. Pairs of ions at
// 1e-12 to 1e-3 A inside the reach (8 A) and as far outside, in a 1,000 A box: the hand-written
// loops give the generic loops' bits, and each pair inside has its terms. In mixed precision the
// first pass computes the separations themselves (separation32), so it keeps what the terms see.
TEST(PairCoulLong, FirstPassKeepsEveryPairWithinReach) {
  const RestoreLoop restore;
  Exec ex;
  IonChains ions(ex);  // its parameters; the atoms are replaced
  const double box[3] = {1000.0, 1000.0, 1000.0};
  const double gaps[] = {1e-12, 1e-9, 1e-6, 2e-5, 3e-5, 1e-4, 1e-3};
  constexpr int ngaps = 7;
  const int npairs = 2 * ngaps * 3;  // inside and outside, 7 gaps, 3 places
  MdAtoms atoms(ex, std::vector<double>{22.99, 35.45}, AtomLayout{.charged = true});
  atoms.store.resize_owned(2 * npairs);
  int k = 0;
  for (int place = 0; place < 3; ++place)
    for (int side = -1; side <= 1; side += 2)
      for (double gap : gaps) {
        // One ion near a face, its partner 8 A -+ gap away along a skew direction across the
        // periodic boundary in x (the upper face at place 0, the lower at place 1: both passes'
        // minimum images), or both in the middle (place 2).
        const double dir[3] = {place == 1 ? -0.48 : 0.48, -0.6, 0.64};  // unit length
        const double r = 8.0 + side * gap;
        const double at[3] = {place == 0 ? 998.0 : (place == 1 ? 3.0 : 501.0), 100.0 + 20.0 * k, 950.5 - 20.0 * k};
        for (int d = 0; d < 3; ++d) {
          double xj = at[d] + r * dir[d];
          xj -= box[d] * std::floor(xj / box[d]);
          atoms.hx(d)[2 * k] = at[d];
          atoms.hx(d)[2 * k + 1] = xj;
        }
        for (int e = 0; e < 2; ++e) {
          atoms.hid()[2 * k + e] = 2 * k + e;
          atoms.htype()[2 * k + e] = e;
          atoms.store.host<double>(atoms.charge)[2 * k + e] = e ? -0.8 : 0.6;
        }
        ++k;
      }
  atoms.store.upload();
  const LjTable lj{ions.c.data(), 2};
  std::vector<double> ref[5];
  for (HostLoop loop : {HostLoop::generic, HostLoop::cpu, HostLoop::avx2}) {
    SCOPED_TRACE(loop_name(loop));
    const bool generic = loop == HostLoop::generic;
    take_loop(loop);
    const int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    auto list = make_host_neighbor_list(ex);
    atoms.fit_scratch(atoms.nown());
    list->build(atoms, box, 8.5);
    atoms.fit_scratch(list->half() ? atoms.nlocal() : atoms.nown());
    Atoms a = atoms.view(list.get(), box);
    a.energy = true;
    if (a.half)
      coul_kernels::host_pass::coul_forces_half(a, lj, ions.p);
    else
      coul_kernels::host_pass::coul_forces(ex, a, lj, ions.p);
    omp_set_num_threads(saved);
    take_loop(HostLoop::cpu);
    const double* got[5] = {a.fx, a.fy, a.fz, a.pe, a.virial};
    for (int w = 0; w < 5; ++w) {
      const std::vector<double> v(got[w], got[w] + 2 * npairs);
      if (generic) {
        ref[w] = v;
      } else {
        EXPECT_TRUE(same_bits(ref[w], v)) << "array " << w;
      }
    }
  }
  for (int q = 0; q < npairs; ++q) {
    const bool inside = (q / ngaps) % 2 == 0;
    EXPECT_EQ(ref[0][static_cast<std::size_t>(2 * q)] != 0, inside) << "pair " << q;
  }
  // Mixed precision: the fp32 cutoff decides, the same filter keeps (the half list at one thread,
  // the full list at two: the hand-written loops, AVX-512 and AVX2, against the generic ones). Two
  // reaches: 8.5 A, and one whose last distance shell (ListShells) starts 1.6e-5 A beyond the cutoff,
  // so that the half list's loops leave it out unless they allow for the fp32 coordinates' error:
  // the pairs 2e-5 and 3e-5 A outside are in it, and some of them have an fp32 r^2 below the cutoff.
  CoulParams32 p32;
  p32.qqr2e = static_cast<float>(ions.p.qqr2e);
  p32.cut2 = static_cast<float>(ions.p.cut2);
  int n32 = 0;
  double inv_ds32 = 0;
  const std::vector<float> table32 = coul_table_build32(ions.p.alpha, ions.p.cut2, &n32, &inv_ds32);
  p32.table = CoulTableViewT<float>{table32.data(), static_cast<float>(inv_ds32), p32.cut2, n32};
  std::vector<LjCoefficients32> c32;
  for (const LjCoefficients& q : ions.c)
    c32.push_back({static_cast<float>(q.cut2), static_cast<float>(q.lj1), static_cast<float>(q.lj2), static_cast<float>(q.lj3),
                   static_cast<float>(q.lj4), static_cast<float>(q.offset)});
  const LjTable32 lj32{c32.data(), 2};
  for (double reach : {8.5, 8.000016 / 0.96}) {
  for (bool half : {true, false}) {
    std::vector<double> ref32[5];
    for (HostLoop loop : {HostLoop::generic, HostLoop::cpu, HostLoop::avx2}) {
      SCOPED_TRACE(testing::Message() << "mixed, reach " << reach << ", " << (half ? "half" : "full") << " list, " << loop_name(loop));
      const bool generic = loop == HostLoop::generic;
      take_loop(loop);
      const int saved = omp_get_max_threads();
      omp_set_num_threads(half ? 1 : 2);
      auto list = make_host_neighbor_list(ex);
      list->allow_threaded_half(half);
      list->allow_either_slot(true);  // the spatial half list, as for a mixed-precision term
      list->set_id_order(false);
      atoms.fit_scratch(atoms.nown());
      list->build(atoms, box, reach);
      atoms.fit_scratch(list->half() ? atoms.nlocal() : atoms.nown());
      Atoms a = atoms.view(list.get(), box);
      a.energy = true;
      ASSERT_EQ(a.half, half);
      if (half) {
        ASSERT_NE(a.shells.end, nullptr);
      }
      std::vector<std::int64_t> scratch;
      if (half)
        coul_mixed_kernels::host_pass::coul_forces_half_mixed(a, lj32, p32, scratch);
      else
        coul_mixed_kernels::host_pass::coul_forces_mixed(ex, a, lj32, p32, mixed_rows(a.n));
      omp_set_num_threads(saved);
      take_loop(HostLoop::cpu);
      const double* got[5] = {a.fx, a.fy, a.fz, a.pe, a.virial};
      for (int w = 0; w < 5; ++w) {
        const std::vector<double> v(got[w], got[w] + 2 * npairs);
        if (generic)
          ref32[w] = v;
        else
          EXPECT_TRUE(same_bits(ref32[w], v)) << "array " << w;
      }
    }
    // (Inside by 1e-3 A: closer, the coordinates' rounding to fp32, steps of 6e-5 A at 1,000 A,
    // may take the pair out, as it may take one 1e-4 A outside in.)
    for (int q = 0; q < npairs; ++q) {
      if ((q / ngaps) % 2 == 0 && q % ngaps == ngaps - 1) {
        EXPECT_NE(ref32[0][static_cast<std::size_t>(2 * q)], 0) << "mixed: pair " << q;
      }
    }
  }
  }
}

// A pair beyond the fixed-point range (two atoms 0.05 A apart: an LJ force of about 1e20) makes
// both atoms' forces and energies NaN on every path (and no other atom's), so that the health check
// stops the run naming them, and the sums NaN.
TEST(PairCoulLong, MixedPrecisionMarksAPairOutOfRangeNaN) {
  const RestoreLoop restore;
  Exec ex;
  MixedIons m(ex);
  const int i = 0, j = 6;  // same type, different chains (no special pair)
  for (int d = 0; d < 3; ++d) m.ions.atoms.hx(d)[j] = m.ions.atoms.hx(d)[i] + (d == 0 ? 0.05 : 0.0);
  m.ions.atoms.store.upload();
  for (HostLoop loop : kHostLoops)
    for (int threads : {1, 2})
      for (bool half : {false, true}) {
        const bool generic = loop == HostLoop::generic;
        if (!half && threads == 1) continue;
        SCOPED_TRACE(std::string(loop_name(loop)) + (half ? ", half list, " : ", full list, ") +
                     std::to_string(threads) + " thread(s)");
        const MixedIons::Out o = m.run(ex, threads, half, generic, loop == HostLoop::avx2);
        int nan = 0;
        for (int a = 0; a < IonChains::n; ++a)
          if (std::isnan(o.w[0][static_cast<std::size_t>(a)])) {
            ++nan;
            EXPECT_TRUE(a == i || a == j) << "atom " << a;
          }
        EXPECT_EQ(nan, 2);
        EXPECT_TRUE(std::isnan(o.w[3][static_cast<std::size_t>(i)]) && std::isnan(o.w[3][static_cast<std::size_t>(j)]));
        EXPECT_TRUE(std::isnan(o.sums[6]));
      }
}

// Mixed precision over one atom type (the loops' LJ coefficients as constants) and over ten (more
// than the 8 the loops pick by a permute: gathered): every loop the CPU can run gives the generic
// loop's bits; and ten types that repeat the two types' coefficients (type t has type t % 2's)
// give the two types' bits.
TEST(PairCoulLong, MixedLoopsOverOneAndTenTypes) {
  const RestoreLoop restore;
  Exec ex;
  MixedIons m(ex);
  const int n = IonChains::n;
  const std::vector<LjCoefficients32> c2 = m.c32;
  std::vector<int> types(m.ions.atoms.htype(), m.ions.atoms.htype() + n);
  auto all_loops_agree = [&](const char* what) {
    std::vector<MixedIons::Out> out;
    for (HostLoop loop : {HostLoop::generic, HostLoop::cpu, HostLoop::avx2})
      for (bool half : {false, true}) {
        out.push_back(m.run(ex, 2, half, loop == HostLoop::generic, loop == HostLoop::avx2));
        for (int w = 0; w < 5; ++w)
          EXPECT_TRUE(same_bits(out[0].w[w], out.back().w[w]))
              << what << ", " << loop_name(loop) << (half ? ", half list" : ", full list") << ": array " << w;
      }
    return out[0];
  };
  const MixedIons::Out two = m.run(ex, 2, false, true);
  // Ten types.
  m.ntypes = 10;
  m.c32.assign(100, LjCoefficients32{});
  for (int ti = 0; ti < 10; ++ti)
    for (int tj = 0; tj < 10; ++tj) m.c32[static_cast<std::size_t>(ti * 10 + tj)] = c2[static_cast<std::size_t>((ti % 2) * 2 + tj % 2)];
  for (int a = 0; a < n; ++a) m.ions.atoms.htype()[a] = types[static_cast<std::size_t>(a)] + 2 * (a % 5);
  m.ions.atoms.store.upload();
  const MixedIons::Out ten = all_loops_agree("ten types");
  for (int w = 0; w < 5; ++w) EXPECT_TRUE(same_bits(two.w[w], ten.w[w])) << "ten types against two: array " << w;
  // One type (type 0's coefficients for every pair).
  m.ntypes = 1;
  m.c32.assign(1, c2[0]);
  for (int a = 0; a < n; ++a) m.ions.atoms.htype()[a] = 0;
  m.ions.atoms.store.upload();
  all_loops_agree("one type");
  for (int a = 0; a < n; ++a) m.ions.atoms.htype()[a] = types[static_cast<std::size_t>(a)];
  m.ions.atoms.store.upload();
}

// A data file's Pair Coeffs become the LJ pairs of types the job leaves alone; the job's
// [md.pairs] tables and md.epsilon / md.sigma win (LAMMPS's pair_coeff in the input script).
TEST(MdDataFile, PairCoeffsGiveTheLjPairsTheJobLeavesOut) {
  const DataFile d = read_data_file(write_file("full.data", kFull), false);
  const std::string base = "pair_style = \"lj/cut/coul/long\"\nkspace_style = \"ewald\"\ncutoff = 9.0\n";
  {
    const Config cfg = with_data_pair_coeffs(md_config(base), d);
    const std::vector<LjPair> p = lj_pairs(cfg, 2);
    EXPECT_EQ(p[0].epsilon, 0.1553);
    EXPECT_EQ(p[0].sigma, 3.166);
    EXPECT_EQ(p[0].cutoff, 9.0);
    EXPECT_EQ(p[3].epsilon, 0.0);
    EXPECT_EQ(p[1].sigma, 0.5 * 3.166);  // mixed (arithmetic)
    EXPECT_NE(cfg.where("md.pairs.data_type1.sigma").find("Pair Coeffs"), std::string::npos);
  }
  {
    const Config cfg =
        with_data_pair_coeffs(md_config(base + "[md.pairs.o]\ntypes = [1, 1]\nepsilon = 0.2\nsigma = 3.0\n"), d);
    const std::vector<LjPair> p = lj_pairs(cfg, 2);
    EXPECT_EQ(p[0].epsilon, 0.2);  // the job's
    EXPECT_EQ(p[3].sigma, 0.0);    // the file's
  }
  {
    const Config cfg = with_data_pair_coeffs(md_config(base + "epsilon = 0.5\n"), d);
    const std::vector<LjPair> p = lj_pairs(cfg, 2);
    EXPECT_EQ(p[0].epsilon, 0.5);
    EXPECT_EQ(p[3].epsilon, 0.5);
    EXPECT_EQ(p[0].sigma, 1.0);  // md.sigma's default: none of the file's
  }
  {  // coul/long has no LJ part: the file's Pair Coeffs are not its business
    const Config cfg = with_data_pair_coeffs(md_config("pair_style = \"coul/long\"\nkspace_style = \"ewald\"\n"), d);
    EXPECT_TRUE(cfg.instances("md.pairs").empty());
  }
}
