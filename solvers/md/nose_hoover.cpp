// Nose-Hoover chain thermostat (md.thermostat = "nose_hoover"; Martyna, Klein & Tuckerman 1992),
// integrated as Martyna, Tuckerman, Tobias & Klein (1996) split it: half a step of the chain
// around velocity Verlet, each thermostat's velocity updated over quarter steps from the outer end
// inwards and back, the atoms' velocities scaled by exp(-dt/2 v_1) in between. The chain is
// global: every rank holds the same numbers, computed from the exactly summed kinetic energy, so
// trajectories stay bit-identical at any rank count and on the host and CUDA.
#include <cmath>
#include <cstring>
#include <vector>

#include "core/strings.hpp"
#include "solvers/md/thermostat.hpp"

namespace cumulus::md {

namespace {
class NoseHoover : public Thermostat {
 public:
  NoseHoover(const Setup& s, std::int64_t n_total)
      : m_(s.nhc_length), kT_(s.t_bath * s.units.boltz), boltz_(s.units.boltz), damping_(s.nhc_damping), nf_(3.0 * static_cast<double>(n_total) - 3.0 - s.constraint_dof) {}

  std::string describe() const override {
    return strprintf("; Nose-Hoover chain of %d at T %g, relaxation time %g (Q1 = %g, Qi = %g)", m_, kT_ / boltz_, damping_, q(0), q(1));
  }
  // The first half step's velocity scaling is left to kick_drift, which applies it in its own pass
  // (one pass a step fewer; the same bits).
  void begin_step(const ThermostatContext& c, double dt) override { pending_scale_ = half_step(c, dt, false); }
  void kick_drift(const ThermostatContext& c, double /*time*/, double dt) override {
    CUMULUS_KERNEL(*c.ex, kernels, kick_drift)(*c.ex, c.atoms(), 0.5 * dt, dt, pending_scale_, c.keep());
    pending_scale_ = 1.0;
  }
  void end_step(const ThermostatContext& c, double dt) override { half_step(c, dt, true); }

  // The chain's share of the conserved quantity: sum Q_i v_i^2 / 2 + Nf kT xi_1 + kT sum_{i>1} xi_i.
  double energy() const override {
    double e = 0;
    for (int i = 0; i < m_; ++i) e += 0.5 * q(i) * v_[i] * v_[i] + (i == 0 ? nf_ : 1.0) * kT_ * xi_[i];
    return e;
  }

  // The chain's positions and velocities: global numbers, written by rank 0 and sent to every rank
  // after a restart (restored()).
  void describe_state(StateDescription& s, int rank) override {
    GridArray g;
    g.name = "thermostat_chain";
    g.units = "1, 1/tau";
    g.dtype = DType::f64;
    g.ncomp = 1;
    const int M = m_;
    g.global_box = Box(0, 0, 0, 2 * M, 1, 1);
    g.local_box = rank == 0 ? g.global_box : Box(0, 0, 0, 0, 1, 1);
    g.in_output = false;
    g.read_local = [this, M, rank] {
      std::vector<unsigned char> out;
      if (rank != 0) return out;
      out.resize(2 * M * sizeof(double));
      std::memcpy(out.data(), xi_.data(), M * sizeof(double));
      std::memcpy(out.data() + M * sizeof(double), v_.data(), M * sizeof(double));
      return out;
    };
    g.write_local = [this, M, rank](const std::vector<unsigned char>& in) {
      if (rank == 0 && in.size() == 2 * M * sizeof(double)) {
        std::memcpy(xi_.data(), in.data(), M * sizeof(double));
        std::memcpy(v_.data(), in.data() + M * sizeof(double), M * sizeof(double));
      }
    };
    s.arrays.push_back(std::move(g));
  }
  void restored(const Comm& comm) override {
    comm.broadcast(xi_.data(), static_cast<int>(xi_.size()), 0);
    comm.broadcast(v_.data(), static_cast<int>(v_.size()), 0);
  }

 private:
  double q(int i) const { return (i == 0 ? nf_ : 1.0) * kT_ * (damping_ * damping_); }

  // Returns the atoms' velocity factor, applied here when `apply`.
  double half_step(const ThermostatContext& c, double dt, bool apply) {
    const int M = m_;
    const double dt2 = 0.5 * dt, dt4 = 0.25 * dt, dt8 = 0.125 * dt;
    std::vector<double>& v = v_;
    double ke2 = c.kinetic2();
    auto force = [&](int i) { return i == 0 ? (ke2 - nf_ * kT_) / q(0) : (q(i - 1) * v[i - 1] * v[i - 1] - kT_) / q(i); };
    auto update = [&](int i) {  // quarter-step kick of thermostat i, damped by the next one
      if (i == M - 1) {
        v[i] += dt4 * force(i);
        return;
      }
      const double e = std::exp(-dt8 * v[i + 1]);
      v[i] = (v[i] * e + dt4 * force(i)) * e;
    };
    for (int i = M - 1; i >= 0; --i) update(i);
    for (int i = 0; i < M; ++i) xi_[i] += dt2 * v[i];
    const double scale = std::exp(-dt2 * v[0]);
    if (apply) CUMULUS_KERNEL(*c.ex, kernels, scale_velocities)(*c.ex, c.atoms(), scale);
    ke2 *= scale * scale;
    for (int i = 0; i < M; ++i) update(i);
    return scale;
  }

  int m_;
  double kT_, boltz_, damping_, nf_;
  double pending_scale_ = 1.0;  // begin_step's factor, for kick_drift
  std::vector<double> xi_ = std::vector<double>(10, 0.0), v_ = std::vector<double>(10, 0.0);
};
}  // namespace

std::unique_ptr<Thermostat> make_nose_hoover(const Setup& s, std::int64_t n_total) {
  return std::make_unique<NoseHoover>(s, n_total);
}

}  // namespace cumulus::md
