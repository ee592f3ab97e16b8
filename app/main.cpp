// The cumulus command line: run, check, info, keys. Turns errors into the exit statuses of
// DESIGN.md: 0 done, 2 bad input, 3 blow-up, 75 stopped by signal or wall time, 1 anything else.
#include <hdf5.h>
#include <omp.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <new>

#include "core/comm.hpp"
#include "core/config.hpp"
#include "core/exec.hpp"
#include "core/log.hpp"
#include "core/signals.hpp"
#include "core/strings.hpp"
#include "core/timers.hpp"
#include "cumulus/version.hpp"
#include "io/checkpoint.hpp"
#include "io/diagnostics_writer.hpp"
#include "io/h5md.hpp"
#include "io/output.hpp"
#include "io/run_status.hpp"
#include "app/submit.hpp"
#include "io/run_directory.hpp"
#include "solvers/model.hpp"
#include "solvers/simulation.hpp"

using namespace cumulus;

namespace {

struct RunOptions {
  std::string job;
  std::vector<std::string> sets;
  std::string backend;
  std::string walltime;
  std::string restart;
  bool walltime_given = false;
};

// "3600", "90.5", "01:00:00" or "1:30" -> seconds.
double parse_walltime(const std::string& s) {
  double total = 0;
  std::size_t start = 0;
  int parts = 0;
  while (true) {
    const auto colon = s.find(':', start);
    const std::string part = s.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    char* end = nullptr;
    const double v = std::strtod(part.c_str(), &end);
    if (part.empty() || *end != '\0' || !(v >= 0 && v < 1e9))
      throw InputError("--walltime " + s + ": expected seconds or HH:MM:SS");
    total = total * 60 + v;
    ++parts;
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  if (parts > 3) throw InputError("--walltime " + s + ": expected seconds or HH:MM:SS");
  return total;
}

Config load_job(const RunOptions& o) {
  const auto& reg = SolverRegistry::all();
  std::vector<std::string> overrides = o.sets;
  if (!o.backend.empty()) {
    if (o.backend != "auto" && o.backend != "cuda" && o.backend != "host")
      throw InputError("--backend " + o.backend + ": expected auto, cuda or host");
    overrides.push_back("run.backend=\"" + o.backend + "\"");
  }
  if (o.walltime_given && o.walltime.empty()) throw InputError("--walltime: expected seconds or HH:MM:SS, got nothing");
  if (!o.walltime.empty()) overrides.push_back("run.walltime=" + strprintf("%.17g", parse_walltime(o.walltime)));
  Config cfg = parse_job(o.job, overrides, [&](const std::string& solver, Schema& s) { reg.build_schema(solver, s); });
  // Messages about these keys name the option the user typed.
  if (!o.backend.empty()) cfg.set("run.backend", cfg.get<std::string>("run.backend"), "--backend " + o.backend);
  if (!o.walltime.empty()) cfg.set("run.walltime", cfg.get<double>("run.walltime"), "--walltime " + o.walltime);
  const SolverEntry& entry = *reg.find(cfg.get<std::string>("solver"));
  check_common_keys(cfg, entry);
  entry.check(cfg, Comm::world().size());
  // The backend asked for must exist here (selecting it, which creates streams, comes later).
  const std::string backend = cfg.get<std::string>("run.backend");
  if (backend == "cuda" && (!cuda_built() || cuda_device_count() == 0))
    cfg.fail("run.backend", cuda_built() ? "backend \"cuda\" requested, but no CUDA device is visible to this process"
                                         : "backend \"cuda\" requested, but this binary was built without CUDA");
  return cfg;
}

struct RestartCandidate {
  std::string path;
  CheckpointMeta meta;
};

// The checkpoints a restart may use, newest first, each already checked against this job: same
// solver, and every key that may not change on restart unchanged (exit 2 otherwise). Damaged files
// are skipped under `auto` (reported in `notes`) and refused when named explicitly.
std::vector<RestartCandidate> restart_candidates(const std::string& restart, const std::string& ckpt_dir,
                                                 const Config& cfg, std::vector<std::string>& notes) {
  std::vector<RestartCandidate> out;
  if (restart.empty()) return out;
  const bool automatic = restart == "auto";
  const std::vector<std::string> files = automatic ? list_checkpoints(ckpt_dir) : std::vector<std::string>{restart};
  const auto& reg = SolverRegistry::all();
  for (const auto& f : files) {
    CheckpointMeta meta;
    try {
      meta = read_checkpoint_meta(f, Comm::world());
    } catch (const Error& e) {
      if (!automatic) throw InputError("--restart " + f + ": " + e.what());
      notes.push_back("skipping damaged checkpoint " + f + ": " + e.what());
      continue;
    }
    const std::string solver = cfg.get<std::string>("solver");
    if (meta.solver != solver)
      throw InputError(f + ": checkpoint of solver '" + meta.solver + "', but this job runs '" + solver + "'");
    Schema schema;
    reg.build_schema(solver, schema);
    Config then;
    try {
      then = parse_job_text(meta.job, f + " (stored job)", {},
                            [&](const std::string& s, Schema& sc) { reg.build_schema(s, sc); });
    } catch (const InputError& e) {
      throw InputError(f + ": the job stored in the checkpoint does not fit this version of cumulus: " + e.what());
    }
    const auto diffs = restart_differences(cfg, then, schema);
    if (!diffs.empty()) {
      std::string msg = f + ": the checkpoint was written by a different job; only keys marked 'may change on "
                            "restart' may differ:";
      for (const auto& d : diffs) msg += "\n  " + d;
      throw InputError(msg);
    }
    out.push_back({f, meta});
  }
  return out;
}

int run_command(const RunOptions& o) {
  const Comm world = Comm::world();
  // Everything that can be wrong with the input is found here, before any file is written.
  Config cfg = load_job(o);
  std::string why;
  Exec exec;
  try {
    exec = select_backend(cfg.get<std::string>("run.backend"), world.local_rank(), &why);
  } catch (const InputError& e) {
    cfg.fail("run.backend", e.what());
  }
  const std::string run_dir = run_directory_for(o.job, cfg.get<std::string>("run.directory"));
  if (std::filesystem::exists(run_dir) && !std::filesystem::is_directory(run_dir))
    cfg.fail("run.directory", "'" + run_dir + "' exists and is not a directory");
  const std::string ckpt_dir = run_dir + "/" + cfg.get<std::string>("checkpoint.directory");
  std::vector<std::string> notes;
  const std::vector<RestartCandidate> candidates = restart_candidates(o.restart, ckpt_dir, cfg, notes);

  std::string name = cfg.get<std::string>("run.name");
  if (name.empty()) name = run_directory_for(o.job, "");
  world.on_root([&] {
    create_run_directory(run_dir);
    write_file_atomic(run_dir + "/job.resolved.toml", cfg.to_toml());
  });
  Log::instance().open_file(run_dir + "/cumulus.log");
  install_stop_signal_handlers();

  log_info(strprintf("cumulus %s (commit %s, %s build) run '%s' from %s", build::version, build::git_commit,
                     build::build_type, name.c_str(), o.job.c_str()));
  log_info(strprintf("ranks: %d; backend: %s; OpenMP threads per rank: %d", world.size(), why.c_str(),
                     omp_get_max_threads()));
  log_info("run directory: " + run_dir);
  log_info("resolved job (also in job.resolved.toml):\n" + cfg.to_toml());
  for (const auto& n : notes) log_warn(n);

  const SolverEntry* entry = SolverRegistry::all().find(cfg.get<std::string>("solver"));
  Context ctx{world, exec, run_dir};
  std::unique_ptr<Model> model;
  try {
    model = entry->create(cfg, ctx);
  } catch (const std::bad_alloc&) {
    // check() estimated the memory and let the job through, but an allocation of the set-up failed
    // all the same (other jobs on the node, an estimate short of the truth): say what was running.
    throw Error(strprintf("out of host memory while setting up the %s model on rank %d of %d (std::bad_alloc); "
                          "`cumulus check` prints the estimate per rank: use more ranks or a smaller job",
                          entry->name.c_str(), world.rank(), world.size()));
  }
  log_info(model->describe());

  // Restart: the newest candidate whose data verify.
  long resume_step = -1;
  double resume_time = -1;
  if (!o.restart.empty()) {
    const StateDescription state = model->state().persistent();
    for (const auto& c : candidates) {
      const std::string mismatch = checkpoint_layout_mismatch(c.path, state, world);
      if (!mismatch.empty()) throw InputError(c.path + ": incompatible with this job: " + mismatch);
      try {
        restore_checkpoint(c.path, state, world);
      } catch (const Error& e) {
        if (o.restart != "auto") throw InputError("--restart " + c.path + ": " + e.what());
        log_warn("skipping damaged checkpoint " + c.path + ": " + e.what());
        continue;
      }
      resume_step = c.meta.step;
      resume_time = c.meta.time;
      log_info(strprintf("restarted from %s: step %ld, time %.17g (written on %lld rank(s), commit %s)",
                         c.path.c_str(), resume_step, resume_time, static_cast<long long>(c.meta.nranks),
                         c.meta.git_commit.c_str()));
      break;
    }
    if (resume_step < 0) log_info("no usable checkpoint in " + ckpt_dir + ": starting fresh");
  }

  Simulation sim(*model, ctx, simulation_settings(cfg));
  auto status = std::make_shared<RunStatus>(run_dir, world.is_root());
  status->ranks = world.size();
  status->backend = to_string(exec.backend());
  status->work_unit = model->work_unit();
  if (resume_step >= 0) {
    sim.resume(resume_step, resume_time);
    status->restarts = RunStatus::previous_restarts(run_dir) + 1;
    status->step = resume_step;
    status->time = resume_time;
    if (sim.done()) {
      // A completed run is not run again (a scheduler may requeue a job that had finished).
      log_info(strprintf("the run had already reached its end (step %ld, time %.6g): nothing to do", resume_step,
                         resume_time));
      status->state = "completed";
      status->restarts -= 1;  // nothing was restarted
      status->write();
      model.reset();
      release_backend(exec);
      return 0;
    }
  }
  status->write();
  sim.on_progress = [status, &exec](const Progress& p) {
    status->step = p.step;
    status->time = p.time;
    status->throughput = p.rate;
    status->eta_seconds = p.eta;
    status->device_memory_bytes = device_memory_used(exec);
    status->write();
  };

  // Writers, checkpoint first: at a stop it is the one that matters.
  const bool want_ckpt = cfg.get<long>("checkpoint.every_steps") > 0 || cfg.get<double>("checkpoint.every_time") > 0 ||
                         cfg.get<double>("checkpoint.every_seconds") > 0 || cfg.get<bool>("checkpoint.at_exit");
  if (want_ckpt) {
    auto ckw = std::make_shared<CheckpointWriter>(ckpt_dir, cfg.get<int>("checkpoint.keep"), world);
    Writer w;
    w.name = "checkpoint";
    w.schedule.every_steps = cfg.get<long>("checkpoint.every_steps");
    w.schedule.every_time = cfg.get<double>("checkpoint.every_time");
    w.schedule.every_seconds = cfg.get<double>("checkpoint.every_seconds");
    w.at_exit = cfg.get<bool>("checkpoint.at_exit");
    const std::string job = cfg.to_toml(), solver = cfg.get<std::string>("solver");
    w.write = [ckw, job, solver, &model, world, status](long step, double time) {
      const double t0 = wall_seconds();
      const StateDescription state = model->state().persistent();
      CheckpointMeta meta;
      meta.solver = solver;
      meta.step = step;
      meta.time = time;
      meta.job = job;
      meta.decomposition = state.decomposition;
      const std::string path = ckw->write(state, meta);
      const double seconds = wall_seconds() - t0;
      log_info(strprintf("checkpoint %s written and verified in %.2f s", path.c_str(), seconds));
      status->checkpoint_step = step;
      status->checkpoint_path = path;
      status->checkpoint_unix_time = unix_seconds();
      status->checkpoint_seconds = seconds;
      status->step = step;
      status->time = time;
      status->write();
    };
    sim.add_writer(w);
  }
  const std::string format = cfg.get<std::string>("output.format");
  if (format != "none") {
    std::shared_ptr<OutputWriter> ow = make_output_writer(format, run_dir, name, world, resume_time);
    const auto fields = cfg.get<std::vector<std::string>>("output.fields");
    Writer w;
    w.name = "output";
    w.schedule.every_steps = cfg.get<long>("output.every_steps");
    w.schedule.every_time = cfg.get<double>("output.every_time");
    w.at_start = w.at_exit = true;
    w.write = [ow, fields, &model](long step, double time) {
      StateDescription state = model->state();
      std::vector<GridArray> chosen;
      for (auto& a : state.arrays) {
        bool want = a.in_output && fields.empty();
        for (const auto& f : fields) want = want || f == a.name;
        if (want) chosen.push_back(a);
      }
      ow->write(step, time, state.geometry, chosen);
    };
    sim.add_writer(w);
    log_info("output: " + ow->series_path() + " (open it in ParaView)");
  }
  if (cfg.get<long>("trajectory.every_steps") > 0 || cfg.get<double>("trajectory.every_time") > 0) {
    auto tw = std::make_shared<H5mdWriter>(run_dir, world, resume_time);
    Writer w;
    w.name = "trajectory";
    w.schedule.every_steps = cfg.get<long>("trajectory.every_steps");
    w.schedule.every_time = cfg.get<double>("trajectory.every_time");
    w.at_start = w.at_exit = true;
    w.write = [tw, &model](long step, double time) { tw->write(step, time, model->state()); };
    sim.add_writer(w);
    log_info("trajectory: " + tw->path() + " (H5MD)");
  }
  auto diag = std::make_shared<DiagnosticsWriter>(run_dir + "/diagnostics.csv", world.is_root(), resume_step);
  Writer w;
  w.name = "diagnostics";
  w.schedule.every_steps = cfg.get<long>("diagnostics.every_steps");
  w.schedule.every_time = cfg.get<double>("diagnostics.every_time");
  w.at_start = w.at_exit = true;
  w.write = [diag, &model](long step, double time) { diag->write(step, time, model->diagnostics(time)); };
  sim.add_writer(w);

  ExitCode code;
  try {
    code = sim.run();
  } catch (const std::exception& e) {
    // Any exception, not only the project's: an allocation that fails (std::bad_alloc) must also
    // leave status.json saying "failed", so that a scheduler or a user polling it is not misled.
    const bool ours = dynamic_cast<const Error*>(&e) != nullptr;
    const std::string reason = ours ? e.what()
                               : dynamic_cast<const std::bad_alloc*>(&e) ? "out of host memory (std::bad_alloc)"
                                                                         : std::string("unexpected error: ") + e.what();
    status->state = "failed";
    status->reason = reason;
    status->step = sim.step();
    status->time = sim.time();
    status->write();
    if (ours) throw;
    throw Error(reason);
  }
  exec.synchronize();
  const double seconds = sim.run_seconds();
  const std::string table = TimerRegistry::instance().table(seconds);
  log_info(table);
  const auto diags = model->diagnostics(sim.time());
  std::string summary;
  for (auto& [k, v] : diags) summary += strprintf(" %s=%.6g", k.c_str(), v);
  log_info("final diagnostics:" + summary);
  status->step = sim.step();
  status->time = sim.time();
  status->state = code == ExitCode::stopped ? "preempted" : "completed";
  status->reason = code == ExitCode::stopped ? "stopped by a signal or the wall-time limit; resume with --restart auto" : "";
  status->eta_seconds = code == ExitCode::stopped ? -1 : 0;
  status->write();
  if (code == ExitCode::stopped)
    log_info(strprintf("stopped at step %ld, time %.6g after %.1f s: exit 75%s", sim.step(), sim.time(), seconds,
                       want_ckpt && cfg.get<bool>("checkpoint.at_exit") ? "; resume with --restart auto" : ""));
  else
    log_info(strprintf("done: %ld steps, time %.6g, %.1f s", sim.step(), sim.time(), seconds));
  model.reset();
  release_backend(exec);
  return static_cast<int>(code);
}

struct SubmitOptions {
  std::string scheduler, time, partition, account, launcher, image;
  long nodes = -1, gpus = -1, ranks = -1;
  std::vector<std::string> extra, modules;
  bool dry_run = false;
};

std::string toml_string(const std::string& s) { return double_quoted(s); }

int submit_command_cli(RunOptions ro, const SubmitOptions& so) {
  // Options become overrides of the [job] keys, checked like any key, and named as typed.
  std::vector<std::pair<std::string, std::string>> opts;  // key, option text
  auto add = [&](const std::string& key, const std::string& value, const std::string& option) {
    ro.sets.push_back(key + "=" + value);
    opts.push_back({key, option});
  };
  if (!so.scheduler.empty()) add("job.scheduler", toml_string(so.scheduler), "--scheduler " + so.scheduler);
  if (so.nodes >= 0) add("job.nodes", std::to_string(so.nodes), "--nodes " + std::to_string(so.nodes));
  if (so.gpus >= 0) add("job.gpus_per_node", std::to_string(so.gpus), "--gpus-per-node " + std::to_string(so.gpus));
  if (so.ranks >= 0) add("job.ranks_per_node", std::to_string(so.ranks), "--ranks-per-node " + std::to_string(so.ranks));
  if (!so.time.empty()) add("job.time", toml_string(so.time), "--time " + so.time);
  if (!so.partition.empty()) add("job.partition", toml_string(so.partition), "--partition " + so.partition);
  if (!so.account.empty()) add("job.account", toml_string(so.account), "--account " + so.account);
  if (!so.launcher.empty()) add("job.launcher", toml_string(so.launcher), "--launcher " + so.launcher);
  if (!so.image.empty()) add("job.image", toml_string(so.image), "--image " + so.image);
  auto list = [&](const std::vector<std::string>& v) {
    std::string s = "[";
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + toml_string(v[i]);
    return s + "]";
  };
  if (!so.extra.empty()) add("job.extra", list(so.extra), "--extra");
  if (!so.modules.empty()) add("job.modules", list(so.modules), "--module");
  Config cfg = load_job(ro);
  for (const auto& [key, option] : opts) {
    const auto& e = cfg.entries().at(key);
    cfg.set(key, e.value, option);
  }
  if (!Comm::world().is_root()) return 0;
  SubmitRequest req;
  req.job_file = ro.job;
  std::error_code ec;
  req.binary = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  req.dry_run = so.dry_run;
  return submit_command(cfg, req);
}

int inspect_command(const std::string& file) {
  if (!Comm::world().is_root()) return 0;
  try {
    std::cout << inspect_hdf5(file);
  } catch (const Error& e) {
    throw InputError(file + ": " + e.what());
  }
  return 0;
}

int check_command(const RunOptions& o) {
  Config cfg = load_job(o);
  if (Comm::world().is_root()) {
    std::cout << o.job << ": OK (" << cfg.get<std::string>("solver") << ", " << Comm::world().size()
              << " rank(s)); resolved job:\n"
              << cfg.to_toml();
  }
  return 0;
}

int info_command() {
  if (!Comm::world().is_root()) return 0;
  unsigned maj = 0, min = 0, rel = 0;
  H5get_libversion(&maj, &min, &rel);
  std::printf("cumulus %s\n", build::version);
  std::printf("git commit:      %s\n", build::git_commit);
  std::printf("build type:      %s\n", build::build_type);
  std::printf("backends built:  host (OpenMP, %d threads)%s\n", omp_get_max_threads(), cuda_built() ? ", cuda" : "");
  std::string why;
  const int n = cuda_device_count(&why);
  std::printf("CUDA devices:    %d%s\n", n, n > 0 ? "" : (" (" + why + ")").c_str());
  for (int d = 0; d < n; ++d) std::printf("  device %d: %s\n", d, cuda_device_name(d).c_str());
  std::printf("MPI library:     %s\n", Comm::library_version().c_str());
  std::printf("MPI CUDA-aware:  %s\n", Comm::cuda_aware() ? "yes" : "no (device halos staged through pinned host memory)");
  std::printf("HDF5:            %u.%u.%u (parallel)\n", maj, min, rel);
  std::printf("solvers:        ");
  for (auto& s : SolverRegistry::all().names()) std::printf(" %s", s.c_str());
  std::printf("\n");
  return 0;
}

int keys_command(const std::string& solver) {
  Schema s;
  SolverRegistry::all().build_schema(solver, s);
  if (Comm::world().is_root()) std::cout << s.markdown();
  return 0;
}

int dispatch(int argc, char** argv) {
  CLI::App app{"cumulus: scientific simulations on GPU servers (lattice Boltzmann, molecular dynamics, climate)"};
  app.require_subcommand(1);
  RunOptions ro;
  auto add_job_options = [&](CLI::App* sub) {
    sub->add_option("job", ro.job, "Job file (TOML)")->required();
    sub->add_option("--set", ro.sets, "Override a key: section.key=value (repeatable)")->take_all();
    sub->add_option("--backend", ro.backend, "auto, cuda or host (overrides run.backend)");
    sub->add_option("--walltime", ro.walltime, "Wall-time limit, seconds or HH:MM:SS (overrides run.walltime)")
        ->each([&](const std::string&) { ro.walltime_given = true; });
  };
  CLI::App* run = app.add_subcommand("run", "Run a job");
  add_job_options(run);
  run->add_option("--restart", ro.restart,
                  "auto (the newest checkpoint in the run directory that verifies; none: a fresh start) or a "
                  "checkpoint file");
  CLI::App* check = app.add_subcommand("check", "Check a job file without running it");
  add_job_options(check);
  app.add_subcommand("info", "Version, build, backends, devices, MPI and HDF5");
  SubmitOptions so;
  CLI::App* submit = app.add_subcommand("submit", "Write a batch script (Slurm, PBS) or Job (Kubernetes) and submit it");
  add_job_options(submit);
  submit->add_option("--scheduler", so.scheduler, "slurm, pbs or kubernetes (job.scheduler)");
  submit->add_option("--nodes", so.nodes, "Nodes (job.nodes)");
  submit->add_option("--gpus-per-node", so.gpus, "GPUs per node, one rank each; 0: a CPU job (job.gpus_per_node)");
  submit->add_option("--ranks-per-node", so.ranks, "Ranks per node of a CPU job (job.ranks_per_node)");
  submit->add_option("--time", so.time, "Wall-time limit per allocation, HH:MM:SS (job.time)");
  submit->add_option("--partition", so.partition, "Partition or queue (job.partition)");
  submit->add_option("--account", so.account, "Account (job.account)");
  submit->add_option("--extra", so.extra, "A further scheduler option, e.g. --extra=--constraint=h100 (repeatable)");
  submit->add_option("--module", so.modules, "An environment module to load (repeatable)");
  submit->add_option("--launcher", so.launcher, "srun or mpirun (job.launcher)");
  submit->add_option("--image", so.image, "Container image (Kubernetes; job.image)");
  submit->add_flag("--dry-run", so.dry_run, "Write and print the script, do not submit");
  std::string inspect_file;
  CLI::App* inspect = app.add_subcommand("inspect", "What a checkpoint or output HDF5 file holds, checksums verified");
  inspect->add_option("file", inspect_file, "HDF5 file")->required();
  std::string solver;
  CLI::App* keys = app.add_subcommand("keys", "List every job key of a solver (Markdown)");
  keys->add_option("solver", solver, "Solver name")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = Comm::world().is_root() ? app.exit(e) : (e.get_exit_code() == 0 ? 0 : 1);
    return rc == 0 ? 0 : static_cast<int>(ExitCode::bad_input);
  }
  if (*run) return run_command(ro);
  if (*check) return check_command(ro);
  if (*keys) return keys_command(solver);
  if (*inspect) return inspect_command(inspect_file);
  if (*submit) return submit_command_cli(ro, so);
  return info_command();
}

}  // namespace

int main(int argc, char** argv) {
  MpiSession mpi(&argc, &argv);
  // At once: a scheduler's early warning (Slurm may send USR1 up to 30 s before the requested
  // margin) can arrive while a large restart is still being read; it must stop the run, not kill it.
  install_stop_signal_handlers();
  const Comm world = Comm::world();
  Log::instance().set_rank(world.rank());
  int code = 0;
  bool symmetric = true;  // raised identically on every rank (input errors, collective checks)
  try {
    code = dispatch(argc, argv);
  } catch (const Error& e) {
    code = static_cast<int>(e.code());
    symmetric = e.code() == ExitCode::bad_input || e.code() == ExitCode::blow_up;
    if (!symmetric || world.is_root()) Log::instance().error(e.what());
  } catch (const std::exception& e) {
    code = static_cast<int>(ExitCode::failure);
    symmetric = false;
    Log::instance().error(dynamic_cast<const std::bad_alloc*>(&e)
                              ? std::string("out of host memory (std::bad_alloc) outside any named allocation")
                              : std::string("unexpected: ") + e.what());
  }
  Log::instance().close_file();
  if (!symmetric && world.size() > 1) world.abort(code);
  return code;
}
