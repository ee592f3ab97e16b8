// The kernel builder of the Verlet list (neighbor_kernels.cpp: bin_keys .. list_fill), from the positions
// and ids on the backend (owned, then ghosts). With `reorder` (one rank) the owned atoms are first
// put in bin order (a stable radix sort by list bin, then every registered array gathered):
// partners are then near in memory, which a GPU's gathers need, and the bins need no index array.
// Results do not depend on the order (forces sum in id order; thermo sums are exact).
#include <algorithm>
#include <cmath>
#include <limits>

#include "solvers/md/neighbor_list.hpp"

namespace cumulus::md {

namespace {
class KernelNeighborList : public NeighborList {
 public:
  KernelNeighborList(const Exec& ex, bool reorder) : NeighborList(ex), reorder_(reorder) {}
  std::string describe() const override {
    return reorder_ ? "built by kernels, atoms re-sorted by bin on the backend" : "built by kernels on the backend";
  }
  bool resident() const override { return reorder_; }

  void build(MdAtoms& atoms, const double box[3], double rl) override {
    const Exec& ex = *ex_;
    const Backend where = ex.backend();
    const int n_own = atoms.nown(), nlocal = atoms.nlocal();
    const std::size_t nl = static_cast<std::size_t>(std::max(nlocal, 1));
    ListGrid g;
    g.rl2 = rl * rl;
    g.brute = false;
    for (int d = 0; d < 3; ++d) {
      g.nb[d] = std::max(1, static_cast<int>(std::floor(box[d] / rl)));
      g.box[d] = box[d];
      g.brute = g.brute || g.nb[d] < 3;
    }
    ListInput in;
    in.x = atoms.store.device<double>(atoms.position, 0);
    in.y = atoms.store.device<double>(atoms.position, 1);
    in.z = atoms.store.device<double>(atoms.position, 2);
    in.id = atoms.store.device<std::int64_t>(atoms.id);
    in.nown = n_own;
    in.nlocal = nlocal;
    in.g = g;
    std::size_t sort_bytes = 0, scan_bytes = 0;
    // The binned path counts by (atom, bin around it): 27 counts an atom, scanned (list_count_bins),
    // while 27 n_own fits the scan's int count (below 79.5 million owned atoms); beyond, a thread an
    // atom (list_count: the same list).
    const bool by_bins = !g.brute && 27LL * n_own <= std::numeric_limits<int>::max();
    const int runs = by_bins ? 27 * n_own : n_own;
    fit(ex, counts_, static_cast<std::size_t>(std::max(runs, 1)));
    fit(ex, runs_start_, static_cast<std::size_t>(runs) + 1);
    fit(ex, start_, static_cast<std::size_t>(n_own) + 1);
    CUMULUS_KERNEL(ex, kernels, prefix_sum)(ex, counts_.data(), runs_start_.data(), runs, nullptr, &scan_bytes);
    if (!g.brute && nlocal > 0) {
      const int nbins = g.nb[0] * g.nb[1] * g.nb[2];
      fit(ex, key_in_, nl);
      fit(ex, key_out_, nl);
      fit(ex, val_in_, nl);
      fit(ex, val_out_, nl);
      fit(ex, bin_start_, static_cast<std::size_t>(nbins) + 1);
      CUMULUS_KERNEL(ex, kernels, sort_pairs)(ex, key_in_.data(), key_out_.data(), val_in_.data(), val_out_.data(), nlocal,
                                              nbins, nullptr, &sort_bytes);
      fit(ex, temp_, std::max<std::size_t>({sort_bytes, scan_bytes, 1}));
      CUMULUS_KERNEL(ex, kernels, bin_keys)(ex, in, nlocal, key_in_.data(), val_in_.data());
      CUMULUS_KERNEL(ex, kernels, sort_pairs)(ex, key_in_.data(), key_out_.data(), val_in_.data(), val_out_.data(), nlocal,
                                              nbins, temp_.data(), &sort_bytes);
      if (reorder_) {
        atoms.store.permute_owned_device(val_out_.data());
        in.bin_atoms = nullptr;
      } else {
        in.bin_atoms = val_out_.data();
      }
      CUMULUS_KERNEL(ex, kernels, bin_bounds)(ex, key_out_.data(), nlocal, nbins, bin_start_.data());
      in.bin_start = bin_start_.data();
    } else {
      fit(ex, temp_, std::max<std::size_t>(scan_bytes, 1));
    }
    if (!by_bins) {
      CUMULUS_KERNEL(ex, kernels, list_count)(ex, in, counts_.data());
      CUMULUS_KERNEL(ex, kernels, prefix_sum)(ex, counts_.data(), start_.data(), n_own, temp_.data(), &scan_bytes);
    } else {
      CUMULUS_KERNEL(ex, kernels, list_count_bins)(ex, in, counts_.data());
      CUMULUS_KERNEL(ex, kernels, prefix_sum)(ex, counts_.data(), runs_start_.data(), runs, temp_.data(), &scan_bytes);
      CUMULUS_KERNEL(ex, kernels, list_starts)(ex, runs_start_.data(), n_own, start_.data());
    }
    std::int64_t total = 0;
    memory::copy(ex, Backend::host, &total, where, start_.data() + n_own, sizeof(std::int64_t));
    if (nbr_.size() < static_cast<std::size_t>(total) || nbr_.size() == 0)
      nbr_ = Buffer<int>(where, std::max<std::size_t>(static_cast<std::size_t>(total + total / 4), 1));
    if (!by_bins)
      CUMULUS_KERNEL(ex, kernels, list_fill)(ex, in, start_.data(), nbr_.data());
    else
      CUMULUS_KERNEL(ex, kernels, list_fill_bins)(ex, in, runs_start_.data(), nbr_.data());
    if (id_order_) CUMULUS_KERNEL(ex, kernels, list_sort)(ex, in, start_.data(), nbr_.data());
    half_ = false;
    nslots_ = n_own;
    pairs_ = static_cast<double>(total);
    if (keep_host_) {  // host-side computes (the radial distribution function) read the list there
      host_start_.resize(static_cast<std::size_t>(n_own) + 1);
      memory::copy(ex, Backend::host, host_start_.data(), where, start_.data(), host_start_.size() * sizeof(std::int64_t));
      host_list_.resize(static_cast<std::size_t>(total));
      if (total > 0) memory::copy(ex, Backend::host, host_list_.data(), where, nbr_.data(), host_list_.size() * sizeof(int));
      host_order_.clear();
    }
    ++builds_;
  }

 private:
  bool reorder_;
  Buffer<int> key_in_, key_out_, val_in_, val_out_, bin_start_;
  Buffer<std::int64_t> counts_, runs_start_;
  Buffer<unsigned char> temp_;
};
}  // namespace

std::unique_ptr<NeighborList> make_kernel_neighbor_list(const Exec& ex, bool reorder) {
  return std::make_unique<KernelNeighborList>(ex, reorder);
}

}  // namespace cumulus::md
