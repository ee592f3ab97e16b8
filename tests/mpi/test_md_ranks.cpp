// Molecular dynamics trajectories are bit-identical at any rank count (compared with a run on rank
// 0 alone with two threads, so with the full neighbour list against the ranks' half lists, atom by
// atom in id order; lj/cut/coul/long in double takes a half list at two threads too, its rows
// added in the one-thread order, and the kernel-built list is then the full list compared): ghosts
// carry wrapped coordinates and ids, the force loop takes the minimum image and sums pairs in
// ascending id, and atoms migrate at list rebuilds.
#include <gtest/gtest.h>
#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "../backends.hpp"
#include "core/comm.hpp"
#include "solvers/md/md.hpp"
#include "solvers/simulation.hpp"

using namespace cumulus;
using cumulus::testing::backend_name;
using cumulus::testing::built_backends;

namespace {
Config md_config(const std::string& extra) {
  const std::string text = "solver = \"md\"\n[run]\nend_step = 60\n" + extra;
  return parse_job_text(text, "test.toml", {}, [](const std::string& s, Schema& schema) {
    SolverRegistry::all().build_schema(s, schema);
  });
}

// Positions, velocities and image counts on rank 0, ordered by atom id: 9 values per atom.
std::vector<double> gather_atoms(Model& model, const Comm& comm) {
  StateDescription s = model.state();
  std::vector<std::vector<unsigned char>> mine;
  int n = 0;
  for (const char* name : {"id", "position", "velocity", "image"})
    for (GridArray& a : s.arrays)
      if (a.name == name) {
        mine.push_back(a.read_local());
        n = a.local_box.size(0);
      }
  // Per atom: id, then x y z, vx vy vz, ix iy iz.
  std::vector<double> rec(static_cast<std::size_t>(n) * 10);
  for (int i = 0; i < n; ++i) {
    std::int64_t id;  // 64-bit atom ids
    std::memcpy(&id, mine[0].data() + sizeof(std::int64_t) * i, sizeof(std::int64_t));
    rec[10 * static_cast<std::size_t>(i)] = static_cast<double>(id);
    for (int d = 0; d < 3; ++d) {
      double x, v;
      int im;
      std::memcpy(&x, mine[1].data() + sizeof(double) * (static_cast<std::size_t>(d) * n + i), sizeof(double));
      std::memcpy(&v, mine[2].data() + sizeof(double) * (static_cast<std::size_t>(d) * n + i), sizeof(double));
      std::memcpy(&im, mine[3].data() + sizeof(int) * (static_cast<std::size_t>(d) * n + i), sizeof(int));
      rec[10 * static_cast<std::size_t>(i) + 1 + d] = x;
      rec[10 * static_cast<std::size_t>(i) + 4 + d] = v;
      rec[10 * static_cast<std::size_t>(i) + 7 + d] = im;
    }
  }
  int count = static_cast<int>(rec.size());
  std::vector<int> counts(static_cast<std::size_t>(comm.size())), displs(static_cast<std::size_t>(comm.size()), 0);
  MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm.raw());
  for (int r = 1; r < comm.size(); ++r) displs[static_cast<std::size_t>(r)] = displs[static_cast<std::size_t>(r) - 1] + counts[static_cast<std::size_t>(r) - 1];
  std::vector<double> all(comm.is_root() ? static_cast<std::size_t>(displs.back() + counts.back()) : 0);
  MPI_Gatherv(rec.data(), count, MPI_DOUBLE, all.data(), counts.data(), displs.data(), MPI_DOUBLE, 0, comm.raw());
  if (!comm.is_root()) return {};
  const std::size_t natoms = all.size() / 10;
  std::vector<std::size_t> order(natoms);
  for (std::size_t k = 0; k < natoms; ++k) order[k] = k;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return all[10 * a] < all[10 * b]; });
  std::vector<double> out;
  for (std::size_t k : order) out.insert(out.end(), all.begin() + 10 * k, all.begin() + 10 * k + 10);
  return out;
}

// The thermo values a run ends with (exact fixed-point sums: the same bits at any rank count).
const char* kThermo[] = {"temperature", "pe_per_atom", "ke_per_atom", "etotal_per_atom", "conserved_per_atom",
                         "pressure", "virial_pressure", "pairs_per_atom"};
// A Coulomb style's energy terms, from its nine sums over the list rather than the per-atom
// energies: exact sums too (absent for lj/cut).
const char* kCoulombTerms[] = {"e_vdwl", "e_coul", "e_special"};

