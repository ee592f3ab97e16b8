// Molecular dynamics trajectories are bit-identical at any rank count (compared with a run on rank
// 0 alone with two threads, so with the full neighbour list against the ranks' half lists, atom by
// atom in id order): ghosts carry wrapped coordinates and ids, the force loop
// takes the minimum image and sums pairs in ascending id, and atoms migrate at list rebuilds.
#include <gtest/gtest.h>
#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <cstring>

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
    int id;
    std::memcpy(&id, mine[0].data() + sizeof(int) * i, sizeof(int));
    rec[10 * static_cast<std::size_t>(i)] = id;
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

std::vector<double> run_md(const Config& cfg, const Comm& comm, const Exec& ex) {
  Context ctx{comm, ex, ""};
  std::unique_ptr<Model> model = md::create(cfg, ctx);
  Simulation sim(*model, ctx, simulation_settings(cfg));
  EXPECT_EQ(sim.run(), ExitCode::done);
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

TEST_P(MdRanks, BitIdenticalTrajectoriesAtAnyRankCount) {
  CUMULUS_EXEC_OR_SKIP(ex, GetParam());
  const Comm world = Comm::world();
  for (const char* extra : kCases) {
    const Config cfg = md_config(extra);
    const std::vector<double> distributed = run_md(cfg, world, ex);
    std::int64_t differ = 0;
    if (world.is_root()) {
      // The serial reference with two OpenMP threads: the full neighbour list, against the
      // half list (Newton's third law) that one thread per rank uses, which must give its bits.
      omp_set_num_threads(2);
      const std::vector<double> serial = run_md(cfg, Comm::self(), ex);
      omp_set_num_threads(1);
      differ = serial == distributed ? 0 : 1;
      // The atoms must have crossed the box somewhere, or migration was not exercised.
      double moved = 0;
      for (std::size_t k = 0; k < serial.size(); k += 10)
        for (int d = 7; d < 10; ++d) moved = std::max(moved, std::abs(serial[k + d]));
      EXPECT_GE(moved, 1.0) << extra;
    }
    EXPECT_EQ(world.sum(differ), 0) << "trajectories differ between " << world.size() << " ranks and 1 rank: " << extra;
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, MdRanks, ::testing::ValuesIn(built_backends()), backend_name);

TEST(MdBackends, CudaMatchesHostBitwise) {
  if (!cuda_built() || cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const Comm world = Comm::world();
  Exec gpu = select_backend("cuda", world.local_rank(), nullptr);
  for (const char* extra : kCases) {
    const Config cfg = md_config(extra);
    const std::vector<double> host = run_md(cfg, world, Exec::host());
    const std::vector<double> cuda = run_md(cfg, world, gpu);
    std::int64_t differ = world.is_root() && host != cuda ? 1 : 0;
    EXPECT_EQ(world.sum(differ), 0) << "CUDA trajectory differs from the host's: " << extra;
  }
  release_backend(gpu);
}
