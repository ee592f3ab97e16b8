#pragma once
// Pack/unpack kernels of HaloExchange, declared once per backend pass (core/kernel_pass.hpp).
#include "core/exec.hpp"
#include "core/kernel_pass.hpp"
#include "mesh/field.hpp"

namespace cumulus {

#define CUMULUS_HALO_KERNELS                                                                         \
  template <class T>                                                                                 \
  void pack_box(const Exec& ex, const char* label, const View<T>& v, const Box& b, int ncomp, T* buf); \
  template <class T>                                                                                 \
  void unpack_box(const Exec& ex, const char* label, const View<T>& v, const Box& b, int ncomp,       \
                  const T* buf);                                                                     \
  template <class T>                                                                                 \
  void copy_shifted(const Exec& ex, const char* label, const View<T>& v, const Box& b, const Index3& shift,     \
                    int ncomp);                                                                      \
  template <class T>                                                                                 \
  void wrap_x(const Exec& ex, const char* label, const View<T>& v, const Box& interior, int ghost, int ncomp);
CUMULUS_DECLARE_KERNEL_PASSES(halo_kernels, CUMULUS_HALO_KERNELS)
#undef CUMULUS_HALO_KERNELS

}  // namespace cumulus
