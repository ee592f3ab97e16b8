#pragma once
// The md solver's barostat (md.barostat): stochastic cell rescaling, isotropic (Bernetti & Bussi,
// J. Chem. Phys. 153, 114107 (2020); GROMACS's C-rescale). Every md.barostat_every steps, at the
// end of the step, the volume's logarithm eps = ln V moves by
//   d eps = -(beta / tau_p) (P0 - P - kT / V) dt_p + sqrt(2 kT beta dt_p / (V tau_p)) xi,
// with P the instantaneous pressure (kinetic, every virial, the constraint forces' and the tail),
// P0 the target (md.pressure), beta the isothermal compressibility (md.compressibility), tau_p the
// relaxation time (md.barostat_damping), dt_p = md.barostat_every dt, kT the thermostat's
// temperature and xi a normal number keyed by (md.seed, step): the same on every rank and after a
// restart. Positions scale by mu = exp(d eps / 3) (a rigid molecule's centre of mass, so that it
// stays rigid; every other atom itself), velocities by 1 / mu, the box by mu. The model then sends
// the ghosts their new positions and computes the forces anew, so that the next step starts from
// forces of the positions it has (one more force call per barostat step); the Verlet list stays,
// the box's change counted in its checks, and the decomposition is made for the new box at the
// next build.
//
// The ensemble is NPT with a thermostat (one is required). The conserved quantity of the thermo
// rows gains P0 V minus the energy the barostat has put in (the change of E + P0 V at each
// rescaling, exact: the energies before and after are both computed).
#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "core/comm.hpp"
#include "core/config.hpp"
#include "io/state.hpp"
#include "solvers/md/setup.hpp"

namespace cumulus::md {

void declare_barostat_keys(Schema& s);
// Checks (cfg.fail): a thermostat to give kT; a box with room to shrink (each length at least
// 1.05 times twice the cutoff + skin: a box at the limit has no volume freedom).
void check_barostat(const Config& cfg, const std::array<double, 3>& box, double reach);

class Barostat {
 public:
  virtual ~Barostat() = default;
  virtual std::string describe() const = 0;
  // Whether step `step` (just completed) ends with a rescaling.
  virtual bool due(std::int64_t step) const = 0;
  // The scale factor mu of the box lengths from the pressure P (the units' pressure) and the volume.
  virtual double scale(double pressure, double volume, std::int64_t step) = 0;
  // After the rescaling: the change of the energy and of the volume it made; E + P0 V's change is
  // accumulated as the energy the barostat put in.
  virtual void add_work(double energy_change, double volume_change) = 0;
  // The barostat's share of the conserved quantity at volume V: P0 V minus the energy put in.
  virtual double energy(double volume) const = 0;
  // The box and the work for checkpoints (rank 0 writes), and after a restart (collective): the box
  // lengths the checkpoint holds (zeros before the first restore).
  virtual void describe_state(StateDescription& s, int rank, const double* box) = 0;
  virtual std::array<double, 3> restored(const Comm& comm) = 0;
};

// The job's barostat (null for md.barostat = "none").
std::unique_ptr<Barostat> make_barostat(const Config& cfg, const Setup& s);

}  // namespace cumulus::md
