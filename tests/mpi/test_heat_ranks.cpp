// The heat solver gives bit-identical fields at any rank count (compared with a run on rank 0
// alone), and the CUDA backend agrees with the host oracle.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "../backends.hpp"
#include "core/comm.hpp"
#include "mesh/gather.hpp"
#include "solvers/heat/heat.hpp"
#include "solvers/simulation.hpp"

using namespace cumulus;
using cumulus::testing::backend_name;
using cumulus::testing::built_backends;

namespace {
Config heat_config(const std::string& extra) {
  const std::string text = "solver = \"heat\"\n[run]\nend_step = 25\n" + extra;
  return parse_job_text(text, "test.toml", {}, [](const std::string& s, Schema& schema) {
    SolverRegistry::all().build_schema(s, schema);
  });
}

// Runs the job on `comm` and returns the global field on rank 0 of `comm`.
std::vector<double> run_heat(const Config& cfg, const Comm& comm, const Exec& ex) {
  Context ctx{comm, ex, ""};
  heat::HeatModel model(cfg, ctx);
  Simulation sim(model, ctx, simulation_settings(cfg));
  EXPECT_EQ(sim.run(), ExitCode::done);
  return gather_field(model.temperature(), model.decomposition(), comm, ex);
}

const char* kCases[] = {
    // 2D, periodic x / fixed y, uneven sizes, Gaussian (not symmetric in the decomposition).
    "[heat]\ncells = [37, 23]\nboundary = [\"periodic\", \"fixed\"]\nfixed_value = 0.25\ninitial = "
    "\"gaussian\"\ngaussian_center = [0.3, 0.6]\ngaussian_width = 0.1\n",
    // 3D, mixed boundaries, sine mode.
    "[heat]\ncells = [13, 11, 9]\nboundary = [\"fixed\", \"periodic\", \"fixed\"]\nmodes = [1, 2, 1]\n",
};
}  // namespace

class HeatRanks : public ::testing::TestWithParam<Backend> {};

TEST_P(HeatRanks, BitIdenticalAtAnyRankCount) {
  CUMULUS_EXEC_OR_SKIP(ex, GetParam());
  const Comm world = Comm::world();
  for (const char* extra : kCases) {
    const Config cfg = heat_config(extra);
    const std::vector<double> distributed = run_heat(cfg, world, ex);
    std::int64_t differ = 0;
    if (world.is_root()) {
      const std::vector<double> serial = run_heat(cfg, Comm::self(), ex);
      EXPECT_EQ(serial.size(), distributed.size());
      differ = serial.size() == distributed.size() &&
                       std::memcmp(serial.data(), distributed.data(), serial.size() * sizeof(double)) == 0
                   ? 0
                   : 1;
      // The field must have changed, or the comparison proves nothing.
      EXPECT_GT(std::abs(serial[serial.size() / 2] - serial[serial.size() / 3]), 0.0);
    }
    EXPECT_EQ(world.sum(differ), 0) << "fields differ between " << world.size() << " ranks and 1 rank: " << extra;
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, HeatRanks, ::testing::ValuesIn(built_backends()), backend_name);

// The host backend is the oracle, and CUDA gives its bits: no contraction on either backend
// (--fmad=false, -ffp-contract=off) and the initial fill and the analytic solution use the project's
// own exp/sin/pow (core/hd_math.hpp), not the two math libraries, which differ in the last bits.
// Every boundary kind and initial condition, in 2D and 3D.
TEST(HeatBackends, CudaMatchesHostBitwise) {
  if (!cuda_built() || cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const Comm world = Comm::world();
  Exec gpu = select_backend("cuda", world.local_rank(), nullptr);
  std::vector<std::string> cases(std::begin(kCases), std::end(kCases));
  cases.push_back("[heat]\ncells = [40, 24]\nboundary = [\"periodic\"]\nmodes = [2, 3]\n");
  cases.push_back("[heat]\ncells = [12, 10, 14]\nboundary = [\"periodic\", \"fixed\", \"periodic\"]\ninitial = "
                  "\"gaussian\"\ngaussian_width = 0.15\n");
  for (const std::string& extra : cases) {
    const Config cfg = heat_config(extra);
    const std::vector<double> host = run_heat(cfg, world, Exec::host());
    const std::vector<double> cuda = run_heat(cfg, world, gpu);
    std::int64_t differ = 0;
    double worst = 0;
    if (world.is_root()) {
      differ = host.size() != cuda.size() || std::memcmp(host.data(), cuda.data(), host.size() * sizeof(double)) != 0;
      for (std::size_t n = 0; n < host.size() && n < cuda.size(); ++n) worst = std::max(worst, std::abs(host[n] - cuda[n]));
    }
    EXPECT_EQ(world.sum(differ), 0) << "CUDA field differs from the host's (largest difference " << worst << "): " << extra;
  }
  release_backend(gpu);
}
