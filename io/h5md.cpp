// H5MD trajectory writer (io/h5md.hpp): gathered on rank 0, written with the serial HDF5 driver.
#include "io/h5md.hpp"

#include <hdf5.h>
#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <numeric>

#include "core/error.hpp"
#include "core/log.hpp"
#include "core/strings.hpp"
#include "cumulus/version.hpp"
#include "io/hdf5_file.hpp"
#include "io/run_directory.hpp"

namespace cumulus {

namespace {
void check(herr_t r, const std::string& path, const char* what) {
  if (r < 0) throw Error(strprintf("H5MD trajectory %s: %s failed", path.c_str(), what));
}
hid_t check_id(hid_t id, const std::string& path, const char* what) {
  if (id < 0) throw Error(strprintf("H5MD trajectory %s: %s failed", path.c_str(), what));
  return id;
}

void string_attr(hid_t obj, const char* name, const std::vector<std::string>& values, bool scalar) {
  h5::Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  std::size_t len = 1;
  for (const auto& v : values) len = std::max(len, v.size() + 1);
  H5Tset_size(type, len);
  H5Tset_strpad(type, H5T_STR_NULLTERM);
  const hsize_t n = values.size();
  h5::Handle space(scalar ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &n, nullptr), H5Sclose);
  std::vector<char> buf(len * values.size(), '\0');
  for (std::size_t k = 0; k < values.size(); ++k) std::memcpy(&buf[k * len], values[k].data(), values[k].size());
  h5::Handle a(H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  H5Awrite(a, type, buf.data());
}
void int_attr(hid_t obj, const char* name, const std::vector<int>& values, bool scalar) {
  const hsize_t n = values.size();
  h5::Handle space(scalar ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &n, nullptr), H5Sclose);
  h5::Handle a(H5Acreate2(obj, name, H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  H5Awrite(a, H5T_NATIVE_INT, values.data());
}

// The elements a frame holds, with their HDF5 type.
struct Element {
  const char* name;
  hid_t type;
  std::size_t size;
};
const Element kElements[] = {{"position", H5T_NATIVE_DOUBLE, sizeof(double)},
                             {"velocity", H5T_NATIVE_DOUBLE, sizeof(double)},
                             {"image", H5T_NATIVE_INT, sizeof(int)}};
}  // namespace

struct H5mdWriter::File {
  h5::Handle file;
  hsize_t natoms = 0;
  hsize_t frames = 0;
};

H5mdWriter::H5mdWriter(const std::string& run_dir, const Comm& comm, double resume_time)
    : path_(run_dir + "/trajectory.h5md"), comm_(comm), resume_time_(resume_time) {}

H5mdWriter::~H5mdWriter() = default;

// trajectory.xmf (h5md.hpp): every frame of the file, read back from its time dataset.
void H5mdWriter::write_xdmf(std::int64_t f, unsigned long long N) {
  const hsize_t frames = file_->frames;
  std::vector<double> times(frames);
  {
    h5::Handle d(check_id(H5Dopen2(f, "/particles/all/position/time", H5P_DEFAULT), path_, "open time"), H5Dclose);
    if (frames > 0) check(H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, times.data()), path_, "read time");
  }
  hsize_t M = 0;
  if (H5Lexists(f, "/connectivity", H5P_DEFAULT) > 0 && H5Lexists(f, "/connectivity/bonds", H5P_DEFAULT) > 0) {
    h5::Handle d(check_id(H5Dopen2(f, "/connectivity/bonds", H5P_DEFAULT), path_, "open bonds"), H5Dclose);
    h5::Handle sp(H5Dget_space(d), H5Sclose);
    hsize_t dims[2] = {0, 0};
    H5Sget_simple_extent_dims(sp, dims, nullptr);
    M = dims[0];
  }
  const std::string h5 = std::filesystem::path(path_).filename().string();
  const unsigned long long n = N, m = M, nf = frames;
  auto slab = [&](const char* dataset, hsize_t frame, const char* type, int precision) {
    return strprintf("      <DataItem ItemType=\"HyperSlab\" Dimensions=\"%llu 3\" Type=\"HyperSlab\">\n"
                     "       <DataItem Dimensions=\"3 3\" NumberType=\"UInt\" Precision=\"8\" Format=\"XML\">%llu 0 0 1 1 1 1 %llu 3"
                     "</DataItem>\n"
                     "       <DataItem Dimensions=\"%llu %llu 3\" NumberType=\"%s\" Precision=\"%d\" Format=\"HDF\">%s:%s"
                     "</DataItem>\n      </DataItem>\n",
                     n, static_cast<unsigned long long>(frame), n, nf, n, type, precision, h5.c_str(), dataset);
  };
  std::string x = "<?xml version=\"1.0\" ?>\n<Xdmf Version=\"3.0\">\n <Domain>\n  <Grid Name=\"trajectory\" GridType=\"Collection\" "
                  "CollectionType=\"Temporal\">\n";
  for (hsize_t k = 0; k < frames; ++k) {
    x += strprintf("   <Grid Name=\"frame\" GridType=\"Collection\" CollectionType=\"Spatial\">\n    <Time Value=\"%.17g\"/>\n",
                   times[k]);
    for (int part = 0; part < (M > 0 ? 2 : 1); ++part) {
      x += strprintf("    <Grid Name=\"%s\" GridType=\"Uniform\">\n", part == 0 ? "atoms" : "bonds");
      if (part == 0)
        x += strprintf("     <Topology TopologyType=\"Polyvertex\" NumberOfElements=\"%llu\" NodesPerElement=\"1\"/>\n", n);
      else
        x += strprintf("     <Topology TopologyType=\"Polyline\" NumberOfElements=\"%llu\" NodesPerElement=\"2\">\n"
                       "      <DataItem Dimensions=\"%llu 2\" NumberType=\"Int\" Precision=\"8\" Format=\"HDF\">%s:/connectivity/bonds"
                       "</DataItem>\n     </Topology>\n",
                       m, m, h5.c_str());
      x += "     <Geometry GeometryType=\"XYZ\">\n" + slab("/particles/all/position/value", k, "Float", 8) + "     </Geometry>\n";
      x += strprintf("     <Attribute Name=\"species\" AttributeType=\"Scalar\" Center=\"Node\">\n"
                     "      <DataItem Dimensions=\"%llu\" NumberType=\"Int\" Precision=\"4\" Format=\"HDF\">%s:/particles/all/species"
                     "</DataItem>\n     </Attribute>\n",
                     n, h5.c_str());
      x += "     <Attribute Name=\"velocity\" AttributeType=\"Vector\" Center=\"Node\">\n" +
           slab("/particles/all/velocity/value", k, "Float", 8) + "     </Attribute>\n";
      x += "    </Grid>\n";
    }
    x += "   </Grid>\n";
  }
  x += "  </Grid>\n </Domain>\n</Xdmf>\n";
  write_file_atomic(std::filesystem::path(path_).replace_extension(".xmf").string(), x);
}

void H5mdWriter::write(long step, double time, const StateDescription& state) {
  // This rank's particles: id, then the elements, each as (particle, component).
  const GridArray* ids = nullptr;
  const GridArray* type = nullptr;
  const GridArray* el[3] = {nullptr, nullptr, nullptr};
  for (const GridArray& a : state.arrays) {
    if (a.name == "id") ids = &a;
    if (a.name == "type") type = &a;
    for (int e = 0; e < 3; ++e)
      if (a.name == kElements[e].name) el[e] = &a;
  }
  if (!ids || !el[0] || !el[1] || !el[2]) throw Error("H5MD output needs a particle state (id, position, velocity, image)");
  const int n = ids->local_box.size(0);
  // Per particle: id, type, then 3 doubles position, 3 doubles velocity, 3 ints image, packed as
  // doubles (ints are exact in a double).
  constexpr int kWidth = 11;
  std::vector<double> mine(static_cast<std::size_t>(n) * kWidth);
  {
    const auto id_bytes = ids->read_local();
    std::vector<unsigned char> type_bytes = type ? type->read_local() : std::vector<unsigned char>();
    std::vector<unsigned char> eb[3];
    for (int e = 0; e < 3; ++e) eb[e] = el[e]->read_local();
    for (int i = 0; i < n; ++i) {
      double* r = &mine[static_cast<std::size_t>(i) * kWidth];
      if (ids->dtype == DType::i64) {  // exact in a double below 2^53 atoms
        std::int64_t id;
        std::memcpy(&id, id_bytes.data() + sizeof(std::int64_t) * i, sizeof(std::int64_t));
        r[0] = static_cast<double>(id);
      } else {
        int id;
        std::memcpy(&id, id_bytes.data() + sizeof(int) * i, sizeof(int));
        r[0] = id;
      }
      int v = 1;
      if (type) std::memcpy(&v, type_bytes.data() + sizeof(int) * i, sizeof(int));
      r[1] = v;
      for (int c = 0; c < 3; ++c) {
        double x, u;
        int im;
        std::memcpy(&x, eb[0].data() + sizeof(double) * (static_cast<std::size_t>(c) * n + i), sizeof(double));
        std::memcpy(&u, eb[1].data() + sizeof(double) * (static_cast<std::size_t>(c) * n + i), sizeof(double));
        std::memcpy(&im, eb[2].data() + sizeof(int) * (static_cast<std::size_t>(c) * n + i), sizeof(int));
        r[2 + c] = x;
        r[5 + c] = u;
        r[8 + c] = im;
      }
    }
  }
  int count = static_cast<int>(mine.size());
  const int np = comm_.size();
  std::vector<int> counts(static_cast<std::size_t>(np)), displs(static_cast<std::size_t>(np), 0);
  mpi_check(MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm_.raw()), "MPI_Gather");
  for (int r = 1; r < np; ++r) displs[static_cast<std::size_t>(r)] = displs[static_cast<std::size_t>(r) - 1] + counts[static_cast<std::size_t>(r) - 1];
  std::vector<double> all(comm_.is_root() ? static_cast<std::size_t>(displs.back() + counts.back()) : 0);
  mpi_check(MPI_Gatherv(mine.data(), count, MPI_DOUBLE, all.data(), counts.data(), displs.data(), MPI_DOUBLE, 0, comm_.raw()),
            "MPI_Gatherv");

