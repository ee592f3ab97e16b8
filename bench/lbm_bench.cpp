// Kernel source: compiled by nvcc in a CUDA build, by g++ otherwise (the copy ceiling's kernels).
//
// cumulus_bench_lbm: lattice Boltzmann throughput against a copy-bandwidth ceiling measured in the
// same process, on the same backend, on arrays as large as one population buffer.
//   (a) STREAM-style copy (bench/copy_ceiling.hpp), 16 B counted per double, best of --repeats.
//   (b) for each storage precision and case, the solver's step (halo exchange, stream-collide,
//       boundary cells): MLUPS (million lattice-cell updates per second, all cells counted, as
//       FluidX3D counts them), and the effective bandwidth MLUPS x 2 Q sizeof(storage) bytes (each
//       cell reads its Q populations and writes Q: 152 B for D3Q19 fp32) as a ratio to (a).
// Cases: "periodic" (a fully periodic box, the pure streaming-collision kernel) and "cavity" (walls
// on every face and a moving lid: the boundary path included). Target on the host: >= 0.8.
// A benchmark, not a test: it prints PASS or BELOW TARGET and exits 0 either way.
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench/copy_ceiling.hpp"
#include "core/comm.hpp"
#include "core/config.hpp"
#include "core/exec.hpp"
#include "core/strings.hpp"
#include "core/timers.hpp"
#include "solvers/model.hpp"

namespace cumulus::bench {

constexpr double kHostTarget = 0.8;

struct Options {
  std::string backend = "auto", lattice = "D3Q19";
  std::vector<std::string> precisions{"fp64", "fp32", "fp16"}, cases{"periodic", "cavity"};
  long cells = 0, steps = 0;
  int repeats = 3;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, ',')) out.push_back(part);
  return out;
}

const char* kHelp =
    "cumulus_bench_lbm: lattice Boltzmann MLUPS and bandwidth against a copy ceiling measured in the same run\n"
    "  --backend auto|host|cuda   where kernels run (default auto)\n"
    "  --lattice D3Q19|D3Q27|D2Q9 (default D3Q19)\n"
    "  --precision LIST           fp64,fp32,fp16 (default all three)\n"
    "  --case LIST                periodic,cavity (default both)\n"
    "  --cells N                  N^3 cells (N^2 for D2Q9); default 128 host, 384 cuda\n"
    "  --steps N                  timed steps per round (default 10 host, 200 cuda)\n"
    "  --repeats N                rounds of (one copy, N steps), best kept (default 3)\n"
    "MPI: mpirun --allow-run-as-root --oversubscribe -np 2 build/cumulus_bench_lbm  (1 vs 2 ranks)\n";

Options parse_options(int argc, char** argv, bool* help) {
  Options o;
  *help = false;
  for (int a = 1; a < argc; ++a) {
    std::string arg = argv[a];
    auto next = [&]() -> std::string {
      if (a + 1 >= argc) usage_error(arg + " needs a value");
      return argv[++a];
    };
    auto number = [&](long lo) {
      const std::string v = next();
      char* end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end || n < lo) usage_error(strprintf("%s %s: expected an integer >= %ld", arg.c_str(), v.c_str(), lo));
      return n;
    };
    if (arg == "-h" || arg == "--help") *help = true;
    else if (arg == "--backend") o.backend = next();
    else if (arg == "--lattice") o.lattice = next();
    else if (arg == "--precision") o.precisions = split(next());
    else if (arg == "--case") o.cases = split(next());
    else if (arg == "--cells") o.cells = number(8);
    else if (arg == "--steps") o.steps = number(1);
    else if (arg == "--repeats") o.repeats = static_cast<int>(number(1));
    else usage_error("unknown option " + arg);
  }
  for (const auto& p : o.precisions)
    if (p != "fp64" && p != "fp32" && p != "fp16") usage_error("--precision " + p + ": expected fp64, fp32 or fp16");
  for (const auto& c : o.cases)
    if (c != "periodic" && c != "cavity") usage_error("--case " + c + ": expected periodic or cavity");
  if (o.lattice != "D2Q9" && o.lattice != "D3Q19" && o.lattice != "D3Q27")
    usage_error("--lattice " + o.lattice + ": expected D2Q9, D3Q19 or D3Q27");
  return o;
}

std::unique_ptr<Model> make_lbm(const Comm& comm, const Exec& ex, const Options& o, long n, const std::string& precision,
                                const std::string& kase) {
  const bool two_d = o.lattice == "D2Q9";
  std::string text = strprintf(
      "solver = \"lbm\"\n[run]\nend_step = 1\nbackend = \"%s\"\n"
      "[lbm]\nlattice = \"%s\"\ncells = [%ld, %ld%s]\nlength = [1.0]\nvelocity = 1.0\nreynolds = 1000.0\n"
      "lattice_velocity = 0.05\nprecision = \"%s\"\n",
      to_string(ex.backend()), o.lattice.c_str(), n, n, two_d ? "" : strprintf(", %ld", n).c_str(), precision.c_str());
  if (kase == "periodic") {
    text += "initial = \"taylor_green\"\n";
  } else {
    text += "[lbm.boundary]\nxlo = \"wall\"\nxhi = \"wall\"\nylo = \"wall\"\nyhi = \"moving_wall\"\n";
    text += two_d ? "yhi_velocity = [1.0, 0.0]\n" : "yhi_velocity = [1.0, 0.0, 0.0]\nzlo = \"wall\"\nzhi = \"wall\"\n";
  }
  const SolverRegistry& reg = SolverRegistry::all();
  Config cfg = parse_job_text(text, "cumulus_bench_lbm", {}, [&](const std::string& s, Schema& sc) { reg.build_schema(s, sc); });
  const SolverEntry* entry = reg.find("lbm");
  check_common_keys(cfg, *entry);
  entry->check(cfg, comm.size());
  return entry->create(cfg, Context{comm, ex, ""});
}

