// The lj/cut force term (Lennard-Jones 12-6 with a cutoff per type pair, explicit or mixed
// coefficients, optional shift and tail corrections), its keys and its registration.
#include "solvers/md/force.hpp"
#include "solvers/md/pair_lj_cut.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/constants.hpp"
#include "core/error.hpp"
#include "core/memory.hpp"
#include "core/strings.hpp"

namespace cumulus::md {

// Every type pair's parameters (row-major, symmetric), from the job: the md.pairs.<name> tables
// first; a type with itself not given takes md.epsilon, md.sigma, md.cutoff; a pair of two types
// not given is mixed by md.mixing (Lorentz-Berthelot: eps = sqrt(eps_a eps_b), sigma and cutoff
// arithmetic means; geometric: all three geometric means, as LAMMPS's pair_modify mix geometric).
// Throws through cfg.fail with the key at fault.
std::vector<LjPair> lj_pairs(const Config& cfg, int nt) {
  std::vector<LjPair> p(static_cast<std::size_t>(nt) * nt);
  auto at = [&](int a, int b) -> LjPair& { return p[static_cast<std::size_t>(a) * nt + b]; };
  const double rc = cfg.get<double>("md.cutoff");
  for (const std::string& name : cfg.instances("md.pairs")) {
    const std::string k = "md.pairs." + name + ".";
    const auto t = cfg.get<std::vector<std::int64_t>>(k + "types");
    if (t.size() != 2) cfg.fail(k + "types", "needs two atom types, [a, b]");
    for (std::int64_t v : t)
      if (v < 1 || v > nt) cfg.fail(k + "types", strprintf("type %lld is not among the %d atom types (1 .. %d)", static_cast<long long>(v), nt, nt));
    const int a = static_cast<int>(t[0]) - 1, b = static_cast<int>(t[1]) - 1;
    if (at(a, b).explicit_pair)
      cfg.fail(k + "types", strprintf("the pair %d-%d is given twice", a + 1, b + 1));
    LjPair q;
    q.epsilon = cfg.get<double>(k + "epsilon");
    q.sigma = cfg.get<double>(k + "sigma");
    q.cutoff = cfg.get<double>(k + "cutoff");
    if (q.cutoff == 0) q.cutoff = rc;
    q.explicit_pair = true;
    at(a, b) = q;
    at(b, a) = q;
  }
  for (int a = 0; a < nt; ++a)
    if (!at(a, a).explicit_pair) at(a, a) = {cfg.get<double>("md.epsilon"), cfg.get<double>("md.sigma"), rc, false};
  const std::string mixing = cfg.get<std::string>("md.mixing");
  for (int a = 0; a < nt; ++a)
    for (int b = a + 1; b < nt; ++b) {
      if (at(a, b).explicit_pair) continue;
      if (mixing == "none")
        cfg.fail("md.mixing", strprintf("is none, and the pair of types %d and %d has no [md.pairs.<name>] table "
                                        "(types = [%d, %d], epsilon, sigma)", a + 1, b + 1, a + 1, b + 1));
      const LjPair &A = at(a, a), &B = at(b, b);
      LjPair q;
      q.epsilon = std::sqrt(A.epsilon * B.epsilon);
      if (mixing == "geometric") {
        q.sigma = std::sqrt(A.sigma * B.sigma);
        q.cutoff = std::sqrt(A.cutoff * B.cutoff);
      } else {
        q.sigma = 0.5 * (A.sigma + B.sigma);
        q.cutoff = 0.5 * (A.cutoff + B.cutoff);
      }
      at(a, b) = q;
      at(b, a) = q;
    }
  return p;
}

namespace {

class LjCut : public ForceTerm {
 public:
  LjCut(const Config& cfg, int nt, const Exec& ex) : nt_(nt), pairs_(lj_pairs(cfg, nt)) {
    shift_ = cfg.get<bool>("md.shift");
    tail_ = cfg.get<bool>("md.tail_correction");
    // LAMMPS's lj/cut forms of the coefficients.
    std::vector<LjCoefficients> c(pairs_.size());
    for (std::size_t k = 0; k < pairs_.size(); ++k) {
      const LjPair& q = pairs_[k];
      const double s6 = std::pow(q.sigma, 6), s12 = s6 * s6, e = q.epsilon;
      c[k].cut2 = q.cutoff * q.cutoff;
      c[k].lj1 = 48 * e * s12;
      c[k].lj2 = 24 * e * s6;
      c[k].lj3 = 4 * e * s12;
      c[k].lj4 = 4 * e * s6;
      if (shift_) {
        const double r6 = s6 / std::pow(q.cutoff, 6);
        c[k].offset = 4 * e * (r6 * r6 - r6);
      }
    }
    table_ = Buffer<LjCoefficients>(ex.backend(), c.size());
    memory::copy(ex, ex.backend(), table_.data(), Backend::host, c.data(), c.size() * sizeof(LjCoefficients));
    // md.precision = "mixed": the same coefficients rounded to fp32.
    mixed_ = cfg.get<std::string>("md.precision") == "mixed";
    if (mixed_) {
      std::vector<LjCoefficients32> c32(c.size());
      for (std::size_t k = 0; k < c.size(); ++k)
        c32[k] = {static_cast<float>(c[k].cut2), static_cast<float>(c[k].lj1), static_cast<float>(c[k].lj2),
                  static_cast<float>(c[k].lj3), static_cast<float>(c[k].lj4), static_cast<float>(c[k].offset)};
      table32_ = Buffer<LjCoefficients32>::copy_of(ex, c32, 1);
    }
  }

