// The thermostat choice and NVE (no thermostat): velocity Verlet's plain half kick and drift.
#include "solvers/md/thermostat.hpp"

#include "core/error.hpp"

namespace cumulus::md {

std::unique_ptr<Thermostat> make_langevin(const Setup& s);
std::unique_ptr<Thermostat> make_nose_hoover(const Setup& s, std::int64_t n_total);

namespace {
class Nve : public Thermostat {
 public:
  std::string describe() const override { return "; NVE"; }
};
}  // namespace

void Thermostat::kick_drift(const ThermostatContext& c, double /*time*/, double dt) {
  CUMULUS_KERNEL(*c.ex, kernels, kick_drift)(*c.ex, c.atoms(), 0.5 * dt, dt, 1.0, c.keep());
}

std::unique_ptr<Thermostat> make_thermostat(const Setup& s, std::int64_t n_total) {
  if (s.thermostat == "langevin") return make_langevin(s);
  if (s.thermostat == "nose_hoover") return make_nose_hoover(s, n_total);
  if (s.thermostat == "none") return std::make_unique<Nve>();
  throw Error("md: unknown thermostat '" + s.thermostat + "'");
}

}  // namespace cumulus::md
