// Checkpoint and output throughput, as ratios to ceilings measured in the same run:
//  - checkpoint write (collective parallel HDF5 + flush + verify + rename) and restart read, in MB/s,
//    against one plain sequential write/read (fwrite + fsync / fread) of the same bytes;
//  - ParaView output (VTK pieces and XDMF) as a fraction of the step time at a typical cadence.
// Run at 1 and 2 ranks: mpirun -np 2 build/cumulus_bench_checkpoint
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "core/comm.hpp"
#include "core/config.hpp"
#include "core/log.hpp"
#include "core/strings.hpp"
#include "core/timers.hpp"
#include "io/checkpoint.hpp"
#include "io/output.hpp"
#include "solvers/model.hpp"

using namespace cumulus;

namespace {
double plain_write(const std::string& path, std::size_t bytes) {
  std::vector<char> buf(bytes, 1);
  const double t0 = wall_seconds();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw Error("cannot write " + path);
  std::fwrite(buf.data(), 1, bytes, f);
  std::fflush(f);
  ::fsync(::fileno(f));
  std::fclose(f);
  return wall_seconds() - t0;
}
double plain_read(const std::string& path, std::size_t bytes) {
  std::vector<char> buf(bytes);
  const double t0 = wall_seconds();
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw Error("cannot read " + path);
  const std::size_t got = std::fread(buf.data(), 1, bytes, f);
  std::fclose(f);
  if (got != bytes) throw Error("short read " + path);
  return wall_seconds() - t0;
}
template <class F>
double best_of(int n, F f) {
  double best = 1e300;
  for (int i = 0; i < n; ++i) best = std::min(best, f());
  return best;
}
}  // namespace

