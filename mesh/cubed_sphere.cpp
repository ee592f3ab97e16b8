// The cubed-sphere grid, its tile layout and the plans that fill ghosts across panel edges (host
// code; the plan's kernels are in cube_kernels.cpp).
#include "mesh/cubed_sphere.hpp"
#include "mesh/cube_kernels.hpp"

#include <algorithm>
#include <map>

#include "core/constants.hpp"
#include "core/error.hpp"
#include "core/strings.hpp"
#include "mesh/decomposition.hpp"

namespace cumulus {

namespace {
// Weights of the Lagrange polynomial through `*m` cells i0 .. i0 + m - 1 at fractional index s:
// six points centred on s (sixth order) where they fit in [0, n); near the line's ends, where the
// six would reach past the panel's corner, four (centred, or shifted inside for the last cells):
// lopsided six-point stencils have large weights and made the corners unstable.
constexpr int kInterpMax = 6;
void lagrange(double s, int n, int* i0, int* m, double w[kInterpMax]) {
  const int f = static_cast<int>(std::floor(s));
  int a = f - 2, np = 6;
  if (a < 0 || a + np > n) {
    np = 4;
    a = std::clamp(f - 1, 0, n - np);
  }
  *i0 = a;
  *m = np;
  for (int k = 0; k < np; ++k) {
    double v = 1;
    for (int q = 0; q < np; ++q)
      if (q != k) v *= (s - (a + q)) / static_cast<double>(k - q);
    w[k] = v;
  }
}

void unit_point(const CubePanels& P, int p, double X, double Y, double r[3]) {
  double v[3], s = 0;
  for (int c = 0; c < 3; ++c) {
    v[c] = P.b[p][c] + X * P.ex[p][c] + Y * P.ey[p][c];
    s += v[c] * v[c];
  }
  s = std::sqrt(s);
  for (int c = 0; c < 3; ++c) r[c] = v[c] / s;
}
}  // namespace

CubePanels CubePanels::standard() {
  CubePanels P{};
  const double b[6][3] = {{1, 0, 0}, {0, 1, 0}, {-1, 0, 0}, {0, -1, 0}, {0, 0, 1}, {0, 0, -1}};
  const double ex[6][3] = {{0, 1, 0}, {-1, 0, 0}, {0, -1, 0}, {1, 0, 0}, {0, 1, 0}, {0, 1, 0}};
  const double ey[6][3] = {{0, 0, 1}, {0, 0, 1}, {0, 0, 1}, {0, 0, 1}, {-1, 0, 0}, {1, 0, 0}};
  for (int p = 0; p < 6; ++p)
    for (int c = 0; c < 3; ++c) {
      P.b[p][c] = b[p][c];
      P.ex[p][c] = ex[p][c];
      P.ey[p][c] = ey[p][c];
    }
  return P;
}

CubedSphere::CubedSphere(int n, int tx, int ty)
    : n_(n), tx_(tx), ty_(ty), dangle_(kPi / (2.0 * n)), panels_(CubePanels::standard()) {
  if (n < 8) throw InputError(strprintf("a cubed sphere needs at least 8 cells per panel edge, got %d", n));
  if (tx < 1 || ty < 1 || n % tx != 0 || n % ty != 0)
    throw InputError(strprintf("tiles %d x %d do not divide the %d x %d cells of a panel", tx, ty, n, n));
  // Tangents mirrored (tan(-x) = -tan(x) exactly), with the ends exactly +-1: the grid is
  // symmetric to the last bit, and panel edges computed from either panel coincide.
  const int G = kCubeGhost;
  tc_.assign(static_cast<std::size_t>(n + 2 * G), 0.0);
  for (int i = -G; i < n + G; ++i) {
    const int m = n - 1 - i;  // the mirror cell
    if (m < i) tc_[static_cast<std::size_t>(i + G)] = -tc_[static_cast<std::size_t>(m + G)];
    else if (2 * i + 1 == n) tc_[static_cast<std::size_t>(i + G)] = 0.0;
    else tc_[static_cast<std::size_t>(i + G)] = std::tan(-kPi / 4 + (i + 0.5) * dangle_);
  }
  tv_.assign(static_cast<std::size_t>(n + 1), 0.0);
  for (int i = 0; i <= n; ++i) {
    if (i == 0) tv_[0] = -1.0;
    else if (2 * i == n) tv_[static_cast<std::size_t>(i)] = 0.0;
    else if (2 * i > n) tv_[static_cast<std::size_t>(i)] = -tv_[static_cast<std::size_t>(n - i)];
    else tv_[static_cast<std::size_t>(i)] = std::tan(-kPi / 4 + i * dangle_);
  }
  tv_[static_cast<std::size_t>(n)] = 1.0;
}

void CubedSphere::tile_origin(int t, int* panel, int* i0, int* j0) const {
  const int per = tx_ * ty_;
  *panel = t / per;
  const int r = t % per;
  *i0 = (r % tx_) * tile_nx();
  *j0 = (r / tx_) * tile_ny();
}

double CubedSphere::cell_area(int i, int j) const {
  // The area of [alpha1, alpha2] x [beta1, beta2] is w(2,2) - w(1,2) - w(2,1) + w(1,1),
  // w = atan(X Y / sqrt(1 + X^2 + Y^2)) (the solid angle of the corner's rectangle).
  auto w = [](double X, double Y) { return std::atan(X * Y / std::sqrt(1.0 + X * X + Y * Y)); };
  const double x0 = tv_[static_cast<std::size_t>(i)], x1 = tv_[static_cast<std::size_t>(i + 1)];
  const double y0 = tv_[static_cast<std::size_t>(j)], y1 = tv_[static_cast<std::size_t>(j + 1)];
  return (w(x1, y1) - w(x0, y1)) - (w(x1, y0) - w(x0, y0));
}

void CubedSphere::cell_corners(int p, int i, int j, double out[4][3]) const {
  const double* t = tv_.data();
  unit_point(panels_, p, t[i], t[j], out[0]);
  unit_point(panels_, p, t[i + 1], t[j], out[1]);
  unit_point(panels_, p, t[i + 1], t[j + 1], out[2]);
  unit_point(panels_, p, t[i], t[j + 1], out[3]);
}

void CubedSphere::locate(const double r[3], int* p, double* alpha, double* beta) const {
  int best = 0;
  double bs = -2;
  for (int q = 0; q < 6; ++q) {
    const double s = r[0] * panels_.b[q][0] + r[1] * panels_.b[q][1] + r[2] * panels_.b[q][2];
    if (s > bs) {
      bs = s;
      best = q;
    }
  }
  const auto& P = panels_;
  const double x = r[0] * P.ex[best][0] + r[1] * P.ex[best][1] + r[2] * P.ex[best][2];
  const double y = r[0] * P.ey[best][0] + r[1] * P.ey[best][1] + r[2] * P.ey[best][2];
  *p = best;
  *alpha = std::atan(x / bs);
  *beta = std::atan(y / bs);
}

std::vector<int> CubedSphere::tile_ranges(int nranks) const {
  if (nranks > ntiles())
    throw InputError(strprintf("%d ranks but only %d tiles (6 panels x %d x %d): every rank must own at least one tile",
                               nranks, ntiles(), tx_, ty_));
  std::vector<int> first(static_cast<std::size_t>(nranks) + 1);
  for (int r = 0; r <= nranks; ++r) first[static_cast<std::size_t>(r)] = split_lo(ntiles(), nranks, r);
  return first;
}

std::string CubedSphere::describe_layout(int nranks) const {
  const std::vector<int> f = tile_ranges(nranks);
  std::string s = strprintf("C%d: 6 panels x %d x %d tiles of %d x %d cells = %d tiles over %d rank%s (", n_, tx_, ty_,
                            tile_nx(), tile_ny(), ntiles(), nranks, nranks == 1 ? "" : "s");
  for (int r = 0; r < nranks; ++r) {
    const int a = f[static_cast<std::size_t>(r)], b = f[static_cast<std::size_t>(r) + 1];
    if (r > 0) s += ", ";
    if (r >= 8 && r < nranks - 1) {
      s += "...";
      r = nranks - 2;
      continue;
    }
    s += b - a == 1 ? strprintf("rank %d: tile %d", r, a) : strprintf("rank %d: tiles %d-%d", r, a, b - 1);
  }
  return s + ")";
}

// --- CubeLayout ---------------------------------------------------------------------------------

CubeLayout::CubeLayout(const CubedSphere& grid, int nranks) : grid_(&grid), first_(grid.tile_ranges(nranks)) {}

int CubeLayout::owner(int tile) const {
  // The last rank whose first tile is <= tile.
  return static_cast<int>(std::upper_bound(first_.begin(), first_.end() - 1, tile) - first_.begin()) - 1;
}

std::int64_t CubeLayout::cell(int tile, int i, int j) const {
  const int G = kCubeGhost, nx = grid_->tile_nx() + 2 * G, ny = grid_->tile_ny() + 2 * G;
  const int k = tile - first(owner(tile));
  return (i + G) + static_cast<std::int64_t>(j + G) * nx + static_cast<std::int64_t>(k) * nx * ny;
}

std::int64_t CubeLayout::face_a(int tile, int i, int j) const {
  const int nx = grid_->tile_nx(), ny = grid_->tile_ny();
  const int k = tile - first(owner(tile));
  return i + static_cast<std::int64_t>(j) * (nx + 1) + static_cast<std::int64_t>(k) * (nx + 1) * ny;
}

std::int64_t CubeLayout::face_b(int tile, int i, int j) const {
  const int nx = grid_->tile_nx(), ny = grid_->tile_ny();
  const int r = owner(tile), k = tile - first(r);
  return static_cast<std::int64_t>(count(r)) * (nx + 1) * ny + i + static_cast<std::int64_t>(j) * nx +
         static_cast<std::int64_t>(k) * nx * (ny + 1);
}

std::int64_t CubeLayout::faces_size(int rank) const {
  const int nx = grid_->tile_nx(), ny = grid_->tile_ny();
  return static_cast<std::int64_t>(count(rank)) * ((nx + 1) * static_cast<std::int64_t>(ny) + nx * static_cast<std::int64_t>(ny + 1));
}

void CubeLayout::global_cell(int p, int i, int j, int* tile, std::int64_t* offset) const {
  const int nx = grid_->tile_nx(), ny = grid_->tile_ny();
  *tile = p * grid_->tx() * grid_->ty() + (j / ny) * grid_->tx() + i / nx;
  *offset = cell(*tile, i % nx, j % ny);
}

std::vector<CubeGatherPlan::Destination> CubeLayout::ghost_fill(int rank) const {
  const CubedSphere& g = *grid_;
  const int n = g.n(), nx = g.tile_nx(), ny = g.tile_ny();
  const double d = g.dangle();
  std::vector<CubeGatherPlan::Destination> out;
  for (int t = first(rank); t < first(rank) + count(rank); ++t) {
    int p, i0, j0;
    g.tile_origin(t, &p, &i0, &j0);
    auto add = [&](int i, int j) {
      CubeGatherPlan::Destination dst;
      dst.offset = cell(t, i, j);
      const int I = i0 + i, J = j0 + j;
      if (I >= 0 && I < n && J >= 0 && J < n) {  // inside the panel: a copy
        int st;
        std::int64_t off;
        global_cell(p, I, J, &st, &off);
        dst.terms.push_back({owner(st), off, 1.0});
      } else {
        // Beyond the panel edge, on this panel's extended grid line: find the neighbouring
        // panel's grid line through the point and interpolate along it.
        double r[3], a, b;
        unit_point(g.panels(), p, g.centre_tan(I), g.centre_tan(J), r);
        int q;
        g.locate(r, &q, &a, &b);
        const double fa = (a + kPi / 4) / d - 0.5, fb = (b + kPi / 4) / d - 0.5;
        const bool along_b = std::fabs(fa - std::round(fa)) < 1e-6;  // on a line of constant alpha
        if (!along_b && std::fabs(fb - std::round(fb)) >= 1e-6)
          throw Error(strprintf("cubed sphere: ghost (%d, %d) of panel %d is on no grid line of panel %d", I, J, p, q));
        int s0, np;
        double w[kInterpMax];
        lagrange(along_b ? fb : fa, n, &s0, &np, w);
        const int fixed = static_cast<int>(std::lround(along_b ? fa : fb));
        for (int k = 0; k < np; ++k) {
          const int ci = along_b ? fixed : s0 + k, cj = along_b ? s0 + k : fixed;
          int st;
          std::int64_t off;
          global_cell(q, ci, cj, &st, &off);
          dst.terms.push_back({owner(st), off, w[k]});
        }
      }
      out.push_back(std::move(dst));
    };
    for (int depth = 1; depth <= kCubeGhost; ++depth) {
      for (int j = 0; j < ny; ++j) {
        add(-depth, j);
        add(nx - 1 + depth, j);
      }
      for (int i = 0; i < nx; ++i) {
        add(i, -depth);
        add(i, ny - 1 + depth);
      }
    }
  }
  return out;
}

std::vector<CubeLayout::EdgeFace> CubeLayout::panel_edge_faces(int rank) const {
  const CubedSphere& g = *grid_;
  const int n = g.n(), nx = g.tile_nx(), ny = g.tile_ny();
  std::vector<EdgeFace> out;
  for (int t = first(rank); t < first(rank) + count(rank); ++t) {
    int p, i0, j0;
    g.tile_origin(t, &p, &i0, &j0);
    if (i0 == 0)
      for (int j = 0; j < ny; ++j) out.push_back({face_a(t, 0, j), -1.0});  // west
    if (i0 + nx == n)
      for (int j = 0; j < ny; ++j) out.push_back({face_a(t, nx, j), 1.0});  // east
    if (j0 == 0)
      for (int i = 0; i < nx; ++i) out.push_back({face_b(t, i, 0), -1.0});  // south
    if (j0 + ny == n)
      for (int i = 0; i < nx; ++i) out.push_back({face_b(t, i, ny), 1.0});  // north
  }
  return out;
}

// --- CubeGatherPlan -----------------------------------------------------------------------------

CubeGatherPlan::CubeGatherPlan(const std::vector<Destination>& dests, const Comm& comm, const Exec& exec,
                               const char* label)
    : comm_(comm), exec_(exec), label_(label), ndst_(dests.size()) {
  const int me = comm.rank(), np = comm.size();
  // What this rank needs from each other rank: sorted, unique element offsets.
  std::vector<std::vector<std::int64_t>> need(static_cast<std::size_t>(np));
  for (const Destination& d : dests) {
    max_terms_ = std::max(max_terms_, static_cast<int>(d.terms.size()));
    for (const Term& t : d.terms)
      if (t.rank != me) need[static_cast<std::size_t>(t.rank)].push_back(t.offset);
  }
  for (auto& v : need) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }
  std::vector<int> want(static_cast<std::size_t>(np)), give(static_cast<std::size_t>(np));
  for (int r = 0; r < np; ++r) want[static_cast<std::size_t>(r)] = static_cast<int>(need[static_cast<std::size_t>(r)].size());
  mpi_check(MPI_Alltoall(want.data(), 1, MPI_INT, give.data(), 1, MPI_INT, comm.raw()), "MPI_Alltoall");
  std::vector<int> sdisp(static_cast<std::size_t>(np) + 1, 0), rdisp(static_cast<std::size_t>(np) + 1, 0);
  std::vector<std::int64_t> flat_need;
  for (int r = 0; r < np; ++r) {
    sdisp[static_cast<std::size_t>(r) + 1] = sdisp[static_cast<std::size_t>(r)] + want[static_cast<std::size_t>(r)];
    rdisp[static_cast<std::size_t>(r) + 1] = rdisp[static_cast<std::size_t>(r)] + give[static_cast<std::size_t>(r)];
    flat_need.insert(flat_need.end(), need[static_cast<std::size_t>(r)].begin(), need[static_cast<std::size_t>(r)].end());
  }
  send_offsets_host_.assign(static_cast<std::size_t>(rdisp[static_cast<std::size_t>(np)]), 0);
  mpi_check(MPI_Alltoallv(flat_need.data(), want.data(), sdisp.data(), MPI_INT64_T, send_offsets_host_.data(),
                          give.data(), rdisp.data(), MPI_INT64_T, comm.raw()),
            "MPI_Alltoallv");
  for (int r = 0; r < np; ++r) {
    if (give[static_cast<std::size_t>(r)] > 0) {
      send_peers_.push_back(r);
      send_counts_.push_back(give[static_cast<std::size_t>(r)]);
    }
    if (want[static_cast<std::size_t>(r)] > 0) {
      recv_peers_.push_back(r);
      recv_counts_.push_back(want[static_cast<std::size_t>(r)]);
    }
  }
  // The term table, remote sources pointing into the receive buffer (peers in rank order).
  const std::size_t width = static_cast<std::size_t>(std::max(max_terms_, 1));
  std::vector<std::int64_t> index(ndst_ * width, kCubePad), dst(ndst_);
  std::vector<double> weight(ndst_ * width, 0.0);
  for (std::size_t k = 0; k < ndst_; ++k) {
    dst[k] = dests[k].offset;
    for (std::size_t t = 0; t < dests[k].terms.size(); ++t) {
      const Term& term = dests[k].terms[t];
      std::int64_t ix = term.offset;
      if (term.rank != me) {
        const auto& v = need[static_cast<std::size_t>(term.rank)];
        const std::int64_t pos = sdisp[static_cast<std::size_t>(term.rank)] +
                                 (std::lower_bound(v.begin(), v.end(), term.offset) - v.begin());
        ix = -1 - pos;
      }
      index[k * width + t] = ix;
      weight[k * width + t] = term.weight;
    }
  }
  term_index_ = Buffer<std::int64_t>::copy_of(exec, index);
  term_weight_ = Buffer<double>::copy_of(exec, weight);
  dst_offset_ = Buffer<std::int64_t>::copy_of(exec, dst);
  send_offsets_ = Buffer<std::int64_t>::copy_of(exec, send_offsets_host_);
  max_terms_ = static_cast<int>(width);
}

