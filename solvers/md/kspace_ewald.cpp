// md.kspace_style = "ewald": the classic reciprocal-space Ewald sum (the reference for PME), with
// its self energy, the neutralising background of a net charge and tin-foil boundaries.
//
//   E_long = qqr2e (2 pi / V) sum_{k != 0} exp(-k^2 / 4 alpha^2) / k^2 |S(k)|^2,
//   S(k)   = sum_j q_j exp(i k . r_j),  k = 2 pi (nx / Lx, ny / Ly, nz / Lz),
//   E_self = -qqr2e alpha / sqrt(pi) sum_j q_j^2,
//   E_bg   = -qqr2e pi Q^2 / (2 V alpha^2)   (Q = sum_j q_j; zero for a neutral system),
//   F_j    = qqr2e (4 pi / V) q_j sum_k k exp(-k^2 / 4 alpha^2) / k^2 (sin(k.r_j) Re S - cos(k.r_j) Im S),
//   W_ab   = qqr2e (2 pi / V) sum_k exp(-k^2 / 4 alpha^2) / k^2 |S|^2 (delta_ab - 2 k_a k_b (1/k^2 + 1/(4 alpha^2)))
//            + E_bg delta_ab.
// Sums over k run over half of k-space (k and -k give the same terms) with a factor 2. S(k) is
// summed over the atoms of every rank exactly (core/exact_sum: each term a fixed point of 2^-80,
// added as integers), so S, and from it every atom's force and energy, has the same bits at any
// rank count.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.hpp"
#include "core/exact_sum.hpp"
#include "core/hd_math.hpp"
#include "core/log.hpp"
#include "core/memory.hpp"
#include "core/strings.hpp"
#include "solvers/md/kspace.hpp"

namespace cumulus::md {

namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr int kSumExp = -80;  // S(k)'s fixed point: terms up to 2^79 (kExactSumBits above 2^-80)

// LAMMPS's Ewald estimate of the RMS force error of the reciprocal sum with kmax vectors along an
// axis of length `prd` (Kolafa & Perram 1992, as LAMMPS's ewald.cpp rms()).
double rms_error(int kmax, double prd, double natoms, double q2, double alpha) {
  if (natoms == 0) return 0;
  return 2.0 * q2 * alpha / prd * std::sqrt(1.0 / (kPi * kmax * natoms)) *
         std::exp(-kPi * kPi * kmax * kmax / (alpha * alpha * prd * prd));
}

// Alpha and kmax per axis: the keys' values, or from md.kspace_tolerance as LAMMPS derives them from
// its relative force accuracy (kspace_style ewald <accuracy>): the absolute accuracy is the
// tolerance times the force between two unit charges one length unit apart (qqr2e); alpha makes
// the real-space error at the cutoff match it; each kmax is the smallest whose error estimate does.
struct EwaldParams {
  double alpha = 0;
  int kmax[3] = {0, 0, 0};
  std::int64_t n2max = 0;  // > 0: |n|^2 <= n2max (NIST's cut); 0: LAMMPS's sphere k^2 <= max_axis (2 pi kmax / L)^2
};

EwaldParams ewald_params(const Config& cfg, const std::array<double, 3>& L, const ChargeTotals& c, double rc) {
  EwaldParams p;
  const Units u = units_named(cfg.get<std::string>("md.units"));
  const double tol = cfg.get<double>("md.kspace_tolerance");
  const double accuracy = tol * u.qqr2e;
  const double q2 = c.qsqsum * u.qqr2e;
  p.alpha = cfg.get<double>("md.ewald_alpha");
  if (p.alpha <= 0) {
    double g = accuracy * std::sqrt(c.natoms * rc * L[0] * L[1] * L[2]) / (2.0 * q2);
    p.alpha = g >= 1.0 ? (1.35 - 0.15 * std::log(accuracy)) / rc : std::sqrt(-std::log(g)) / rc;
  }
  const auto km = cfg.get<std::vector<std::int64_t>>("md.ewald_kmax");
  p.n2max = cfg.get<std::int64_t>("md.ewald_n2max");
  for (int d = 0; d < 3; ++d) {
    if (!km.empty()) {
      p.kmax[d] = static_cast<int>(km[km.size() == 1 ? 0 : static_cast<std::size_t>(d)]);
    } else if (p.n2max > 0) {
      p.kmax[d] = static_cast<int>(std::floor(std::sqrt(static_cast<double>(p.n2max))));
    } else {
      int k = 1;
      while (rms_error(k, L[static_cast<std::size_t>(d)], c.natoms, q2, p.alpha) > accuracy && k < 100000) ++k;
      p.kmax[d] = k;
    }
  }
  return p;
}

class Ewald : public KSpace {
 public:
  Ewald(const Units& u, const EwaldParams& p, const ChargeTotals& c) : u_(u), p_(p), charges_(c) {
    // A warning above LAMMPS's threshold (1e-5 e): a neutral file's charges sum to rounding, not 0.
    if (std::fabs(c.qsum) > 1e-5)
      log_warn(strprintf("md: the system's net charge is %.10g e: the Ewald sum adds a uniform neutralising background "
                         "(energy -qqr2e pi Q^2 / (2 V alpha^2))", c.qsum));
  }

