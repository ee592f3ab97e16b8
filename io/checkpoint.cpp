#include "io/checkpoint.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "core/log.hpp"
#include "core/memory.hpp"
#include "core/strings.hpp"
#include "core/timers.hpp"
#include "cumulus/version.hpp"
#include "io/hdf5_file.hpp"

namespace cumulus {

namespace fs = std::filesystem;

namespace {
std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Odd constant (2^64 / golden ratio) spreading the element index over all bits.
constexpr std::uint64_t kIndexMix = 0x9E3779B97F4A7C15ull;

std::vector<hsize_t> global_dims(const GridArray& a) {
  return {static_cast<hsize_t>(a.ncomp), static_cast<hsize_t>(a.global_box.size(2)),
          static_cast<hsize_t>(a.global_box.size(1)), static_cast<hsize_t>(a.global_box.size(0))};
}
std::vector<hsize_t> local_start(const GridArray& a) {
  return {0, static_cast<hsize_t>(a.local_box.lo[2] - a.global_box.lo[2]),
          static_cast<hsize_t>(a.local_box.lo[1] - a.global_box.lo[1]),
          static_cast<hsize_t>(a.local_box.lo[0] - a.global_box.lo[0])};
}
std::vector<hsize_t> local_count(const GridArray& a) {
  return {static_cast<hsize_t>(a.ncomp), static_cast<hsize_t>(a.local_box.size(2)),
          static_cast<hsize_t>(a.local_box.size(1)), static_cast<hsize_t>(a.local_box.size(0))};
}
hid_t h5type(DType t) { return h5::native_type(static_cast<int>(t)); }

// Fault injection for the tests: CUMULUS_TEST_PAUSE_CHECKPOINT=<phase> makes the writer announce
// the phase in a marker file and wait there, so that a test can SIGKILL it mid-write.
void maybe_pause(const std::string& phase, const std::string& tmp, const Comm& comm) {
  const char* want = std::getenv("CUMULUS_TEST_PAUSE_CHECKPOINT");
  if (!want || phase != want) return;
  if (comm.is_root()) std::ofstream(tmp + ".paused-" + phase) << phase << "\n";
  std::this_thread::sleep_for(std::chrono::seconds(600));
}

void fsync_path(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), directory ? O_RDONLY | O_DIRECTORY : O_RDONLY);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

std::uint64_t comm_sum_u64(const Comm& comm, std::uint64_t v) {
  std::uint64_t out = 0;
  mpi_check(MPI_Allreduce(&v, &out, 1, MPI_UINT64_T, MPI_SUM, comm.raw()), "MPI_Allreduce");
  return out;
}

// This rank's part of `a` read from an open file (collective).
std::vector<unsigned char> read_part(hid_t file, const GridArray& a) {
  h5::Handle d(H5Dopen2(file, ("arrays/" + a.name).c_str(), H5P_DEFAULT), H5Dclose);
  if (d.id() < 0) throw Error("array '" + a.name + "' is missing");
  std::vector<unsigned char> buf(static_cast<std::size_t>(a.local_box.volume()) * a.ncomp * dtype_size(a.dtype));
  h5::read_hyperslab(d, h5type(a.dtype), local_start(a), local_count(a), buf.data(), false);
  return buf;
}

// Verifies every array's checksum; returns the parts read (so that restore reads once).
std::vector<std::vector<unsigned char>> read_and_verify(hid_t file, const StateDescription& state, const Comm& comm) {
  std::vector<std::vector<unsigned char>> parts;
  for (const GridArray& a : state.arrays) {
    h5::Handle d(H5Dopen2(file, ("arrays/" + a.name).c_str(), H5P_DEFAULT), H5Dclose);
    const int ok = comm.bitwise_or(d.id() < 0 ? 1 : 0);
    if (ok) throw Error("array '" + a.name + "' is missing");
    if (h5::dataset_dims(d) != global_dims(a)) throw Error("array '" + a.name + "' has the wrong shape");
    if (!h5::has_attr(d, "checksum")) throw Error("array '" + a.name + "' has no checksum");
    const std::uint64_t stored = h5::read_attr_uint(d, "checksum");
    // 32-bit integers where this job has 64 (atom ids before they were widened): read and verified
    // as stored, then widened, so that such checkpoints still restart.
    GridArray as_stored = a;
    if (a.dtype == DType::i64 && h5::has_attr(d, "dtype") && h5::read_attr_string(d, "dtype") == dtype_name(DType::i32))
      as_stored.dtype = DType::i32;
    d.reset();
    {
      ScopedTimer t("checkpoint.read.data");
      parts.push_back(read_part(file, as_stored));
    }
    ScopedTimer t("checkpoint.read.checksum");
    const std::uint64_t sum = comm_sum_u64(comm, array_checksum_part(as_stored, parts.back()));
    if (sum != stored)
      throw Error(strprintf("array '%s' fails its checksum (stored %016llx, computed %016llx): the data are damaged",
                            a.name.c_str(), static_cast<unsigned long long>(stored),
                            static_cast<unsigned long long>(sum)));
    if (as_stored.dtype != a.dtype) {
      const std::vector<unsigned char>& narrow = parts.back();
      std::vector<unsigned char> wide(narrow.size() * 2);
      for (std::size_t k = 0; k < narrow.size() / 4; ++k) {
        std::int32_t v;
        std::memcpy(&v, narrow.data() + 4 * k, 4);
        const std::int64_t w = v;
        std::memcpy(wide.data() + 8 * k, &w, 8);
      }
      parts.back().swap(wide);
    }
  }
  return parts;
}
}  // namespace

