#pragma once
// Checkpoints: one HDF5 file per checkpoint, written collectively (each rank its hyperslab of each
// global array), then flushed, closed, re-opened and verified, then renamed into place; older ones
// are pruned only after that. A crash or SIGKILL at any moment leaves the previous one usable.
// Restart reads the newest one that verifies, on any rank count (each rank reads its own part).
//
// Layout (docs/checkpoints.md): root attributes format = "cumulus-checkpoint", format_version,
// solver, step, time, job (resolved TOML), cumulus_version, git_commit, nranks, decomposition;
// /arrays/<name>: dataset [ncomp, nz, ny, nx] with attributes units, dtype, checksum, checksum_algorithm.
#include <cstdint>
#include <string>
#include <vector>

#include "core/comm.hpp"
#include "io/state.hpp"

namespace cumulus {

struct CheckpointMeta {
  std::string solver;
  std::int64_t step = 0;
  double time = 0;
  std::string job;  // resolved TOML
  std::string cumulus_version, git_commit;
  std::int64_t nranks = 0;
  std::vector<std::int64_t> decomposition;
};

// Order-independent checksum of one array: the sum (mod 2^64) over elements of
// splitmix64(bits ^ index * 0x9E3779B97F4A7C15), index the element's global linear index and bits its
// bytes as an unsigned integer; a sum does not depend on how the array was split over ranks.
std::uint64_t array_checksum_part(const GridArray& a, const std::vector<unsigned char>& local);
// The same over this rank's part in place: `base` holds the components of `alloc` (a box around
// local_box, e.g. with ghost layers), (c, k, j, i) order.
std::uint64_t array_checksum_part(const GridArray& a, const unsigned char* base, const Box& alloc);
inline constexpr const char* kChecksumAlgorithm = "sum-splitmix64-v2";

class CheckpointWriter {
 public:
  CheckpointWriter(std::string directory, int keep, const Comm& comm);
  // Returns the path of the new, verified checkpoint.
  std::string write(const StateDescription& state, const CheckpointMeta& meta);
  const std::string& directory() const { return dir_; }

 private:
  std::string dir_;
  int keep_;
  Comm comm_;
};

std::string checkpoint_file_name(std::int64_t step);
// Checkpoint files in `directory`, newest (highest step) first.
std::vector<std::string> list_checkpoints(const std::string& directory);

// Reads the root attributes (collective). Throws Error when the file is not a readable checkpoint.
CheckpointMeta read_checkpoint_meta(const std::string& path, const Comm& comm);

// Checks that every array of `state` that is in the file has the same shape and type; returns a
// description of the first difference, or "". (Missing arrays are damage: restore reports them.)
std::string checkpoint_layout_mismatch(const std::string& path, const StateDescription& state, const Comm& comm);

// Reads this rank's part of every array, verifies every checksum, and only then hands the data to
// the arrays' write_local. Throws Error (naming the array) when anything is missing or damaged;
// the model is untouched then.
void restore_checkpoint(const std::string& path, const StateDescription& state, const Comm& comm);

// Human-readable summary of a checkpoint or output HDF5 file (serial; for `cumulus inspect`).
std::string inspect_hdf5(const std::string& path);

}  // namespace cumulus
