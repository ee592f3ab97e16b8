// The lj/cut/coul/long and coul/long force terms: Lennard-Jones (lj/cut's coefficients and keys)
// plus the real-space part of an Ewald sum, qqr2e q_i q_j erfc(alpha r) / r, with special pairs
// (exclusions) scaled and corrected; the k-space part is md.kspace_style's (kspace_ewald.cpp).
#include "solvers/md/pair_lj_cut_coul_long.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.hpp"
#include "core/memory.hpp"
#include "core/strings.hpp"
#include "core/timers.hpp"
#include "solvers/md/coul_table.hpp"
#include "solvers/md/fixed_point.hpp"
#include "solvers/md/force.hpp"
#include "solvers/md/units.hpp"

namespace cumulus::md {

namespace {

double coul_cutoff(const Config& cfg) {
  const double rc = cfg.get<double>("md.coul_cutoff");
  return rc > 0 ? rc : cfg.get<double>("md.cutoff");
}

class CoulLong : public ForceTerm {
 public:
  CoulLong(const Config& cfg, int nt, const Exec& ex, bool with_lj) : ex_(&ex), nt_(nt), with_lj_(with_lj) {
    tabulate_ = cfg.get<bool>("md.coul_table");
    p_.qqr2e = units_named(cfg.get<std::string>("md.units")).qqr2e;
    rc_ = coul_cutoff(cfg);
    p_.cut2 = rc_ * rc_;
    p_.lj = with_lj;
    const auto slj = cfg.get<std::vector<double>>("md.special_lj"),
               sc = cfg.get<std::vector<double>>("md.special_coul");
    for (int l = 0; l < 3; ++l) {
      p_.special_lj[l + 1] = slj[static_cast<std::size_t>(l)];
      p_.special_coul[l + 1] = sc[static_cast<std::size_t>(l)];
    }
    std::vector<LjCoefficients> c(static_cast<std::size_t>(nt) * nt);
    if (with_lj) {
      pairs_ = lj_pairs(cfg, nt);
      const bool shift = cfg.get<bool>("md.shift");
      for (std::size_t k = 0; k < pairs_.size(); ++k) {
        const LjPair& q = pairs_[k];
        const double s6 = std::pow(q.sigma, 6), s12 = s6 * s6, e = q.epsilon;
        c[k] = {q.cutoff * q.cutoff, 48 * e * s12, 24 * e * s6, 4 * e * s12, 4 * e * s6, 0};
        if (shift) {
          const double r6 = s6 / std::pow(q.cutoff, 6);
          c[k].offset = 4 * e * (r6 * r6 - r6);
        }
      }
      tail_ = cfg.get<bool>("md.tail_correction");
    }
    table_ = Buffer<LjCoefficients>(ex.backend(), c.size());
    memory::copy(ex, ex.backend(), table_.data(), Backend::host, c.data(), c.size() * sizeof(LjCoefficients));
    // md.precision = "mixed": the same coefficients and parameters rounded to fp32.
    mixed_ = cfg.get<std::string>("md.precision") == "mixed";
    if (mixed_) {
      std::vector<LjCoefficients32> c32(c.size());
      for (std::size_t k = 0; k < c.size(); ++k)
        c32[k] = {static_cast<float>(c[k].cut2), static_cast<float>(c[k].lj1), static_cast<float>(c[k].lj2),
                  static_cast<float>(c[k].lj3), static_cast<float>(c[k].lj4), static_cast<float>(c[k].offset)};
      table32_ = Buffer<LjCoefficients32>::copy_of(ex, c32, 1);
      p32_.qqr2e = static_cast<float>(p_.qqr2e);
      p32_.cut2 = static_cast<float>(p_.cut2);
      p32_.lj = p_.lj;
      for (int l = 0; l < 4; ++l) {
        p32_.special_lj[l] = static_cast<float>(p_.special_lj[l]);
        p32_.special_coul[l] = static_cast<float>(p_.special_coul[l]);
      }
    }
  }

