#include "io/hdf5_file.hpp"

#include "core/strings.hpp"
#include "io/state.hpp"

namespace cumulus {

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::f64: return 8;
    case DType::f32: return 4;
    case DType::i32: return 4;
    case DType::u16: return 2;
    case DType::u8: return 1;
    case DType::i64: return 8;
  }
  return 1;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f64: return "f64";
    case DType::f32: return "f32";
    case DType::i32: return "i32";
    case DType::u16: return "u16";
    case DType::u8: return "u8";
    case DType::i64: return "i64";
  }
  return "?";
}

namespace h5 {
namespace {
void check(herr_t rc, const std::string& what) {
  if (rc < 0) throw Error("HDF5: " + what + " failed");
}
hid_t check_id(hid_t id, const std::string& what) {
  if (id < 0) throw Error("HDF5: " + what + " failed");
  return id;
}
Handle plist(hid_t cls) { return Handle(check_id(H5Pcreate(cls), "H5Pcreate"), H5Pclose); }
}  // namespace

void silence_errors() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

Handle create_file(const std::string& path, const Comm& comm) {
  silence_errors();
  Handle fapl = plist(H5P_FILE_ACCESS);
  check(H5Pset_fapl_mpio(fapl, comm.raw(), MPI_INFO_NULL), "H5Pset_fapl_mpio");
  const hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  if (f < 0) throw Error("cannot create '" + path + "' (is the directory writable, is there space?)");
  return Handle(f, H5Fclose);
}

Handle open_file(const std::string& path, const Comm& comm) {
  silence_errors();
  Handle fapl = plist(H5P_FILE_ACCESS);
  check(H5Pset_fapl_mpio(fapl, comm.raw(), MPI_INFO_NULL), "H5Pset_fapl_mpio");
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl);
  if (f < 0) throw Error("cannot open '" + path + "' as HDF5 (missing, truncated or not HDF5)");
  return Handle(f, H5Fclose);
}

Handle open_file_serial(const std::string& path) {
  silence_errors();
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) throw Error("cannot open '" + path + "' as HDF5 (missing, truncated or not HDF5)");
  return Handle(f, H5Fclose);
}

bool exists(hid_t loc, const std::string& path) { return H5Lexists(loc, path.c_str(), H5P_DEFAULT) > 0; }

Handle create_group(hid_t loc, const std::string& name) {
  return Handle(check_id(H5Gcreate2(loc, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), "create group " + name),
                H5Gclose);
}

namespace {
void write_attr_raw(hid_t obj, const std::string& name, hid_t type, const std::vector<hsize_t>& dims, const void* v) {
  Handle space(check_id(dims.empty() ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, dims.data(), nullptr), "H5Screate"),
               H5Sclose);
  if (H5Aexists(obj, name.c_str()) > 0) H5Adelete(obj, name.c_str());
  Handle a(check_id(H5Acreate2(obj, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT), "create attribute " + name),
           H5Aclose);
  check(H5Awrite(a, type, v), "write attribute " + name);
}
Handle open_attr(hid_t obj, const std::string& name) {
  const hid_t a = H5Aopen(obj, name.c_str(), H5P_DEFAULT);
  if (a < 0) throw Error("missing attribute '" + name + "'");
  return Handle(a, H5Aclose);
}
}  // namespace

