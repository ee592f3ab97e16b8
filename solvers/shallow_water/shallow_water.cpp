// The shallow-water model: keys, checks, test cases, the RK4 step, diagnostics and the state
// description (host code; the kernels are in sw_kernels.cpp).
#include "solvers/shallow_water/shallow_water.hpp"
#include "solvers/shallow_water/sw_kernels.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/constants.hpp"
#include "core/log.hpp"
#include "core/memory.hpp"
#include "core/strings.hpp"

namespace cumulus::sw {

namespace {
// Williamson et al. (1992), section 2.
constexpr double kRadius = 6.37122e6;   // m
constexpr double kOmega = 7.292e-5;     // 1/s
constexpr double kGravity = 9.80616;    // m/s^2
constexpr double kDay = 86400.0;

const std::vector<std::string> kCases = {"williamson1", "williamson2", "williamson5", "williamson6", "galewsky"};

// The coarsest grid each case is meaningful on: case 5's mountain (radius 20 degrees) needs a
// few cells across it, Galewsky's jet (20 degrees of latitude wide) about ten.
int min_resolution(const std::string& c) {
  if (c == "williamson5" || c == "williamson6") return 16;
  if (c == "galewsky") return 32;
  return 8;
}

struct Setup {
  int n = 48, tx = 1, ty = 1;
  std::string test_case;
  double angle = 0;
  bool perturb = true;
  double cfl = 0.8, dt = 0, hv_time = 0;
};

Setup read_setup(const Config& cfg) {
  Setup s;
  s.n = static_cast<int>(cfg.get<std::int64_t>("shallow_water.resolution"));
  const auto t = cfg.get<std::vector<std::int64_t>>("shallow_water.tiles");
  s.tx = static_cast<int>(t[0]);
  s.ty = static_cast<int>(t.size() > 1 ? t[1] : t[0]);
  s.test_case = cfg.get<std::string>("shallow_water.case");
  s.angle = cfg.get<double>("shallow_water.flow_angle");
  s.perturb = cfg.get<bool>("shallow_water.galewsky_perturbation");
  s.cfl = cfg.get<double>("shallow_water.cfl");
  s.dt = cfg.get<double>("shallow_water.dt");
  s.hv_time = cfg.get<double>("shallow_water.hyperviscosity_time");
  return s;
}

// Largest CFL number (dt times the fastest signal over the narrowest cell) that the sixth-order
// centred differences with RK4 tolerate: RK4 is stable up to 2.83 on the imaginary axis, the
// stencil's largest modified wavenumber is 1.586 / dx, and a gravity wave along the diagonal sees
// both directions in quadrature: 2.83 / (1.586 sqrt 2) = 1.26. At 1.2 the Galewsky jet (C96, no
// hyperviscosity) and Williamson case 6 (C48) run stably.
constexpr double kMaxCfl = 1.2;

// Narrowest cell of C<n> on the unit sphere: the height of the cell's parallelogram, sqrt(g) /
// |a_alpha| times the grid angle, smallest at the cube's corners.
double min_width(const CubedSphere& g) {
  double w = std::numeric_limits<double>::max();
  const CubePanels P = CubePanels::standard();
  for (int i = 0; i < g.n(); ++i) {
    const CubePoint c = cube_point(P, 0, g.centre_tan(i), g.centre_tan(i));
    const double la = std::sqrt(c.ca[0] * c.ca[0] + c.ca[1] * c.ca[1] + c.ca[2] * c.ca[2]);
    w = std::min(w, c.sqrtg / la * g.dangle());
  }
  return w;
}

void rotate(const double axis[3], double angle, const double v[3], double out[3]) {
  // Rodrigues' formula.
  const double c = std::cos(angle), s = std::sin(angle);
  const double kv = axis[0] * v[0] + axis[1] * v[1] + axis[2] * v[2];
  const double kxv[3] = {axis[1] * v[2] - axis[2] * v[1], axis[2] * v[0] - axis[0] * v[2], axis[0] * v[1] - axis[1] * v[0]};
  for (int m = 0; m < 3; ++m) out[m] = v[m] * c + kxv[m] * s + axis[m] * kv * (1 - c);
}

// The test cases' initial (and, for cases 1 and 2, exact) fields at a point of the unit sphere.
class TestCase {
 public:
  explicit TestCase(const Setup& s) : name_(s.test_case), perturb_(s.perturb) {
    axis_[0] = 0;
    axis_[1] = 0;
    axis_[2] = 1;
    if (name_ == "williamson1" || name_ == "williamson2") {
      // Solid-body rotation about an axis tilted by the flow angle from the pole.
      axis_[0] = -std::sin(s.angle);
      axis_[2] = std::cos(s.angle);
    }
    if (name_ == "galewsky") build_galewsky();
  }
  bool advection_only() const { return name_ == "williamson1"; }
  bool has_exact() const { return name_ == "williamson1" || name_ == "williamson2"; }
  // Coriolis: case 2 rotates it with the flow (Williamson's f = 2 Omega (-cos l cos t sin a + sin t cos a)).
  std::array<double, 3> coriolis() const {
    if (name_ == "williamson2") return {2 * kOmega * axis_[0], 2 * kOmega * axis_[1], 2 * kOmega * axis_[2]};
    return {0, 0, 2 * kOmega};
  }

