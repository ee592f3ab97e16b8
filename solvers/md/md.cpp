// The molecular dynamics model: keys, checks, lattice set-up, the Verlet list, velocity Verlet,
// thermo and the state description (host code; the kernels are in md_kernels.cpp).
#include "solvers/md/md.hpp"
#include "solvers/md/md_kernels.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/memory.hpp"
#include "core/strings.hpp"

namespace cumulus::md {

namespace {
constexpr double kPi = 3.14159265358979323846;

struct Setup {
  std::string lattice;
  double density = 0, temperature = 0, cutoff = 0, skin = 0, epsilon = 1, sigma = 1, mass = 1, dt = 0;
  std::array<int, 3> cells{1, 1, 1};
  std::int64_t seed = 0;
  bool shift = false, tail = false;
};

Setup read_setup(const Config& cfg) {
  Setup s;
  s.lattice = cfg.get<std::string>("md.lattice");
  s.density = cfg.get<double>("md.density");
  const auto c = cfg.get<std::vector<std::int64_t>>("md.cells");
  for (int d = 0; d < 3; ++d) s.cells[d] = static_cast<int>(c[c.size() == 1 ? 0 : d]);
  s.temperature = cfg.get<double>("md.temperature");
  s.seed = cfg.get<std::int64_t>("md.seed");
  s.cutoff = cfg.get<double>("md.cutoff");
  s.skin = cfg.get<double>("md.skin");
  s.epsilon = cfg.get<double>("md.epsilon");
  s.sigma = cfg.get<double>("md.sigma");
  s.mass = cfg.get<double>("md.mass");
  s.dt = cfg.get<double>("md.dt");
  s.shift = cfg.get<bool>("md.shift");
  s.tail = cfg.get<bool>("md.tail_correction");
  return s;
}

// Basis of the conventional cubic cell, in lattice units.
std::vector<std::array<double, 3>> basis(const std::string& lattice) {
  if (lattice == "fcc") return {{0, 0, 0}, {0.5, 0.5, 0}, {0.5, 0, 0.5}, {0, 0.5, 0.5}};
  if (lattice == "bcc") return {{0, 0, 0}, {0.5, 0.5, 0.5}};
  return {{0, 0, 0}};
}

double lattice_constant(const Setup& s) { return std::cbrt(static_cast<double>(basis(s.lattice).size()) / s.density); }

// A counter-based generator: splitmix64 of (seed, atom id, draw), so a velocity depends only on
// those three numbers, not on how atoms are spread over ranks or in what order they are visited.
std::uint64_t splitmix64(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
double uniform(std::uint64_t seed, std::uint64_t id, std::uint64_t draw) {
  const std::uint64_t r = splitmix64(splitmix64(seed ^ splitmix64(id)) + draw);
  return (static_cast<double>(r >> 11) + 0.5) * (1.0 / 9007199254740992.0);  // (0, 1)
}
}  // namespace

void declare_keys(Schema& s) {
  s.key("md.lattice", ValueType::string, "Initial positions: fcc, bcc or sc lattice filling the box")
      .def(std::string("fcc"))
      .one_of({"fcc", "bcc", "sc"});
  s.key("md.density", ValueType::real, "Number density of the lattice (reduced units, atoms per sigma^3)")
      .def(0.8442)
      .positive();
  s.key("md.cells", ValueType::integer_array, "Unit cells of the lattice along x, y, z (one entry: all three)")
      .def(std::vector<std::int64_t>{20})
      .length(1, 3)
      .at_least(1);
  s.key("md.temperature", ValueType::real,
        "Initial temperature: Gaussian velocities, total momentum zero, scaled to exactly this with 3N - 3 "
        "degrees of freedom (0: at rest)")
      .def(1.44)
      .at_least(0);
  s.key("md.seed", ValueType::integer, "Seed of the counter-based generator keyed by (seed, atom id)")
      .def(std::int64_t{87287})
      .at_least(0);
  s.key("md.cutoff", ValueType::real, "Lennard-Jones cutoff radius (sigma units)").def(2.5).positive();
  s.key("md.skin", ValueType::real, "Verlet list skin: the list holds pairs within cutoff + skin")
      .def(0.3)
      .at_least(0);
  s.key("md.epsilon", ValueType::real, "Lennard-Jones well depth").def(1.0).positive();
  s.key("md.sigma", ValueType::real, "Lennard-Jones diameter").def(1.0).positive();
  s.key("md.mass", ValueType::real, "Atom mass").def(1.0).positive();
  s.key("md.dt", ValueType::real, "Time step (reduced time units, tau)").def(0.005).positive();
  s.key("md.shift", ValueType::boolean, "Shift the potential to zero at the cutoff").def(false);
  s.key("md.tail_correction", ValueType::boolean,
        "Add the analytic tail corrections (beyond the cutoff, uniform density) to energy and pressure")
      .def(false);
}

void check(const Config& cfg, int nranks) {
  if (nranks > 1)
    cfg.fail("solver", strprintf("md runs on one rank so far (spatial decomposition over MPI ranks is not "
                                 "implemented yet): run it without mpirun, not on %d ranks",
                                 nranks));
  const Setup s = read_setup(cfg);
  const auto c = cfg.get<std::vector<std::int64_t>>("md.cells");
  if (c.size() == 2) cfg.fail("md.cells", "has 2 entries: give one (all axes) or three");
  const double a = lattice_constant(s);
  double natoms = static_cast<double>(basis(s.lattice).size());
  for (int d = 0; d < 3; ++d) {
    natoms *= s.cells[d];
    const double L = a * s.cells[d];
    if (L < 2 * (s.cutoff + s.skin))
      cfg.fail("md.cutoff", strprintf("cutoff + skin = %g is more than half the box (%g along axis %d: %d cells of "
                                      "%g): every pair must have one nearest image; use more cells or a shorter cutoff",
                                      s.cutoff + s.skin, L, d, s.cells[d], a));
  }
  if (natoms > 2e9) cfg.fail("md.cells", strprintf("%.3g atoms is more than cumulus indexes (2^31)", natoms));
  if (s.cutoff > 0 && s.sigma / s.cutoff > 2)
    cfg.fail("md.cutoff", strprintf("%g is less than half of sigma (%g): nothing would interact", s.cutoff, s.sigma));
}

class MdModel : public Model {
 public:
  MdModel(const Config& cfg, const Context& ctx) : ctx_(ctx), s_(read_setup(cfg)) {
    const double a = lattice_constant(s_);
    const auto b = basis(s_.lattice);
    for (int d = 0; d < 3; ++d) box_[d] = a * s_.cells[d];
    n_ = static_cast<int>(b.size()) * s_.cells[0] * s_.cells[1] * s_.cells[2];
    // Lattice positions, atom id = index (cells x fastest, then the basis).
    std::vector<double> pos[3];
    for (auto& p : pos) p.reserve(static_cast<std::size_t>(n_));
    for (int k = 0; k < s_.cells[2]; ++k)
      for (int j = 0; j < s_.cells[1]; ++j)
        for (int i = 0; i < s_.cells[0]; ++i)
          for (const auto& q : b) {
            pos[0].push_back((i + q[0]) * a);
            pos[1].push_back((j + q[1]) * a);
            pos[2].push_back((k + q[2]) * a);
          }
    // Velocities: Box-Muller from the counter-based generator, momentum removed, scaled to T.
    std::vector<double> vel[3];
    for (auto& v : vel) v.assign(static_cast<std::size_t>(n_), 0.0);
    if (s_.temperature > 0 && n_ > 1) {
      double mean[3] = {0, 0, 0};
      for (int i = 0; i < n_; ++i)
        for (int d = 0; d < 3; ++d) {
          const double u1 = uniform(static_cast<std::uint64_t>(s_.seed), static_cast<std::uint64_t>(i), 2 * d);
          const double u2 = uniform(static_cast<std::uint64_t>(s_.seed), static_cast<std::uint64_t>(i), 2 * d + 1);
          vel[d][i] = std::sqrt(-2 * std::log(u1)) * std::cos(2 * kPi * u2);
          mean[d] += vel[d][i];
        }
      double ke2 = 0;
      for (int d = 0; d < 3; ++d) {
        mean[d] /= n_;
        for (int i = 0; i < n_; ++i) {
          vel[d][i] -= mean[d];
          ke2 += s_.mass * vel[d][i] * vel[d][i];
        }
      }
      const double scale = std::sqrt(s_.temperature * (3.0 * n_ - 3) / ke2);
      for (auto& v : vel)
        for (double& x : v) x *= scale;
    }
    const Backend where = ctx.exec.backend();
    auto buf = [&](const std::vector<double>* init) {
      Buffer<double> bb(where, static_cast<std::size_t>(n_));
      bb.from_host(ctx.exec, init ? *init : std::vector<double>(static_cast<std::size_t>(n_), 0.0));
      return bb;
    };
    for (int d = 0; d < 3; ++d) {
      x_[d] = buf(&pos[d]);
      v_[d] = buf(&vel[d]);
      f_[d] = buf(nullptr);
      x0_[d] = buf(nullptr);
      img_[d] = Buffer<int>(where, static_cast<std::size_t>(n_));
      img_[d].from_host(ctx.exec, std::vector<int>(static_cast<std::size_t>(n_), 0));
    }
    pe_ = buf(nullptr);
    vir_ = buf(nullptr);

    // Lennard-Jones coefficients (LAMMPS's lj/cut forms).
    const double s6 = std::pow(s_.sigma, 6), s12 = s6 * s6, e = s_.epsilon;
    lj_.cut2 = s_.cutoff * s_.cutoff;
    lj_.lj1 = 48 * e * s12;
    lj_.lj2 = 24 * e * s6;
    lj_.lj3 = 4 * e * s12;
    lj_.lj4 = 4 * e * s6;
    if (s_.shift) {
      const double r6 = s6 / std::pow(s_.cutoff, 6);
      lj_.offset = 4 * e * (r6 * r6 - r6);
    }
    build_list();
    compute_forces();
  }

