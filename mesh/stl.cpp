#include "mesh/stl.hpp"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string_view>
#include <tuple>

#include "core/error.hpp"
#include "core/strings.hpp"

namespace cumulus {
namespace {

std::string point_str(const Vec3d& v) { return strprintf("(%.9g, %.9g, %.9g)", v.x, v.y, v.z); }

Vec3d sub(const Vec3d& a, const Vec3d& b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }
Vec3d cross(const Vec3d& a, const Vec3d& b) {
  return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}
bool is_finite(const Vec3d& v) { return std::isfinite(v.x) && std::isfinite(v.y) && std::isfinite(v.z); }
bool lex_less(const Vec3d& a, const Vec3d& b) { return std::tie(a.x, a.y, a.z) < std::tie(b.x, b.y, b.z); }
bool same_point(const Vec3d& a, const Vec3d& b) { return a.x == b.x && a.y == b.y && a.z == b.z; }

// ---------------------------------------------------------------------------------------------
// Reading

std::string read_whole_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw InputError(path + ": is a directory, not an STL file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open the STL file: " + std::strerror(errno));
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  in.seekg(0, std::ios::beg);
  std::string data(size > 0 ? static_cast<std::size_t>(size) : 0, '\0');
  if (size < 0 || !in.read(data.data(), static_cast<std::streamsize>(data.size())))
    throw InputError(path + ": cannot read the STL file");
  return data;
}

// Binary STL is little-endian whatever the host; decoding byte by byte needs no endianness test.
std::uint32_t get_u32(const unsigned char* p) {
  return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
         static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
}
void put_u32(unsigned char* p, std::uint32_t v) {
  for (int b = 0; b < 4; ++b) p[b] = static_cast<unsigned char>(v >> (8 * b));
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

// Text: no control bytes but whitespace. Bytes >= 128 are allowed (a UTF-8 solid name); a binary
// file nearly always has NULs (the attribute words are usually zero).
bool looks_like_text(const std::string& d) {
  for (const char ch : d) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c < 32 && !is_space(ch)) || c == 127) return false;
  }
  return true;
}

bool starts_with_solid(const std::string& d) {
  std::size_t p = 0;
  while (p < d.size() && is_space(d[p])) ++p;
  if (d.size() - p < 5 || !iequals(std::string_view(d).substr(p, 5), "solid")) return false;
  return d.size() - p == 5 || is_space(d[p + 5]);
}

std::vector<Triangle> parse_binary(const std::string& path, const std::string& data) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(data.data());
  const std::uint32_t n = get_u32(bytes + 80);
  std::vector<Triangle> tris(n);
  for (std::uint32_t t = 0; t < n; ++t) {
    const unsigned char* rec = bytes + 84 + 50 * static_cast<std::size_t>(t) + 12;  // skip the normal
    for (int v = 0; v < 3; ++v) {
      double c[3];
      for (int d = 0; d < 3; ++d) c[d] = std::bit_cast<float>(get_u32(rec + 12 * v + 4 * d));
      tris[t].v[v] = {c[0], c[1], c[2]};
      if (!is_finite(tris[t].v[v]))
        throw InputError(strprintf("%s: triangle %u (counting from 0) has a non-finite vertex %s", path.c_str(), t,
                                   point_str(tris[t].v[v]).c_str()));
    }
  }
  return tris;
}

// Recursive descent over whitespace-separated tokens, tracking the line of each for messages.
class AsciiParser {
 public:
  AsciiParser(const std::string& path, const std::string& text) : path_(path), text_(text) {}

