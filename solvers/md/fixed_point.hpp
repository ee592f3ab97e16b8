#pragma once
// Fixed-point pair sums (md.precision = "mixed"): each pair's fp64 terms (a force component, an
// energy, a virial) rounded once to an integer number of units of 2^-24 and summed as 64-bit
// integers, as OpenMM accumulates forces. Integer addition does not depend on the order of its
// terms, so a pair loop may visit pairs in any order, once (a half list, Newton's third law, any
// number of threads) or twice (a full list, CUDA), and every atom's sum has the same bits: at any
// rank count, thread count, list and backend. The rounding is to nearest, ties to even, so a
// pair's two atoms get exactly opposite terms (round(-x) = -round(x)).
//
// Range: a term must be at most 2^26 = 6.7e7 in magnitude (the units' force or energy: kcal/mol/A
// in real units; two SPC/E oxygens 0.8 A apart, whose step of 2 fs would fling them thousands of
// A, in double as well). A term beyond it, or NaN, marks its atoms' sums bad: the force call
// writes NaN there and the health check stops the run naming the atom, rather than a silent
// clamp. Resolution: 2^-24 = 6e-8 per term, an fp32 term's own rounding at magnitude 1; the
// rounding errors are unbiased and independent (an atom's sum over 1,000 pairs: about 5e-7, against
// forces of 10-100 in liquid water). A sum holds 2^39 = 5.5e11: 8,192 terms at the limit.
#include <cstdint>

#include "core/atomic.hpp"
#include "core/exact_sum.hpp"
#include "core/hd_math.hpp"
#include "core/kernel_pass.hpp"
#include "solvers/md/md_kernels.hpp"

namespace cumulus::md::fixed {

inline constexpr double kUnit = 0x1p24;       // units per 1
inline constexpr double kInvUnit = 0x1p-24;   // 1 per unit
inline constexpr double kLimit = 0x1p50;      // the largest term, in units (2^26)
// x + 1.5 * 2^52 holds round(x) in its low mantissa bits for |x| < 2^51: the conversion without a
// library call (the host's SIMD loop does the same on 4 lanes).
inline constexpr double kMagic = 0x1.8p52;
inline constexpr std::uint64_t kMagicBits = 0x4338000000000000ULL;

// v in units, rounded to nearest (ties to even); false (and 0) when |v| > 2^26 or NaN.
CUMULUS_HD inline bool units(double v, std::int64_t* out) {
  const double s = v * kUnit;  // exact: a power of two
  if (!(s <= kLimit && s >= -kLimit)) {
    *out = 0;
    return false;
  }
  *out = static_cast<std::int64_t>(hd::detail::to_bits(s + kMagic) - kMagicBits);
  return true;
}

// A sum of units back to a double (exact below 2^53 units; rounded to nearest above), NaN if bad.
CUMULUS_HD inline double value(std::int64_t sum, bool bad, double factor = 1.0) {
  return bad ? hd::detail::from_bits(0x7ff8000000000000ULL) : static_cast<double>(sum) * (factor * kInvUnit);
}

// A sum of units taken as half (times 2^-25) as an ExactSum in units of 2^e (e <= -25), exactly:
// its two 32-bit halves convert to doubles without rounding.
CUMULUS_HD inline ExactSum exact_half_units(std::int64_t sum, int e) {
  const double scale = hd::detail::from_bits(static_cast<std::uint64_t>(1023 - 25 - e) << 52);  // 2^(-25 - e)
  const std::int64_t hi = sum >> 32;                                                            // floor
  const std::int64_t lo = sum - hi * 4294967296;                                                // [0, 2^32)
  return ExactSum::of_units(static_cast<double>(hi) * (scale * 4294967296.0)) +
         ExactSum::of_units(static_cast<double>(lo) * scale);
}

// Atom i's sums s (force x, y, z, energy, virial in units) into its arrays: NaN where bad (bit 0
// the force, bit 1 the energy and virial); each atom's half of its pairs' energies and virials.
CUMULUS_HD inline void store_sums(const Atoms& a, int i, const std::int64_t* s, int bad, bool energy) {
  a.fx[i] = value(s[0], bad & 1);
  a.fy[i] = value(s[1], bad & 1);
  a.fz[i] = value(s[2], bad & 1);
  if (energy) {
    a.pe[i] = value(s[3], bad & 2, 0.5);
    a.virial[i] = value(s[4], bad & 2, 0.5);
  }
}

// A local atom's sums as one row (Atoms::fixed_rows: Newton's third law across ranks): force x,
// y, z, energy and virial in units, then how many of its pairs had a force term, and how many an
// energy or virial term, out of range. Rows add as integers: a ghost's row joins its owner's in
// any order, with the same bits.
inline constexpr int kRow = 7;

// Adds sums t (force x, y, z, and with `energy` energy and virial, in units) and bad bits (as
// store_sums') into local atom i's row, atomically: several threads may share an atom's pairs
// (the generic full-list loop), and integer additions in any order give the same row.
CUMULUS_HD inline void add_row(std::int64_t* rows, int i, const std::int64_t* t, int bad, bool energy) {
  std::int64_t* const r = rows + static_cast<std::ptrdiff_t>(kRow) * i;
  for (int w = 0; w < (energy ? 5 : 3); ++w)
    if (t[w] != 0) atomic_add(r + w, t[w]);
  if (bad & 1) atomic_add(r + 5, 1);
  if (bad & 2) atomic_add(r + 6, 1);
}

// Local atom i's row into its arrays, as store_sums.
CUMULUS_HD inline void store_row(const Atoms& a, int i, const std::int64_t* rows, bool energy) {
  const std::int64_t* const r = rows + static_cast<std::ptrdiff_t>(kRow) * i;
  store_sums(a, i, r, (r[5] != 0 ? 1 : 0) | (r[6] != 0 ? 2 : 0), energy);
}

#if !defined(__CUDACC__)
// Local atom i's sums t (force x, y, z, energy, virial in units) and bad bits (as store_sums')
// into its row.
inline void put_row(std::int64_t* rows, int i, const std::int64_t* t, std::int64_t bad) {
  std::int64_t* const r = rows + static_cast<std::size_t>(kRow) * i;
  for (int w = 0; w < 5; ++w) r[w] = t[w];
  r[5] = bad & 1;
  r[6] = (bad >> 1) & 1;
}

// The owned atoms' rows (their ghosts' rows already added) into their arrays, as store_sums.
inline void store_rows(const Atoms& a, const std::int64_t* rows) {
  for (int i = 0; i < a.n; ++i) store_row(a, i, rows, a.energy);
}

// The same for a 128-bit sum (the host's per-thread totals of many atoms' terms).
inline ExactSum exact_half_units(__int128 sum, int e) {
  const auto part = [](__int128 v) { return static_cast<std::int64_t>(v); };
  const std::int64_t hi = part(sum >> 64);
  const std::int64_t mid = part((sum >> 32) & 0xffffffff), lo = part(sum & 0xffffffff);
  const double scale = hd::detail::from_bits(static_cast<std::uint64_t>(1023 - 25 - e) << 52);
  return ExactSum::of_units(static_cast<double>(hi) * (scale * 0x1p64)) +
         ExactSum::of_units(static_cast<double>(mid) * (scale * 0x1p32)) + ExactSum::of_units(static_cast<double>(lo) * scale);
}
#endif

}  // namespace cumulus::md::fixed
