// The lattice Boltzmann solver gives bit-identical populations at any rank count (compared with a
// run on rank 0 alone), on every lattice, storage precision and boundary kind; and the CUDA backend
// gives the host oracle's bits, case by case over every lattice x storage x sub-model (the matrix
// at the end of this file).
#include <gtest/gtest.h>
#include <mpi.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "../backends.hpp"
#include "core/comm.hpp"
#include "mesh/stl.hpp"
#include "solvers/lbm/lbm.hpp"
#include "solvers/simulation.hpp"

using namespace cumulus;
using cumulus::testing::backend_name;
using cumulus::testing::built_backends;

namespace {
// A job of solver lbm from its tables.
Config lbm_job(const std::string& tables) {
  return parse_job_text("solver = \"lbm\"\n" + tables, "test.toml", {},
                        [](const std::string& s, Schema& schema) { SolverRegistry::all().build_schema(s, schema); });
}
Config lbm_config(const std::string& extra) { return lbm_job("[run]\nend_step = 30\n" + extra); }

// The named array of the model's state, assembled on rank 0 of `comm` in global (c, k, j, i) order.
std::vector<unsigned char> gather_array(Model& model, const std::string& name, const Comm& comm) {
  StateDescription s = model.state();
  for (GridArray& a : s.arrays) {
    if (a.name != name) continue;
    const std::vector<unsigned char> local = a.read_local();
    const std::size_t es = dtype_size(a.dtype);
    std::vector<unsigned char> global;
    if (comm.is_root()) global.resize(static_cast<std::size_t>(a.global_box.volume()) * a.ncomp * es);
    for (int r = 0; r < comm.size(); ++r) {
      Box b = a.local_box;
      std::vector<unsigned char> part = local;
      if (r != 0) {
        if (comm.rank() == r) {
          MPI_Send(b.lo, 6, MPI_INT, 0, 1, comm.raw());
          MPI_Send(part.data(), static_cast<int>(part.size()), MPI_BYTE, 0, 2, comm.raw());
        }
        if (!comm.is_root()) continue;
        MPI_Recv(b.lo, 6, MPI_INT, r, 1, comm.raw(), MPI_STATUS_IGNORE);
        part.resize(static_cast<std::size_t>(b.volume()) * a.ncomp * es);
        MPI_Recv(part.data(), static_cast<int>(part.size()), MPI_BYTE, r, 2, comm.raw(), MPI_STATUS_IGNORE);
      } else if (!comm.is_root()) {
        continue;
      }
      const Box& g = a.global_box;
      std::size_t p = 0;
      for (int c = 0; c < a.ncomp; ++c)
        for (int k = b.lo[2]; k < b.hi[2]; ++k)
          for (int j = b.lo[1]; j < b.hi[1]; ++j)
            for (int i = b.lo[0]; i < b.hi[0]; ++i, p += es) {
              const std::size_t q = (((static_cast<std::size_t>(c) * g.size(2) + k) * g.size(1) + j) * g.size(0) + i) * es;
              std::memcpy(&global[q], &part[p], es);
            }
    }
    return global;
  }
  ADD_FAILURE() << "no array " << name;
  return {};
}

// The root's process id, known to every rank (a file name that parallel test runs do not share).
int getpid_of_root(const Comm& comm) {
  int pid = static_cast<int>(getpid());
  MPI_Bcast(&pid, 1, MPI_INT, 0, comm.raw());
  return pid;
}

std::vector<unsigned char> run_lbm(const Config& cfg, const Comm& comm, const Exec& ex) {
  Context ctx{comm, ex, ""};
  std::unique_ptr<Model> model = lbm::create(cfg, ctx);
  Simulation sim(*model, ctx, simulation_settings(cfg));
  EXPECT_EQ(sim.run(), ExitCode::done);
  return gather_array(*model, "populations", comm);
}

// Uneven sizes, every boundary kind, obstacles, forcing, Smagorinsky, and all three precisions.
const char* kCases[] = {
    // D2Q9 fp64 channel: parabolic inlet, outlet, walls, a cylinder, TRT + Smagorinsky, ramp.
    "[lbm]\ncells = [37, 23]\nlength = [0.37]\nvelocity = 1.0\nreynolds = 50.0\nreference_length = 0.05\n"
    "lattice_velocity = 0.05\nprecision = \"fp64\"\nsmagorinsky = 0.15\nmagic = 0.05\nramp_time = 0.0004\n"
    "[lbm.boundary]\nxlo = \"inlet\"\nxlo_velocity = [1.5, 0.1]\nxlo_profile = \"parabolic\"\nxhi = \"outlet\"\n"
    "xhi_pressure = 0.01\nylo = \"wall\"\nyhi = \"wall\"\n"
    "[lbm.obstacles.c]\nshape = \"cylinder\"\ncenter = [0.1, 0.11]\nradius = 0.03\n",
    // D3Q19 fp32: periodic x, walls y, a lid on zhi, a sphere, a body force, BGK.
    "[lbm]\nlattice = \"D3Q19\"\ncells = [13, 11, 9]\nlength = [1.3]\nvelocity = 1.0\nviscosity = 0.01\n"
    "collision = \"bgk\"\nforce = [0.5, 0.0, 0.1]\n"
    "[lbm.boundary]\nylo = \"wall\"\nyhi = \"wall\"\nzlo = \"wall\"\nzhi = \"moving_wall\"\nzhi_velocity = [0.8, 0.3, 0.0]\n"
    "[lbm.obstacles.s]\nshape = \"sphere\"\ncenter = [0.6, 0.5, 0.45]\nradius = 0.25\n",
    // D3Q27 fp16: Taylor-Green in x-y, an inlet on zlo and outlet on zhi, a box obstacle.
    "[lbm]\nlattice = \"D3Q27\"\ncells = [12, 10, 8]\nlength = [1.2]\nvelocity = 1.0\nviscosity = 0.02\n"
    "precision = \"fp16\"\ninitial = \"taylor_green\"\nmagic = 0.1\n"
    "[lbm.boundary]\nzlo = \"inlet\"\nzlo_velocity = [0.0, 0.0, 0.5]\nzhi = \"outlet\"\n"
    "[lbm.obstacles.b]\nshape = \"box\"\nlo = [0.2, 0.2, 0.3]\nhi = [0.5, 0.45, 0.55]\n",
};
}  // namespace

