// The lattice Boltzmann model: keys, unit mapping, checks, geometry (flags), the step, diagnostics
// and the state description. Host code; the kernels are in lbm_kernels.cpp.
#include "solvers/lbm/lbm.hpp"
#include "solvers/lbm/lbm_kernels.hpp"

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <memory>

#include "core/constants.hpp"
#include "core/log.hpp"
#include "core/strings.hpp"
#include "mesh/decomposition.hpp"
#include "mesh/field.hpp"
#include "mesh/halo_exchange.hpp"
#include "mesh/stl.hpp"

namespace cumulus::lbm {

namespace {
constexpr const char* kFaces[6] = {"xlo", "xhi", "ylo", "yhi", "zlo", "zhi"};
constexpr const char* kAxes = "xyz";
// Lattice Mach number limit: |u| / c_s with c_s = 1/sqrt(3).
constexpr double kMaxMach = 0.3;
// A cell whose lattice speed passes this has left the scheme's validity: the run stops (exit 3).
constexpr double kDivergedSpeed = 0.5;

struct Obstacle {
  std::string name, shape;
  double center[3] = {0, 0, 0}, radius = 0, lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
  int axis = 2;
  std::shared_ptr<TriangleMesh> mesh;
  bool contains(const double x[3], int ndim) const {
    if (shape == "sphere") {
      double r2 = 0;
      for (int a = 0; a < ndim; ++a) r2 += (x[a] - center[a]) * (x[a] - center[a]);
      return r2 <= radius * radius;
    }
    if (shape == "cylinder") {
      double r2 = 0;
      for (int a = 0; a < ndim; ++a)
        if (a != axis || ndim == 2) r2 += (x[a] - center[a]) * (x[a] - center[a]);
      return r2 <= radius * radius;
    }
    if (shape == "box") {
      for (int a = 0; a < ndim; ++a)
        if (x[a] < lo[a] || x[a] > hi[a]) return false;
      return true;
    }
    return false;  // stl: voxelized separately
  }
  // Where the segment x + t c, t in [0, 1], first enters the body: t, or 0.5 when it is not known
  // (STL meshes: halfway bounce-back) or not found (rounding at a grazing link).
  double wall_fraction(const double x[3], const double c[3], int ndim) const {
    double t = -1;
    if (shape == "sphere" || shape == "cylinder") {
      double a = 0, b = 0, cc = -radius * radius;
      for (int d = 0; d < ndim; ++d) {
        if (shape == "cylinder" && ndim == 3 && d == axis) continue;
        const double r = x[d] - center[d];
        a += c[d] * c[d];
        b += 2 * r * c[d];
        cc += r * r;
      }
      const double disc = b * b - 4 * a * cc;
      if (a > 0 && disc >= 0) t = (-b - std::sqrt(disc)) / (2 * a);
    } else if (shape == "box") {
      double t0 = 0, t1 = 1;
      for (int d = 0; d < ndim; ++d) {
        if (c[d] == 0) {
          if (x[d] < lo[d] || x[d] > hi[d]) t0 = 2;
          continue;
        }
        double ta = (lo[d] - x[d]) / c[d], tb = (hi[d] - x[d]) / c[d];
        if (ta > tb) std::swap(ta, tb);
        t0 = std::max(t0, ta);
        t1 = std::min(t1, tb);
      }
      if (t0 <= t1) t = t0;
    }
    return (t > 1e-3 && t <= 1.0) ? t : 0.5;
  }
};

struct Probe {
  std::string name;
  double pos[3] = {0, 0, 0};
};

// The job in lattice units, and the scales that map it back to physical ones.
struct Setup {
  std::string lattice, precision, collision, initial;
  int ndim = 2;
  Index3 cells{1, 1, 1};
  double length[3] = {1, 1, 1};
  double dx = 1;
  std::array<bool, 3> periodic{true, true, true};
  std::string face_kind[6];
  double rho_phys = 1, U = 1, Lref = 1, Aref = 1, nu = 0;
  double dt = 1, tau = 1, u_ref = 0.05, nu_lat = 0;
  double init_u[3] = {0, 0, 0};  // lattice units
  double accel[3] = {0, 0, 0};   // physical body acceleration
  StepParams params;
  std::vector<Obstacle> obstacles;
  std::vector<Probe> probes;
  double max_speed = 0;  // largest lattice speed the set-up imposes
  double ramp_time = 0;  // s
  bool interpolated_walls = true;  // Bouzidi bounce-back on sphere, cylinder and box obstacles
  double V() const { return dx / dt; }
  double pressure_scale() const { return rho_phys * V() * V() / 3.0; }  // p = (rho_lat - 1) * this
  // Force per unit lattice force: rho V^2 dx^2 (3D), per unit depth rho V^2 dx (2D).
  double force_scale() const { return rho_phys * V() * V() * dx * (ndim == 3 ? dx : 1.0); }
};

template <class T>
T get_at(const std::vector<T>& v, std::size_t i, T fallback) {
  return i < v.size() ? v[i] : fallback;
}

bool explicitly_set(const Config& cfg, const std::string& key) { return cfg.where(key) != "default"; }

std::string face_key(int f, const char* what) { return strprintf("lbm.boundary.%s%s", kFaces[f], what); }

Setup make_setup(const Config& cfg) {
  Setup s;
  s.lattice = cfg.get<std::string>("lbm.lattice");
  s.ndim = s.lattice == "D2Q9" ? 2 : 3;
  s.precision = cfg.get<std::string>("lbm.precision");
  s.collision = cfg.get<std::string>("lbm.collision");
  s.initial = cfg.get<std::string>("lbm.initial");
  const int nd = s.ndim;

  const auto cells = cfg.get<std::vector<std::int64_t>>("lbm.cells");
  if (static_cast<int>(cells.size()) != nd)
    cfg.fail("lbm.cells", strprintf("has %zu entries but lattice %s is %dD: give %d", cells.size(), s.lattice.c_str(),
                                    nd, nd));
  for (int a = 0; a < nd; ++a) {
    if (cells[a] > (1 << 24)) cfg.fail("lbm.cells", strprintf("%lld cells along one axis is more than cumulus indexes (2^24)", static_cast<long long>(cells[a])));
    s.cells[a] = static_cast<int>(cells[a]);
  }
  const auto length = cfg.get<std::vector<double>>("lbm.length");
  if (length.size() != 1 && static_cast<int>(length.size()) != nd)
    cfg.fail("lbm.length", strprintf("has %zu entries: give 1 (the x length; cells are cubes) or %d", length.size(), nd));
  s.dx = length[0] / s.cells[0];
  for (int a = 0; a < nd; ++a) {
    s.length[a] = length.size() == 1 ? s.dx * s.cells[a] : length[a];
    const double h = s.length[a] / s.cells[a];
    if (std::fabs(h - s.dx) > 1e-9 * s.dx)
      cfg.fail("lbm.length", strprintf("cells must be cubes: %g / %d = %g along %c but %g along x; change lbm.cells or lbm.length",
                                       s.length[a], s.cells[a], h, kAxes[a], s.dx));
  }
  if (!(s.dx > 1e-150 && s.dx < 1e150)) cfg.fail("lbm.length", strprintf("a cell size of %g is out of range", s.dx));

  // Boundaries per face.
  for (int f = 0; f < 6; ++f) {
    s.face_kind[f] = cfg.get<std::string>(face_key(f, ""));
    if (f / 2 >= nd && s.face_kind[f] != "periodic")
      cfg.fail(face_key(f, ""), "a 2D lattice has no z faces: leave it periodic (the default)");
  }
  for (int a = 0; a < nd; ++a) {
    const bool p0 = s.face_kind[2 * a] == "periodic", p1 = s.face_kind[2 * a + 1] == "periodic";
    if (p0 != p1)
      cfg.fail(face_key(p0 ? 2 * a + 1 : 2 * a, ""),
               strprintf("%s is periodic, so %s must be too (periodicity joins both faces of an axis)",
                         kFaces[p0 ? 2 * a : 2 * a + 1], kFaces[p0 ? 2 * a + 1 : 2 * a]));
    s.periodic[a] = p0;
  }

  // Units.
  s.rho_phys = cfg.get<double>("lbm.density");
  s.U = cfg.get<double>("lbm.velocity");
  s.Lref = cfg.get<double>("lbm.reference_length");
  if (s.Lref == 0) s.Lref = s.length[nd >= 2 ? 1 : 0];
  s.Aref = cfg.get<double>("lbm.reference_area");
  if (s.Aref == 0) s.Aref = s.Lref * s.Lref;
  const double nu = cfg.get<double>("lbm.viscosity"), re = cfg.get<double>("lbm.reynolds");
  if ((nu > 0) == (re > 0))
    cfg.fail(nu > 0 ? "lbm.reynolds" : "lbm.viscosity",
             "set exactly one of lbm.viscosity (m^2/s) and lbm.reynolds (U L / nu with lbm.velocity and lbm.reference_length)");
  s.nu = nu > 0 ? nu : s.U * s.Lref / re;
  const double tau_key = cfg.get<double>("lbm.tau");
  if (tau_key > 0 && explicitly_set(cfg, "lbm.lattice_velocity"))
    cfg.fail("lbm.tau", "set lbm.tau or lbm.lattice_velocity, not both: each fixes the time step");
  if (tau_key > 0) {
    s.tau = tau_key;
    s.nu_lat = (s.tau - 0.5) / 3.0;
    s.dt = s.nu_lat * s.dx * s.dx / s.nu;
    s.u_ref = s.U * s.dt / s.dx;
  } else {
    s.u_ref = cfg.get<double>("lbm.lattice_velocity");
    s.dt = s.u_ref * s.dx / s.U;
    s.nu_lat = s.nu * s.dt / (s.dx * s.dx);
    s.tau = 3.0 * s.nu_lat + 0.5;
  }
  if (!(s.dt > 0 && std::isfinite(s.dt) && std::isfinite(s.tau)))
    cfg.fail("lbm.viscosity", strprintf("the time step comes out as %g s: check lbm.viscosity, lbm.velocity and lbm.cells", s.dt));
  s.max_speed = s.u_ref;
  const double V = s.V();

  // Collision.
  StepParams& p = s.params;
  p.omega = 1.0 / s.tau;
  const double magic = cfg.get<double>("lbm.magic");
  p.smagorinsky = cfg.get<double>("lbm.smagorinsky");
  if (s.collision == "trt") {
    p.magic = magic;
    p.omega_minus = 1.0 / (magic / (s.tau - 0.5) + 0.5);
  } else {
    p.magic = -1;
    p.omega_minus = p.omega;
    if (explicitly_set(cfg, "lbm.magic")) cfg.fail("lbm.magic", "is a TRT parameter: set lbm.collision = \"trt\" or remove it");
  }
  // BGK loses stability as tau approaches 1/2 sooner than TRT does; Smagorinsky raises the local tau.
  const double tau_min = p.smagorinsky > 0 ? 0.5 : (s.collision == "bgk" ? 0.51 : 0.5005);
  if (!(s.tau > tau_min)) {
    cfg.fail(tau_key > 0 ? "lbm.tau" : (nu > 0 ? "lbm.viscosity" : "lbm.reynolds"),
             strprintf("the relaxation time tau = 3 nu dt / dx^2 + 1/2 = %.6g is unstable for %s%s (needs tau > %g): "
                       "nu_lattice = %.3g; raise lbm.lattice_velocity or lbm.cells%s",
                       s.tau, s.collision == "bgk" ? "BGK" : "TRT", p.smagorinsky > 0 ? " with Smagorinsky" : "", tau_min,
                       s.nu_lat, p.smagorinsky > 0 ? "" : ", or set lbm.smagorinsky for a large-eddy simulation"));
  }

  // TRT next to inlets and outlets: with a large antisymmetric relaxation time (omega- small, from a
  // large magic parameter at tau near 1/2) the open-boundary reconstruction, which rebuilds only the
  // even non-equilibrium part, lets odd modes grow at the inlet until the run diverges (measured:
  // magic 3/16 diverges at tau = 0.515 and 0.53, runs from tau = 0.545, i.e. tau- <= 4.7).
  bool open_faces = false;
  for (int f = 0; f < 6; ++f) open_faces = open_faces || s.face_kind[f] == "inlet" || s.face_kind[f] == "outlet";
  constexpr double kMaxTauMinusOpen = 4.5;
  if (s.collision == "trt" && open_faces && 1.0 / p.omega_minus > kMaxTauMinusOpen) {
    const double magic_max = (kMaxTauMinusOpen - 0.5) * (s.tau - 0.5);
    cfg.fail(explicitly_set(cfg, "lbm.magic") ? "lbm.magic" : "lbm.collision",
             strprintf("TRT with inlets or outlets needs an antisymmetric relaxation time magic / (tau - 1/2) + 1/2 <= %g "
                       "(it is %.3g at tau = %.4g, magic %.4g): it diverges at the inlet otherwise. Use lbm.collision = "
                       "\"bgk\", lbm.magic <= %.3g, or a larger tau (raise lbm.lattice_velocity)",
                       kMaxTauMinusOpen, 1.0 / p.omega_minus, s.tau, magic, magic_max));
  }

  // Body force (an acceleration): Guo forcing with density 1 in lattice units.
  const auto accel = cfg.get<std::vector<double>>("lbm.force");
  if (!accel.empty() && static_cast<int>(accel.size()) != nd)
    cfg.fail("lbm.force", strprintf("has %zu entries, expected %d (one per axis) or none", accel.size(), nd));
  for (int a = 0; a < nd; ++a) {
    s.accel[a] = get_at(accel, a, 0.0);
    p.force[a] = s.accel[a] * s.dt * s.dt / s.dx;
  }
  for (int a = 0; a < 3; ++a) {
    p.global[a] = s.cells[a];
    p.periodic[a] = a >= nd || s.periodic[a];
  }

  // Faces in lattice units.
  for (int f = 0; f < 6; ++f) {
    const std::string& kind = s.face_kind[f];
    FaceSpec& fs = p.face[f];
    fs.kind = kind == "periodic" ? 0 : kind == "wall" ? 1 : kind == "moving_wall" ? 2 : kind == "inlet" ? 3 : 4;
    const std::string vkey = face_key(f, "_velocity"), pkey = face_key(f, "_profile"), prkey = face_key(f, "_pressure");
    const auto vel = cfg.get<std::vector<double>>(vkey);
    const bool uses_velocity = fs.kind == 2 || fs.kind == 3;
    if (!uses_velocity && explicitly_set(cfg, vkey))
      cfg.fail(vkey, strprintf("is used by moving_wall and inlet faces only; %s is %s", kFaces[f], kind.c_str()));
    if (fs.kind != 3 && explicitly_set(cfg, pkey))
      cfg.fail(pkey, strprintf("is used by inlet faces only; %s is %s", kFaces[f], kind.c_str()));
    if (fs.kind != 4 && explicitly_set(cfg, prkey))
      cfg.fail(prkey, strprintf("is used by outlet faces only; %s is %s", kFaces[f], kind.c_str()));
    if (uses_velocity) {
      if (static_cast<int>(vel.size()) != nd)
        cfg.fail(vkey, strprintf("%s %s face needs its velocity: %d numbers in m/s", fs.kind == 3 ? "an" : "a", kind.c_str(), nd));
      double speed2 = 0;
      for (int a = 0; a < nd; ++a) {
        fs.u[a] = vel[a] / V;
        speed2 += fs.u[a] * fs.u[a];
      }
      s.max_speed = std::max(s.max_speed, std::sqrt(speed2));
      const int normal = f / 2;
      const double un = vel[normal];
      if (fs.kind == 2 && un != 0)
        cfg.fail(vkey, strprintf("a moving wall slides along itself: its %c velocity (normal to %s) must be 0, got %g", kAxes[normal], kFaces[f], un));
      if (fs.kind == 3 && !((f % 2 == 0) ? un > 0 : un < 0))
        cfg.fail(vkey, strprintf("an inlet on %s must blow into the domain: its %c velocity must be %s 0, got %g", kFaces[f],
                                 kAxes[normal], f % 2 == 0 ? ">" : "<", un));
      fs.parabolic = fs.kind == 3 && cfg.get<std::string>(pkey) == "parabolic";
    }
    if (fs.kind == 4) fs.rho = 1.0 + cfg.get<double>(prkey) / s.pressure_scale();
  }

  s.ramp_time = cfg.get<double>("lbm.ramp_time");
  s.interpolated_walls = cfg.get<std::string>("lbm.obstacle_walls") == "interpolated";

  // Initial state.
  const auto iu = cfg.get<std::vector<double>>("lbm.initial_velocity");
  if (s.initial == "uniform") {
    if (static_cast<int>(iu.size()) != nd) cfg.fail("lbm.initial_velocity", strprintf("initial = \"uniform\" needs %d numbers in m/s", nd));
  } else if (!iu.empty()) {
    cfg.fail("lbm.initial_velocity", "is used with lbm.initial = \"uniform\" only");
  }
  double init_speed2 = 0;
  for (int a = 0; a < nd; ++a) {
    s.init_u[a] = get_at(iu, a, 0.0) / V;
    init_speed2 += s.init_u[a] * s.init_u[a];
  }
  s.max_speed = std::max(s.max_speed, std::sqrt(init_speed2));
  if (s.initial == "taylor_green" && !(s.periodic[0] && s.periodic[1]))
    cfg.fail("lbm.initial", "taylor_green needs periodic x and y faces");
  if (s.initial == "poiseuille") {
    if (!(s.periodic[0] && s.face_kind[2] == "wall" && s.face_kind[3] == "wall"))
      cfg.fail("lbm.initial", "poiseuille needs a periodic x axis and walls on ylo and yhi");
    if (!(s.accel[0] > 0)) cfg.fail("lbm.force", "poiseuille flow is driven by a body force: give lbm.force with x > 0");
    const double H = s.cells[1];
    const double umax = p.force[0] * H * H / (8.0 * s.nu_lat);
    s.max_speed = std::max(s.max_speed, umax);
  }

  // Obstacles.
  const auto names = cfg.instances("lbm.obstacles");
  if (static_cast<int>(names.size()) > kMaxObstacles)
    cfg.fail("lbm.obstacles." + names[kMaxObstacles] + ".shape", strprintf("%zu obstacles: at most %d", names.size(), kMaxObstacles));
  for (const auto& name : names) {
    Obstacle o;
    o.name = name;
    const std::string k = "lbm.obstacles." + name + ".";
    o.shape = cfg.get<std::string>(k + "shape");
    auto vec = [&](const std::string& key, double* out) {
      const auto v = cfg.get<std::vector<double>>(k + key);
      if (static_cast<int>(v.size()) != nd)
        cfg.fail(k + key, strprintf("a %s needs %s with %d numbers in m", o.shape.c_str(), key.c_str(), nd));
      for (int a = 0; a < nd; ++a) out[a] = v[a];
    };
    auto unused = [&](const std::string& key) {
      if (explicitly_set(cfg, k + key)) cfg.fail(k + key, strprintf("is not used by a %s", o.shape.c_str()));
    };
    double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
    bool bounded[3] = {true, true, true};
    if (o.shape == "sphere" || o.shape == "cylinder") {
      vec("center", o.center);
      o.radius = cfg.get<double>(k + "radius");
      if (!(o.radius > 0)) cfg.fail(k + "radius", strprintf("a %s needs a radius > 0 in m", o.shape.c_str()));
      const std::string ax = cfg.get<std::string>(k + "axis");
      o.axis = ax[0] - 'x';
      if (o.shape == "sphere" || nd == 2) {
        if (explicitly_set(cfg, k + "axis")) cfg.fail(k + "axis", o.shape == "sphere" ? "is not used by a sphere" : "a 2D cylinder is a disc: its axis is z, leave the key out");
      }
      if (o.shape == "cylinder" && nd == 3) bounded[o.axis] = false;  // spans the domain along its axis
      for (int a = 0; a < nd; ++a) {
        lo[a] = o.center[a] - o.radius;
        hi[a] = o.center[a] + o.radius;
      }
      for (const char* key : {"lo", "hi", "file"}) unused(key);
    } else if (o.shape == "box") {
      vec("lo", o.lo);
      vec("hi", o.hi);
      for (int a = 0; a < nd; ++a) {
        if (!(o.lo[a] < o.hi[a])) cfg.fail(k + "hi", strprintf("must exceed lo along %c: lo %g, hi %g", kAxes[a], o.lo[a], o.hi[a]));
        lo[a] = o.lo[a];
        hi[a] = o.hi[a];
      }
      for (const char* key : {"center", "radius", "axis", "file"}) unused(key);
    } else {  // stl
      if (nd != 3) cfg.fail(k + "shape", "STL obstacles need a 3D lattice (D3Q19 or D3Q27)");
      std::string file = cfg.get<std::string>(k + "file");
      if (file.empty()) cfg.fail(k + "file", "an stl obstacle needs the path of its STL file");
      std::filesystem::path path(file);
      if (path.is_relative() && !cfg.file().empty()) path = std::filesystem::path(cfg.file()).parent_path() / path;
      try {
        o.mesh = std::make_shared<TriangleMesh>(read_stl(path.string()));
      } catch (const InputError& e) {
        cfg.fail(k + "file", e.what());
      }
      const auto off = cfg.get<std::vector<double>>(k + "offset");
      if (!off.empty() && off.size() != 3) cfg.fail(k + "offset", "expected 3 numbers in m");
      transform(*o.mesh, cfg.get<double>(k + "scale"), Vec3d{get_at(off, 0, 0.0), get_at(off, 1, 0.0), get_at(off, 2, 0.0)});
      lo[0] = o.mesh->lo.x, lo[1] = o.mesh->lo.y, lo[2] = o.mesh->lo.z;
      hi[0] = o.mesh->hi.x, hi[1] = o.mesh->hi.y, hi[2] = o.mesh->hi.z;
      for (const char* key : {"center", "radius", "axis", "lo", "hi"}) unused(key);
    }
    if (o.shape != "stl") {
      for (const char* key : {"scale", "offset"}) unused(key);
    }
    for (int a = 0; a < nd; ++a) {
      if (!bounded[a]) continue;
      if (lo[a] < 0 || hi[a] > s.length[a])
        cfg.fail(k + "shape", strprintf("obstacle '%s' reaches outside the domain along %c: it spans [%g, %g] m, the domain [0, %g] m",
                                        name.c_str(), kAxes[a], lo[a], hi[a], s.length[a]));
    }
    s.obstacles.push_back(std::move(o));
  }

  for (const auto& name : cfg.instances("lbm.probes")) {
    Probe pr;
    pr.name = name;
    const std::string key = "lbm.probes." + name + ".position";
    const auto v = cfg.get<std::vector<double>>(key);
    if (static_cast<int>(v.size()) != nd) cfg.fail(key, strprintf("expected %d numbers in m", nd));
    for (int a = 0; a < nd; ++a) {
      if (v[a] < 0 || v[a] > s.length[a])
        cfg.fail(key, strprintf("%c = %g m is outside the domain [0, %g] m", kAxes[a], v[a], s.length[a]));
      pr.pos[a] = v[a] / s.dx - 0.5;  // in cell-index coordinates (cell centres at integers)
    }
    s.probes.push_back(pr);
  }

  const double mach = s.max_speed * std::sqrt(3.0);
  if (mach > kMaxMach)
    cfg.fail(tau_key > 0 ? "lbm.tau" : "lbm.lattice_velocity",
             strprintf("the lattice Mach number reaches %.3g (largest lattice speed %.4g = %.4g m/s x dt / dx), above %g: "
                       "compressibility errors would dominate; lower lbm.lattice_velocity or raise lbm.cells",
                       mach, s.max_speed, s.max_speed * V, kMaxMach));
  return s;
}

// Cell types of the allocated box (ghosts included), computed on every rank from the job alone, so
// that they are identical at any rank count.
std::vector<std::uint8_t> cell_types(const Setup& s, const Box& alloc) {
  std::vector<std::uint8_t> t(static_cast<std::size_t>(alloc.volume()), kFluid);
  std::vector<std::vector<unsigned char>> stl(s.obstacles.size());
  const double origin[3] = {0, 0, 0}, h[3] = {s.dx, s.dx, s.dx};
  for (std::size_t n = 0; n < s.obstacles.size(); ++n)
    if (s.obstacles[n].mesh) stl[n] = voxelize(*s.obstacles[n].mesh, alloc, origin, h);
  const int ni = alloc.size(0), nj = alloc.size(1);
#pragma omp parallel for collapse(2) schedule(static)
  for (int k = alloc.lo[2]; k < alloc.hi[2]; ++k)
    for (int j = alloc.lo[1]; j < alloc.hi[1]; ++j)
      for (int i = alloc.lo[0]; i < alloc.hi[0]; ++i) {
        const std::size_t idx = (static_cast<std::size_t>(k - alloc.lo[2]) * nj + (j - alloc.lo[1])) * ni + (i - alloc.lo[0]);
        int g[3] = {i, j, k};
        int type = kFluid;
        // Outside a bounded face: the face's kind. At edges and corners a resting wall wins over a
        // moving one, and any wall over an inlet or outlet.
        int rank_of_kind = -1;
        for (int a = 0; a < s.ndim; ++a) {
          if (g[a] >= 0 && g[a] < s.cells[a]) continue;
          if (s.periodic[a]) {
            g[a] = (g[a] % s.cells[a] + s.cells[a]) % s.cells[a];
            continue;
          }
          const int f = 2 * a + (g[a] < 0 ? 0 : 1);
          const int kind = s.params.face[f].kind;
          const int prio = kind == 1 ? 3 : kind == 2 ? 2 : 1;
          if (prio > rank_of_kind) {
            rank_of_kind = prio;
            type = kind == 1 ? kWall : kind == 2 ? kMovingWall + f : kind == 3 ? kInlet + f : kOutlet + f;
          }
        }
        if (rank_of_kind < 0) {
          const double x[3] = {(g[0] + 0.5) * s.dx, (g[1] + 0.5) * s.dx, (g[2] + 0.5) * s.dx};
          for (std::size_t n = 0; n < s.obstacles.size(); ++n) {
            const bool inside = s.obstacles[n].mesh ? stl[n][idx] != 0 : s.obstacles[n].contains(x, s.ndim);
            if (inside) {
              type = kObstacle + static_cast<int>(n);
              break;
            }
          }
        }
        t[idx] = static_cast<std::uint8_t>(type);
      }
  return t;
}

template <class L, class S>
class LbmModel : public Model {
 public:
  LbmModel(Setup setup, const Context& ctx)
      : ctx_(ctx), s_(std::move(setup)),
        decomp_(s_.cells, s_.periodic, ctx.comm.size(), s_.ndim, 1) {
    const Exec& ex = ctx_.exec;
    box_ = decomp_.box_of(ctx_.comm.rank());
    ghost_ = {1, 1, s_.ndim == 3 ? 1 : 0};
    f_ = Field<S>("populations", ex.backend(), box_, ghost_, L::Q);
    g_ = Field<S>("populations", ex.backend(), box_, ghost_, L::Q);
    for (Field<S>* f : {&f_, &g_}) CUMULUS_KERNEL(ex, kernels, fill_zero<S>)(ex, f->view(), f->allocated(), L::Q);
    // Only the populations that stream out of a ghost cell into this rank cross a face.
    auto needs = [](const Index3& dir) {
      std::uint32_t m = 0;
      for (int q = 1; q < L::Q; ++q) {
        bool streams_in = true;
        for (int a = 0; a < 3; ++a)
          if (dir[a] != 0 && L::c(q, a) != -dir[a]) streams_in = false;
        if (streams_in) m |= 1u << q;
      }
      return m;
    };
    halo_ = std::make_unique<HaloExchange>(decomp_, ctx_.comm, ex, ghost_, L::Q, sizeof(S), "lbm.halo", false, needs);
    overlap_ = HaloOverlap(*halo_, box_, ghost_);
    build_flags();
    initialize();
  }