  std::string describe() const override {
    std::string out = with_lj_ ? "lj/cut/coul/long (Lennard-Jones" : "coul/long (";
    if (with_lj_)
      for (int a = 0; a < nt_; ++a)
        for (int b = a; b < nt_; ++b) {
          const LjPair& q = pairs_[static_cast<std::size_t>(a) * nt_ + b];
          out += strprintf(" %d-%d: eps %g sigma %g cutoff %g;", a + 1, b + 1, q.epsilon, q.sigma, q.cutoff);
        }
    out += strprintf(
        "%s Coulomb erfc(alpha r)/r (%s), cutoff %g, alpha %.10g, qqr2e %.10g; special lj %g %g %g, coul %g %g %g)",
        with_lj_ ? "" : "", p_.table.c ? strprintf("tabulated: %d intervals in r^2", p_.table.n).c_str() : "exact erfc",
        rc_, p_.alpha, p_.qqr2e, p_.special_lj[1], p_.special_lj[2], p_.special_lj[3], p_.special_coul[1],
        p_.special_coul[2], p_.special_coul[3]);
    if (mixed_) out += "; mixed precision: the separations and pair terms in fp32 (fp32 coordinates), summed in fixed point";
    return out;
  }

  double reach() const override {
    double m = rc_;
    for (const LjPair& q : pairs_) m = std::max(m, q.cutoff);
    return m;
  }
  bool coulomb() const override { return true; }
  // Mixed precision sums in fixed point: the half list serves any thread count.
  bool order_free_sums() const override { return mixed_; }
  // The half-list loop in mixed precision fills Atoms::fixed_rows when given them.
  bool fills_fixed_rows() const override { return mixed_; }
  // Mixed: fixed-point sums, and the loops find each partner's special level by search: by id on
  // CUDA (special_level), by local index in the host's hand-written loops (with_special_local).
  bool needs_id_order(const Exec& /*ex*/) const override { return !mixed_; }
  // Double: the tabulated half list keeps the one-thread order at any thread count, its rows
  // beyond the first thread's replayed in turn (coul_forces_half); that replay is serial, so past 4
  // threads the full list (each pair twice, no replay) is expected to be faster (a cost model:
  // measured at 2 threads only).
  bool threaded_half() const override { return mixed_ || (tabulate_ && omp_get_max_threads() <= 4); }
  // The table (md.coul_table) depends on alpha and the cutoff: built here, once per alpha.
  void set_ewald_alpha(double alpha) override {
    p_.alpha = alpha;
    if (!tabulate_ || alpha <= 0) return;
    int n = 0;
    double inv_ds = 0;
    const std::vector<double> c = coul_table_build(alpha, p_.cut2, &n, &inv_ds);
    coul_table_ = Buffer<double>(ex_->backend(), c.size());
    memory::copy(*ex_, ex_->backend(), coul_table_.data(), Backend::host, c.data(), c.size() * sizeof(double));
    p_.table = CoulTableView{coul_table_.data(), inv_ds, p_.cut2, n};
    if (mixed_) {
      p32_.alpha = static_cast<float>(alpha);
      int n32 = 0;
      double inv_ds32 = 0;
      const std::vector<float> c32 = coul_table_build32(alpha, p_.cut2, &n32, &inv_ds32);  // its own: degree 3
      coul_table32_ = Buffer<float>::copy_of(*ex_, c32, 1);
      p32_.table = CoulTableViewT<float>{coul_table32_.data(), static_cast<float>(inv_ds32), p32_.cut2, n32};
    }
  }

  void compute(const Exec& ex, const Atoms& a) const override {
    sums_fresh_ = false;
    if (mixed_) {
      if (a.half)
        coul_mixed_kernels::host_pass::coul_forces_half_mixed(with_special_local(ex, a), table32(), p32_, scratch_);
      else
        CUMULUS_KERNEL(ex, coul_mixed_kernels, coul_forces_mixed)(ex, with_special_local(ex, a), table32(), p32_, rows(ex, a.n));
      return;
    }
    if (a.half)
      coul_kernels::host_pass::coul_forces_half(a, table(), p_);
    else
      CUMULUS_KERNEL(ex, coul_kernels, coul_forces)(ex, a, table(), p_);
  }

