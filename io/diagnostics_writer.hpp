#pragma once
// diagnostics.csv: one row per diagnostics time, the columns the Model reports (rank 0 writes).
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace cumulus {

class DiagnosticsWriter {
 public:
  // `resume_step` >= 0: continue an existing file after a restart, dropping rows after that step.
  DiagnosticsWriter(std::string path, bool is_root, long resume_step = -1);
  ~DiagnosticsWriter();
  DiagnosticsWriter(const DiagnosticsWriter&) = delete;
  DiagnosticsWriter& operator=(const DiagnosticsWriter&) = delete;
  void write(long step, double time, const std::vector<std::pair<std::string, double>>& values);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  bool root_;
  std::FILE* file_ = nullptr;
  bool header_done_ = false;
  long last_step_ = -1;  // rows are written once per step, in step order
};

}  // namespace cumulus
