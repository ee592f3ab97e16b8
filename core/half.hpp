#pragma once
// IEEE 754 binary16 conversions that give the same bits on the host and on CUDA devices, so that
// fp16 storage keeps host and device runs bit-identical. Round to nearest, ties to even, with
// subnormals; NaN becomes the canonical 0x7fff on both.
#include <cstdint>
#include <bit>
#include <cstring>

#include "core/macros.hpp"

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#endif

namespace cumulus {

CUMULUS_HD CUMULUS_INLINE std::uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return static_cast<std::uint32_t>(__float_as_uint(f));
#else
  return std::bit_cast<std::uint32_t>(f);
#endif
}

CUMULUS_HD CUMULUS_INLINE float bits_float(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  return std::bit_cast<float>(u);
#endif
}

// The host paths are branch-free (every case computed, one selected), so that loops over
// populations vectorise. Subnormals are rounded by the FPU itself: |f| + 0.5 lands on the 2^-24
// grid of half subnormals with round-to-nearest-even, and the bits above 0.5 count the steps.
CUMULUS_HD CUMULUS_INLINE std::uint16_t float_to_half(float f) {
#if defined(__CUDA_ARCH__)
  if (f != f) return 0x7fff;
  return __half_as_ushort(__float2half_rn(f));
#else
  const std::uint32_t u = float_bits(f);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  const std::uint32_t x = u & 0x7fffffffu;
  const std::uint32_t sub = float_bits(bits_float(x) + 0.5f) - 0x3f000000u;  // |f| < 2^-14
  // Normal: rebias the exponent (127 -> 15) and round the 13 dropped bits to nearest even; a carry
  // moves into the next binade, and from 65504 up to infinity.
  const std::uint32_t norm = (x + 0xc8000fffu + ((x >> 13) & 1u)) >> 13;
  std::uint32_t h = x < 0x38800000u ? sub : norm;
  h = x >= 0x47800000u ? 0x7c00u : h;  // 65536 and up: infinity
  h |= sign;
  h = x > 0x7f800000u ? 0x7fffu : h;  // NaN
  return static_cast<std::uint16_t>(h);
#endif
}

CUMULUS_HD CUMULUS_INLINE float half_to_float(std::uint16_t h) {
#if defined(__CUDA_ARCH__)
  return __half2float(__ushort_as_half(h));
#else
  const std::uint32_t em = static_cast<std::uint32_t>(h & 0x7fffu) << 13;  // exponent and mantissa in place
  const std::uint32_t e = em & 0x0f800000u;
  const std::uint32_t normal = em + 0x38000000u;                                // rebias 15 -> 127
  const std::uint32_t special = em + 0x70000000u;                               // infinity and NaN
  const std::uint32_t sub = float_bits(bits_float(em + 0x38800000u) - 6.103515625e-05f);  // m 2^-24, exact
  std::uint32_t o = e == 0x0f800000u ? special : (e == 0 ? sub : normal);
  o |= static_cast<std::uint32_t>(h & 0x8000u) << 16;
  return bits_float(o);
#endif
}

}  // namespace cumulus
