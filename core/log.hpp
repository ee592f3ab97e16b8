#pragma once
// Logging: rank 0 writes to stdout and, once the run directory exists, to its log file.
// Other ranks stay quiet unless CUMULUS_LOG_ALL_RANKS is set (then each line is prefixed).
#include <fstream>
#include <string>

namespace cumulus {

class Log {
 public:
  static Log& instance();
  void set_rank(int rank);
  void open_file(const std::string& path);  // appends
  void close_file();

  void info(const std::string& line);   // rank 0 (or all ranks when asked)
  void warn(const std::string& line);   // rank 0, "warning: " prefix
  void error(const std::string& line);  // any rank, to stderr
  bool verbose_rank() const { return rank_ == 0 || all_ranks_; }

 private:
  void write(const std::string& line, bool to_stderr);
  int rank_ = 0;
  bool all_ranks_ = false;
  std::ofstream file_;
};

inline void log_info(const std::string& s) { Log::instance().info(s); }
inline void log_warn(const std::string& s) { Log::instance().warn(s); }

}  // namespace cumulus
