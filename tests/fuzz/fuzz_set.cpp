// libFuzzer target: `--set key=value` overrides on a valid job. Each line of the input is one
// --set argument; the job is configs-like heat job (every solver's keys are reachable by changing
// `solver` itself through --set).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_job_common.hpp"

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) { return cumulus::fuzz::initialize(argc, argv); }

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string job = "solver = \"heat\"\n[run]\nend_step = 10\n[heat]\ncells = [16, 16]\n";
  std::vector<std::string> sets;
  std::string line;
  for (std::size_t i = 0; i < size; ++i) {
    const char c = static_cast<char>(data[i]);
    if (c == '\n') {
      sets.push_back(line);
      line.clear();
    } else {
      line += c;
    }
  }
  if (!line.empty()) sets.push_back(line);
  if (sets.size() > 64) return 0;  // many overrides test nothing one does not
  cumulus::fuzz::check_job(job, sets);
  return 0;
}
