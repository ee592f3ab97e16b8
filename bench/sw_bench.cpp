// Kernel source: compiled by nvcc in a CUDA build, by g++ otherwise (the copy ceiling's kernels).
//
// cumulus_bench_sw: the shallow-water core's throughput on the cubed sphere against a copy-bandwidth
// ceiling measured in the same process, on the same backend.
//   (a) STREAM-style copy b[i] = a[i] (16 B counted per element) on two arrays as large together as
//       the solver's fields (48 doubles per cell), best of --repeats.
//   (b) ShallowWaterModel::advance() (one RK4 step: 4 stages of ghost fill, Laplacian, point values,
//       face fluxes, the exact panel-edge outflow sum, tendency, RK update) on the Galewsky jet:
//       cell updates/s, and two bandwidth figures:
//         kernel traffic: the bytes the kernels must read and write per cell and step (counted per
//           kernel in docs/shallow-water.md: 348 doubles with hyperviscosity, 272 without) over the
//           step time: how close the kernels run to the memory system's limit. Target >= 0.6 (host),
//           >= 0.7 (GPU, C1024).
//         fused minimum: 22 doubles per stage (state, stage, accumulator in and out, depth of the
//           topography and area), what a single fused kernel per stage would move: how much a fused
//           design could still gain.
// A benchmark, not a test: prints PASS or BELOW TARGET and exits 0 either way.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench/copy_ceiling.hpp"
#include "core/comm.hpp"
#include "mesh/cubed_sphere.hpp"
#include "core/config.hpp"
#include "core/exec.hpp"
#include "core/strings.hpp"
#include "core/timers.hpp"
#include "solvers/model.hpp"

namespace cumulus::bench {

struct Options {
  std::string backend = "auto";
  long resolution = 0;  // 0: 384 host, 1024 cuda
  long tiles = 1;
  long steps = 0;
  long warmup = 2;
  int repeats = 3;
  double hv_time = 6 * 3600.0;
};

const char* kHelp =
    "cumulus_bench_sw: shallow-water cell updates/s and bandwidth against a copy ceiling measured in the same run\n"
    "  --backend auto|host|cuda   where kernels run (default auto)\n"
    "  --resolution N             cubed sphere C<N> (default 384 host (its fields exceed the caches), 1024 cuda)\n"
    "  --tiles T                  T x T tiles per panel (default 1; more for more ranks)\n"
    "  --steps N                  timed RK4 steps per round (default 10 host, 100 cuda)\n"
    "  --warmup N                 untimed steps first (default 2)\n"
    "  --repeats N                rounds of (one copy, N steps), best kept (default 3)\n"
    "  --no-hyperviscosity        without the del^4 term (no Laplacian passes)\n";

Options parse_options(int argc, char** argv, bool* help) {
  Options o;
  *help = false;
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    auto next = [&]() -> std::string {
      if (a + 1 >= argc) usage_error(arg + " needs a value");
      return argv[++a];
    };
    if (arg == "-h" || arg == "--help") *help = true;
    else if (arg == "--backend") o.backend = next();
    else if (arg == "--resolution") o.resolution = parse_long(arg, next(), 8);
    else if (arg == "--tiles") o.tiles = parse_long(arg, next(), 1);
    else if (arg == "--steps") o.steps = parse_long(arg, next(), 1);
    else if (arg == "--warmup") o.warmup = parse_long(arg, next(), 0);
    else if (arg == "--repeats") o.repeats = static_cast<int>(parse_long(arg, next(), 1));
    else if (arg == "--no-hyperviscosity") o.hv_time = 0;
    else usage_error("unknown option " + arg);
  }
  if (o.backend != "auto" && o.backend != "host" && o.backend != "cuda")
    usage_error("--backend " + o.backend + ": expected auto, host or cuda");
  return o;
}