std::vector<double> run_md(const Config& cfg, const Comm& comm, const Exec& ex, std::vector<double>* thermo = nullptr) {
  Context ctx{comm, ex, ""};
  std::unique_ptr<Model> model = md::create(cfg, ctx);
  Simulation sim(*model, ctx, simulation_settings(cfg));
  EXPECT_EQ(sim.run(), ExitCode::done);
  const auto diag = model->diagnostics(0.0);  // collective
  if (thermo) {
    std::vector<const char*> names(std::begin(kThermo), std::end(kThermo));
    names.insert(names.end(), std::begin(kCoulombTerms), std::end(kCoulombTerms));
    for (const char* name : names)
      for (const auto& [k, v] : diag)
        if (k == name) thermo->push_back(v);
  }
  return gather_atoms(*model, comm);
}

// A hot liquid (many rebuilds and migrations), the same under a Langevin thermostat (random numbers
// keyed by atom id and step), a bcc crystal with a shifted potential, and a binary mixture (two
// masses, an explicit 1-2 pair with its own cutoff) under a Nose-Hoover chain, whose velocity
// scaling comes from the exactly summed kinetic energy.
const char* kCases[] = {
    "[md]\ncells = [8, 7, 9]\ntemperature = 3.0\ndt = 0.005\n",
    "[md]\ncells = [8]\ntemperature = 1.5\nthermostat = \"langevin\"\nthermostat_temperature = 2.5\nlangevin_damping = 0.1\n",
    "[md]\nlattice = \"bcc\"\ndensity = 0.9\ncells = [9]\ntemperature = 0.5\nshift = true\ncutoff = 2.2\nskin = 0.4\n",
    "[md]\ncells = [7]\ntemperature = 2.0\ntypes = 2\ntype_fractions = [0.8, 0.2]\nmasses = [1.0, 2.0]\n"
    "thermostat = \"nose_hoover\"\nthermostat_temperature = 1.0\nnhc_damping = 0.1\n"
    "[md.pairs.ab]\ntypes = [1, 2]\nepsilon = 1.5\nsigma = 0.8\ncutoff = 2.0\n",
};
}  // namespace

class MdRanks : public ::testing::TestWithParam<Backend> {};

namespace {
// One case on every rank against one rank with two OpenMP threads (the serial reference takes the
// full neighbour list, or for mixed precision the half list split over threads, against the half
// list that one thread per rank uses): the same trajectory and thermo bits.
void lj_at_any_rank_count(const Exec& ex, const char* extra) {
  const Comm world = Comm::world();
  const Config cfg = md_config(extra);
  std::vector<double> thermo_distributed, thermo_serial;
  const std::vector<double> distributed = run_md(cfg, world, ex, &thermo_distributed);
  std::int64_t differ = 0;
  if (world.is_root()) {
    omp_set_num_threads(2);
    const std::vector<double> serial = run_md(cfg, Comm::self(), ex, &thermo_serial);
    omp_set_num_threads(1);
    differ = serial == distributed ? 0 : 1;
    EXPECT_EQ(thermo_serial.size(), std::size(kThermo)) << extra;
    EXPECT_TRUE(thermo_serial == thermo_distributed) << "thermo output differs between " << world.size()
                                                     << " ranks and 1 rank: " << extra;
    // The atoms must have crossed the box somewhere, or migration was not exercised.
    double moved = 0;
    for (std::size_t k = 0; k < serial.size(); k += 10)
      for (int d = 7; d < 10; ++d) moved = std::max(moved, std::abs(serial[k + d]));
    EXPECT_GE(moved, 1.0) << extra;
  }
  EXPECT_EQ(world.sum(differ), 0) << "trajectories differ between " << world.size() << " ranks and 1 rank: " << extra;
}
// lj/cut in mixed precision (fp32 pair terms, fixed-point sums): the binary mixture under a
// Nose-Hoover chain, kCases' last.
const std::string kMixedLj = std::string(kCases[3]).replace(5, 0, "precision = \"mixed\"\n");
}  // namespace

TEST_P(MdRanks, BitIdenticalTrajectoriesAtAnyRankCount) {
  CUMULUS_EXEC_OR_SKIP(ex, GetParam());
  for (const char* extra : kCases) lj_at_any_rank_count(ex, extra);
}

TEST_P(MdRanks, MixedPrecisionLjAtAnyRankCount) {
  CUMULUS_EXEC_OR_SKIP(ex, GetParam());
  lj_at_any_rank_count(ex, kMixedLj.c_str());
}

