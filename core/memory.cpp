// The node-memory check that every grid solver's check() makes (declared in core/memory.hpp; the
// allocators themselves are in exec.cpp, beside the backends).
#include "core/memory.hpp"

#include <unistd.h>

#include <cmath>

#include "core/config.hpp"
#include "core/log.hpp"
#include "core/strings.hpp"

namespace cumulus {

double memory::node_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return static_cast<double>(pages) * static_cast<double>(page);
}

void check_node_memory(const Config& cfg, const std::string& key, double count, double bytes_each, int nranks,
                       const std::string& noun, const std::string& what) {
  const double per_rank = count * bytes_each / nranks;
  const double node = memory::node_bytes();
  const std::string said = what.empty() ? "" : " (" + what + ")";
  if (count > 1e13 || (node > 0 && per_rank > node)) {
    // One rank per node of this size: the fewest ranks over which the job would fit.
    const double ranks = node > 0 ? std::ceil(count * bytes_each / node) : 0;
    cfg.fail(key, strprintf("%.3g %s need %.3g GB per rank on %d rank(s)%s, more than this node's %.3g GB%s", count,
                            noun.c_str(), per_rank / 1e9, nranks, said.c_str(), node / 1e9,
                            count > 1e13 || ranks > 1e9 ? ""
                                                        : strprintf("; it would fit on %.0f ranks or more, one per "
                                                                    "node like this one", ranks).c_str()));
  }
  log_info(strprintf("memory estimate: %.3g GB per rank on %d rank(s) for %.3g %s%s; this node has %.3g GB",
                     per_rank / 1e9, nranks, count, noun.c_str(), said.c_str(), node / 1e9));
}

void check_node_memory(const Config& cfg, const std::string& key, double cells, double bytes_per_cell, int nranks,
                       const std::string& what) {
  check_node_memory(cfg, key, cells, bytes_per_cell, nranks, "cells", what);
}

}  // namespace cumulus