  std::string describe() const override {
    std::string out = "Lennard-Jones 12-6 (lj/cut";
    out += shift_ ? ", shifted" : "";
    out += tail_ ? ", tail corrections" : "";
    out += ")";
    if (mixed_) out += "; mixed precision: the separations and pair terms in fp32 (fp32 coordinates), summed in fixed point;";
    for (int a = 0; a < nt_; ++a)
      for (int b = a; b < nt_; ++b) {
        const LjPair& q = pairs_[static_cast<std::size_t>(a) * nt_ + b];
        out += nt_ == 1 ? strprintf(" eps %g sigma %g cutoff %g", q.epsilon, q.sigma, q.cutoff)
                        : strprintf("%s %d-%d: eps %g sigma %g cutoff %g%s", a + b == 0 ? ":" : ";", a + 1, b + 1,
                                    q.epsilon, q.sigma, q.cutoff, q.explicit_pair || a == b ? "" : " (mixed)");
      }
    return out;
  }

  double reach() const override {
    double m = 0;
    for (const LjPair& q : pairs_) m = std::max(m, q.cutoff);
    return m;
  }

  bool order_free_sums() const override { return mixed_; }
  // The half-list loop in mixed precision fills Atoms::fixed_rows when given them.
  bool fills_fixed_rows() const override { return mixed_; }
  bool needs_id_order(const Exec& /*ex*/) const override { return !mixed_; }  // mixed: fixed point, no specials

  void compute(const Exec& ex, const Atoms& a) const override {
    if (mixed_) {
      const LjTable32 t{table32_.data(), nt_};
      if (a.half)
        lj_mixed_kernels::host_pass::lj_forces_half_mixed(a, t, scratch_);
      else
        CUMULUS_KERNEL(ex, lj_mixed_kernels, lj_forces_mixed)(ex, a, t);
      return;
    }
    if (a.half)
      lj_kernels::host_pass::lj_forces_half(a, LjTable{table_.data(), nt_});
    else
      CUMULUS_KERNEL(ex, lj_kernels, lj_forces)(ex, a, LjTable{table_.data(), nt_});
  }

  // Units of 2^-60 (a term up to 2^99 fits): far below any virial's rounding.
  std::array<double, 6> virial_tensor(const Exec& ex, const Comm& comm, const Atoms& a) const override {
    constexpr int kExp = -60;
    std::array<double, 6> w{};
    ExactSum mixed[6];
    if (mixed_ && a.half) lj_mixed_kernels::host_pass::lj_virial_half_mixed(a, LjTable32{table32_.data(), nt_}, kExp, mixed);
    for (int c = 0; c < 6; ++c) {
      ExactSum s = mixed_ && a.half ? mixed[c]
                   : mixed_        ? CUMULUS_KERNEL(ex, lj_mixed_kernels, lj_virial_mixed)(ex, a, LjTable32{table32_.data(), nt_}, c, kExp)
                                   : CUMULUS_KERNEL(ex, lj_kernels, lj_virial)(ex, a, LjTable{table_.data(), nt_}, c, kExp);
      comm.sum_in_place(s.words(), ExactSum::kWords);
      if (!s.value(kExp, &w[static_cast<std::size_t>(c)])) w[static_cast<std::size_t>(c)] = std::numeric_limits<double>::quiet_NaN();
    }
    return w;
  }

