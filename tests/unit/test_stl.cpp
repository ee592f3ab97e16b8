#include <gtest/gtest.h>
#include <stdlib.h>  // mkdtemp

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "mesh/stl.hpp"

using namespace cumulus;

namespace {

Vec3d add(const Vec3d& a, const Vec3d& b) { return {a.x + b.x, a.y + b.y, a.z + b.z}; }
Vec3d sub(const Vec3d& a, const Vec3d& b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }
Vec3d mul(double s, const Vec3d& a) { return {s * a.x, s * a.y, s * a.z}; }
double dot(const Vec3d& a, const Vec3d& b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
Vec3d cross(const Vec3d& a, const Vec3d& b) {
  return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}

// The parallelepiped v0 + a e0 + b e1 + c e2 (a, b, c in [0, 1]) as 12 outward triangles.
std::vector<Triangle> make_box(const Vec3d& v0, const Vec3d e[3]) {
  auto corner = [&](int a, int b, int c) { return add(v0, add(mul(a, e[0]), add(mul(b, e[1]), mul(c, e[2])))); };
  const Vec3d mid = add(v0, mul(0.5, add(e[0], add(e[1], e[2]))));
  std::vector<Triangle> tris;
  for (int axis = 0; axis < 3; ++axis)
    for (int side = 0; side < 2; ++side) {
      Vec3d q[4];
      const int uv[4][2] = {{0, 0}, {1, 0}, {1, 1}, {0, 1}};
      for (int c = 0; c < 4; ++c) {
        int w[3];
        w[axis] = side;
        w[(axis + 1) % 3] = uv[c][0];
        w[(axis + 2) % 3] = uv[c][1];
        q[c] = corner(w[0], w[1], w[2]);
      }
      for (Triangle t : {Triangle{{q[0], q[1], q[2]}}, Triangle{{q[0], q[2], q[3]}}}) {
        if (dot(cross(sub(t.v[1], t.v[0]), sub(t.v[2], t.v[0])), sub(t.v[0], mid)) < 0) std::swap(t.v[1], t.v[2]);
        tris.push_back(t);
      }
    }
  return tris;
}

// The rotated cube of the voxelization tests: edges 2 (1,2,2), 2 (2,1,-2), 2 (2,-2,1), orthogonal
// and of length 6. Every corner has y and z on cell-centre lines (h = 1, origin 0), so rows run
// exactly through corners and along-edge points; x0 = 10.125 keeps every cell centre off the faces.
const Vec3d kCubeCorner{10.125, 4.5, 5.5};
const Vec3d kCubeEdges[3] = {{2, 4, 4}, {4, 2, -4}, {4, -4, 2}};

bool in_rotated_cube(const Vec3d& p) {
  const Vec3d q = sub(p, kCubeCorner);
  for (const Vec3d& e : kCubeEdges) {
    const double s = dot(q, e);
    if (!(s > 0 && s < dot(e, e))) return false;
  }
  return true;
}

double signed_volume(const std::vector<Triangle>& tris) {
  double v = 0;
  for (const Triangle& t : tris) v += dot(t.v[0], cross(t.v[1], t.v[2])) / 6;
  return v;
}

std::vector<unsigned char> voxelize_split(const TriangleMesh& m, const Box& whole, int axis, int at,
                                          const double origin[3], const double h[3]) {
  Box a = whole, b = whole;
  a.hi[axis] = at;
  b.lo[axis] = at;
  const auto va = voxelize(m, a, origin, h), vb = voxelize(m, b, origin, h);
  std::vector<unsigned char> out(static_cast<std::size_t>(whole.volume()));
  for (const auto& [part, v] : {std::pair{a, &va}, std::pair{b, &vb}})
    for (int k = part.lo[2]; k < part.hi[2]; ++k)
      for (int j = part.lo[1]; j < part.hi[1]; ++j)
        for (int i = part.lo[0]; i < part.hi[0]; ++i)
          out[((static_cast<std::size_t>(k - whole.lo[2]) * whole.size(1)) + (j - whole.lo[1])) * whole.size(0) +
              (i - whole.lo[0])] =
              (*v)[((static_cast<std::size_t>(k - part.lo[2]) * part.size(1)) + (j - part.lo[1])) * part.size(0) +
                   (i - part.lo[0])];
  return out;
}

class Stl : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = ::testing::TempDir() + "cumulus_stl_XXXXXX";
    ASSERT_NE(mkdtemp(templ.data()), nullptr) << std::strerror(errno);
    dir_ = templ;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

  // The message of the InputError that reading `file` raises ("" if none).
  static std::string read_error(const std::string& file) {
    try {
      read_stl(file);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  }

  std::vector<std::string> lines_of(const std::string& file) const {
    std::ifstream in(file);
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    return lines;
  }
  void write_lines(const std::string& file, const std::vector<std::string>& lines) const {
    std::ofstream out(file);
    for (const auto& l : lines) out << l << "\n";
  }

  std::string dir_;
};

// The double nearest to x in single precision. Through a volatile: GCC 12.2 at -O2 vectorizes two
// adjacent `y = (double)(float)x` and then drops the conversions as if they were exact.
double single(double x) {
  volatile float f = static_cast<float>(x);
  return f;
}

void expect_same(const std::vector<Triangle>& a, const std::vector<Triangle>& b, bool as_float) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t t = 0; t < a.size(); ++t)
    for (int v = 0; v < 3; ++v) {
      const Vec3d& p = a[t].v[v];
      const Vec3d want = as_float ? Vec3d{single(p.x), single(p.y), single(p.z)} : p;
      ASSERT_EQ(b[t].v[v].x, want.x) << "triangle " << t << " vertex " << v;
      ASSERT_EQ(b[t].v[v].y, want.y) << "triangle " << t << " vertex " << v;
      ASSERT_EQ(b[t].v[v].z, want.z) << "triangle " << t << " vertex " << v;
    }
}

}  // namespace