  std::string describe() const override {
    const Index3& n = decomp_.global_cells();
    std::string faces;
    for (int f = 0; f < 2 * s_.ndim; ++f) faces += strprintf("%s%s %s", f ? ", " : "", kFaces[f], s_.face_kind[f].c_str());
    return strprintf(
        "lbm: %s, %s storage, %s%s; %dx%dx%d cells of %.4g m; nu %.4g m^2/s, Re %.4g (U %.4g m/s, L %.4g m)\n"
        "  lattice units: dt %.6g s, tau %.6f, nu %.5g, reference velocity %.5g (Mach %.3f), largest speed %.5g%s\n"
        "  faces: %s; %zu obstacle(s); on rank 0's part %lld cells next to domain walls only (wall links filled into the "
        "ghosts) and %lld boundary cells (second pass); %s; halo %zu B per exchange",
        L::name, s_.precision.c_str(), s_.collision.c_str(),
        s_.params.smagorinsky > 0 ? strprintf(" + Smagorinsky C %.3g", s_.params.smagorinsky).c_str() : "", n[0], n[1],
        n[2], s_.dx, s_.nu, s_.U * s_.Lref / s_.nu, s_.U, s_.Lref, s_.dt, s_.tau, s_.nu_lat, s_.u_ref,
        s_.u_ref * std::sqrt(3.0), s_.max_speed,
        s_.collision == "trt" ? strprintf(", TRT magic %.4g", s_.params.magic).c_str() : "", faces.c_str(),
        s_.obstacles.size(), static_cast<long long>(nfill_), static_cast<long long>(nlist_), decomp_.describe().c_str(),
        halo_->bytes_per_exchange());
  }
  double preferred_dt() const override { return s_.dt; }
  bool fixed_dt() const override { return true; }
  double work_per_step() const override { return static_cast<double>(decomp_.global_box().volume()); }
  std::string work_unit() const override { return "cell-updates"; }