// Ids shuffled against space (a data file written by another code, or a long-diffused liquid):
// the solver then keeps its atoms in spatial (bin) order rather than id order; the forces still
// sum in id order, so the trajectory must not change with the rank count either.
TEST_P(MdRanks, ShuffledIdsAtAnyRankCount) {
  CUMULUS_EXEC_OR_SKIP(ex, GetParam());
  const Comm world = Comm::world();
  const std::string path = "/tmp/cumulus_md_shuffled_np" + std::to_string(world.size()) + ".data";
  if (world.is_root()) {
    const int cells = 6;
    const double a = std::cbrt(4 / 0.8442), L = cells * a;
    const double basis[4][3] = {{0, 0, 0}, {0.5, 0.5, 0}, {0.5, 0, 0.5}, {0, 0.5, 0.5}};
    const int n = 4 * cells * cells * cells;
    std::vector<int> id(static_cast<std::size_t>(n));
    for (int k = 0; k < n; ++k) id[static_cast<std::size_t>(k)] = k + 1;
    std::uint64_t z = 12345;  // a fixed shuffle (Fisher-Yates with a linear congruential generator)
    for (int k = n - 1; k > 0; --k) {
      z = z * 6364136223846793005ull + 1442695040888963407ull;
      std::swap(id[static_cast<std::size_t>(k)], id[static_cast<std::size_t>((z >> 33) % static_cast<std::uint64_t>(k + 1))]);
    }
    std::FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fprintf(f, "shuffled fcc\n\n%d atoms\n1 atom types\n\n0 %.17g xlo xhi\n0 %.17g ylo yhi\n0 %.17g zlo zhi\n\n"
                 "Masses\n\n1 1\n\nAtoms # atomic\n\n", n, L, L, L);
    int k = 0;
    for (int cz = 0; cz < cells; ++cz)
      for (int cy = 0; cy < cells; ++cy)
        for (int cx = 0; cx < cells; ++cx)
          for (const auto& b : basis)
            std::fprintf(f, "%d 1 %.17g %.17g %.17g\n", id[static_cast<std::size_t>(k++)], (cx + b[0]) * a, (cy + b[1]) * a,
                         (cz + b[2]) * a);
    std::fclose(f);
  }
  world.barrier();
  const Config cfg = md_config("[md]\ndata_file = \"" + path + "\"\ntemperature = 3.0\n");
  const std::vector<double> distributed = run_md(cfg, world, ex);
  // The same with the list built by kernels (their per-atom id sort has real work to do here).
  const std::vector<double> by_kernels =
      run_md(md_config("[md]\ndata_file = \"" + path + "\"\ntemperature = 3.0\nneighbor_build = \"kernels\"\n"), world, ex);
  std::int64_t differ = 0, differ_kernels = 0;
  if (world.is_root()) {
    omp_set_num_threads(2);
    const std::vector<double> serial = run_md(cfg, Comm::self(), ex);
    omp_set_num_threads(1);
    differ = serial == distributed ? 0 : 1;
    differ_kernels = serial == by_kernels ? 0 : 1;
    EXPECT_FALSE(serial.empty());
  }
  EXPECT_EQ(world.sum(differ), 0) << "shuffled ids: trajectories differ between " << world.size() << " ranks and 1 rank";
  EXPECT_EQ(world.sum(differ_kernels), 0) << "shuffled ids, kernel-built list: trajectories differ between "
                                          << world.size() << " ranks and 1 rank";
  world.barrier();
  if (world.is_root()) std::remove(path.c_str());
}

// The list built by kernels (binning by radix sort, count, prefix sum, fill: the default on CUDA)
// against the host builder: the same bits at any rank count. At one rank the kernel path keeps the
// atoms on the backend and re-sorts them by bin at every build; at several it builds over owned
// atoms and ghosts. The shuffled-id data file makes the per-atom id sort do real work.
TEST_P(MdRanks, KernelBuiltListGivesTheSameBits) {
  CUMULUS_EXEC_OR_SKIP(ex, GetParam());
  const Comm world = Comm::world();
  auto builder = [](std::string extra, const char* who) {
    const std::string head = "[md]\n";
    return extra.replace(extra.find(head), head.size(), head + "neighbor_build = \"" + who + "\"\n");
  };
  // The last: a box under three list bins wide (every pair tested, the kernels' brute path).
  const char* small = "[md]\ncells = [12, 4, 4]\ntemperature = 2.0\n";
  for (const char* extra : {kCases[0], kCases[3], small}) {
    std::vector<double> thermo_kernels, thermo_host;
    const std::vector<double> built = run_md(md_config(builder(extra, "kernels")), world, ex, &thermo_kernels);
    std::int64_t differ = 0;
    if (world.is_root()) {
      omp_set_num_threads(2);
      const std::vector<double> reference = run_md(md_config(builder(extra, "host")), Comm::self(), ex, &thermo_host);
      omp_set_num_threads(1);
      differ = reference == built ? 0 : 1;
      EXPECT_FALSE(reference.empty());
      EXPECT_TRUE(thermo_kernels == thermo_host) << "thermo output of the kernel-built list differs at " << world.size()
                                                 << " ranks: " << extra;
    }
    EXPECT_EQ(world.sum(differ), 0) << "kernel-built list: trajectory differs at " << world.size() << " ranks: " << extra;
  }
}

