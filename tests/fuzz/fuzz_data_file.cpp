// libFuzzer target: the LAMMPS data file reader (solvers/md/data_file.cpp). Any input must either
// read or be refused with InputError; a crash, a sanitizer report, a leak, or an allocation beyond
// libFuzzer's -rss_limit_mb / -malloc_limit_mb (a count the file only claims) is a finding.
#include <cstddef>
#include <cstdint>

#include "core/error.hpp"
#include "solvers/md/data_file.hpp"
#include "tests/fuzz/fuzz_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = cumulus::fuzz::scratch_path(".data");
  cumulus::fuzz::write_file(path, data, size);
  for (const bool header_only : {true, false}) {
    try {
      (void)cumulus::md::read_data_file(path, header_only);
    } catch (const cumulus::InputError&) {
      // refused with a message: the expected outcome for malformed input
    }
  }
  return 0;
}
