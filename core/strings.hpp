#pragma once
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace cumulus {

// printf-style formatting into a std::string (g++ 12 has no <format>).
template <class... Args>
std::string strprintf(const char* fmt, Args... args) {
  const int n = std::snprintf(nullptr, 0, fmt, args...);
  if (n <= 0) return {};
  std::string s(static_cast<std::size_t>(n), '\0');
  std::snprintf(s.data(), s.size() + 1, fmt, args...);
  return s;
}

// "s" with \ and " escaped: a string literal in TOML, JSON and YAML's double-quoted style.
std::string double_quoted(std::string_view s);

// Levenshtein distance, for "did you mean" suggestions.
std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `word` if it is close enough to be a plausible typo, else "".
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

// "12.3 s", "01:02:03": human-readable durations for progress lines.
std::string format_hms(double seconds);

}  // namespace cumulus