std::unique_ptr<Model> make_sw(const Comm& comm, const Exec& ex, long n, long tiles, double hv_time) {
  const std::string text = strprintf(
      "solver = \"shallow_water\"\n[run]\nend_time = 1e9\nbackend = \"%s\"\n"
      "[shallow_water]\ncase = \"galewsky\"\nresolution = %ld\ntiles = [%ld, %ld]\nhyperviscosity_time = %.17g\n",
      to_string(ex.backend()), n, tiles, tiles, hv_time);
  const SolverRegistry& reg = SolverRegistry::all();
  Config cfg = parse_job_text(text, "cumulus_bench_sw", {}, [&](const std::string& s, Schema& sc) { reg.build_schema(s, sc); });
  const SolverEntry* entry = reg.find("shallow_water");
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
  const long n = o.resolution > 0 ? o.resolution : (cuda ? 1024 : 384);
  const long steps = o.steps > 0 ? o.steps : (cuda ? 100 : 10);
  std::unique_ptr<Model> model = make_sw(world, ex, n, o.tiles, o.hv_time);
  const double cells = model->work_per_step();
  // Copy arrays as large together as the solver's working set (about 48 doubles per cell with the
  // ghost ring: state, RK stage and accumulator, tendency, point values, Laplacian, metric, faces),
  // so that the ceiling and the solver stream from the same level of the memory hierarchy.
  const long ntiles = 6 * o.tiles * o.tiles, tn = n / o.tiles;
  const long mine = ntiles / world.size() + (world.rank() < ntiles % world.size() ? 1 : 0);
  const int side = static_cast<int>(tn) + 2 * kCubeGhost;
  const Box alloc(0, 0, 0, side, side, static_cast<int>(24 * mine));
  CopyArrays arrays(ex, world, alloc);
  const std::vector<std::string> ways = cuda ? std::vector<std::string>{"kernel", "memcpy"} : std::vector<std::string>{"omp"};

  double t = 0;
  const double dt = model->preferred_dt();
  for (long s = 0; s < o.warmup; ++s, t += dt) model->advance(t, dt);
  std::map<std::string, double> copy_best;
  for (const auto& w : ways) copy_best[w] = arrays.run(w);
  double best = 1e30;
  std::map<std::string, double> per_step;
  for (int r = 0; r < o.repeats; ++r) {
    for (const auto& w : ways) copy_best[w] = std::min(copy_best[w], arrays.run(w));
    ex.synchronize();
    world.barrier();
    TimerRegistry::instance().reset();
    const double t0 = wall_seconds();
    for (long s = 0; s < steps; ++s, t += dt) model->advance(t, dt);
    ex.synchronize();
    const double sec = world.max(wall_seconds() - t0) / static_cast<double>(steps);
    if (sec < best) {
      best = sec;
      per_step.clear();
      for (const auto& [label, stat] : TimerRegistry::instance().snapshot()) per_step[label] = stat.seconds / steps;
    }
  }
  arrays.verify();
  double copy_seconds = 1e30;
  for (const auto& [w, sec] : copy_best) copy_seconds = std::min(copy_seconds, sec);
  double mass_change = 0;
  for (const auto& [k, v] : model->diagnostics(t))
    if (k == "mass_change") mass_change = v;

  if (world.is_root()) {
    const double copy_bw = arrays.bytes() / copy_seconds;
    const double ups = cells / best;
    const double kernel_doubles = o.hv_time > 0 ? 348.0 : 272.0;
    const double kernel_bw = ups * kernel_doubles * 8.0, fused_bw = ups * 88.0 * 8.0;
    const double target = cuda ? 0.7 : 0.6;
    std::printf("cumulus_bench_sw\n");
    std::printf("  ranks %d, OpenMP threads per rank %d, backend: %s\n", world.size(), omp_get_max_threads(), why.c_str());
    std::printf("  %s\n", model->describe().c_str());
    std::printf("  best of %d rounds, each: one copy, then %ld RK4 steps (after %ld warm-up steps)\n\n", o.repeats, steps,
                o.warmup);
    std::printf("  %-50s %14s %14s %8s\n", "figure", "measured", "ceiling", "ratio");
    std::printf("  %-50s %14s\n", "(a) copy bandwidth, 16 B/element, all ranks", si(copy_bw, "B/s").c_str());
    std::printf("  %-50s %14s\n", "(b) RK4 step time", si(best * 1e3, "ms").c_str());
    std::printf("  %-50s %14s\n", "    cell updates/s (one RK4 step per cell)", si(ups, "cells/s").c_str());
    std::printf("  %-50s %14s %14s %8.3f\n", strprintf("    kernel traffic, %.0f B/cell-step", kernel_doubles * 8).c_str(),
                si(kernel_bw, "B/s").c_str(), si(copy_bw, "B/s").c_str(), kernel_bw / copy_bw);
    std::printf("  %-50s %14s %14s %8.3f\n", "    fused minimum, 704 B/cell-step", si(fused_bw, "B/s").c_str(),
                si(copy_bw, "B/s").c_str(), fused_bw / copy_bw);
    std::printf("\n  where rank 0's step went (TimerRegistry, best round):\n");
    std::vector<std::pair<std::string, double>> rows(per_step.begin(), per_step.end());
    std::sort(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.second > b.second; });
    for (auto& [label, sec] : rows)
      std::printf("    %-30s %10.3f ms %6.1f%%\n", label.c_str(), sec * 1e3, 100 * sec / best);
    std::printf("\n  sanity: relative mass change after %ld steps: %.3g\n", o.warmup + o.repeats * steps, mass_change);
    std::printf("\n  kernel-traffic bandwidth / copy bandwidth = %.3f, target >= %.2f: %s\n", kernel_bw / copy_bw, target,
                kernel_bw / copy_bw >= target ? "PASS" : "BELOW TARGET");
  }
  release_backend(ex);
  return 0;
}

}  // namespace cumulus::bench

int main(int argc, char** argv) {
  return cumulus::bench::run_benchmark(argc, argv, "cumulus_bench_sw", cumulus::bench::bench_main);
}
