#pragma once
// The k-space part of long-range electrostatics (md.kspace_style): the reciprocal-space sum that
// completes a Coulomb pair style's real-space erfc(alpha r)/r. One interface, so that PME comes in
// as another file beside kspace_ewald.cpp.
#include <array>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/comm.hpp"
#include "core/config.hpp"
#include "core/exec.hpp"
#include "mesh/decomposition.hpp"
#include "solvers/md/md_kernels.hpp"
#include "solvers/md/units.hpp"

namespace cumulus::md {

class KSpace {
 public:
  virtual ~KSpace() = default;
  virtual std::string describe() const = 0;
  // The Ewald splitting parameter (the pair style's erfc(alpha r) takes it).
  virtual double alpha() const = 0;
  // Adds the k-space forces to the owned atoms' (a.fx ..), and with a.energy each owned atom's
  // share of the k-space, self and background energies to a.pe and of their virial to a.virial.
  // Collective; the same bits at any rank count. `outside_into` (ex's memory; may be null): PME
  // stores there its count of atoms beyond its grid's reach instead of waiting to check it
  // (md/step_checks.hpp; the caller reports a count above 0 by pme_outside_error).
  virtual void compute(const Exec& ex, const Comm& comm, const Atoms& a, std::int64_t* outside_into) = 0;
  // Whether compute stores anything at outside_into (PME; the Ewald sum has no grid).
  virtual bool checks_outside() const { return false; }
  // Whether compute changes each owned atom's force components, energy and virial by one addition
  // or subtraction each (PME): then it may run into arrays of its own, set to -0 (x - y is then
  // -0 - y = -y exactly, zeros included, and -0 + y is y), added to the atoms' afterwards with the
  // same bits as in place.
  virtual bool adds_once() const { return false; }
  // The virial tensor of the last compute (xx yy zz xy xz yz), the same on every rank.
  virtual std::array<double, 6> virial_tensor() const = 0;
  // The energies of the last compute by term: {"e_long" (reciprocal sum), "e_self", "e_background"}.
  virtual std::vector<std::pair<std::string, double>> energy_terms() const = 0;
  // The atoms' decomposition and how far an owned atom may stray outside its block between
  // migrations (half the neighbour skin): PME spreads each rank's atoms into the matching part of
  // its grid. Called once, before the first compute; the Ewald sum needs neither.
  virtual void set_domain(const CartesianDecomposition& /*atoms*/, double /*drift*/) {}
};

// The system's charges, summed exactly over every atom (the same numbers at any rank count).
struct ChargeTotals {
  double natoms = 0, qsum = 0, qsqsum = 0;
};

void declare_kspace_keys(Schema& s);
// Checks of the k-space keys against the box and the charges (cfg.fail: exit 2). Returns an
// estimate of the term's memory over all ranks, in bytes (for check's per-rank estimate).
double check_kspace(const Config& cfg, const std::array<double, 3>& box, const ChargeTotals& charges, double coul_cutoff);
// The job's k-space term (null for md.kspace_style = "none").
std::unique_ptr<KSpace> make_kspace(const Config& cfg, const std::array<double, 3>& box, const ChargeTotals& charges,
                                    double coul_cutoff);

// PME's keys, checks and term (kspace_pme.cpp), called by the three functions above.
void declare_pme_keys(Schema& s);
double check_pme(const Config& cfg, const std::array<double, 3>& box, const ChargeTotals& charges, double coul_cutoff);
std::unique_ptr<KSpace> make_pme_kspace(const Config& cfg, const std::array<double, 3>& box, const ChargeTotals& charges,
                                        double coul_cutoff);

}  // namespace cumulus::md