  // Double over the host's tabulated half list at two threads: `other` runs while the second thread
  // adds the rows computed ahead (coul_forces_half; at more threads, measured at two only, after).
  // Mixed over the host's half list at two threads: `other` runs first on the calling thread while
  // the second takes rows, and the first joins it after (coul_forces_half_mixed).
  bool overlaps_other(const Atoms& a) const override {
    return a.half && (mixed_ || tabulate_) && omp_get_max_threads() == 2;
  }
  void compute_with(const Exec& ex, const Atoms& a, const std::function<void()>& other) const override {
    if (mixed_ && a.half) {
      sums_fresh_ = false;
      coul_mixed_kernels::host_pass::coul_forces_half_mixed(with_special_local(ex, a), table32(), p32_, scratch_, &other);
      return;
    }
    if (mixed_ || !a.half) {
      compute(ex, a);
      other();
      return;
    }
    sums_fresh_ = false;
    coul_kernels::host_pass::coul_forces_half(a, table(), p_, &other);
  }

  std::array<double, 6> virial_tensor(const Exec& ex, const Comm& comm, const Atoms& a) const override {
    std::array<double, 6> w{};
    const std::array<double, 9>& s = sums(ex, comm, a);
    for (int c = 0; c < 6; ++c) w[static_cast<std::size_t>(c)] = s[static_cast<std::size_t>(c)];
    return w;
  }

  std::vector<std::pair<std::string, double>> energy_terms(const Exec& ex, const Comm& comm,
                                                           const Atoms& a) const override {
    const std::array<double, 9>& s = sums(ex, comm, a);
    return {{"e_vdwl", s[6]}, {"e_coul", s[7]}, {"e_special", s[8]}};
  }

  // lj/cut's tail corrections for the LJ part (Allen & Tildesley; pair_lj_cut.cpp).
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
    return {8.0 / 3.0 * M_PI / V * e, 16.0 / 3.0 * M_PI / (V * V) * p};
  }

 private:
  LjTable table() const { return LjTable{table_.data(), nt_}; }
  LjTable32 table32() const { return LjTable32{table32_.data(), nt_}; }
  // coul_sum's nine sums (virial tensor, LJ, Coulomb, special correction) over every rank, in
  // units of 2^-60 (terms up to 2^99: far below any energy's or virial's rounding). Computed once
  // after each force call (compute() marks them stale) for both the virial and the energies.
  const std::array<double, 9>& sums(const Exec& ex, const Comm& comm, const Atoms& a) const {
    if (sums_fresh_) return sums_;
    constexpr int kExp = -60;
    ScopedTimer timer("md.coul_sum");
    ExactSum s[9];
    if (mixed_ && a.half)
      coul_mixed_kernels::host_pass::coul_sums_half_mixed(with_special_local(ex, a), table32(), p32_, kExp, s);
    else if (mixed_)
      for (int w = 0; w < 9; ++w) s[w] = CUMULUS_KERNEL(ex, coul_mixed_kernels, coul_sum_mixed)(ex, a, table32(), p32_, w, kExp);
    else if (a.half)
      coul_kernels::host_pass::coul_sums_half(a, table(), p_, kExp, s);
    else if (!ex.is_cuda())
      coul_kernels::host_pass::coul_sums_full(a, table(), p_, kExp, s);
    else
      for (int w = 0; w < 9; ++w) s[w] = CUMULUS_KERNEL(ex, coul_kernels, coul_sum)(ex, a, table(), p_, w, kExp);
    for (int w = 0; w < 9; ++w) {
      comm.sum_in_place(s[w].words(), ExactSum::kWords);
      double v;
      if (!s[w].value_rounded(kExp, &v)) v = std::numeric_limits<double>::quiet_NaN();
      sums_[static_cast<std::size_t>(w)] = v;
    }
    sums_fresh_ = true;
    return sums_;
  }