  void initial(const double r[3], double* h, double* hs, double V[3]) const {
    const double lat = std::asin(std::clamp(r[2], -1.0, 1.0));
    double lon = std::atan2(r[1], r[0]);
    if (lon < 0) lon += 2 * kPi;
    const double east[3] = {-std::sin(lon), std::cos(lon), 0};
    const double north[3] = {-std::sin(lat) * std::cos(lon), -std::sin(lat) * std::sin(lon), std::cos(lat)};
    double u = 0, v = 0;
    *hs = 0;
    if (name_ == "williamson1" || name_ == "williamson2") {
      const double u0 = 2 * kPi * kRadius / (12 * kDay);
      const double w[3] = {axis_[1] * r[2] - axis_[2] * r[1], axis_[2] * r[0] - axis_[0] * r[2], axis_[0] * r[1] - axis_[1] * r[0]};
      for (int m = 0; m < 3; ++m) V[m] = u0 * w[m];
      *h = exact(r, 0.0);
      return;
    }
    if (name_ == "williamson5") {
      const double u0 = 20, h0 = 5960, hs0 = 2000, R = kPi / 9, lc = 1.5 * kPi, pc = kPi / 6;
      u = u0 * std::cos(lat);
      const double sl = std::sin(lat);
      const double rr = std::min(R, std::sqrt((lon - lc) * (lon - lc) + (lat - pc) * (lat - pc)));
      *hs = hs0 * (1 - rr / R);
      *h = h0 - (kRadius * kOmega * u0 + 0.5 * u0 * u0) * sl * sl / kGravity - *hs;
    } else if (name_ == "williamson6") {
      const double w = 7.848e-6, K = 7.848e-6, R = 4, h0 = 8000, a = kRadius;
      const double c = std::cos(lat), s = std::sin(lat);
      const double cR = std::pow(c, R), cR1 = std::pow(c, R - 1), c2R = std::pow(c, 2 * R);
      u = a * w * c + a * K * cR1 * (R * s * s - c * c) * std::cos(R * lon);
      v = -a * K * R * cR1 * s * std::sin(R * lon);
      const double A = 0.5 * w * (2 * kOmega + w) * c * c +
                       0.25 * K * K * c2R * ((R + 1) * c * c + (2 * R * R - R - 2) - 2 * R * R / (c * c));
      const double B = 2 * (kOmega + w) * K / ((R + 1) * (R + 2)) * cR * ((R * R + 2 * R + 2) - (R + 1) * (R + 1) * c * c);
      const double C = 0.25 * K * K * c2R * ((R + 1) * c * c - (R + 2));
      *h = (kGravity * h0 + a * a * (A + B * std::cos(R * lon) + C * std::cos(2 * R * lon))) / kGravity;
    } else {  // galewsky
      u = jet(lat);
      *h = galewsky_height(lat);
      if (perturb_) {
        // h' = h_hat cos(phi) exp(-(lambda/alpha)^2) exp(-((phi2 - phi)/beta)^2), lambda in (-pi, pi).
        const double l = lon > kPi ? lon - 2 * kPi : lon;
        const double al = 1.0 / 3, be = 1.0 / 15, p2 = kPi / 4;
        *h += 120.0 * std::cos(lat) * std::exp(-(l / al) * (l / al)) * std::exp(-((p2 - lat) / be) * ((p2 - lat) / be));
      }
    }
    for (int m = 0; m < 3; ++m) V[m] = u * east[m] + v * north[m];
  }

  // Cases 1 and 2: the exact depth at time t (case 1: the bell carried by the solid-body rotation;
  // case 2: the steady state).
  double exact(const double r[3], double t) const {
    const double u0 = 2 * kPi * kRadius / (12 * kDay);
    if (name_ == "williamson2") {
      const double gh0 = 2.94e4;
      const double s = r[0] * axis_[0] + r[1] * axis_[1] + r[2] * axis_[2];
      return (gh0 - (kRadius * kOmega * u0 + 0.5 * u0 * u0) * s * s) / kGravity;
    }
    // The bell's centre (longitude 3 pi / 2, latitude 0) turned about the axis by u0 t / a.
    const double c0[3] = {std::cos(1.5 * kPi), std::sin(1.5 * kPi), 0};
    double c[3];
    rotate(axis_, u0 * t / kRadius, c0, c);
    const double cosd = std::clamp(r[0] * c[0] + r[1] * c[1] + r[2] * c[2], -1.0, 1.0);
    const double dist = kRadius * std::acos(cosd), R = kRadius / 3;
    return dist < R ? 500.0 * (1 + std::cos(kPi * dist / R)) : 0.0;
  }

 private:
  // Galewsky et al. (2004): u = u_max / e_n exp(1 / ((phi - phi0)(phi - phi1))) between phi0 and phi1.
  static constexpr double kPhi0 = kPi / 7, kPhi1 = kPi / 2 - kPi / 7, kUmax = 80;
  static double jet(double phi) {
    if (phi <= kPhi0 || phi >= kPhi1) return 0;
    const double en = std::exp(-4.0 / ((kPhi1 - kPhi0) * (kPhi1 - kPhi0)));
    return kUmax / en * std::exp(1.0 / ((phi - kPhi0) * (phi - kPhi1)));
  }
  // Balanced depth: g h(phi) = g h0 - integral from -pi/2 to phi of a u (f + tan(phi) u / a),
  // tabulated by the trapezoidal rule on a fine grid across the jet; h0 makes the global mean
  // depth 10 km (the mean is (1/2) integral of h cos(phi), by the same rule).
  void build_galewsky() {
    const int m = 200000;
    table_.assign(m + 1, 0.0);
    auto integrand = [](double p) {
      const double u = jet(p);
      return kRadius * u * (2 * kOmega * std::sin(p) + std::tan(p) * u / kRadius);
    };
    const double dp = (kPhi1 - kPhi0) / m;
    for (int k = 1; k <= m; ++k)
      table_[k] = table_[k - 1] + 0.5 * dp * (integrand(kPhi0 + (k - 1) * dp) + integrand(kPhi0 + k * dp));
    // Mean of -integral/g over the sphere: (1/2) int_{-pi/2}^{pi/2} (-I(phi)/g) cos(phi) dphi.
    const int q = 400000;
    double mean = 0;
    const double dq = kPi / q;
    for (int k = 0; k < q; ++k) {
      const double p = -kPi / 2 + (k + 0.5) * dq;
      mean += -integral(p) / kGravity * std::cos(p) * dq;
    }
    h0_ = 10000.0 - 0.5 * mean;
  }
  double integral(double phi) const {
    if (phi <= kPhi0) return 0;
    if (phi >= kPhi1) return table_.back();
    const double x = (phi - kPhi0) / (kPhi1 - kPhi0) * (table_.size() - 1);
    const std::size_t k = std::min(static_cast<std::size_t>(x), table_.size() - 2);
    const double f = x - k;
    return table_[k] * (1 - f) + table_[k + 1] * f;
  }
  double galewsky_height(double phi) const { return h0_ - integral(phi) / kGravity; }

