#include "io/output.hpp"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "core/error.hpp"
#include "core/strings.hpp"
#include "io/hdf5_file.hpp"
#include "io/run_directory.hpp"

namespace cumulus {

namespace fs = std::filesystem;

namespace {

struct SeriesEntry {
  double time;
  std::string file;  // relative to the run directory
};

const char* vtk_type(DType t) {
  switch (t) {
    case DType::f64: return "Float64";
    case DType::f32: return "Float32";
    case DType::i32: return "Int32";
    case DType::u16: return "UInt16";
    case DType::u8: return "UInt8";
    case DType::i64: return "Int64";
  }
  return "UInt8";
}

std::string xml_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '&') o += "&amp;";
    else if (c == '<') o += "&lt;";
    else if (c == '"') o += "&quot;";
    else o += c;
  }
  return o;
}

// Point extent "x0 x1 y0 y1 z0 z1" of a cell box (2D grids: z extent 0 0).
std::string extent(const Box& b, int ndim) {
  return strprintf("%d %d %d %d %d %d", b.lo[0], b.hi[0], b.lo[1], b.hi[1], ndim == 3 ? b.lo[2] : 0,
                   ndim == 3 ? b.hi[2] : 0);
}

// (c, k, j, i) -> (k, j, i, c): VTK and XDMF want the components of a cell together.
std::vector<unsigned char> interleave(const GridArray& a, std::vector<unsigned char> soa) {
  if (a.ncomp == 1) return soa;  // moved, not copied
  const std::size_t es = dtype_size(a.dtype), n = static_cast<std::size_t>(a.local_box.volume());
  std::vector<unsigned char> aos(soa.size());
  for (std::size_t c = 0; c < static_cast<std::size_t>(a.ncomp); ++c)
    for (std::size_t p = 0; p < n; ++p) std::memcpy(&aos[(p * a.ncomp + c) * es], &soa[(c * n + p) * es], es);
  return aos;
}

// Writes one appended-binary VTK XML piece: the header `xml` (ending in "_"), then each block as
// [uint64 size][bytes], then the closing tags; straight to the file, block by block, under a
// temporary name renamed into place, so that a reader never sees half a piece. Returns "" or the error.
std::string write_vtk_piece(const std::string& path, const std::string& xml,
                            const std::vector<std::vector<unsigned char>>& blocks) {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  bool ok = f != nullptr;
  if (ok) {
    ok = std::fwrite(xml.data(), 1, xml.size(), f) == xml.size();
    for (const auto& b : blocks) {
      const std::uint64_t n = b.size();
      ok = ok && std::fwrite(&n, sizeof(n), 1, f) == 1 && (n == 0 || std::fwrite(b.data(), 1, b.size(), f) == b.size());
    }
    const std::string tail = "\n  </AppendedData>\n</VTKFile>\n";
    ok = ok && std::fwrite(tail.data(), 1, tail.size(), f) == tail.size();
    ok = (std::fclose(f) == 0) && ok;
  }
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return "cannot write '" + path + "'";
  }
  return "";
}

// One array's dataset in an output HDF5 file: this rank's hyperslab at `start` of `count` cells of
// a `dims` array, the cell's components together (XDMF vectors want them so), with its units.
void write_cell_dataset(hid_t file, const GridArray& a, std::vector<hsize_t> dims, std::vector<hsize_t> start,
                        std::vector<hsize_t> count) {
  if (a.ncomp > 1) {
    dims.push_back(static_cast<hsize_t>(a.ncomp));
    start.push_back(0);
    count.push_back(static_cast<hsize_t>(a.ncomp));
  }
  const hid_t type = h5::native_type(static_cast<int>(a.dtype));
  h5::Handle d = h5::create_dataset(file, a.name, type, dims);
  const std::vector<unsigned char> data = interleave(a, a.read_local());
  h5::write_hyperslab(d, type, start, count, data.data(), true);
  h5::write_attr(d, "units", a.units);
}