  std::vector<Triangle> parse() {
    std::vector<Triangle> tris;
    std::string_view tok;
    if (!next(tok)) fail(line_, "empty file, expected 'solid'");
    while (true) {
      if (!iequals(tok, "solid")) fail(tok_line_, "expected 'solid' or the end of the file, found " + shown(tok));
      skip_rest_of_line();  // the solid's name
      while (true) {
        if (!next(tok)) fail(line_, "unexpected end of file, expected 'facet' or 'endsolid'");
        if (iequals(tok, "endsolid")) break;
        if (!iequals(tok, "facet")) fail(tok_line_, "expected 'facet' or 'endsolid', found " + shown(tok));
        expect("normal");
        for (int d = 0; d < 3; ++d) number("normal component", false);  // the normal is recomputed, never used
        expect("outer");
        expect("loop");
        Triangle t;
        for (auto& v : t.v) {
          expect("vertex");
          v.x = number("vertex x coordinate", true);
          v.y = number("vertex y coordinate", true);
          v.z = number("vertex z coordinate", true);
        }
        expect("endloop");
        expect("endfacet");
        tris.push_back(t);
      }
      skip_rest_of_line();    // the name after endsolid
      if (!next(tok)) break;  // several solids may follow one another
    }
    return tris;
  }

 private:
  [[noreturn]] void fail(int line, const std::string& what) const {
    throw InputError(strprintf("%s:%d: %s", path_.c_str(), line, what.c_str()));
  }
  static std::string shown(std::string_view tok) {
    if (tok.size() > 40) return "'" + std::string(tok.substr(0, 40)) + "...'";
    return "'" + std::string(tok) + "'";
  }

  bool next(std::string_view& tok) {
    while (pos_ < text_.size() && is_space(text_[pos_])) {
      if (text_[pos_] == '\n') ++line_;
      ++pos_;
    }
    if (pos_ == text_.size()) return false;
    const std::size_t start = pos_;
    while (pos_ < text_.size() && !is_space(text_[pos_])) ++pos_;
    tok = std::string_view(text_).substr(start, pos_ - start);
    tok_line_ = line_;
    return true;
  }
  void skip_rest_of_line() {
    while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
  }
  void expect(const char* keyword) {
    std::string_view tok;
    if (!next(tok)) fail(line_, std::string("unexpected end of file, expected '") + keyword + "'");
    if (!iequals(tok, keyword)) fail(tok_line_, std::string("expected '") + keyword + "', found " + shown(tok));
  }
  double number(const char* what, bool must_be_finite) {
    std::string_view tok;
    if (!next(tok)) fail(line_, std::string("unexpected end of file, expected a number (") + what + ")");
    // from_chars: locale-independent, unlike strtod; it does not take a leading '+'.
    std::string_view digits = tok;
    if (digits[0] == '+') digits.remove_prefix(1);
    const bool two_signs = !digits.empty() && (digits[0] == '+' || digits[0] == '-') && tok[0] == '+';
    double value = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec == std::errc::result_out_of_range)
      fail(tok_line_, std::string("number ") + shown(tok) + " out of range (" + what + ")");
    if (ec != std::errc() || end != digits.data() + digits.size() || two_signs)
      fail(tok_line_, std::string("expected a number (") + what + "), found " + shown(tok));
    if (must_be_finite && !std::isfinite(value))
      fail(tok_line_, std::string(what) + " " + shown(tok) + " is not finite");
    return value;
  }

  const std::string& path_;
  const std::string& text_;
  std::size_t pos_ = 0;
  int line_ = 1;
  int tok_line_ = 1;
};

// Zero area in double arithmetic (two equal vertices or three collinear ones): such a triangle
// has no normal, and an edge that runs through it breaks the edge-pairing test.
bool degenerate(const Triangle& t) {
  const Vec3d n = cross(sub(t.v[1], t.v[0]), sub(t.v[2], t.v[0]));
  return n.x == 0 && n.y == 0 && n.z == 0;
}

