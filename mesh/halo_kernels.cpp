// Halo pack, unpack and same-rank copy kernels. A kernel source: compiled once per backend (g++ for
// the host, nvcc for CUDA), each pass in its own namespace (core/kernel_pass.hpp).
#include <cstdint>

#include "mesh/halo_kernels.hpp"

namespace cumulus {

namespace halo_kernels::CUMULUS_PASS {
namespace {
int components(std::uint32_t mask) {
  int n = 0;
  for (; mask; mask &= mask - 1) ++n;
  return n;
}
}  // namespace
// Free functions (not members): nvcc accepts extended lambdas only in public or free functions.
// Components are packed in order, skipping those not in the mask (bit c: component c).
template <class T>
void pack_box(const Exec& ex, const char* label, const View<T>& v, const Box& b, int ncomp, std::uint32_t mask, T* buf) {
  const int ni = b.size(0), nj = b.size(1);
  const std::int64_t vol = b.volume();
  const int i0 = b.lo[0], j0 = b.lo[1], k0 = b.lo[2];
  for_each(ex, label, b, [=] CUMULUS_HD(int i, int j, int k) {
    const std::int64_t idx = (static_cast<std::int64_t>(k - k0) * nj + (j - j0)) * ni + (i - i0);
    std::int64_t n = 0;
    for (int c = 0; c < ncomp; ++c)
      if ((mask >> c) & 1u) buf[(n++) * vol + idx] = v(i, j, k, c);
  }, components(mask));
}
template <class T>
void copy_shifted(const Exec& ex, const char* label, const View<T>& v, const Box& b, const Index3& shift, int ncomp,
                  std::uint32_t mask) {
  const int s0 = shift[0], s1 = shift[1], s2 = shift[2];
  for_each(ex, label, b, [=] CUMULUS_HD(int i, int j, int k) {
    for (int c = 0; c < ncomp; ++c)
      if ((mask >> c) & 1u) v(i, j, k, c) = v(i + s0, j + s1, k + s2, c);
  }, components(mask));
}
template <class T>
void unpack_box(const Exec& ex, const char* label, const View<T>& v, const Box& b, int ncomp, std::uint32_t mask,
                const T* buf) {
  const int ni = b.size(0), nj = b.size(1);
  const std::int64_t vol = b.volume();
  const int i0 = b.lo[0], j0 = b.lo[1], k0 = b.lo[2];
  for_each(ex, label, b, [=] CUMULUS_HD(int i, int j, int k) {
    const std::int64_t idx = (static_cast<std::int64_t>(k - k0) * nj + (j - j0)) * ni + (i - i0);
    std::int64_t n = 0;
    for (int c = 0; c < ncomp; ++c)
      if ((mask >> c) & 1u) v(i, j, k, c) = buf[(n++) * vol + idx];
  }, components(mask));
}
// All same-rank copies of an exchange. On CUDA one launch over the cells of every box (each thread
// finds its box among at most 26 by a short search): launch latency, not bandwidth, is what a
// few-cell-thick ghost box costs there. On the host one loop per box, as copy_shifted: the loops
// vectorise and need no search, and a launch costs nothing. Both copy the same values (each ghost
// cell from an interior cell; the boxes do not overlap), so the results are the same bits.
template <class T>
void copy_self(const Exec& ex, const char* label, const View<T>& v, const SelfCopies& s, int ncomp) {
  if (s.count == 0) return;
  if (!ex.is_cuda()) {
    for (int n = 0; n < s.count; ++n)
      copy_shifted(ex, label, v, s.box[n], Index3{s.shift[n][0], s.shift[n][1], s.shift[n][2]}, ncomp, s.mask[n]);
    return;
  }
  const SelfCopies c = s;
  for_each(ex, label, Box(0, 0, 0, static_cast<int>(s.start[s.count]), 1, 1), [=] CUMULUS_HD(int cell, int, int) {
    int n = 0;
    while (cell >= c.start[n + 1]) ++n;
    const Box& b = c.box[n];
    const int local = static_cast<int>(cell - c.start[n]);
    const int ni = b.hi[0] - b.lo[0], nj = b.hi[1] - b.lo[1];
    const int i = b.lo[0] + local % ni, r = local / ni, j = b.lo[1] + r % nj, k = b.lo[2] + r / nj;
    const std::uint32_t mask = c.mask[n];
    for (int comp = 0; comp < ncomp; ++comp)
      if ((mask >> comp) & 1u) v(i, j, k, comp) = v(i + c.shift[n][0], j + c.shift[n][1], k + c.shift[n][2], comp);
  });
}
// Both x faces of a periodic axis that is not split, in one pass over the rows: the low ghosts
// take the row's last cells and the high ghosts its first, so each row end is touched once (two
// separate face copies would bring every row's two end cache lines in twice).
template <class T>
void wrap_x(const Exec& ex, const char* label, const View<T>& v, const Box& interior, int ghost, int ncomp,
            std::uint32_t lo_mask, std::uint32_t hi_mask) {
  const int lo = interior.lo[0], hi = interior.hi[0];
  const Box rows(lo, interior.lo[1], interior.lo[2], lo + 1, interior.hi[1], interior.hi[2]);
  for_each(ex, label, rows, [=] CUMULUS_HD(int, int j, int k) {
    for (int c = 0; c < ncomp; ++c)
      for (int g = 1; g <= ghost; ++g) {
        if ((lo_mask >> c) & 1u) v(lo - g, j, k, c) = v(hi - g, j, k, c);
        if ((hi_mask >> c) & 1u) v(hi + g - 1, j, k, c) = v(lo + g - 1, j, k, c);
      }
  }, static_cast<std::int64_t>(ghost) * (components(lo_mask) + components(hi_mask)));
}
// The reverse (accumulating) exchange: a received block of ghost values added into the interior
// cells they mirror, and a same-rank ghost box added into the interior cells `shift` away. Within
// one box every target cell is distinct, so the loop has no race; boxes are added one after
// another, in a fixed order.
template <class T>
void add_box(const Exec& ex, const char* label, const View<T>& v, const Box& b, int ncomp, std::uint32_t mask,
             const T* buf) {
  const int ni = b.size(0), nj = b.size(1);
  const std::int64_t vol = b.volume();
  const int i0 = b.lo[0], j0 = b.lo[1], k0 = b.lo[2];
  for_each(ex, label, b, [=] CUMULUS_HD(int i, int j, int k) {
    const std::int64_t idx = (static_cast<std::int64_t>(k - k0) * nj + (j - j0)) * ni + (i - i0);
    std::int64_t n = 0;
    for (int c = 0; c < ncomp; ++c)
      if ((mask >> c) & 1u) v(i, j, k, c) += buf[(n++) * vol + idx];
  }, components(mask));
}
template <class T>
void add_shifted(const Exec& ex, const char* label, const View<T>& v, const Box& b, const Index3& shift, int ncomp,
                 std::uint32_t mask) {
  const int s0 = shift[0], s1 = shift[1], s2 = shift[2];
  for_each(ex, label, b, [=] CUMULUS_HD(int i, int j, int k) {
    for (int c = 0; c < ncomp; ++c)
      if ((mask >> c) & 1u) v(i + s0, j + s1, k + s2, c) += v(i, j, k, c);
  }, components(mask));
}
// SelfAddGather's one launch (either backend; HaloExchange takes it on CUDA, the host's loops are
// add_shifted's). A target cell (i, j, k) gets from direction (dx, dy, dz) the ghost cell
// (i, j, k) + (dx, dy, dz) * size: along an axis, +1 reaches the cells within g of the low face,
// -1 those within g of the high face, 0 all.
template <class T>
void add_self_gather(const Exec& ex, const char* label, const View<T>& v, const SelfAddGather& s, int ncomp) {
  if (s.count == 0) return;
  const SelfAddGather p = s;
  for_each(ex, label, Box(0, 0, 0, static_cast<int>(s.start[s.count]), 1, 1), [=] CUMULUS_HD(int cell, int, int) {
    int n = 0;
    while (cell >= p.start[n + 1]) ++n;
    const Box& b = p.box[n];
    const int local = static_cast<int>(cell - p.start[n]);
    const int ni = b.hi[0] - b.lo[0], nj = b.hi[1] - b.lo[1];
    const int c[3] = {b.lo[0] + local % ni, b.lo[1] + (local / ni) % nj, b.lo[2] + local / ni / nj};
    int reach[3];  // bit dir + 1: direction dir along the axis reaches this cell
    int size[3];
    for (int d = 0; d < 3; ++d) {
      reach[d] = 2 | (c[d] >= p.hi[d] - p.g[d] ? 1 : 0) | (c[d] < p.lo[d] + p.g[d] ? 4 : 0);
      size[d] = p.hi[d] - p.lo[d];
    }
    for (int dz = -1; dz <= 1; ++dz) {
      if (!((reach[2] >> (dz + 1)) & 1)) continue;
      for (int dy = -1; dy <= 1; ++dy) {
        if (!((reach[1] >> (dy + 1)) & 1)) continue;
        for (int dx = -1; dx <= 1; ++dx) {
          if (!((reach[0] >> (dx + 1)) & 1)) continue;
          const std::uint32_t mask = p.mask[(dx + 1) + 3 * (dy + 1) + 9 * (dz + 1)];
          if (mask == 0) continue;
          const int si = c[0] + dx * size[0], sj = c[1] + dy * size[1], sk = c[2] + dz * size[2];
          for (int comp = 0; comp < ncomp; ++comp)
            if ((mask >> comp) & 1u) v(c[0], c[1], c[2], comp) += v(si, sj, sk, comp);
        }
      }
    }
  });
}
#define CUMULUS_INSTANTIATE_HALO_KERNELS(T)                                                                     \
  template void pack_box<T>(const Exec&, const char*, const View<T>&, const Box&, int, std::uint32_t, T*);     \
  template void unpack_box<T>(const Exec&, const char*, const View<T>&, const Box&, int, std::uint32_t, const T*); \
  template void copy_shifted<T>(const Exec&, const char*, const View<T>&, const Box&, const Index3&, int,        \
                                std::uint32_t);                                                                  \
  template void copy_self<T>(const Exec&, const char*, const View<T>&, const SelfCopies&, int);                   \
  template void wrap_x<T>(const Exec&, const char*, const View<T>&, const Box&, int, int, std::uint32_t, std::uint32_t);
CUMULUS_INSTANTIATE_HALO_KERNELS(double)
CUMULUS_INSTANTIATE_HALO_KERNELS(float)
CUMULUS_INSTANTIATE_HALO_KERNELS(std::uint16_t)
CUMULUS_INSTANTIATE_HALO_KERNELS(std::int32_t)
CUMULUS_INSTANTIATE_HALO_KERNELS(std::int64_t)
#undef CUMULUS_INSTANTIATE_HALO_KERNELS
// Accumulation: integers (order-free, so the same bits at any rank count: PME's fixed-point charge
// grid) and doubles (a fixed order for a given decomposition).
#define CUMULUS_INSTANTIATE_HALO_ADD(T)                                                                       \
  template void add_box<T>(const Exec&, const char*, const View<T>&, const Box&, int, std::uint32_t, const T*); \
  template void add_shifted<T>(const Exec&, const char*, const View<T>&, const Box&, const Index3&, int, std::uint32_t); \
  template void add_self_gather<T>(const Exec&, const char*, const View<T>&, const SelfAddGather&, int);
CUMULUS_INSTANTIATE_HALO_ADD(double)
CUMULUS_INSTANTIATE_HALO_ADD(std::int64_t)
#undef CUMULUS_INSTANTIATE_HALO_ADD
}  // namespace halo_kernels::CUMULUS_PASS

}  // namespace cumulus