  std::string name_;
  bool perturb_;
  double axis_[3];
  std::vector<double> table_;
  double h0_ = 0;
};

// The fastest signal (gravity wave plus flow speed) of the initial state, over the cell centres of
// C<n> (checks of huge grids sample C512: the check only has to catch a step that is far off).
double initial_cmax(const TestCase& tc, int n) {
  const CubedSphere g(n, 1, 1);
  const CubePanels P = CubePanels::standard();
  double cmax = 0;
  for (int p = 0; p < 6; ++p)
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) {
        const CubePoint c = cube_point(P, p, g.centre_tan(i), g.centre_tan(j));
        double h, hs, V[3];
        tc.initial(c.r, &h, &hs, V);
        const double wave = tc.advection_only() ? 0.0 : std::sqrt(kGravity * std::max(h, 0.0));
        cmax = std::max(cmax, std::sqrt(V[0] * V[0] + V[1] * V[1] + V[2] * V[2]) + wave);
      }
  return cmax;
}

double damping_nu(const CubedSphere& g, double tau) {
  // The grid-scale mode of the five-point operator has eigenvalue about 8 / dx^2 at the panel's
  // centre; del^4 damps it at nu (8 / dx^2)^2: an e-folding time tau gives nu = dx^4 / (64 tau).
  if (tau <= 0) return 0;
  const double dx = kRadius * g.dangle();
  return dx * dx * dx * dx / (64.0 * tau);
}

}  // namespace

void declare_keys(Schema& s) {
  s.key("shallow_water.resolution", ValueType::integer, "Cells per panel edge N of the cubed sphere C<N> (6 N^2 cells)")
      .def(std::int64_t{48})
      .at_least(8)
      .at_most(16384);
  s.key("shallow_water.tiles", ValueType::integer_array,
        "Tiles per panel [tx, ty] (one entry: both); ranks own whole tiles, so at most 6 tx ty ranks. Each must divide the resolution")
      .def(std::vector<std::int64_t>{1, 1})
      .length(1, 2)
      .at_least(1);
  s.key("shallow_water.case", ValueType::string,
        "Initial state: williamson1 (cosine bell advection), williamson2 (steady geostrophic flow), williamson5 "
        "(flow over a mountain), williamson6 (Rossby-Haurwitz wave) or galewsky (barotropic jet instability)")
      .def(std::string("williamson2"))
      .one_of(kCases);
  s.key("shallow_water.flow_angle", ValueType::real,
        "Angle between the solid-body rotation's axis and the pole, cases 1 and 2 (Williamson's alpha)")
      .def(0.0)
      .at_least(-kPi)
      .at_most(kPi)
      .unit("rad");
  s.key("shallow_water.galewsky_perturbation", ValueType::boolean,
        "Galewsky case: add the 120 m height bump that triggers the instability (false: the balanced jet alone)")
      .def(true);
  s.key("shallow_water.cfl", ValueType::real,
        "When shallow_water.dt = 0: dt = cfl x (narrowest cell width) / (fastest gravity wave + flow speed at the start)")
      .def(0.8)
      .positive();
  s.key("shallow_water.dt", ValueType::real, "Time step (0: from shallow_water.cfl)").def(0.0).at_least(0).unit("s");
  s.key("shallow_water.hyperviscosity_time", ValueType::real,
        "e-folding time of the grid-scale mode under the del^4 hyperviscosity on depth and velocity: nu = dx^4 / (64 t), "
        "dx = a pi / (2 N); 0 turns it off")
      .def(6.0 * 3600)
      .at_least(0)
      .unit("s");
}

