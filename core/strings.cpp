#include "core/strings.hpp"

#include <algorithm>
#include <cmath>

namespace cumulus {

std::string double_quoted(std::string_view s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  return q + "\"";
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_d = static_cast<std::size_t>(-1);
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  // A typo changes a few characters; anything further is a different word.
  const std::size_t limit = std::max<std::size_t>(2, word.size() / 3);
  return best_d <= limit ? best : std::string{};
}

std::string format_hms(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--:--:--";
  const long s = std::lround(seconds);
  return strprintf("%02ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
}

}  // namespace cumulus
