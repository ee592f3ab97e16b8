// The table of coul_table.hpp: Chebyshev interpolation of h(s) = erf(alpha sqrt(s)) / sqrt(s) on
// each interval, converted to monomials in the interval's x.
#include "solvers/md/coul_table.hpp"

#include <algorithm>
#include <cmath>

namespace cumulus::md {

namespace {

// erf(x) / x for x >= 0 in long double (the 64-bit significand of x86; quad elsewhere): the table's
// derivative amplifies its nodes' errors (by up to the degree squared), so the nodes, the
// interpolation and the conversion carry more bits than the double coefficients they round to.
// Below 1/2, the Taylor series (alternating, terms falling by x^2 / n at least: no cancellation).
long double erf_over_x(long double x) {
  if (x < 0.5L) {
    const long double u = x * x;
    long double term = 1, sum = 1;  // term_n = (-u)^n / n!
    for (int n = 1; n < 60; ++n) {
      term *= -u / n;
      const long double t = term / (2 * n + 1);
      sum += t;
      if (std::fabs(t) < 1e-24L) break;
    }
    return 2 / std::sqrt(std::acos(-1.0L)) * sum;
  }
  return std::erf(x) / x;
}

// `per_u` intervals per unit of u = alpha^2 s (at least 8), each interpolated at N Chebyshev points
// and converted to N monomial coefficients in the interval's x (long double).
template <int N>
std::vector<long double> chebyshev_lines(double alpha, double cut2, int per_u, int* n, double* inv_ds) {
  const double U = alpha * alpha * cut2;
  const int count = std::max(8, static_cast<int>(std::ceil(U * per_u)));
  *n = count;
  *inv_ds = count / cut2;
  // Monomial coefficients of the Chebyshev polynomials T_0 .. T_{N-1} (T_{k+1} = 2x T_k - T_{k-1}).
  long double T[N][N] = {};
  T[0][0] = 1;
  T[1][1] = 1;
  for (int k = 1; k + 1 < N; ++k)
    for (int m = 0; m < N; ++m) T[k + 1][m] = (m > 0 ? 2 * T[k][m - 1] : 0) - T[k - 1][m];
  std::vector<long double> c(static_cast<std::size_t>(count) * N, 0.0L);
  for (int k = 0; k < count; ++k) {
    const long double pi = std::acos(-1.0L), lds = static_cast<long double>(cut2) / count, la = alpha;
    long double f[N];
    for (int j = 0; j < N; ++j) {
      const long double xj = std::cos(pi * (j + 0.5L) / N);
      const long double s = (k + 0.5L * (xj + 1)) * lds;
      f[j] = la * erf_over_x(la * std::sqrt(s));
    }
    // Chebyshev coefficients a_q = (2/N) sum_j f_j T_q(x_j) (a_0 halved), T_q(x_j) = cos(q theta_j).
    long double a[N];
    for (int q = 0; q < N; ++q) {
      long double sum = 0;
      for (int j = 0; j < N; ++j) sum += f[j] * std::cos(q * pi * (j + 0.5L) / N);
      a[q] = (q == 0 ? 1.0L : 2.0L) / N * sum;
    }
    long double* out = c.data() + static_cast<std::size_t>(k) * N;
    for (int m = 0; m < N; ++m) {
      long double sum = 0;
      for (int q = m; q < N; ++q) sum += a[q] * T[q][m];
      out[m] = sum;
    }
  }
  return c;
}

}  // namespace

std::vector<double> coul_table_build(double alpha, double cut2, int* n, double* inv_ds) {
  // Intervals at most 1/8 wide in u = alpha^2 s (coul_table.hpp).
  const std::vector<long double> c = chebyshev_lines<kCoulTableStride>(alpha, cut2, 8, n, inv_ds);
  return std::vector<double>(c.begin(), c.end());
}

std::vector<float> coul_table_build32(double alpha, double cut2, int* n, double* inv_ds) {
  // Intervals at most 1/32 wide in u (coul_table.hpp).
  const std::vector<long double> c = chebyshev_lines<kCoulTable32Stride>(alpha, cut2, 32, n, inv_ds);
  return std::vector<float>(c.begin(), c.end());
}

}  // namespace cumulus::md