  void advance(double time, double) override {
    const Exec& ex = ctx_.exec;
    // Inlets and moving walls start smoothly: (1 - cos(pi t / T)) / 2 over lbm.ramp_time, which
    // keeps an impulsive start from filling the domain with sound waves.
    s_.params.ramp = time >= s_.ramp_time ? 1.0 : 0.5 * (1.0 - std::cos(kPi * time / s_.ramp_time));
    auto sc = CUMULUS_KERNEL(ex, kernels, stream_collide<L, S>);
    // Wall ghosts (fill_walls) are read by rim cells only: filled after the exchange, before the rim.
    overlap_.sweep(ex, *halo_, f_, [&](const Box& b) { sc(ex, f_.view(), g_.view(), b, s_.params); },
                   [&] { fill_walls(); });
    if (nlist_ > 0)
      CUMULUS_KERNEL(ex, kernels, boundary_cells<L, S>)(ex, f_.view(), g_.view(), flags_.view(), list_.data(), links_.data(), delta_.data(), nlist_,
                                                          box_, s_.params);
    f_.swap(g_);
    ++steps_;
  }

  // Wall links into the walls' ghost cells (kernels: wall_fill), so that their cells need no
  // boundary pass.
  void fill_walls() {
    if (nfill_ == 0) return;
    CUMULUS_KERNEL(ctx_.exec, kernels, wall_fill<L, S>)(ctx_.exec, f_.view(), fill_list_.data(), fill_walls_.data(),
                                                        fill_moving_.data(), fill_face_.data(), nfill_, box_, s_.params);
  }