int main(int argc, char** argv) {
  MpiSession mpi(&argc, &argv);
  const Comm comm = Comm::world();
  Log::instance().set_rank(comm.rank());
  std::string cells = "512,512,64", dir = "/tmp/cumulus-bench-checkpoint";
  int repeats = 3, cadence = 100;
  for (int a = 1; a + 1 < argc; a += 2) {
    const std::string k = argv[a], v = argv[a + 1];
    if (k == "--cells") cells = v;
    else if (k == "--dir") dir = v;
    else if (k == "--repeats") repeats = std::stoi(v);
    else if (k == "--cadence") cadence = std::stoi(v);
  }
  try {
    std::filesystem::create_directories(dir);
    const SolverRegistry& reg = SolverRegistry::all();
    const std::string text = "solver = \"heat\"\n[run]\nend_step = 1\nbackend = \"host\"\n[heat]\ncells = [" + cells +
                             "]\ninitial = \"gaussian\"\n";
    Config cfg = parse_job_text(text, "checkpoint-bench", {},
                                [&](const std::string& s, Schema& sc) { reg.build_schema(s, sc); });
    const SolverEntry* e = reg.find("heat");
    e->check(cfg, comm.size());
    auto model = e->create(cfg, Context{comm, Exec::host(), dir});
    const StateDescription state = model->state().persistent();
    std::size_t bytes = 0;
    for (const auto& a : state.arrays) bytes += static_cast<std::size_t>(a.global_box.volume()) * a.ncomp * dtype_size(a.dtype);
    const double mb = bytes / 1e6;

    // Ceiling: one process writes (and reads) the same number of bytes sequentially.
    double t_plain_w = 0, t_plain_r = 0;
    if (comm.is_root()) {
      t_plain_w = best_of(repeats, [&] { return plain_write(dir + "/plain.bin", bytes); });
      t_plain_r = best_of(repeats, [&] { return plain_read(dir + "/plain.bin", bytes); });
      std::filesystem::remove(dir + "/plain.bin");
    }
    t_plain_w = comm.max(t_plain_w);
    t_plain_r = comm.max(t_plain_r);

    CheckpointWriter writer(dir + "/checkpoints", 1, comm);
    CheckpointMeta meta;
    meta.solver = "heat";
    meta.job = cfg.to_toml();
    meta.decomposition = state.decomposition;
    double t_ck_w = 1e300, t_ck_phase = 1e300, t_ck_r = 1e300;
    std::string path;
    for (int i = 0; i < repeats; ++i) {
      meta.step = i;
      TimerRegistry::instance().reset();
      comm.barrier();
      const double t0 = wall_seconds();
      path = writer.write(state, meta);
      t_ck_w = std::min(t_ck_w, comm.max(wall_seconds() - t0));
      t_ck_phase = std::min(t_ck_phase, comm.max(TimerRegistry::instance().snapshot()["checkpoint.write"].seconds));
      comm.barrier();
      const double t1 = wall_seconds();
      restore_checkpoint(path, state, comm);
      t_ck_r = std::min(t_ck_r, comm.max(wall_seconds() - t1));
    }

    if (comm.is_root()) std::printf("%s", TimerRegistry::instance().table(t_ck_w + t_ck_r).c_str());
    // Output cost against the step time, at one output every `cadence` steps.
    const double dt = model->preferred_dt();
    comm.barrier();
    const double s0 = wall_seconds();
    const int steps = 20;
    for (int i = 0; i < steps; ++i) model->advance(i * dt, dt);
    const double t_step = comm.max(wall_seconds() - s0) / steps;
    double t_vtk = 1e300, t_xdmf = 1e300;
    auto vtk = make_output_writer("vtk", dir, "bench", comm, -1);
    auto xdmf = make_output_writer("xdmf", dir, "bench", comm, -1);
    for (int i = 0; i < repeats; ++i) {
      comm.barrier();
      double t0 = wall_seconds();
      vtk->write(i, i * 1.0, state.geometry, state.arrays);
      t_vtk = std::min(t_vtk, comm.max(wall_seconds() - t0));
      comm.barrier();
      t0 = wall_seconds();
      xdmf->write(i, i * 1.0, state.geometry, state.arrays);
      t_xdmf = std::min(t_xdmf, comm.max(wall_seconds() - t0));
    }

    if (comm.is_root()) {
      std::printf("checkpoint benchmark: heat %s cells, %.1f MB of state, %d rank(s), best of %d, directory %s\n",
                  cells.c_str(), mb, comm.size(), repeats, dir.c_str());
      std::printf("%-46s %10s %10s %10s\n", "", "seconds", "MB/s", "ratio");
      std::printf("%-46s %10.4f %10.1f %10s\n", "ceiling: plain sequential write (fwrite+fsync)", t_plain_w, mb / t_plain_w, "1");
      std::printf("%-46s %10.4f %10.1f %10.2f\n", "checkpoint write, data phase (collective HDF5)", t_ck_phase,
                  mb / t_ck_phase, t_plain_w / t_ck_phase);
      std::printf("%-46s %10.4f %10.1f %10.2f\n", "checkpoint total (write+flush+verify+rename)", t_ck_w, mb / t_ck_w,
                  t_plain_w / t_ck_w);
      std::printf("%-46s %10.4f %10.1f %10s\n", "ceiling: plain sequential read (fread)", t_plain_r, mb / t_plain_r, "1");
      std::printf("%-46s %10.4f %10.1f %10.2f\n", "restart read (collective HDF5 + checksums)", t_ck_r, mb / t_ck_r,
                  t_plain_r / t_ck_r);
      std::printf("target: checkpoint data phase and restart read >= 0.7 of the ceilings: %s / %s\n",
                  t_plain_w / t_ck_phase >= 0.7 ? "PASS" : "BELOW TARGET",
                  t_plain_r / t_ck_r >= 0.7 ? "PASS" : "BELOW TARGET");
      std::printf("output cost, one output every %d steps (step %.4f s): vtk %.4f s = %.1f%% of step time, "
                  "xdmf %.4f s = %.1f%%\n",
                  cadence, t_step, t_vtk, 100 * t_vtk / (cadence * t_step), t_xdmf, 100 * t_xdmf / (cadence * t_step));
    }
    model.reset();
    if (comm.is_root()) std::filesystem::remove_all(dir);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
