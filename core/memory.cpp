// The node-memory check that every grid solver's check() makes (declared in core/memory.hpp; the
// allocators themselves are in exec.cpp, beside the backends).
#include "core/memory.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "core/config.hpp"
#include "core/exec.hpp"
#include "core/log.hpp"
#include "core/strings.hpp"

namespace cumulus {

double memory::node_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  double bytes = static_cast<double>(pages) * static_cast<double>(page);
  // A batch job or a container sees less than the machine: Slurm and container runtimes put it in
  // a control group with a memory limit (v2: memory.max, "max" when none; v1: a huge number when
  // none). The smaller of the two is what this process can have.
  for (const char* path : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream in(path);
    double limit = 0;
    if (in >> limit && limit > 0 && (bytes <= 0 || limit < bytes)) bytes = limit;
  }
  return bytes;
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
  // On CUDA the same arrays live in device memory: a job that the backend would put on a GPU must
  // fit the smallest device visible (each rank its own device; ranks sharing one need more).
  std::string device_note;
  const std::string backend = cfg.has("run.backend") ? cfg.get<std::string>("run.backend") : "host";
  const int devices = backend != "host" && cuda_built() ? cuda_device_count() : 0;
  if (devices > 0) {
    double smallest = cuda_device_bytes(0);
    for (int d = 1; d < devices; ++d) smallest = std::min(smallest, cuda_device_bytes(d));
    if (smallest > 0 && per_rank > smallest)
      cfg.fail(key, strprintf("%.3g %s need %.3g GB per rank on %d rank(s)%s, more than the %.3g GB of a CUDA device "
                              "here; it would fit on %.0f ranks or more, one per device (or run.backend = \"host\")",
                              count, noun.c_str(), per_rank / 1e9, nranks, said.c_str(), smallest / 1e9,
                              std::ceil(count * bytes_each / smallest)));
    if (smallest > 0) device_note = strprintf(", its smallest CUDA device %.3g GB", smallest / 1e9);
  }
  log_info(strprintf("memory estimate: %.3g GB per rank on %d rank(s) for %.3g %s%s; this node has %.3g GB%s",
                     per_rank / 1e9, nranks, count, noun.c_str(), said.c_str(), node / 1e9, device_note.c_str()));
}

void check_node_memory(const Config& cfg, const std::string& key, double cells, double bytes_per_cell, int nranks,
                       const std::string& what) {
  check_node_memory(cfg, key, cells, bytes_per_cell, nranks, "cells", what);
}

}  // namespace cumulus