  std::optional<HealthIssue> check_health() override {
    const Box g = decomp_.global_box();
    const std::int64_t local =
        CUMULUS_KERNEL(ctx_.exec, kernels, first_bad_cell<L, S>)(ctx_.exec, f_.view(), flags_.view(), box_, g, kDivergedSpeed);
    const std::optional<std::string> where = first_bad_cell_location(ctx_.comm, local, g);
    if (!where) return std::nullopt;
    return HealthIssue{strprintf("populations (non-finite, or a lattice speed above %g: the flow diverged; lower "
                                 "lbm.lattice_velocity or raise lbm.cells)", kDivergedSpeed),
                       *where};
  }

  std::vector<std::pair<std::string, double>> diagnostics(double time) override {
    const Exec& ex = ctx_.exec;
    const Comm& c = ctx_.comm;
    std::vector<std::pair<std::string, double>> out;
    const Totals t = CUMULUS_KERNEL(ex, kernels, totals<L, S>)(ex, f_.view(), flags_.view(), box_, s_.params);
    const double cell = s_.rho_phys * s_.dx * s_.dx * (s_.ndim == 3 ? s_.dx : 1.0);  // kg per unit lattice density
    out.push_back({"mass", c.sum(t.mass) * cell});
    out.push_back({"kinetic_energy", c.sum(t.energy) * cell * s_.V() * s_.V()});
    const double fs = s_.force_scale();
    const double coef = 2.0 / (s_.u_ref * s_.u_ref * (s_.ndim == 3 ? s_.Aref : s_.Lref) / (s_.ndim == 3 ? s_.dx * s_.dx : s_.dx));
    for (std::size_t n = 0; n < s_.obstacles.size(); ++n) {
      const Vec3 F = CUMULUS_KERNEL(ex, kernels, obstacle_force<L, S>)(ex, f_.view(), flags_.view(), list_.data(), delta_.data(), nlist_,
                                                                         box_, kObstacle + static_cast<int>(n));
      const double F3[3] = {c.sum(F.x), c.sum(F.y), c.sum(F.z)};
      const std::string& name = s_.obstacles[n].name;
      for (int a = 0; a < s_.ndim; ++a) out.push_back({strprintf("force_%c_%s", kAxes[a], name.c_str()), F3[a] * fs});
      out.push_back({"cd_" + name, F3[0] * coef});
      out.push_back({"cl_" + name, F3[1] * coef});
      if (s_.ndim == 3) out.push_back({"cs_" + name, F3[2] * coef});
    }
    if (!s_.probes.empty()) {
      refresh_macro();
      for (const Probe& pr : s_.probes) {
        Box near(static_cast<int>(std::floor(pr.pos[0])), static_cast<int>(std::floor(pr.pos[1])),
                 s_.ndim == 3 ? static_cast<int>(std::floor(pr.pos[2])) : 0, 0, 0, 0);
        for (int a = 0; a < 3; ++a) near.hi[a] = near.lo[a] + (a < s_.ndim ? 2 : 1);
        const Box mine = near.intersect(box_);
        auto probe = CUMULUS_KERNEL(ex, kernels, probe_sum);
        const double wsum = c.sum(probe(ex, macro_.view(), flags_.view(), mine, pr.pos, s_.ndim, true));
        const double psum = c.sum(probe(ex, macro_.view(), flags_.view(), mine, pr.pos, s_.ndim, false));
        out.push_back({"p_" + pr.name, wsum > 0 ? psum / wsum * s_.pressure_scale() : std::nan("")});
      }
    }
    if (s_.initial == "taylor_green" || s_.initial == "poiseuille") {
      // Relative L2 error of the velocity against the analytic solution, over fluid cells.
      refresh_macro();
      const std::vector<double> m = macro_.interior_to_host(ex);
      const std::vector<std::uint8_t> fl = flags_.interior_to_host(ex);
      const std::size_t n = static_cast<std::size_t>(box_.volume());
      double err2 = 0, ref2 = 0;
      std::size_t idx = 0;
      for (int k = box_.lo[2]; k < box_.hi[2]; ++k)
        for (int j = box_.lo[1]; j < box_.hi[1]; ++j)
          for (int i = box_.lo[0]; i < box_.hi[0]; ++i, ++idx) {
            if (cell_type(fl[idx]) != kFluid) continue;
            double ua[3];
            analytic_velocity(i, j, k, time / s_.dt, ua);
            for (int a = 0; a < 3; ++a) {
              const double e = m[(a + 1) * n + idx] - ua[a];
              err2 += e * e;
              ref2 += ua[a] * ua[a];
            }
          }
      err2 = c.sum(err2);
      ref2 = c.sum(ref2);
      out.push_back({"l2_error_velocity", ref2 > 0 ? std::sqrt(err2 / ref2) : 0.0});
    }
    return out;
  }

