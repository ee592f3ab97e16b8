#pragma once
// Named timers: every kernel launch, halo exchange and I/O phase adds its time to a label, and the
// run log ends with a table of where the time went.
#include <chrono>
#include <map>
#include <string>
#include <string_view>

namespace cumulus {

struct TimerStat {
  double seconds = 0;
  long calls = 0;
};

class TimerRegistry {
 public:
  static TimerRegistry& instance();
  void add(std::string_view label, double seconds) { add(slot(label), seconds); }
  // The statistics of a label, created on first use. The pointer stays valid for the life of the
  // program (reset() zeroes entries, never removes them), so a kernel launch or a scope looks its
  // label up once and allocates nothing when the label is known.
  TimerStat* slot(std::string_view label);
  static void add(TimerStat* s, double seconds) {
    s->seconds += seconds;
    s->calls += 1;
  }
  // Folds in pending GPU event timings (synchronises with those events).
  void flush();
  std::map<std::string, TimerStat> snapshot();
  void reset();
  // A table of labels sorted by time, with the share of `total_seconds`.
  std::string table(double total_seconds);

 private:
  std::map<std::string, TimerStat, std::less<>> stats_;  // transparent: finds a string_view
};

// Wall-clock time of a scope, added to a label when the scope ends.
class ScopedTimer {
 public:
  explicit ScopedTimer(std::string_view label)
      : stat_(TimerRegistry::instance().slot(label)), t0_(std::chrono::steady_clock::now()) {}
  ~ScopedTimer() {
    TimerRegistry::add(stat_, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count());
  }
  ScopedTimer(const ScopedTimer&) = delete;
  ScopedTimer& operator=(const ScopedTimer&) = delete;

 private:
  TimerStat* stat_;
  std::chrono::steady_clock::time_point t0_;
};

// Seconds since an arbitrary fixed point (steady clock).
inline double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace cumulus