  // For a uniform fluid beyond each pair's cutoff rc (Allen & Tildesley), summed over type pairs:
  // E = (8 pi / 3V) sum_ab N_a N_b eps sigma^3 ((sigma/rc)^9 / 3 - (sigma/rc)^3),
  // P = (16 pi / 3V^2) sum_ab N_a N_b eps sigma^3 ((2/3)(sigma/rc)^9 - (sigma/rc)^3).
  std::pair<double, double> tail(const std::vector<double>& n, double V) const override {
    if (!tail_) return {0, 0};
    double e = 0, p = 0;
    for (int a = 0; a < nt_; ++a)
      for (int b = 0; b < nt_; ++b) {
        const LjPair& q = pairs_[static_cast<std::size_t>(a) * nt_ + b];
        const double sr3 = std::pow(q.sigma / q.cutoff, 3), sr9 = sr3 * sr3 * sr3, s3 = std::pow(q.sigma, 3);
        const double nn = n[static_cast<std::size_t>(a)] * n[static_cast<std::size_t>(b)] * q.epsilon * s3;
        e += nn * (sr9 / 3 - sr3);
        p += nn * (2.0 / 3 * sr9 - sr3);
      }
    return {8.0 / 3.0 * kPi / V * e, 16.0 / 3.0 * kPi / (V * V) * p};
  }

 private:
  int nt_;
  std::vector<LjPair> pairs_;
  bool shift_ = false, tail_ = false, mixed_ = false;
  Buffer<LjCoefficients> table_;
  Buffer<LjCoefficients32> table32_;             // md.precision = "mixed": the coefficients in fp32
  mutable std::vector<std::int64_t> scratch_;  // lj_forces_half_mixed's per-thread arrays
};

void lj_keys(Schema& s) {
  s.key("md.cutoff", ValueType::real, "lj/cut: cutoff radius of every type pair not given otherwise (sigma units)").def(2.5).positive();
  s.key("md.epsilon", ValueType::real, "lj/cut: well depth of each type with itself, where no [md.pairs] table gives it").def(1.0).positive();
  s.key("md.sigma", ValueType::real, "lj/cut: diameter of each type with itself, where no [md.pairs] table gives it").def(1.0).positive();
  s.key("md.shift", ValueType::boolean, "lj/cut: shift each pair's potential to zero at its cutoff").def(false);
  s.key("md.tail_correction", ValueType::boolean,
        "lj/cut: add the analytic tail corrections (beyond the cutoffs, uniform density) to energy and pressure")
      .def(false);
  s.key("md.mixing", ValueType::string,
        "lj/cut: coefficients of two different types without an [md.pairs] table: lorentz_berthelot (eps geometric, "
        "sigma and cutoff arithmetic means), geometric (all three geometric) or none (every pair must be given)")
      .def(std::string("lorentz_berthelot"))
      .one_of({"lorentz_berthelot", "geometric", "none"});
  s.key("md.pairs.*.types", ValueType::integer_array, "lj/cut: the two atom types (1-based) of an explicit pair")
      .require()
      .length(2, 2);
  s.key("md.pairs.*.epsilon", ValueType::real, "lj/cut: well depth of the pair (0: no interaction)").require().at_least(0);
  s.key("md.pairs.*.sigma", ValueType::real, "lj/cut: diameter of the pair").require().positive();
  s.key("md.pairs.*.cutoff", ValueType::real, "lj/cut: cutoff of the pair (0: md.cutoff)").def(0.0).at_least(0);
}

void lj_check(const Config& cfg, int nt) {
  const std::vector<LjPair> p = lj_pairs(cfg, nt);
  for (int a = 0; a < nt; ++a)
    for (int b = a; b < nt; ++b) {
      const LjPair& q = p[static_cast<std::size_t>(a) * nt + b];
      if (q.sigma / q.cutoff > 2) {
        const std::string key = q.explicit_pair ? "md.pairs" : "md.cutoff";
        cfg.fail(key, strprintf("the cutoff %g of types %d-%d is less than half of their sigma (%g): they would not interact",
                                q.cutoff, a + 1, b + 1, q.sigma));
      }
    }
}

}  // namespace

void register_lj_cut(std::vector<ForceStyle>& styles) {
  styles.push_back({"lj/cut", "Lennard-Jones 12-6 with a cutoff per type pair", lj_keys, lj_check,
                    [](const Config& cfg, int nt) {
                      double m = 0;
                      for (const LjPair& q : lj_pairs(cfg, nt)) m = std::max(m, q.cutoff);
                      return m;
                    },
                    [](const Config& cfg, int nt, const Exec& ex) -> std::unique_ptr<ForceTerm> {
                      return std::make_unique<LjCut>(cfg, nt, ex);
                    }});
}

}  // namespace cumulus::md
