// md.kspace_style = "pme": smooth particle-mesh Ewald (solvers/md/pme.hpp) as the k-space term,
// with the self energy and the neutralising background of the Ewald sum (kspace_ewald.cpp), and
// its grid and alpha from md.kspace_tolerance where not given.
//
// Parameters from the tolerance, as LAMMPS's pppm derives them from its relative force accuracy
// (so that a LAMMPS job's `kspace_style pppm <accuracy>` and ours ask for the same accuracy): the
// absolute accuracy is the tolerance times qqr2e; alpha the same as the Ewald sum's; along each
// axis the smallest grid (of 2, 3 and 5 only, for the FFT) whose estimated RMS force error
// (Deserno & Holm, J. Chem. Phys. 109, 7678 (1998), the error of the optimal-influence-function
// P3M with splines of this order, which smooth PME's error follows closely) is within it.
#include <algorithm>
#include <cmath>

#include "core/constants.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/memory.hpp"
#include "core/strings.hpp"
#include "solvers/md/kspace.hpp"
#include "solvers/md/pme.hpp"

namespace cumulus::md {

namespace {

// Deserno & Holm's coefficients of the error sum for splines of order p = 4, 5, 6 (their table of
// the aliasing sums' expansion in (h alpha)^2).
double error_sum(int p, double ha) {
  static const double c4[4] = {1.0 / 4320.0, 3.0 / 1936.0, 7601.0 / 2271360.0, 143.0 / 28800.0};
  static const double c5[5] = {1.0 / 23232.0, 7601.0 / 13628160.0, 143.0 / 69120.0, 517231.0 / 106536960.0,
                               106640677.0 / 11737571328.0};
  static const double c6[6] = {691.0 / 68140800.0, 13.0 / 57600.0, 47021.0 / 35512320.0, 9694607.0 / 2095994880.0,
                               733191589.0 / 59609088000.0, 326190917.0 / 11700633600.0};
  const double* c = p == 4 ? c4 : (p == 5 ? c5 : c6);
  double s = 0, x = 1;
  for (int m = 0; m < p; ++m, x *= ha * ha) s += c[m] * x;
  return s;
}

// The estimated RMS force error of the reciprocal part along an axis of length `prd` with grid
// spacing h (q2 = qqr2e sum q^2).
double pme_error(int p, double h, double prd, double natoms, double q2, double alpha) {
  if (natoms == 0) return 0;
  const double ha = h * alpha;
  return q2 * std::pow(ha, p) * std::sqrt(alpha * prd * std::sqrt(2 * kPi) * error_sum(p, ha) / natoms) / (prd * prd);
}

bool fft_friendly(int n) {
  for (int f : {2, 3, 5})
    while (n % f == 0) n /= f;
  return n == 1;
}

struct PmeChoice {
  double alpha = 0;
  Index3 grid{0, 0, 0};
  int order = 5;
  double error[3] = {0, 0, 0};  // the estimate along each axis
};

PmeChoice pme_choice(const Config& cfg, const std::array<double, 3>& L, const ChargeTotals& c, double rc) {
  PmeChoice p;
  const Units u = units_named(cfg.get<std::string>("md.units"));
  const double accuracy = cfg.get<double>("md.kspace_tolerance") * u.qqr2e;
  const double q2 = c.qsqsum * u.qqr2e;
  p.order = static_cast<int>(cfg.get<std::int64_t>("md.pme_order"));
  p.alpha = cfg.get<double>("md.ewald_alpha");
  if (p.alpha <= 0) {  // as the Ewald sum (kspace_ewald.cpp) and LAMMPS
    const double g = accuracy * std::sqrt(c.natoms * rc * L[0] * L[1] * L[2]) / (2.0 * q2);
    p.alpha = g >= 1.0 ? (1.35 - 0.15 * std::log(accuracy)) / rc : std::sqrt(-std::log(g)) / rc;
  }
  const auto given = cfg.get<std::vector<std::int64_t>>("md.pme_grid");
  for (int d = 0; d < 3; ++d) {
    int n;
    if (!given.empty()) {
      n = static_cast<int>(given[given.size() == 1 ? 0 : static_cast<std::size_t>(d)]);
    } else {
      n = std::max(2 * p.order, 8);
      while (n < 4096 && (!fft_friendly(n) || pme_error(p.order, L[d] / n, L[d], c.natoms, q2, p.alpha) > accuracy)) ++n;
    }
    p.grid[d] = n;
    p.error[d] = pme_error(p.order, L[d] / n, L[d], c.natoms, q2, p.alpha);
  }
  return p;
}

class PmeKSpace : public KSpace {
 public:
  PmeKSpace(const Units& u, const PmeChoice& p, const ChargeTotals& c, bool mixed) : u_(u), p_(p), charges_(c), mixed_(mixed) {
    if (std::fabs(c.qsum) > 1e-5)
      log_warn(strprintf("md: the system's net charge is %.10g e: PME adds a uniform neutralising background "
                         "(energy -qqr2e pi Q^2 / (2 V alpha^2))", c.qsum));
  }

