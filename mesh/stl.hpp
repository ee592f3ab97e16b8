#pragma once
// STL triangle meshes: reading (ASCII and binary, with closedness checks), writing, and voxelizing
// obstacles onto the cells of a regular grid. Host code only.
#include <string>
#include <vector>

#include "core/box.hpp"

namespace cumulus {

struct Vec3d {
  double x, y, z;
};

struct Triangle {
  Vec3d v[3];
};

struct TriangleMesh {
  std::vector<Triangle> triangles;
  std::string source;  // the file it was read from, for messages
  Vec3d lo, hi;        // bounding box of all vertices
};

// Reads an ASCII or binary STL file. A file is binary when its size is 84 + 50 n for the count n
// in its header (a binary header may start with "solid" too); else ASCII if it starts with
// "solid" and holds only text. Throws InputError naming the file (and the line, for ASCII) for:
// an unreadable file, a truncated binary file or one whose size does not match its count,
// malformed ASCII, non-finite coordinates, no triangles, degenerate (zero-area) triangles, and a
// mesh that is not closed: after welding vertices by exact equality, every edge must be shared
// by exactly two triangles that run along it in opposite directions.
TriangleMesh read_stl(const std::string& path);

// x' = scale * x + offset for every vertex; updates lo and hi. scale must be positive and finite
// (a negative one would turn the mesh inside out).
void transform(TriangleMesh& m, double scale, const Vec3d& offset);

// 1 for every cell of `box` (global indices, ghosts allowed) whose centre origin + (idx + 0.5) h
// lies inside the closed mesh, else 0; stored at (k - lo2) ny nx + (j - lo1) nx + (i - lo0).
// A cell's value depends only on its global index and the mesh, never on `box`, so ranks that
// voxelize their own parts agree bit for bit with one rank doing the whole grid. A centre exactly
// on a face perpendicular to the row counts as inside on the face's low-x side (half-open rule).
std::vector<unsigned char> voxelize(const TriangleMesh& m, const Box& box, const double origin[3], const double h[3]);

// Writers; binary stores single precision, ASCII writes every double exactly (%.17g).
void write_stl_binary(const std::string& path, const std::vector<Triangle>& tris);
void write_stl_ascii(const std::string& path, const std::vector<Triangle>& tris);

// A closed, outward-oriented geodesic sphere: each edge of an icosahedron is split into
// `subdivisions` segments (>= 1) and the points are pushed onto the sphere, giving
// 20 * subdivisions^2 triangles (100 -> 200 000). Points shared by faces are bit-identical.
std::vector<Triangle> make_sphere_triangles(const Vec3d& centre, double radius, int subdivisions);

}  // namespace cumulus