void check(const Config& cfg, int nranks) {
  const Setup s = read_setup(cfg);
  const int need = min_resolution(s.test_case);
  if (s.n < need)
    cfg.fail("shallow_water.resolution",
             strprintf("C%d is too coarse for %s: it needs at least C%d", s.n, s.test_case.c_str(), need));
  const auto t = cfg.get<std::vector<std::int64_t>>("shallow_water.tiles");
  if (s.n % s.tx != 0 || s.n % s.ty != 0)
    cfg.fail("shallow_water.tiles", strprintf("[%d, %d] does not divide the %d cells of a panel edge", s.tx, s.ty, s.n));
  if (s.n / s.tx < 4 || s.n / s.ty < 4)
    cfg.fail("shallow_water.tiles", strprintf("tiles of %d x %d cells are too small: at least 4 x 4", s.n / s.tx, s.n / s.ty));
  const int ntiles = 6 * s.tx * s.ty;
  if (nranks > ntiles)
    cfg.fail("shallow_water.tiles",
             strprintf("%d ranks but only %d tiles (6 panels x %d x %d): every rank owns whole tiles; use at most %d "
                       "ranks or more tiles",
                       nranks, ntiles, s.tx, s.ty, ntiles));
  // Memory per rank, before anything else is set up from the grid: the fields the model allocates
  // (ShallowWaterModel's constructor), per tile with their ghost rims, on the busiest rank.
  {
    const double nx = static_cast<double>(s.n / s.tx), ny = static_cast<double>(s.n / s.ty);
    const double rim = (nx + 2 * kCubeGhost) * (ny + 2 * kCubeGhost), inner = nx * ny;
    // With ghosts: state, stage, laplacian (4 each), points (5), topography (1), metric; without:
    // acc, tendency (4 each), vorticity, area (1 each); and the face fluxes (about 2 per cell).
    // At set-up the host also holds the metric as computed and a zero-filled copy of the largest
    // field (2 x kMetricComponents more): measured, C192 -> C384 on one rank grows the peak
    // resident memory by 660 bytes a cell; this estimate by 684.
    const double doubles = rim * (4 + 4 + 4 + 5 + 1 + 3 * kMetricComponents) + inner * (4 + 4 + 1 + 1 + 2);
    const double tiles_per_rank = std::ceil(static_cast<double>(ntiles) / nranks);
    const double cells = 6.0 * s.n * static_cast<double>(s.n);
    // check_node_memory takes an even split: give it the busiest rank's bytes spread over all ranks.
    check_node_memory(cfg, "shallow_water.resolution", cells, 8.0 * doubles * tiles_per_rank * nranks / cells, nranks,
                      "fields of doubles with ghost rims");
  }
  if (s.cfl > kMaxCfl)
    cfg.fail("shallow_water.cfl", strprintf("%g is above %g, the stability limit of centred differences with RK4 "
                                            "(2.83 / (1.586 sqrt 2) = 1.26 for sixth-order differences, less a margin)",
                                            s.cfl, kMaxCfl));
  // The step and the hyperviscosity against their stability limits, before anything is written.
  const CubedSphere grid(s.n, s.tx, s.ty);
  const TestCase tc(s);
  const double cmax = initial_cmax(tc, std::min(s.n, 512));
  const double width = kRadius * min_width(grid);
  const double dt = s.dt > 0 ? s.dt : s.cfl * width / cmax;
  const double cfl = dt * cmax / width;
  if (cfl > kMaxCfl)
    cfg.fail("shallow_water.dt", strprintf("dt = %g s gives a CFL number of %.3g (fastest signal %.4g m/s, narrowest "
                                           "cell %.4g m), above the stability limit %g: use dt <= %.4g s",
                                           dt, cfl, cmax, width, kMaxCfl, kMaxCfl * width / cmax));
  // RK4 is stable for real eigenvalues down to -2.78: the hyperviscosity's fastest rate
  // (about nu (8 / dx_min^2)^2) must stay inside.
  const double rate = damping_nu(grid, s.hv_time) * 64.0 / (width * width * width * width);
  if (dt * rate > 2.5)
    cfg.fail("shallow_water.hyperviscosity_time",
             strprintf("%g s is too short for dt = %g s: the hyperviscosity would be unstable (dt x rate = %.3g > 2.5); "
                       "use at least %.4g s",
                       s.hv_time, dt, dt * rate, s.hv_time * dt * rate / 2.5));
}