  std::string describe() const override {
    return strprintf("md: %d atoms, %s lattice at density %g (box %.6g x %.6g x %.6g), T0 %g; Lennard-Jones eps %g "
                     "sigma %g cutoff %g%s%s, Verlet list skin %g (rebuilt when an atom has moved skin/2); velocity "
                     "Verlet, dt %g; one rank",
                     n_, s_.lattice.c_str(), s_.density, box_[0], box_[1], box_[2], s_.temperature, s_.epsilon,
                     s_.sigma, s_.cutoff, s_.shift ? ", shifted" : "", s_.tail ? ", tail corrections" : "", s_.skin,
                     s_.dt);
  }
  double preferred_dt() const override { return s_.dt; }
  bool fixed_dt() const override { return true; }
  double work_per_step() const override { return static_cast<double>(n_); }
  std::string work_unit() const override { return "atom-steps"; }

  void advance(double /*time*/, double dt) override {
    const Exec& ex = ctx_.exec;
    if (stale_) refresh();
    const Atoms a = atoms();
    const double h = 0.5 * dt / s_.mass;
    CUMULUS_KERNEL(ex, kernels, kick_drift)(ex, a, h, dt);
    const double half_skin = 0.5 * s_.skin;
    if (CUMULUS_KERNEL(ex, kernels, max_displacement2)(ex, a) > half_skin * half_skin) build_list();
    compute_forces();
    CUMULUS_KERNEL(ex, kernels, kick)(ex, atoms(), h);
  }

