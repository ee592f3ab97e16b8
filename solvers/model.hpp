#pragma once
// The interface every solver implements, and the registry that finds solvers by name.
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/comm.hpp"
#include "core/config.hpp"
#include "core/exec.hpp"
#include "io/state.hpp"

namespace cumulus {

// What a Model runs with: its ranks, its backend, and where its files go.
struct Context {
  Comm comm;
  Exec exec;
  std::string run_dir;
};

// The first non-finite value found by a health check (same answer on every rank).
struct HealthIssue {
  std::string field;
  std::string location;  // "cell (i, j, k)", "atom 123"
};

// A solver's physics on its distributed state. The Simulation owns the clock, stop conditions and
// writers; a Model only advances and reports.
class Model {
 public:
  virtual ~Model() = default;
  virtual std::string describe() const = 0;          // one paragraph for the log
  virtual double preferred_dt() const = 0;           // the step the Simulation takes when it can
  // True when every step must be preferred_dt() (a lattice Boltzmann step cannot be shortened):
  // the run then ends at the first step that reaches run.end_time instead of landing on it.
  virtual bool fixed_dt() const { return false; }
  virtual void advance(double time, double dt) = 0;  // from `time` to `time + dt`; collective
  virtual double work_per_step() const = 0;          // global, in work_unit()
  virtual std::string work_unit() const = 0;         // "cell-updates", "atom-steps"
  virtual std::optional<HealthIssue> check_health() = 0;  // collective
  // Answers the checks that advance() queued on the device without waiting for them (molecular
  // dynamics: a constraint that failed, md/step_checks.hpp), throwing as advance() would have.
  // Collective; the Simulation calls it before anything is written and at health checks.
  virtual void finish_checks() {}
  // Named scalars (energy, mass, error norms) for the diagnostics table; collective.
  virtual std::vector<std::pair<std::string, double>> diagnostics(double time) = 0;
  // The persistent state (checkpoints, restart) and the fields shown in ParaView, described once.
  virtual StateDescription state() = 0;
};

struct SolverEntry {
  std::string name;
  std::string summary;
  void (*declare_keys)(Schema&);
  // Checks that need more than one key or the rank count, before anything is allocated.
  void (*check)(const Config&, int nranks);
  std::unique_ptr<Model> (*create)(const Config&, const Context&);
  std::vector<std::string> output_fields;  // what [output] fields may name
  bool particles = false;                  // a particle state: [trajectory] (H5MD) applies
};

class SolverRegistry {
 public:
  void add(SolverEntry e) { entries_.push_back(std::move(e)); }
  const SolverEntry* find(const std::string& name) const;
  std::vector<std::string> names() const;
  // The registry filled with every solver cumulus has (solvers/registry.cpp, one explicit call each).
  static const SolverRegistry& all();
  // Common keys ([run], [diagnostics], solver) plus the named solver's keys.
  void build_schema(const std::string& solver, Schema& schema) const;

 private:
  std::vector<SolverEntry> entries_;
};

// Keys every job has: solver, [run], [diagnostics].
void declare_common_keys(Schema& schema, const std::vector<std::string>& solver_names);
// Checks on the common keys that the schema cannot express.
void check_common_keys(const Config& cfg, const SolverEntry& solver);

}  // namespace cumulus