// The XDMF <Attribute> of every array, cell-centred, read from `h5name` with cell dimensions `cdims`.
std::string xdmf_attributes(const std::vector<GridArray>& arrays, const std::string& cdims, const std::string& h5name) {
  std::string b;
  for (const GridArray& a : arrays) {
    const bool fl = a.dtype == DType::f64 || a.dtype == DType::f32;
    const std::string type = fl ? "Float" : (a.dtype == DType::i32 || a.dtype == DType::i64 ? "Int" : "UInt");
    const std::string kind = a.ncomp == 1 ? "Scalar" : (a.ncomp == 3 ? "Vector" : "Matrix");
    const std::string dims = a.ncomp == 1 ? cdims : cdims + " " + std::to_string(a.ncomp);
    b += strprintf("    <Attribute Name=\"%s\" AttributeType=\"%s\" Center=\"Cell\">\n", xml_escape(a.name).c_str(),
                   kind.c_str());
    b += strprintf("     <DataItem Dimensions=\"%s\" NumberType=\"%s\" Precision=\"%zu\" Format=\"HDF\">output/%s:/%s"
                   "</DataItem>\n    </Attribute>\n",
                   dims.c_str(), type.c_str(), dtype_size(a.dtype), h5name.c_str(), a.name.c_str());
  }
  return b;
}

// Existing series entries before `resume_time` (a restart continues the series without duplicates).
std::vector<SeriesEntry> read_series(const std::string& path, double resume_time, const std::regex& pattern) {
  std::vector<SeriesEntry> out;
  if (resume_time < 0) return out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, pattern)) {
      const double t = std::stod(m[1]);
      if (t <= resume_time) out.push_back({t, m[2]});
    }
  }
  return out;
}

// RUN_DIR/output, made by rank 0; a failure there is raised on every rank.
std::string create_output_directory(const std::string& run_dir, const Comm& comm) {
  const std::string dir = run_dir + "/output";
  comm.on_root([&] {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw Error("cannot create '" + dir + "': " + ec.message());
  });
  return dir;
}

class VtkWriter : public OutputWriter {
 public:
  VtkWriter(const std::string& run_dir, const std::string& base, const Comm& comm, double resume_time)
      : run_dir_(run_dir), base_(base), comm_(comm) {
    entries_ = read_series(series_path(), resume_time, std::regex("timestep=\"([^\"]+)\".*file=\"([^\"]+)\""));
  }
  std::string series_path() const override { return run_dir_ + "/" + base_ + ".pvd"; }

  void write(long step, double time, const GridGeometry& geo, const std::vector<GridArray>& arrays) override {
    const std::string dir = create_output_directory(run_dir_, comm_);
    std::string err;
    if (arrays.empty()) return;
    const std::string stem = strprintf("%s_%09ld", base_.c_str(), step);
    if (geo.cell_corners) {
      write_quads(dir, stem, time, geo, arrays);
      add_to_series(time, "output/" + stem + ".pvtu");
      comm_.barrier();
      return;
    }
    const Box& local = arrays.front().local_box;
    const Box& global = arrays.front().global_box;
    const int nd = geo.ndim;
    const std::string origin = strprintf("%.17g %.17g %.17g", geo.origin[0], geo.origin[1], geo.origin[2]);
    const std::string spacing = strprintf("%.17g %.17g %.17g", geo.spacing[0], geo.spacing[1], geo.spacing[2]);

    // This rank's piece: XML header, then the appended block of [uint64 size][bytes] per array.
    {
      std::string xml = "<?xml version=\"1.0\"?>\n<VTKFile type=\"ImageData\" version=\"1.0\" "
                        "byte_order=\"LittleEndian\" header_type=\"UInt64\">\n";
      xml += "  <ImageData WholeExtent=\"" + extent(local, nd) + "\" Origin=\"" + origin + "\" Spacing=\"" + spacing +
             "\">\n";
      xml += strprintf("    <FieldData>\n      <DataArray type=\"Float64\" Name=\"TimeValue\" NumberOfTuples=\"1\" "
                       "format=\"ascii\">%.17g</DataArray>\n    </FieldData>\n",
                       time);
      xml += "    <Piece Extent=\"" + extent(local, nd) + "\">\n      <CellData>\n";
      std::vector<std::vector<unsigned char>> blocks;
      std::uint64_t offset = 0;
      for (const GridArray& a : arrays) {
        blocks.push_back(interleave(a, a.read_local()));
        xml += strprintf("        <DataArray type=\"%s\" Name=\"%s\" NumberOfComponents=\"%d\" format=\"appended\" "
                         "offset=\"%llu\" units=\"%s\"/>\n",
                         vtk_type(a.dtype), xml_escape(a.name).c_str(), a.ncomp,
                         static_cast<unsigned long long>(offset), xml_escape(a.units).c_str());
        offset += sizeof(std::uint64_t) + blocks.back().size();
      }
      xml += "      </CellData>\n    </Piece>\n  </ImageData>\n  <AppendedData encoding=\"raw\">\n_";
      err = write_vtk_piece(strprintf("%s/%s_r%05d.vti", dir.c_str(), stem.c_str(), comm_.rank()), xml, blocks);
    }
    if (comm_.bitwise_or(err.empty() ? 0 : 1)) throw Error(err.empty() ? "a rank failed to write its output piece" : err);
    // Every piece's extent, for the .pvti on rank 0.
    std::vector<int> mine{local.lo[0], local.hi[0], local.lo[1], local.hi[1], local.lo[2], local.hi[2]};
    std::vector<int> all(comm_.is_root() ? 6 * static_cast<std::size_t>(comm_.size()) : 0);
    mpi_check(MPI_Gather(mine.data(), 6, MPI_INT, all.data(), 6, MPI_INT, 0, comm_.raw()), "MPI_Gather");
    if (comm_.is_root()) {
      std::string p = "<?xml version=\"1.0\"?>\n<VTKFile type=\"PImageData\" version=\"1.0\" "
                      "byte_order=\"LittleEndian\" header_type=\"UInt64\">\n";
      p += "  <PImageData WholeExtent=\"" + extent(global, nd) + "\" GhostLevel=\"0\" Origin=\"" + origin +
           "\" Spacing=\"" + spacing + "\">\n    <PCellData>\n";
      for (const GridArray& a : arrays)
        p += strprintf("      <PDataArray type=\"%s\" Name=\"%s\" NumberOfComponents=\"%d\"/>\n", vtk_type(a.dtype),
                       xml_escape(a.name).c_str(), a.ncomp);
      p += "    </PCellData>\n";
      for (int r = 0; r < comm_.size(); ++r) {
        const Box b(all[6 * r], all[6 * r + 2], all[6 * r + 4], all[6 * r + 1], all[6 * r + 3], all[6 * r + 5]);
        p += strprintf("    <Piece Extent=\"%s\" Source=\"%s_r%05d.vti\"/>\n", extent(b, nd).c_str(), stem.c_str(), r);
      }
      p += "  </PImageData>\n</VTKFile>\n";
      write_file_atomic(dir + "/" + stem + ".pvti", p);

    }
    add_to_series(time, "output/" + stem + ".pvti");
    comm_.barrier();
  }