std::uint64_t array_checksum_part(const GridArray& a, const std::vector<unsigned char>& local) {
  return array_checksum_part(a, local.data(), a.local_box);
}

std::uint64_t array_checksum_part(const GridArray& a, const unsigned char* base, const Box& alloc) {
  const std::size_t es = dtype_size(a.dtype);
  const std::int64_t ax = alloc.size(0), ay = alloc.size(1), az = alloc.size(2);
  const Box& g = a.global_box;
  const Box& b = a.local_box;
  const std::int64_t nx = g.size(0), ny = g.size(1), nz = g.size(2);
  const int nj = b.size(1), nk = b.size(2);
  const std::int64_t rows = static_cast<std::int64_t>(a.ncomp) * nk * nj;
  // A sum modulo 2^64 is exact in any order: threads may split it freely.
  std::uint64_t sum = 0;
#pragma omp parallel for schedule(static) reduction(+ : sum)
  for (std::int64_t r = 0; r < rows; ++r) {
    const int j = b.lo[1] + static_cast<int>(r % nj), k = b.lo[2] + static_cast<int>((r / nj) % nk),
              c = static_cast<int>(r / nj / nk);
    const std::int64_t row = ((c * nz + (k - g.lo[2])) * ny + (j - g.lo[1])) * nx - g.lo[0];
    const std::int64_t c_off = static_cast<std::int64_t>(c) * az * ay * ax;
    const unsigned char* p =
        base + static_cast<std::size_t>(c_off + ((k - alloc.lo[2]) * ay + (j - alloc.lo[1])) * ax +
                                        (b.lo[0] - alloc.lo[0])) * es;
    std::uint64_t part = 0;
    if (es == 8) {  // the common case, without the per-element size
      for (int i = b.lo[0]; i < b.hi[0]; ++i, p += 8) {
        std::uint64_t bits;
        std::memcpy(&bits, p, 8);
        part += splitmix64(bits ^ (static_cast<std::uint64_t>(row + i) * kIndexMix));
      }
    } else {
      for (int i = b.lo[0]; i < b.hi[0]; ++i, p += es) {
        std::uint64_t bits = 0;
        std::memcpy(&bits, p, es);
        part += splitmix64(bits ^ (static_cast<std::uint64_t>(row + i) * kIndexMix));
      }
    }
    sum += part;
  }
  return sum;
}

std::string checkpoint_file_name(std::int64_t step) { return strprintf("checkpoint_%012lld.h5", static_cast<long long>(step)); }

std::vector<std::string> list_checkpoints(const std::string& directory) {
  std::vector<std::pair<long long, std::string>> found;
  std::error_code ec;
  if (!fs::is_directory(directory, ec)) return {};
  static const std::regex pattern(R"(checkpoint_(\d{12})\.h5)");
  for (const auto& e : fs::directory_iterator(directory, ec)) {
    std::smatch m;
    const std::string name = e.path().filename().string();
    if (std::regex_match(name, m, pattern)) found.push_back({std::stoll(m[1]), e.path().string()});
  }
  std::sort(found.begin(), found.end(), [](auto& a, auto& b) { return a.first > b.first; });
  std::vector<std::string> out;
  for (auto& f : found) out.push_back(f.second);
  return out;
}

