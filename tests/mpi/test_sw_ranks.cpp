// The shallow-water core gives bit-identical states at any rank count and with any tiling of the
// panels (compared with a run on rank 0 alone), and the CUDA backend gives the host oracle's bits.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstring>

#include "../backends.hpp"
#include "core/comm.hpp"
#include "core/strings.hpp"
#include "solvers/shallow_water/shallow_water.hpp"
#include "solvers/simulation.hpp"

using namespace cumulus;
using cumulus::testing::backend_name;
using cumulus::testing::built_backends;

namespace {
Config sw_config(const std::string& extra) {
  const std::string text = "solver = \"shallow_water\"\n[run]\nend_step = 12\n" + extra;
  return parse_job_text(text, "test.toml", {}, [](const std::string& s, Schema& schema) {
    SolverRegistry::all().build_schema(s, schema);
  });
}

// Depth and velocity on rank 0, reordered from the tile-major checkpoint layout to panel-major
// (p, J, I) so that runs with different tilings compare: 4 doubles per cell.
std::vector<double> gather_state(Model& model, const Comm& comm, int n, int tx, int ty) {
  std::vector<double> out;
  StateDescription s = model.state();
  int comp = 0;
  if (comm.is_root()) out.assign(static_cast<std::size_t>(4) * 6 * n * n, 0.0);
  for (const char* name : {"depth", "velocity"}) {
    for (GridArray& a : s.arrays) {
      if (a.name != name) continue;
      std::vector<unsigned char> local = a.read_local();
      Box b = a.local_box;
      for (int r = 0; r < comm.size(); ++r) {
        std::vector<unsigned char> part;
        Box pb = b;
        if (r == 0) {
          if (comm.is_root()) part = local;
        } else {
          if (comm.rank() == r) {
            MPI_Send(b.lo, 6, MPI_INT, 0, 1, comm.raw());
            MPI_Send(local.data(), static_cast<int>(local.size()), MPI_BYTE, 0, 2, comm.raw());
          }
          if (comm.is_root()) {
            MPI_Recv(pb.lo, 6, MPI_INT, r, 1, comm.raw(), MPI_STATUS_IGNORE);
            part.resize(static_cast<std::size_t>(pb.volume()) * a.ncomp * sizeof(double));
            MPI_Recv(part.data(), static_cast<int>(part.size()), MPI_BYTE, r, 2, comm.raw(), MPI_STATUS_IGNORE);
          }
        }
        if (!comm.is_root()) continue;
        const int nx = n / tx, ny = n / ty;
        const double* v = reinterpret_cast<const double*>(part.data());
        std::size_t q = 0;
        for (int c = 0; c < a.ncomp; ++c)
          for (int t = pb.lo[2]; t < pb.hi[2]; ++t)
            for (int j = 0; j < ny; ++j)
              for (int i = 0; i < nx; ++i, ++q) {
                const int p = t / (tx * ty), rr = t % (tx * ty);
                const int I = (rr % tx) * nx + i, J = (rr / tx) * ny + j;
                out[((static_cast<std::size_t>(comp + c) * 6 + p) * n + J) * n + I] = v[q];
              }
      }
      comp += a.ncomp;
    }
  }
  return out;
}

std::vector<double> run_sw(const std::string& extra, const Comm& comm, const Exec& ex, int n, int tx, int ty) {
  const Config cfg = sw_config(extra + strprintf("resolution = %d\ntiles = [%d, %d]\n", n, tx, ty));
  Context ctx{comm, ex, ""};
  std::unique_ptr<Model> model = sw::create(cfg, ctx);
  Simulation sim(*model, ctx, simulation_settings(cfg));
  EXPECT_EQ(sim.run(), ExitCode::done);
  return gather_state(*model, comm, n, tx, ty);
}

struct Case {
  const char* extra;
  int n;
};
// Across the cube's corners and edges: case 1 at a flow angle through the corners (advection
// only), case 6 (all terms, hyperviscosity on), Galewsky (the jet and its bump).
const Case kCases[] = {
    {"[shallow_water]\ncase = \"williamson1\"\nflow_angle = 1.5208\n", 16},
    {"[shallow_water]\ncase = \"williamson6\"\nhyperviscosity_time = 3600.0\n", 16},
    {"[shallow_water]\ncase = \"galewsky\"\n", 32},
};
}  // namespace

class SwRanks : public ::testing::TestWithParam<Backend> {};

TEST_P(SwRanks, BitIdenticalAtAnyRankCountAndTiling) {
  CUMULUS_EXEC_OR_SKIP(ex, GetParam());
  const Comm world = Comm::world();
  for (const Case& c : kCases) {
    const std::vector<double> distributed = run_sw(c.extra, world, ex, c.n, 2, 2);
    std::int64_t differ = 0;
    if (world.is_root()) {
      const std::vector<double> serial = run_sw(c.extra, Comm::self(), ex, c.n, 1, 1);
      const std::vector<double> strips = run_sw(c.extra, Comm::self(), ex, c.n, 4, 2);
      differ = (serial == distributed && serial == strips) ? 0 : 1;
      // The state must have moved, or the comparison proves nothing.
      const std::vector<double> start = [&] {
        Config cfg = sw_config(std::string(c.extra) + strprintf("resolution = %d\n", c.n));
        Context ctx{Comm::self(), ex, ""};
        std::unique_ptr<Model> m = sw::create(cfg, ctx);
        return gather_state(*m, Comm::self(), c.n, 1, 1);
      }();
      std::size_t moved = 0;
      for (std::size_t k = 0; k < start.size(); ++k) moved += start[k] != serial[k];
      EXPECT_GT(moved, serial.size() / 8) << c.extra;
    }
    EXPECT_EQ(world.sum(differ), 0) << "states differ between " << world.size() << " ranks / tilings: " << c.extra;
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, SwRanks, ::testing::ValuesIn(built_backends()), backend_name);

TEST(SwBackends, CudaMatchesHostBitwise) {
  if (!cuda_built() || cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const Comm world = Comm::world();
  Exec gpu = select_backend("cuda", world.local_rank(), nullptr);
  // The rank-count cases, and the two that only this test runs (a steady flow at an angle to the
  // grid; topography): every initial state and sub-model, on the GPU in seconds.
  std::vector<Case> cases(std::begin(kCases), std::end(kCases));
  cases.push_back({"[shallow_water]\ncase = \"williamson2\"\nflow_angle = 0.7853981633974483\n", 16});
  cases.push_back({"[shallow_water]\ncase = \"williamson5\"\nhyperviscosity_time = 7200.0\n", 16});
  for (const Case& c : cases) {
    const std::vector<double> host = run_sw(c.extra, world, Exec::host(), c.n, 2, 2);
    const std::vector<double> cuda = run_sw(c.extra, world, gpu, c.n, 2, 2);
    std::int64_t differ = world.is_root() && host != cuda ? 1 : 0;
    EXPECT_EQ(world.sum(differ), 0) << "CUDA state differs from the host's: " << c.extra;
  }
  release_backend(gpu);
}
