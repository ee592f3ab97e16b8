// angle_style harmonic: E = K (theta - theta0)^2 per angle (LAMMPS's form: K holds the 1/2), K and
// theta0 (degrees; radians inside) per angle type from the data file's Angle Coeffs. The kernels are
// bonded_kernels.cpp's; the table and the sums bonded.hpp's CoefficientTerm.
#include "core/constants.hpp"
#include "core/strings.hpp"
#include "solvers/md/bonded.hpp"

namespace cumulus::md {

namespace {

std::vector<AngleHarmonicCoeffs> angle_table(const std::vector<std::vector<double>>& coeffs) {
  std::vector<AngleHarmonicCoeffs> c(coeffs.size());
  for (std::size_t t = 0; t < coeffs.size(); ++t)
    if (coeffs[t].size() == 2) c[t] = AngleHarmonicCoeffs{coeffs[t][0], coeffs[t][1] * (kPi / 180)};
  return c;
}

class AngleHarmonic : public CoefficientTerm<AngleHarmonicCoeffs> {
 public:
  AngleHarmonic(const std::vector<std::vector<double>>& coeffs, const Exec& ex) : CoefficientTerm(angle_table(coeffs), ex) {}

  std::string describe() const override {
    std::string out = "angle harmonic";
    for (std::size_t t = 0; t < host_.size(); ++t)
      out += strprintf("%s type %zu: K %g theta0 %g", t == 0 ? ":" : ";", t + 1, host_[t].k, host_[t].theta0 * (180 / kPi));
    return out;
  }
  std::string energy_name() const override { return "e_angle"; }
  void compute(const Exec& ex, const Atoms& a, const TopologyView& t) const override {
    CUMULUS_KERNEL(ex, bonded_kernels, angle_harmonic_forces)(ex, a, t, table_.data());
  }

 private:
  SumKernel sum_kernel([[maybe_unused]] const Exec& ex) const override { return CUMULUS_KERNEL(ex, bonded_kernels, angle_harmonic_sum); }
};

}  // namespace

std::unique_ptr<BondedTerm> make_angle_harmonic(const std::vector<std::vector<double>>& coeffs, const Exec& ex) {
  return std::make_unique<AngleHarmonic>(coeffs, ex);
}

}  // namespace cumulus::md
