// Kernel bodies of the shallow-water solver (docs/shallow-water.md has the equations).
// One source compiled per backend; no transcendental functions here, only +, -, *, / and sqrt,
// which CUDA (with --fmad=false) rounds exactly as the host does: the backends agree bit for bit.
#include <cstdint>

#include "solvers/shallow_water/sw_kernels.hpp"

namespace cumulus::sw {
namespace kernels::CUMULUS_PASS {

namespace {
CUMULUS_HD inline double dot3(const double* a, const double* b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
// Sixth-order centred difference along a grid line, times 60 d: the duo-grid ghosts (three layers)
// continue the lines across panel edges, so the same stencil serves every cell. Sixth and not fourth
// order because the cube's wavenumber-4 imprint on a balanced jet comes in part from the interior
// truncation error (validation/climate/README.md: the unperturbed Galewsky jet at C96 reached 541 m
// at day 6 with fourth order, 341 m with sixth; 191 m once each panel also keeps its own edge flux).
CUMULUS_HD inline double diff6(double m3, double m2, double m1, double p1, double p2, double p3) {
  return 45.0 * (p1 - m1) - 9.0 * (p2 - m2) + (p3 - m3);
}
// Sixth-order value midway between c0 and c1, times 60 (neighbours c_{-2}, c_{-1} and c2, c3 beyond):
// the difference of two neighbouring midpoints is diff6, so the flux form keeps the order.
CUMULUS_HD inline double mid6(double cm2, double cm1, double c0, double c1, double c2, double c3) {
  return 37.0 * (c0 + c1) - 8.0 * (cm1 + c2) + (cm2 + c3);
}
}  // namespace

// Per cell, ghosts included: q0 = sqrt(g) h u^alpha, q1 = sqrt(g) h u^beta (u^alpha = V . a^alpha / a,
// rad/s: the mass flux densities through alpha and beta faces), q2 = Phi = g (h + hs) +
// |V|^2 / 2, q3 = V . a_alpha, q4 = V . a_beta (covariant, m/s).
void point_values(const Exec& ex, const Grid& g, const Physics& ph, const View<double>& m, const View<double>& s,
                  const View<double>& hs, const View<double>& q, const Box& box) {
  const double inv_a = 1.0 / g.radius;
  for_each(ex, "sw.points", box, [=] CUMULUS_HD(int i, int j, int k) {
    const double h = s(i, j, k, 0);
    const double V0 = s(i, j, k, 1), V1 = s(i, j, k, 2), V2 = s(i, j, k, 3);
    auto dotm = [&](int c) { return V0 * m(i, j, k, c) + V1 * m(i, j, k, c + 1) + V2 * m(i, j, k, c + 2); };
    const double sg = m(i, j, k, kSqrtG);
    q(i, j, k, 0) = sg * h * (dotm(kUA) * inv_a);
    q(i, j, k, 1) = sg * h * (dotm(kUB) * inv_a);
    q(i, j, k, 2) = ph.gravity * (h + hs(i, j, k)) + 0.5 * (V0 * V0 + V1 * V1 + V2 * V2);
    q(i, j, k, 3) = dotm(kCA);
    q(i, j, k, 4) = dotm(kCB);
  });
}

// l = D(s) per component on the interior: D(phi) = 1 / (A a^2) sum_faces c_f (phi_n - phi_c), the
// five-point diffusion operator of the cubed sphere's metric without its cross terms (a damping
// operator, exact for no field but positive and conservative). Hyperviscosity applies it twice.
void laplacian(const Exec& ex, const Grid& g, const View<double>& m, const View<double>& area, const View<double>& s,
               const View<double>& l, const Box& box) {
  const double inv_a2 = 1.0 / (g.radius * g.radius);
  for_each(ex, "sw.laplacian", box, [=] CUMULUS_HD(int i, int j, int k) {
    const double ca = m(i, j, k, kSgAA), cb = m(i, j, k, kSgBB);
    const double ce = 0.5 * (ca + m(i + 1, j, k, kSgAA)), cw = 0.5 * (ca + m(i - 1, j, k, kSgAA));
    const double cn = 0.5 * (cb + m(i, j + 1, k, kSgBB)), cs = 0.5 * (cb + m(i, j - 1, k, kSgBB));
    const double inv = inv_a2 / area(i, j, k);
    for (int c = 0; c < 4; ++c) {
      const double v = s(i, j, k, c);
      l(i, j, k, c) = inv * ((ce * (s(i + 1, j, k, c) - v) + cw * (s(i - 1, j, k, c) - v)) +
                             (cn * (s(i, j + 1, k, c) - v) + cs * (s(i, j - 1, k, c) - v)));
    }
  });
}

// Fluxes of h through every face of the tiles (box: the alpha faces' index range i in [0, nx],
// j in [0, ny) united with the beta faces' i in [0, nx), j in [0, ny]). Face (i, j) of fa lies
// between cells i-1 and i. The advective flux is d times the sixth-order face value of
// sqrt(g) h u^alpha along the grid line, (37 (q_{i-1} + q_i) - 8 (q_{i-2} + q_{i+1}) + (q_{i-3} + q_{i+2})) / 60:
// the difference of two such fluxes is exactly the sixth-order centred derivative
// (45 (q_{i+1} - q_{i-1}) - 9 (q_{i+2} - q_{i-2}) + (q_{i+3} - q_{i-3})) / 60, so the flux form costs no order. With
// hyperviscosity, plus the flux of nu D(D(h)).
void fluxes(const Exec& ex, const Grid& g, const Physics& ph, const View<double>& m, const View<double>& q, const View<double>& l, const View<double>& fa, const View<double>& fb,
            const Box& box) {
  const double d60 = g.dangle / 60.0, nu_a2 = ph.nu / (g.radius * g.radius);
  const int nx = g.nx, ny = g.ny;
  for_each(ex, "sw.fluxes", box, [=] CUMULUS_HD(int i, int j, int k) {
    if (j < ny) {
      double f = d60 * mid6(q(i - 3, j, k, 0), q(i - 2, j, k, 0), q(i - 1, j, k, 0), q(i, j, k, 0), q(i + 1, j, k, 0),
                            q(i + 2, j, k, 0));
      if (nu_a2 > 0)
        f += nu_a2 * (0.5 * (m(i - 1, j, k, kSgAA) + m(i, j, k, kSgAA))) * (l(i, j, k, 0) - l(i - 1, j, k, 0));
      fa(i, j, k) = f;
    }
    if (i < nx) {
      double f = d60 * mid6(q(i, j - 3, k, 1), q(i, j - 2, k, 1), q(i, j - 1, k, 1), q(i, j, k, 1), q(i, j + 1, k, 1),
                            q(i, j + 2, k, 1));
      if (nu_a2 > 0)
        f += nu_a2 * (0.5 * (m(i, j - 1, k, kSgBB) + m(i, j, k, kSgBB))) * (l(i, j, k, 0) - l(i, j - 1, k, 0));
      fb(i, j, k) = f;
    }
  });
}

// ds = d(h, V)/dt on the interior:
//   dh/dt = -(1/A) sum of outward face fluxes (each panel's own, also through panel edges);
//   dV/dt = -(zeta + f) r x V - grad Phi - nu D(D(V)), projected onto the tangent plane;
// zeta = (d_alpha v_beta - d_beta v_alpha) / (a sqrt g) and grad Phi = (a^alpha d_alpha Phi +
// a^beta d_beta Phi) / a, with sixth-order centred differences over the ghost-filled neighbours.
void tendency(const Exec& ex, const Grid& g, const Physics& ph, const View<double>& m, const View<double>& area,
              const View<double>& s, const View<double>& q, const View<double>& l, const View<double>& fa,
              const View<double>& fb, const View<double>& ds, const Box& box) {
  const double inv60d = 1.0 / (60.0 * g.dangle), inv_a = 1.0 / g.radius;
  const double inv_a2 = inv_a * inv_a;
  for_each(ex, "sw.tendency", box, [=] CUMULUS_HD(int i, int j, int k) {
    const double A = area(i, j, k);
    ds(i, j, k, 0) = -((fa(i + 1, j, k) - fa(i, j, k)) + (fb(i, j + 1, k) - fb(i, j, k))) / A;
    if (ph.advection_only) {
      ds(i, j, k, 1) = 0;
      ds(i, j, k, 2) = 0;
      ds(i, j, k, 3) = 0;
      return;
    }
    auto da = [&](int c) {
      return diff6(q(i - 3, j, k, c), q(i - 2, j, k, c), q(i - 1, j, k, c), q(i + 1, j, k, c), q(i + 2, j, k, c),
                   q(i + 3, j, k, c)) * inv60d;
    };
    auto db = [&](int c) {
      return diff6(q(i, j - 3, k, c), q(i, j - 2, k, c), q(i, j - 1, k, c), q(i, j + 1, k, c), q(i, j + 2, k, c),
                   q(i, j + 3, k, c)) * inv60d;
    };
    const double dpa = da(2), dpb = db(2);
    const double zeta = (da(4) - db(3)) * inv_a / m(i, j, k, kSqrtG);
    const double r[3] = {m(i, j, k, kR), m(i, j, k, kR + 1), m(i, j, k, kR + 2)};
    const double f = dot3(ph.coriolis, r);
    const double V[3] = {s(i, j, k, 1), s(i, j, k, 2), s(i, j, k, 3)};
    const double rxV[3] = {r[1] * V[2] - r[2] * V[1], r[2] * V[0] - r[0] * V[2], r[0] * V[1] - r[1] * V[0]};
    double dv[3];
    for (int c = 0; c < 3; ++c)
      dv[c] = -(zeta + f) * rxV[c] - (m(i, j, k, kUA + c) * dpa + m(i, j, k, kUB + c) * dpb) * inv_a;
    if (ph.nu > 0) {
      const double ca = m(i, j, k, kSgAA), cb = m(i, j, k, kSgBB);
      const double ce = 0.5 * (ca + m(i + 1, j, k, kSgAA)), cw = 0.5 * (ca + m(i - 1, j, k, kSgAA));
      const double cn = 0.5 * (cb + m(i, j + 1, k, kSgBB)), cs = 0.5 * (cb + m(i, j - 1, k, kSgBB));
      const double scale = ph.nu * inv_a2 / A;
      for (int c = 0; c < 3; ++c) {
        const double v = l(i, j, k, c + 1);
        dv[c] -= scale * ((ce * (l(i + 1, j, k, c + 1) - v) + cw * (l(i - 1, j, k, c + 1) - v)) +
                          (cn * (l(i, j + 1, k, c + 1) - v) + cs * (l(i, j - 1, k, c + 1) - v)));
      }
    }
    const double radial = dot3(dv, r);
    for (int c = 0; c < 3; ++c) ds(i, j, k, c + 1) = dv[c] - radial * r[c];
  });
}

// The net outflow of mass through the panel edges, sum of outward x flux over the panel-edge faces
// (every such face twice, once per side), as an exact (order-independent) sum in units of
// 1 / to_units (a power of two). Each panel keeps its own flux through panel edges, so this is not
// zero but the two sides' mismatch; interior faces cancel exactly, so it is the whole mass budget
// of the stage, and the solver gives it back evenly (dh_shift below). Integer limbs: the same bits
// from any thread, block or rank grouping.
ExactSum edge_outflow(const Exec& ex, const double* faces, const std::int64_t* offsets, const double* outward,
                      std::int64_t n, double to_units) {
  return reduce(ex, "sw.edge_outflow", Box(0, 0, 0, static_cast<int>(n), 1, 1), ExactSum{}, SumOp{},
                [=] CUMULUS_HD(int f, int, int) { return ExactSum::of_units(outward[f] * faces[offsets[f]] * to_units); });
}

// Classical RK4 in two kernels; dh_shift (m/s) is added to every cell's dh/dt (the stage's mass
// correction). A stage: acc = k (first) or acc + w k; stage = u + stage_dt k, k = ds (+ shift).
void rk_stage(const Exec& ex, const View<double>& u, const View<double>& ds, const View<double>& acc,
              const View<double>& stage, const Box& box, double acc_weight, bool first, double stage_dt,
              double dh_shift) {
  for_each(ex, "sw.rk", box, [=] CUMULUS_HD(int i, int j, int k) {
    for (int m = 0; m < 4; ++m) {
      const double t = m == 0 ? ds(i, j, k, m) + dh_shift : ds(i, j, k, m);
      acc(i, j, k, m) = first ? t : acc(i, j, k, m) + acc_weight * t;
      stage(i, j, k, m) = u(i, j, k, m) + stage_dt * t;
    }
  });
}

// u += dt/6 (k1 + 2 k2 + 2 k3 + k4), with acc = k1 + 2 k2 + 2 k3 and k4 = ds (+ shift).
void rk_final(const Exec& ex, const View<double>& u, const View<double>& ds, const View<double>& acc, const Box& box,
              double dt6, double dh_shift) {
  for_each(ex, "sw.rk", box, [=] CUMULUS_HD(int i, int j, int k) {
    for (int m = 0; m < 4; ++m) {
      const double t = m == 0 ? ds(i, j, k, m) + dh_shift : ds(i, j, k, m);
      u(i, j, k, m) = u(i, j, k, m) + dt6 * (acc(i, j, k, m) + t);
    }
  });
}

// Relative vorticity (1/s) on the interior from ghost-filled velocities (the tendency's formula).
void vorticity(const Exec& ex, const Grid& g, const View<double>& m, const View<double>& s, const View<double>& w,
               const Box& box) {
  const double inv60d = 1.0 / (60.0 * g.dangle), inv_a = 1.0 / g.radius;
  for_each(ex, "sw.vorticity", box, [=] CUMULUS_HD(int i, int j, int k) {
    auto cov = [&](int a, int b, int c) {
      return s(a, b, k, 1) * m(a, b, k, c) + s(a, b, k, 2) * m(a, b, k, c + 1) + s(a, b, k, 3) * m(a, b, k, c + 2);
    };
    const double dvb = diff6(cov(i - 3, j, kCB), cov(i - 2, j, kCB), cov(i - 1, j, kCB), cov(i + 1, j, kCB),
                             cov(i + 2, j, kCB), cov(i + 3, j, kCB));
    const double dva = diff6(cov(i, j - 3, kCA), cov(i, j - 2, kCA), cov(i, j - 1, kCA), cov(i, j + 1, kCA),
                             cov(i, j + 2, kCA), cov(i, j + 3, kCA));
    w(i, j, k) = (dvb - dva) * inv60d * inv_a / m(i, j, k, kSqrtG);
  });
}

// The lowest number in `tiles` (GlobalCellNumber: the tile is the k axis) of a cell with a
// non-finite value, or (depth_positive) a depth <= 0; kNoBadCell when there is none.
std::int64_t first_bad_cell(const Exec& ex, const View<double>& s, const Box& box, const Box& tiles,
                            bool depth_positive) {
  const GlobalCellNumber number(tiles);
  return reduce(ex, "sw.health", box, kNoBadCell, MinOp{}, [=] CUMULUS_HD(int i, int j, int k) -> std::int64_t {
    const double h = s(i, j, k, 0);
    const double sum = h + s(i, j, k, 1) + s(i, j, k, 2) + s(i, j, k, 3);
    const bool bad = !(sum - sum == 0) || (depth_positive && !(h > 0));
    return bad ? number(i, j, k) : kNoBadCell;
  });
}

}  // namespace kernels::CUMULUS_PASS
}  // namespace cumulus::sw