 private:
  // Rank 0: the series, replacing an entry at the same time (a repeated output), times increasing.
  void add_to_series(double time, const std::string& file) {
    if (!comm_.is_root()) return;
    while (!entries_.empty() && entries_.back().time >= time) entries_.pop_back();
    entries_.push_back({time, file});
    std::string pvd = "<?xml version=\"1.0\"?>\n<VTKFile type=\"Collection\" version=\"0.1\" "
                      "byte_order=\"LittleEndian\">\n  <Collection>\n";
    for (const auto& e : entries_)
      pvd += strprintf("    <DataSet timestep=\"%.17g\" group=\"\" part=\"0\" file=\"%s\"/>\n", e.time, e.file.c_str());
    pvd += "  </Collection>\n</VTKFile>\n";
    write_file_atomic(series_path(), pvd);
  }

  // A surface of quadrilaterals: one .vtu piece per rank (4 points per cell, not shared, so that
  // pieces need no global numbering) and a .pvtu on rank 0.
  void write_quads(const std::string& dir, const std::string& stem, double time, const GridGeometry& geo,
                   const std::vector<GridArray>& arrays) {
    std::string err;
    const std::vector<double> pts = geo.cell_corners();
    const std::uint64_t npc = static_cast<std::uint64_t>(geo.corners_per_cell);
    const std::uint64_t ncell = pts.size() / (3 * npc);
    std::vector<std::vector<unsigned char>> blocks;
    std::string xml = "<?xml version=\"1.0\"?>\n<VTKFile type=\"UnstructuredGrid\" version=\"1.0\" "
                      "byte_order=\"LittleEndian\" header_type=\"UInt64\">\n  <UnstructuredGrid>\n";
    xml += strprintf("    <FieldData>\n      <DataArray type=\"Float64\" Name=\"TimeValue\" NumberOfTuples=\"1\" "
                     "format=\"ascii\">%.17g</DataArray>\n    </FieldData>\n",
                     time);
    xml += strprintf("    <Piece NumberOfPoints=\"%llu\" NumberOfCells=\"%llu\">\n",
                     static_cast<unsigned long long>(npc * ncell), static_cast<unsigned long long>(ncell));
    std::uint64_t offset = 0;
    auto add_block = [&](std::vector<unsigned char> b) {
      const std::uint64_t at = offset;
      offset += sizeof(std::uint64_t) + b.size();
      blocks.push_back(std::move(b));
      return static_cast<unsigned long long>(at);
    };
    auto raw = [](const void* p, std::size_t n) {
      const unsigned char* c = static_cast<const unsigned char*>(p);
      return std::vector<unsigned char>(c, c + n);
    };
    xml += "      <CellData>\n";
    for (const GridArray& a : arrays) {
      const unsigned long long at = add_block(interleave(a, a.read_local()));
      xml += strprintf("        <DataArray type=\"%s\" Name=\"%s\" NumberOfComponents=\"%d\" format=\"appended\" "
                       "offset=\"%llu\" units=\"%s\"/>\n",
                       vtk_type(a.dtype), xml_escape(a.name).c_str(), a.ncomp, at, xml_escape(a.units).c_str());
    }
    xml += "      </CellData>\n      <Points>\n";
    xml += strprintf("        <DataArray type=\"Float64\" NumberOfComponents=\"3\" format=\"appended\" offset=\"%llu\"/>\n",
                     add_block(raw(pts.data(), pts.size() * sizeof(double))));
    xml += "      </Points>\n      <Cells>\n";
    std::vector<std::int64_t> conn(npc * ncell), offs(ncell);
    std::vector<std::uint8_t> types(ncell, npc == 1 ? 1 : 9);  // VTK_VERTEX or VTK_QUAD
    for (std::uint64_t c = 0; c < npc * ncell; ++c) conn[c] = static_cast<std::int64_t>(c);
    for (std::uint64_t c = 0; c < ncell; ++c) offs[c] = static_cast<std::int64_t>(npc * (c + 1));
    xml += strprintf("        <DataArray type=\"Int64\" Name=\"connectivity\" format=\"appended\" offset=\"%llu\"/>\n",
                     add_block(raw(conn.data(), conn.size() * sizeof(std::int64_t))));
    xml += strprintf("        <DataArray type=\"Int64\" Name=\"offsets\" format=\"appended\" offset=\"%llu\"/>\n",
                     add_block(raw(offs.data(), offs.size() * sizeof(std::int64_t))));
    xml += strprintf("        <DataArray type=\"UInt8\" Name=\"types\" format=\"appended\" offset=\"%llu\"/>\n",
                     add_block(raw(types.data(), types.size())));
    xml += "      </Cells>\n    </Piece>\n  </UnstructuredGrid>\n  <AppendedData encoding=\"raw\">\n_";
    err = write_vtk_piece(strprintf("%s/%s_r%05d.vtu", dir.c_str(), stem.c_str(), comm_.rank()), xml, blocks);
    if (comm_.bitwise_or(err.empty() ? 0 : 1)) throw Error(err.empty() ? "a rank failed to write its output piece" : err);
    if (comm_.is_root()) {
      std::string p = "<?xml version=\"1.0\"?>\n<VTKFile type=\"PUnstructuredGrid\" version=\"1.0\" "
                      "byte_order=\"LittleEndian\" header_type=\"UInt64\">\n  <PUnstructuredGrid GhostLevel=\"0\">\n"
                      "    <PCellData>\n";
      for (const GridArray& a : arrays)
        p += strprintf("      <PDataArray type=\"%s\" Name=\"%s\" NumberOfComponents=\"%d\"/>\n", vtk_type(a.dtype),
                       xml_escape(a.name).c_str(), a.ncomp);
      p += "    </PCellData>\n    <PPoints>\n      <PDataArray type=\"Float64\" NumberOfComponents=\"3\"/>\n"
           "    </PPoints>\n";
      for (int r = 0; r < comm_.size(); ++r) p += strprintf("    <Piece Source=\"%s_r%05d.vtu\"/>\n", stem.c_str(), r);
      p += "  </PUnstructuredGrid>\n</VTKFile>\n";
      write_file_atomic(dir + "/" + stem + ".pvtu", p);
    }
  }