TEST_F(Stl, RoundTripAsciiAndBinary) {
  const auto tris = make_sphere_triangles({0.1, -0.2, 0.3}, 1.7, 5);
  ASSERT_EQ(tris.size(), 20u * 5 * 5);

  write_stl_ascii(path("a.stl"), tris);
  const TriangleMesh a = read_stl(path("a.stl"));
  EXPECT_EQ(a.source, path("a.stl"));
  expect_same(tris, a.triangles, false);  // %.17g: every double comes back exactly

  write_stl_binary(path("b.stl"), tris);
  const TriangleMesh b = read_stl(path("b.stl"));
  expect_same(tris, b.triangles, true);
  double lo_x = 1e300, hi_z = -1e300;
  for (const Triangle& t : b.triangles)
    for (const Vec3d& p : t.v) lo_x = std::min(lo_x, p.x), hi_z = std::max(hi_z, p.z);
  EXPECT_EQ(b.lo.x, lo_x);
  EXPECT_EQ(b.hi.z, hi_z);

  // A binary header may start with "solid": the size decides.
  {
    std::fstream f(path("b.stl"), std::ios::in | std::ios::out | std::ios::binary);
    f.write("solid looks like text", 21);
  }
  expect_same(tris, read_stl(path("b.stl")).triangles, true);

  // Several solids in one ASCII file, keywords in capitals, a '+' sign, free line breaks.
  std::ofstream(path("c.stl")) << R"(SOLID one
facet normal 0 0 0 outer loop vertex 0 0 0 vertex 0 1 0 vertex 1 0 0 endloop endfacet
facet normal 0 0 0
  outer loop
    vertex 0 0 0
    vertex 0 0 1
    vertex 0 1 0
  endloop
endfacet
endsolid one
solid two
facet normal 0 0 0 outer loop vertex 0 0 0 vertex +1 0 0 vertex 0 0 1 endloop endfacet
facet normal 0 0 0 outer loop vertex 1 0 0 vertex 0 1 0 vertex 0 0 1 endloop endfacet
endsolid)";
  const TriangleMesh c = read_stl(path("c.stl"));
  EXPECT_EQ(c.triangles.size(), 4u);
  EXPECT_EQ(c.hi.x, 1.0);

  TriangleMesh t = c;
  transform(t, 2.0, {1, 2, 3});
  EXPECT_EQ(t.lo.x, 1.0);
  EXPECT_EQ(t.hi.x, 3.0);
  EXPECT_EQ(t.hi.z, 5.0);
  EXPECT_THROW(transform(t, 0.0, {0, 0, 0}), InputError);
}

TEST_F(Stl, SphereIsClosedAndOutward) {
  for (int n : {1, 2, 7}) {
    const auto tris = make_sphere_triangles({1, 2, 3}, 2.0, n);
    write_stl_binary(path("s.stl"), tris);
    EXPECT_NO_THROW(read_stl(path("s.stl"))) << n;  // the closedness check
    const double v = signed_volume(tris);
    EXPECT_GT(v, 0) << n;
    EXPECT_LT(v, 4.0 / 3.0 * std::numbers::pi * 8.0) << n;  // inscribed
  }
}

