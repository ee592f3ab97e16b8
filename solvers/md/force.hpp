#pragma once
// Force terms of the md solver behind one interface, and the registry of styles that make them.
// The integrator, the neighbour list and the decomposition know a force term only through this
// interface (its reach, its force call, its virial tensor, its corrections), so further potentials,
// and long-range electrostatics with their own k-space part, come in as new files that register a
// style, without touching them (as LAMMPS adds a pair style and HOOMD-blue a ForceCompute).
#include <array>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/comm.hpp"
#include "core/config.hpp"
#include "core/exec.hpp"
#include "solvers/md/md_kernels.hpp"

namespace cumulus::md {

class ForceTerm {
 public:
  virtual ~ForceTerm() = default;
  // One line for the log: the coefficients of every type pair.
  virtual std::string describe() const = 0;
  // The longest interaction range through the neighbour list: it holds pairs within the longest
  // reach of all terms plus the skin.
  virtual double reach() const = 0;
  // Forces, and with a.energy half of each pair's energy and virial r . F, for every owned atom.
  virtual void compute(const Exec& ex, const Atoms& a) const = 0;
  // The virial tensor W_ab = sum over pairs of r_a F_b, in the order xx, yy, zz, xy, xz, yz, over
  // every atom of every rank (collective; the same bits at any rank count). Its trace is the sum of
  // the per-atom virials compute() gives, to rounding.
  virtual std::array<double, 6> virial_tensor(const Exec& ex, const Comm& comm, const Atoms& a) const = 0;
  // Analytic corrections for the interactions beyond the cutoffs in a uniform fluid, from the
  // number of atoms of each type and the volume: {total energy, pressure}.
  virtual std::pair<double, double> tail(const std::vector<double>& type_counts, double volume) const = 0;
  // Coulomb styles with a k-space part: the Ewald splitting parameter alpha the k-space chose
  // (called before the first compute); others ignore it.
  virtual void set_ewald_alpha(double /*alpha*/) {}
  // Whether the style has a real-space Coulomb part (and so needs charges and a k-space style).
  virtual bool coulomb() const { return false; }
  // Whether compute() sums pairs in an order-free way (fixed point: md.precision = "mixed"), so that
  // the host's half list may be split over threads; otherwise it is half only at one thread.
  virtual bool order_free_sums() const { return false; }
  // Whether compute() takes the host's half list at more than one thread: its sums are order-free,
  // or it makes the one-thread additions in their order anyway (lj/cut/coul/long in double:
  // coul_forces_half). Otherwise the host's list is half only at one thread.
  virtual bool threaded_half() const { return order_free_sums(); }
  // compute(), and `other` run on the calling thread: where compute() would leave the other
  // threads waiting on one (lj/cut/coul/long in double over the host's half list: the rows computed
  // ahead added in turn by one thread), at the same time (the solver runs the k-space there, into
  // arrays of its own: KSpace::adds_once); otherwise after. `other` touches nothing compute() writes.
  virtual void compute_with(const Exec& ex, const Atoms& a, const std::function<void()>& other) const {
    compute(ex, a);
    other();
  }
  // Whether compute_with would run `other` at the same time as its own work on these atoms (else
  // the solver keeps the plain order: compute(), then the k-space in place).
  virtual bool overlaps_other(const Atoms& /*a*/) const { return false; }
  // Newton's third law across ranks (order-free sums only): whether compute(), given the host's
  // half list without ghost slots (NeighborList::set_ghost_slots) and Atoms::fixed_rows, computes
  // each pair across ranks on one rank only and leaves every local atom's sums as integer rows
  // there (fixed::kRow), for the solver to add each ghost's row into its owner's and store them.
  // Each rank then computes half of the pairs it shares with another, not all of them.
  virtual bool fills_fixed_rows() const { return false; }
  // Whether compute() gives the same bits whichever of a pair's two atoms' slots of the host's half
  // list holds it: order-free sums and pair terms exactly antisymmetric (the separation's
  // rounding, the minimum image and the fixed point round symmetrically; the energies and levels
  // are the pair's). The host builder then lists the pairs of owned atoms by a spatial half
  // stencil (NeighborList::allow_either_slot).
  virtual bool either_slot() const { return order_free_sums(); }
  // Whether compute() on `ex`'s backend needs each atom's partners in ascending global id (the
  // lists' default): sums made in list order (double), or a loop that walks an atom's special
  // partners as a cursor alongside its list (the host's hand-written loops). A term that answers
  // false lets the kernel builder leave each atom's partners in bin order: on a GPU, the id sort of
  // a long list (water's 700 partners within 12 A) costs more than the whole step.
  virtual bool needs_id_order(const Exec& /*ex*/) const { return true; }
  // The style's energy by term over every atom of every rank (collective; exact sums), for thermo
  // columns: {name, total}. Empty for a style with one term.
  virtual std::vector<std::pair<std::string, double>> energy_terms(const Exec& /*ex*/, const Comm& /*comm*/, const Atoms& /*a*/) const {
    return {};
  }
};

struct ForceStyle {
  std::string name, doc;
  // Adds the style's keys (under md.) to the schema; every style's keys are declared, whichever the
  // job chooses, so that `cumulus keys md` and docs/ list them all.
  std::function<void(Schema&)> declare_keys;
  // Relations between keys the schema cannot express (cfg.fail: exit 2), for `ntypes` atom types.
  std::function<void(const Config&, int ntypes)> check;
  // The longest cutoff the job gives the style (what reach() will return), for checks made before
  // any model exists.
  std::function<double(const Config&, int ntypes)> reach;
  std::function<std::unique_ptr<ForceTerm>(const Config&, int ntypes, const Exec&)> create;
};

// The registered styles (md.pair_style names one), and one by name (InputError listing the names
// if there is none). Each style's file defines its register function; force.cpp calls them.
const std::vector<ForceStyle>& force_styles();
const ForceStyle& force_style(const std::string& name);

// The styles' register functions, one per file.
void register_lj_cut(std::vector<ForceStyle>& styles);
void register_lj_cut_coul_long(std::vector<ForceStyle>& styles);  // lj/cut/coul/long and coul/long

}  // namespace cumulus::md
