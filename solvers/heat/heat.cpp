// The heat model: keys, checks, set-up, the step and the diagnostics (host code; the kernels are
// in heat_kernels.cpp).
#include "solvers/heat/heat.hpp"
#include "solvers/heat/heat_kernels.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "core/constants.hpp"
#include "core/log.hpp"
#include "core/strings.hpp"

namespace cumulus::heat {

namespace {
struct Geometry {
  int ndim;
  Index3 cells{1, 1, 1};
  double length[3] = {1, 1, 1};
  double h[3] = {1, 1, 1};
  std::array<bool, 3> periodic{false, false, false};
};

Geometry geometry(const Config& cfg) {
  Geometry g;
  const auto cells = cfg.get<std::vector<std::int64_t>>("heat.cells");
  g.ndim = static_cast<int>(cells.size());
  const auto length = cfg.get<std::vector<double>>("heat.length");
  const auto bc = cfg.get<std::vector<std::string>>("heat.boundary");
  for (int d = 0; d < g.ndim; ++d) {
    if (cells[d] > (1 << 24)) cfg.fail("heat.cells", strprintf("%lld cells along one axis is more than cumulus indexes (2^24)", static_cast<long long>(cells[d])));
    g.cells[d] = static_cast<int>(cells[d]);
    g.length[d] = length[static_cast<std::size_t>(d) < length.size() ? d : 0];
    g.h[d] = g.length[d] / g.cells[d];
    g.periodic[d] = bc[static_cast<std::size_t>(d) < bc.size() ? d : 0] == "periodic";
  }
  return g;
}

// The explicit (forward Euler) stability limit of the 2d+1-point Laplacian.
double stable_dt(const Geometry& g, double alpha) {
  double s = 0;
  for (int d = 0; d < g.ndim; ++d) s += 1.0 / (g.h[d] * g.h[d]);
  return 1.0 / (2.0 * alpha * s);
}
}  // namespace

void declare_keys(Schema& s) {
  s.key("heat.cells", ValueType::integer_array, "Cells along x, y (and z): 2 or 3 numbers give a 2D or 3D grid")
      .require()
      .length(2, 3)
      .at_least(1);
  s.key("heat.length", ValueType::real_array,
        "Domain size along each axis (one number: the same for all axes)")
      .def(std::vector<double>{1.0})
      .length(1, 3)
      .positive()
      .unit("m");
  s.key("heat.boundary", ValueType::string_array,
        "Boundary per axis: periodic, or fixed (u = heat.fixed_value on both faces); one entry: all axes")
      .def(std::vector<std::string>{"periodic"})
      .length(1, 3)
      .one_of({"periodic", "fixed"});
  s.key("heat.fixed_value", ValueType::real, "Value held on fixed boundaries").def(0.0).unit("K");
  s.key("heat.diffusivity", ValueType::real, "Thermal diffusivity alpha").def(1.0).positive().unit("m^2/s");
  s.key("heat.dt", ValueType::real, "Time step (0: heat.cfl times the explicit stability limit)")
      .def(0.0)
      .at_least(0)
      .unit("s");
  s.key("heat.cfl", ValueType::real,
        "Fraction of the stability limit dt_max = 1 / (2 alpha sum_d 1/h_d^2) used when heat.dt = 0")
      .def(0.5)
      .positive()
      .at_most(1.0);
  s.key("heat.initial", ValueType::string,
        "Initial condition: sine (one Fourier mode, exact decay known) or gaussian (free-space solution known)")
      .def(std::string("sine"))
      .one_of({"sine", "gaussian"});
  s.key("heat.modes", ValueType::integer_array,
        "Sine mode numbers m_d: sin(2 pi m x / L) on periodic axes, sin(pi m x / L) on fixed axes; one entry: all axes")
      .def(std::vector<std::int64_t>{1})
      .length(1, 3)
      .at_least(1);
  s.key("heat.amplitude", ValueType::real, "Amplitude of the sine mode or the Gaussian").def(1.0).unit("K");
  s.key("heat.gaussian_center", ValueType::real_array, "Centre of the Gaussian (default: the domain's centre)")
      .def(std::vector<double>{})
      .length(0, 3)
      .unit("m");
  s.key("heat.gaussian_width", ValueType::real, "Standard deviation sigma of the Gaussian").def(0.05).positive().unit("m");
}

void check(const Config& cfg, int nranks) {
  const auto cells = cfg.get<std::vector<std::int64_t>>("heat.cells");
  const std::size_t nd = cells.size();
  for (const char* key : {"heat.length", "heat.boundary", "heat.modes"}) {
    std::size_t n = 0;
    if (std::string(key) == "heat.boundary") n = cfg.get<std::vector<std::string>>(key).size();
    else if (std::string(key) == "heat.modes") n = cfg.get<std::vector<std::int64_t>>(key).size();
    else n = cfg.get<std::vector<double>>(key).size();
    if (n != 1 && n != nd)
      cfg.fail(key, strprintf("has %zu %s but heat.cells has %zu: give one entry (all axes) or %zu", n,
                              n == 1 ? "entry" : "entries", nd, nd));
  }
  const auto center = cfg.get<std::vector<double>>("heat.gaussian_center");
  if (!center.empty() && center.size() != nd)
    cfg.fail("heat.gaussian_center", strprintf("has %zu %s, expected %zu (one per axis)", center.size(),
                                               center.size() == 1 ? "entry" : "entries", nd));
  const Geometry g = geometry(cfg);
  double total_cells = 1;
  for (int d = 0; d < g.ndim; ++d) {
    total_cells *= g.cells[d];
    const double h2 = g.h[d] * g.h[d];
    if (!(h2 >= std::numeric_limits<double>::min() && h2 < std::numeric_limits<double>::max()))
      cfg.fail("heat.length", strprintf("a cell size of %g along axis %d is out of the range double precision can "
                                        "square; choose lengths and cells so that 1e-150 < h < 1e150",
                                        g.h[d], d));
  }
  check_node_memory(cfg, "heat.cells", total_cells, 2.0 * 8.0, nranks);  // two fields of doubles
  const double alpha = cfg.get<double>("heat.diffusivity");
  const double dt = cfg.get<double>("heat.dt"), dt_max = stable_dt(g, alpha);
  const double dt_used = dt > 0 ? dt : cfg.get<double>("heat.cfl") * dt_max;
  if (!(dt_used > 0 && dt_used < std::numeric_limits<double>::max()))
    cfg.fail("heat.diffusivity", strprintf("the time step comes out as %g with diffusivity %g and these cells: "
                                           "choose values whose stability limit is a positive finite number",
                                           dt_used, alpha));
  if (cfg.get<std::string>("heat.initial") == "gaussian") {
    const double w = cfg.get<double>("heat.gaussian_width");
    if (!(w * w >= std::numeric_limits<double>::min() && w * w < std::numeric_limits<double>::max()))
      cfg.fail("heat.gaussian_width", strprintf("%g cannot be squared in double precision (use 1e-150 < width < 1e150)", w));
  }
  if (dt > dt_max)
    cfg.fail("heat.dt", strprintf("dt = %g exceeds the explicit stability limit 1/(2 alpha sum 1/h^2) = %g for "
                                  "these cells and diffusivity: use dt <= %g or set dt = 0 to choose it from heat.cfl",
                                  dt, dt_max, dt_max));
  check_decomposition(cfg, "heat.cells", g.cells, g.periodic, nranks, g.ndim);
}


HeatModel::HeatModel(const Config& cfg, const Context& ctx)
    : ctx_(ctx),
      decomp_([&] {
        const Geometry g = geometry(cfg);
        return CartesianDecomposition(g.cells, g.periodic, ctx.comm.size(), g.ndim, 1);
      }()) {
  const Geometry g = geometry(cfg);
  alpha_ = cfg.get<double>("heat.diffusivity");
  fixed_value_ = cfg.get<double>("heat.fixed_value");
  periodic_ = g.periodic;
  dt_ = cfg.get<double>("heat.dt");
  if (dt_ == 0) dt_ = cfg.get<double>("heat.cfl") * stable_dt(g, alpha_);

  Analytic& a = analytic_;
  a.ndim = g.ndim;
  a.alpha = alpha_;
  a.amplitude = cfg.get<double>("heat.amplitude");
  a.offset = fixed_value_;
  for (int d = 0; d < 3; ++d) a.h[d] = g.h[d];
  if (cfg.get<std::string>("heat.initial") == "sine") {
    a.kind = 0;
    const auto modes = cfg.get<std::vector<std::int64_t>>("heat.modes");
    a.decay = 0;
    for (int d = 0; d < g.ndim; ++d) {
      const double m = static_cast<double>(modes[static_cast<std::size_t>(d) < modes.size() ? d : 0]);
      a.wave[d] = (g.periodic[d] ? 2 * kPi : kPi) * m / g.length[d];
      a.decay += alpha_ * a.wave[d] * a.wave[d];
    }
  } else {
    a.kind = 1;
    a.width = cfg.get<double>("heat.gaussian_width");
    const auto c = cfg.get<std::vector<double>>("heat.gaussian_center");
    for (int d = 0; d < g.ndim; ++d) a.center[d] = c.empty() ? 0.5 * g.length[d] : c[d];
  }

  const Box box = decomp_.box_of(ctx.comm.rank());
  const Index3 ghost{1, 1, g.ndim == 3 ? 1 : 0};
  u_ = Field<double>("temperature", ctx.exec.backend(), box, ghost, 1);
  u_next_ = Field<double>("temperature", ctx.exec.backend(), box, ghost, 1);
  halo_ = std::make_unique<HaloExchange>(decomp_, ctx.comm, ctx.exec, ghost, 1, sizeof(double), "heat.halo");
  overlap_ = HaloOverlap(*halo_, box, ghost);
  CUMULUS_KERNEL(ctx.exec, kernels, fill)(ctx.exec, u_.view(), box, analytic_, 0.0);
}

std::string HeatModel::describe() const {
  const Index3& n = decomp_.global_cells();
  return strprintf("heat: %dD, %dx%dx%d cells, alpha %g, dt %.6g, boundaries %s/%s/%s, initial %s; %s%s", decomp_.ndim(),
                   n[0], n[1], n[2], alpha_, dt_, periodic_[0] ? "periodic" : "fixed",
                   periodic_[1] ? "periodic" : "fixed", decomp_.ndim() == 3 ? (periodic_[2] ? "periodic" : "fixed") : "-",
                   analytic_.kind == 0 ? "sine mode" : "gaussian", decomp_.describe().c_str(),
                   halo_->staged() ? "; halos staged through pinned host memory" : "");
}

void HeatModel::advance(double /*time*/, double dt) {
  const Exec& ex = ctx_.exec;
  const View<double> u = u_.view();
  const Box box = u_.interior();
  const int me = ctx_.comm.rank();
  // Physical boundaries first: they touch only ghost cells that no halo message fills.
  for (int d = 0; d < decomp_.ndim(); ++d) {
    if (periodic_[d]) continue;
    for (int side = 0; side < 2; ++side) {
      if (!decomp_.on_boundary(me, d, side)) continue;
      Box layer = box;
      layer.lo[d] = side == 0 ? box.lo[d] - 1 : box.hi[d];
      layer.hi[d] = layer.lo[d] + 1;
      CUMULUS_KERNEL(ex, kernels, fixed_face)(ex, u, layer, d, side == 0 ? 0 : decomp_.global_cells()[d], fixed_value_);
    }
  }
  const double cx = alpha_ * dt / (analytic_.h[0] * analytic_.h[0]);
  const double cy = alpha_ * dt / (analytic_.h[1] * analytic_.h[1]);
  const double cz = decomp_.ndim() == 3 ? alpha_ * dt / (analytic_.h[2] * analytic_.h[2]) : 0.0;
  const bool three_d = decomp_.ndim() == 3;
  const View<double> un = u_next_.view();
  overlap_.sweep(ex, *halo_, u_,
                 [&](const Box& b) { CUMULUS_KERNEL(ex, kernels, update)(ex, u, un, b, cx, cy, cz, three_d); });
  u_.swap(u_next_);
}

std::optional<HealthIssue> HeatModel::check_health() {
  const Box g = decomp_.global_box();
  const std::int64_t local = CUMULUS_KERNEL(ctx_.exec, kernels, first_nonfinite)(ctx_.exec, u_.view(), u_.interior(), g);
  const std::optional<std::string> where = first_bad_cell_location(ctx_.comm, local, g);
  if (!where) return std::nullopt;
  return HealthIssue{"temperature", *where};
}

std::vector<std::pair<std::string, double>> HeatModel::diagnostics(double time) {
  const Exec& ex = ctx_.exec;
  const View<double> u = u_.view();
  const Box b = u_.interior();
  double cell_volume = 1;
  for (int d = 0; d < decomp_.ndim(); ++d) cell_volume *= analytic_.h[d];
  const double n = static_cast<double>(decomp_.global_box().volume());
  const Comm& c = ctx_.comm;
  return {
      {"heat_content", c.sum(CUMULUS_KERNEL(ex, kernels, sum)(ex, u, b)) * cell_volume},
      {"min", c.min(CUMULUS_KERNEL(ex, kernels, minimum)(ex, u, b))},
      {"max", c.max(CUMULUS_KERNEL(ex, kernels, maximum)(ex, u, b))},
      {"l2_error", std::sqrt(c.sum(CUMULUS_KERNEL(ex, kernels, error_sq)(ex, u, b, analytic_, time)) / n)},
      {"linf_error", c.max(CUMULUS_KERNEL(ex, kernels, error_max)(ex, u, b, analytic_, time))},
  };
}

StateDescription HeatModel::state() {
  StateDescription s;
  s.geometry.ndim = decomp_.ndim();
  for (int d = 0; d < 3; ++d) s.geometry.spacing[d] = analytic_.h[d];
  const Index3& dims = decomp_.dims();
  s.decomposition = {dims[0], dims[1], dims[2]};
  s.arrays.push_back(grid_array(u_, ctx_.exec, decomp_.global_box(), "temperature", "K"));
  return s;
}

namespace {
std::unique_ptr<Model> create(const Config& cfg, const Context& ctx) { return std::make_unique<HeatModel>(cfg, ctx); }
}  // namespace

void register_solver(SolverRegistry& r) {
  r.add(SolverEntry{"heat", "heat equation, explicit 2nd-order stencil, 2D/3D (the reference solver)", declare_keys,
                    check, create, {"temperature"}});
}

}  // namespace cumulus::heat
