#pragma once
// The equiangular gnomonic cubed sphere C<N>: six panels of N x N cells, each panel split into
// tx x ty equal tiles, whole tiles owned by MPI ranks. And the panel-edge exchange that fills each
// tile's ghost ring.
//
// Coordinates. A point of panel p with angles (alpha, beta) in [-pi/4, pi/4]^2 is the unit vector
// along b_p + tan(alpha) ex_p + tan(beta) ey_p (b, ex, ey orthonormal, right-handed: ex x ey = b).
// The same formula with |alpha| or |beta| > pi/4 continues the panel's grid lines (great circles)
// past its edge: a ghost cell of a tile on a panel edge sits at those "extended" coordinates, so
// that centred differences in (alpha, beta) stay centred across the edge.
//
// Tiles carry kCubeGhost = 3 ghost layers (sixth-order differences read three cells each side).
//
// Ghost values (FV3's duo-grid idea, Mouallem, Harris & Chen 2023): a ghost point beyond a panel
// edge lies exactly on a grid line of the neighbouring panel at the same depth from the edge
// (equiangular grids have that property); its value is interpolated along that line with a
// 6-point Lagrange polynomial (4 points near the line's ends, by the cube's corners). Ghosts on tile
// edges inside a panel are plain copies. Corner ghosts (diagonal) are not filled: the schemes
// that use this grid read face neighbours only.
//
// Vectors need no rotation: solvers carry velocity as a 3D Cartesian vector, interpolated per
// component, and take its components in the local basis after the fill.
//
// Every ghost value is a fixed weighted sum of global cells, evaluated in a fixed order by the
// rank that owns the ghost: results do not depend on how tiles are spread over ranks.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/box.hpp"
#include "core/comm.hpp"
#include "core/macros.hpp"
#include "core/memory.hpp"

namespace cumulus {

inline constexpr int kCubeGhost = 3;

// The six panels' bases: panels 0-3 around the equator (centres at longitude 0, 90, 180, 270
// degrees), 4 the north and 5 the south polar panel.
struct CubePanels {
  double b[6][3], ex[6][3], ey[6][3];
  static CubePanels standard();
};

// Geometry of the point (X, Y) = (tan alpha, tan beta) of panel p, on the unit sphere: the unit
// position r, the covariant basis a_alpha = dr/dalpha, a_beta, their contravariant duals, and
// sqrt(g). Closed forms (no trigonometry): one implementation for host and device code.
struct CubePoint {
  double r[3];
  double ca[3], cb[3];    // covariant a_alpha, a_beta
  double ua[3], ub[3];    // contravariant a^alpha, a^beta (a^alpha . a_alpha = 1, a^alpha . a_beta = 0)
  double sqrtg;           // |a_alpha x a_beta|
  double gaa, gbb;        // contravariant metric g^alpha alpha, g^beta beta
};

CUMULUS_HD inline CubePoint cube_point(const CubePanels& P, int p, double X, double Y) {
  CubePoint q;
  const double d2 = 1.0 + X * X + Y * Y, d = sqrt(d2);
  const double ox = 1.0 + X * X, oy = 1.0 + Y * Y;
  double v[3];
  for (int c = 0; c < 3; ++c) v[c] = P.b[p][c] + X * P.ex[p][c] + Y * P.ey[p][c];
  for (int c = 0; c < 3; ++c) q.r[c] = v[c] / d;
  // d(v/|v|)/dX = (ex - (r.ex) r)/|v|, r.ex = X/|v|; dX/dalpha = 1 + X^2.
  const double sa = ox / d, sb = oy / d, rx = X / d, ry = Y / d;
  for (int c = 0; c < 3; ++c) {
    q.ca[c] = sa * (P.ex[p][c] - rx * q.r[c]);
    q.cb[c] = sb * (P.ey[p][c] - ry * q.r[c]);
  }
  // Metric of the equiangular projection: g_aa = ox^2 oy / d^4, g_bb = ox oy^2 / d^4,
  // g_ab = -X Y ox oy / d^4, det = (ox oy)^2 / d^6.
  const double d4 = d2 * d2;
  const double g_aa = ox * ox * oy / d4, g_bb = ox * oy * oy / d4, g_ab = -X * Y * ox * oy / d4;
  const double det = g_aa * g_bb - g_ab * g_ab;
  q.sqrtg = ox * oy / (d2 * d);
  q.gaa = g_bb / det;
  q.gbb = g_aa / det;
  const double gab = -g_ab / det;
  for (int c = 0; c < 3; ++c) {
    q.ua[c] = q.gaa * q.ca[c] + gab * q.cb[c];
    q.ub[c] = gab * q.ca[c] + q.gbb * q.cb[c];
  }
  return q;
}

// The grid: resolution, tiling, and tables shared by every rank.
class CubedSphere {
 public:
  // n cells per panel edge, tiles tx x ty per panel (n divisible by both).
  CubedSphere(int n, int tx, int ty);

  int n() const { return n_; }
  int tx() const { return tx_; }
  int ty() const { return ty_; }
  int tile_cells() const { return n_ / tx_; }  // tiles are square: tx == ty enforced by callers or not
  int tile_nx() const { return n_ / tx_; }
  int tile_ny() const { return n_ / ty_; }
  int ntiles() const { return 6 * tx_ * ty_; }
  double dangle() const { return dangle_; }  // pi / (2 n)
  const CubePanels& panels() const { return panels_; }