class ShallowWaterModel : public Model {
 public:
  ShallowWaterModel(const Config& cfg, const Context& ctx)
      : ctx_(ctx), setup_(read_setup(cfg)), case_(setup_), grid_(setup_.n, setup_.tx, setup_.ty),
        layout_(grid_, ctx.comm.size()) {
    const Exec& ex = ctx.exec;
    const int me = ctx.comm.rank();
    t0_ = layout_.first(me);
    t1_ = t0_ + layout_.count(me);
    nx_ = grid_.tile_nx();
    ny_ = grid_.tile_ny();
    interior_ = Box(0, 0, t0_, nx_, ny_, t1_);
    const Backend b = ex.backend();
    auto field = [&](const char* name, int ncomp, bool ghost) {
      Field<double> f(name, b, interior_, ghost ? Index3{kCubeGhost, kCubeGhost, 0} : Index3{0, 0, 0}, ncomp);
      std::vector<double> zero(f.buffer().size(), 0.0);
      f.buffer().from_host(ex, zero);
      return f;
    };
    u_ = field("state", 4, true);
    stage_ = field("stage", 4, true);
    acc_ = field("acc", 4, false);
    ds_ = field("tendency", 4, false);
    q_ = field("points", 5, true);
    l_ = field("laplacian", 4, true);
    hs_ = field("topography", 1, true);
    w_ = field("vorticity", 1, false);
    area_ = field("area", 1, false);
    geo_ = field("metric", kMetricComponents, true);
    faces_ = Buffer<double>(b, static_cast<std::size_t>(layout_.faces_size(me)));
    {
      std::vector<std::int64_t> off;
      std::vector<double> out;
      for (const CubeLayout::EdgeFace& f : layout_.panel_edge_faces(me)) {
        off.push_back(f.offset);
        out.push_back(f.outward);
      }
      edge_offsets_ = Buffer<std::int64_t>::copy_of(ex, off);
      edge_outward_ = Buffer<double>::copy_of(ex, out);
    }

    tc_ = Buffer<double>::copy_of(ex, grid_.centre_tan_table());
    g_.panels = grid_.panels();
    g_.tc = tc_.data();
    g_.n = grid_.n();
    g_.nx = nx_;
    g_.ny = ny_;
    g_.tx = grid_.tx();
    g_.ty = grid_.ty();
    g_.dangle = grid_.dangle();
    g_.radius = kRadius;
    ph_.gravity = kGravity;
    const auto cor = case_.coriolis();
    for (int m = 0; m < 3; ++m) ph_.coriolis[m] = cor[m];
    nu_ = damping_nu(grid_, setup_.hv_time);
    ph_.nu = nu_;
    ph_.advection_only = case_.advection_only();

    ghosts_ = CubeGatherPlan(layout_.ghost_fill(me), ctx.comm, ex, "sw.ghosts");

    // Initial state, topography and areas, evaluated on the host at the cell centres.
    const std::size_t ncell = static_cast<std::size_t>(interior_.volume());
    std::vector<double> h(ncell), hs(ncell), v(3 * ncell), area(ncell);
    h0_.resize(ncell);
    area_host_.resize(ncell);
    centres_.resize(3 * ncell);
    for_cells([&](std::size_t c, int p, int I, int J) {
      const CubePoint pt = centre(p, I, J);
      double V[3];
      case_.initial(pt.r, &h[c], &hs[c], V);
      for (int m = 0; m < 3; ++m) {
        v[m * ncell + c] = V[m];
        centres_[3 * c + m] = pt.r[m];
      }
      area[c] = grid_.cell_area(I, J);
    });
    h0_ = h;
    area_host_ = area;
    hs_host_ = hs;
    std::vector<double> packed(4 * ncell);
    std::copy(h.begin(), h.end(), packed.begin());
    std::copy(v.begin(), v.end(), packed.begin() + static_cast<std::ptrdiff_t>(ncell));
    u_.interior_from_host(ex, packed);
    hs_.interior_from_host(ex, hs);
    area_.interior_from_host(ex, area);
    // The unit of the exact mass sums, 2^-116 (sr, and sr m/s for the fluxes); they take terms up
    // to 2^43 (4 pi is 2^3.65). Both depend on nothing but the grid, so not on ranks or restarts.
    sum_exp_ = std::ilogb(4.0 * kPi) + 40 - kExactSumBits;
    ExactSum total;
    for (double a : area) total = total + ExactSum::of(a, sum_exp_);
    ctx.comm.sum_in_place(total.words(), ExactSum::kWords);
    if (!total.value(sum_exp_, &area_total_)) throw Error("shallow_water: the cell areas do not sum");
    ghosts_.apply(hs_.buffer().data(), 1, stride());
    fill_metric();

    // The time step: fixed for the run, from the initial state (the same on every rank count
    // and after a restart).
    double cmax = 0;
    for (std::size_t c = 0; c < ncell; ++c) {
      const double speed = std::sqrt(v[c] * v[c] + v[ncell + c] * v[ncell + c] + v[2 * ncell + c] * v[2 * ncell + c]);
      const double wave = case_.advection_only() ? 0.0 : std::sqrt(kGravity * std::max(h[c], 0.0));
      cmax = std::max(cmax, speed + wave);
    }
    cmax = ctx.comm.max(cmax);
    width_ = kRadius * min_width(grid_);
    dt_ = setup_.dt > 0 ? setup_.dt : setup_.cfl * width_ / cmax;
    cfl_ = dt_ * cmax / width_;  // check() refused unstable steps before anything was allocated
    initial_ = sums();
  }

  std::string describe() const override {
    return strprintf("shallow_water: %s%s, %s; a = %.6g m, Omega = %.6g 1/s, g = %.6g m/s^2; dt %.6g s (CFL %.3g, "
                     "narrowest cell %.4g km); hyperviscosity nu = %.4g m^4/s (grid-scale e-folding %.4g h); "
                     "ghost plan %zu values, %zu sent per field component",
                     setup_.test_case.c_str(),
                     setup_.test_case == "williamson1" || setup_.test_case == "williamson2"
                         ? strprintf(" (flow angle %g rad)", setup_.angle).c_str()
                         : (setup_.test_case == "galewsky" ? (setup_.perturb ? " (perturbed)" : " (unperturbed)") : ""),
                     grid_.describe_layout(ctx_.comm.size()).c_str(), kRadius, kOmega, kGravity, dt_, cfl_,
                     width_ / 1e3, nu_, setup_.hv_time / 3600, ghosts_.destinations(),
                     ghosts_.values_sent_per_component());
  }
  double preferred_dt() const override { return dt_; }
  double work_per_step() const override { return 6.0 * grid_.n() * grid_.n(); }
  std::string work_unit() const override { return "cell-updates"; }

  void advance(double /*time*/, double dt) override {
    const Exec& ex = ctx_.exec;
    const Box points = interior_.grown({kCubeGhost, kCubeGhost, 0});
    const Box faces = Box(0, 0, t0_, nx_ + 1, ny_ + 1, t1_);
    const View<double> fa = face_view(false), fb = face_view(true);
    for (int s = 0; s < 4; ++s) {
      Field<double>& in = s == 0 ? u_ : stage_;
      ghosts_.apply(in.buffer().data(), 4, stride());
      const View<double> m = geo_.view();
      if (nu_ > 0) {
        CUMULUS_KERNEL(ex, kernels, laplacian)(ex, g_, m, area_.view(), in.view(), l_.view(), interior_);
        ghosts_.apply(l_.buffer().data(), 4, stride());
      }
      CUMULUS_KERNEL(ex, kernels, point_values)(ex, g_, ph_, m, in.view(), hs_.view(), q_.view(), points);
      CUMULUS_KERNEL(ex, kernels, fluxes)(ex, g_, ph_, m, q_.view(), l_.view(), fa, fb, faces);
      CUMULUS_KERNEL(ex, kernels, tendency)(ex, g_, ph_, m, area_.view(), in.view(), q_.view(), l_.view(), fa, fb,
                                            ds_.view(), interior_);
      const double shift = mass_shift();
      if (s < 3)
        CUMULUS_KERNEL(ex, kernels, rk_stage)(ex, u_.view(), ds_.view(), acc_.view(), stage_.view(), interior_,
                                              2.0, s == 0, s < 2 ? 0.5 * dt : dt, shift);
      else
        CUMULUS_KERNEL(ex, kernels, rk_final)(ex, u_.view(), ds_.view(), acc_.view(), interior_, dt / 6.0, shift);
    }
  }

