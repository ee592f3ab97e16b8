#include "io/diagnostics_writer.hpp"

#include <cerrno>
#include <cstring>

#include "core/error.hpp"

namespace cumulus {

DiagnosticsWriter::DiagnosticsWriter(std::string path, bool is_root) : path_(std::move(path)), root_(is_root) {}

DiagnosticsWriter::~DiagnosticsWriter() {
  if (file_) std::fclose(file_);
}

void DiagnosticsWriter::write(long step, double time, const std::vector<std::pair<std::string, double>>& values) {
  if (!root_) return;
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
