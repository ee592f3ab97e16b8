// bond_style harmonic: E = K (r - r0)^2 per bond (LAMMPS's form: K holds the 1/2), K and r0 per bond
// type from the data file's Bond Coeffs. The kernels are bonded_kernels.cpp's; the table and the
// sums bonded.hpp's CoefficientTerm.
#include "core/strings.hpp"
#include "solvers/md/bonded.hpp"

namespace cumulus::md {

namespace {

std::vector<BondHarmonicCoeffs> bond_table(const std::vector<std::vector<double>>& coeffs) {
  std::vector<BondHarmonicCoeffs> c(coeffs.size());
  for (std::size_t t = 0; t < coeffs.size(); ++t)
    if (coeffs[t].size() == 2) c[t] = BondHarmonicCoeffs{coeffs[t][0], coeffs[t][1]};
  return c;
}

class BondHarmonic : public CoefficientTerm<BondHarmonicCoeffs> {
 public:
  BondHarmonic(const std::vector<std::vector<double>>& coeffs, const Exec& ex) : CoefficientTerm(bond_table(coeffs), ex) {}

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

 private:
  SumKernel sum_kernel([[maybe_unused]] const Exec& ex) const override { return CUMULUS_KERNEL(ex, bonded_kernels, bond_harmonic_sum); }
};

}  // namespace

std::unique_ptr<BondedTerm> make_bond_harmonic(const std::vector<std::vector<double>>& coeffs, const Exec& ex) {
  return std::make_unique<BondHarmonic>(coeffs, ex);
}

}  // namespace cumulus::md