  std::optional<HealthIssue> check_health() override {
    const Exec& ex = ctx_.exec;
    const std::int64_t bad = CUMULUS_KERNEL(ex, kernels, first_bad_atom)(ex, atoms());
    if (bad == std::numeric_limits<std::int64_t>::max()) return std::nullopt;
    return HealthIssue{"position or velocity", strprintf("atom %lld", static_cast<long long>(bad))};
  }

  std::vector<std::pair<std::string, double>> diagnostics(double /*time*/) override {
    if (stale_) refresh();
    const Exec& ex = ctx_.exec;
    const Atoms a = atoms();
    const double n = n_, V = box_[0] * box_[1] * box_[2], rho = n / V;
    const double ke = 0.5 * s_.mass * CUMULUS_KERNEL(ex, kernels, sum_kinetic)(ex, a);
    double pe = CUMULUS_KERNEL(ex, kernels, sum_potential)(ex, a);
    const double w = CUMULUS_KERNEL(ex, kernels, sum_virial)(ex, a);
    const double dof = 3.0 * n - 3.0;
    const double T = dof > 0 ? 2 * ke / dof : 0;
    double p_virial = w / (3 * V);
    if (s_.tail) {
      // Uniform density beyond the cutoff (Allen & Tildesley): per atom and pressure.
      const double sr3 = std::pow(s_.sigma / s_.cutoff, 3), sr9 = sr3 * sr3 * sr3, s3 = std::pow(s_.sigma, 3);
      pe += n * (8.0 / 3.0) * kPi * rho * s_.epsilon * s3 * (sr9 / 3 - sr3);
      p_virial += (16.0 / 3.0) * kPi * rho * rho * s_.epsilon * s3 * (2.0 / 3 * sr9 - sr3);
    }
    const double p = dof * T / (3 * V) + p_virial;
    return {{"temperature", T},
            {"pe_per_atom", pe / n},
            {"ke_per_atom", ke / n},
            {"etotal_per_atom", (pe + ke) / n},
            {"conserved_per_atom", (pe + ke) / n},
            {"pressure", p},
            {"virial_pressure", p_virial},
            {"neighbor_builds", static_cast<double>(builds_)},
            {"pairs_per_atom", pairs_ / n}};
  }