void check_mesh(const std::string& path, const std::vector<Triangle>& tris) {
  if (tris.empty()) throw InputError(path + ": the STL file holds no triangles");

  std::size_t ndegenerate = 0, first_degenerate = 0;
  for (std::size_t t = 0; t < tris.size(); ++t)
    if (degenerate(tris[t]) && ndegenerate++ == 0) first_degenerate = t;
  if (ndegenerate > 0) {
    const Triangle& t = tris[first_degenerate];
    throw InputError(
        strprintf("%s: %zu degenerate (zero-area) triangle(s), e.g. triangle %zu (counting from 0) "
                  "with vertices %s %s %s",
                  path.c_str(), ndegenerate, first_degenerate, point_str(t.v[0]).c_str(), point_str(t.v[1]).c_str(),
                  point_str(t.v[2]).c_str()));
  }

  // Weld by exact equality: sort all corners and number the distinct points.
  std::vector<Vec3d> points;
  points.reserve(3 * tris.size());
  for (const Triangle& t : tris) points.insert(points.end(), t.v, t.v + 3);
  std::sort(points.begin(), points.end(), lex_less);
  points.erase(std::unique(points.begin(), points.end(), same_point), points.end());
  auto id = [&](const Vec3d& p) {
    return static_cast<std::size_t>(std::lower_bound(points.begin(), points.end(), p, lex_less) - points.begin());
  };

  // A closed, consistently oriented surface uses each edge once in each direction.
  struct Edge {
    std::size_t a, b;  // a < b
    bool reversed;     // the triangle runs b -> a
  };
  std::vector<Edge> edges;
  edges.reserve(3 * tris.size());
  for (const Triangle& t : tris) {
    const std::size_t v[3] = {id(t.v[0]), id(t.v[1]), id(t.v[2])};
    for (int e = 0; e < 3; ++e) {
      const std::size_t p = v[e], q = v[(e + 1) % 3];
      edges.push_back(p < q ? Edge{p, q, false} : Edge{q, p, true});
    }
  }
  std::sort(edges.begin(), edges.end(), [](const Edge& x, const Edge& y) {
    return std::tie(x.a, x.b, x.reversed) < std::tie(y.a, y.b, y.reversed);
  });
  std::size_t nopen = 0, example = 0, ex_forward = 0, ex_backward = 0;
  for (std::size_t e = 0; e < edges.size();) {
    std::size_t end = e, forward = 0, backward = 0;
    for (; end < edges.size() && edges[end].a == edges[e].a && edges[end].b == edges[e].b; ++end)
      ++(edges[end].reversed ? backward : forward);
    if (forward != 1 || backward != 1) {
      if (nopen++ == 0) std::tie(example, ex_forward, ex_backward) = std::tuple(e, forward, backward);
    }
    e = end;
  }
  if (nopen > 0)
    throw InputError(
        strprintf("%s: the mesh is not closed: %zu edge(s) are not shared by exactly two triangles "
                  "running along them in opposite directions; e.g. the edge %s - %s is used %zu time(s) "
                  "in one direction and %zu in the other",
                  path.c_str(), nopen, point_str(points[edges[example].a]).c_str(),
                  point_str(points[edges[example].b]).c_str(), ex_forward, ex_backward));
}

void update_bounds(TriangleMesh& m) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  m.lo = {inf, inf, inf};
  m.hi = {-inf, -inf, -inf};
  for (const Triangle& t : m.triangles)
    for (const Vec3d& v : t.v) {
      m.lo = {std::min(m.lo.x, v.x), std::min(m.lo.y, v.y), std::min(m.lo.z, v.z)};
      m.hi = {std::max(m.hi.x, v.x), std::max(m.hi.y, v.y), std::max(m.hi.z, v.z)};
    }
}

// ---------------------------------------------------------------------------------------------
// Robust 2D orientation (Shewchuk 1997, "Adaptive precision floating-point arithmetic and fast
// robust geometric predicates"): a floating-point filter, and an exact expansion sum when the
// filter cannot decide. An exact sign makes the two triangles that share an edge agree on which
// side of it the ray lies, so a closed surface never lets a ray through a crack nor counts it twice.