  // Each panel computes the flux through a panel edge from its own duo-grid ghosts and keeps it:
  // the fluxes then telescope along every grid line, and no mass source sits on the panel edges
  // (averaging the two sides' fluxes put one there, the largest seed of the cube's wavenumber-4
  // imprint on a balanced jet: validation/climate/README.md). The two sides' fluxes differ by the
  // truncation error, so the stage loses the net outflow through the panel edges; this returns
  // the even correction of dh/dt that gives it back, (net outflow) / (sum of areas), both exact
  // sums, so mass is conserved to round-off and the shift has the same bits at any rank count and
  // on any backend. A non-finite flux gives 0: the health check then finds where it went bad.
  double mass_shift() {
    const Exec& ex = ctx_.exec;
    ExactSum t = CUMULUS_KERNEL(ex, kernels, edge_outflow)(ex, faces_.data(), edge_offsets_.data(), edge_outward_.data(),
                                                           static_cast<std::int64_t>(edge_offsets_.size()),
                                                           std::ldexp(1.0, -sum_exp_));
    ctx_.comm.sum_in_place(t.words(), ExactSum::kWords);
    double outflow = 0;
    if (!t.value(sum_exp_, &outflow)) return 0.0;
    return outflow / area_total_;
  }

  std::optional<HealthIssue> check_health() override {
    const Exec& ex = ctx_.exec;
    // Cells numbered over all tiles, the tile as the k axis (ranks hold consecutive tiles): the
    // first bad cell is the same at any rank count.
    const Box tiles(0, 0, 0, nx_, ny_, grid_.ntiles());
    const std::int64_t local =
        CUMULUS_KERNEL(ex, kernels, first_bad_cell)(ex, u_.view(), interior_, tiles, !case_.advection_only());
    const std::optional<Index3> bad = lowest_bad_cell(ctx_.comm, local, tiles);
    if (!bad) return std::nullopt;
    int p, i0, j0;
    grid_.tile_origin((*bad)[2], &p, &i0, &j0);
    const int I = i0 + (*bad)[0], J = j0 + (*bad)[1];
    const CubePoint c = centre(p, I, J);
    const double lat = std::asin(std::clamp(c.r[2], -1.0, 1.0)) * 180 / kPi;
    const double lon = std::atan2(c.r[1], c.r[0]) * 180 / kPi;
    return HealthIssue{case_.advection_only() ? "depth or velocity (non-finite)" : "depth (non-finite or <= 0) or velocity",
                       strprintf("panel %d cell (%d, %d), longitude %.2f, latitude %.2f degrees", p, I, J, lon, lat)};
  }

  std::vector<std::pair<std::string, double>> diagnostics(double time) override {
    const Sums s = sums();
    std::vector<std::pair<std::string, double>> d = {
        {"mass", s.mass},
        {"mass_change", (s.mass - initial_.mass) / initial_.mass},
        {"energy", s.energy},
        {"energy_change", (s.energy - initial_.energy) / initial_.energy},
        {"potential_enstrophy", s.enstrophy},
        {"enstrophy_change", (s.enstrophy - initial_.enstrophy) / initial_.enstrophy},
        {"depth_min", s.hmin},
        {"depth_max", s.hmax},
    };
    if (case_.has_exact()) {
      const Errors e = errors(time);
      d.push_back({"l1_error", e.l1});
      d.push_back({"l2_error", e.l2});
      d.push_back({"linf_error", e.linf});
    } else {
      d.push_back({"height_change_max", s.dh_max});
    }
    return d;
  }

  StateDescription state() override {
    StateDescription s;
    s.geometry.ndim = 2;
    s.geometry.cell_corners = [this] { return corners(); };
    s.decomposition = {grid_.tx(), grid_.ty(), ctx_.comm.size()};
    auto arr = [&](const char* name, const char* units, int ncomp, bool checkpoint, auto read, auto write) {
      GridArray a;
      a.name = name;
      a.units = units;
      a.dtype = DType::f64;
      a.ncomp = ncomp;
      a.global_box = Box(0, 0, 0, nx_, ny_, grid_.ntiles());
      a.local_box = interior_;
      a.read_local = read;
      if (checkpoint) a.write_local = write;
      a.in_checkpoint = checkpoint;
      s.arrays.push_back(std::move(a));
    };
    auto none = [](const std::vector<unsigned char>&) {};
    const std::size_t n = static_cast<std::size_t>(interior_.volume());
    arr("depth", "m", 1, true, [this, n] { return slice(0, 1, n); },
        [this, n](const std::vector<unsigned char>& b) { replace(0, 1, n, b); });
    arr("velocity", "m/s", 3, true, [this, n] { return slice(1, 3, n); },
        [this, n](const std::vector<unsigned char>& b) { replace(1, 3, n, b); });
    arr("height", "m", 1, false, [this, n] {
          std::vector<double> h = host_state();
          for (std::size_t c = 0; c < n; ++c) h[c] += hs_host_[c];
          h.resize(n);
          return bytes(h);
        }, none);
    arr("topography", "m", 1, false, [this] { return bytes(hs_host_); }, none);
    arr("vorticity", "1/s", 1, false, [this] { return bytes(vorticity()); }, none);
    arr("longitude", "degree", 1, false, [this, n] {
          std::vector<double> v(n);
          for (std::size_t c = 0; c < n; ++c) v[c] = std::atan2(centres_[3 * c + 1], centres_[3 * c]) * 180 / kPi;
          return bytes(v);
        }, none);
    arr("latitude", "degree", 1, false, [this, n] {
          std::vector<double> v(n);
          for (std::size_t c = 0; c < n; ++c) v[c] = std::asin(std::clamp(centres_[3 * c + 2], -1.0, 1.0)) * 180 / kPi;
          return bytes(v);
        }, none);
    arr("cell_area", "m^2", 1, false, [this, n] {
          std::vector<double> v(n);
          for (std::size_t c = 0; c < n; ++c) v[c] = area_host_[c] * kRadius * kRadius;
          return bytes(v);
        }, none);
    return s;
  }