  StateDescription state() override {
    StateDescription s;
    s.geometry.ndim = s_.ndim;
    for (int a = 0; a < 3; ++a) s.geometry.spacing[a] = s_.dx;
    const Index3& dims = decomp_.dims();
    s.decomposition = {dims[0], dims[1], dims[2]};
    const Box global = decomp_.global_box();
    auto add = [&](std::string name, std::string units, DType dt, int ncomp, bool checkpoint, bool output) -> GridArray& {
      GridArray a;
      a.name = std::move(name);
      a.units = std::move(units);
      a.dtype = dt;
      a.ncomp = ncomp;
      a.global_box = global;
      a.local_box = box_;
      a.in_checkpoint = checkpoint;
      a.in_output = output;
      s.arrays.push_back(std::move(a));
      return s.arrays.back();
    };
    // The lambdas hold `this`: the description lives no longer than the model.
    GridArray pop = grid_array(f_, ctx_.exec, global, "populations", "lattice (f - w, shifted)");
    pop.in_output = false;
    auto restore = std::move(pop.write_local);
    pop.write_local = [this, restore](const std::vector<unsigned char>& b) {
      restore(b);
      macro_step_ = -1;  // the macroscopic fields are recomputed from the restored populations
    };
    s.arrays.push_back(std::move(pop));
    GridArray& flags = add("flags", "0 fluid, 1 wall, 2-7 moving wall, 8-13 inlet, 14-19 outlet, 32+ obstacle", DType::u8, 1, true, true);
    flags.read_local = [this] {
      std::vector<unsigned char> b = flags_.interior_bytes(ctx_.exec);
      for (auto& v : b) v = static_cast<unsigned char>(cell_type(v));
      return b;
    };
    flags.write_local = [this](const std::vector<unsigned char>& b) {
      std::vector<unsigned char> mine = flags_.interior_bytes(ctx_.exec);
      for (auto& v : mine) v = static_cast<unsigned char>(cell_type(v));
      if (mine != b)
        throw InputError("the checkpoint's cell flags differ from this job's geometry (obstacles or boundaries changed): "
                         "restart with the job that wrote it, or start fresh");
    };
    auto macro_array = [this](int comp0, int ncomp, double scale, double offset) {
      return [this, comp0, ncomp, scale, offset] {
        refresh_macro();
        const std::vector<double> m = macro_.interior_to_host(ctx_.exec);
        const std::size_t n = static_cast<std::size_t>(box_.volume());
        std::vector<unsigned char> out(n * ncomp * sizeof(float));
        float* o = reinterpret_cast<float*>(out.data());
        for (int c = 0; c < ncomp; ++c)
          for (std::size_t p = 0; p < n; ++p) o[c * n + p] = static_cast<float>((m[(comp0 + c) * n + p] + offset) * scale);
        return out;
      };
    };
    add("density", "kg/m^3", DType::f32, 1, false, true).read_local = macro_array(0, 1, s_.rho_phys, 0.0);
    add("pressure", "Pa", DType::f32, 1, false, true).read_local = macro_array(0, 1, s_.pressure_scale(), -1.0);
    add("velocity", "m/s", DType::f32, 3, false, true).read_local = macro_array(1, 3, s_.V(), 0.0);
    add("vorticity", s_.ndim == 3 ? "1/s (magnitude)" : "1/s", DType::f32, 1, false, true).read_local = [this] {
      refresh_macro();
      if (vort_.allocated().empty()) vort_ = Field<double>("vorticity", ctx_.exec.backend(), box_, {0, 0, 0}, 1);
      CUMULUS_KERNEL(ctx_.exec, kernels, vorticity)(ctx_.exec, macro_.view(), vort_.view(), box_, s_.ndim == 3);
      const std::vector<double> w = vort_.interior_to_host(ctx_.exec);
      std::vector<unsigned char> out(w.size() * sizeof(float));
      float* o = reinterpret_cast<float*>(out.data());
      for (std::size_t p = 0; p < w.size(); ++p) o[p] = static_cast<float>(w[p] / s_.dt);
      return out;
    };
    return s;
  }

