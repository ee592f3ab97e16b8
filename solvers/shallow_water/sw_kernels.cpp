// Kernel bodies of the shallow-water solver (docs/shallow-water.md has the equations).
// One source compiled per backend; no transcendental functions here, only +, -, *, / and sqrt,
// which CUDA (with --fmad=false) rounds exactly as the host does: the backends agree bit for bit.
#include <cstdint>
#include <limits>

#include "solvers/shallow_water/sw_kernels.hpp"

namespace cumulus::sw {
namespace kernels::CUMULUS_PASS {

namespace {
CUMULUS_HD inline double dot3(const double* a, const double* b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
// sqrt(g) g^{alpha alpha} = (1 + Y^2) / sqrt(1 + X^2 + Y^2) on the equiangular grid (and the
// transpose for beta): the diffusion coefficient of a face.
CUMULUS_HD inline double sg_gaa(double X, double Y) { return (1.0 + Y * Y) / sqrt(1.0 + X * X + Y * Y); }
CUMULUS_HD inline double sg_gbb(double X, double Y) { return (1.0 + X * X) / sqrt(1.0 + X * X + Y * Y); }
}  // namespace

// Per cell, ghosts included: q0 = sqrt(g) u^alpha, q1 = sqrt(g) u^beta (u^alpha = V . a^alpha / a,
// rad/s: the flux densities through alpha and beta faces per unit depth), q2 = Phi = g (h + hs) +
// |V|^2 / 2, q3 = V . a_alpha, q4 = V . a_beta (covariant, m/s).
void point_values(const Exec& ex, const Grid& g, const Physics& ph, const View<double>& s, const View<double>& hs,
                  const View<double>& q, const Box& box) {
  for_each(ex, "sw.points", box, [=] CUMULUS_HD(int i, int j, int k) {
    const CubePoint c = g.point(i, j, k);
    const double h = s(i, j, k, 0);
    const double V[3] = {s(i, j, k, 1), s(i, j, k, 2), s(i, j, k, 3)};
    const double inv_a = 1.0 / g.radius;
    q(i, j, k, 0) = c.sqrtg * (dot3(V, c.ua) * inv_a);
    q(i, j, k, 1) = c.sqrtg * (dot3(V, c.ub) * inv_a);
    q(i, j, k, 2) = ph.gravity * (h + hs(i, j, k)) + 0.5 * dot3(V, V);
    q(i, j, k, 3) = dot3(V, c.ca);
    q(i, j, k, 4) = dot3(V, c.cb);
  });
}

// l = D(s) per component on the interior: D(phi) = 1 / (A a^2) sum_faces c_f (phi_n - phi_c), the
// five-point diffusion operator of the cubed sphere's metric without its cross terms (a damping
// operator, exact for no field but positive and conservative). Hyperviscosity applies it twice.
void laplacian(const Exec& ex, const Grid& g, const View<double>& area, const View<double>& s,
               const View<double>& l, const Box& box) {
  for_each(ex, "sw.laplacian", box, [=] CUMULUS_HD(int i, int j, int k) {
    int p;
    double X, Y, Xw, Xe, Ys, Yn;
    g.locate(i, j, k, &p, &X, &Y);
    g.locate(i - 1, j - 1, k, &p, &Xw, &Ys);
    g.locate(i + 1, j + 1, k, &p, &Xe, &Yn);
    const double c = sg_gaa(X, Y), cb = sg_gbb(X, Y);
    const double ce = 0.5 * (c + sg_gaa(Xe, Y)), cw = 0.5 * (c + sg_gaa(Xw, Y));
    const double cn = 0.5 * (cb + sg_gbb(X, Yn)), cs = 0.5 * (cb + sg_gbb(X, Ys));
    const double inv = 1.0 / (area(i, j, k) * g.radius * g.radius);
    for (int m = 0; m < 4; ++m) {
      const double v = s(i, j, k, m);
      l(i, j, k, m) = inv * ((ce * (s(i + 1, j, k, m) - v) + cw * (s(i - 1, j, k, m) - v)) +
                             (cn * (s(i, j + 1, k, m) - v) + cs * (s(i, j - 1, k, m) - v)));
    }
  });
}

// Fluxes of h through every face of the tiles (box: the alpha faces' index range i in [0, nx],
// j in [0, ny) united with the beta faces' i in [0, nx), j in [0, ny]). Face (i, j) of fa lies
// between cells i-1 and i. The advective flux is d * U * h_f: U the centred flux density, h_f the
// third-order upwind-biased value along the grid line (-h_uu + 5 h_u + 2 h_d) / 6, whose
// dissipation (a fourth derivative, |U| d^3 / 12) keeps a centred scheme's dispersive ripples
// off sharp features such as the cosine bell. With hyperviscosity, plus the flux of nu D(D(h)).
void fluxes(const Exec& ex, const Grid& g, const Physics& ph, const View<double>& s, const View<double>& q,
            const View<double>& l, const View<double>& fa, const View<double>& fb, const Box& box) {
  const double d = g.dangle, nu_a2 = ph.nu / (g.radius * g.radius);
  const int nx = g.nx, ny = g.ny;
  const double sixth = 1.0 / 6.0, twelfth = 1.0 / 12.0;
  for_each(ex, "sw.fluxes", box, [=] CUMULUS_HD(int i, int j, int k) {
    int p;
    double X, Y, Xw, Ys;
    g.locate(i, j, k, &p, &X, &Y);
    g.locate(i - 1, j - 1, k, &p, &Xw, &Ys);
    if (j < ny) {
      const double U = (7.0 * (q(i - 1, j, k, 0) + q(i, j, k, 0)) - (q(i - 2, j, k, 0) + q(i + 1, j, k, 0))) * twelfth;
      const double hf = (7.0 * (s(i - 1, j, k, 0) + s(i, j, k, 0)) - (s(i - 2, j, k, 0) + s(i + 1, j, k, 0))) * twelfth;
      double f = d * (U * hf);
      if (nu_a2 > 0) f += nu_a2 * (0.5 * (sg_gaa(Xw, Y) + sg_gaa(X, Y))) * (l(i, j, k, 0) - l(i - 1, j, k, 0));
      fa(i, j, k) = f;
    }
    if (i < nx) {
      const double U = (7.0 * (q(i, j - 1, k, 1) + q(i, j, k, 1)) - (q(i, j - 2, k, 1) + q(i, j + 1, k, 1))) * twelfth;
      const double hf = (7.0 * (s(i, j - 1, k, 0) + s(i, j, k, 0)) - (s(i, j - 2, k, 0) + s(i, j + 1, k, 0))) * twelfth;
      double f = d * (U * hf);
      if (nu_a2 > 0) f += nu_a2 * (0.5 * (sg_gbb(X, Ys) + sg_gbb(X, Y))) * (l(i, j, k, 0) - l(i, j - 1, k, 0));
      fb(i, j, k) = f;
    }
  });
}

// ds = d(h, V)/dt on the interior:
//   dh/dt = -(1/A) sum of outward face fluxes (reconciled across panel edges beforehand);
//   dV/dt = -(zeta + f) r x V - grad Phi - nu D(D(V)), projected onto the tangent plane;
// zeta = (d_alpha v_beta - d_beta v_alpha) / (a sqrt g) and grad Phi = (a^alpha d_alpha Phi +
// a^beta d_beta Phi) / a, with centred differences over the ghost-filled neighbours.
void tendency(const Exec& ex, const Grid& g, const Physics& ph, const View<double>& area, const View<double>& s,
              const View<double>& q, const View<double>& l, const View<double>& fa, const View<double>& fb,
              const View<double>& ds, const Box& box) {
  const double d = g.dangle;
  for_each(ex, "sw.tendency", box, [=] CUMULUS_HD(int i, int j, int k) {
    const double A = area(i, j, k);
    ds(i, j, k, 0) = -((fa(i + 1, j, k) - fa(i, j, k)) + (fb(i, j + 1, k) - fb(i, j, k))) / A;
    if (ph.advection_only) {
      ds(i, j, k, 1) = 0;
      ds(i, j, k, 2) = 0;
      ds(i, j, k, 3) = 0;
      return;
    }
    const CubePoint c = g.point(i, j, k);
    // Fourth-order centred differences along the grid lines (the duo-grid ghosts continue them).
    const double inv12d = 1.0 / (12.0 * d);
    auto da = [&](int m) {
      return (8.0 * (q(i + 1, j, k, m) - q(i - 1, j, k, m)) - (q(i + 2, j, k, m) - q(i - 2, j, k, m))) * inv12d;
    };
    auto db = [&](int m) {
      return (8.0 * (q(i, j + 1, k, m) - q(i, j - 1, k, m)) - (q(i, j + 2, k, m) - q(i, j - 2, k, m))) * inv12d;
    };
    const double dpa = da(2), dpb = db(2);
    const double zeta = (da(4) - db(3)) / (g.radius * c.sqrtg);
    const double f = dot3(ph.coriolis, c.r);
    const double V[3] = {s(i, j, k, 1), s(i, j, k, 2), s(i, j, k, 3)};
    const double rxV[3] = {c.r[1] * V[2] - c.r[2] * V[1], c.r[2] * V[0] - c.r[0] * V[2], c.r[0] * V[1] - c.r[1] * V[0]};
    const double inv_a = 1.0 / g.radius;
    double dv[3];
    for (int m = 0; m < 3; ++m) dv[m] = -(zeta + f) * rxV[m] - (c.ua[m] * dpa + c.ub[m] * dpb) * inv_a;
    if (ph.nu > 0) {
      int p;
      double X, Y, Xw, Xe, Ys, Yn;
      g.locate(i, j, k, &p, &X, &Y);
      g.locate(i - 1, j - 1, k, &p, &Xw, &Ys);
      g.locate(i + 1, j + 1, k, &p, &Xe, &Yn);
      const double ca = sg_gaa(X, Y), cb = sg_gbb(X, Y);
      const double ce = 0.5 * (ca + sg_gaa(Xe, Y)), cw = 0.5 * (ca + sg_gaa(Xw, Y));
      const double cn = 0.5 * (cb + sg_gbb(X, Yn)), cs = 0.5 * (cb + sg_gbb(X, Ys));
      const double scale = ph.nu / (A * g.radius * g.radius);
      for (int m = 0; m < 3; ++m) {
        const double v = l(i, j, k, m + 1);
        dv[m] -= scale * ((ce * (l(i + 1, j, k, m + 1) - v) + cw * (l(i - 1, j, k, m + 1) - v)) +
                          (cn * (l(i, j + 1, k, m + 1) - v) + cs * (l(i, j - 1, k, m + 1) - v)));
      }
    }
    const double radial = dot3(dv, c.r);
    for (int m = 0; m < 3; ++m) ds(i, j, k, m + 1) = dv[m] - radial * c.r[m];
  });
}

// Classical RK4 in two kernels. A stage: acc = ds (first) or acc + w ds; stage = u + stage_dt ds.
void rk_stage(const Exec& ex, const View<double>& u, const View<double>& ds, const View<double>& acc,
              const View<double>& stage, const Box& box, double acc_weight, bool first, double stage_dt) {
  for_each(ex, "sw.rk", box, [=] CUMULUS_HD(int i, int j, int k) {
    for (int m = 0; m < 4; ++m) {
      const double t = ds(i, j, k, m);
      acc(i, j, k, m) = first ? t : acc(i, j, k, m) + acc_weight * t;
      stage(i, j, k, m) = u(i, j, k, m) + stage_dt * t;
    }
  });
}

// u += dt/6 (k1 + 2 k2 + 2 k3 + k4), with acc = k1 + 2 k2 + 2 k3 and ds = k4.
void rk_final(const Exec& ex, const View<double>& u, const View<double>& ds, const View<double>& acc, const Box& box,
              double dt6) {
  for_each(ex, "sw.rk", box, [=] CUMULUS_HD(int i, int j, int k) {
    for (int m = 0; m < 4; ++m) u(i, j, k, m) = u(i, j, k, m) + dt6 * (acc(i, j, k, m) + ds(i, j, k, m));
  });
}

// Relative vorticity (1/s) on the interior from ghost-filled velocities (the tendency's formula).
void vorticity(const Exec& ex, const Grid& g, const View<double>& s, const View<double>& w, const Box& box) {
  const double inv2d = 1.0 / (2.0 * g.dangle);
  for_each(ex, "sw.vorticity", box, [=] CUMULUS_HD(int i, int j, int k) {
    auto cov = [&](int a, int b, bool alpha) {
      const CubePoint c = g.point(a, b, k);
      const double V[3] = {s(a, b, k, 1), s(a, b, k, 2), s(a, b, k, 3)};
      return alpha ? dot3(V, c.ca) : dot3(V, c.cb);
    };
    const CubePoint c = g.point(i, j, k);
    w(i, j, k) = ((cov(i + 1, j, false) - cov(i - 1, j, false)) - (cov(i, j + 1, true) - cov(i, j - 1, true))) * inv2d /
                 (g.radius * c.sqrtg);
  });
}

// The smallest linear index ((k - box.lo2) ny + j) nx + i of a cell with a non-finite value, or
// (depth_positive) a depth <= 0; INT64_MAX when there is none.
std::int64_t first_bad_cell(const Exec& ex, const View<double>& s, const Box& box, bool depth_positive) {
  const std::int64_t nx = box.size(0), ny = box.size(1);
  const int k0 = box.lo[2];
  return reduce(ex, "sw.health", box, std::numeric_limits<std::int64_t>::max(), MinOp{},
                [=] CUMULUS_HD(int i, int j, int k) -> std::int64_t {
                  const double h = s(i, j, k, 0);
                  const double sum = h + s(i, j, k, 1) + s(i, j, k, 2) + s(i, j, k, 3);
                  const bool bad = !(sum - sum == 0) || (depth_positive && !(h > 0));
                  return bad ? ((k - k0) * ny + j) * nx + i : std::numeric_limits<std::int64_t>::max();
                });
}

}  // namespace kernels::CUMULUS_PASS
}  // namespace cumulus::sw