constexpr double kEpsilon = 0x1p-53;
constexpr double kCcwErrBoundA = (3.0 + 16.0 * kEpsilon) * kEpsilon;  // Shewchuk's ccwerrboundA

void two_sum(double a, double b, double& x, double& y) {
  x = a + b;
  const double bv = x - a;
  const double av = x - bv;
  y = (a - av) + (b - bv);
}

// A nonoverlapping expansion (Shewchuk's grow-expansion with zero elimination), components in
// increasing magnitude; the largest carries the sign.
struct Expansion {
  double c[16];
  int n = 0;
  void add(double b) {
    double q = b;
    int m = 0;
    for (int i = 0; i < n; ++i) {
      double s, err;
      two_sum(q, c[i], s, err);
      q = s;
      if (err != 0) c[m++] = err;
    }
    if (q != 0) c[m++] = q;
    n = m;
  }
  void add_product(double a, double b) {
    const double p = a * b;
    add(std::fma(a, b, -p));  // the exact rounding error of the product
    add(p);
  }
  double approx() const {
    double s = 0;
    for (int i = 0; i < n; ++i) s += c[i];
    return s;
  }
};

// Twice the signed area of (a, b, p) in the (y, z) plane, and its exact sign. When the exact value
// is zero, p is moved by (eps, eps^2) (simulation of simplicity, Edelsbrunner & Muecke 1990): the
// sign is then that of eps (az - bz) + eps^2 (by - ay), i.e. of a real point arbitrarily close to
// p, which lies on no edge and at no vertex. Zero is left only for an edge parallel to x (a == b
// in projection), whose triangles have no projected area and cannot be crossed.
double orient(double ay, double az, double by, double bz, double py, double pz, int& sign) {
  const double left = (ay - py) * (bz - pz);
  const double right = (az - pz) * (by - py);
  const double det = left - right;
  const double bound = kCcwErrBoundA * (std::abs(left) + std::abs(right));
  if (!(det > bound || -det > bound)) {
    // Expanded so that every term is a product of two input coordinates (py pz cancels); exact
    // while no product underflows, i.e. for any coordinates a mesh file would hold.
    Expansion e;
    e.add_product(ay, bz);
    e.add_product(-ay, pz);
    e.add_product(-py, bz);
    e.add_product(-az, by);
    e.add_product(az, py);
    e.add_product(pz, by);
    if (e.n > 0) {
      sign = e.c[e.n - 1] > 0 ? 1 : -1;
      return sign * std::abs(e.approx());
    }
    sign = az != bz ? (az > bz ? 1 : -1) : by != ay ? (by > ay ? 1 : -1) : 0;
    return 0.0;
  }
  sign = det > 0 ? 1 : -1;
  return det;
}

// A triangle prepared for rays along +x.
struct RayTriangle {
  double x[3], y[3], z[3];
  double xhi, ylo, yhi, zlo, zhi;
};

// Where the ray {(s, py, pz), s real} crosses t, if it does.
bool crossing(const RayTriangle& t, double py, double pz, double& xc) {
  if (py < t.ylo || py > t.yhi || pz < t.zlo || pz > t.zhi) return false;
  int s0, s1, s2;
  const double w0 = orient(t.y[1], t.z[1], t.y[2], t.z[2], py, pz, s0);
  if (s0 == 0) return false;
  const double w1 = orient(t.y[2], t.z[2], t.y[0], t.z[0], py, pz, s1);
  if (s1 != s0) return false;
  const double w2 = orient(t.y[0], t.z[0], t.y[1], t.z[1], py, pz, s2);
  if (s2 != s0) return false;
  // The weights share one sign (or are zero), so this is a convex combination; clamping only
  // guards against rounding.
  xc = (w0 * t.x[0] + w1 * t.x[1] + w2 * t.x[2]) / (w0 + w1 + w2);
  xc = std::clamp(xc, std::min({t.x[0], t.x[1], t.x[2]}), t.xhi);
  return true;
}