  const Exec* ex_;
  int nt_;
  bool with_lj_, tail_ = false, tabulate_ = true, mixed_ = false;
  double rc_ = 0;
  CoulParams p_;
  std::vector<LjPair> pairs_;
  Buffer<LjCoefficients> table_;
  Buffer<double> coul_table_;
  CoulParams32 p32_;  // md.precision = "mixed": fp32 copies of the parameters and tables
  Buffer<LjCoefficients32> table32_;
  Buffer<float> coul_table32_;
  mutable std::vector<std::int64_t> scratch_;  // coul_forces_half_mixed's per-thread arrays
  // The host's mixed loops find each atom's special partners among its kept partners by local
  // index (Atoms::special_local): resolved once a list build (the local indices change only then),
  // through a map from id to local index that is never cleared (an entry is checked against the
  // id, as bonded_kernels.cpp's map_ids).
  mutable std::vector<int> special_local_, special_map_;
  mutable long special_build_ = -1;
  mutable int special_nlocal_ = -1;
  mutable const std::int64_t* special_ids_ = nullptr;
  mutable bool special_sparse_ = false;
  Atoms with_special_local(const Exec& ex, const Atoms& a) const {
    if (ex.is_cuda() || a.nspecial == 0 || a.nlocal == 0) return a;
    if (a.list_build != special_build_ || a.nlocal != special_nlocal_ || a.id != special_ids_) {
      const std::size_t nl = static_cast<std::size_t>(a.nlocal);
      std::int64_t top = 0;
      for (std::size_t i = 0; i < nl; ++i) top = std::max(top, a.id[i]);
      special_build_ = a.list_build;
      special_nlocal_ = a.nlocal;
      special_ids_ = a.id;
      // ids far sparser than this rank's atoms (a data file's own numbering, or many ranks): the
      // map would cost more than 256 bytes a local atom, and the loops compare ids instead
      special_sparse_ = top > std::max<std::int64_t>(64 * static_cast<std::int64_t>(nl), std::int64_t{1} << 16);
      if (special_sparse_) {
        std::vector<int>().swap(special_map_);
        std::vector<int>().swap(special_local_);
        return a;
      }
      if (special_map_.size() < static_cast<std::size_t>(top) + 1) special_map_.assign(static_cast<std::size_t>(top) + 1, -1);
      // Ghosts first, then the owned atoms: an owned atom is found as itself should a ghost copy of
      // it be here too.
      for (std::size_t i = static_cast<std::size_t>(a.n); i < nl; ++i) special_map_[static_cast<std::size_t>(a.id[i])] = static_cast<int>(i);
      for (std::size_t i = 0; i < static_cast<std::size_t>(a.n) && i < nl; ++i)
        special_map_[static_cast<std::size_t>(a.id[i])] = static_cast<int>(i);
      special_local_.assign(static_cast<std::size_t>(a.nspecial) * nl, -1);
      for (int k = 0; k < a.nspecial; ++k)
        for (std::size_t i = 0; i < nl; ++i) {
          const std::int64_t v = a.special[k][i];
          if (v < 0 || (v >> 2) > top) continue;
          const int m = special_map_[static_cast<std::size_t>(v >> 2)];
          if (m >= 0 && static_cast<std::size_t>(m) < nl && a.id[m] == (v >> 2))
            special_local_[static_cast<std::size_t>(k) * nl + i] = m;
        }
    }
    if (special_sparse_) return a;
    Atoms b = a;
    b.special_local = special_local_.data();
    return b;
  }
  // coul_forces_mixed's rows (fixed::kRow integers an owned atom, backend memory), grown as needed
  mutable Buffer<std::int64_t> rows_;
  std::int64_t* rows(const Exec& ex, int n) const {
    const std::size_t want = static_cast<std::size_t>(fixed::kRow) * static_cast<std::size_t>(n > 0 ? n : 1);
    if (rows_.size() < want || rows_.space() != ex.backend()) {
      rows_ = Buffer<std::int64_t>(ex.backend(), want + want / 4, "md.forces rows");
      CUMULUS_KERNEL(ex, coul_mixed_kernels, zero_rows)(ex, rows_.data(), rows_.size());  // then kept zero by each call
    }
    return rows_.data();
  }
  mutable std::array<double, 9> sums_{};
  mutable bool sums_fresh_ = false;
};

void coul_keys(Schema& s) {
  s.key("md.coul_table", ValueType::boolean,
        "lj/cut/coul/long, coul/long: take erf(alpha r)/r from a table of degree-7 polynomials in r^2, as exact as "
        "double allows and about 10x faster (false: hd::erfc per pair; docs/md.md)")
      .def(true);
  s.key("md.coul_cutoff", ValueType::real,
        "lj/cut/coul/long, coul/long: cutoff of the real-space Coulomb term (0: md.cutoff)")
      .def(0.0)
      .at_least(0);
  s.key(
       "md.special_lj", ValueType::real_array,
       "Factors of the LJ term of 1-2, 1-3 and 1-4 pairs of the bond topology (LAMMPS's special_bonds lj; 0: excluded)")
      .def(std::vector<double>{0, 0, 0})
      .length(3, 3)
      .at_least(0);
  s.key("md.special_coul", ValueType::real_array,
        "Factors of the Coulomb term of 1-2, 1-3 and 1-4 pairs (LAMMPS's special_bonds coul; 0: excluded, with the "
        "k-space's correction -qq erf(alpha r)/r for what the k-space sum holds of them)")
      .def(std::vector<double>{0, 0, 0})
      .length(3, 3)
      .at_least(0);
}

void coul_check(const Config& cfg, int nt, bool with_lj) {
  if (cfg.get<std::string>("md.kspace_style") == "none")
    cfg.fail("md.kspace_style", "is none, but the pair style " + cfg.get<std::string>("md.pair_style") +
                                    " is the real-space part of an Ewald sum: choose ewald");
  for (double f : cfg.get<std::vector<double>>("md.special_coul"))
    if (f > 1) cfg.fail("md.special_coul", "factors are between 0 and 1");
  if (!with_lj) return;
  const std::vector<LjPair> p = lj_pairs(cfg, nt);
  for (const LjPair& q : p)
    if (q.sigma / q.cutoff > 2)
      cfg.fail("md.cutoff", strprintf("an LJ cutoff %g is less than half of its sigma %g", q.cutoff, q.sigma));
}

double coul_reach(const Config& cfg, int nt, bool with_lj) {
  double m = coul_cutoff(cfg);
  if (with_lj)
    for (const LjPair& q : lj_pairs(cfg, nt)) m = std::max(m, q.cutoff);
  return m;
}

}  // namespace

void register_lj_cut_coul_long(std::vector<ForceStyle>& styles) {
  styles.push_back({"lj/cut/coul/long", "Lennard-Jones (lj/cut's keys) plus the real-space Coulomb of an Ewald sum",
                    coul_keys, [](const Config& cfg, int nt) { coul_check(cfg, nt, true); },
                    [](const Config& cfg, int nt) { return coul_reach(cfg, nt, true); },
                    [](const Config& cfg, int nt, const Exec& ex) -> std::unique_ptr<ForceTerm> {
                      return std::make_unique<CoulLong>(cfg, nt, ex, true);
                    }});
  styles.push_back({"coul/long", "the real-space Coulomb of an Ewald sum alone (keys: lj/cut/coul/long's)",
                    [](Schema&) {}, [](const Config& cfg, int nt) { coul_check(cfg, nt, false); },
                    [](const Config& cfg, int nt) { return coul_reach(cfg, nt, false); },
                    [](const Config& cfg, int nt, const Exec& ex) -> std::unique_ptr<ForceTerm> {
                      return std::make_unique<CoulLong>(cfg, nt, ex, false);
                    }});
}

}  // namespace cumulus::md
