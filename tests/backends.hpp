#pragma once
// The backends a test runs on: host always; CUDA when built, skipped visibly without a device
// (scripts/gpu-check runs those cases on a GPU machine).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/exec.hpp"

namespace cumulus::testing {

inline std::vector<Backend> built_backends() {
  std::vector<Backend> b{Backend::host};
  if (cuda_built()) b.push_back(Backend::cuda);
  return b;
}

inline std::string backend_name(const ::testing::TestParamInfo<Backend>& info) { return to_string(info.param); }

// An Exec for `b`, or GTEST_SKIP() when b is CUDA and no device is visible.
#define CUMULUS_EXEC_OR_SKIP(exec, b)                                                  \
  ::cumulus::Exec exec;                                                                \
  if ((b) == ::cumulus::Backend::cuda) {                                               \
    if (::cumulus::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible"; \
    exec = ::cumulus::select_backend("cuda", 0, nullptr);                              \
  }

}  // namespace cumulus::testing