namespace {
// The ionic liquid of the Ewald cases: 512 ions of charge +-1 on a simple cubic lattice (spacing
// 1.25, box 10: 14 ownership cells along each axis, splittable over 1-4 ranks), every two along x
// bonded (atom_style full).
void write_ions(const std::string& path) {
  const int m = 8;
  const double a = 1.25, L = m * a;
  std::FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fprintf(f, "ions\n\n%d atoms\n2 atom types\n%d bonds\n1 bond types\n\n0 %.17g xlo xhi\n0 %.17g ylo yhi\n0 %.17g zlo zhi\n\n"
               "Masses\n\n1 1\n2 1.5\n\nAtoms # full\n\n", m * m * m, m * m * m / 2, L, L, L);
  int k = 0;
  for (int z = 0; z < m; ++z)
    for (int y = 0; y < m; ++y)
      for (int x = 0; x < m; ++x) {
        const int pos = (x + y + z) % 2 == 0;
        std::fprintf(f, "%d %d %d %g %.17g %.17g %.17g\n", k + 1, k / 2 + 1, pos ? 1 : 2, pos ? 1.0 : -1.0, x * a, y * a, z * a);
        ++k;
      }
  std::fprintf(f, "\nBonds\n\n");
  for (int b = 0; b < k / 2; ++b) std::fprintf(f, "%d 1 %d %d\n", b + 1, 2 * b + 1, 2 * b + 2);
  std::fclose(f);
}
// Bent triatomic molecules (a charged heavy atom and two light ones, water-like: LJ on the heavy
// atoms only) on a cubic grid, with harmonic bonds and angles, their Bond and Angle Coeffs in the
// file.
void write_molecules(const std::string& path) {
  const int m = 6;  // a 9 x 9 x 9 box: 12 ownership cells along each axis, enough for 3 ranks
  const double a = 1.5, L = m * a, s = 0.5 * std::sin(52.26 * 3.14159265358979 / 180), c = 0.5 * std::cos(52.26 * 3.14159265358979 / 180);
  std::FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  const int n = m * m * m;
  std::fprintf(f, "molecules\n\n%d atoms\n2 atom types\n%d bonds\n1 bond types\n%d angles\n1 angle types\n\n0 %.17g xlo xhi\n"
               "0 %.17g ylo yhi\n0 %.17g zlo zhi\n\nMasses\n\n1 1\n2 0.25\n\nBond Coeffs\n\n1 200 0.5\n\nAngle Coeffs\n\n1 50 104.52\n\n"
               "Atoms # full\n\n", 3 * n, 2 * n, n, L, L, L);
  for (int k = 0; k < n; ++k) {
    const double x = (k % m) * a + 0.3, y = (k / m % m) * a + 0.2, z = (k / (m * m)) * a + 0.1;
    // The molecules at x = 0.3 straddle the periodic boundary (their third atom at x < 0).
    std::fprintf(f, "%d %d 1 -0.8 %.17g %.17g %.17g\n", 3 * k + 1, k + 1, x, y, z);
    std::fprintf(f, "%d %d 2 0.4 %.17g %.17g %.17g\n", 3 * k + 2, k + 1, x + s, y + c, z + 0.05);
    std::fprintf(f, "%d %d 2 0.4 %.17g %.17g %.17g\n", 3 * k + 3, k + 1, x - s, y + c, z - 0.05);
  }
  std::fprintf(f, "\nBonds\n\n");
  for (int k = 0; k < n; ++k) {
    std::fprintf(f, "%d 1 %d %d\n", 2 * k + 1, 3 * k + 1, 3 * k + 2);
    std::fprintf(f, "%d 1 %d %d\n", 2 * k + 2, 3 * k + 1, 3 * k + 3);
  }
  std::fprintf(f, "\nAngles\n\n");
  for (int k = 0; k < n; ++k) std::fprintf(f, "%d 1 %d %d %d\n", k + 1, 3 * k + 2, 3 * k + 1, 3 * k + 3);
  std::fclose(f);
}
std::string ewald_job(const std::string& path, const std::string& extra = "", const std::string& style = "ewald") {
  return "[md]\ndata_file = \"" + path + "\"\ntemperature = 3.0\ndt = 0.002\npair_style = \"lj/cut/coul/long\"\n"
         "kspace_style = \"" + style + "\"\nkspace_tolerance = 1e-3\nspecial_lj = [0.5, 0.0, 0.0]\ncutoff = 2.5\n" + extra;
}
}  // namespace

