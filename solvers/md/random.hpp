#pragma once
// A counter-based generator: splitmix64 of (seed, atom id, draw), so a number depends only on those
// three, not on how atoms are spread over ranks or in what order they are visited.
#include <cstdint>

namespace cumulus::md {

inline std::uint64_t splitmix64(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
// Uniform in (0, 1).
inline double uniform(std::uint64_t seed, std::uint64_t id, std::uint64_t draw) {
  const std::uint64_t r = splitmix64(splitmix64(seed ^ splitmix64(id)) + draw);
  return (static_cast<double>(r >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

}  // namespace cumulus::md