// Centre of cell `i` along one axis: one expression everywhere, so every rank gets the same bits.
double centre(double origin, double h, int i) { return origin + (static_cast<double>(i) + 0.5) * h; }

// The cells [first, last] of `box` along an axis whose centres may lie in [lo, hi]; one cell wider on
// each side than the division suggests, so rounding never drops one (the exact tests decide).
bool cell_range(double lo, double hi, double origin, double h, int box_lo, int box_hi, int& first, int& last) {
  const double a = std::floor((lo - origin) / h - 0.5) - 1;
  const double b = std::ceil((hi - origin) / h - 0.5) + 1;
  if (!(b >= box_lo) || !(a < box_hi)) return false;
  first = a < box_lo ? box_lo : static_cast<int>(a);
  last = b > box_hi - 1 ? box_hi - 1 : static_cast<int>(b);
  return first <= last;
}

// Index lists in compressed-row form: items of bin b are items[start[b] .. start[b + 1]).
struct Bins {
  std::vector<std::size_t> start;
  std::vector<std::uint32_t> items;
};

}  // namespace

TriangleMesh read_stl(const std::string& path) {
  const std::string data = read_whole_file(path);
  TriangleMesh m;
  m.source = path;
  const std::uint64_t size = data.size();
  const std::uint64_t count = size >= 84 ? get_u32(reinterpret_cast<const unsigned char*>(data.data()) + 80) : 0;
  const std::uint64_t expected = 84 + 50 * count;
  if (size >= 84 && expected == size) {
    m.triangles = parse_binary(path, data);
  } else if (starts_with_solid(data) && looks_like_text(data)) {
    m.triangles = AsciiParser(path, data).parse();
  } else if (size == 0) {
    throw InputError(path + ": the STL file is empty");
  } else if (size < 84) {
    throw InputError(
        strprintf("%s: not an ASCII STL file (it does not start with 'solid') and too short for a "
                  "binary one: %llu bytes, fewer than the 84 of a binary header",
                  path.c_str(), static_cast<unsigned long long>(size)));
  } else if (size < expected) {
    throw InputError(
        strprintf("%s: truncated binary STL file: the header announces %llu triangles, which take "
                  "84 + 50 * %llu = %llu bytes, but the file has %llu",
                  path.c_str(), static_cast<unsigned long long>(count), static_cast<unsigned long long>(count),
                  static_cast<unsigned long long>(expected), static_cast<unsigned long long>(size)));
  } else {
    throw InputError(
        strprintf("%s: binary STL file with a wrong triangle count: the header announces %llu "
                  "triangles (%llu bytes), but the file has %llu bytes (room for %llu triangles)",
                  path.c_str(), static_cast<unsigned long long>(count), static_cast<unsigned long long>(expected),
                  static_cast<unsigned long long>(size), static_cast<unsigned long long>((size - 84) / 50)));
  }
  check_mesh(path, m.triangles);
  update_bounds(m);
  return m;
}

void transform(TriangleMesh& m, double scale, const Vec3d& offset) {
  if (!(scale > 0) || !std::isfinite(scale))
    throw InputError(strprintf("%s: the scale factor must be positive and finite, not %g", m.source.c_str(), scale));
  if (!is_finite(offset))
    throw InputError(strprintf("%s: the offset %s is not finite", m.source.c_str(), point_str(offset).c_str()));
  for (Triangle& t : m.triangles)
    for (Vec3d& v : t.v) v = {scale * v.x + offset.x, scale * v.y + offset.y, scale * v.z + offset.z};
  update_bounds(m);
}

