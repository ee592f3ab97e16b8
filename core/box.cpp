#include "core/box.hpp"

#include "core/strings.hpp"

namespace cumulus {
std::string Box::str() const {
  return strprintf("[%d,%d)x[%d,%d)x[%d,%d)", lo[0], hi[0], lo[1], hi[1], lo[2], hi[2]);
}
}  // namespace cumulus
