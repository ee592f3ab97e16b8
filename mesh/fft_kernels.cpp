// Pack and unpack kernels of the FFT's transposes. A kernel source: compiled once per backend (g++
// for the host, nvcc for CUDA), each pass in its own namespace (core/kernel_pass.hpp).
#include <cstdint>

#include "mesh/fft_kernels.hpp"

namespace cumulus {

namespace fft_kernels::CUMULUS_PASS {
// Free functions (not members): nvcc accepts extended lambdas only in public or free functions.
// The weight (2 for complex elements) spreads medium boxes over the host threads.
template <class E>
void pack(const Exec& ex, const char* label, const StridedView<E>& v, const Box& b, E* buf) {
  const int ni = b.size(0), nj = b.size(1);
  const int i0 = b.lo[0], j0 = b.lo[1], k0 = b.lo[2];
  for_each(ex, label, b, [=] CUMULUS_HD(int i, int j, int k) {
    buf[(static_cast<std::int64_t>(k - k0) * nj + (j - j0)) * ni + (i - i0)] = v(i, j, k);
  }, static_cast<std::int64_t>(sizeof(E) / 4));
}
template <class E>
void unpack(const Exec& ex, const char* label, const StridedView<E>& v, const Box& b, const E* buf) {
  const int ni = b.size(0), nj = b.size(1);
  const int i0 = b.lo[0], j0 = b.lo[1], k0 = b.lo[2];
  for_each(ex, label, b, [=] CUMULUS_HD(int i, int j, int k) {
    v(i, j, k) = buf[(static_cast<std::int64_t>(k - k0) * nj + (j - j0)) * ni + (i - i0)];
  }, static_cast<std::int64_t>(sizeof(E) / 4));
}
template <class E>
void copy(const Exec& ex, const char* label, const StridedView<E>& src, const StridedView<E>& dst, const Box& b) {
  for_each(ex, label, b, [=] CUMULUS_HD(int i, int j, int k) { dst(i, j, k) = src(i, j, k); },
           static_cast<std::int64_t>(sizeof(E) / 4));
}
#define CUMULUS_INSTANTIATE_FFT_KERNELS(E)                                                          \
  template void pack<E>(const Exec&, const char*, const StridedView<E>&, const Box&, E*);           \
  template void unpack<E>(const Exec&, const char*, const StridedView<E>&, const Box&, const E*);       \
  template void copy<E>(const Exec&, const char*, const StridedView<E>&, const StridedView<E>&, const Box&);
CUMULUS_INSTANTIATE_FFT_KERNELS(double)
CUMULUS_INSTANTIATE_FFT_KERNELS(float)
CUMULUS_INSTANTIATE_FFT_KERNELS(FftComplex<double>)
CUMULUS_INSTANTIATE_FFT_KERNELS(FftComplex<float>)
#undef CUMULUS_INSTANTIATE_FFT_KERNELS
}  // namespace fft_kernels::CUMULUS_PASS

}  // namespace cumulus