  std::string describe() const override {
    return strprintf("; k-space: Ewald sum, alpha %.10g, kmax %d %d %d%s (%zu vectors in half of k-space), tin-foil%s", p_.alpha,
                     p_.kmax[0], p_.kmax[1], p_.kmax[2],
                     p_.n2max > 0 ? strprintf(", |n|^2 <= %lld", static_cast<long long>(p_.n2max)).c_str() : "",
                     nk_, std::fabs(charges_.qsum) > 1e-5 ? strprintf(", net charge %g with a neutralising background", charges_.qsum).c_str() : "");
  }
  double alpha() const override { return p_.alpha; }

  void compute(const Exec& ex, const Comm& comm, const Atoms& a, std::int64_t* /*outside_into*/) override {
    set_box(a.box);
    const int n = a.n;
    const std::size_t un = static_cast<std::size_t>(n);
    // The owned atoms' positions, charges and forces on the host (a copy on CUDA).
    for (auto* v : {&x_, &y_, &z_, &q_, &fx_, &fy_, &fz_}) v->resize(un);
    auto down = [&](std::vector<double>& h, const double* d) {
      if (n > 0) memory::copy(ex, Backend::host, h.data(), ex.backend(), d, sizeof(double) * un);
    };
    down(x_, a.x);
    down(y_, a.y);
    down(z_, a.z);
    down(q_, a.q);
    down(fx_, a.fx);
    down(fy_, a.fy);
    down(fz_, a.fz);
    // S(k): each atom's terms as fixed points, summed over atoms and ranks as integers.
    std::vector<ExactSum> s(2 * nk_);
    const double to_units = std::ldexp(1.0, -kSumExp);
    for (int i = 0; i < n; ++i) {
      tables(i);
      for (std::size_t k = 0; k < nk_; ++k) {
        double c, sn;
        phase(k, &c, &sn);
        s[2 * k] = s[2 * k] + ExactSum::of_units(q_[static_cast<std::size_t>(i)] * c * to_units);
        s[2 * k + 1] = s[2 * k + 1] + ExactSum::of_units(q_[static_cast<std::size_t>(i)] * sn * to_units);
      }
    }
    comm.sum_in_place(reinterpret_cast<std::int64_t*>(s.data()), static_cast<int>(s.size()) * ExactSum::kWords);
    static_assert(sizeof(ExactSum) == sizeof(std::int64_t) * ExactSum::kWords, "ExactSum is its words");
    re_.resize(nk_);
    im_.resize(nk_);
    for (std::size_t k = 0; k < nk_; ++k)
      if (!s[2 * k].value_rounded(kSumExp, &re_[k]) || !s[2 * k + 1].value_rounded(kSumExp, &im_[k]))
        throw Error("md: the Ewald structure factor overflowed its fixed point (charges beyond 2^79?)");
    // The global energy and tensor from S (the same numbers on every rank).
    e_long_ = 0;
    w_.fill(0);
    for (std::size_t k = 0; k < nk_; ++k) {
      const double s2 = re_[k] * re_[k] + im_[k] * im_[k], e = pref_[k] * s2;
      e_long_ += e;
      const double b = 2 * (1 / k2_[k] + 1 / (4 * p_.alpha * p_.alpha));
      const double* kv = &kvec_[3 * k];
      w_[0] += e * (1 - b * kv[0] * kv[0]);
      w_[1] += e * (1 - b * kv[1] * kv[1]);
      w_[2] += e * (1 - b * kv[2] * kv[2]);
      w_[3] -= e * b * kv[0] * kv[1];
      w_[4] -= e * b * kv[0] * kv[2];
      w_[5] -= e * b * kv[1] * kv[2];
    }
    e_self_ = -u_.qqr2e * p_.alpha / std::sqrt(kPi) * charges_.qsqsum;
    e_bg_ = charges_.qsum == 0 ? 0.0 : -u_.qqr2e * kPi * charges_.qsum * charges_.qsum / (2 * volume_ * p_.alpha * p_.alpha);
    for (int c = 0; c < 3; ++c) w_[static_cast<std::size_t>(c)] += e_bg_;
    // Each atom's force, and its shares of the energy and virial (the reciprocal energy's share
    // q_j (cos Re S + sin Im S) per k sums to |S|^2; its virial trace is the energy times
    // 1 - k^2 / (2 alpha^2); self energy per atom; the background shared evenly, its virial 3 E_bg).
    std::vector<double> pe(a.energy ? un : 0), vir(a.energy ? un : 0);
    for (int i = 0; i < n; ++i) {
      const std::size_t ui = static_cast<std::size_t>(i);
      tables(i);
      double f[3] = {0, 0, 0}, e = 0, v = 0;
      for (std::size_t k = 0; k < nk_; ++k) {
        double c, sn;
        phase(k, &c, &sn);
        const double g = 2 * pref_[k] * (sn * re_[k] - c * im_[k]);
        f[0] += g * kvec_[3 * k];
        f[1] += g * kvec_[3 * k + 1];
        f[2] += g * kvec_[3 * k + 2];
        if (a.energy) {
          const double ek = pref_[k] * (c * re_[k] + sn * im_[k]);
          e += ek;
          v += ek * (1 - k2_[k] / (2 * p_.alpha * p_.alpha));
        }
      }
      const double qi = q_[ui];
      fx_[ui] += qi * f[0];
      fy_[ui] += qi * f[1];
      fz_[ui] += qi * f[2];
      if (a.energy) {
        const double share_bg = e_bg_ / charges_.natoms;
        pe[ui] = qi * e - u_.qqr2e * p_.alpha / std::sqrt(kPi) * qi * qi + share_bg;
        vir[ui] = qi * v + 3 * share_bg;
      }
    }
    auto up = [&](double* d, const std::vector<double>& h) {
      if (n > 0) memory::copy(ex, ex.backend(), d, Backend::host, h.data(), sizeof(double) * un);
    };
    up(a.fx, fx_);
    up(a.fy, fy_);
    up(a.fz, fz_);
    if (a.energy) {
      std::vector<double> pe0(un), vir0(un);
      down(pe0, a.pe);
      down(vir0, a.virial);
      for (std::size_t i = 0; i < un; ++i) {
        pe0[i] += pe[i];
        vir0[i] += vir[i];
      }
      up(a.pe, pe0);
      up(a.virial, vir0);
    }
  }