// Charges with the Ewald sum and exclusions: a hot ionic liquid (write_ions, melting), each bonded
// pair a 1-2 special pair (LJ at half strength, Coulomb excluded with the k-space correction). The structure factor
// is summed exactly over ranks, so forces, trajectories and thermo must have the same bits at any
// rank count, with the special partners migrating and going to ghosts with their atoms.
namespace {
void charged_liquid_at_any_rank_count(const Exec& ex, const std::string& style) {
  const Comm world = Comm::world();
  const std::string path = "/tmp/cumulus_md_" + style + "_np" + std::to_string(world.size()) + ".data";
  if (world.is_root()) write_ions(path);
  world.barrier();
  const Config cfg = md_config(ewald_job(path, "", style));
  std::vector<double> thermo_distributed, thermo_serial;
  const std::vector<double> distributed = run_md(cfg, world, ex, &thermo_distributed);
  // The list built by kernels (at one rank the atoms, charges and special partners re-sorted by bin
  // on the backend at every build).
  const std::vector<double> by_kernels = run_md(md_config(ewald_job(path, "neighbor_build = \"kernels\"\n", style)), world, ex);
  std::int64_t differ = 0, differ_kernels = 0;
  if (world.is_root()) {
    omp_set_num_threads(2);
    const std::vector<double> serial = run_md(cfg, Comm::self(), ex, &thermo_serial);
    omp_set_num_threads(1);
    differ = serial == distributed ? 0 : 1;
    differ_kernels = serial == by_kernels ? 0 : 1;
    EXPECT_FALSE(serial.empty());
    EXPECT_TRUE(thermo_serial == thermo_distributed) << "thermo output differs between " << world.size() << " ranks and 1 rank";
  }
  EXPECT_EQ(world.sum(differ), 0) << style << ": trajectories differ between " << world.size() << " ranks and 1 rank";
  EXPECT_EQ(world.sum(differ_kernels), 0) << style << ", kernel-built list: trajectories differ between " << world.size()
                                          << " ranks and 1 rank";
  world.barrier();
  if (world.is_root()) std::remove(path.c_str());
}
}  // namespace

// Molecules: `keys` make them flexible (harmonic bonds and angles) or rigid (SETTLE). Every atom
// holds its terms, its partners found among the ghosts after each build: the same bits at any rank
// count with PME (its grid 18^3: six planes per rank at 3 ranks; the Ewald sum cost 30 times more
// here), and with the kernel-built list (at one rank the atoms and their topology re-sorted on the
// backend at every build).
namespace {
// The molecules' job over the data file at `path`, with `keys` added to [md]; then the pairs'
// tables (`pairs`).
std::string molecules_job(const std::string& path, const std::string& keys) {
  return "[md]\ndata_file = \"" + path + "\"\ntemperature = 1.0\ndt = 0.002\npair_style = \"lj/cut/coul/long\"\n"
         "kspace_style = \"pme\"\nkspace_tolerance = 1e-3\npme_grid = [18]\nspecial_lj = [0.0, 0.0, 0.0]\ncutoff = 2.5\n" + keys;
}
const std::string kMoleculePairs =
    "[md.pairs.oh]\ntypes = [1, 2]\nepsilon = 0.0\nsigma = 1.0\n[md.pairs.hh]\ntypes = [2, 2]\nepsilon = 0.0\nsigma = 1.0\n";

void molecules_at_any_rank_count(const Exec& ex, const std::string& name, const std::string& keys) {
  const Comm world = Comm::world();
  const std::string path = "/tmp/cumulus_md_" + name + "_np" + std::to_string(world.size()) + ".data";
  if (world.is_root()) write_molecules(path);
  world.barrier();
  const std::string job = molecules_job(path, keys);
  const std::string& pairs = kMoleculePairs;
  std::vector<double> thermo_distributed, thermo_serial;
  const std::vector<double> distributed = run_md(md_config(job + pairs), world, ex, &thermo_distributed);
  const std::vector<double> by_kernels = run_md(md_config(job + "neighbor_build = \"kernels\"\n" + pairs), world, ex);
  std::int64_t differ = 0, differ_kernels = 0;
  if (world.is_root()) {
    omp_set_num_threads(2);
    const std::vector<double> serial = run_md(md_config(job + pairs), Comm::self(), ex, &thermo_serial);
    omp_set_num_threads(1);
    differ = serial == distributed ? 0 : 1;
    differ_kernels = serial == by_kernels ? 0 : 1;
    EXPECT_FALSE(serial.empty());
    EXPECT_TRUE(thermo_serial == thermo_distributed) << name << ": thermo output differs between " << world.size() << " ranks and 1 rank";
    // A sane liquid, not a blown-up one that would agree with itself too: the temperature (the
    // first thermo value) stays near its start.
    ASSERT_FALSE(thermo_serial.empty());
    EXPECT_GT(thermo_serial[0], 0.3) << name;
    EXPECT_LT(thermo_serial[0], 3.0) << name;
  }
  EXPECT_EQ(world.sum(differ), 0) << name << ": trajectories differ between " << world.size() << " ranks and 1 rank";
  EXPECT_EQ(world.sum(differ_kernels), 0) << name << ", kernel-built list: trajectories differ between " << world.size()
                                          << " ranks and 1 rank";
  world.barrier();
  if (world.is_root()) std::remove(path.c_str());
}
}  // namespace

