// Kernel bodies of the neighbour list built on the backend (neighbor_backend.cpp drives them), one
// source per backend pass (core/kernel_pass.hpp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#if defined(__CUDACC__)
#include <cuda_runtime.h>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#endif

#include "solvers/md/md_kernels.hpp"

namespace cumulus::md {
namespace kernels::CUMULUS_PASS {

// ------------------------------------------------------------------------------------------------
// The neighbour list built by kernels: what neighbor_backend.cpp runs, on CUDA (where the
// atoms stay on the device) and, for testing and as the oracle's twin, on the host. Binning is a
// stable radix sort of the atoms by list bin (CUB; no atomics, so the bins' contents come in a
// fixed order), bin boundaries from the sorted keys, then two passes over each owned atom's 27
// bins, a thread for each (atom, bin): count, prefix sum, fill. Every atom's neighbours are then
// sorted by global id (list_sort), so that its forces sum in the order of the host's list: the
// same bits on both backends; a force term whose sums do not depend on the order skips that sort
// (NeighborList::set_id_order). Fewer than 3 bins along an axis: all pairs, a thread an atom.
namespace {
CUMULUS_HD inline int list_bin(double x, int nb, double L) {
  const int b = static_cast<int>(floor(x * nb / L));
  return b < 0 ? 0 : (b > nb - 1 ? nb - 1 : b);
}
CUMULUS_HD inline int wrap_bin(int b, int nb) { return b < 0 ? b + nb : (b >= nb ? b - nb : b); }
// The 27 list bins around an atom's own (itself included), numbered b = 9 (dz + 1) + 3 (dy + 1) +
// (dx + 1): the order in which an atom's partners are listed.
constexpr int kBinsAround = 27;
// Calls visit(j) for every local atom j other than i within cutoff + skin of atom i in bin b
// around atom i's (the binned path: at least 3 bins along every axis, so the 27 are distinct).
template <class Visit>
CUMULUS_HD inline void for_each_partner_in(const ListInput& in, int i, int b, Visit&& visit) {
  const double xi = in.x[i], yi = in.y[i], zi = in.z[i];
  const double rl2 = in.g.rl2, bx = in.g.box[0], by = in.g.box[1], bz = in.g.box[2];
  const int n0 = in.g.nb[0], n1 = in.g.nb[1], n2 = in.g.nb[2];
  const int cz = wrap_bin(list_bin(zi, n2, bz) + b / 9 - 1, n2);
  const int cy = wrap_bin(list_bin(yi, n1, by) + (b / 3) % 3 - 1, n1);
  const int cx = wrap_bin(list_bin(xi, n0, bx) + b % 3 - 1, n0);
  const int bin = (cz * n1 + cy) * n0 + cx;
  for (int k = in.bin_start[bin]; k < in.bin_start[bin + 1]; ++k) {
    const int j = in.bin_atoms ? in.bin_atoms[k] : k;
    const double ex = minimum_image(xi - in.x[j], bx), ey = minimum_image(yi - in.y[j], by), ez = minimum_image(zi - in.z[j], bz);
    if (j != i && ex * ex + ey * ey + ez * ez < rl2) visit(j);
  }
}
// Calls visit(j) for every local atom j other than i within cutoff + skin of atom i (minimum
// image; for a pair within reach that is the host builder's shifted difference, bit for bit).
template <class Visit>
CUMULUS_HD inline void for_each_partner(const ListInput& in, int i, Visit&& visit) {
  const double xi = in.x[i], yi = in.y[i], zi = in.z[i];
  const double rl2 = in.g.rl2, bx = in.g.box[0], by = in.g.box[1], bz = in.g.box[2];
  if (in.g.brute) {
    const std::int64_t idi = in.id[i];
    for (int j = 0; j < in.nlocal; ++j) {
      const double dx = minimum_image(xi - in.x[j], bx), dy = minimum_image(yi - in.y[j], by),
                   dz = minimum_image(zi - in.z[j], bz);
      if (in.id[j] != idi && dx * dx + dy * dy + dz * dz < rl2) visit(j);
    }
    return;
  }
  for (int b = 0; b < kBinsAround; ++b) for_each_partner_in(in, i, b, visit);
}
}  // namespace

void bin_keys(const Exec& ex, const ListInput& in, int n, int* key, int* seq) {
  for_each(ex, "md.neighbor_kernels", Box(0, 0, 0, n, 1, 1), [=] CUMULUS_HD(int i, int, int) {
    const ListGrid& g = in.g;
    key[i] = (list_bin(in.z[i], g.nb[2], g.box[2]) * g.nb[1] + list_bin(in.y[i], g.nb[1], g.box[1])) * g.nb[0] +
             list_bin(in.x[i], g.nb[0], g.box[0]);
    seq[i] = i;
  });
}

// Stable sort of (key, value) pairs by key, keys in [0, nbins). CUDA: CUB's radix sort over the
// key bits in use; `temp` is its scratch (temp == nullptr: *temp_bytes receives the size needed).
// Host: a counting sort (stable), no scratch.
void sort_pairs(const Exec& ex, const int* keys_in, int* keys_out, const int* vals_in, int* vals_out, int n,
                int nbins, void* temp, std::size_t* temp_bytes) {
  int bits = 1;
  while (bits < 31 && (1 << bits) < nbins) ++bits;
  if (ex.is_cuda()) {
#if CUMULUS_COMPILING_CUDA
    std::size_t bytes = *temp_bytes;
    const cudaError_t e = cub::DeviceRadixSort::SortPairs(temp, bytes, keys_in, keys_out, vals_in, vals_out, n, 0, bits,
                                                          ex.stream());
    if (e != cudaSuccess) throw Error(std::string("md.neighbor_build: CUB radix sort: ") + cudaGetErrorString(e));
    if (temp == nullptr) *temp_bytes = bytes;
    else detail::check_cuda_launch(ex, "md.neighbor_build.sort", Box(0, 0, 0, n, 1, 1));
    return;
#endif
  }
  if (temp == nullptr) {
    *temp_bytes = 0;
    return;
  }
  std::vector<int> start(static_cast<std::size_t>(nbins) + 1, 0);
  for (int i = 0; i < n; ++i) ++start[static_cast<std::size_t>(keys_in[i]) + 1];
  for (int b = 0; b < nbins; ++b) start[static_cast<std::size_t>(b) + 1] += start[static_cast<std::size_t>(b)];
  for (int i = 0; i < n; ++i) {
    const int at = start[static_cast<std::size_t>(keys_in[i])]++;
    keys_out[at] = keys_in[i];
    vals_out[at] = vals_in[i];
  }
}

// bin_start[b] = the first position k with sorted_keys[k] >= b (bin_start[nbins] = n): each entry
// written once, by the position where the key sequence steps past it.
void bin_bounds(const Exec& ex, const int* sorted_keys, int n, int nbins, int* bin_start) {
  for_each(ex, "md.neighbor_kernels", Box(0, 0, 0, n + 1, 1, 1), [=] CUMULUS_HD(int k, int, int) {
    const int prev = k == 0 ? -1 : sorted_keys[k - 1];
    const int cur = k == n ? nbins : sorted_keys[k];
    for (int b = prev + 1; b <= cur; ++b) bin_start[b] = k;
  });
}

// start[0] = 0, start[k + 1] = counts[0] + ... + counts[k] (CUB's scan on CUDA, scratch as sort_pairs).
void prefix_sum(const Exec& ex, const std::int64_t* counts, std::int64_t* start, int n, void* temp,
                std::size_t* temp_bytes) {
  if (ex.is_cuda()) {
#if CUMULUS_COMPILING_CUDA
    std::size_t bytes = *temp_bytes;
    cudaError_t e = cub::DeviceScan::InclusiveSum(temp, bytes, counts, start + 1, n, ex.stream());
    if (e == cudaSuccess && temp != nullptr) e = cudaMemsetAsync(start, 0, sizeof(std::int64_t), ex.stream());
    if (e != cudaSuccess) throw Error(std::string("md.neighbor_build: CUB scan: ") + cudaGetErrorString(e));
    if (temp == nullptr) *temp_bytes = bytes;
    else detail::check_cuda_launch(ex, "md.neighbor_build.scan", Box(0, 0, 0, n, 1, 1));
    return;
#endif
  }
  if (temp == nullptr) {
    *temp_bytes = 0;
    return;
  }
  start[0] = 0;
  for (int k = 0; k < n; ++k) start[k + 1] = start[k] + counts[k];
}

void list_count(const Exec& ex, const ListInput& in, std::int64_t* counts) {
  for_each(ex, "md.neighbor_kernels", Box(0, 0, 0, in.nown, 1, 1), [=] CUMULUS_HD(int i, int, int) {
    std::int64_t c = 0;
    for_each_partner(in, i, [&](int) { ++c; });
    counts[i] = c;
  });
}

// Writes atom i's neighbours at neighbors[start[i] ..], in the order for_each_partner finds them.
void list_fill(const Exec& ex, const ListInput& in, const std::int64_t* start, int* neighbors) {
  for_each(ex, "md.neighbor_kernels", Box(0, 0, 0, in.nown, 1, 1), [=] CUMULUS_HD(int i, int, int) {
    int* const out = neighbors + start[i];
    int m = 0;
    for_each_partner(in, i, [&](int j) { out[m++] = j; });
  });
}

// The binned path by (bin around, atom): one thread for each of an atom's 27 bins, counting, then
// filling its run of the list (on a GPU, 27 times the threads of one an atom, each a 27th of the
// serial scan: a liquid's atom scans some 5,000 candidates). counts[27 i + b]: atom i's partners
// in bin b; their prefix sums place the runs, so every atom's partners come in the order
// for_each_partner gives them, the same list.
void list_count_bins(const Exec& ex, const ListInput& in, std::int64_t* counts) {
  for_each(ex, "md.neighbor_kernels", Box(0, 0, 0, kBinsAround, in.nown, 1), [=] CUMULUS_HD(int b, int i, int) {
    std::int64_t c = 0;
    for_each_partner_in(in, i, b, [&](int) { ++c; });
    counts[kBinsAround * static_cast<std::int64_t>(i) + b] = c;
  });
}
void list_fill_bins(const Exec& ex, const ListInput& in, const std::int64_t* start, int* neighbors) {
  for_each(ex, "md.neighbor_kernels", Box(0, 0, 0, kBinsAround, in.nown, 1), [=] CUMULUS_HD(int b, int i, int) {
    int* const out = neighbors + start[kBinsAround * static_cast<std::int64_t>(i) + b];
    int m = 0;
    for_each_partner_in(in, i, b, [&](int j) { out[m++] = j; });
  });
}
// Each atom's start from the (atom, bin) starts: start[i] = bin_starts[27 i], i = 0 .. n.
void list_starts(const Exec& ex, const std::int64_t* bin_starts, int n, std::int64_t* start) {
  for_each(ex, "md.neighbor_kernels", Box(0, 0, 0, n + 1, 1, 1),
           [=] CUMULUS_HD(int i, int, int) { start[i] = bin_starts[kBinsAround * static_cast<std::int64_t>(i)]; });
}

// Sorts each atom's neighbours by global id: a Shell sort (Ciura's gaps, then about 2.25 times the
// last), in place, adaptive (a lattice-born list, handed over nearly sorted by the bins, costs a
// pass per gap) and O(m^1.3) rather than insertion sort's O(m^2) on the bins' interleaved runs of a
// liquid (water: m ~ 720 within 12 A; insertion sort's ~130,000 moves an atom took 61 ms a build
// for 24,000 atoms on an H200, more than the steps between builds). Ids are distinct: every sort
// gives the same order, so the bits do not depend on the algorithm.
void list_sort(const Exec& ex, const ListInput& in, const std::int64_t* start, int* neighbors) {
  for_each(ex, "md.neighbor_kernels", Box(0, 0, 0, in.nown, 1, 1), [=] CUMULUS_HD(int i, int, int) {
    int* const out = neighbors + start[i];
    const std::int64_t m64 = start[i + 1] - start[i];
    const int m = static_cast<int>(m64);
    if (m < 2) return;
    // Ciura's gaps, then each about 2.25 times the last (up to m < 2^31)
    constexpr int kGaps[26] = {1,        4,        10,        23,        57,        132,       301,
                               701,      1577,     3548,      7983,      17961,     40412,     90927,
                               204585,   460316,   1035711,   2330349,   5243285,   11797391,  26544129,
                               59724290, 134379652, 302354217, 680296988, 1530668223};
    int g = 0;
    while (g + 1 < 26 && kGaps[g + 1] < m) ++g;
    for (; g >= 0; --g) {
      const int h = kGaps[g];
      for (int p = h; p < m; ++p) {
        const int j = out[p];
        const std::int64_t key = in.id[j];
        int q = p - h;
        while (q >= 0 && in.id[out[q]] > key) {
          out[q + h] = out[q];
          q -= h;
        }
        out[q + h] = j;
      }
    }
  });
}


}  // namespace kernels::CUMULUS_PASS
}  // namespace cumulus::md