  std::string run_dir_, base_;
  Comm comm_;
  std::vector<SeriesEntry> entries_;
};

class XdmfWriter : public OutputWriter {
 public:
  XdmfWriter(const std::string& run_dir, const std::string& base, const Comm& comm, double resume_time)
      : run_dir_(run_dir), base_(base), comm_(comm) {
    // Kept entries are re-read as whole <Grid> blocks, one per line group, by time and file.
    std::ifstream in(series_path());
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (resume_time >= 0) {
      static const std::regex grid(R"(<!-- step (\S+) (\S+) -->\n([\s\S]*?)<!-- end -->\n)");
      for (std::sregex_iterator it(text.begin(), text.end(), grid), end; it != end; ++it)
        if (std::stod((*it)[1]) <= resume_time) blocks_.push_back({std::stod((*it)[1]), (*it)[0]});
    }
  }
  std::string series_path() const override { return run_dir_ + "/" + base_ + ".xmf"; }

  void write(long step, double time, const GridGeometry& geo, const std::vector<GridArray>& arrays) override {
    const std::string dir = create_output_directory(run_dir_, comm_);
    if (arrays.empty()) return;
    const std::string stem = strprintf("%s_%09ld", base_.c_str(), step);
    const std::string h5name = stem + ".h5";
    const Box& g = arrays.front().global_box;
    if (geo.cell_corners) {
      write_quads(dir, stem, h5name, step, time, geo, arrays);
      return;
    }
    {
      h5::Handle f = h5::create_file(dir + "/" + h5name, comm_);
      h5::write_attr(f, "time", time);
      h5::write_attr(f, "step", static_cast<std::int64_t>(step));
      for (const GridArray& a : arrays)
        // [nz, ny, nx(, ncomp)]: the cell's components together, as XDMF vectors want.
        write_cell_dataset(f, a,
                           {static_cast<hsize_t>(g.size(2)), static_cast<hsize_t>(g.size(1)), static_cast<hsize_t>(g.size(0))},
                           {static_cast<hsize_t>(a.local_box.lo[2] - g.lo[2]), static_cast<hsize_t>(a.local_box.lo[1] - g.lo[1]),
                            static_cast<hsize_t>(a.local_box.lo[0] - g.lo[0])},
                           {static_cast<hsize_t>(a.local_box.size(2)), static_cast<hsize_t>(a.local_box.size(1)),
                            static_cast<hsize_t>(a.local_box.size(0))});
    }
    if (comm_.is_root()) {
      const int nd = geo.ndim;
      // 3DCoRectMesh for 2D too, with one point along z (PLATFORM.md: 2DCoRectMesh comes back on the wrong axes).
      const std::string pdims = strprintf("%d %d %d", nd == 3 ? g.size(2) + 1 : 1, g.size(1) + 1, g.size(0) + 1);
      const std::string cdims = strprintf("%d %d %d", nd == 3 ? g.size(2) : 1, g.size(1), g.size(0));
      std::string b = strprintf("<!-- step %.17g %ld -->\n", time, step);
      b += strprintf("   <Grid Name=\"%s\" GridType=\"Uniform\">\n    <Time Value=\"%.17g\"/>\n", stem.c_str(), time);
      b += "    <Topology TopologyType=\"3DCoRectMesh\" Dimensions=\"" + pdims + "\"/>\n";
      b += "    <Geometry GeometryType=\"ORIGIN_DXDYDZ\">\n";
      b += strprintf("     <DataItem Dimensions=\"3\" NumberType=\"Float\" Precision=\"8\" Format=\"XML\">%.17g %.17g "
                     "%.17g</DataItem>\n",
                     nd == 3 ? geo.origin[2] : 0.0, geo.origin[1], geo.origin[0]);
      b += strprintf("     <DataItem Dimensions=\"3\" NumberType=\"Float\" Precision=\"8\" Format=\"XML\">%.17g %.17g "
                     "%.17g</DataItem>\n",
                     nd == 3 ? geo.spacing[2] : 1.0, geo.spacing[1], geo.spacing[0]);
      b += "    </Geometry>\n";
      b += xdmf_attributes(arrays, cdims, h5name);
      b += "   </Grid>\n<!-- end -->\n";
      add_block(time, b);
    }
    comm_.barrier();
  }

