#pragma once
// Bonded terms of the md solver (md.bond_style, md.angle_style): the interface every bonded style
// implements, the job's keys and checks, and the per-rank topology the styles read.
//
// How a bonded term finds its atoms across ranks: every atom of a bond or angle holds the term
// (MdAtoms' bond_atom / angle_atom columns: the partners' global ids, migrating and checkpointed
// with the atom). After every list build, BondedTopology maps the ids to local indices, owned atoms
// or ghosts; a ghost is every atom within cutoff + skin of the rank's block, and a bonded partner
// is much nearer than that (checked at set-up, and a partner missing in a run is an error naming
// the atom and step). Each owned atom then computes its own part of each of its terms
// (bonded_kernels.cpp), so no force is sent back to another rank and no term depends on which rank
// computes it (LAMMPS's newton_bond off, with a fixed order of the terms per atom).
#include <array>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/comm.hpp"
#include "core/config.hpp"
#include "core/exec.hpp"
#include "core/memory.hpp"
#include "solvers/md/atoms.hpp"
#include "solvers/md/bonded_kernels.hpp"
#include "solvers/md/data_file.hpp"

namespace cumulus::md {

class BondedTerm {
 public:
  virtual ~BondedTerm() = default;
  virtual std::string describe() const = 0;
  // The thermo row of its energy: "e_bond", "e_angle".
  virtual std::string energy_name() const = 0;
  // Adds the term's forces to the owned atoms' (a.fx ..), and with a.energy each owned atom's share
  // of the energy and virial to a.pe and a.virial.
  virtual void compute(const Exec& ex, const Atoms& a, const TopologyView& t) const = 0;
  // The energy over every atom of every rank, and the virial tensor (xx yy zz xy xz yz); collective,
  // exact sums: the same bits at any rank count.
  virtual double energy(const Exec& ex, const Comm& comm, const Atoms& a, const TopologyView& t) const = 0;
  virtual std::array<double, 6> virial_tensor(const Exec& ex, const Comm& comm, const Atoms& a, const TopologyView& t) const = 0;
};

// What every style with per-type coefficients C shares: the table on the backend (and its host
// copy for describe()), and the energy and virial tensor as exact sums over every rank, through the
// style's sum kernel (bonded_kernels' *_sum: `which` 0 .. 5 a tensor component, kBondedEnergy the
// energy). A style adds describe(), energy_name(), compute() and the kernel.
template <class C>
class CoefficientTerm : public BondedTerm {
 public:
  double energy(const Exec& ex, const Comm& comm, const Atoms& a, const TopologyView& t) const override {
    return sum(ex, comm, a, t, kBondedEnergy);
  }
  std::array<double, 6> virial_tensor(const Exec& ex, const Comm& comm, const Atoms& a, const TopologyView& t) const override {
    std::array<double, 6> w{};
    for (int c = 0; c < 6; ++c) w[static_cast<std::size_t>(c)] = sum(ex, comm, a, t, c);
    return w;
  }

 protected:
  using SumKernel = ExactSum (*)(const Exec&, const Atoms&, const TopologyView&, const C*, int, int);
  CoefficientTerm(std::vector<C> coeffs, const Exec& ex)
      : host_(std::move(coeffs)), table_(Buffer<C>::copy_of(ex, host_, 1)) {}
  virtual SumKernel sum_kernel(const Exec& ex) const = 0;
  // Units of 2^-60 (a term up to 2^99 fits): far below any energy's or virial's rounding.
  double sum(const Exec& ex, const Comm& comm, const Atoms& a, const TopologyView& t, int which) const {
    constexpr int kExp = -60;
    ExactSum s = sum_kernel(ex)(ex, a, t, table_.data(), which, kExp);
    comm.sum_in_place(s.words(), ExactSum::kWords);
    double v = 0;
    return s.value(kExp, &v) ? v : std::numeric_limits<double>::quiet_NaN();
  }
  std::vector<C> host_;
  Buffer<C> table_;
};

void declare_bonded_keys(Schema& s);
// The job's bonded styles against the data file (cfg.fail: exit 2): coefficients for every type
// the topology uses, and every bond and angle short enough for the decomposition: its atoms
// within `reach` (cutoff + skin, the ghost distance) of each other, and, with the file's image
// flags, within half the box along each axis (one nearest image).
void check_bonded(const Config& cfg, const DataFile* d, const std::array<double, 3>& box, double reach);
// Whether the job computes bonds, angles (a style other than "none").
bool uses_bonds(const Config& cfg);
bool uses_angles(const Config& cfg);
// The job's bonded terms, coefficients from the data file (after check_bonded).
std::vector<std::unique_ptr<BondedTerm>> make_bonded_terms(const Config& cfg, const DataFile& d, const Exec& ex);

// The styles' constructors (one file each): per-type coefficients as the data file gives them.
std::unique_ptr<BondedTerm> make_bond_harmonic(const std::vector<std::vector<double>>& coeffs, const Exec& ex);
std::unique_ptr<BondedTerm> make_angle_harmonic(const std::vector<std::vector<double>>& coeffs, const Exec& ex);

// Each owned atom's bonded partners (its bonds', angles' and rigid molecule's atoms) as local
// indices, on the backend.
class BondedTopology {
 public:
  BondedTopology(const Exec& ex, std::int64_t natoms);
  BondedTopology(const Exec&& ex, std::int64_t natoms) = delete;  // keeps a pointer to ex
  // After every list build (the local indices change): collective. A partner that is not on this
  // rank is an Error (exit 3) naming the atom and the step.
  void resolve(const Comm& comm, const MdAtoms& atoms, std::int64_t step);
  const TopologyView& view() const { return view_; }

 private:
  const Exec* ex_;
  std::int64_t natoms_;
  Buffer<int> map_, bond_atom_, bond_type_, angle_atom_, angle_type_, settle_atom_, settle_type_, shake_atom_, shake_type_;
  Buffer<std::int64_t> missing_;  // each column's answer (resolve_column), read at once: one wait a build
  TopologyView view_;
};

}  // namespace cumulus::md