TEST_P(MdRanks, BondsAndAnglesAtAnyRankCount) {
  CUMULUS_EXEC_OR_SKIP(ex, GetParam());
  molecules_at_any_rank_count(ex, "flexible", "bond_style = \"harmonic\"\nangle_style = \"harmonic\"\n");
}

// Rigid molecules (SETTLE) under a Nose-Hoover chain, whose degrees of freedom leave out the
// constraints: positions through the reference positions and the ghosts, velocities through the
// ghosts' velocities, the same bits at any rank count.
TEST_P(MdRanks, RigidMoleculesAtAnyRankCount) {
  CUMULUS_EXEC_OR_SKIP(ex, GetParam());
  molecules_at_any_rank_count(ex, "rigid", "constrain_bonds = [1]\nconstrain_angles = [1]\nthermostat = \"nose_hoover\"\n"
                                           "thermostat_temperature = 1.2\nnhc_damping = 0.1\n");
}

// The same at constant pressure (C-rescale every 10 steps: the rigid molecules scaled about their
// centres, the decomposition made anew for each box, the atoms migrating to their new owners).
TEST_P(MdRanks, RigidMoleculesAtConstantPressureAtAnyRankCount) {
  CUMULUS_EXEC_OR_SKIP(ex, GetParam());
  molecules_at_any_rank_count(ex, "npt", "constrain_bonds = [1]\nconstrain_angles = [1]\nthermostat = \"langevin\"\n"
                                         "thermostat_temperature = 1.2\nlangevin_damping = 0.5\nbarostat = \"c_rescale\"\n"
                                         "pressure = 2.0\ncompressibility = 0.05\nbarostat_damping = 0.1\nbarostat_every = 10\n");
}

// SHAKE/RATTLE: the bonds alone constrained (X-H-like: each molecule a three-atom cluster of two
// constrained bonds, its angle harmonic) at constant pressure (each cluster scaled about its
// centre): positions through Newton iterations on each cluster's system, the same bits at any
// rank count. (Clusters of three distances take the same path: Shake.WaterMatchesSettle checks
// their arithmetic.)
TEST_P(MdRanks, ShakeClustersAtAnyRankCount) {
  CUMULUS_EXEC_OR_SKIP(ex, GetParam());
  molecules_at_any_rank_count(ex, "shake", "constrain_bonds = [1]\nangle_style = \"harmonic\"\nthermostat = \"langevin\"\n"
                                           "thermostat_temperature = 1.2\nlangevin_damping = 0.5\nbarostat = \"c_rescale\"\n"
                                           "pressure = 2.0\ncompressibility = 0.05\nbarostat_damping = 0.1\nbarostat_every = 10\n");
}

// Mixed precision (fp32 pair terms, fixed-point sums): rigid molecules with
// PME, the same bits at any rank count and with the kernel-built list.
TEST_P(MdRanks, MixedPrecisionAtAnyRankCount) {
  CUMULUS_EXEC_OR_SKIP(ex, GetParam());
  molecules_at_any_rank_count(ex, "mixed", "precision = \"mixed\"\nconstrain_bonds = [1]\nconstrain_angles = [1]\n");
}