  std::string describe() const override {
    return strprintf("; k-space: PME, grid %dx%dx%d, splines of order %d, alpha %.10g (estimated RMS force error %.3g, "
                     "%.3g, %.3g), tin-foil%s%s%s",
                     p_.grid[0], p_.grid[1], p_.grid[2], p_.order, p_.alpha, p_.error[0], p_.error[1], p_.error[2],
                     std::fabs(charges_.qsum) > 1e-5 ? strprintf(", net charge %g with a neutralising background", charges_.qsum).c_str() : "",
                     mixed_ ? "; mixed precision: the grid, FFT and interpolation in fp32" : "",
                     pme_ ? ("; " + pme_->describe()).c_str() : "");
  }
  double alpha() const override { return p_.alpha; }
  bool checks_outside() const override { return true; }
  bool adds_once() const override { return true; }  // pme_forces_*: one subtraction a component, one addition each energy, virial

  void set_domain(const CartesianDecomposition& atoms, double drift) override {
    atoms_ = std::make_unique<CartesianDecomposition>(atoms);
    drift_ = drift;
  }

  void compute(const Exec& ex, const Comm& comm, const Atoms& a, std::int64_t* outside_into) override {
    if (!atoms_) throw Error("md: PME without the atoms' decomposition (KSpace::set_domain not called)");
    const std::array<double, 3> box{a.box[0], a.box[1], a.box[2]};
    if (!pme_) {
      // The fixed point's scale from the largest charge anywhere (a maximum: the same at any rank
      // count). The charges do not change during a run.
      std::vector<double> q(static_cast<std::size_t>(a.n));
      if (a.n > 0) memory::copy(ex, Backend::host, q.data(), ex.backend(), a.q, sizeof(double) * q.size());
      double qmax = 0;
      for (double v : q) qmax = std::max(qmax, std::fabs(v));
      PmeParams pp;
      pp.grid = p_.grid;
      pp.order = p_.order;
      pp.alpha = p_.alpha;
      pp.coulomb = u_.qqr2e;
      if (mixed_)
        pme_ = std::make_unique<PmeT<float>>(pp, *atoms_, box, drift_, comm.max(qmax), comm, ex);
      else
        pme_ = std::make_unique<PmeT<double>>(pp, *atoms_, box, drift_, comm.max(qmax), comm, ex);
      box_ = box;
    }
    if (box != box_) {
      pme_->set_box(box);
      box_ = box;
    }
    const double volume = box[0] * box[1] * box[2];
    e_self_ = -u_.qqr2e * p_.alpha / std::sqrt(kPi) * charges_.qsqsum;
    e_bg_ = charges_.qsum == 0 ? 0.0 : -u_.qqr2e * kPi * charges_.qsum * charges_.qsum / (2 * volume * p_.alpha * p_.alpha);
    PmeAtoms pa;
    pa.x = a.x;
    pa.y = a.y;
    pa.z = a.z;
    pa.q = a.q;
    pa.fx = a.fx;
    pa.fy = a.fy;
    pa.fz = a.fz;
    pa.n = a.n;
    pa.outside_into = outside_into;
    if (a.energy) {
      pa.pe = a.pe;
      pa.virial = a.virial;
      pa.self_coef = -u_.qqr2e * p_.alpha / std::sqrt(kPi);
      pa.extra = e_bg_ / charges_.natoms;  // the background shared evenly, its virial 3 E_bg
      pa.extra_virial = 3 * e_bg_ / charges_.natoms;
    }
    const PmeResult r = pme_->compute(pa);
    e_long_ = r.energy;
    w_ = r.virial;
    for (int c = 0; c < 3; ++c) w_[static_cast<std::size_t>(c)] += e_bg_;
  }