CheckpointWriter::CheckpointWriter(std::string directory, int keep, const Comm& comm)
    : dir_(std::move(directory)), keep_(keep), comm_(comm) {}

std::string CheckpointWriter::write(const StateDescription& state, const CheckpointMeta& meta) {
  const std::string final_path = dir_ + "/" + checkpoint_file_name(meta.step);
  const std::string tmp = final_path + ".tmp";
  comm_.on_root([&] {
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (ec) throw Error("cannot create the checkpoint directory '" + dir_ + "': " + ec.message());
    // Leftovers of writes that were killed: never valid, never read.
    for (const auto& e : fs::directory_iterator(dir_, ec))
      if (e.path().filename().string().find(".tmp") != std::string::npos) fs::remove(e.path(), ec);
  });

  {
    ScopedTimer t("checkpoint.write");
    h5::Handle f = h5::create_file(tmp, comm_);
    h5::write_attr(f, "format", std::string("cumulus-checkpoint"));
    h5::write_attr(f, "format_version", std::int64_t{1});
    h5::write_attr(f, "solver", meta.solver);
    h5::write_attr(f, "step", meta.step);
    h5::write_attr(f, "time", meta.time);
    h5::write_attr(f, "job", meta.job);
    h5::write_attr(f, "cumulus_version", std::string(build::version));
    h5::write_attr(f, "git_commit", std::string(build::git_commit));
    h5::write_attr(f, "nranks", static_cast<std::int64_t>(comm_.size()));
    h5::write_attr(f, "decomposition", meta.decomposition);
    h5::Handle g = h5::create_group(f, "arrays");
    for (const GridArray& a : state.arrays) {
      // Host data are written and summed in place; device data through one packed host copy.
      std::vector<unsigned char> part;
      if (!a.host_base) {
        ScopedTimer t2("checkpoint.write.gather");
        part = a.read_local();
      }
      std::uint64_t sum;
      {
        ScopedTimer t2("checkpoint.write.checksum");
        sum = comm_sum_u64(comm_, a.host_base ? array_checksum_part(a, a.host_base, a.host_alloc)
                                              : array_checksum_part(a, part));
      }
      h5::Handle d = h5::create_dataset(g, a.name, h5type(a.dtype), global_dims(a));
      if (a.host_base) {
        const Box& m = a.host_alloc;
        h5::write_hyperslab_from(d, h5type(a.dtype), local_start(a), local_count(a),
                                 {static_cast<hsize_t>(a.ncomp), static_cast<hsize_t>(m.size(2)),
                                  static_cast<hsize_t>(m.size(1)), static_cast<hsize_t>(m.size(0))},
                                 {0, static_cast<hsize_t>(a.local_box.lo[2] - m.lo[2]),
                                  static_cast<hsize_t>(a.local_box.lo[1] - m.lo[1]),
                                  static_cast<hsize_t>(a.local_box.lo[0] - m.lo[0])},
                                 a.host_base, true);
      } else {
        h5::write_hyperslab(d, h5type(a.dtype), local_start(a), local_count(a), part.data(), true);
      }
      h5::write_attr(d, "units", a.units);
      h5::write_attr(d, "dtype", std::string(dtype_name(a.dtype)));
      h5::write_attr(d, "checksum", sum);
      h5::write_attr(d, "checksum_algorithm", std::string(kChecksumAlgorithm));
      h5::write_attr(d, "global_lo", std::vector<std::int64_t>{a.global_box.lo[0], a.global_box.lo[1], a.global_box.lo[2]});
    }
    maybe_pause("data", tmp, comm_);
    if (H5Fflush(f, H5F_SCOPE_GLOBAL) < 0) throw Error("cannot flush checkpoint '" + tmp + "'");
  }
  if (comm_.is_root()) fsync_path(tmp, false);
  comm_.barrier();
  maybe_pause("verify", tmp, comm_);
  {
    ScopedTimer t("checkpoint.verify");
    try {
      h5::Handle f = h5::open_file(tmp, comm_);
      read_and_verify(f, state, comm_);
    } catch (const Error& e) {
      throw Error("checkpoint '" + tmp + "' did not verify after writing: " + e.what());
    }
  }
  maybe_pause("rename", tmp, comm_);
  comm_.on_root([&] {
    std::error_code ec;
    fs::rename(tmp, final_path, ec);
    if (ec) throw Error("cannot rename '" + tmp + "' to '" + final_path + "': " + ec.message());
    fsync_path(dir_, true);
  });
  maybe_pause("prune", tmp, comm_);
  if (comm_.is_root()) {
    const auto all = list_checkpoints(dir_);
    for (std::size_t n = static_cast<std::size_t>(keep_); n < all.size(); ++n) {
      std::error_code ec;
      fs::remove(all[n], ec);
    }
  }
  comm_.barrier();
  return final_path;
}

