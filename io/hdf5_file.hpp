#pragma once
// Thin RAII over the HDF5 C API (parallel, MPI-IO): handles close themselves, errors throw with
// the file name and what failed. HDF5's own error printing is switched off; we report instead.
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/comm.hpp"
#include "core/error.hpp"

namespace cumulus::h5 {

class Handle {
 public:
  Handle() = default;
  Handle(hid_t id, herr_t (*closer)(hid_t)) : id_(id), closer_(closer) {}
  ~Handle() { reset(); }
  Handle(Handle&& o) noexcept : id_(o.id_), closer_(o.closer_) { o.id_ = -1; }
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = o.id_;
      closer_ = o.closer_;
      o.id_ = -1;
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  hid_t id() const { return id_; }
  operator hid_t() const { return id_; }
  void reset() {
    if (id_ >= 0 && closer_) closer_(id_);
    id_ = -1;
  }

 private:
  hid_t id_ = -1;
  herr_t (*closer_)(hid_t) = nullptr;
};

void silence_errors();

// Collective create/open over `comm` with the MPI-IO driver.
Handle create_file(const std::string& path, const Comm& comm);
Handle open_file(const std::string& path, const Comm& comm);  // read-only
// Opens without MPI-IO (one process; for `cumulus inspect`).
Handle open_file_serial(const std::string& path);

bool exists(hid_t loc, const std::string& path);
Handle create_group(hid_t loc, const std::string& name);

// Attributes (collective in parallel files: every rank calls with the same values).
void write_attr(hid_t obj, const std::string& name, const std::string& value);
void write_attr(hid_t obj, const std::string& name, double value);
void write_attr(hid_t obj, const std::string& name, std::int64_t value);
void write_attr(hid_t obj, const std::string& name, std::uint64_t value);
void write_attr(hid_t obj, const std::string& name, const std::vector<std::int64_t>& value);
void write_attr(hid_t obj, const std::string& name, const std::vector<double>& value);
bool has_attr(hid_t obj, const std::string& name);
std::string read_attr_string(hid_t obj, const std::string& name);
double read_attr_double(hid_t obj, const std::string& name);
std::int64_t read_attr_int(hid_t obj, const std::string& name);
std::uint64_t read_attr_uint(hid_t obj, const std::string& name);
std::vector<std::int64_t> read_attr_ints(hid_t obj, const std::string& name);

hid_t native_type(int dtype_code);  // DType as int, see state.hpp

// A dataset of `dims` (slowest first) and each rank's hyperslab [start, start + count), written or
// read collectively. `data` holds the hyperslab contiguously (last dimension fastest).
Handle create_dataset(hid_t loc, const std::string& name, hid_t type, const std::vector<hsize_t>& dims);
void write_hyperslab(hid_t dset, hid_t type, const std::vector<hsize_t>& start, const std::vector<hsize_t>& count,
                     const void* data, bool collective);
// The same, with the hyperslab taken from a larger array in memory: `mem_dims` its shape and
// `mem_start` where the hyperslab sits in it (e.g. the interior of a ghost-padded field).
void write_hyperslab_from(hid_t dset, hid_t type, const std::vector<hsize_t>& start, const std::vector<hsize_t>& count,
                          const std::vector<hsize_t>& mem_dims, const std::vector<hsize_t>& mem_start, const void* data,
                          bool collective);
void read_hyperslab(hid_t dset, hid_t type, const std::vector<hsize_t>& start, const std::vector<hsize_t>& count,
                    void* data, bool collective);
std::vector<hsize_t> dataset_dims(hid_t dset);

}  // namespace cumulus::h5
