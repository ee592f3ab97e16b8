// The node-memory check that every grid solver's check() makes (declared in core/memory.hpp; the
// allocators themselves are in exec.cpp, beside the backends).
#include "core/memory.hpp"

#include <unistd.h>

#include "core/config.hpp"
#include "core/strings.hpp"

namespace cumulus {

double memory::node_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return static_cast<double>(pages) * static_cast<double>(page);
}

void check_node_memory(const Config& cfg, const std::string& key, double cells, double bytes_per_cell, int nranks,
                       const std::string& what) {
  const double per_rank = cells * bytes_per_cell / nranks;
  const double node = memory::node_bytes();
  if (cells > 1e13 || (node > 0 && per_rank > node))
    cfg.fail(key, strprintf("%.3g cells need %.3g GB per rank on %d rank(s)%s, more than this node's %.3g GB", cells,
                            per_rank / 1e9, nranks, what.empty() ? "" : (" (" + what + ")").c_str(), node / 1e9));
}

}  // namespace cumulus