int bench_main(int argc, char** argv) {
  const Comm world = Comm::world();
  bool help = false;
  const Options o = parse_options(argc, argv, &help);
  if (help) {
    if (world.is_root()) std::fputs(kHelp, stdout);
    return 0;
  }
  std::string why;
  Exec ex = select_backend(o.backend, world.local_rank(), &why);
  const bool cuda = ex.is_cuda();
  const long n = o.cells > 0 ? o.cells : (o.lattice == "D2Q9" ? (cuda ? 8192 : 2048) : (cuda ? 384 : 128));
  const long steps = o.steps > 0 ? o.steps : (cuda ? 200 : 10);
  const int Q = o.lattice == "D2Q9" ? 9 : (o.lattice == "D3Q19" ? 19 : 27);
  const double cells = o.lattice == "D2Q9" ? double(n) * n : double(n) * n * n;

  // The copy arrays: as many bytes as one fp64 population buffer of this rank (the largest case).
  const double local_cells = cells / world.size();
  const int rows = static_cast<int>(std::max(1.0, local_cells * Q / 4096.0));
  CopyArrays arrays(ex, world, Box(0, 0, 0, 4096, rows, 1));
  std::vector<std::string> ways = cuda ? std::vector<std::string>{"kernel", "memcpy"} : std::vector<std::string>{"omp"};
  double copy_seconds = 1e30;
  std::string copy_how;

  struct Row {
    std::string precision, kase;
    double step = 0, bytes_per_cell = 0;
  };
  std::vector<Row> rows_out;
  for (const auto& kase : o.cases)
    for (const auto& precision : o.precisions) {
      std::unique_ptr<Model> model = make_lbm(world, ex, o, n, precision, kase);
      const double dt = model->preferred_dt();
      double t = 0;
      for (int w = 0; w < 2; ++w, t += dt) model->advance(t, dt);
      Row r{precision, kase, 1e30, 2.0 * Q * (precision == "fp64" ? 8 : precision == "fp32" ? 4 : 2)};
      for (int rep = 0; rep < o.repeats; ++rep) {
        for (const auto& w : ways) {
          const double s = arrays.run(w);
          if (s < copy_seconds) {
            copy_seconds = s;
            copy_how = w == "omp" ? "OpenMP loop" : w == "kernel" ? "for_each copy kernel" : "device-to-device memcpy";
          }
        }
        ex.synchronize();
        world.barrier();
        const double t0 = wall_seconds();
        for (long s = 0; s < steps; ++s, t += dt) model->advance(t, dt);
        ex.synchronize();
        r.step = std::min(r.step, world.max(wall_seconds() - t0) / steps);
      }
      if (model->check_health()) throw Error("bench: the " + kase + " " + precision + " flow diverged");
      rows_out.push_back(r);
    }
  arrays.verify();

  if (world.is_root()) {
    const double copy_bw = arrays.bytes() / copy_seconds;
    std::printf("cumulus_bench_lbm: %s, %ld^%d cells, %d rank(s), %d OpenMP thread(s) per rank\n", o.lattice.c_str(), n,
                o.lattice == "D2Q9" ? 2 : 3, world.size(), omp_get_max_threads());
    std::printf("  backend: %s\n", why.c_str());
    std::printf("  copy ceiling: %s, %.1f MB per array per rank: %.3g GB/s (16 B per element)\n", copy_how.c_str(),
                arrays.bytes() / 2 / world.size() / 1e6, copy_bw / 1e9);
    std::printf("  best of %d rounds of %ld steps (after 2 warm-up steps)\n\n", o.repeats, steps);
    std::printf("  %-9s %-6s %10s %10s %12s %12s %8s\n", "case", "store", "step ms", "MLUPS", "B/cell", "GB/s", "ratio");
    double worst = 1e30;
    for (const Row& r : rows_out) {
      const double mlups = cells / r.step / 1e6;
      const double bw = cells * r.bytes_per_cell / r.step;
      worst = std::min(worst, bw / copy_bw);
      std::printf("  %-9s %-6s %10.3f %10.1f %12.0f %12.3f %8.3f\n", r.kase.c_str(), r.precision.c_str(), r.step * 1e3,
                  mlups, r.bytes_per_cell, bw / 1e9, bw / copy_bw);
    }
    if (!cuda)
      std::printf("\n  lowest effective bandwidth / copy bandwidth = %.3f, host target >= %.2f: %s\n", worst, kHostTarget,
                  worst >= kHostTarget ? "PASS" : "BELOW TARGET");
    else
      std::printf("\n  GPU targets (issue #4): D3Q19 fp32 >= 27000 MLUPS, fp16 >= 40000 MLUPS on one H200\n");
  }
  release_backend(ex);
  return 0;
}

}  // namespace cumulus::bench

int main(int argc, char** argv) {
  return cumulus::bench::run_benchmark(argc, argv, "cumulus_bench_lbm", cumulus::bench::bench_main);
}