 private:
  void build_flags() {
    const Exec& ex = ctx_.exec;
    flags_ = Field<std::uint8_t>("flags", ex.backend(), box_, ghost_, 1);
    const Box alloc = flags_.allocated();
    std::vector<std::uint8_t> t = cell_types(s_, alloc);
    const int ai = alloc.size(0), aj = alloc.size(1);
    auto at = [&](int i, int j, int k) -> std::uint8_t& {
      return t[(static_cast<std::size_t>(k - alloc.lo[2]) * aj + (j - alloc.lo[1])) * ai + (i - alloc.lo[0])];
    };
    // A cell takes the boundary path when it or any upstream neighbour is not fluid.
    std::vector<std::int32_t> list;
    std::vector<std::uint32_t> links;
    std::vector<float> delta;
    std::vector<std::uint8_t> near(t.size(), 0);
    std::vector<std::int32_t> fill;
    std::vector<std::uint32_t> fill_walls, fill_moving;
    std::vector<std::int8_t> fill_face;
    const int ni = box_.size(0), nj = box_.size(1);
    if (box_.volume() >= std::numeric_limits<std::int32_t>::max())
      throw InputError(strprintf("rank %d would own %lld cells, more than one rank indexes (2^31): use more ranks",
                                 ctx_.comm.rank(), static_cast<long long>(box_.volume())));
    for (int k = box_.lo[2]; k < box_.hi[2]; ++k)
      for (int j = box_.lo[1]; j < box_.hi[1]; ++j)
        for (int i = box_.lo[0]; i < box_.hi[0]; ++i) {
          bool boundary = at(i, j, k) != kFluid, open = false;
          std::uint32_t mask = boundary ? kGeneralPath : 0;
          for (int q = 1; q < L::Q; ++q) {
            const int t = cell_type(at(i - L::c(q, 0), j - L::c(q, 1), k - L::c(q, 2)));
            boundary = boundary || t != kFluid;
            open = open || (t >= kInlet && t < kObstacle);
            if (t == kWall || t >= kObstacle) mask |= 1u << q;
            else if (t != kFluid) mask |= kGeneralPath;
          }
          if (!boundary) continue;
          {
            // Only domain walls upstream (halfway bounce-back; moving walls of one face, not with
            // fp16 storage): the links go to wall_fill and the cell stays on the fast path.
            std::uint32_t wm = 0, mm = 0;
            int face = -1;
            bool fillable = at(i, j, k) == kFluid;
            for (int q = 1; q < L::Q && fillable; ++q) {
              const int t = cell_type(at(i - L::c(q, 0), j - L::c(q, 1), k - L::c(q, 2)));
              if (t == kFluid) continue;
              if (t == kWall) {
                wm |= 1u << q;
              } else if (t >= kMovingWall && t < kInlet && !std::is_same_v<S, std::uint16_t> &&
                         (face < 0 || face == t - kMovingWall)) {
                mm |= 1u << q;
                face = t - kMovingWall;
              } else {
                fillable = false;
              }
            }
            if (fillable) {
              fill.push_back(static_cast<std::int32_t>((k - box_.lo[2]) * ni * nj + (j - box_.lo[1]) * ni + (i - box_.lo[0])));
              fill_walls.push_back(wm);
              fill_moving.push_back(mm);
              fill_face.push_back(static_cast<std::int8_t>(face < 0 ? 0 : face));
              continue;
            }
          }
          list.push_back(static_cast<std::int32_t>((k - box_.lo[2]) * ni * nj + (j - box_.lo[1]) * ni + (i - box_.lo[0])));
          links.push_back(mask);
          // Wall fractions of the links into obstacles (pull direction q: the wall lies towards -c_q).
          for (int q = 0; q < L::Q; ++q) {
            float d = 0.5f;
            const int t = cell_type(at(i - L::c(q, 0), j - L::c(q, 1), k - L::c(q, 2)));
            if (s_.interpolated_walls && q > 0 && t >= kObstacle && cell_type(at(i, j, k)) == kFluid) {
              const double x[3] = {(i + 0.5) * s_.dx, (j + 0.5) * s_.dx, (k + 0.5) * s_.dx};
              const double c[3] = {-L::c(q, 0) * s_.dx, -L::c(q, 1) * s_.dx, -L::c(q, 2) * s_.dx};
              double xw[3] = {x[0], x[1], x[2]};
              // Periodic axes: the obstacle is placed in [0, L); unwrap the cell next to it.
              for (int a = 0; a < s_.ndim; ++a)
                if (s_.periodic[a]) xw[a] = x[a] - std::floor(x[a] / s_.length[a]) * s_.length[a];
              d = static_cast<float>(s_.obstacles[t - kObstacle].wall_fraction(xw, c, s_.ndim));
              // Below 1/2 the rule reads the next cell away from the wall: it must be fluid.
              if (d < 0.5f && cell_type(at(i + L::c(q, 0), j + L::c(q, 1), k + L::c(q, 2))) != kFluid) d = 0.5f;
            }
            delta.push_back(d);
          }
          near[list.size() - 1] = open ? kOpen : 0;
        }
    for (std::size_t n = 0; n < list.size(); ++n) {
      const std::int32_t c = list[n];
      const int i = box_.lo[0] + c % ni, j = box_.lo[1] + (c / ni) % nj, k = box_.lo[2] + c / (ni * nj);
      at(i, j, k) |= static_cast<std::uint8_t>(kNear | near[n]);
    }
    flags_.buffer().from_host(ex, t);
    nlist_ = static_cast<std::int64_t>(list.size());
    list_ = Buffer<std::int32_t>::copy_of(ex, list, 1);
    links_ = Buffer<std::uint32_t>::copy_of(ex, links, 1);
    delta_ = Buffer<float>::copy_of(ex, delta, L::Q);
    nfill_ = static_cast<std::int64_t>(fill.size());
    fill_list_ = Buffer<std::int32_t>::copy_of(ex, fill, 1);
    fill_walls_ = Buffer<std::uint32_t>::copy_of(ex, fill_walls, 1);
    fill_moving_ = Buffer<std::uint32_t>::copy_of(ex, fill_moving, 1);
    fill_face_ = Buffer<std::int8_t>::copy_of(ex, fill_face, 1);
  }