 private:
  struct Sums {
    double mass = 0, energy = 0, enstrophy = 0, hmin = 0, hmax = 0, dh_max = 0;
  };
  struct Errors {
    double l1 = 0, l2 = 0, linf = 0;
  };

  std::int64_t stride() const { return u_.view().sc; }
  View<double> face_view(bool beta) const {
    View<double> v;
    v.lo0 = 0;
    v.lo1 = 0;
    v.lo2 = t0_;
    if (!beta) {
      v.data = faces_.data();
      v.sj = nx_ + 1;
      v.sk = static_cast<std::int64_t>(nx_ + 1) * ny_;
    } else {
      v.data = faces_.data() + static_cast<std::int64_t>(t1_ - t0_) * (nx_ + 1) * ny_;
      v.sj = nx_;
      v.sk = static_cast<std::int64_t>(nx_) * (ny_ + 1);
    }
    return v;
  }
  CubePoint centre(int p, int I, int J) const {
    return cube_point(grid_.panels(), p, grid_.centre_tan(I), grid_.centre_tan(J));
  }
  // f(linear index in (k, j, i) order, panel, I, J) for this rank's cells.
  template <class F>
  void for_cells(F f) const {
    std::size_t c = 0;
    for (int t = t0_; t < t1_; ++t) {
      int p, i0, j0;
      grid_.tile_origin(t, &p, &i0, &j0);
      for (int j = 0; j < ny_; ++j)
        for (int i = 0; i < nx_; ++i) f(c++, p, i0 + i, j0 + j);
    }
  }
  std::vector<double> host_state() const { return u_.interior_to_host(ctx_.exec); }
  static std::vector<unsigned char> bytes(const std::vector<double>& v) {
    std::vector<unsigned char> b(v.size() * sizeof(double));
    std::memcpy(b.data(), v.data(), b.size());
    return b;
  }
  std::vector<unsigned char> slice(int c0, int nc, std::size_t n) const {
    const std::vector<double> all = host_state();
    return bytes(std::vector<double>(all.begin() + static_cast<std::ptrdiff_t>(c0 * n),
                                     all.begin() + static_cast<std::ptrdiff_t>((c0 + nc) * n)));
  }
  void replace(int c0, int nc, std::size_t n, const std::vector<unsigned char>& b) {
    std::vector<double> all = host_state();
    if (b.size() != nc * n * sizeof(double)) throw Error("shallow_water: restart array of the wrong size");
    std::memcpy(all.data() + c0 * n, b.data(), b.size());
    u_.interior_from_host(ctx_.exec, all);
  }
  std::vector<double> vorticity() {
    const Exec& ex = ctx_.exec;
    ghosts_.apply(u_.buffer().data(), 4, stride());
    CUMULUS_KERNEL(ex, kernels, vorticity)(ex, g_, geo_.view(), u_.view(), w_.view(), interior_);
    return w_.interior_to_host(ex);
  }
  // The metric at every cell and ghost of this rank's tiles (extended coordinates beyond panel
  // edges), in the field's (c, k, j, i) layout with its ghost ring.
  void fill_metric() {
    const Box a = geo_.allocated();
    const std::size_t plane = static_cast<std::size_t>(a.volume());
    std::vector<double> m(plane * kMetricComponents, 0.0);
    std::size_t n = 0;
    for (int t = a.lo[2]; t < a.hi[2]; ++t) {
      int p, i0, j0;
      grid_.tile_origin(t, &p, &i0, &j0);
      for (int j = a.lo[1]; j < a.hi[1]; ++j)
        for (int i = a.lo[0]; i < a.hi[0]; ++i, ++n) {
          const CubePoint c = centre(p, i0 + i, j0 + j);
          double* v = &m[n];
          for (int d = 0; d < 3; ++d) {
            v[(kR + d) * plane] = c.r[d];
            v[(kUA + d) * plane] = c.ua[d];
            v[(kUB + d) * plane] = c.ub[d];
            v[(kCA + d) * plane] = c.ca[d];
            v[(kCB + d) * plane] = c.cb[d];
          }
          v[kSqrtG * plane] = c.sqrtg;
          v[kSgAA * plane] = c.sqrtg * c.gaa;
          v[kSgBB * plane] = c.sqrtg * c.gbb;
        }
    }
    geo_.buffer().from_host(ctx_.exec, m);
  }

  std::vector<double> corners() const {
    std::vector<double> out(static_cast<std::size_t>(interior_.volume()) * 12);
    for_cells([&](std::size_t c, int p, int I, int J) {
      double v[4][3];
      grid_.cell_corners(p, I, J, v);
      for (int k = 0; k < 4; ++k)
        for (int m = 0; m < 3; ++m) out[12 * c + 3 * k + m] = kRadius * v[k][m];
    });
    return out;
  }

