#pragma once
// Pair potentials of the md solver behind a registry. The integrator, the neighbour list and the
// decomposition know a pair style only through this interface (its reach, its force call, its tail
// corrections), so further potentials, and long-range electrostatics with their own k-space part,
// come in as new registered styles without touching them.
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/config.hpp"
#include "core/exec.hpp"
#include "solvers/md/md_kernels.hpp"

namespace cumulus::md {

class PairStyle {
 public:
  virtual ~PairStyle() = default;
  // One line for the log: the coefficients of every type pair.
  virtual std::string describe() const = 0;
  // The longest interaction range: the neighbour list holds pairs within it plus the skin.
  virtual double max_cutoff() const = 0;
  // Forces, and half of each pair's energy and virial r . F, for every owned atom (full list).
  virtual void compute(const Exec& ex, const Atoms& a) const = 0;
  // Analytic corrections for the interactions beyond the cutoffs in a uniform fluid, from the
  // number of atoms of each type and the volume: {total energy, pressure}.
  virtual std::pair<double, double> tail(const std::vector<double>& type_counts, double volume) const = 0;
};

struct PairStyleInfo {
  std::string name, doc;
  // Adds the style's keys (under md.) to the schema; every style's keys are declared, whichever the
  // job chooses, so that `cumulus keys md` and docs/ list them all.
  std::function<void(Schema&)> declare_keys;
  // Relations between keys the schema cannot express (cfg.fail: exit 2), for `ntypes` atom types.
  std::function<void(const Config&, int ntypes)> check;
  // The longest cutoff the job gives the style (what max_cutoff() will return), for checks made
  // before any model exists.
  std::function<double(const Config&, int ntypes)> reach;
  std::function<std::unique_ptr<PairStyle>(const Config&, int ntypes, const Exec&)> create;
};

// The registered styles, and one by name (InputError listing the names if there is none).
const std::vector<PairStyleInfo>& pair_styles();
const PairStyleInfo& pair_style(const std::string& name);

}  // namespace cumulus::md
