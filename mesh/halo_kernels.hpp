#pragma once
// Pack/unpack kernels of HaloExchange, declared once per backend pass (core/kernel_pass.hpp).
#include <cstdint>

#include "core/exec.hpp"
#include "core/kernel_pass.hpp"
#include "mesh/field.hpp"

namespace cumulus {

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
  void wrap_x(const Exec& ex, const char* label, const View<T>& v, const Box& interior, int ghost, int ncomp, \
              std::uint32_t lo_mask, std::uint32_t hi_mask);
CUMULUS_DECLARE_KERNEL_PASSES(halo_kernels, CUMULUS_HALO_KERNELS)
#undef CUMULUS_HALO_KERNELS

}  // namespace cumulus