  // Global tile t: panel t / (tx ty), then row-major within the panel.
  void tile_origin(int t, int* panel, int* i0, int* j0) const;
  // tan of the cell-centre angle for panel index i in [-kCubeGhost, n + kCubeGhost) (beyond [0, n):
  // the extended grid lines' ghost positions). centre_tan_table()[i + kCubeGhost] is the same.
  double centre_tan(int i) const { return tc_[static_cast<std::size_t>(i + kCubeGhost)]; }
  const std::vector<double>& centre_tan_table() const { return tc_; }
  // Exact area of cell (i, j) on the unit sphere (spherical excess of the cell's quadrilateral);
  // the 6 n^2 areas sum to 4 pi to round-off.
  double cell_area(int i, int j) const;
  // The four corners of cell (i, j) of panel p on the unit sphere, counter-clockwise seen from outside.
  void cell_corners(int p, int i, int j, double out[4][3]) const;
  // The cell (panel, i, j) that contains a point of the unit sphere.
  void locate(const double r[3], int* p, double* alpha, double* beta) const;

  // Tiles owned by each rank: contiguous ranges, as even as possible. `first[r]` .. `first[r + 1]`.
  std::vector<int> tile_ranges(int nranks) const;
  std::string describe_layout(int nranks) const;

 private:
  int n_, tx_, ty_;
  double dangle_;
  CubePanels panels_;
  std::vector<double> tc_;  // n + 2 kCubeGhost entries, index i + kCubeGhost
  std::vector<double> tv_;  // n + 1 vertex tangents
};

// A fixed linear map "destination slot = sum_k w_k source_k" across ranks, for values of the
// same layout on every rank (fields of a tile set with ghost ring, or face arrays). Sources are
// addressed by (owner rank, element offset on the owner). Built once (one all-to-all); applied
// to any number of components with a component stride.
class CubeGatherPlan {
 public:
  struct Term {
    int rank;
    std::int64_t offset;
    double weight;
  };
  struct Destination {
    std::int64_t offset;      // on this rank
    std::vector<Term> terms;  // summed in this order
  };
  CubeGatherPlan() = default;
  CubeGatherPlan(const std::vector<Destination>& dests, const Comm& comm, const Exec& exec, const char* label);

  // dst[dest.offset + c * stride] = sum_k w_k src_k[offset + c * stride] for c < ncomp. `data` is
  // both source and destination: every term is read before any destination is written, so a
  // destination may also be a source. Collective.
  void apply(double* data, int ncomp, std::int64_t stride);
  std::size_t destinations() const { return ndst_; }
  std::size_t values_sent_per_component() const { return send_offsets_host_.size(); }

 private:
  Comm comm_;
  Exec exec_;
  std::string label_;
  std::size_t ndst_ = 0;
  int max_terms_ = 0;
  // Sources: first the send list (this rank's elements others need), per peer.
  std::vector<int> send_peers_, recv_peers_;
  std::vector<int> send_counts_, recv_counts_;  // per peer, elements per component
  std::vector<std::int64_t> send_offsets_host_;
  Buffer<std::int64_t> send_offsets_;  // elements to pack
  // Terms as a dense table [ndst][max_terms]: index >= 0 into the local data, < 0: -(1 + position
  // in the receive buffer); weight 0 pads.
  Buffer<std::int64_t> term_index_;
  Buffer<double> term_weight_;
  Buffer<std::int64_t> dst_offset_;
  Buffer<double> send_buf_, recv_buf_, result_;
  std::vector<double> send_host_, recv_host_;
};

// Where each tile's values live on its owner, known to every rank (tiles are spread over ranks in
// contiguous ranges). Cell arrays: the owner's tiles with a ghost ring, (k, j, i) order, k the
// tile; a Field over Box(0, 0, t0, nx, ny, t1) with ghost (G, G, 0), G = kCubeGhost, has exactly
// this layout. Face
// arrays: all alpha faces ((nx + 1) x ny per tile), then all beta faces (nx x (ny + 1) per tile).
class CubeLayout {
 public:
  CubeLayout(const CubedSphere& grid, int nranks);
  const CubedSphere& grid() const { return *grid_; }
  int nranks() const { return static_cast<int>(first_.size()) - 1; }
  int owner(int tile) const;
  int first(int rank) const { return first_[static_cast<std::size_t>(rank)]; }
  int count(int rank) const { return first_[static_cast<std::size_t>(rank) + 1] - first_[static_cast<std::size_t>(rank)]; }
  std::int64_t cell(int tile, int i, int j) const;  // i in [-G, nx + G), j likewise (G = kCubeGhost)
  std::int64_t face_a(int tile, int i, int j) const;  // i in [0, nx], j in [0, ny)
  std::int64_t face_b(int tile, int i, int j) const;  // i in [0, nx), j in [0, ny]
  std::int64_t faces_size(int rank) const;
  // The global cell (panel p, i, j in [0, n)): its tile and the offset on the tile's owner.
  void global_cell(int p, int i, int j, int* tile, std::int64_t* offset) const;

  // The plan that fills `rank`'s ghost ring (edge ghosts, G deep; the diagonal corner blocks of a
  // tile are left alone).
  std::vector<CubeGatherPlan::Destination> ghost_fill(int rank) const;
  // `rank`'s faces on panel edges: their slots in the face array and the sign that makes the
  // stored (+alpha / +beta) flux outward of the panel. Over all ranks, every panel-edge face twice,
  // once from each side.
  struct EdgeFace {
    std::int64_t offset;
    double outward;
  };
  std::vector<EdgeFace> panel_edge_faces(int rank) const;

 private:
  const CubedSphere* grid_;
  std::vector<int> first_;
};

}  // namespace cumulus
