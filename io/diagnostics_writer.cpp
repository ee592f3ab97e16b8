#include "io/diagnostics_writer.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "core/error.hpp"

namespace cumulus {

DiagnosticsWriter::DiagnosticsWriter(std::string path, bool is_root, long resume_step)
    : path_(std::move(path)), root_(is_root) {
  if (!root_ || resume_step < 0) return;
  std::ifstream in(path_);
  std::string line, kept;
  bool first = true;
  while (std::getline(in, line)) {
    if (first) {
      kept += line + "\n";  // the header
      first = false;
      header_done_ = true;
      continue;
    }
    const long step = std::strtol(line.c_str(), nullptr, 10);
    if (step <= resume_step) {
      kept += line + "\n";
      last_step_ = std::max(last_step_, step);
    }
  }
  in.close();
  file_ = std::fopen(path_.c_str(), "w");
  if (!file_) throw Error("cannot write '" + path_ + "': " + std::strerror(errno));
  std::fputs(kept.c_str(), file_);
  std::fflush(file_);
}

DiagnosticsWriter::~DiagnosticsWriter() {
  if (file_) std::fclose(file_);
}

void DiagnosticsWriter::write(long step, double time, const std::vector<std::pair<std::string, double>>& values) {
  if (!root_ || step <= last_step_) return;  // e.g. a restart that ends where it began
  last_step_ = step;
  if (!file_) {
    file_ = std::fopen(path_.c_str(), "w");
    if (!file_) throw Error("cannot write '" + path_ + "': " + std::strerror(errno));
  }
  if (!header_done_) {
    std::fprintf(file_, "step,time");
    for (auto& [name, v] : values) std::fprintf(file_, ",%s", name.c_str());
    std::fprintf(file_, "\n");
    header_done_ = true;
  }
  // %.17g: every double reads back exactly.
  std::fprintf(file_, "%ld,%.17g", step, time);
  for (auto& [name, v] : values) std::fprintf(file_, ",%.17g", v);
  std::fprintf(file_, "\n");
  if (std::fflush(file_) != 0) throw Error("cannot write '" + path_ + "': " + std::strerror(errno));
}

}  // namespace cumulus
