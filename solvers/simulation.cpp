#include "solvers/simulation.hpp"

#include <cmath>
#include <csignal>

#include "core/log.hpp"
#include "core/signals.hpp"
#include "core/strings.hpp"
#include "core/timers.hpp"

namespace cumulus {

namespace {
// Slot of the current time; a tiny tolerance so that t = 0.1 + 0.1 + 0.1 counts as 0.3.
long time_slot(double time, double every) { return static_cast<long>(std::floor(time / every * (1 + 1e-12) + 1e-9)); }
}  // namespace

void Schedule::start(double time, double wall) {
  last_wall = wall;
  last_time_slot = every_time > 0 ? time_slot(time, every_time) : 0;
}

bool Schedule::due_by_clock(long step, double time) {
  bool d = false;
  if (every_steps > 0 && step % every_steps == 0) d = true;
  if (every_time > 0) {
    const long slot = time_slot(time, every_time);
    if (slot > last_time_slot) {
      last_time_slot = slot;
      d = true;
    }
  }
  return d;
}

SimulationSettings simulation_settings(const Config& cfg) {
  SimulationSettings s;
  s.end_step = cfg.get<long>("run.end_step");
  s.end_time = cfg.get<double>("run.end_time");
  s.walltime = cfg.get<double>("run.walltime");
  s.progress_seconds = cfg.get<double>("run.progress_seconds");
  s.health_every = cfg.get<long>("run.health_every");
  return s;
}

Simulation::Simulation(Model& model, const Context& ctx, SimulationSettings settings)
    : model_(model), ctx_(ctx), s_(settings) {}

double Simulation::run_seconds() const { return wall_seconds() - t_start_; }

bool Simulation::finished() const {
  if (s_.end_step > 0 && step_ >= s_.end_step) return true;
  // Relative tolerance: the last step lands on end_time exactly, but sums of dt may round.
  if (s_.end_time > 0 && time_ >= s_.end_time * (1 - 1e-14)) return true;
  // A model that cannot shorten its step ends at the step nearest end_time (a sum of thousands of
  // fixed steps may round just below it).
  if (s_.end_time > 0 && model_.fixed_dt() && time_ >= s_.end_time - 0.5 * model_.preferred_dt()) return true;
  return false;
}

void Simulation::run_writers(bool at_start, bool at_exit) {
  const double wall = wall_seconds();
  // Wall-clock cadences are judged by rank 0 and broadcast: the ranks' clocks differ, and a
  // collective writer (checkpoint, output) must run on every rank or on none.
  int wall_due = 0;
  bool any_wall = false;
  for (std::size_t n = 0; n < writers_.size() && n < 31; ++n) {
    const Schedule& s = writers_[n].schedule;
    any_wall = any_wall || s.every_seconds > 0;
    if (s.every_seconds > 0 && wall - s.last_wall >= s.every_seconds) wall_due |= 1 << n;
  }
  if (any_wall && !at_start && !at_exit) wall_due = ctx_.comm.broadcast(wall_due);
  bool checked = false;
  for (std::size_t n = 0; n < writers_.size(); ++n) {
    Writer& w = writers_[n];
    bool due = w.schedule.due_by_clock(step_, time_) || (n < 31 && ((wall_due >> n) & 1));
    if (at_start) due = w.at_start;
    if (at_exit) due = w.at_exit;
    if (!due) continue;
    if (!checked) model_.finish_checks();  // nothing of a step that failed a check is written
    checked = true;
    w.schedule.last_wall = wall;
    ScopedTimer t("io." + w.name);
    w.write(step_, time_);
  }
}

void Simulation::health_check() {
  ScopedTimer t("health check");
  model_.finish_checks();
  if (auto issue = model_.check_health())
    throw Error(strprintf("numerical blow-up: non-finite value (NaN or Inf) in field '%s' at %s, step %ld, time %.6g; "
                          "reduce the time step or check the setup",
                          issue->field.c_str(), issue->location.c_str(), step_, time_),
                ExitCode::blow_up);
}

void Simulation::progress(bool force) {
  const double now = wall_seconds();
  if (!force && now - last_progress_wall_ < s_.progress_seconds) return;
  const double dt_wall = now - last_progress_wall_;
  const long dsteps = step_ - last_progress_step_;
  const double rate = dt_wall > 0 ? dsteps * model_.work_per_step() / dt_wall : 0;
  const double elapsed = now - t_start_;
  double eta = -1;
  const long done = step_ - first_step_;
  const double per_step = done > 0 ? elapsed / done : 0;
  if (s_.end_step > 0) eta = (s_.end_step - step_) * per_step;
  if (s_.end_time > 0 && time_ > first_time_) {
    const double e2 = (s_.end_time - time_) * elapsed / (time_ - first_time_);
    eta = eta < 0 ? e2 : std::min(eta, e2);
  }
  log_info(strprintf("step %8ld  t %-12.6g  %9.2f M%s/s  wall %s  ETA %s", step_, time_, rate / 1e6,
                     model_.work_unit().c_str(), format_hms(elapsed).c_str(), format_hms(eta).c_str()));
  if (on_progress && ctx_.comm.is_root()) on_progress(Progress{step_, time_, rate, eta});
  last_progress_wall_ = now;
  last_progress_step_ = step_;
}

ExitCode Simulation::run() {
  t_start_ = wall_seconds();
  last_progress_wall_ = t_start_;
  for (auto& w : writers_) w.schedule.start(time_, t_start_);
  last_progress_step_ = first_step_ = step_;
  first_time_ = time_;
  health_check();
  if (!resumed_) run_writers(true, false);
  progress(true);

  ExitCode result = ExitCode::done;
  while (!finished()) {
    double dt = model_.preferred_dt();
    const bool last = !model_.fixed_dt() && s_.end_time > 0 && time_ + dt >= s_.end_time;
    if (last) dt = s_.end_time - time_;  // land on end_time exactly
    const double t0 = wall_seconds();
    model_.advance(time_, dt);
    ++step_;
    time_ = last ? s_.end_time : time_ + dt;
    last_step_seconds_ = wall_seconds() - t0;

    if (step_ % s_.health_every == 0) health_check();
    if (!finished()) run_writers(false, false);
    progress(false);

    // Stop requests, agreed by all ranks in one reduction: a signal on any rank, or rank 0's
    // judgement that the next step would overrun the wall-time limit.
    int flags = 0;
    if (const int sig = stop_signal_received()) flags |= sig == SIGTERM ? 1 : sig == SIGUSR1 ? 2 : 4;
    if (s_.walltime > 0 && ctx_.comm.is_root() && run_seconds() + 2 * last_step_seconds_ >= s_.walltime) flags |= 8;
    flags = ctx_.comm.bitwise_or(flags);
    if (flags && !finished()) {
      if (flags & 8) log_info(strprintf("stopping at step %ld: the wall-time limit of %.0f s is near", step_, s_.walltime));
      else
        log_info(strprintf("stopping at step %ld: received %s", step_,
                           signal_name(flags & 1 ? SIGTERM : flags & 2 ? SIGUSR1 : SIGINT)));
      result = ExitCode::stopped;
      break;
    }
  }
  health_check();
  run_writers(false, true);
  progress(true);
  return result;
}

}  // namespace cumulus
