#pragma once
// A sum of doubles that does not depend on the order of its terms: each term is rounded once to a
// fixed point (a multiple of 2^e, e chosen by the caller) and split into 32-bit limbs that are
// added as integers. Integer addition is associative, so threads, CUDA blocks and MPI ranks may
// add in any grouping and every rank gets the same bits; this is what lets a global correction
// (the shallow-water solver's mass fix) keep results bit-identical at any rank count and on host
// and CUDA alike. Terms must be below 2^(e + kExactSumBits) in magnitude; larger ones, and
// non-finite ones, are counted in `overflow` and make value() report failure.
#include <math.h>

#include <cstdint>

#include "core/macros.hpp"

namespace cumulus {

inline constexpr int kExactSumLimbs = 5;  // 5 x 32 bits above 2^e
inline constexpr int kExactSumBits = 32 * kExactSumLimbs - 1;  // 159: of_units' bound is 0x1p159

struct ExactSum {
  // word[l], l < kExactSumLimbs, counts units of 2^(e + 32 l); each term adds at most 2^32 - 1 per
  // limb, so 2^31 terms fit in the 64-bit counters. word[kExactSumLimbs] counts the terms that did
  // not fit. One array, so that an MPI sum over ranks takes words() and kWords.
  static constexpr int kWords = kExactSumLimbs + 1;
  std::int64_t word[kWords] = {};

  std::int64_t* words() { return word; }
  CUMULUS_HD std::int64_t limb(int l) const { return word[l]; }
  CUMULUS_HD std::int64_t overflow() const { return word[kExactSumLimbs]; }

  CUMULUS_HD friend ExactSum operator+(const ExactSum& a, const ExactSum& b) {
    ExactSum r;
    for (int w = 0; w < kWords; ++w) r.word[w] = a.word[w] + b.word[w];
    return r;
  }

  // One term, given in units of 2^e (x times 2^-e: the caller multiplies by that power of two,
  // which is exact), truncated toward zero to whole units. Each step of the split is exact:
  // trunc(a / 2^k) 2^k keeps a's bits above 2^k, and a minus it the rest. No library calls (a
  // kernel calls this once per cell): powers of two as literals, truncation by conversion.
  CUMULUS_HD static ExactSum of_units(double x) {
    ExactSum r;
    double a = x < 0 ? -x : x;
    static_assert(kExactSumLimbs == 5, "the literals below are 2^159, 2^128 = 2^(32 (kExactSumLimbs - 1))");
    if (!(a < 0x1p159)) {  // 2^kExactSumBits: too large, or NaN
      r.word[kExactSumLimbs] = 1;
      return r;
    }
    const std::int64_t sign = x < 0 ? -1 : 1;
    double unit = 0x1p128, inv = 0x1p-128;  // 2^(32 l) and its inverse, l = 4 .. 0
    for (int l = kExactSumLimbs - 1; l >= 0; --l) {
      const auto d = static_cast<std::int64_t>(a * inv);  // < 2^32 below the top limb, < 2^31 at it
      a -= static_cast<double>(d) * unit;
      r.word[l] = sign * d;
      unit *= 0x1p-32;
      inv *= 0x1p32;
    }
    return r;
  }
  // One term in units of 2^e rounded toward minus infinity (floor) rather than toward zero: the
  // rounding of a fixed-point split that takes each term's floor (md's thermo sums).
  CUMULUS_HD static ExactSum of_units_floor(double x) {
    ExactSum r = of_units(x);
    if (x < 0 && r.overflow() == 0 && x != ::floor(x)) r.word[0] -= 1;  // trunc(x) - 1 = floor(x)
    return r;
  }
  // The same from x itself (outside hot loops: one library call).
  static ExactSum of(double x, int e) { return of_units(::ldexp(x, -e)); }

  // The sum as a double, false on overflow. Carries are first propagated as integers, leaving every
  // limb but the top one in [0, 2^32), so each converts to a double exactly (a limb of many terms
  // may hold up to 2^63 and would round), and a cancellation between limbs of opposite sign loses
  // nothing: the result is the exact sum rounded to within a few ulps.
  bool value(int e, double* out) const {
    if (overflow() != 0) return false;
    std::int64_t v[kExactSumLimbs];
    for (int l = 0; l < kExactSumLimbs; ++l) v[l] = word[l];
    for (int l = 0; l + 1 < kExactSumLimbs; ++l) {
      const std::int64_t carry = v[l] >> 32;  // floor division by 2^32
      v[l] -= carry * (std::int64_t{1} << 32);
      v[l + 1] += carry;
    }
    double r = 0;
    for (int l = kExactSumLimbs - 1; l >= 0; --l) r += ::ldexp(static_cast<double>(v[l]), e + 32 * l);
    *out = r;
    return true;
  }

  // The sum as a double rounded correctly (to nearest, ties to even), false on overflow: the
  // limbs as one signed integer, its top 96 bits (with a sticky bit for any below them) converted
  // once. value() may differ from it in the last bit; new code should prefer this.
  bool value_rounded(int e, double* out) const {
    if (overflow() != 0) return false;
    std::int64_t v[kExactSumLimbs];
    for (int l = 0; l < kExactSumLimbs; ++l) v[l] = word[l];
    for (int l = 0; l + 1 < kExactSumLimbs; ++l) {  // limbs 0 .. 3 into [0, 2^32), the sign in the top
      const std::int64_t carry = v[l] >> 32;
      v[l] -= carry * (std::int64_t{1} << 32);
      v[l + 1] += carry;
    }
    const bool negative = v[kExactSumLimbs - 1] < 0;
    if (negative) {  // the magnitude: two's complement over the limbs (all of them then in [0, 2^32))
      std::int64_t borrow = 0;
      for (int l = 0; l < kExactSumLimbs; ++l) {
        std::int64_t x = -v[l] - borrow;
        borrow = 0;
        if (l + 1 < kExactSumLimbs && x < 0) {
          x += std::int64_t{1} << 32;
          borrow = 1;
        }
        v[l] = x;
      }
    }
    int h = kExactSumLimbs - 1;
    while (h > 0 && v[h] == 0) --h;
    double r;
    if (h < 2) {  // below 2^64: exact in 128 bits, one conversion
      const unsigned __int128 m = (static_cast<unsigned __int128>(v[1]) << 32) | static_cast<unsigned __int128>(v[0]);
      r = ::ldexp(static_cast<double>(m), e);
    } else {
      // At least 65 significant bits in the top three limbs: bit 0 lies below the rounding point,
      // so setting it for any lower limb that is not zero makes the one rounding correct.
      unsigned __int128 m = (static_cast<unsigned __int128>(v[h]) << 64) | (static_cast<unsigned __int128>(v[h - 1]) << 32) |
                            static_cast<unsigned __int128>(v[h - 2]);
      bool sticky = false;
      for (int l = 0; l < h - 2; ++l) sticky = sticky || v[l] != 0;
      if (sticky) m |= 1;
      r = ::ldexp(static_cast<double>(m), e + 32 * (h - 2));
    }
    *out = negative ? -r : r;
    return true;
  }
};

}  // namespace cumulus
