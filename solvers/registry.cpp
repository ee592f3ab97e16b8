#include "core/strings.hpp"
#include "solvers/heat/heat.hpp"
#include "solvers/lbm/lbm.hpp"
#include "solvers/md/md.hpp"
#include "solvers/shallow_water/shallow_water.hpp"
#include "solvers/model.hpp"

namespace cumulus {

const SolverEntry* SolverRegistry::find(const std::string& name) const {
  for (auto& e : entries_)
    if (e.name == name) return &e;
  return nullptr;
}

std::vector<std::string> SolverRegistry::names() const {
  std::vector<std::string> n;
  for (auto& e : entries_) n.push_back(e.name);
  return n;
}

const SolverRegistry& SolverRegistry::all() {
  static const SolverRegistry registry = [] {
    SolverRegistry r;
    // One explicit call per solver (no static-initialisation tricks): add new solvers here.
    heat::register_solver(r);
    lbm::register_solver(r);
    sw::register_solver(r);
    md::register_solver(r);
    return r;
  }();
  return registry;
}

void SolverRegistry::build_schema(const std::string& solver, Schema& schema) const {
  const SolverEntry* e = find(solver);
  if (!e) {
    std::string msg = "unknown solver \"" + solver + "\"";
    if (auto m = closest_match(solver, names()); !m.empty()) msg += "; did you mean \"" + m + "\"?";
    msg += " (solvers: ";
    for (auto& n : names()) msg += n + (n == names().back() ? ")" : ", ");
    throw InputError(msg);
  }
  declare_common_keys(schema, names());
  e->declare_keys(schema);
}

void declare_common_keys(Schema& s, const std::vector<std::string>& solver_names) {
  s.key("solver", ValueType::string, "Which solver runs this job").require().one_of(solver_names);
  s.key("run.name", ValueType::string, "Name of the run, used in logs (default: the job file's name without .toml)")
      .def(std::string())
      .restart_may_change();
  s.key("run.directory", ValueType::string,
        "Directory for everything the run writes (default: the job file's name without .toml, in the current "
        "directory)")
      .def(std::string())
      .restart_may_change();
  s.key("run.backend", ValueType::string,
        "Where kernels run: auto (CUDA when a device is visible, else host), cuda, or host")
      .def(std::string("auto"))
      .one_of({"auto", "cuda", "host"})
      .restart_may_change();
  s.key("run.end_step", ValueType::integer, "Stop after this many steps (0: no step limit)")
      .def(std::int64_t{0})
      .at_least(0)
      .restart_may_change();
  s.key("run.end_time", ValueType::real, "Stop at this simulated time (0: no time limit)")
      .def(0.0)
      .at_least(0)
      .unit("solver time unit")
      .restart_may_change();
  s.key("run.walltime", ValueType::real,
        "Stop (exit 75, after the exit writers) before this much wall time has passed (0: no limit)")
      .def(0.0)
      .at_least(0)
      .unit("s")
      .restart_may_change();
  s.key("run.progress_seconds", ValueType::real, "Wall time between progress lines")
      .def(10.0)
      .positive()
      .unit("s")
      .restart_may_change();
  s.key("run.health_every", ValueType::integer, "Steps between checks for non-finite values")
      .def(std::int64_t{100})
      .at_least(1)
      .restart_may_change();
  s.key("diagnostics.every_steps", ValueType::integer,
        "Steps between rows of diagnostics.csv (0: only the first and last step)")
      .def(std::int64_t{0})
      .at_least(0)
      .restart_may_change();
  s.key("diagnostics.every_time", ValueType::real,
        "Simulated time between rows of diagnostics.csv (0: by steps only)")
      .def(0.0)
      .at_least(0)
      .restart_may_change();

  s.key("checkpoint.every_steps", ValueType::integer, "Steps between checkpoints (0: not by steps)")
      .def(std::int64_t{0})
      .at_least(0)
      .restart_may_change();
  s.key("checkpoint.every_time", ValueType::real, "Simulated time between checkpoints (0: not by time)")
      .def(0.0)
      .at_least(0)
      .restart_may_change();
  s.key("checkpoint.every_seconds", ValueType::real,
        "Wall time between checkpoints (0: not by wall time); what bounds the work a preemption can lose")
      .def(0.0)
      .at_least(0)
      .unit("s")
      .restart_may_change();
  s.key("checkpoint.keep", ValueType::integer, "How many verified checkpoints to keep (older ones are deleted)")
      .def(std::int64_t{2})
      .at_least(1)
      .restart_may_change();
  s.key("checkpoint.at_exit", ValueType::boolean,
        "Also checkpoint when the run ends, is signalled or reaches its wall-time limit")
      .def(true)
      .restart_may_change();
  s.key("checkpoint.directory", ValueType::string, "Where checkpoints go, relative to the run directory")
      .def(std::string("checkpoints"))
      .restart_may_change();
  s.key("output.format", ValueType::string,
        "ParaView output: vtk (.vti pieces + .pvti + .pvd; .vtu + .pvtu surfaces for the cubed sphere), xdmf (one HDF5 file per step + .xmf), or none")
      .def(std::string("vtk"))
      .one_of({"vtk", "xdmf", "none"})
      .restart_may_change();
  s.key("output.every_steps", ValueType::integer,
        "Steps between outputs (0: not by steps; the first and last step always)")
      .def(std::int64_t{0})
      .at_least(0)
      .restart_may_change();
  s.key("output.every_time", ValueType::real, "Simulated time between outputs (0: not by time)")
      .def(0.0)
      .at_least(0)
      .restart_may_change();
  s.key("output.fields", ValueType::string_array, "Fields to write (empty: all the solver offers)")
      .def(std::vector<std::string>{})
      .restart_may_change();
  // [trajectory]: particle solvers' H5MD trajectory (io/h5md.hpp), beside the ParaView output.
  s.key("trajectory.every_steps", ValueType::integer,
        "Particle solvers: steps between frames of the H5MD trajectory run_dir/trajectory.h5md (0: not by steps; "
        "with either cadence set, the first and last step too)")
      .def(std::int64_t{0})
      .at_least(0)
      .restart_may_change();
  s.key("trajectory.every_time", ValueType::real, "Particle solvers: simulated time between H5MD frames (0: not by time)")
      .def(0.0)
      .at_least(0)
      .restart_may_change();

  // [job]: defaults for `cumulus submit`; command-line options override them.
  s.key("job.scheduler", ValueType::string, "Batch system for `cumulus submit`")
      .def(std::string("slurm"))
      .one_of({"slurm", "pbs", "kubernetes"})
      .restart_may_change();
  s.key("job.nodes", ValueType::integer, "Nodes to run on").def(std::int64_t{1}).at_least(1).restart_may_change();
  s.key("job.gpus_per_node", ValueType::integer, "GPUs per node, one rank each (0: a CPU job)")
      .def(std::int64_t{1})
      .at_least(0)
      .restart_may_change();
  s.key("job.ranks_per_node", ValueType::integer, "MPI ranks per node for a CPU job (0: one per GPU, or 1)")
      .def(std::int64_t{0})
      .at_least(0)
      .restart_may_change();
  s.key("job.time", ValueType::string, "Wall-time limit of one allocation, HH:MM:SS (the job requeues itself)")
      .def(std::string("01:00:00"))
      .restart_may_change();
  s.key("job.partition", ValueType::string, "Partition (Slurm) or queue (PBS); empty: the default")
      .def(std::string())
      .restart_may_change();
  s.key("job.account", ValueType::string, "Account to charge; empty: the default").def(std::string()).restart_may_change();
  s.key("job.extra", ValueType::string_array, "More scheduler options, each as on the command line (\"--constraint=h100\")")
      .def(std::vector<std::string>{})
      .restart_may_change();
  s.key("job.modules", ValueType::string_array, "Environment modules to load before the run")
      .def(std::vector<std::string>{})
      .restart_may_change();
  s.key("job.launcher", ValueType::string, "How ranks start: srun (Slurm, PMIx) or mpirun")
      .def(std::string("srun"))
      .one_of({"srun", "mpirun"})
      .restart_may_change();
  s.key("job.image", ValueType::string, "Container image with cumulus (Kubernetes)").def(std::string()).restart_may_change();
  s.key("job.signal_margin", ValueType::real,
        "Seconds before the time limit at which the job is told to checkpoint and stop (0: from the measured "
        "checkpoint time, at least 60)")
      .def(0.0)
      .at_least(0)
      .unit("s")
      .restart_may_change();
}

void check_common_keys(const Config& cfg, const SolverEntry& solver) {
  if (!solver.particles && (cfg.get<std::int64_t>("trajectory.every_steps") > 0 || cfg.get<double>("trajectory.every_time") > 0))
    cfg.fail(cfg.get<std::int64_t>("trajectory.every_steps") > 0 ? "trajectory.every_steps" : "trajectory.every_time",
             "H5MD trajectories are for particle solvers (md); " + solver.name + " writes grids: use [output]");
  if (cfg.get<std::int64_t>("run.end_step") == 0 && cfg.get<double>("run.end_time") == 0)
    cfg.fail("run.end_step", "the run has no end: set run.end_step or run.end_time (or both)");
  for (const auto& f : cfg.get<std::vector<std::string>>("output.fields")) {
    bool known = false;
    for (const auto& o : solver.output_fields) known = known || o == f;
    if (!known) {
      std::string msg = "no field named \"" + f + "\" in solver " + solver.name + " (fields:";
      for (const auto& o : solver.output_fields) msg += " " + o;
      msg += ")";
      if (auto m = closest_match(f, solver.output_fields); !m.empty()) msg += "; did you mean \"" + m + "\"?";
      cfg.fail("output.fields", msg);
    }
  }
}

}  // namespace cumulus