  // A surface of quadrilaterals: every array flattened to one value (or vector) per global cell in
  // (k, j, i) order (a rank's cells are one contiguous run), with the corners and a connectivity
  // table beside them.
  void write_quads(const std::string& dir, const std::string& stem, const std::string& h5name, long step, double time,
                   const GridGeometry& geo, const std::vector<GridArray>& arrays) {
    const GridArray& first = arrays.front();
    const hsize_t nglobal = static_cast<hsize_t>(first.global_box.volume());
    const hsize_t plane = static_cast<hsize_t>(first.global_box.size(0)) * first.global_box.size(1);
    // The local box is one contiguous run of the flattened global array (whole tiles of the cubed
    // sphere, a range of particles): its start is the linear index of its first cell.
    const hsize_t start = static_cast<hsize_t>(first.local_box.lo[2] - first.global_box.lo[2]) * plane +
                          static_cast<hsize_t>(first.local_box.lo[1] - first.global_box.lo[1]) * first.global_box.size(0) +
                          static_cast<hsize_t>(first.local_box.lo[0] - first.global_box.lo[0]);
    const hsize_t nlocal = static_cast<hsize_t>(first.local_box.volume());
    const hsize_t npc = static_cast<hsize_t>(geo.corners_per_cell);
    {
      h5::Handle f = h5::create_file(dir + "/" + h5name, comm_);
      h5::write_attr(f, "time", time);
      h5::write_attr(f, "step", static_cast<std::int64_t>(step));
      for (const GridArray& a : arrays) write_cell_dataset(f, a, {nglobal}, {start}, {nlocal});
      const std::vector<double> pts = geo.cell_corners();
      h5::Handle d = h5::create_dataset(f, "corners", H5T_NATIVE_DOUBLE, {npc * nglobal, 3});
      h5::write_hyperslab(d, H5T_NATIVE_DOUBLE, {npc * start, 0}, {npc * nlocal, 3}, pts.data(), true);
      std::vector<std::int64_t> conn(npc * nlocal);
      for (hsize_t c = 0; c < npc * nlocal; ++c) conn[c] = static_cast<std::int64_t>(npc * start + c);
      h5::Handle q = h5::create_dataset(f, "connectivity", H5T_NATIVE_INT64, {nglobal, npc});
      h5::write_hyperslab(q, H5T_NATIVE_INT64, {start, 0}, {nlocal, npc}, conn.data(), true);
    }
    if (comm_.is_root()) {
      const unsigned long long n = nglobal;
      std::string b = strprintf("<!-- step %.17g %ld -->\n", time, step);
      b += strprintf("   <Grid Name=\"%s\" GridType=\"Uniform\">\n    <Time Value=\"%.17g\"/>\n", stem.c_str(), time);
      const unsigned long long k = npc;
      b += strprintf("    <Topology TopologyType=\"%s\" NumberOfElements=\"%llu\"%s>\n",
                     npc == 1 ? "Polyvertex" : "Quadrilateral", n, npc == 1 ? " NodesPerElement=\"1\"" : "");
      b += strprintf("     <DataItem Dimensions=\"%llu %llu\" NumberType=\"Int\" Precision=\"8\" Format=\"HDF\">output/%s:/connectivity"
                     "</DataItem>\n    </Topology>\n",
                     n, k, h5name.c_str());
      b += "    <Geometry GeometryType=\"XYZ\">\n";
      b += strprintf("     <DataItem Dimensions=\"%llu 3\" NumberType=\"Float\" Precision=\"8\" Format=\"HDF\">output/%s:/corners"
                     "</DataItem>\n    </Geometry>\n",
                     k * n, h5name.c_str());
      b += xdmf_attributes(arrays, std::to_string(n), h5name);
      b += "   </Grid>\n<!-- end -->\n";
      add_block(time, b);
    }
    comm_.barrier();
  }

  void add_block(double time, const std::string& b) {
    while (!blocks_.empty() && blocks_.back().first >= time) blocks_.pop_back();
    blocks_.push_back({time, b});
    std::string x = "<?xml version=\"1.0\" ?>\n<Xdmf Version=\"3.0\">\n <Domain>\n  <Grid Name=\"" + base_ +
                    "\" GridType=\"Collection\" CollectionType=\"Temporal\">\n";
    for (const auto& blk : blocks_) x += blk.second;
    x += "  </Grid>\n </Domain>\n</Xdmf>\n";
    write_file_atomic(series_path(), x);
  }

 private:
  std::string run_dir_, base_;
  Comm comm_;
  std::vector<std::pair<double, std::string>> blocks_;
};

}  // namespace

std::unique_ptr<OutputWriter> make_output_writer(const std::string& format, const std::string& run_dir,
                                                 const std::string& base, const Comm& comm, double resume_time) {
  if (format == "vtk") return std::make_unique<VtkWriter>(run_dir, base, comm, resume_time);
  if (format == "xdmf") return std::make_unique<XdmfWriter>(run_dir, base, comm, resume_time);
  throw Error("unknown output format '" + format + "'");
}

}  // namespace cumulus
