#pragma once
// The reference solver: the heat equation du/dt = alpha laplacian(u) in 2D or 3D, explicit
// (forward Euler) in time, second-order central differences in space, cell-centred. Every later
// solver copies its structure: keys, checks, create, a Model with kernels in one source file.
#include <memory>

#include "mesh/decomposition.hpp"
#include "mesh/field.hpp"
#include "mesh/halo_exchange.hpp"
#include "solvers/model.hpp"

namespace cumulus::heat {

void register_solver(SolverRegistry& r);
void declare_keys(Schema& s);
void check(const Config& cfg, int nranks);

// The analytic solution for the configured initial condition; trivially copyable, usable in kernels.
struct Analytic {
  int kind = 0;  // 0 sine mode, 1 gaussian
  int ndim = 2;
  double h[3] = {1, 1, 1};
  double wave[3] = {0, 0, 0};  // k_d of the sine mode
  double decay = 0;            // alpha * sum k_d^2
  double center[3] = {0, 0, 0};
  double width = 0;
  double amplitude = 1, offset = 0, alpha = 1;
  CUMULUS_HD double operator()(int i, int j, int k, double t) const;
};

class HeatModel : public Model {
 public:
  HeatModel(const Config& cfg, const Context& ctx);
  std::string describe() const override;
  double preferred_dt() const override { return dt_; }
  void advance(double time, double dt) override;
  double work_per_step() const override { return static_cast<double>(decomp_.global_box().volume()); }
  std::string work_unit() const override { return "cell-updates"; }
  std::optional<HealthIssue> check_health() override;
  std::vector<std::pair<std::string, double>> diagnostics(double time) override;
  StateDescription state() override;

  const Field<double>& temperature() const { return u_; }
  const CartesianDecomposition& decomposition() const { return decomp_; }
  const HaloExchange& halo() const { return *halo_; }

 private:
  Context ctx_;
  CartesianDecomposition decomp_;
  Analytic analytic_;
  double alpha_, dt_, fixed_value_;
  std::array<bool, 3> periodic_;
  Field<double> u_, u_next_;
  std::unique_ptr<HaloExchange> halo_;
  HaloOverlap overlap_;  // the step's sweep, overlapped with the halo exchange where that pays
};

}  // namespace cumulus::heat
