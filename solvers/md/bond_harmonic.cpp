// bond_style harmonic: E = K (r - r0)^2 per bond (LAMMPS's form: K holds the 1/2), K and r0 per bond
// type from the data file's Bond Coeffs. The kernels are bonded_kernels.cpp's.
#include <limits>

#include "core/strings.hpp"
#include "solvers/md/bonded.hpp"

namespace cumulus::md {

namespace {

class BondHarmonic : public BondedTerm {
 public:
  BondHarmonic(const std::vector<std::vector<double>>& coeffs, const Exec& ex) {
    std::vector<BondHarmonicCoeffs> c(coeffs.size());
    for (std::size_t t = 0; t < coeffs.size(); ++t)
      if (coeffs[t].size() == 2) c[t] = BondHarmonicCoeffs{coeffs[t][0], coeffs[t][1]};
    host_ = c;
    table_ = Buffer<BondHarmonicCoeffs>::copy_of(ex, c, 1);
  }

  std::string describe() const override {
    std::string out = "bond harmonic";
    for (std::size_t t = 0; t < host_.size(); ++t)
      out += strprintf("%s type %zu: K %g r0 %g", t == 0 ? ":" : ";", t + 1, host_[t].k, host_[t].r0);
    return out;
  }
  std::string energy_name() const override { return "e_bond"; }

  void compute(const Exec& ex, const Atoms& a, const TopologyView& t) const override {
    CUMULUS_KERNEL(ex, bonded_kernels, bond_harmonic_forces)(ex, a, t, table_.data());
  }

  double energy(const Exec& ex, const Comm& comm, const Atoms& a, const TopologyView& t) const override {
    return sum(ex, comm, a, t, kBondedEnergy);
  }
  std::array<double, 6> virial_tensor(const Exec& ex, const Comm& comm, const Atoms& a, const TopologyView& t) const override {
    std::array<double, 6> w{};
    for (int c = 0; c < 6; ++c) w[static_cast<std::size_t>(c)] = sum(ex, comm, a, t, c);
    return w;
  }

 private:
  // Units of 2^-60 (a term up to 2^99 fits): far below any energy's or virial's rounding.
  double sum(const Exec& ex, const Comm& comm, const Atoms& a, const TopologyView& t, int which) const {
    constexpr int kExp = -60;
    ExactSum s = CUMULUS_KERNEL(ex, bonded_kernels, bond_harmonic_sum)(ex, a, t, table_.data(), which, kExp);
    comm.sum_in_place(s.words(), ExactSum::kWords);
    double v = 0;
    return s.value(kExp, &v) ? v : std::numeric_limits<double>::quiet_NaN();
  }

  std::vector<BondHarmonicCoeffs> host_;
  Buffer<BondHarmonicCoeffs> table_;
};

}  // namespace

std::unique_ptr<BondedTerm> make_bond_harmonic(const std::vector<std::vector<double>>& coeffs, const Exec& ex) {
  return std::make_unique<BondHarmonic>(coeffs, ex);
}

}  // namespace cumulus::md