TEST_F(Stl, CubeVoxelsAreExactThroughCornersAndEdges) {
  write_stl_binary(path("cube.stl"), make_box(kCubeCorner, kCubeEdges));
  const TriangleMesh m = read_stl(path("cube.stl"));
  const double origin[3] = {0, 0, 0}, h[3] = {1, 1, 1};
  const Box whole(0, -2, -1, 24, 14, 15);  // negative indices: ghost cells
  const auto v = voxelize(m, whole, origin, h);
  ASSERT_EQ(v.size(), static_cast<std::size_t>(whole.volume()));

  std::size_t n_inside = 0, p = 0, rows_through_corners = 0;
  for (int k = whole.lo[2]; k < whole.hi[2]; ++k)
    for (int j = whole.lo[1]; j < whole.hi[1]; ++j) {
      for (const Triangle& t : m.triangles)
        for (const Vec3d& c : t.v)
          if (c.y == j + 0.5 && c.z == k + 0.5) ++rows_through_corners;
      for (int i = whole.lo[0]; i < whole.hi[0]; ++i, ++p) {
        const Vec3d c{i + 0.5, j + 0.5, k + 0.5};
        for (const Vec3d& e : kCubeEdges) {  // no centre within 1/8 of a face
          const double s = dot(sub(c, kCubeCorner), e);
          ASSERT_GE(std::min(std::abs(s), std::abs(s - dot(e, e))), 0.25);
        }
        const bool want = in_rotated_cube(c);
        n_inside += want;
        ASSERT_EQ(v[p], want ? 1 : 0) << "cell " << i << " " << j << " " << k;
      }
    }
  EXPECT_GT(rows_through_corners, 0u);
  EXPECT_NEAR(static_cast<double>(n_inside), 216.0, 30.0);

  // Any split gives the same bits: a cell depends only on its own index.
  for (int axis = 0; axis < 3; ++axis)
    for (int at : {whole.lo[axis] + 1, 5, 9, whole.hi[axis] - 1})
      EXPECT_EQ(voxelize_split(m, whole, axis, at, origin, h), v) << "axis " << axis << " at " << at;

  // An axis-aligned box with faces between cell centres, on a shifted, anisotropic grid.
  const Vec3d edges[3] = {{5.5, 0, 0}, {0, 5.3, 0}, {0, 0, 5.8}};
  write_stl_ascii(path("aligned.stl"), make_box({2.2, 1.3, 3.1}, edges));
  const TriangleMesh a = read_stl(path("aligned.stl"));
  const double o2[3] = {-1, 0.5, 0.25}, h2[3] = {0.5, 0.75, 1.0};
  const Box b2(-3, -1, 0, 20, 12, 11);
  const auto va = voxelize(a, b2, o2, h2);
  p = 0;
  for (int k = b2.lo[2]; k < b2.hi[2]; ++k)
    for (int j = b2.lo[1]; j < b2.hi[1]; ++j)
      for (int i = b2.lo[0]; i < b2.hi[0]; ++i, ++p) {
        const double x = o2[0] + (i + 0.5) * h2[0], y = o2[1] + (j + 0.5) * h2[1], z = o2[2] + (k + 0.5) * h2[2];
        const bool want = x > 2.2 && x < 7.7 && y > 1.3 && y < 6.6 && z > 3.1 && z < 8.9;
        ASSERT_EQ(va[p], want ? 1 : 0) << "cell " << i << " " << j << " " << k;
      }
}

TEST_F(Stl, SphereVolumeAndPointTest) {
  const Vec3d c{12.3, 11.7, 12.1};
  const double r = 10;
  write_stl_binary(path("sphere.stl"), make_sphere_triangles(c, r, 16));
  const TriangleMesh m = read_stl(path("sphere.stl"));
  const double origin[3] = {0, 0, 0}, h[3] = {1, 1, 1};
  const Box box(-1, -1, -1, 25, 25, 25);
  const auto v = voxelize(m, box, origin, h);
  std::size_t count = 0, p = 0;
  for (int k = box.lo[2]; k < box.hi[2]; ++k)
    for (int j = box.lo[1]; j < box.hi[1]; ++j)
      for (int i = box.lo[0]; i < box.hi[0]; ++i, ++p) {
        count += v[p];
        const double d = std::sqrt(dot(sub({i + 0.5, j + 0.5, k + 0.5}, c), sub({i + 0.5, j + 0.5, k + 0.5}, c)));
        if (std::abs(d - r) > 1.0) {
          ASSERT_EQ(v[p], d < r ? 1 : 0) << "cell " << i << " " << j << " " << k;
        }
      }
  const double volume = 4.0 / 3.0 * std::numbers::pi * r * r * r;
  EXPECT_NEAR(static_cast<double>(count), volume, 0.03 * volume);
  EXPECT_EQ(voxelize_split(m, box, 1, 12, origin, h), v);
}

