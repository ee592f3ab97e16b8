// md.barostat = "c_rescale": stochastic cell rescaling (barostat.hpp has the equation).
#include "solvers/md/barostat.hpp"

#include <cmath>
#include <cstring>

#include "core/constants.hpp"
#include "core/error.hpp"
#include "core/strings.hpp"
#include "solvers/md/random.hpp"

namespace cumulus::md {

void declare_barostat_keys(Schema& s) {
  s.key("md.barostat", ValueType::string,
        "none (constant volume) or c_rescale (constant pressure: stochastic cell rescaling, isotropic, Bernetti & Bussi "
        "2020, GROMACS's C-rescale; needs a thermostat)")
      .def(std::string("none"))
      .one_of({"none", "c_rescale"});
  s.key("md.pressure", ValueType::real, "Barostat: the target pressure P0, in the units' pressure (atm in real units)").def(1.0);
  s.key("md.compressibility", ValueType::real,
        "Barostat: the isothermal compressibility beta in 1 / (the units' pressure); water's 4.5e-5 /bar is 4.56e-5 /atm")
      .def(4.56e-5)
      .positive();
  s.key("md.barostat_damping", ValueType::real, "Barostat: the relaxation time tau_p of the volume (fs in real units)")
      .def(2000.0)
      .positive();
  s.key("md.barostat_every", ValueType::integer,
        "Barostat: steps between rescalings (GROMACS's nstpcouple); each costs one more force call")
      .def(std::int64_t{25})
      .at_least(1);
}

void check_barostat(const Config& cfg, const std::array<double, 3>& box, double reach) {
  if (cfg.get<std::string>("md.barostat") == "none") return;
  if (cfg.get<std::string>("md.thermostat") == "none")
    cfg.fail("md.barostat", "is c_rescale, which needs the temperature of a thermostat (md.thermostat langevin or nose_hoover): "
                            "constant pressure without one is not offered");
  if (cfg.get<double>("md.barostat_damping") <= cfg.get<double>("md.dt") * static_cast<double>(cfg.get<std::int64_t>("md.barostat_every")))
    cfg.fail("md.barostat_damping", strprintf("%g is not longer than the barostat's step md.barostat_every * md.dt (%g): the "
                                              "volume would overshoot",
                                              cfg.get<double>("md.barostat_damping"),
                                              cfg.get<double>("md.dt") * static_cast<double>(cfg.get<std::int64_t>("md.barostat_every"))));
  for (int d = 0; d < 3; ++d)
    if (box[static_cast<std::size_t>(d)] < 1.05 * 2 * reach)
      cfg.fail("md.barostat", strprintf("the box (%g along axis %d) has no volume freedom: it may not shrink below twice the "
                                        "cutoff + skin (%g), and a barostat needs at least 5 %% of room; use a larger box",
                                        box[static_cast<std::size_t>(d)], d, 2 * reach));
}

namespace {

class CRescale : public Barostat {
 public:
  CRescale(const Config& cfg, const Setup& s)
      : p0_(cfg.get<double>("md.pressure")), beta_(cfg.get<double>("md.compressibility")),
        tau_(cfg.get<double>("md.barostat_damping")), every_(cfg.get<std::int64_t>("md.barostat_every")),
        dt_(s.dt * static_cast<double>(every_)), kT_(s.t_bath * s.units.boltz), nktv2p_(s.units.nktv2p),
        seed_(static_cast<std::uint64_t>(s.seed)) {}

  std::string describe() const override {
    return strprintf("; C-rescale barostat: P0 %g, compressibility %g, tau_p %g, every %lld steps", p0_, beta_, tau_,
                     static_cast<long long>(every_));
  }
  bool due(std::int64_t step) const override { return step > 0 && step % every_ == 0; }

  double scale(double pressure, double volume, std::int64_t step) override {
    const double kt_v = kT_ / volume * nktv2p_;  // kT / V in the units' pressure
    // A normal number keyed by (seed, step), by Box-Muller from two counter-based uniforms.
    const std::uint64_t key = 0xC0FFEEull ^ static_cast<std::uint64_t>(step);
    const double u1 = uniform(seed_, key, 0), u2 = uniform(seed_, key, 1);
    const double xi = std::sqrt(-2 * std::log(u1)) * std::cos(2 * kPi * u2);
    const double deps = -beta_ / tau_ * (p0_ - pressure - kt_v) * dt_ + std::sqrt(2 * kt_v * beta_ * dt_ / tau_) * xi;
    return std::exp(deps / 3);
  }
  void add_work(double energy_change, double volume_change) override { work_ += energy_change + p0_ * volume_change / nktv2p_; }
  double energy(double volume) const override { return p0_ * volume / nktv2p_ - work_; }

  // "barostat_state": the box lengths and the energy put in, global numbers written by rank 0.
  void describe_state(StateDescription& s, int rank, const double* box) override {
    GridArray g;
    g.name = "barostat_state";
    g.units = "box lengths, energy";
    g.dtype = DType::f64;
    g.ncomp = 1;
    g.global_box = Box(0, 0, 0, 4, 1, 1);
    g.local_box = rank == 0 ? g.global_box : Box(0, 0, 0, 0, 1, 1);
    g.in_output = false;
    const std::array<double, 4> now{box[0], box[1], box[2], work_};
    g.read_local = [now, rank] {
      std::vector<unsigned char> out;
      if (rank != 0) return out;
      out.resize(sizeof now);
      std::memcpy(out.data(), now.data(), sizeof now);
      return out;
    };
    g.write_local = [this, rank](const std::vector<unsigned char>& in) {
      if (rank == 0 && in.size() == sizeof restored_) std::memcpy(restored_.data(), in.data(), sizeof restored_);
    };
    s.arrays.push_back(std::move(g));
  }
  std::array<double, 3> restored(const Comm& comm) override {
    comm.broadcast(restored_.data(), 4, 0);
    work_ = restored_[3];
    return {restored_[0], restored_[1], restored_[2]};
  }

 private:
  double p0_, beta_, tau_;
  std::int64_t every_;
  double dt_, kT_, nktv2p_;
  std::uint64_t seed_;
  double work_ = 0;
  std::array<double, 4> restored_{0, 0, 0, 0};
};

}  // namespace

std::unique_ptr<Barostat> make_barostat(const Config& cfg, const Setup& s) {
  if (cfg.get<std::string>("md.barostat") == "c_rescale") return std::make_unique<CRescale>(cfg, s);
  return nullptr;
}

}  // namespace cumulus::md
