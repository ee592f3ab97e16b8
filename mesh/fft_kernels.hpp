#pragma once
// Pack/unpack kernels of FftPlan's transposes, declared once per backend pass (core/kernel_pass.hpp).
#include <cstdint>
#include <type_traits>

#include "core/exec.hpp"
#include "core/kernel_pass.hpp"

namespace cumulus {

// A complex number as FFTW (fftw_complex) and cuFFT (cufftDoubleComplex) lay it out: real part,
// then imaginary part. A plain aggregate, so kernels on both backends copy it and spectral
// operators read and write its parts directly.
template <class T>
struct FftComplex {
  T re, im;
};
static_assert(std::is_trivially_copyable_v<FftComplex<double>> && sizeof(FftComplex<double>) == 16);
static_assert(sizeof(FftComplex<float>) == 8);

// A local array indexed with global indices and one stride per axis, so that any axis may be the
// contiguous one: the FFT's stages keep their transform axis fastest (x, then y, then z), and a
// field's brick is the case s0 = 1. Trivially copyable: kernels capture it by value.
template <class E>
struct StridedView {
  E* data = nullptr;
  int lo0 = 0, lo1 = 0, lo2 = 0;
  std::int64_t s0 = 0, s1 = 0, s2 = 0;

  CUMULUS_HD E& operator()(int i, int j, int k) const {
    return data[(i - lo0) * s0 + (j - lo1) * s1 + (k - lo2) * s2];
  }
};
static_assert(std::is_trivially_copyable_v<StridedView<double>>);

// pack: the cells of box `b` from `v` into `buf`, in box order (i fastest); unpack: the reverse;
// copy: from one view to another. A transpose is pack and unpack around one MPI_Alltoallv (the
// message for a rank is the intersection of this rank's box with that rank's box in the next
// stage), and one copy for the part that stays on the rank. The caller passes views permuted so
// that i runs along the destination's contiguous axis (FftPlan: the message is laid out in the
// receiver's order), so that unpack is a straight copy and the transposition happens once.
// Global wavenumbers of a spectral index (i, j, k): the index along an axis of n points maps to
// idx for idx <= n / 2 and to idx - n above (so, for even n, the Nyquist index n / 2 reads +n / 2:
// an odd derivative should zero it, see nyquist()). Along x of a real-to-complex transform the
// index is the wavenumber (0 .. N0 / 2; the negative half is the conjugate, not stored).
struct FftWavenumbers {
  int n0 = 1, n1 = 1, n2 = 1;
  bool half_x = false;  // real-to-complex: only kx >= 0 stored

  CUMULUS_HD static int signed_index(int idx, int n) { return 2 * idx <= n ? idx : idx - n; }
  CUMULUS_HD int kx(int i) const { return half_x ? i : signed_index(i, n0); }
  CUMULUS_HD int ky(int j) const { return signed_index(j, n1); }
  CUMULUS_HD int kz(int k) const { return signed_index(k, n2); }
  // Whether index idx along `axis` is the Nyquist mode of an even size (its own conjugate).
  CUMULUS_HD bool nyquist(int axis, int idx) const {
    const int n = axis == 0 ? n0 : (axis == 1 ? n1 : n2);
    return n % 2 == 0 && 2 * idx == n;
  }
};
static_assert(std::is_trivially_copyable_v<FftWavenumbers>);

#define CUMULUS_FFT_KERNELS                                                                           \
  template <class E>                                                                                  \
  void pack(const Exec& ex, const char* label, const StridedView<E>& v, const Box& b, E* buf);        \
  template <class E>                                                                                  \
  void unpack(const Exec& ex, const char* label, const StridedView<E>& v, const Box& b, const E* buf); \
  template <class E>                                                                                  \
  void copy(const Exec& ex, const char* label, const StridedView<E>& src, const StridedView<E>& dst, const Box& b);
CUMULUS_DECLARE_KERNEL_PASSES(fft_kernels, CUMULUS_FFT_KERNELS)
#undef CUMULUS_FFT_KERNELS

}  // namespace cumulus