// The same with rank 0 at two OpenMP threads and the others at one: rank 0 alone could run the
// k-space inside the pair term's call (ForceTerm::compute_with), its messages then before the
// ghosts' rows go back to their owners and the others' after; the ranks decide it together (at
// several ranks, no overlap), so the run ends, with the same bits. (It hung before they did.) And
// with every rank at two threads: the overlap at several ranks, PME's messages from inside the
// pair term's region, the ghosts' rows sent back after.
namespace {
struct RestoreThreads {
  const int saved = omp_get_max_threads();
  ~RestoreThreads() { omp_set_num_threads(saved); }
};
}  // namespace
TEST_P(MdRanks, MixedPrecisionWithUnequalThreadCounts) {
  CUMULUS_EXEC_OR_SKIP(ex, GetParam());
  const RestoreThreads restore;
  omp_set_num_threads(Comm::world().rank() == 0 ? 2 : 1);
  molecules_at_any_rank_count(ex, "mixed_threads", "precision = \"mixed\"\nconstrain_bonds = [1]\nconstrain_angles = [1]\n");
  omp_set_num_threads(2);
  molecules_at_any_rank_count(ex, "mixed_threads2", "precision = \"mixed\"\nconstrain_bonds = [1]\nconstrain_angles = [1]\n");
}

// The radial distribution function (md.rdf_every, from the list) in mixed precision at several
// ranks, where each pair across ranks is listed on one rank only and its ghost's forces go back
// to the owner (ForceTerm::fills_fixed_rows): the same rdf.csv as at one rank.
TEST_P(MdRanks, MixedPrecisionRdfAtAnyRankCount) {
  CUMULUS_EXEC_OR_SKIP(ex, GetParam());
  const Comm world = Comm::world();
  const std::string base = "/tmp/cumulus_md_rdf_np" + std::to_string(world.size()), path = base + ".data";
  if (world.is_root()) {
    write_molecules(path);
    std::filesystem::create_directories(base + "/ranks");
    std::filesystem::create_directories(base + "/one");
  }
  world.barrier();
  const Config cfg = md_config(
      molecules_job(path, "precision = \"mixed\"\nconstrain_bonds = [1]\nconstrain_angles = [1]\nrdf_every = 5\nrdf_range = 2.4\n") +
      kMoleculePairs);
  auto rdf = [&](const Comm& comm, const std::string& dir) {
    Context ctx{comm, ex, dir};
    std::unique_ptr<Model> model = md::create(cfg, ctx);
    Simulation sim(*model, ctx, simulation_settings(cfg));
    EXPECT_EQ(sim.run(), ExitCode::done);
    model->diagnostics(0.0);  // collective: writes rdf.csv
  };
  rdf(world, base + "/ranks");
  if (world.is_root()) {
    omp_set_num_threads(2);
    rdf(Comm::self(), base + "/one");
    omp_set_num_threads(1);
    auto text = [](const std::string& file) {
      std::ifstream in(file);
      return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    };
    const std::string ranks = text(base + "/ranks/rdf.csv"), one = text(base + "/one/rdf.csv");
    EXPECT_GT(ranks.size(), 100u);
    EXPECT_EQ(ranks, one) << "rdf.csv differs between " << world.size() << " ranks and 1 rank";
    std::filesystem::remove_all(base);
    std::remove(path.c_str());
  }
  world.barrier();
}

TEST_P(MdRanks, EwaldWithExclusionsAtAnyRankCount) {
  CUMULUS_EXEC_OR_SKIP(ex, GetParam());
  charged_liquid_at_any_rank_count(ex, "ewald");
}

// The same with PME: charges spread as integers onto the grid, the ghost layers summed as
// integers, the bitwise FFT and exact energy sums make the same bits at any rank count too
// (the serial run on two threads spreads into per-thread grids on its first step, then runs PME on
// one thread beside the pair term's replay, into arrays of its own added after: ForceTerm::
// compute_with; the ranks, one thread each, in place).
TEST_P(MdRanks, PmeWithExclusionsAtAnyRankCount) {
  CUMULUS_EXEC_OR_SKIP(ex, GetParam());
  charged_liquid_at_any_rank_count(ex, "pme");
}

INSTANTIATE_TEST_SUITE_P(Backends, MdRanks, ::testing::ValuesIn(built_backends()), backend_name);

