#pragma once
// Shared by the fuzz targets: the readers under test take a path, so each input is written to one
// scratch file per process (in $TMPDIR), replaced for every input.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace cumulus::fuzz {

inline std::string scratch_path(const char* suffix) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir && *dir ? dir : "/tmp") + "/cumulus_fuzz_" + std::to_string(getpid()) + suffix;
}

inline void write_file(const std::string& path, const std::uint8_t* data, std::size_t size) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();  // the fuzzer's own set-up failed: nothing to learn from going on
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
}

}  // namespace cumulus::fuzz