  // The analytic velocity (lattice units) at cell (i, j, k) after `steps` steps, for the cases that have one.
  void analytic_velocity(int i, int j, int k, double steps, double u[3]) const {
    u[0] = u[1] = u[2] = 0;
    (void)k;
    const double x = i + 0.5, y = j + 0.5;
    if (s_.initial == "taylor_green") {
      const double kx = 2 * kPi / s_.cells[0], ky = 2 * kPi / s_.cells[1];
      const double decay = std::exp(-s_.nu_lat * (kx * kx + ky * ky) * steps);
      u[0] = -s_.u_ref * std::cos(kx * x) * std::sin(ky * y) * decay;
      u[1] = s_.u_ref * (kx / ky) * std::sin(kx * x) * std::cos(ky * y) * decay;
    } else if (s_.initial == "poiseuille") {
      const double H = s_.cells[1];
      u[0] = s_.params.force[0] / (2 * s_.nu_lat) * y * (H - y);
    }
  }

  // Populations at t = 0: equilibrium at the initial density and velocity plus the non-equilibrium
  // part the velocity gradient implies (Chapman-Enskog, post-collision: Pi = -2 rho cs^2 (tau - 1) S).
  // Computed on the host in double for every backend, so host and CUDA runs start from the same bits.
  void initialize() {
    const Exec& ex = ctx_.exec;
    const std::size_t n = static_cast<std::size_t>(box_.volume());
    std::vector<S> f(n * L::Q);
    const double tau = s_.tau;
    // Rows in parallel (each cell's populations depend on its indices alone: the same bits at any
    // thread count); a 384^3 benchmark box took minutes on one thread.
    enum { kUniform, kTaylorGreen, kPoiseuille, kRest } initial = kRest;
    if (s_.initial == "uniform") initial = kUniform;
    else if (s_.initial == "taylor_green") initial = kTaylorGreen;
    else if (s_.initial == "poiseuille") initial = kPoiseuille;
    const int ni = box_.size(0), nj = box_.size(1);
#pragma omp parallel for collapse(2) schedule(static)
    for (int k = box_.lo[2]; k < box_.hi[2]; ++k)
      for (int j = box_.lo[1]; j < box_.hi[1]; ++j)
        for (int i = box_.lo[0]; i < box_.hi[0]; ++i) {
          const std::size_t idx = (static_cast<std::size_t>(k - box_.lo[2]) * nj + static_cast<std::size_t>(j - box_.lo[1])) * ni +
                                  static_cast<std::size_t>(i - box_.lo[0]);
          double rho = 1, u[3] = {0, 0, 0}, grad[3][3] = {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}};  // grad[a][b] = d u_b / d x_a
          const double x = i + 0.5, y = j + 0.5;
          if (initial == kUniform) {
            for (int a = 0; a < 3; ++a) u[a] = s_.init_u[a];
          } else if (initial == kTaylorGreen) {
            const double kx = 2 * kPi / s_.cells[0], ky = 2 * kPi / s_.cells[1], U = s_.u_ref, r = kx / ky;
            u[0] = -U * std::cos(kx * x) * std::sin(ky * y);
            u[1] = U * r * std::sin(kx * x) * std::cos(ky * y);
            grad[0][0] = U * kx * std::sin(kx * x) * std::sin(ky * y);
            grad[1][0] = -U * ky * std::cos(kx * x) * std::cos(ky * y);
            grad[0][1] = U * r * kx * std::cos(kx * x) * std::cos(ky * y);
            grad[1][1] = -U * r * ky * std::sin(kx * x) * std::sin(ky * y);
            const double p = -0.25 * U * U * (std::cos(2 * kx * x) + r * r * std::cos(2 * ky * y));  // p / rho0
            rho = 1 + 3 * p;
          } else if (initial == kPoiseuille) {
            const double H = s_.cells[1], g = s_.params.force[0];
            u[0] = g / (2 * s_.nu_lat) * y * (H - y);
            grad[1][0] = g / (2 * s_.nu_lat) * (H - 2 * y);
          }
          double pi[3][3];
          for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b) pi[a][b] = -2.0 * rho / 3.0 * (tau - 1.0) * 0.5 * (grad[a][b] + grad[b][a]);
          // Stored populations are post-collision: their momentum carries the whole body force,
          // rho u + F / 2 (the velocity the step recovers subtracts F / 2 again).
          for (int a = 0; a < 3; ++a) u[a] += 0.5 * s_.params.force[a] / rho;
          const double uu = u[0] * u[0] + u[1] * u[1] + u[2] * u[2];
          for (int q = 0; q < L::Q; ++q) {
            const int c[3] = {L::c(q, 0), L::c(q, 1), L::c(q, 2)};
            const double w = L::w(q), cu = c[0] * u[0] + c[1] * u[1] + c[2] * u[2];
            double neq = 0;
            for (int a = 0; a < 3; ++a)
              for (int b = 0; b < 3; ++b) neq += (c[a] * c[b] - (a == b ? 1.0 / 3.0 : 0.0)) * pi[a][b];
            const double fs = w * ((rho - 1) + rho * (3 * cu + 4.5 * cu * cu - 1.5 * uu)) + 4.5 * w * neq;
            if constexpr (std::is_same_v<S, std::uint16_t>) f[q * n + idx] = Storage<S>::store(static_cast<float>(fs));
            else f[q * n + idx] = static_cast<S>(fs);
          }
        }
    f_.interior_from_host(ex, f);
  }

  void refresh_macro() {
    const Exec& ex = ctx_.exec;
    if (macro_.allocated().empty()) {
      macro_ = Field<double>("macroscopic", ex.backend(), box_, ghost_, 4);
      CUMULUS_KERNEL(ex, kernels, fill_zero<double>)(ex, macro_.view(), macro_.allocated(), 4);
      macro_halo_ = std::make_unique<HaloExchange>(decomp_, ctx_.comm, ex, ghost_, 4, sizeof(double), "lbm.macro_halo");
    }
    if (macro_step_ == steps_) return;
    CUMULUS_KERNEL(ex, kernels, macroscopic<L, S>)(ex, f_.view(), flags_.view(), macro_.view(), box_, s_.params);
    macro_halo_->exchange(macro_);
    macro_step_ = steps_;
  }

  Context ctx_;
  Setup s_;
  CartesianDecomposition decomp_;
  Box box_;
  HaloOverlap overlap_;  // the step's sweep, overlapped with the halo exchange where that pays
  Index3 ghost_{1, 1, 1};
  Field<S> f_, g_;
  Field<std::uint8_t> flags_;
  Buffer<std::int32_t> list_;
  Buffer<std::uint32_t> links_;
  Buffer<float> delta_;  // per boundary cell and direction: where the wall cuts the link
  std::int64_t nlist_ = 0;
  // Cells next to domain walls only (wall_fill): cell, resting-wall and moving-wall link masks, face.
  Buffer<std::int32_t> fill_list_;
  Buffer<std::uint32_t> fill_walls_, fill_moving_;
  Buffer<std::int8_t> fill_face_;
  std::int64_t nfill_ = 0;
  std::unique_ptr<HaloExchange> halo_, macro_halo_;
  Field<double> macro_, vort_;
  long steps_ = 0, macro_step_ = -1;
};

template <class L>
std::unique_ptr<Model> create_for(Setup s, const Context& ctx) {
  if (s.precision == "fp64") return std::make_unique<LbmModel<L, double>>(std::move(s), ctx);
  if (s.precision == "fp32") return std::make_unique<LbmModel<L, float>>(std::move(s), ctx);
  return std::make_unique<LbmModel<L, std::uint16_t>>(std::move(s), ctx);
}

}  // namespace