void write_attr(hid_t obj, const std::string& name, const std::string& value) {
  Handle t(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(t, value.empty() ? 1 : value.size());
  H5Tset_strpad(t, H5T_STR_NULLPAD);
  write_attr_raw(obj, name, t, {}, value.empty() ? "" : value.data());
}
void write_attr(hid_t obj, const std::string& name, double value) {
  write_attr_raw(obj, name, H5T_NATIVE_DOUBLE, {}, &value);
}
void write_attr(hid_t obj, const std::string& name, std::int64_t value) {
  write_attr_raw(obj, name, H5T_NATIVE_INT64, {}, &value);
}
void write_attr(hid_t obj, const std::string& name, std::uint64_t value) {
  write_attr_raw(obj, name, H5T_NATIVE_UINT64, {}, &value);
}
void write_attr(hid_t obj, const std::string& name, const std::vector<std::int64_t>& value) {
  write_attr_raw(obj, name, H5T_NATIVE_INT64, {value.size()}, value.data());
}
void write_attr(hid_t obj, const std::string& name, const std::vector<double>& value) {
  write_attr_raw(obj, name, H5T_NATIVE_DOUBLE, {value.size()}, value.data());
}

bool has_attr(hid_t obj, const std::string& name) { return H5Aexists(obj, name.c_str()) > 0; }

std::string read_attr_string(hid_t obj, const std::string& name) {
  Handle a = open_attr(obj, name);
  Handle t(H5Aget_type(a), H5Tclose);
  if (H5Tget_class(t) != H5T_STRING) throw Error("attribute '" + name + "' is not a string");
  if (H5Tis_variable_str(t) > 0) {
    char* s = nullptr;
    Handle mt(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mt, H5T_VARIABLE);
    check(H5Aread(a, mt, &s), "read attribute " + name);
    std::string out = s ? s : "";
    H5free_memory(s);
    return out;
  }
  const std::size_t n = H5Tget_size(t);
  // A fixed-length string is no longer than the attribute's stored bytes: a type that claims more
  // (a damaged or hostile file) must not size the buffer.
  if (n > H5Aget_storage_size(a)) throw Error("attribute '" + name + "' is damaged (its string is longer than its storage)");
  std::string s(n, '\0');
  check(H5Aread(a, t, s.data()), "read attribute " + name);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}
double read_attr_double(hid_t obj, const std::string& name) {
  double v = 0;
  check(H5Aread(open_attr(obj, name), H5T_NATIVE_DOUBLE, &v), "read attribute " + name);
  return v;
}
std::int64_t read_attr_int(hid_t obj, const std::string& name) {
  std::int64_t v = 0;
  check(H5Aread(open_attr(obj, name), H5T_NATIVE_INT64, &v), "read attribute " + name);
  return v;
}
std::uint64_t read_attr_uint(hid_t obj, const std::string& name) {
  std::uint64_t v = 0;
  check(H5Aread(open_attr(obj, name), H5T_NATIVE_UINT64, &v), "read attribute " + name);
  return v;
}
std::vector<std::int64_t> read_attr_ints(hid_t obj, const std::string& name) {
  Handle a = open_attr(obj, name);
  Handle s(H5Aget_space(a), H5Sclose);
  const hssize_t n = H5Sget_simple_extent_npoints(s);
  if (n > 0 && static_cast<hsize_t>(n) > H5Aget_storage_size(a))  // each int is at least one stored byte
    throw Error("attribute '" + name + "' is damaged (more values than stored bytes)");
  std::vector<std::int64_t> v(static_cast<std::size_t>(n > 0 ? n : 0));
  check(H5Aread(a, H5T_NATIVE_INT64, v.data()), "read attribute " + name);
  return v;
}

hid_t native_type(int code) {
  switch (static_cast<DType>(code)) {
    case DType::f64: return H5T_NATIVE_DOUBLE;
    case DType::f32: return H5T_NATIVE_FLOAT;
    case DType::i32: return H5T_NATIVE_INT32;
    case DType::u16: return H5T_NATIVE_UINT16;
    case DType::u8: return H5T_NATIVE_UINT8;
    case DType::i64: return H5T_NATIVE_INT64;
  }
  return H5T_NATIVE_UINT8;
}

Handle create_dataset(hid_t loc, const std::string& name, hid_t type, const std::vector<hsize_t>& dims) {
  Handle space(check_id(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), "H5Screate_simple"),
               H5Sclose);
  return Handle(check_id(H5Dcreate2(loc, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                         "create dataset " + name),
                H5Dclose);
}

namespace {
void transfer(bool write, hid_t dset, hid_t type, const std::vector<hsize_t>& start, const std::vector<hsize_t>& count,
              void* data, bool collective) {
  Handle fspace(check_id(H5Dget_space(dset), "H5Dget_space"), H5Sclose);
  if (static_cast<std::size_t>(H5Sget_simple_extent_ndims(fspace)) != start.size())
    throw Error("dataset rank does not match");
  check(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr), "select hyperslab");
  Handle mspace(check_id(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr), "H5Screate_simple"),
                H5Sclose);
  Handle xfer = plist(H5P_DATASET_XFER);
  if (collective) check(H5Pset_dxpl_mpio(xfer, H5FD_MPIO_COLLECTIVE), "H5Pset_dxpl_mpio");
  if (write) check(H5Dwrite(dset, type, mspace, fspace, xfer, data), "write dataset");
  else check(H5Dread(dset, type, mspace, fspace, xfer, data), "read dataset");
}
}  // namespace

void write_hyperslab_from(hid_t dset, hid_t type, const std::vector<hsize_t>& start, const std::vector<hsize_t>& count,
                          const std::vector<hsize_t>& mem_dims, const std::vector<hsize_t>& mem_start, const void* data,
                          bool collective) {
  Handle fspace(check_id(H5Dget_space(dset), "H5Dget_space"), H5Sclose);
  check(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr), "select hyperslab");
  Handle mspace(check_id(H5Screate_simple(static_cast<int>(mem_dims.size()), mem_dims.data(), nullptr), "H5Screate"),
                H5Sclose);
  check(H5Sselect_hyperslab(mspace, H5S_SELECT_SET, mem_start.data(), nullptr, count.data(), nullptr),
        "select memory hyperslab");
  Handle xfer = plist(H5P_DATASET_XFER);
  if (collective) check(H5Pset_dxpl_mpio(xfer, H5FD_MPIO_COLLECTIVE), "H5Pset_dxpl_mpio");
  check(H5Dwrite(dset, type, mspace, fspace, xfer, data), "write dataset");
}

void write_hyperslab(hid_t dset, hid_t type, const std::vector<hsize_t>& start, const std::vector<hsize_t>& count,
                     const void* data, bool collective) {
  transfer(true, dset, type, start, count, const_cast<void*>(data), collective);
}
void read_hyperslab(hid_t dset, hid_t type, const std::vector<hsize_t>& start, const std::vector<hsize_t>& count,
                    void* data, bool collective) {
  transfer(false, dset, type, start, count, data, collective);
}

std::vector<hsize_t> dataset_dims(hid_t dset) {
  Handle s(check_id(H5Dget_space(dset), "H5Dget_space"), H5Sclose);
  const int n = H5Sget_simple_extent_ndims(s);
  std::vector<hsize_t> d(static_cast<std::size_t>(n > 0 ? n : 0));
  H5Sget_simple_extent_dims(s, d.data(), nullptr);
  return d;
}

}  // namespace h5
}  // namespace cumulus