std::vector<unsigned char> voxelize(const TriangleMesh& m, const Box& box, const double origin[3], const double h[3]) {
  for (int d = 0; d < 3; ++d)
    if (!(h[d] > 0) || !std::isfinite(h[d]) || !std::isfinite(origin[d]))
      throw Error(strprintf("voxelize: cell size %g and origin %g along axis %d must be finite, the size positive",
                            h[d], origin[d], d));
  const int nx = box.size(0), ny = box.size(1), nz = box.size(2);
  std::vector<unsigned char> inside(static_cast<std::size_t>(box.volume()), 0);
  if (box.empty()) return inside;
  if (m.triangles.size() > std::numeric_limits<std::uint32_t>::max())
    throw Error(m.source + ": too many triangles to voxelize");

  // A triangle whose crossings all lie at or left of the first centre never counts (only crossings
  // right of a centre do), so it may be dropped; this depends on the box but cannot change a cell.
  const double x_first = centre(origin[0], h[0], box.lo[0]);
  std::vector<RayTriangle> tris;
  tris.reserve(m.triangles.size());
  for (const Triangle& t : m.triangles) {
    RayTriangle r;
    for (int v = 0; v < 3; ++v) {
      r.x[v] = t.v[v].x;
      r.y[v] = t.v[v].y;
      r.z[v] = t.v[v].z;
    }
    r.xhi = std::max({r.x[0], r.x[1], r.x[2]});
    r.ylo = std::min({r.y[0], r.y[1], r.y[2]});
    r.yhi = std::max({r.y[0], r.y[1], r.y[2]});
    r.zlo = std::min({r.z[0], r.z[1], r.z[2]});
    r.zhi = std::max({r.z[0], r.z[1], r.z[2]});
    if (r.xhi > x_first) tris.push_back(r);
  }

  // Bin the triangles by the z-layers of cell centres they may span; each layer is then binned by
  // rows on its own, which keeps memory proportional to the triangles, not to rows x triangles.
  Bins layers;
  layers.start.assign(static_cast<std::size_t>(nz) + 1, 0);
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<std::size_t> fill(layers.start.begin(), layers.start.end() - 1);
    for (std::size_t t = 0; t < tris.size(); ++t) {
      int k0, k1;
      if (!cell_range(tris[t].zlo, tris[t].zhi, origin[2], h[2], box.lo[2], box.hi[2], k0, k1)) continue;
      for (int k = k0; k <= k1; ++k) {
        const auto kk = static_cast<std::size_t>(k - box.lo[2]);
        if (pass == 0)
          ++layers.start[kk + 1];
        else
          layers.items[fill[kk]++] = static_cast<std::uint32_t>(t);
      }
    }
    if (pass == 0) {
      for (int k = 0; k < nz; ++k) layers.start[k + 1] += layers.start[k];
      layers.items.resize(layers.start.back());
    }
  }

  // Layers are independent; dynamic scheduling because the surface crosses some far more than others.
#pragma omp parallel
  {
    Bins rows;
    std::vector<double> xs;
#pragma omp for schedule(dynamic, 1)
    for (int kk = 0; kk < nz; ++kk) {
      const int k = box.lo[2] + kk;
      const double pz = centre(origin[2], h[2], k);
      const std::size_t b0 = layers.start[kk], b1 = layers.start[kk + 1];
      rows.start.assign(static_cast<std::size_t>(ny) + 1, 0);
      for (int pass = 0; pass < 2; ++pass) {
        std::vector<std::size_t> fill(rows.start.begin(), rows.start.end() - 1);
        for (std::size_t b = b0; b < b1; ++b) {
          const RayTriangle& t = tris[layers.items[b]];
          if (pz < t.zlo || pz > t.zhi) continue;
          int j0, j1;
          if (!cell_range(t.ylo, t.yhi, origin[1], h[1], box.lo[1], box.hi[1], j0, j1)) continue;
          for (int j = j0; j <= j1; ++j) {
            const auto jj = static_cast<std::size_t>(j - box.lo[1]);
            if (pass == 0)
              ++rows.start[jj + 1];
            else
              rows.items[fill[jj]++] = layers.items[b];
          }
        }
        if (pass == 0) {
          for (int j = 0; j < ny; ++j) rows.start[j + 1] += rows.start[j];
          rows.items.resize(rows.start.back());
        }
      }
      for (int jj = 0; jj < ny; ++jj) {
        const double py = centre(origin[1], h[1], box.lo[1] + jj);
        xs.clear();
        for (std::size_t r = rows.start[jj]; r < rows.start[jj + 1]; ++r) {
          double xc;
          if (crossing(tris[rows.items[r]], py, pz, xc)) xs.push_back(xc);
        }
        if (xs.empty()) continue;
        std::sort(xs.begin(), xs.end());
        // Inside when an odd number of crossings lie right of the centre.
        unsigned char* row = inside.data() + (static_cast<std::size_t>(kk) * ny + jj) * nx;
        std::size_t left = 0;  // crossings at or left of the current centre
        for (int ii = 0; ii < nx; ++ii) {
          const double px = centre(origin[0], h[0], box.lo[0] + ii);
          while (left < xs.size() && xs[left] <= px) ++left;
          row[ii] = static_cast<unsigned char>((xs.size() - left) & 1);
        }
      }
    }
  }
  return inside;
}