  StateDescription state() override {
    StateDescription s;
    s.geometry.ndim = 3;
    s.geometry.corners_per_cell = 1;
    s.geometry.cell_corners = [this] {
      std::vector<double> out(3 * static_cast<std::size_t>(n_));
      std::vector<double> h[3];
      for (int d = 0; d < 3; ++d) h[d] = x_[d].to_host(ctx_.exec);
      for (int i = 0; i < n_; ++i)
        for (int d = 0; d < 3; ++d) out[3 * static_cast<std::size_t>(i) + d] = h[d][static_cast<std::size_t>(i)];
      return out;
    };
    s.decomposition = {1, 1, 1};
    auto vec3 = [&](const char* name, const char* units, Buffer<double>* b, bool position) {
      GridArray g;
      g.name = name;
      g.units = units;
      g.ncomp = 3;
      g.global_box = Box(0, 0, 0, n_, 1, 1);
      g.local_box = g.global_box;
      g.read_local = [this, b] {
        std::vector<unsigned char> out(3 * sizeof(double) * static_cast<std::size_t>(n_));
        for (int d = 0; d < 3; ++d) {
          const std::vector<double> h = b[d].to_host(ctx_.exec);
          std::memcpy(out.data() + d * sizeof(double) * n_, h.data(), sizeof(double) * n_);
        }
        return out;
      };
      g.write_local = [this, b, position](const std::vector<unsigned char>& in) {
        for (int d = 0; d < 3; ++d) {
          std::vector<double> h(static_cast<std::size_t>(n_));
          std::memcpy(h.data(), in.data() + d * sizeof(double) * n_, sizeof(double) * n_);
          b[d].from_host(ctx_.exec, h);
        }
        if (position) stale_ = true;
      };
      s.arrays.push_back(std::move(g));
    };
    vec3("position", "sigma", x_, true);
    vec3("velocity", "sigma/tau", v_, false);
    GridArray im;
    im.name = "image";
    im.units = "box lengths";
    im.dtype = DType::i32;
    im.ncomp = 3;
    im.global_box = Box(0, 0, 0, n_, 1, 1);
    im.local_box = im.global_box;
    im.read_local = [this] {
      std::vector<unsigned char> out(3 * sizeof(int) * static_cast<std::size_t>(n_));
      for (int d = 0; d < 3; ++d) {
        const std::vector<int> h = img_[d].to_host(ctx_.exec);
        std::memcpy(out.data() + d * sizeof(int) * n_, h.data(), sizeof(int) * n_);
      }
      return out;
    };
    im.write_local = [this](const std::vector<unsigned char>& in) {
      for (int d = 0; d < 3; ++d) {
        std::vector<int> h(static_cast<std::size_t>(n_));
        std::memcpy(h.data(), in.data() + d * sizeof(int) * n_, sizeof(int) * n_);
        img_[d].from_host(ctx_.exec, h);
      }
    };
    s.arrays.push_back(std::move(im));
    return s;
  }