  std::array<double, 6> virial_tensor() const override { return w_; }
  std::vector<std::pair<std::string, double>> energy_terms() const override {
    return {{"e_long", e_long_}, {"e_self", e_self_}, {"e_background", e_bg_}};
  }

 private:
  Units u_;
  PmeChoice p_;
  ChargeTotals charges_;
  std::unique_ptr<CartesianDecomposition> atoms_;
  double drift_ = 0;
  std::unique_ptr<PmeSolver> pme_;
  bool mixed_ = false;  // md.precision = "mixed": the grid, FFT and interpolation in fp32
  std::array<double, 3> box_{};
  double e_long_ = 0, e_self_ = 0, e_bg_ = 0;
  std::array<double, 6> w_{};
};

}  // namespace

void declare_pme_keys(Schema& s) {
  s.key("md.pme_grid", ValueType::integer_array,
        "PME: grid points along x, y, z (one entry: all three; empty: the smallest grids of factors 2, 3, 5 whose "
        "estimated force error meets md.kspace_tolerance)")
      .def(std::vector<std::int64_t>{})
      .length(0, 3)
      .at_least(8);
  s.key("md.pme_order", ValueType::integer, "PME: the order of the charge-spreading B-splines (4, 5 or 6; LAMMPS's pppm order)")
      .def(std::int64_t{5})
      .at_least(4)
      .at_most(6);
}

double check_pme(const Config& cfg, const std::array<double, 3>& L, const ChargeTotals& c, double rc) {
  const auto g = cfg.get<std::vector<std::int64_t>>("md.pme_grid");
  if (g.size() == 2) cfg.fail("md.pme_grid", "has 2 entries: give one (all axes) or three");
  const PmeChoice p = pme_choice(cfg, L, c, rc);
  if (!(p.alpha > 0) || !std::isfinite(p.alpha))
    cfg.fail(cfg.get<double>("md.ewald_alpha") > 0 ? "md.ewald_alpha" : "md.kspace_tolerance", strprintf("gives alpha %g", p.alpha));
  for (int d = 0; d < 3; ++d)
    if (p.grid[d] >= 4096 || p.grid[d] < 2 * p.order)
      cfg.fail(!g.empty() ? "md.pme_grid" : "md.kspace_tolerance",
               strprintf("asks for %d PME grid points along %c (order %d): between %d and 4095 are possible; use a looser "
                         "tolerance, a longer cutoff or another grid",
                         p.grid[d], "xyz"[d], p.order, 2 * p.order));
  // Per grid point, over all ranks: the integer charge grid and the potential grid (8 bytes each,
  // with their ghost layers), the FFT's real input and half spectrum (8 + 8) and its transposes'
  // buffers (about 32): 80 bytes, an estimate.
  return 80.0 * p.grid[0] * p.grid[1] * p.grid[2];
}

std::unique_ptr<KSpace> make_pme_kspace(const Config& cfg, const std::array<double, 3>& L, const ChargeTotals& c, double rc) {
  return std::make_unique<PmeKSpace>(units_named(cfg.get<std::string>("md.units")), pme_choice(cfg, L, c, rc), c,
                                     cfg.get<std::string>("md.precision") == "mixed");
}

}  // namespace cumulus::md