CheckpointMeta read_checkpoint_meta(const std::string& path, const Comm& comm) {
  h5::Handle f = h5::open_file(path, comm);
  if (!h5::has_attr(f, "format") || h5::read_attr_string(f, "format") != "cumulus-checkpoint")
    throw Error("not a cumulus checkpoint (no format attribute)");
  CheckpointMeta m;
  m.solver = h5::read_attr_string(f, "solver");
  m.step = h5::read_attr_int(f, "step");
  m.time = h5::read_attr_double(f, "time");
  m.job = h5::read_attr_string(f, "job");
  m.cumulus_version = h5::read_attr_string(f, "cumulus_version");
  m.git_commit = h5::read_attr_string(f, "git_commit");
  m.nranks = h5::read_attr_int(f, "nranks");
  m.decomposition = h5::read_attr_ints(f, "decomposition");
  return m;
}

std::string checkpoint_layout_mismatch(const std::string& path, const StateDescription& state, const Comm& comm) {
  h5::Handle f = h5::open_file(path, comm);
  for (const GridArray& a : state.arrays) {
    const std::string p = "arrays/" + a.name;
    // A missing array is damage, not a different job: restore_checkpoint reports it and auto skips.
    if (!h5::exists(f, "arrays") || !h5::exists(f, p)) continue;
    h5::Handle d(H5Dopen2(f, p.c_str(), H5P_DEFAULT), H5Dclose);
    const auto dims = h5::dataset_dims(d), want = global_dims(a);
    if (dims != want) {
      auto str = [](const std::vector<hsize_t>& v) {
        std::string s;
        for (std::size_t n = 0; n < v.size(); ++n) s += (n ? " x " : "") + std::to_string(v[n]);
        return s;
      };
      return "array '" + a.name + "' is " + str(dims) + " (components x nz x ny x nx) in the checkpoint but " +
             str(want) + " in this job";
    }
    const bool widened = a.dtype == DType::i64 && h5::has_attr(d, "dtype") &&
                         h5::read_attr_string(d, "dtype") == dtype_name(DType::i32);  // read_and_verify widens them
    if (h5::has_attr(d, "dtype") && h5::read_attr_string(d, "dtype") != dtype_name(a.dtype) && !widened)
      return "array '" + a.name + "' is stored as " + h5::read_attr_string(d, "dtype") + " but this job uses " +
             dtype_name(a.dtype);
  }
  return "";
}

void restore_checkpoint(const std::string& path, const StateDescription& state, const Comm& comm) {
  ScopedTimer t("checkpoint.read");
  std::vector<std::vector<unsigned char>> parts;
  {
    h5::Handle f = h5::open_file(path, comm);
    parts = read_and_verify(f, state, comm);
  }
  ScopedTimer t2("checkpoint.read.apply");
  for (std::size_t n = 0; n < state.arrays.size(); ++n) state.arrays[n].write_local(parts[n]);
}