class LbmRanks : public ::testing::TestWithParam<Backend> {};

TEST_P(LbmRanks, BitIdenticalAtAnyRankCount) {
  CUMULUS_EXEC_OR_SKIP(ex, GetParam());
  const Comm world = Comm::world();
  for (const char* extra : kCases) {
    const Config cfg = lbm_config(extra);
    const std::vector<unsigned char> distributed = run_lbm(cfg, world, ex);
    std::int64_t differ = 0;
    if (world.is_root()) {
      const std::vector<unsigned char> serial = run_lbm(cfg, Comm::self(), ex);
      EXPECT_EQ(serial.size(), distributed.size());
      differ = serial == distributed ? 0 : 1;
      // The flow must have developed, or the comparison proves nothing: not all populations at rest.
      std::size_t moving = 0;
      for (unsigned char b : serial) moving += b != 0;
      EXPECT_GT(moving, serial.size() / 4);
    }
    EXPECT_EQ(world.sum(differ), 0) << "populations differ between " << world.size() << " ranks and 1 rank: " << extra;
  }
}

// An STL obstacle: voxelized by every rank for its own block, so bit-identical at any rank count,
// and the same body as the analytic sphere it triangulates (cells differ only at the surface).
TEST_P(LbmRanks, StlObstacleAtAnyRankCount) {
  CUMULUS_EXEC_OR_SKIP(ex, GetParam());
  const Comm world = Comm::world();
  const std::string path = "/tmp/cumulus_test_sphere_" + std::to_string(getpid_of_root(world)) + ".stl";
  if (world.is_root()) write_stl_binary(path, make_sphere_triangles({0.8, 0.6, 0.5}, 0.3, 24));
  world.barrier();
  const std::string common =
      "[lbm]\nlattice = \"D3Q19\"\ncells = [16, 12, 10]\nlength = [1.6]\nvelocity = 1.0\nviscosity = 0.02\n"
      "[lbm.boundary]\nylo = \"wall\"\nyhi = \"moving_wall\"\nyhi_velocity = [1.0, 0.0, 0.2]\n";
  const Config stl = lbm_config(common + "[lbm.obstacles.body]\nshape = \"stl\"\nfile = \"" + path + "\"\n");
  const Config sphere =
      lbm_config(common + "[lbm.obstacles.body]\nshape = \"sphere\"\ncenter = [0.8, 0.6, 0.5]\nradius = 0.3\n");
  const std::vector<unsigned char> distributed = run_lbm(stl, world, ex);
  std::int64_t differ = 0;
  if (world.is_root()) {
    const std::vector<unsigned char> serial = run_lbm(stl, Comm::self(), ex);
    differ = serial == distributed ? 0 : 1;
    // Flags of both bodies, on one rank.
    auto flags_of = [&](const Config& cfg) {
      Context ctx{Comm::self(), ex, ""};
      std::unique_ptr<Model> m = lbm::create(cfg, ctx);
      return gather_array(*m, "flags", Comm::self());
    };
    const auto a = flags_of(stl), b = flags_of(sphere);
    std::size_t in_a = 0, in_b = 0, both = 0;
    for (std::size_t n = 0; n < a.size(); ++n) {
      in_a += a[n] >= 32;
      in_b += b[n] >= 32;
      both += a[n] >= 32 && b[n] >= 32;
    }
    EXPECT_GT(in_b, 50u);
    EXPECT_GE(both, in_b * 9 / 10) << "STL body " << in_a << " cells, sphere " << in_b << ", shared " << both;
    EXPECT_LE(in_a, in_b * 11 / 10 + 1);
    std::remove(path.c_str());
  }
  EXPECT_EQ(world.sum(differ), 0) << "STL case differs between " << world.size() << " ranks and 1 rank";
}

