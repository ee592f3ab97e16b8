#pragma once
// Limits on the counts that input files declare (docs/input-limits.md lists them and says why).
// A reader checks a count here before it allocates anything from it, so that a file that merely
// claims "2000000000 atom types" is refused at once instead of after gigabytes of allocation.
#include <cstdint>
#include <string>

namespace cumulus::limits {

// Atoms of an md run: ids and per-rank indices are 32-bit in places (md.cells checks the same).
inline constexpr std::int64_t kMaxAtoms = 2'000'000'000;
// Atom types: pair coefficients are tables of ntypes^2 entries, copied to every rank and device.
inline constexpr std::int64_t kMaxAtomTypes = 1000;

// What a declared count is checked against; a limit <= 0 is not checked.
struct CountLimit {
  std::int64_t max = 0;               // the documented limit
  std::uintmax_t file_bytes = 0;      // the size of the file that must hold the items
  double min_file_bytes_each = 0;     // the fewest bytes one item takes in that file
  double memory_bytes_each = 0;       // bytes one item takes in memory once read
};

// Empty when `value` (the number as read, before any conversion to an integer type) is a whole
// number in [1, max] that the file can hold and this node's memory can take; otherwise the reason,
// a sentence the caller prefixes with the file and line ("... declares N atom types, but ...").
std::string count_problem(double value, const std::string& what, const CountLimit& limit);

}  // namespace cumulus::limits