  std::array<double, 6> virial_tensor() const override { return w_; }
  std::vector<std::pair<std::string, double>> energy_terms() const override {
    return {{"e_long", e_long_}, {"e_self", e_self_}, {"e_background", e_bg_}};
  }

 private:
  // The k vectors of half of k-space for box L (rebuilt when the box changes): n with nx > 0, or
  // nx = 0 and ny > 0, or nx = ny = 0 and nz > 0, |n_d| <= kmax_d, inside the cut; and per k the
  // prefactor qqr2e (4 pi / V) exp(-k^2 / 4 alpha^2) / k^2 (the half space's factor 2 included).
  void set_box(const double* L) {
    if (L[0] == box_[0] && L[1] == box_[1] && L[2] == box_[2] && nk_ > 0) return;
    for (int d = 0; d < 3; ++d) {
      box_[d] = L[d];
      unit_[d] = 2 * kPi / L[d];
    }
    volume_ = L[0] * L[1] * L[2];
    double g2max = 0;  // LAMMPS's sphere: the largest of (2 pi kmax_d / L_d)^2, with its 1.00001 margin
    for (int d = 0; d < 3; ++d) g2max = std::max(g2max, unit_[d] * unit_[d] * p_.kmax[d] * p_.kmax[d]);
    g2max *= 1.00001;
    nvec_.clear();
    kvec_.clear();
    k2_.clear();
    pref_.clear();
    for (int nx = 0; nx <= p_.kmax[0]; ++nx)
      for (int ny = -p_.kmax[1]; ny <= p_.kmax[1]; ++ny)
        for (int nz = -p_.kmax[2]; nz <= p_.kmax[2]; ++nz) {
          if (nx == 0 && (ny < 0 || (ny == 0 && nz <= 0))) continue;
          const double kx = unit_[0] * nx, ky = unit_[1] * ny, kz = unit_[2] * nz, k2 = kx * kx + ky * ky + kz * kz;
          if (p_.n2max > 0 ? static_cast<std::int64_t>(nx) * nx + static_cast<std::int64_t>(ny) * ny + static_cast<std::int64_t>(nz) * nz > p_.n2max
                           : k2 > g2max)
            continue;
          nvec_.insert(nvec_.end(), {nx, ny, nz});
          kvec_.insert(kvec_.end(), {kx, ky, kz});
          k2_.push_back(k2);
          pref_.push_back(u_.qqr2e * 4 * kPi / volume_ * std::exp(-k2 / (4 * p_.alpha * p_.alpha)) / k2);
        }
    nk_ = k2_.size();
  }

