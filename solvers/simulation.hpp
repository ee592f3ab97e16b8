#pragma once
// The time loop: owns the clock, the stop conditions (end step/time, wall-time limit, signals,
// blow-up) and the named writers and callbacks, each on its own schedule.
#include <functional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "solvers/model.hpp"

namespace cumulus {

// Every N steps, every T of simulated time, every W seconds of wall time (any combination;
// all zero: never, except at exit when the writer asks for it).
struct Schedule {
  long every_steps = 0;
  double every_time = 0;
  double every_seconds = 0;

  // Due by step count or simulated time (the same on every rank); remembers the time slot.
  // Wall-clock cadence is judged in Simulation::run_writers, by rank 0 for all ranks.
  bool due_by_clock(long step, double time);
  void start(double time, double wall);           // at the start of a run (or a restart)
  long last_time_slot = 0;
  double last_wall = 0;
};

struct Writer {
  std::string name;  // also the timer label
  Schedule schedule;
  bool at_start = false;  // also after step 0
  bool at_exit = false;   // also when the run ends or is stopped (not after a blow-up)
  std::function<void(long step, double time)> write;
};

struct SimulationSettings {
  long end_step = 0;       // 0: none
  double end_time = 0;     // 0: none
  double walltime = 0;     // seconds, 0: none
  double progress_seconds = 10;
  long health_every = 100;
};

SimulationSettings simulation_settings(const Config& cfg);

// What a progress line says, for callbacks (status files, metrics).
struct Progress {
  long step;
  double time;
  double rate;  // work units per wall second over the last interval
  double eta;   // wall seconds, -1 unknown
};

class Simulation {
 public:
  // Called on rank 0 at every progress line.
  std::function<void(const Progress&)> on_progress;
  // Whether the clock has reached the end (a restart from a finished run has nothing to do).
  bool done() const { return finished(); }
  Simulation(Model& model, const Context& ctx, SimulationSettings settings);
  void add_writer(Writer w) { writers_.push_back(std::move(w)); }

  // Runs to the end or a stop. Returns ExitCode::done or ExitCode::stopped; throws Error with
  // ExitCode::blow_up when the health check finds a non-finite value.
  ExitCode run();
  // Continues from a checkpoint: the clock restarts at (step, time); writers that run at the start
  // of a fresh run do not repeat.
  void resume(long step, double time) {
    step_ = step;
    time_ = time;
    resumed_ = true;
  }
  long step() const { return step_; }
  double time() const { return time_; }
  double run_seconds() const;

 private:
  void progress(bool force);
  void run_writers(bool at_start, bool at_exit);
  void health_check();
  bool finished() const;

  Model& model_;
  Context ctx_;
  SimulationSettings s_;
  std::vector<Writer> writers_;
  long step_ = 0;
  bool resumed_ = false;
  long first_step_ = 0;
  double first_time_ = 0;
  double time_ = 0;
  double t_start_ = 0;
  double last_progress_wall_ = 0;
  long last_progress_step_ = 0;
  double last_step_seconds_ = 0;
};

}  // namespace cumulus