TEST(MdBackends, CudaMatchesHostBitwise) {
  if (!cuda_built() || cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const Comm world = Comm::world();
  Exec gpu = select_backend("cuda", world.local_rank(), nullptr);
  // The rank-count cases (NVE, Langevin, bcc with a shifted cutoff, a Nose-Hoover mixture), and the
  // list built by the kernels on both backends, rebuilt on a fixed schedule without the check.
  std::vector<std::string> cases(std::begin(kCases), std::end(kCases));
  cases.push_back("[md]\ncells = [6]\ntemperature = 1.2\nneighbor_build = \"kernels\"\nneighbor_every = 4\n"
                  "neighbor_check = false\n");
  cases.push_back(kMixedLj);  // lj/cut in mixed precision: CUDA's full list against the host's threaded half list
  for (const std::string& extra : cases) {
    const Config cfg = md_config(extra);
    const std::vector<double> host = run_md(cfg, world, Exec::host());
    const std::vector<double> cuda = run_md(cfg, world, gpu);
    std::int64_t differ = world.is_root() && host != cuda ? 1 : 0;
    EXPECT_EQ(world.sum(differ), 0) << "CUDA trajectory differs from the host's: " << extra;
  }
  release_backend(gpu);
}

// Molecules on CUDA against the host, bit for bit: harmonic bonds and angles, rigid water by SETTLE
// at constant pressure, SHAKE/RATTLE's clusters, and mixed precision (the Ewald sum, which runs on the host either
// way; PME's CUDA spreading is checked to a tolerance by PmeBackends).
TEST(MdBackends, MoleculesCudaMatchesHostBitwise) {
  if (!cuda_built() || cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const Comm world = Comm::world();
  Exec gpu = select_backend("cuda", world.local_rank(), nullptr);
  const std::string path = "/tmp/cumulus_md_molecules_cuda_np" + std::to_string(world.size()) + ".data";
  if (world.is_root()) write_molecules(path);
  world.barrier();
  const std::string job = "[md]\ndata_file = \"" + path + "\"\ntemperature = 1.0\ndt = 0.002\npair_style = \"lj/cut/coul/long\"\n"
                          "kspace_style = \"ewald\"\nkspace_tolerance = 1e-3\nspecial_lj = [0.0, 0.0, 0.0]\ncutoff = 2.5\n";
  const std::string pairs = "[md.pairs.oh]\ntypes = [1, 2]\nepsilon = 0.0\nsigma = 1.0\n[md.pairs.hh]\ntypes = [2, 2]\nepsilon = 0.0\nsigma = 1.0\n";
  const std::string npt = "thermostat = \"langevin\"\nthermostat_temperature = 1.2\nlangevin_damping = 0.5\nbarostat = \"c_rescale\"\n"
                          "pressure = 2.0\ncompressibility = 0.05\nbarostat_damping = 0.1\nbarostat_every = 10\n";
  for (const std::string& keys : {std::string("bond_style = \"harmonic\"\nangle_style = \"harmonic\"\n"),
                                 "constrain_bonds = [1]\nconstrain_angles = [1]\n" + npt,
                                 "constrain_bonds = [1]\nangle_style = \"harmonic\"\n" + npt,
                                 std::string("precision = \"mixed\"\nbond_style = \"harmonic\"\nangle_style = \"harmonic\"\n")}) {
    const Config cfg = md_config(job + keys + pairs);
    const std::vector<double> host = run_md(cfg, world, Exec::host());
    const std::vector<double> cuda = run_md(cfg, world, gpu);
    std::int64_t differ = world.is_root() && host != cuda ? 1 : 0;
    EXPECT_EQ(world.sum(differ), 0) << "CUDA molecules' trajectory differs from the host's: " << keys;
  }
  world.barrier();
  if (world.is_root()) std::remove(path.c_str());
  release_backend(gpu);
}

// The Ewald case on CUDA against the host, bit for bit: the pair term's table (coul_table.hpp) is
// built once on the host and read with the same operations on both backends (or, with
// md.coul_table = false, its erfc and exp are core/hd_math's on both), and the k-space sum runs on
// the host either way.
TEST(MdBackends, EwaldCudaMatchesHostBitwise) {
  if (!cuda_built() || cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const Comm world = Comm::world();
  Exec gpu = select_backend("cuda", world.local_rank(), nullptr);
  const std::string path = "/tmp/cumulus_md_ewald_cuda_np" + std::to_string(world.size()) + ".data";
  if (world.is_root()) write_ions(path);
  world.barrier();
  for (const std::string extra : {"", "neighbor_build = \"kernels\"\n", "coul_table = false\n"}) {
    const Config cfg = md_config(ewald_job(path, extra));
    const std::vector<double> host = run_md(cfg, world, Exec::host());
    const std::vector<double> cuda = run_md(cfg, world, gpu);
    std::int64_t differ = world.is_root() && host != cuda ? 1 : 0;
    EXPECT_EQ(world.sum(differ), 0) << "CUDA Ewald trajectory differs from the host's: " << extra;
  }
  world.barrier();
  if (world.is_root()) std::remove(path.c_str());
  release_backend(gpu);
}