  // Atom i's cos and sin of 2 pi n x_d / L_d for n = 0 .. kmax_d along each axis (each angle's own
  // call: the values depend on the atom's coordinate alone; core/hd_math's, which a CUDA pass of
  // this sum would reproduce bit for bit).
  void tables(int i) {
    const double r[3] = {x_[static_cast<std::size_t>(i)], y_[static_cast<std::size_t>(i)], z_[static_cast<std::size_t>(i)]};
    for (int d = 0; d < 3; ++d) {
      cs_[d].resize(static_cast<std::size_t>(p_.kmax[d]) + 1);
      sn_[d].resize(static_cast<std::size_t>(p_.kmax[d]) + 1);
      for (int m = 0; m <= p_.kmax[d]; ++m) {
        const double t = unit_[d] * m * r[d];
        cs_[d][static_cast<std::size_t>(m)] = hd::cos(t);
        sn_[d][static_cast<std::size_t>(m)] = hd::sin(t);
      }
    }
  }
  // cos and sin of k . r for vector k of the atom whose tables are loaded: the product of the three
  // axes' exp(i k_d x_d) (sin(-t) = -sin(t)).
  void phase(std::size_t k, double* c, double* s) const {
    const int* nv = &nvec_[3 * k];
    double cr = 1, ci = 0;
    for (int d = 0; d < 3; ++d) {
      const int m = nv[d] < 0 ? -nv[d] : nv[d];
      const double ac = cs_[d][static_cast<std::size_t>(m)], as = nv[d] < 0 ? -sn_[d][static_cast<std::size_t>(m)] : sn_[d][static_cast<std::size_t>(m)];
      const double nr = cr * ac - ci * as, ni = cr * as + ci * ac;
      cr = nr;
      ci = ni;
    }
    *c = cr;
    *s = ci;
  }

  Units u_;
  EwaldParams p_;
  ChargeTotals charges_;
  double box_[3] = {0, 0, 0}, unit_[3] = {0, 0, 0}, volume_ = 0;
  std::size_t nk_ = 0;
  std::vector<int> nvec_;
  std::vector<double> kvec_, k2_, pref_, re_, im_;
  std::vector<double> cs_[3], sn_[3];
  std::vector<double> x_, y_, z_, q_, fx_, fy_, fz_;
  double e_long_ = 0, e_self_ = 0, e_bg_ = 0;
  std::array<double, 6> w_{};
};

}  // namespace

