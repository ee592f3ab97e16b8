#pragma once
// IEEE 754 binary16 conversions that give the same bits on the host and on CUDA devices, so that
// fp16 storage keeps host and device runs bit-identical. Round to nearest, ties to even, with
// subnormals; NaN becomes the canonical 0x7fff on both.
#include <cstdint>
#include <cstring>

#include "core/macros.hpp"

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#endif

namespace cumulus {

CUMULUS_HD inline std::uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return static_cast<std::uint32_t>(__float_as_uint(f));
#else
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

CUMULUS_HD inline float bits_float(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

CUMULUS_HD inline std::uint16_t float_to_half(float f) {
#if defined(__CUDA_ARCH__)
  if (f != f) return 0x7fff;
  return __half_as_ushort(__float2half_rn(f));
#else
  std::uint32_t x = float_bits(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  x &= 0x7fffffffu;
  if (x > 0x7f800000u) return 0x7fff;                                    // NaN
  if (x >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // >= 65520 rounds to infinity
  if (x < 0x38800000u) {                                                  // below 2^-14: a half subnormal or zero
    if (x < 0x33000000u) return static_cast<std::uint16_t>(sign);         // below 2^-25 (a tie at 2^-25 goes to 0)
    const std::uint32_t e = x >> 23, m = (x & 0x7fffffu) | 0x800000u;
    const std::uint32_t shift = 126u - e;  // half subnormal = m * 2^(e - 150 + 24)
    std::uint32_t h = m >> shift;
    const std::uint32_t rem = m & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);
    if (rem > halfway || (rem == halfway && (h & 1u))) ++h;
    return static_cast<std::uint16_t>(sign | h);
  }
  std::uint32_t h = (x - 0x38000000u) >> 13;  // rebias the exponent from 127 to 15
  const std::uint32_t rem = x & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry rounds into the next binade
  return static_cast<std::uint16_t>(sign | h);
#endif
}

CUMULUS_HD inline float half_to_float(std::uint16_t h) {
#if defined(__CUDA_ARCH__)
  return __half2float(__ushort_as_half(h));
#else
  const std::uint32_t s = static_cast<std::uint32_t>(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) {
    const float v = static_cast<float>(m) * 5.9604644775390625e-8f;  // m * 2^-24, exact
    return s ? -v : v;
  }
  if (e == 31) return bits_float(s | 0x7f800000u | (m << 13));
  return bits_float(s | ((e + 112u) << 23) | (m << 13));
#endif
}

}  // namespace cumulus
