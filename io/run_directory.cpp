#include "io/run_directory.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"

namespace cumulus {

std::string run_directory_for(const std::string& job_file, const std::string& configured) {
  if (!configured.empty()) return configured;
  return std::filesystem::path(job_file).stem().string();
}

void create_run_directory(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) throw Error("cannot create the run directory '" + path + "': " + ec.message());
  if (!std::filesystem::is_directory(path)) throw Error("the run directory '" + path + "' exists and is not a directory");
}

void write_file_atomic(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw Error("cannot write '" + tmp + "': " + std::strerror(errno));
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size() && std::fflush(f) == 0 &&
                  ::fsync(::fileno(f)) == 0;
  const int err = errno;
  std::fclose(f);
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw Error("cannot write '" + path + "': " + std::strerror(ok ? errno : err));
  }
}

}  // namespace cumulus