  // Sums over tiles: each tile's partial sum in a fixed order, then the tiles' in tile order
  // (gathered from all ranks): the same bits at any rank count.
  std::vector<double> tile_order_sum(const std::vector<double>& per_tile, int width) const {
    const int np = ctx_.comm.size();
    std::vector<int> counts(np), displs(np);
    for (int r = 0; r < np; ++r) {
      counts[r] = layout_.count(r) * width;
      displs[r] = layout_.first(r) * width;
    }
    std::vector<double> all(static_cast<std::size_t>(grid_.ntiles()) * width);
    ctx_.comm.all_gather_v(per_tile, all, counts, displs);
    std::vector<double> total(static_cast<std::size_t>(width), 0.0);
    for (int t = 0; t < grid_.ntiles(); ++t)
      for (int m = 0; m < width; ++m) total[m] += all[static_cast<std::size_t>(t) * width + m];
    return total;
  }

  Sums sums() {
    const std::vector<double> s = host_state();
    const std::vector<double> zeta = vorticity();
    const std::size_t n = static_cast<std::size_t>(interior_.volume());
    const std::size_t per_tile = static_cast<std::size_t>(nx_) * ny_;
    std::vector<double> part(static_cast<std::size_t>(t1_ - t0_) * 3, 0.0);
    double hmin = std::numeric_limits<double>::max(), hmax = std::numeric_limits<double>::lowest(), dh = 0;
    const double a2 = kRadius * kRadius;
    const auto cor = case_.coriolis();
    for (std::size_t c = 0; c < n; ++c) {
      const double h = s[c], vx = s[n + c], vy = s[2 * n + c], vz = s[3 * n + c], hs = hs_host_[c];
      const double A = area_host_[c] * a2;
      const double* r = &centres_[3 * c];
      const double f = cor[0] * r[0] + cor[1] * r[1] + cor[2] * r[2];
      const double k2 = vx * vx + vy * vy + vz * vz;
      double* p = &part[(c / per_tile) * 3];
      p[0] += A * h;
      p[1] += A * (0.5 * h * k2 + 0.5 * kGravity * ((h + hs) * (h + hs) - hs * hs));
      p[2] += A * (zeta[c] + f) * (zeta[c] + f) / (2 * h);
      hmin = std::min(hmin, h);
      hmax = std::max(hmax, h);
      dh = std::max(dh, std::fabs(h - h0_[c]));
    }
    const std::vector<double> tot = tile_order_sum(part, 3);
    Sums out;
    out.mass = tot[0];
    out.energy = tot[1];
    out.enstrophy = tot[2];
    out.hmin = ctx_.comm.min(hmin);
    out.hmax = ctx_.comm.max(hmax);
    out.dh_max = ctx_.comm.max(dh);
    return out;
  }

  // Williamson's normalised errors of the depth: l1 = I|h - hT| / I|hT|, l2 = sqrt(I (h - hT)^2 / I hT^2),
  // linf = max|h - hT| / max|hT|, I the area-weighted global integral.
  Errors errors(double time) {
    const std::vector<double> s = host_state();
    const std::size_t n = static_cast<std::size_t>(interior_.volume());
    const std::size_t per_tile = static_cast<std::size_t>(nx_) * ny_;
    std::vector<double> part(static_cast<std::size_t>(t1_ - t0_) * 4, 0.0);
    double emax = 0, tmax = 0;
    for (std::size_t c = 0; c < n; ++c) {
      const double ht = case_.exact(&centres_[3 * c], time), e = s[c] - ht, A = area_host_[c];
      double* p = &part[(c / per_tile) * 4];
      p[0] += A * std::fabs(e);
      p[1] += A * std::fabs(ht);
      p[2] += A * e * e;
      p[3] += A * ht * ht;
      emax = std::max(emax, std::fabs(e));
      tmax = std::max(tmax, std::fabs(ht));
    }
    const std::vector<double> tot = tile_order_sum(part, 4);
    Errors out;
    out.l1 = tot[0] / tot[1];
    out.l2 = std::sqrt(tot[2] / tot[3]);
    out.linf = ctx_.comm.max(emax) / ctx_.comm.max(tmax);
    return out;
  }

  Context ctx_;
  Setup setup_;
  TestCase case_;
  CubedSphere grid_;
  CubeLayout layout_;
  int t0_ = 0, t1_ = 0, nx_ = 0, ny_ = 0;
  Box interior_;
  Field<double> u_, stage_, acc_, ds_, q_, l_, hs_, w_, area_, geo_;
  Buffer<double> faces_, tc_;
  Buffer<std::int64_t> edge_offsets_;  // this rank's panel-edge faces (CubeLayout::panel_edge_faces)
  Buffer<double> edge_outward_;
  Grid g_;
  Physics ph_;
  CubeGatherPlan ghosts_;
  double dt_ = 0, cfl_ = 0, nu_ = 0, width_ = 0;
  int sum_exp_ = 0;          // unit 2^sum_exp_ of the exact mass sums
  double area_total_ = 0;    // sum of the cell areas (unit sphere), an exact sum
  std::vector<double> h0_, hs_host_, area_host_, centres_;
  Sums initial_;
};

std::unique_ptr<Model> create(const Config& cfg, const Context& ctx) {
  return std::make_unique<ShallowWaterModel>(cfg, ctx);
}

void register_solver(SolverRegistry& r) {
  r.add(SolverEntry{"shallow_water",
                    "rotating shallow water on the cubed sphere: Williamson cases 1, 2, 5, 6 and the Galewsky jet",
                    declare_keys,
                    check,
                    create,
                    {"depth", "velocity", "height", "topography", "vorticity", "longitude", "latitude", "cell_area"}});
}

}  // namespace cumulus::sw
