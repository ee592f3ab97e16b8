// Checks of declared counts (core/input_limits.hpp).
#include "core/input_limits.hpp"

#include <cmath>

#include "core/memory.hpp"
#include "core/strings.hpp"

namespace cumulus::limits {

std::string count_problem(double value, const std::string& what, const CountLimit& limit) {
  // Compared as doubles: casting a value beyond the integer range first would be undefined.
  if (!std::isfinite(value) || value != std::floor(value))
    return strprintf("the count of %s, %.15g, is not a whole number", what.c_str(), value);
  if (value < 1) return strprintf("the count of %s, %.15g, is not positive", what.c_str(), value);
  if (limit.max > 0 && value > static_cast<double>(limit.max))
    return strprintf("%.15g %s is more than cumulus accepts (at most %lld; see docs/input-limits.md)", value,
                     what.c_str(), static_cast<long long>(limit.max));
  if (limit.min_file_bytes_each > 0 && value * limit.min_file_bytes_each > static_cast<double>(limit.file_bytes))
    return strprintf("%.15g %s cannot fit in this file of %llu bytes (each takes at least %g bytes)", value,
                     what.c_str(), static_cast<unsigned long long>(limit.file_bytes), limit.min_file_bytes_each);
  const double node = memory::node_bytes();
  if (limit.memory_bytes_each > 0 && node > 0 && value * limit.memory_bytes_each > node)
    return strprintf("%.15g %s need %.3g GB, more than this node's %.3g GB of memory", value, what.c_str(),
                     value * limit.memory_bytes_each / 1e9, node / 1e9);
  return "";
}

}  // namespace cumulus::limits