INSTANTIATE_TEST_SUITE_P(Backends, LbmRanks, ::testing::ValuesIn(built_backends()), backend_name);

// The host backend is the oracle. Both passes evaluate the same expressions in the same order
// with IEEE division and square root and no FMA contraction (--fmad=false), so the bits agree.
TEST(LbmBackends, CudaMatchesHostBitwise) {
  if (!cuda_built() || cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const Comm world = Comm::world();
  Exec gpu = select_backend("cuda", world.local_rank(), nullptr);
  for (const char* extra : kCases) {
    const Config cfg = lbm_config(extra);
    const std::vector<unsigned char> host = run_lbm(cfg, world, Exec::host());
    const std::vector<unsigned char> cuda = run_lbm(cfg, world, gpu);
    std::int64_t differ = world.is_root() && host != cuda ? 1 : 0;
    EXPECT_EQ(world.sum(differ), 0) << "CUDA populations differ from the host's: " << extra;
  }
  release_backend(gpu);
}

// ---- The host-vs-CUDA matrix -------------------------------------------------------------------
// Every lattice x storage precision x sub-model, each a tiny box run for a few steps (seconds on a
// GPU), compared bit for bit with the host oracle: the populations, and the velocity and vorticity
// outputs (the macroscopic and vorticity kernels). The diagnostics (reductions: mass, energy,
// obstacle forces) are compared to 1e-9 relative (absolute below 1e-3): OpenMP and CUB add in
// different orders.
//
// Without a device each case runs its host half and then skips: the job is accepted and runs to
// the end, the flow has developed, and the case's sub-model really changes the bits (a control
// run with it switched off must differ), so a CUDA comparison of the case covers that sub-model.
namespace {

struct MatrixCase {
  const char* lattice;    // D2Q9, D3Q19, D3Q27
  const char* precision;  // fp64, fp32, fp16
  const char* model;      // a key of matrix_job
};

// The job of one case, and (control = true) the same job with the sub-model under test switched
// off. 2D boxes 24 x 16, 3D 12 x 10 x 8; Reynolds 20 on the y extent puts tau between 0.55 and
// 0.65, where BGK and TRT with open boundaries are stable.
std::string matrix_job(const MatrixCase& c, bool control) {
  const bool three = std::string(c.lattice) != "D2Q9";
  const std::string m = c.model;
  auto vec = [&](const char* x, const char* y, const char* z) {
    return std::string("[") + x + ", " + y + (three ? std::string(", ") + z : std::string()) + "]";
  };
  std::string j = std::string("[run]\nend_step = 20\nhealth_every = 5\n[lbm]\nlattice = \"") + c.lattice +
                  "\"\nprecision = \"" + c.precision + "\"\ncells = " + (three ? "[12, 10, 8]" : "[24, 16]") +
                  "\nlength = [" + (three ? "1.2" : "2.4") + "]\nvelocity = 1.0\nreynolds = 20.0\n";
  if (m == "bgk_force") {
    // Periodic box, Taylor-Green vortex pushed by a body force: the fast path alone (no boundary cells).
    j += "collision = \"bgk\"\ninitial = \"taylor_green\"\n";
    j += "force = " + (control ? vec("0.0", "0.0", "0.0") : vec("2.0", "-1.0", "0.5")) + "\n";
  } else if (m == "trt_smagorinsky_cavity") {
    // Walls all round and a lid ramped up: the wall fill (moving walls too, but fp16 sends those
    // to the boundary pass); TRT with the Smagorinsky eddy viscosity.
    j += std::string("collision = \"trt\"\nmagic = 0.1\nramp_time = 0.01\nsmagorinsky = ") + (control ? "0.0" : "0.5") +
         "\n";
    j += "initial = \"uniform\"\ninitial_velocity = " + vec("0.3", "-0.2", "0.1") + "\n";
    j += "[lbm.boundary]\nxlo = \"wall\"\nxhi = \"wall\"\nylo = \"wall\"\nyhi = \"moving_wall\"\n";
    j += "yhi_velocity = " + vec("2.0", "0.0", "1.0") + "\n";
    if (three) j += "zlo = \"wall\"\nzhi = \"wall\"\n";
  } else if (m == "bgk_smagorinsky_channel") {
    // Parabolic inlet, pressure outlet, walls, an interpolated curved obstacle: the general boundary
    // pass, with BGK and the Smagorinsky eddy viscosity.
    j += std::string("collision = \"bgk\"\nsmagorinsky = ") + (control ? "0.0" : "0.5") + "\n";
    j += "[lbm.boundary]\nxlo = \"inlet\"\nxlo_profile = \"parabolic\"\nxhi = \"outlet\"\nxhi_pressure = 0.002\n";
    j += "xlo_velocity = " + vec("2.5", "0.2", "-0.1") + "\nylo = \"wall\"\nyhi = \"wall\"\n";
    if (three) j += "zlo = \"wall\"\nzhi = \"wall\"\n";
    j += three ? "[lbm.obstacles.s]\nshape = \"sphere\"\ncenter = [0.43, 0.52, 0.38]\nradius = 0.22\n"
               : "[lbm.obstacles.c]\nshape = \"cylinder\"\ncenter = [0.83, 0.79]\nradius = 0.33\n";
  } else {  // trt_poiseuille_obstacles
    // A body-forced channel from its steady profile, a box obstacle off the cell faces and (3D) a
    // cylinder across it; the control bounces back on the staircase instead of interpolating.
    j += "collision = \"trt\"\ninitial = \"poiseuille\"\nforce = " + vec("0.8", "0.0", "0.0") + "\n";
    j += std::string("obstacle_walls = \"") + (control ? "staircase" : "interpolated") + "\"\n";
    j += "[lbm.boundary]\nylo = \"wall\"\nyhi = \"wall\"\n";
    j += "[lbm.obstacles.b]\nshape = \"box\"\nlo = " + vec("0.33", "0.27", "0.31") +
         "\nhi = " + vec("0.71", "0.58", "0.52") + "\n";
    if (three) j += "[lbm.obstacles.c]\nshape = \"cylinder\"\naxis = \"y\"\ncenter = [0.93, 0.0, 0.4]\nradius = 0.17\n";
  }
  return j;
}

struct MatrixResult {
  std::vector<unsigned char> populations, velocity, vorticity;
  std::vector<std::pair<std::string, double>> diagnostics;
};

MatrixResult run_matrix_case(const Config& cfg, const Comm& comm, const Exec& ex) {
  Context ctx{comm, ex, ""};
  std::unique_ptr<Model> model = lbm::create(cfg, ctx);
  Simulation sim(*model, ctx, simulation_settings(cfg));
  EXPECT_EQ(sim.run(), ExitCode::done);
  MatrixResult r;
  r.populations = gather_array(*model, "populations", comm);
  r.velocity = gather_array(*model, "velocity", comm);
  r.vorticity = gather_array(*model, "vorticity", comm);
  r.diagnostics = model->diagnostics(sim.time());
  return r;
}

std::vector<MatrixCase> matrix_cases() {
  std::vector<MatrixCase> v;
  for (const char* l : {"D2Q9", "D3Q19", "D3Q27"})
    for (const char* p : {"fp64", "fp32", "fp16"})
      for (const char* m :
           {"bgk_force", "trt_smagorinsky_cavity", "bgk_smagorinsky_channel", "trt_poiseuille_obstacles"})
        v.push_back({l, p, m});
  return v;
}

std::string matrix_name(const ::testing::TestParamInfo<MatrixCase>& info) {
  return std::string(info.param.lattice) + "_" + info.param.precision + "_" + info.param.model;
}

}  // namespace

class LbmCudaMatchesHost : public ::testing::TestWithParam<MatrixCase> {};

TEST_P(LbmCudaMatchesHost, Bitwise) {
  const MatrixCase& c = GetParam();
  const Comm world = Comm::world();
  const std::string job = matrix_job(c, false);
  const Config cfg = lbm_job(job);
  const MatrixResult host = run_matrix_case(cfg, world, Exec::host());
  // The host half: the flow developed (most population bytes off rest), and the sub-model matters.
  if (world.is_root()) {
    std::size_t moving = 0;
    for (unsigned char b : host.populations) moving += b != 0;
    EXPECT_GT(moving, host.populations.size() / 4) << "the flow has not developed: " << job;
  }
  const MatrixResult control = run_matrix_case(lbm_job(matrix_job(c, true)), world, Exec::host());
  const std::int64_t same_as_control = world.is_root() && control.populations == host.populations ? 1 : 0;
  EXPECT_EQ(world.sum(same_as_control), 0) << "switching the sub-model off changes no bit: the case does not test it";

  if (!cuda_built() || cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible (host half passed)";
  Exec gpu = select_backend("cuda", world.local_rank(), nullptr);
  const MatrixResult cuda = run_matrix_case(cfg, world, gpu);
  release_backend(gpu);
  std::int64_t differ[3] = {0, 0, 0};
  if (world.is_root()) {
    differ[0] = host.populations != cuda.populations;
    differ[1] = host.velocity != cuda.velocity;
    differ[2] = host.vorticity != cuda.vorticity;
  }
  EXPECT_EQ(world.sum(differ[0]), 0) << "CUDA populations differ from the host's";
  EXPECT_EQ(world.sum(differ[1]), 0) << "CUDA velocity output differs from the host's";
  EXPECT_EQ(world.sum(differ[2]), 0) << "CUDA vorticity output differs from the host's";
  ASSERT_EQ(host.diagnostics.size(), cuda.diagnostics.size());
  for (std::size_t n = 0; n < host.diagnostics.size(); ++n) {
    const double a = host.diagnostics[n].second, b = cuda.diagnostics[n].second;
    EXPECT_LE(std::fabs(a - b), 1e-9 * std::max(std::fabs(a), 1e-3)) << host.diagnostics[n].first;
  }
}

INSTANTIATE_TEST_SUITE_P(Matrix, LbmCudaMatchesHost, ::testing::ValuesIn(matrix_cases()), matrix_name);