 private:
  Atoms atoms() const {
    Atoms a;
    a.x = x_[0].data();
    a.y = x_[1].data();
    a.z = x_[2].data();
    a.vx = v_[0].data();
    a.vy = v_[1].data();
    a.vz = v_[2].data();
    a.fx = f_[0].data();
    a.fy = f_[1].data();
    a.fz = f_[2].data();
    a.pe = pe_.data();
    a.virial = vir_.data();
    a.ix = img_[0].data();
    a.iy = img_[1].data();
    a.iz = img_[2].data();
    a.x0 = x0_[0].data();
    a.y0 = x0_[1].data();
    a.z0 = x0_[2].data();
    a.start = start_.data();
    a.neighbors = nbr_.data();
    a.n = n_;
    for (int d = 0; d < 3; ++d) a.box[d] = box_[d];
    return a;
  }

  void compute_forces() { CUMULUS_KERNEL(ctx_.exec, kernels, forces)(ctx_.exec, atoms(), lj_); }

  // After a restart replaced the positions: a new list and forces for them.
  void refresh() {
    stale_ = false;
    build_list();
    compute_forces();
  }

  // The Verlet list, on the host from a cell list: bins at least cutoff + skin wide, every atom's
  // neighbours within cutoff + skin (minimum image) from the 27 bins around its own, sorted by
  // index. Small boxes (fewer than 3 bins along an axis) scan every atom instead, so that no pair
  // is counted twice. (On CUDA the positions go to the host for this: correct, not yet fast.)
  void build_list() {
    const Exec& ex = ctx_.exec;
    std::vector<double> h[3];
    for (int d = 0; d < 3; ++d) h[d] = x_[d].to_host(ex);
    const double rl = s_.cutoff + s_.skin, rl2 = rl * rl;
    int nb[3];
    bool brute = false;
    for (int d = 0; d < 3; ++d) {
      nb[d] = std::max(1, static_cast<int>(std::floor(box_[d] / rl)));
      brute = brute || nb[d] < 3;
    }
    std::vector<std::int64_t> start(static_cast<std::size_t>(n_) + 1, 0);
    std::vector<int> list;
    list.reserve(static_cast<std::size_t>(n_) * 80);
    auto image = [&](double d, int axis) { return d - box_[axis] * std::floor(d / box_[axis] + 0.5); };
    auto close = [&](int i, int j) {
      const double dx = image(h[0][i] - h[0][j], 0), dy = image(h[1][i] - h[1][j], 1), dz = image(h[2][i] - h[2][j], 2);
      return dx * dx + dy * dy + dz * dz < rl2;
    };
    if (brute) {
      for (int i = 0; i < n_; ++i) {
        for (int j = 0; j < n_; ++j)
          if (j != i && close(i, j)) list.push_back(j);
        start[static_cast<std::size_t>(i) + 1] = static_cast<std::int64_t>(list.size());
      }
    } else {
      const int nbins = nb[0] * nb[1] * nb[2];
      auto bin_of = [&](int i, int* b3) {
        for (int d = 0; d < 3; ++d) b3[d] = std::min(nb[d] - 1, static_cast<int>(h[d][i] / box_[d] * nb[d]));
        return (b3[2] * nb[1] + b3[1]) * nb[0] + b3[0];
      };
      std::vector<int> count(static_cast<std::size_t>(nbins) + 1, 0), bins(static_cast<std::size_t>(n_));
      int b3[3];
      for (int i = 0; i < n_; ++i) ++count[static_cast<std::size_t>(bin_of(i, b3)) + 1];
      for (int b = 0; b < nbins; ++b) count[static_cast<std::size_t>(b) + 1] += count[static_cast<std::size_t>(b)];
      std::vector<int> fill(count.begin(), count.end() - 1);
      for (int i = 0; i < n_; ++i) bins[static_cast<std::size_t>(fill[static_cast<std::size_t>(bin_of(i, b3))]++)] = i;
      for (int i = 0; i < n_; ++i) {
        bin_of(i, b3);
        for (int dz = -1; dz <= 1; ++dz)
          for (int dy = -1; dy <= 1; ++dy)
            for (int dx = -1; dx <= 1; ++dx) {
              const int bx = (b3[0] + dx + nb[0]) % nb[0], by = (b3[1] + dy + nb[1]) % nb[1],
                        bz = (b3[2] + dz + nb[2]) % nb[2];
              const int b = (bz * nb[1] + by) * nb[0] + bx;
              for (int k = count[static_cast<std::size_t>(b)]; k < count[static_cast<std::size_t>(b) + 1]; ++k) {
                const int j = bins[static_cast<std::size_t>(k)];
                if (j != i && close(i, j)) list.push_back(j);
              }
            }
        // Ascending neighbour index: the force on an atom then sums its pairs in the same order
        // whenever the list was built (a restart rebuilds it elsewhere in time: same bits).
        std::sort(list.begin() + start[static_cast<std::size_t>(i)], list.end());
        start[static_cast<std::size_t>(i) + 1] = static_cast<std::int64_t>(list.size());
      }
    }
    // The list grows as needed: it never drops a pair.
    if (nbr_.size() < list.size() || nbr_.size() == 0)
      nbr_ = Buffer<int>(ex.backend(), std::max<std::size_t>(list.size() + list.size() / 4, 1));
    memory::copy(ex, ex.backend(), nbr_.data(), Backend::host, list.data(), list.size() * sizeof(int));
    if (start_.size() != start.size()) start_ = Buffer<std::int64_t>(ex.backend(), start.size());
    start_.from_host(ex, start);
    for (int d = 0; d < 3; ++d)
      memory::copy(ex, ex.backend(), x0_[d].data(), ex.backend(), x_[d].data(), sizeof(double) * static_cast<std::size_t>(n_));
    pairs_ = static_cast<double>(list.size());
    ++builds_;
  }

  Context ctx_;
  Setup s_;
  int n_ = 0;
  double box_[3] = {0, 0, 0};
  LjCoefficients lj_;
  Buffer<double> x_[3], v_[3], f_[3], x0_[3], pe_, vir_;
  Buffer<int> img_[3], nbr_;
  Buffer<std::int64_t> start_;
  long builds_ = 0;
  double pairs_ = 0;
  bool stale_ = false;
};

std::unique_ptr<Model> create(const Config& cfg, const Context& ctx) { return std::make_unique<MdModel>(cfg, ctx); }

void register_solver(SolverRegistry& r) {
  r.add(SolverEntry{"md", "molecular dynamics: Lennard-Jones atoms, Verlet lists, velocity Verlet (one rank so far)",
                    declare_keys, check, create, {"position", "velocity", "image"}});
}

}  // namespace cumulus::md
