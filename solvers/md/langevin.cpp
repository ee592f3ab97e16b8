// Langevin thermostat (md.thermostat = "langevin"): BAOAB splitting, the random numbers keyed by
// (seed, atom id, step) so that the trajectory does not depend on the rank count.
#include <cmath>

#include "core/strings.hpp"
#include "solvers/md/thermostat.hpp"

namespace cumulus::md {

namespace {
class Langevin : public Thermostat {
 public:
  explicit Langevin(const Setup& s) : t_bath_(s.t_bath), kT_(s.t_bath * s.units.boltz), damping_(s.damping), seed_(static_cast<std::uint64_t>(s.seed)) {}
  std::string describe() const override {
    return strprintf("; Langevin thermostat (BAOAB) at T %g, damping time %g", t_bath_, damping_);
  }
  void kick_drift(const ThermostatContext& c, double time, double dt) override {
    const double c1 = std::exp(-dt / damping_);
    const std::uint64_t step = static_cast<std::uint64_t>(std::llround(time / dt));
    CUMULUS_KERNEL(*c.ex, kernels, kick_drift_langevin)(*c.ex, c.atoms(), 0.5 * dt, dt, c1, kT_,
                                                        seed_ ^ 0x5DEECE66Dull, step, c.keep());
  }
  double degrees_of_freedom(double n) const override { return 3.0 * n; }

 private:
  double t_bath_, kT_, damping_;
  std::uint64_t seed_;
};
}  // namespace

std::unique_ptr<Thermostat> make_langevin(const Setup& s) { return std::make_unique<Langevin>(s); }

}  // namespace cumulus::md
