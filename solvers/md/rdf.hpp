#pragma once
// The radial distribution function of the md solver (md.rdf_every, md.rdf_bins, md.rdf_range): a
// compute the model runs on its schedule (every rdf_every steps) and writes with every diagnostics
// row (rdf.csv in the run directory, rank 0, atomically).
#include <cstdint>
#include <string>
#include <vector>

#include "core/comm.hpp"
#include "core/exec.hpp"
#include "solvers/md/atoms.hpp"
#include "solvers/md/neighbor_list.hpp"

namespace cumulus::md {

class Rdf {
 public:
  Rdf(std::int64_t every, std::int64_t bins, double range) : every_(every), bins_(bins), range_(range) {}
  bool due(std::int64_t step) const { return every_ > 0 && step % every_ == 0; }
  // One sample: every owned atom's neighbours within the range (the list, kept on the host, holds
  // every pair within the cutoff), from the current positions of owned atoms and ghosts.
  void sample(const Exec& ex, const MdAtoms& atoms, const NeighborList& list, const double box[3]);
  // g(r) = pairs in the shell / (samples N rho shell volume), and the running coordination number
  // 4 pi rho integral g r^2 dr. Collective.
  void write(const Comm& comm, const std::string& run_dir, std::int64_t n_total, double rho) const;

 private:
  std::int64_t every_, bins_;
  double range_;
  std::vector<double> hist_;
  long samples_ = 0;
};

}  // namespace cumulus::md
