// The radial distribution function: samples from the Verlet list, written as rdf.csv.
#include "solvers/md/rdf.hpp"

#include <algorithm>
#include <cmath>

#include "core/constants.hpp"
#include "core/strings.hpp"
#include "io/run_directory.hpp"

namespace cumulus::md {

void Rdf::sample(const Exec& ex, const MdAtoms& atoms, const NeighborList& list, const double box[3]) {
  const int nlocal = atoms.nlocal(), nown = atoms.nown();
  std::vector<double> h[3];
  for (int d = 0; d < 3; ++d) {
    h[d].resize(static_cast<std::size_t>(nlocal));
    if (nlocal > 0)
      memory::copy(ex, Backend::host, h[d].data(), ex.backend(), atoms.store.device<double>(atoms.position, d),
                   sizeof(double) * static_cast<std::size_t>(nlocal));
  }
  if (hist_.empty()) hist_.assign(static_cast<std::size_t>(bins_), 0.0);
  const double scale = static_cast<double>(bins_) / range_;
  auto image = [&](double d, int axis) {
    const double L = box[axis];
    return d > 0.5 * L ? d - L : (d < -0.5 * L ? d + L : d);
  };
  // Each owned atom counts its pairs: a full list's slot is its owned atom; a half list holds
  // every pair once, counted for each of its owned atoms (without ghost slots, each pair across
  // ranks is on one rank only: counted there for both atoms).
  const bool half = list.half(), both = half && !list.ghost_slots();
  const std::vector<std::int64_t>& start = list.host_start();
  const std::vector<int>& nbr = list.host_list();
  const std::vector<int>& order = list.host_order();
  for (int slot = 0; slot < list.nslots(); ++slot) {
    const int i = half ? order[static_cast<std::size_t>(slot)] : slot;
    for (std::int64_t k = start[static_cast<std::size_t>(slot)]; k < start[static_cast<std::size_t>(slot) + 1]; ++k) {
      const int j = nbr[static_cast<std::size_t>(k)];
      const double weight = both ? 2.0 : (half ? static_cast<double>((i < nown) + (j < nown)) : 1.0);
      double r2 = 0;
      for (int d = 0; d < 3; ++d) {
        const double dd = image(h[d][static_cast<std::size_t>(i)] - h[d][static_cast<std::size_t>(j)], d);
        r2 += dd * dd;
      }
      const double r = std::sqrt(r2);
      if (r < range_) hist_[std::min(static_cast<std::size_t>(r * scale), hist_.size() - 1)] += weight;
    }
  }
  ++samples_;
}

void Rdf::write(const Comm& comm, const std::string& run_dir, std::int64_t n_total, double rho) const {
  // The histogram holds whole counts (weights 1 or 2): its sum over ranks is exact in any order.
  std::vector<double> hist = hist_;
  hist.resize(static_cast<std::size_t>(bins_), 0.0);
  comm.sum_in_place(hist.data(), static_cast<int>(hist.size()));
  if (!comm.is_root() || samples_ == 0 || run_dir.empty()) return;
  const double dr = range_ / static_cast<double>(bins_), n = static_cast<double>(n_total);
  std::string text = strprintf("# radial distribution function, %ld samples (every %lld steps) since the start or "
                               "restart; r is the shell's middle\nr,g,coordination\n",
                               samples_, static_cast<long long>(every_));
  double coordination = 0;
  for (std::size_t b = 0; b < hist.size(); ++b) {
    const double r0 = b * dr, r1 = (b + 1) * dr;
    const double shell = 4.0 / 3.0 * kPi * (r1 * r1 * r1 - r0 * r0 * r0);
    const double g = hist[b] / (static_cast<double>(samples_) * n * rho * shell);
    coordination += hist[b] / (static_cast<double>(samples_) * n);
    text += strprintf("%.6g,%.10g,%.10g\n", 0.5 * (r0 + r1), g, coordination);
  }
  write_file_atomic(run_dir + "/rdf.csv", text);
}

}  // namespace cumulus::md
