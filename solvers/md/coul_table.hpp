#pragma once
// The tabulated real-space Ewald function of lj/cut/coul/long and coul/long (md.coul_table, the
// default): h(s) = erf(alpha r) / r as a function of s = r^2, in piecewise polynomials.
//
// Why r^2 and erf: erfc(alpha r) / r = 1 / r - h(s), and h is an even, entire function of r, so a
// smooth function of s with no singularity at 0 (h(s) = alpha H(alpha^2 s), H(u) = (2 / sqrt(pi))
// int_0^1 exp(-u t^2) dt, whose n-th derivative is at most (2 / sqrt(pi)) / (2n + 1)). A pair then
// needs 1 / sqrt(s) and one polynomial, no exp and no erfc, in a loop the compiler vectorises. The
// pair's terms with the special factor f (1 for a plain pair):
//   energy   qqr2e q_i q_j (f / r - h(s))                   (= f erfc/r - (1 - f) erf/r)
//   F / r    qqr2e q_i q_j (f / r^3 + 2 h'(s))
// An excluded pair (f = 0) has no 1 / r at all: its k-space correction is exact at any distance.
//
// The table: n intervals of equal width in s on [0, cut2], each a degree-7 polynomial in x in
// [-1, 1] (x = 2 (s / ds - k) - 1), its 8 coefficients one 64-byte line; h'(s) is the derivative of
// the same polynomial (force and energy consistent: force is minus the gradient of the tabulated
// energy). The polynomial interpolates h at the interval's 8 Chebyshev points; the intervals are at
// most 1/8 wide in u = alpha^2 s, where the interpolation error is below 3e-18 of H (the bound
// above), so the table is as exact as double allows: measured against hd::erfc in
// tests/unit/test_coul_table.cpp. Evaluation is plain +, * and a truncation to int: the same bits on
// the host and CUDA.
//
// md.precision = "mixed" has a table of its own in fp32 (coul_table_build32): degree 3 (4
// coefficients, a 16-byte line) on intervals at most 1/32 wide in u, interpolating at 4 Chebyshev
// points. fp32 rounds h to about 1e-7 of itself anyway, and degree 3 on these intervals errs less than
// that (the interpolation bound: (w/2)^4 / (2^3 4!) 1/9 with w = 1/32), so it is as exact as the
// degree-7 lines rounded to fp32 were: the force's erfc part within about 4e-9 kcal/mol/A per unit
// charge product and A^3 at alpha 0.28 and 10 A (1e-7 at alpha 0.9 and 3 A: 1.1-1.75x the rounded
// lines' error), measured in tests/unit/test_md_coulomb.cpp. Half the line and a shorter Horner
// chain are a tenth of the mixed pair loop's work.
#include <vector>

#include "core/macros.hpp"

namespace cumulus::md {

constexpr int kCoulTableDegree = 7;  // coul_table_eval is written out for it
constexpr int kCoulTableStride = kCoulTableDegree + 1;
constexpr int kCoulTable32Degree = 3;  // the fp32 table's (mixed precision)
constexpr int kCoulTable32Stride = kCoulTable32Degree + 1;

// R: double (degree 7), or float for md.precision = "mixed" (degree 3: coul_table_build32).
template <class R>
struct CoulTableViewT {
  const R* c = nullptr;  // n * kCoulTableStride (float: kCoulTable32Stride) coefficients, lowest order first
  R inv_ds = 0;          // 1 / interval width in s
  R smax = 0;            // the table's end (cut2): s is clamped to it
  int n = 0;
};
using CoulTableView = CoulTableViewT<double>;

// The table for alpha and cut2 (host memory): n and inv_ds are set.
std::vector<double> coul_table_build(double alpha, double cut2, int* n, double* inv_ds);
// The fp32 table of degree 3 (mixed precision), likewise.
std::vector<float> coul_table_build32(double alpha, double cut2, int* n, double* inv_ds);

// h(s) and h'(s), s in [0, inf): beyond smax the end of the table (the caller masks those pairs).
template <class R>
CUMULUS_HD inline void coul_table_eval(const CoulTableViewT<R>& t, R s, R* h, R* dh) {
  const R v = (s < t.smax ? s : t.smax) * t.inv_ds;
  int k = static_cast<int>(v);
  if (k > t.n - 1) k = t.n - 1;
  const R x = 2 * (v - static_cast<R>(k)) - 1;
  if constexpr (sizeof(R) == sizeof(float)) {  // the fp32 table: degree 3
    const R* c = t.c + k * kCoulTable32Stride;
    R p = c[3], d = p;
    p = p * x + c[2];
    d = d * x + p;
    p = p * x + c[1];
    d = d * x + p;
    p = p * x + c[0];
    *h = p;
    *dh = d * (2 * t.inv_ds);
  } else {
    const R* c = t.c + k * kCoulTableStride;
    // Horner for the polynomial and its derivative, written out (a loop here kept the caller's loop
    // from vectorising).
    R p = c[7], d = p;
    p = p * x + c[6];
    d = d * x + p;
    p = p * x + c[5];
    d = d * x + p;
    p = p * x + c[4];
    d = d * x + p;
    p = p * x + c[3];
    d = d * x + p;
    p = p * x + c[2];
    d = d * x + p;
    p = p * x + c[1];
    d = d * x + p;
    p = p * x + c[0];
    *h = p;
    *dh = d * (2 * t.inv_ds);
  }
}

}  // namespace cumulus::md