void write_stl_binary(const std::string& path, const std::vector<Triangle>& tris) {
  if (tris.size() > std::numeric_limits<std::uint32_t>::max())
    throw Error(strprintf("%s: %zu triangles do not fit a binary STL file", path.c_str(), tris.size()));
  std::vector<unsigned char> out(84 + 50 * tris.size(), 0);
  // The header must not start with "solid", or other readers may take the file for ASCII.
  const char header[] = "binary STL written by cumulus";
  std::memcpy(out.data(), header, sizeof header - 1);
  put_u32(out.data() + 80, static_cast<std::uint32_t>(tris.size()));
  for (std::size_t t = 0; t < tris.size(); ++t) {
    const Triangle& tri = tris[t];
    Vec3d n = cross(sub(tri.v[1], tri.v[0]), sub(tri.v[2], tri.v[0]));
    const double len = std::sqrt(n.x * n.x + n.y * n.y + n.z * n.z);
    if (len > 0) n = {n.x / len, n.y / len, n.z / len};
    const Vec3d rec[4] = {n, tri.v[0], tri.v[1], tri.v[2]};
    unsigned char* p = out.data() + 84 + 50 * t;
    for (const Vec3d& v : rec)
      for (const double c : {v.x, v.y, v.z}) {
        put_u32(p, std::bit_cast<std::uint32_t>(static_cast<float>(c)));
        p += 4;
      }
  }
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw Error(path + ": cannot create the STL file: " + std::strerror(errno));
  const bool written = std::fwrite(out.data(), 1, out.size(), f) == out.size();
  if (!(std::fclose(f) == 0 && written)) throw Error(path + ": cannot write the STL file: " + std::strerror(errno));
}

void write_stl_ascii(const std::string& path, const std::vector<Triangle>& tris) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) throw Error(path + ": cannot create the STL file: " + std::strerror(errno));
  bool ok = std::fprintf(f, "solid cumulus\n") > 0;
  for (const Triangle& tri : tris) {
    Vec3d n = cross(sub(tri.v[1], tri.v[0]), sub(tri.v[2], tri.v[0]));
    const double len = std::sqrt(n.x * n.x + n.y * n.y + n.z * n.z);
    if (len > 0) n = {n.x / len, n.y / len, n.z / len};
    ok = ok && std::fprintf(f, "  facet normal %.9g %.9g %.9g\n    outer loop\n", n.x, n.y, n.z) > 0;
    for (const Vec3d& v : tri.v) ok = ok && std::fprintf(f, "      vertex %.17g %.17g %.17g\n", v.x, v.y, v.z) > 0;
    ok = ok && std::fprintf(f, "    endloop\n  endfacet\n") > 0;
  }
  ok = ok && std::fprintf(f, "endsolid cumulus\n") > 0;
  if (!(std::fclose(f) == 0 && ok)) throw Error(path + ": cannot write the STL file: " + std::strerror(errno));
}

