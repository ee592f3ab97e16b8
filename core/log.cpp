#include "core/log.hpp"

#include <cstdlib>
#include <iostream>

namespace cumulus {

Log& Log::instance() {
  static Log l;
  return l;
}

void Log::set_rank(int rank) {
  rank_ = rank;
  all_ranks_ = std::getenv("CUMULUS_LOG_ALL_RANKS") != nullptr;
}

void Log::open_file(const std::string& path) {
  if (rank_ != 0) return;
  file_.open(path, std::ios::app);
}

void Log::close_file() { file_.close(); }

void Log::write(const std::string& line, bool to_stderr) {
  const std::string text = (all_ranks_ && rank_ != 0) ? "[rank " + std::to_string(rank_) + "] " + line : line;
  (to_stderr ? std::cerr : std::cout) << text << std::endl;
  if (file_.is_open()) file_ << text << '\n' << std::flush;
}

void Log::info(const std::string& line) {
  if (verbose_rank()) write(line, false);
}
void Log::warn(const std::string& line) {
  if (verbose_rank()) write("warning: " + line, false);
}
void Log::error(const std::string& line) { write("error: " + line, true); }

}  // namespace cumulus