void declare_kspace_keys(Schema& s) {
  s.key("md.kspace_style", ValueType::string,
        "The k-space part of the Coulomb sum: none, ewald (the classic reciprocal sum) or pme (smooth particle-mesh "
        "Ewald on the distributed FFT); with lj/cut/coul/long or coul/long")
      .def(std::string("none"))
      .one_of({"none", "ewald", "pme"});
  s.key("md.kspace_tolerance", ValueType::real,
        "Ewald: the relative force accuracy alpha and kmax are derived from where not given (LAMMPS's kspace_style ewald "
        "<accuracy>: the absolute accuracy is this times the force between two unit charges at unit distance)")
      .def(1e-5)
      .positive();
  s.key("md.ewald_alpha", ValueType::real, "Ewald splitting parameter alpha (1/length; 0: from md.kspace_tolerance)").def(0.0).at_least(0);
  s.key("md.ewald_kmax", ValueType::integer_array,
        "Ewald: the largest |n| of k = 2 pi n / L along x, y, z (one entry: all three; empty: from md.kspace_tolerance, or "
        "from md.ewald_n2max). Vectors inside the sphere k^2 <= max_d (2 pi kmax_d / L_d)^2, as LAMMPS's kmax/ewald")
      .def(std::vector<std::int64_t>{})
      .length(0, 3)
      .at_least(1);
  s.key("md.ewald_n2max", ValueType::integer,
        "Ewald: if positive, the vectors with nx^2 + ny^2 + nz^2 <= this instead of the sphere (NIST's SPC/E reference "
        "uses |n|^2 < 27: 26)")
      .def(std::int64_t{0})
      .at_least(0);
  declare_pme_keys(s);
}

double check_kspace(const Config& cfg, const std::array<double, 3>& L, const ChargeTotals& c, double rc) {
  if (cfg.get<std::string>("md.kspace_style") == "none") return 0;
  if (c.qsqsum == 0) cfg.fail("md.kspace_style", "is " + cfg.get<std::string>("md.kspace_style") + ", but every charge is zero");
  if (cfg.get<std::string>("md.kspace_style") == "pme") return check_pme(cfg, L, c, rc);
  const auto km = cfg.get<std::vector<std::int64_t>>("md.ewald_kmax");
  if (km.size() == 2) cfg.fail("md.ewald_kmax", "has 2 entries: give one (all axes) or three");
  if (c.qsqsum == 0) cfg.fail("md.kspace_style", "is ewald, but every charge is zero");
  const EwaldParams p = ewald_params(cfg, L, c, rc);
  if (!(p.alpha > 0) || !std::isfinite(p.alpha))
    cfg.fail(cfg.get<double>("md.ewald_alpha") > 0 ? "md.ewald_alpha" : "md.kspace_tolerance", strprintf("gives alpha %g", p.alpha));
  const double nk = (2.0 * p.kmax[0] + 1) * (2.0 * p.kmax[1] + 1) * (2.0 * p.kmax[2] + 1) / 2;
  if (nk > 4e6)
    cfg.fail(!km.empty() ? "md.ewald_kmax" : p.n2max > 0 ? "md.ewald_n2max" : "md.kspace_tolerance",
             strprintf("asks for kmax %d %d %d (about %.3g k vectors): more than the Ewald sum can take (4 million); use a "
                       "looser tolerance, a longer cutoff or PME",
                       p.kmax[0], p.kmax[1], p.kmax[2], nk));
  return nk * 64;  // the structure factor's words and their exact sums, per vector
}

std::unique_ptr<KSpace> make_kspace(const Config& cfg, const std::array<double, 3>& L, const ChargeTotals& c, double rc) {
  if (cfg.get<std::string>("md.kspace_style") == "none") return nullptr;
  if (cfg.get<std::string>("md.kspace_style") == "pme") return make_pme_kspace(cfg, L, c, rc);
  return std::make_unique<Ewald>(units_named(cfg.get<std::string>("md.units")), ewald_params(cfg, L, c, rc), c);
}

}  // namespace cumulus::md