void CubeGatherPlan::apply(double* data, int ncomp, std::int64_t stride) {
  const Exec& ex = exec_;
  const std::size_t nsend = send_offsets_host_.size();
  std::size_t nrecv = 0;
  for (int c : recv_counts_) nrecv += static_cast<std::size_t>(c);
  const std::size_t sbytes = nsend * ncomp, rbytes = nrecv * ncomp;  // in doubles
  if (send_buf_.size() < sbytes) send_buf_ = Buffer<double>(ex.backend(), sbytes);
  if (recv_buf_.size() < rbytes) recv_buf_ = Buffer<double>(ex.backend(), rbytes);
  if (result_.size() < ndst_ * ncomp) result_ = Buffer<double>(ex.backend(), ndst_ * ncomp);
  if (nsend + nrecv > 0) {
    CUMULUS_KERNEL(ex, cube_kernels, cube_pack)(ex, data, send_offsets_.data(), static_cast<std::int64_t>(nsend), ncomp,
                                                stride, send_buf_.data());
    // Device buffers go through host copies unless MPI reads device memory itself.
    const bool staged = ex.is_cuda() && !Comm::cuda_aware();
    double* sb = send_buf_.data();
    double* rb = recv_buf_.data();
    if (staged) {
      send_host_.resize(sbytes);
      recv_host_.resize(rbytes);
      memory::copy(ex, Backend::host, send_host_.data(), ex.backend(), send_buf_.data(), sbytes * sizeof(double));
      sb = send_host_.data();
      rb = recv_host_.data();
    } else {
      ex.synchronize();
    }
    std::vector<MPI_Request> req;
    std::size_t off = 0;
    for (std::size_t k = 0; k < recv_peers_.size(); ++k) {
      req.emplace_back();
      mpi_check(MPI_Irecv(rb + off * ncomp, recv_counts_[k] * ncomp, MPI_DOUBLE, recv_peers_[k], 71, comm_.raw(),
                          &req.back()),
                "MPI_Irecv");
      off += static_cast<std::size_t>(recv_counts_[k]);
    }
    off = 0;
    for (std::size_t k = 0; k < send_peers_.size(); ++k) {
      req.emplace_back();
      mpi_check(MPI_Isend(sb + off * ncomp, send_counts_[k] * ncomp, MPI_DOUBLE, send_peers_[k], 71, comm_.raw(),
                          &req.back()),
                "MPI_Isend");
      off += static_cast<std::size_t>(send_counts_[k]);
    }
    mpi_check(MPI_Waitall(static_cast<int>(req.size()), req.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
    if (staged) memory::copy(ex, ex.backend(), recv_buf_.data(), Backend::host, recv_host_.data(), rbytes * sizeof(double));
  }
  if (ndst_ == 0) return;
  CUMULUS_KERNEL(ex, cube_kernels, cube_combine)(ex, data, recv_buf_.data(), term_index_.data(), term_weight_.data(),
                                                 static_cast<std::int64_t>(ndst_), max_terms_, ncomp, stride,
                                                 result_.data());
  CUMULUS_KERNEL(ex, cube_kernels, cube_scatter)(ex, data, dst_offset_.data(), static_cast<std::int64_t>(ndst_), ncomp,
                                                 stride, result_.data());
}

}  // namespace cumulus
