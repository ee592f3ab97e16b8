#include "core/timers.hpp"

#include <algorithm>
#include <vector>

#include "core/strings.hpp"

namespace cumulus {
namespace detail {
void flush_event_timers();
}

TimerRegistry& TimerRegistry::instance() {
  static TimerRegistry r;
  return r;
}

TimerStat* TimerRegistry::slot(std::string_view label) {
  auto it = stats_.find(label);
  if (it == stats_.end()) it = stats_.emplace(std::string(label), TimerStat{}).first;
  return &it->second;
}

void TimerRegistry::flush() { detail::flush_event_timers(); }

std::map<std::string, TimerStat> TimerRegistry::snapshot() {
  flush();
  std::map<std::string, TimerStat> out;
  for (const auto& [label, s] : stats_)
    if (s.calls > 0) out.emplace(label, s);
  return out;
}

void TimerRegistry::reset() {
  flush();
  for (auto& entry : stats_) entry.second = TimerStat{};  // keep the entries: slot() pointers stay valid
}

std::string TimerRegistry::table(double total_seconds) {
  auto stats = snapshot();
  std::vector<std::pair<std::string, TimerStat>> rows(stats.begin(), stats.end());
  std::sort(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.second.seconds > b.second.seconds; });
  std::string out = strprintf("%-36s %10s %12s %8s\n", "where the time went (rank 0)", "calls", "seconds", "% run");
  for (auto& [label, s] : rows)
    out += strprintf("%-36s %10ld %12.4f %7.1f%%\n", label.c_str(), s.calls, s.seconds,
                     total_seconds > 0 ? 100.0 * s.seconds / total_seconds : 0.0);
  out += strprintf("%-36s %10s %12.4f\n", "total run (wall)", "", total_seconds);
  return out;
}

}  // namespace cumulus