void declare_keys(Schema& s) {
  s.key("lbm.lattice", ValueType::string, "Velocity set: D2Q9 (2D), D3Q19 or D3Q27 (3D)")
      .def(std::string("D2Q9"))
      .one_of({"D2Q9", "D3Q19", "D3Q27"});
  s.key("lbm.cells", ValueType::integer_array, "Cells along x, y (and z); cells are cubes").require().length(2, 3).at_least(1);
  s.key("lbm.length", ValueType::real_array,
        "Domain size per axis, or one number: the x length (the others follow from lbm.cells)")
      .require()
      .length(1, 3)
      .positive()
      .unit("m");
  s.key("lbm.density", ValueType::real, "Fluid density, for pressures and forces").def(1.0).positive().unit("kg/m^3");
  s.key("lbm.velocity", ValueType::real,
        "Reference velocity U: of the Reynolds number, the force coefficients and lbm.lattice_velocity")
      .require()
      .positive()
      .unit("m/s");
  s.key("lbm.reference_length", ValueType::real, "Reference length L of the Reynolds number and coefficients (0: the y length)")
      .def(0.0)
      .at_least(0)
      .unit("m");
  s.key("lbm.reference_area", ValueType::real, "Reference area of 3D force coefficients (0: reference_length^2)")
      .def(0.0)
      .at_least(0)
      .unit("m^2");
  s.key("lbm.viscosity", ValueType::real, "Kinematic viscosity nu (or give lbm.reynolds)").def(0.0).at_least(0).unit("m^2/s");
  s.key("lbm.reynolds", ValueType::real, "Reynolds number U L / nu (or give lbm.viscosity)").def(0.0).at_least(0);
  s.key("lbm.lattice_velocity", ValueType::real,
        "Lattice speed of U (sets dt = lattice_velocity dx / U); Mach = sqrt(3) x speed must stay <= 0.3")
      .def(0.05)
      .positive()
      .at_most(0.5);
  s.key("lbm.tau", ValueType::real, "Relaxation time; > 0 sets dt from it instead of lbm.lattice_velocity (diffusive scaling)")
      .def(0.0)
      .at_least(0);
  s.key("lbm.collision", ValueType::string, "Collision model: bgk or trt (two relaxation times)")
      .def(std::string("trt"))
      .one_of({"bgk", "trt"});
  s.key("lbm.magic", ValueType::real,
        "TRT magic parameter (1/omega+ - 1/2)(1/omega- - 1/2); 3/16 puts bounce-back walls exactly halfway")
      .def(0.1875)
      .positive();
  s.key("lbm.smagorinsky", ValueType::real, "Smagorinsky constant C_s of the subgrid model (0: off; 0.1-0.2 typical)")
      .def(0.0)
      .at_least(0)
      .at_most(1);
  s.key("lbm.precision", ValueType::string, "Population storage: fp64, fp32, or fp16 (binary16 storage, fp32 arithmetic)")
      .def(std::string("fp32"))
      .one_of({"fp64", "fp32", "fp16"});
  s.key("lbm.force", ValueType::real_array, "Body acceleration per axis (Guo forcing); empty: none")
      .def(std::vector<double>{})
      .length(0, 3)
      .unit("m/s^2");
  s.key("lbm.obstacle_walls", ValueType::string,
        "Obstacle surfaces: interpolated (linear interpolated bounce-back at the exact surface of spheres, "
        "cylinders and boxes; second order) or staircase (halfway bounce-back on the cell faces). STL: staircase")
      .def(std::string("interpolated"))
      .one_of({"interpolated", "staircase"});
  s.key("lbm.ramp_time", ValueType::real,
        "Inlet and moving-wall velocities rise as (1 - cos(pi t / T)) / 2 over this time (0: at once)")
      .def(0.0)
      .at_least(0)
      .unit("s");
  s.key("lbm.initial", ValueType::string,
        "Initial flow: rest, uniform (lbm.initial_velocity), taylor_green (U, periodic x and y; error vs analytic "
        "reported), poiseuille (the steady channel profile of lbm.force; error reported)")
      .def(std::string("rest"))
      .one_of({"rest", "uniform", "taylor_green", "poiseuille"});
  s.key("lbm.initial_velocity", ValueType::real_array, "Velocity of lbm.initial = \"uniform\"")
      .def(std::vector<double>{})
      .length(0, 3)
      .unit("m/s");
  for (int f = 0; f < 6; ++f) {
    s.key(face_key(f, ""), ValueType::string,
          strprintf("Boundary on the %s face: periodic, wall (halfway bounce-back), moving_wall, inlet (velocity) or "
                    "outlet (pressure)", kFaces[f]))
        .def(std::string("periodic"))
        .one_of({"periodic", "wall", "moving_wall", "inlet", "outlet"});
    s.key(face_key(f, "_velocity"), ValueType::real_array,
          strprintf("Velocity of a moving_wall or inlet on %s (an inlet's maximum when parabolic)", kFaces[f]))
        .def(std::vector<double>{})
        .length(0, 3)
        .unit("m/s");
    s.key(face_key(f, "_profile"), ValueType::string,
          strprintf("Inlet profile on %s: uniform, or parabolic across every wall-bounded tangential axis", kFaces[f]))
        .def(std::string("uniform"))
        .one_of({"uniform", "parabolic"});
    s.key(face_key(f, "_pressure"), ValueType::real, strprintf("Outlet pressure on %s, relative to the reference", kFaces[f]))
        .def(0.0)
        .unit("Pa");
  }
  s.key("lbm.obstacles.*.shape", ValueType::string, "Obstacle shape: sphere, cylinder, box or stl")
      .require()
      .one_of({"sphere", "cylinder", "box", "stl"});
  s.key("lbm.obstacles.*.center", ValueType::real_array, "Centre of a sphere or cylinder").def(std::vector<double>{}).length(0, 3).unit("m");
  s.key("lbm.obstacles.*.radius", ValueType::real, "Radius of a sphere or cylinder").def(0.0).at_least(0).unit("m");
  s.key("lbm.obstacles.*.axis", ValueType::string, "Axis of a 3D cylinder (it spans the domain along it)")
      .def(std::string("z"))
      .one_of({"x", "y", "z"});
  s.key("lbm.obstacles.*.lo", ValueType::real_array, "Low corner of a box").def(std::vector<double>{}).length(0, 3).unit("m");
  s.key("lbm.obstacles.*.hi", ValueType::real_array, "High corner of a box").def(std::vector<double>{}).length(0, 3).unit("m");
  s.key("lbm.obstacles.*.file", ValueType::string, "STL file (ASCII or binary; relative to the job file)").def(std::string());
  s.key("lbm.obstacles.*.scale", ValueType::real, "Factor from STL units to m").def(1.0).positive();
  s.key("lbm.obstacles.*.offset", ValueType::real_array, "Shift of the scaled STL").def(std::vector<double>{}).length(0, 3).unit("m");
  s.key("lbm.probes.*.position", ValueType::real_array, "Point whose pressure is reported as p_<name> in diagnostics.csv")
      .require()
      .length(2, 3)
      .unit("m");
}

void check(const Config& cfg, int nranks) {
  const Setup s = make_setup(cfg);
  double cells = 1;
  for (int a = 0; a < s.ndim; ++a) cells *= s.cells[a];
  const int Q = s.lattice == "D2Q9" ? 9 : (s.lattice == "D3Q19" ? 19 : 27);
  const double bytes = s.precision == "fp64" ? 8 : (s.precision == "fp32" ? 4 : 2);
  // Two population buffers and the flags.
  check_node_memory(cfg, "lbm.cells", cells, 2 * Q * bytes + 1, nranks, "two " + s.precision + " population buffers");
  check_decomposition(cfg, "lbm.cells", s.cells, s.periodic, nranks, s.ndim);
}

std::unique_ptr<Model> create(const Config& cfg, const Context& ctx) {
  Setup s = make_setup(cfg);
  if (s.lattice == "D2Q9") return create_for<D2Q9>(std::move(s), ctx);
  if (s.lattice == "D3Q19") return create_for<D3Q19>(std::move(s), ctx);
  return create_for<D3Q27>(std::move(s), ctx);
}

void register_solver(SolverRegistry& r) {
  r.add(SolverEntry{"lbm", "lattice Boltzmann CFD: D2Q9/D3Q19/D3Q27, BGK/TRT/Smagorinsky, walls, inlets, obstacles",
                    declare_keys, check, create, {"density", "pressure", "velocity", "vorticity", "flags"}});
}

}  // namespace cumulus::lbm
