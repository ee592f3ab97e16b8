#pragma once
// Pack/unpack kernels of HaloExchange, declared once per backend pass (core/kernel_pass.hpp).
#include <cstdint>

#include "core/exec.hpp"
#include "core/kernel_pass.hpp"
#include "mesh/field.hpp"

namespace cumulus {

// Every same-rank ghost copy of one exchange (a periodic axis that is not split: up to 24 faces,
// edges and corners besides the x faces), so that the device does them in one launch instead of
// one tiny launch each. Passed by value to the kernel (about 1.3 KB of parameters).
struct SelfCopies {
  static constexpr int kMax = 26;
  int count = 0;
  Box box[kMax];                  // the ghost cells filled
  int shift[kMax][3];             // the source of ghost cell x is x + shift
  std::uint32_t mask[kMax];       // components copied
  std::int64_t start[kMax + 1];   // start[n]: cells in the boxes before box n
};

// Every same-rank ghost add of an accumulating exchange (HaloExchange::accumulate), as one gather
// over the interior cells they land on: on CUDA one launch instead of up to 26 (launch latency is
// what a few-cell-thick box costs there). Each cell adds the ghost cells that mirror onto it in
// the sequential adds' order (directions nested dz, dy, dx): the same bits, doubles included.
struct SelfAddGather {
  int count = 0;                 // boxes (0: no same-rank adds)
  Box box[6];                    // disjoint boxes of interior cells covering every target
  std::int64_t start[7];         // start[n]: cells in the boxes before box n
  std::uint32_t mask[27];        // by direction (dx+1) + 3 (dy+1) + 9 (dz+1): components added, 0 none
  int lo[3], hi[3], g[3];        // the interior, and the ghost width along axes that wrap onto this rank
};

#define CUMULUS_HALO_KERNELS                                                                         \
  template <class T>                                                                                 \
  void pack_box(const Exec& ex, const char* label, const View<T>& v, const Box& b, int ncomp, std::uint32_t mask, T* buf); \
  template <class T>                                                                                 \
  void unpack_box(const Exec& ex, const char* label, const View<T>& v, const Box& b, int ncomp,       \
                  std::uint32_t mask, const T* buf);                                                                     \
  template <class T>                                                                                 \
  void copy_shifted(const Exec& ex, const char* label, const View<T>& v, const Box& b, const Index3& shift,     \
                    int ncomp, std::uint32_t mask);                                                                      \
  template <class T>                                                                                 \
  void copy_self(const Exec& ex, const char* label, const View<T>& v, const SelfCopies& s, int ncomp);  \
  template <class T>                                                                                 \
  void wrap_x(const Exec& ex, const char* label, const View<T>& v, const Box& interior, int ghost, int ncomp, \
              std::uint32_t lo_mask, std::uint32_t hi_mask);                                                   \
  template <class T>                                                                                 \
  void add_box(const Exec& ex, const char* label, const View<T>& v, const Box& b, int ncomp, std::uint32_t mask, \
               const T* buf);                                                                                    \
  template <class T>                                                                                 \
  void add_shifted(const Exec& ex, const char* label, const View<T>& v, const Box& b, const Index3& shift, int ncomp, \
                   std::uint32_t mask);                                                                  \
  template <class T>                                                                                 \
  void add_self_gather(const Exec& ex, const char* label, const View<T>& v, const SelfAddGather& s, int ncomp);
CUMULUS_DECLARE_KERNEL_PASSES(halo_kernels, CUMULUS_HALO_KERNELS)
#undef CUMULUS_HALO_KERNELS

}  // namespace cumulus