std::string inspect_hdf5(const std::string& path) {
  h5::Handle f = h5::open_file_serial(path);
  std::string out = path + "\n";
  const bool ckpt = h5::has_attr(f, "format") && h5::read_attr_string(f, "format") == "cumulus-checkpoint";
  out += ckpt ? "kind: cumulus checkpoint\n" : "kind: HDF5 file (not a checkpoint)\n";
  std::string job;
  for (const char* key : {"format_version", "solver", "step", "time", "nranks", "cumulus_version", "git_commit"}) {
    if (!h5::has_attr(f, key)) continue;
    h5::Handle a(H5Aopen(f, key, H5P_DEFAULT), H5Aclose);
    h5::Handle t(H5Aget_type(a), H5Tclose);
    std::string v;
    switch (H5Tget_class(t)) {
      case H5T_STRING: v = h5::read_attr_string(f, key); break;
      case H5T_FLOAT: v = strprintf("%.17g", h5::read_attr_double(f, key)); break;
      default: v = std::to_string(h5::read_attr_int(f, key)); break;
    }
    out += strprintf("%-16s %s\n", (std::string(key) + ":").c_str(), v.c_str());
  }
  if (h5::has_attr(f, "decomposition")) {
    auto d = h5::read_attr_ints(f, "decomposition");
    out += "decomposition:   ";
    for (std::size_t n = 0; n < d.size(); ++n) out += (n ? " x " : "") + std::to_string(d[n]);
    out += "\n";
  }
  if (h5::has_attr(f, "job")) job = h5::read_attr_string(f, "job");
  const std::string group = h5::exists(f, "arrays") ? "arrays" : ".";
  h5::Handle g(H5Gopen2(f, group.c_str(), H5P_DEFAULT), H5Gclose);
  H5G_info_t info{};
  H5Gget_info(g, &info);
  out += "arrays:\n";
  bool all_ok = true;
  for (hsize_t n = 0; n < info.nlinks; ++n) {
    char name[256] = {0};
    H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, n, name, sizeof(name), H5P_DEFAULT);
    H5O_info_t oi{};
    if (H5Oget_info_by_name(g, name, &oi, H5P_DEFAULT) < 0 || oi.type != H5O_TYPE_DATASET) continue;
    h5::Handle d(H5Dopen2(g, name, H5P_DEFAULT), H5Dclose);
    const auto dims = h5::dataset_dims(d);
    std::string shape;
    for (std::size_t k = 0; k < dims.size(); ++k) shape += (k ? " x " : "") + std::to_string(dims[k]);
    std::string status = "no checksum";
    std::string units = h5::has_attr(d, "units") ? h5::read_attr_string(d, "units") : "";
    // The shape is the file's word alone: before a buffer is allocated from it, each extent must be
    // an int (a Box), the bytes it implies must be stored in the file (checkpoints are written whole
    // and uncompressed: at least a byte per value), and the buffer (at most 8 bytes a value) must
    // fit in half this node's memory, so that a damaged or hostile header cannot ask for terabytes.
    // (Parallel HDF5 allocates a dataset's storage when it is created, as a sparse file: the
    // stored size alone does not bound the shape of a file written through MPI-IO.)
    double values = dims.size() == 4 ? 1.0 : 0.0;
    for (const hsize_t e : dims) values *= static_cast<double>(e);
    const bool extents_ok = std::all_of(dims.begin(), dims.end(), [](hsize_t e) { return e <= 2147483647u; });
    const bool stored = extents_ok && values <= static_cast<double>(H5Dget_storage_size(d));
    const double node = memory::node_bytes();
    const bool fits = node <= 0 || values * 8 <= node / 2;
    if (dims.size() == 4 && h5::has_attr(d, "checksum") && (!stored || !fits)) {
      status = !stored ? "SHAPE NOT STORED IN THE FILE"
                       : strprintf("NOT VERIFIED: %.3g GB is more than half this node's memory", values * 8 / 1e9);
      all_ok = false;
    } else if (h5::has_attr(d, "checksum") && h5::has_attr(d, "dtype") && dims.size() == 4) {
      GridArray a;
      a.name = name;
      const std::string dt = h5::read_attr_string(d, "dtype");
      for (DType t : {DType::f64, DType::f32, DType::i32, DType::u16, DType::u8, DType::i64})
        if (dt == dtype_name(t)) a.dtype = t;
      a.ncomp = static_cast<int>(dims[0]);
      a.global_box = Box(0, 0, 0, static_cast<int>(dims[3]), static_cast<int>(dims[2]), static_cast<int>(dims[1]));
      a.local_box = a.global_box;
      std::vector<unsigned char> buf(static_cast<std::size_t>(a.global_box.volume()) * a.ncomp * dtype_size(a.dtype));
      const bool read = H5Dread(d, h5type(a.dtype), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()) >= 0;
      const bool ok = read && array_checksum_part(a, buf) == h5::read_attr_uint(d, "checksum");
      status = ok ? "checksum ok" : (read ? "CHECKSUM MISMATCH" : "UNREADABLE");
      all_ok = all_ok && ok;
    }
    out += strprintf("  %-20s %-22s %-6s %s%s\n", name, shape.c_str(), units.c_str(), status.c_str(), "");
  }
  if (ckpt) out += all_ok ? "verification: all checksums ok\n" : "verification: FAILED\n";
  if (!job.empty()) out += "job:\n" + job;
  return out;
}

}  // namespace cumulus
