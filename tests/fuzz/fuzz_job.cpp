// libFuzzer target: a job file as `cumulus check` reads it: TOML parse, the schema (types, ranges,
// unknown keys), and the chosen solver's checks (which open the files a job names, relative to
// the scratch directory). Only InputError (exit 2) may come out; anything else is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "tests/fuzz/fuzz_job_common.hpp"

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) { return cumulus::fuzz::initialize(argc, argv); }

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  cumulus::fuzz::check_job(text, {});
  return 0;
}
