#pragma once
// Thermostats of the md solver's velocity Verlet step, one class per file (langevin.cpp,
// nose_hoover.cpp; none is plain NVE), chosen once from md.thermostat: the step calls them through
// this interface, never by name. Each owns its state and describes its checkpoint arrays.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/comm.hpp"
#include "core/exec.hpp"
#include "io/state.hpp"
#include "solvers/md/md_kernels.hpp"
#include "solvers/md/setup.hpp"

namespace cumulus::md {

// What a thermostat may ask of the model: the atoms' kernel view and twice the kinetic energy,
// summed exactly (the same number on every rank).
struct ThermostatContext {
  const Exec* ex = nullptr;
  std::function<Atoms()> atoms;
  std::function<double()> kinetic2;
  // Where kick_drift keeps the owned atoms' positions from before the drift (the constraints'
  // reference; null pointers without constraints).
  std::function<KeptPositions()> keep;
};

class Thermostat {
 public:
  virtual ~Thermostat() = default;
  virtual std::string describe() const = 0;  // "; NVE", "; Langevin thermostat ..."
  // Around velocity Verlet: before the first half kick and after the second (Nose-Hoover's half
  // steps of the chain).
  virtual void begin_step(const ThermostatContext&, double /*dt*/) {}
  virtual void end_step(const ThermostatContext&, double /*dt*/) {}
  // The first half kick and the drift (Langevin: BAOAB's B, A, O, A), keeping the positions from
  // before the drift where c.keep() says.
  virtual void kick_drift(const ThermostatContext& c, double time, double dt);
  // Degrees of freedom of N atoms: 3N - 3 where the total momentum is conserved (NVE, Nose-Hoover),
  // 3N under Langevin, whose friction and noise act on every component (measured: 108 atoms read
  // 0.7 % hot with 3N - 3, as 3N / (3N - 3) predicts).
  virtual double degrees_of_freedom(double n) const { return 3.0 * n - 3.0; }
  // The thermostat's own share of the conserved quantity (besides the per-atom work).
  virtual double energy() const { return 0; }
  // Global state for checkpoints (appended to the model's arrays; rank 0 writes) and its
  // re-distribution after a restart (collective).
  virtual void describe_state(StateDescription& /*s*/, int /*rank*/) {}
  virtual void restored(const Comm& /*comm*/) {}
};

std::unique_ptr<Thermostat> make_thermostat(const Setup& s, std::int64_t n_total);

}  // namespace cumulus::md