TEST_F(Stl, ErrorsNameFileLineAndCause) {
  // Missing file.
  EXPECT_NE(read_error(path("missing.stl")).find(path("missing.stl")), std::string::npos);
  EXPECT_NE(read_error(path("missing.stl")).find("cannot open"), std::string::npos);

  const Vec3d edges[3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
  const auto cube = make_box({0, 0, 0}, edges);

  // Truncated binary, and a count that does not match the size.
  write_stl_binary(path("trunc.stl"), cube);
  std::filesystem::resize_file(path("trunc.stl"), 84 + 50 * 12 - 7);
  EXPECT_NE(read_error(path("trunc.stl")).find("truncated"), std::string::npos) << read_error(path("trunc.stl"));
  std::filesystem::resize_file(path("trunc.stl"), 84 + 50 * 12 + 50);
  EXPECT_NE(read_error(path("trunc.stl")).find("wrong triangle count"), std::string::npos);
  std::filesystem::resize_file(path("trunc.stl"), 40);
  EXPECT_NE(read_error(path("trunc.stl")).find("too short"), std::string::npos);

  // ASCII: line 1 solid, then 7 lines per facet: vertex lines of facet 2 are 11, 12, 13.
  write_stl_ascii(path("good.stl"), cube);
  const auto good = lines_of(path("good.stl"));
  ASSERT_NE(good[10].find("vertex"), std::string::npos);
  auto typo = good;
  typo[10].replace(typo[10].find("vertex"), 6, "vertx");
  write_lines(path("typo.stl"), typo);
  std::string msg = read_error(path("typo.stl"));
  EXPECT_NE(msg.find(path("typo.stl") + ":11:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected 'vertex', found 'vertx'"), std::string::npos) << msg;

  auto bad_number = good;
  bad_number[11] = "      vertex 1 0.5.1 0";
  write_lines(path("number.stl"), bad_number);
  msg = read_error(path("number.stl"));
  EXPECT_NE(msg.find(":12:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected a number"), std::string::npos) << msg;

  auto no_endloop = good;
  no_endloop.erase(no_endloop.begin() + 13);  // facet 2's endloop
  write_lines(path("endloop.stl"), no_endloop);
  msg = read_error(path("endloop.stl"));
  EXPECT_NE(msg.find(":14: expected 'endloop', found 'endfacet'"), std::string::npos) << msg;

  auto no_endfacet = good;
  no_endfacet.erase(no_endfacet.begin() + 7);  // facet 1's endfacet
  write_lines(path("endfacet.stl"), no_endfacet);
  msg = read_error(path("endfacet.stl"));
  EXPECT_NE(msg.find(":8: expected 'endfacet', found 'facet'"), std::string::npos) << msg;

  auto cut = good;
  cut.resize(20);
  write_lines(path("cut.stl"), cut);
  EXPECT_NE(read_error(path("cut.stl")).find("unexpected end of file"), std::string::npos);

  // Non-finite vertex, ASCII and binary.
  auto nan = good;
  nan[4] = "      vertex 0 nan 0";
  write_lines(path("nan.stl"), nan);
  msg = read_error(path("nan.stl"));
  EXPECT_NE(msg.find(":5:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not finite"), std::string::npos) << msg;
  auto nan_tris = cube;
  nan_tris[3].v[1].z = std::nan("");
  write_stl_binary(path("nan.bin.stl"), nan_tris);
  msg = read_error(path("nan.bin.stl"));
  EXPECT_NE(msg.find("triangle 3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("non-finite"), std::string::npos) << msg;

  // No triangles.
  write_stl_binary(path("empty.stl"), {});
  EXPECT_NE(read_error(path("empty.stl")).find("no triangles"), std::string::npos);
  write_lines(path("empty_ascii.stl"), {"solid nothing", "endsolid nothing"});
  EXPECT_NE(read_error(path("empty_ascii.stl")).find("no triangles"), std::string::npos);

  // Open mesh: one triangle removed leaves its three edges open.
  auto open = cube;
  open.erase(open.begin() + 4);
  write_stl_binary(path("open.stl"), open);
  msg = read_error(path("open.stl"));
  EXPECT_NE(msg.find("not closed: 3 edge(s)"), std::string::npos) << msg;

  // One triangle turned over: closed, but its edges run the wrong way.
  auto flipped = cube;
  std::swap(flipped[7].v[1], flipped[7].v[2]);
  write_stl_binary(path("flipped.stl"), flipped);
  EXPECT_NE(read_error(path("flipped.stl")).find("not closed: 3 edge(s)"), std::string::npos);

  // Degenerate triangle.
  auto degenerate = cube;
  degenerate[5].v[2] = degenerate[5].v[0];
  write_stl_binary(path("degenerate.stl"), degenerate);
  msg = read_error(path("degenerate.stl"));
  EXPECT_NE(msg.find("1 degenerate"), std::string::npos) << msg;
  EXPECT_NE(msg.find("triangle 5"), std::string::npos) << msg;
}