std::vector<Triangle> make_sphere_triangles(const Vec3d& c, double radius, int subdivisions) {
  if (subdivisions < 1 || !(radius > 0) || !std::isfinite(radius) || !is_finite(c))
    throw Error(strprintf("make_sphere_triangles: needs subdivisions >= 1 (%d) and a positive radius (%g)",
                          subdivisions, radius));
  const double phi = (1 + std::sqrt(5.0)) / 2;
  const Vec3d ico[12] = {{-1, phi, 0},  {1, phi, 0},  {-1, -phi, 0}, {1, -phi, 0}, {0, -1, phi},  {0, 1, phi},
                         {0, -1, -phi}, {0, 1, -phi}, {phi, 0, -1},  {phi, 0, 1},  {-phi, 0, -1}, {-phi, 0, 1}};
  const int faces[20][3] = {{0, 11, 5},  {0, 5, 1},  {0, 1, 7},  {0, 7, 10}, {0, 10, 11}, {1, 5, 9}, {5, 11, 4},
                            {11, 10, 2}, {10, 7, 6}, {7, 1, 8},  {3, 9, 4},  {3, 4, 2},   {3, 2, 6}, {3, 6, 8},
                            {3, 8, 9},   {4, 9, 5},  {2, 4, 11}, {6, 2, 10}, {8, 6, 7},   {9, 8, 1}};
  const int n = subdivisions;
  // A point with integer weights on icosahedron vertices. The weights are summed in the order of
  // the vertex numbers, so faces that share an edge or a corner compute bit-identical points and
  // the mesh is closed under exact welding.
  auto point = [&](const int ids[3], const int w[3]) {
    int order[3] = {0, 1, 2};
    std::sort(order, order + 3, [&](int a, int b) { return ids[a] < ids[b]; });
    Vec3d p{0, 0, 0};
    for (const int o : order) {
      if (w[o] == 0) continue;
      p = {p.x + w[o] * ico[ids[o]].x, p.y + w[o] * ico[ids[o]].y, p.z + w[o] * ico[ids[o]].z};
    }
    const double s = radius / std::sqrt(p.x * p.x + p.y * p.y + p.z * p.z);
    return Vec3d{c.x + s * p.x, c.y + s * p.y, c.z + s * p.z};
  };
  std::vector<Triangle> tris;
  tris.reserve(20 * static_cast<std::size_t>(n) * n);
  std::vector<Vec3d> grid(static_cast<std::size_t>(n + 1) * (n + 1));
  for (const auto& face : faces) {
    int ids[3] = {face[0], face[1], face[2]};
    // Outward: the face's normal points away from the centre.
    const Vec3d nrm = cross(sub(ico[ids[1]], ico[ids[0]]), sub(ico[ids[2]], ico[ids[0]]));
    if (nrm.x * ico[ids[0]].x + nrm.y * ico[ids[0]].y + nrm.z * ico[ids[0]].z < 0) std::swap(ids[1], ids[2]);
    for (int a = 0; a <= n; ++a)
      for (int b = 0; a + b <= n; ++b) {
        const int w[3] = {n - a - b, a, b};
        grid[static_cast<std::size_t>(a) * (n + 1) + b] = point(ids, w);
      }
    auto g = [&](int a, int b) { return grid[static_cast<std::size_t>(a) * (n + 1) + b]; };
    // Sub-triangles keep the face's orientation: (a, b) -> a Q + b R is an affine map.
    for (int a = 0; a < n; ++a)
      for (int b = 0; a + b < n; ++b) {
        tris.push_back({{g(a, b), g(a + 1, b), g(a, b + 1)}});
        if (a + b < n - 1) tris.push_back({{g(a + 1, b), g(a + 1, b + 1), g(a, b + 1)}});
      }
  }
  return tris;
}

}  // namespace cumulus