  // Rank 0 writes; every rank learns whether it worked.
  std::string failure;
  if (comm_.is_root()) {
    try {
      const hsize_t N = all.size() / kWidth;
      std::vector<std::size_t> order(N);
      std::iota(order.begin(), order.end(), std::size_t{0});
      std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return all[a * kWidth] < all[b * kWidth]; });
      h5::silence_errors();
      if (!file_) {
        file_ = std::make_unique<File>();
        bool opened = false;
        if (resume_time_ >= 0 && std::filesystem::exists(path_)) {
          const hid_t f = H5Fopen(path_.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
          // The file's shapes are checked before they size anything (issue #20): positions are
          // frames x N x 3, and the times, read back whole below, one stored double per frame.
          std::vector<hsize_t> dims, tdims;
          hsize_t time_bytes = 0;
          if (f >= 0 && H5Lexists(f, "/particles/all/position/value", H5P_DEFAULT) > 0 &&
              H5Lexists(f, "/particles/all/position/time", H5P_DEFAULT) > 0) {
            h5::Handle d(H5Dopen2(f, "/particles/all/position/value", H5P_DEFAULT), H5Dclose);
            h5::Handle t(H5Dopen2(f, "/particles/all/position/time", H5P_DEFAULT), H5Dclose);
            if (d.id() >= 0 && t.id() >= 0) {
              dims = h5::dataset_dims(d);
              tdims = h5::dataset_dims(t);
              time_bytes = H5Dget_storage_size(t);
            }
          }
          if (dims.size() == 3 && dims[2] == 3 && tdims.size() == 1 && tdims[0] == dims[0] &&
              dims[0] <= time_bytes / sizeof(double)) {
            file_->file = h5::Handle(f, H5Fclose);
            file_->frames = dims[0];
            file_->natoms = dims[1];
            opened = true;
          } else {
            if (f >= 0) H5Fclose(f);
            std::error_code ec;
            std::filesystem::rename(path_, path_ + ".damaged", ec);
            log_warn(strprintf("H5MD trajectory %s could not be read back (a run killed while writing it?): kept as "
                               "%s.damaged, a new trajectory starts at step %ld",
                               path_.c_str(), path_.c_str(), step));
          }
        }
        if (!opened) {
          const hid_t f = check_id(H5Fcreate(path_.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), path_, "create");
          file_->file = h5::Handle(f, H5Fclose);
          file_->natoms = N;
          file_->frames = 0;
          h5::Handle h5md = h5::create_group(f, "h5md");
          int_attr(h5md, "version", {1, 1}, false);
          h5::Handle author = h5::create_group(h5md, "author");
          const char* user = std::getenv("USER");
          string_attr(author, "name", {user && *user ? user : "unknown"}, true);
          h5::Handle creator = h5::create_group(h5md, "creator");
          string_attr(creator, "name", {"cumulus"}, true);
          string_attr(creator, "version", {std::string(build::version) + " (" + build::git_commit + ")"}, true);
          h5::Handle particles = h5::create_group(f, "particles");
          h5::Handle grp = h5::create_group(particles, "all");
          h5::Handle box = h5::create_group(grp, "box");
          int_attr(box, "dimension", {3}, true);
          string_attr(box, "boundary", {"periodic", "periodic", "periodic"}, false);
          {
            // The box's edges as a time series (H5MD's time-dependent form: value, step, time), one
            // row per frame: a barostat changes them.
            h5::Handle edges = h5::create_group(box, "edges");
            auto series = [&](const char* name, hid_t type, int rank, const hsize_t* d, const hsize_t* m, const hsize_t* c) {
              h5::Handle space(H5Screate_simple(rank, d, m), H5Sclose);
              h5::Handle dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
              H5Pset_chunk(dcpl, rank, c);
              h5::Handle made(check_id(H5Dcreate2(edges, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT), path_, name),
                              H5Dclose);
            };
            const hsize_t d2[2] = {0, 3}, m2[2] = {H5S_UNLIMITED, 3}, c2[2] = {64, 3};
            series("value", H5T_NATIVE_DOUBLE, 2, d2, m2, c2);
            const hsize_t d1 = 0, m1 = H5S_UNLIMITED, c1 = 1024;
            series("step", H5T_NATIVE_INT64, 1, &d1, &m1, &c1);
            series("time", H5T_NATIVE_DOUBLE, 1, &d1, &m1, &c1);
          }
          std::vector<int> species(N);
          std::vector<std::int64_t> idv(N);
          for (hsize_t k = 0; k < N; ++k) {
            species[k] = static_cast<int>(all[order[k] * kWidth + 1]);
            idv[k] = static_cast<std::int64_t>(all[order[k] * kWidth]);
          }
          {
            h5::Handle d = h5::create_dataset(grp, "species", H5T_NATIVE_INT, {std::max<hsize_t>(N, 1)});
            if (N > 0) check(H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, species.data()), path_, "write species");
          }
          {
            h5::Handle d = h5::create_dataset(grp, "id", H5T_NATIVE_INT64, {std::max<hsize_t>(N, 1)});
            if (N > 0) check(H5Dwrite(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, idv.data()), path_, "write id");
          }
          if (!state.connectivity.empty()) {
            // Bonds as particle indices in the frames' (ascending id) order.
            const std::size_t M = state.connectivity.size() / 2;
            std::vector<std::int64_t> pairs(2 * M);
            for (std::size_t k = 0; k < 2 * M; ++k) {
              const auto it = std::lower_bound(idv.begin(), idv.end(), state.connectivity[k]);
              if (it == idv.end() || *it != state.connectivity[k])
                throw Error(strprintf("H5MD trajectory %s: a bond names particle id %lld, which is not in the state", path_.c_str(),
                                      static_cast<long long>(state.connectivity[k])));
              pairs[k] = it - idv.begin();
            }
            h5::Handle cg = h5::create_group(file_->file, "connectivity");
            h5::Handle d = h5::create_dataset(cg, "bonds", H5T_NATIVE_INT64, {static_cast<hsize_t>(M), 2});
            check(H5Dwrite(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, pairs.data()), path_, "write connectivity");
            hobj_ref_t ref;
            check(H5Rcreate(&ref, file_->file, "/particles/all", H5R_OBJECT, -1), path_, "reference particles");
            h5::Handle space(H5Screate(H5S_SCALAR), H5Sclose);
            h5::Handle attr(check_id(H5Acreate2(d, "particles_group", H5T_STD_REF_OBJ, space, H5P_DEFAULT, H5P_DEFAULT), path_,
                                     "particles_group"),
                            H5Aclose);
            check(H5Awrite(attr, H5T_STD_REF_OBJ, &ref), path_, "write particles_group");
          }
          for (const Element& e : kElements) {
            h5::Handle g = h5::create_group(grp, e.name);
            const hsize_t dims[3] = {0, N, 3}, maxdims[3] = {H5S_UNLIMITED, N, 3};
            const hsize_t chunk[3] = {1, std::clamp<hsize_t>(N, 1, 65536), 3};
            auto extendible = [&](const char* name, hid_t type, int rank, const hsize_t* d, const hsize_t* m, const hsize_t* c) {
              h5::Handle space(H5Screate_simple(rank, d, m), H5Sclose);
              h5::Handle dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
              H5Pset_chunk(dcpl, rank, c);
              return h5::Handle(check_id(H5Dcreate2(g, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT), path_, name),
                                H5Dclose);
            };
            h5::Handle value = extendible("value", e.type, 3, dims, maxdims, chunk);
            for (const GridArray* a : el)
              if (a->name == e.name && !a->units.empty()) string_attr(value, "unit", {a->units}, true);
            const hsize_t d1 = 0, m1 = H5S_UNLIMITED, c1 = 1024;
            extendible("step", H5T_NATIVE_INT64, 1, &d1, &m1, &c1);
            extendible("time", H5T_NATIVE_DOUBLE, 1, &d1, &m1, &c1);
          }
        }
      }
      if (N != file_->natoms)
        throw Error(strprintf("H5MD trajectory %s holds %llu particles, this run has %llu", path_.c_str(),
                              static_cast<unsigned long long>(file_->natoms), static_cast<unsigned long long>(N)));
      const hid_t f = file_->file;
      // Frames at or after this time go (a restart repeats them): keep those before it.
      hsize_t keep = file_->frames;
      {
        h5::Handle d(check_id(H5Dopen2(f, "/particles/all/position/time", H5P_DEFAULT), path_, "open time"), H5Dclose);
        std::vector<double> times(file_->frames);
        if (!times.empty()) check(H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, times.data()), path_, "read time");
        while (keep > 0 && times[keep - 1] >= time) --keep;
      }
      const hsize_t t = keep;
      std::vector<double> dv(N * 3);
      std::vector<int> iv(N * 3);
      for (int e = 0; e < 3; ++e) {
        const std::string g = std::string("/particles/all/") + kElements[e].name;
        for (hsize_t k = 0; k < N; ++k)
          for (int c = 0; c < 3; ++c) {
            const double x = all[order[k] * kWidth + 2 + 3 * e + c];
            dv[k * 3 + c] = x;
            iv[k * 3 + c] = static_cast<int>(x);
          }
        auto append = [&](const char* name, hid_t type, int rank, const void* data) {
          h5::Handle d(check_id(H5Dopen2(f, (g + "/" + name).c_str(), H5P_DEFAULT), path_, name), H5Dclose);
          hsize_t dims[3] = {t + 1, N, 3};
          check(H5Dset_extent(d, dims), path_, "extend");
          h5::Handle fs(H5Dget_space(d), H5Sclose);
          const hsize_t start[3] = {t, 0, 0}, cnt[3] = {1, N, 3};
          check(H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, nullptr, cnt, nullptr), path_, "select");
          h5::Handle ms(H5Screate_simple(rank, cnt, nullptr), H5Sclose);
          if (rank == 1 || N > 0) check(H5Dwrite(d, type, ms, fs, H5P_DEFAULT, data), path_, name);
        };
        append("value", kElements[e].type, 3, e == 2 ? static_cast<const void*>(iv.data()) : static_cast<const void*>(dv.data()));
        const std::int64_t s64 = step;
        append("step", H5T_NATIVE_INT64, 1, &s64);
        append("time", H5T_NATIVE_DOUBLE, 1, &time);
      }
      // The box's row of this frame (a trajectory begun before the box became a time series holds
      // one fixed edges dataset: it is left as it is).
      if (H5Lexists(f, "/particles/all/box/edges/value", H5P_DEFAULT) > 0) {
        auto append_box = [&](const char* name, hid_t type, int rank, const void* data) {
          const std::string path = std::string("/particles/all/box/edges/") + name;
          h5::Handle d(check_id(H5Dopen2(f, path.c_str(), H5P_DEFAULT), path_, name), H5Dclose);
          const hsize_t dims[2] = {t + 1, 3};
          check(H5Dset_extent(d, dims), path_, "extend");
          h5::Handle fs(H5Dget_space(d), H5Sclose);
          const hsize_t start[2] = {t, 0}, cnt[2] = {1, 3};
          check(H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, nullptr, cnt, nullptr), path_, "select");
          h5::Handle ms(H5Screate_simple(rank, cnt, nullptr), H5Sclose);
          check(H5Dwrite(d, type, ms, fs, H5P_DEFAULT, data), path_, name);
        };
        const std::int64_t s64 = step;
        append_box("value", H5T_NATIVE_DOUBLE, 2, state.geometry.spacing);
        append_box("step", H5T_NATIVE_INT64, 1, &s64);
        append_box("time", H5T_NATIVE_DOUBLE, 1, &time);
      }
      file_->frames = t + 1;
      check(H5Fflush(f, H5F_SCOPE_GLOBAL), path_, "flush");
      write_xdmf(f, N);
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }
  int len = static_cast<int>(failure.size());
  mpi_check(MPI_Bcast(&len, 1, MPI_INT, 0, comm_.raw()), "MPI_Bcast");
  if (len > 0) {
    failure.resize(static_cast<std::size_t>(len));
    mpi_check(MPI_Bcast(failure.data(), len, MPI_CHAR, 0, comm_.raw()), "MPI_Bcast");
    throw Error(failure);
  }
}

}  // namespace cumulus
