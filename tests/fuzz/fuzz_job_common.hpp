#pragma once
// Shared by fuzz_job and fuzz_set: what `cumulus check` does with a job text and --set overrides
// (app/main.cpp load_job), on one rank, without the CUDA device check.
#include <mpi.h>

#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "solvers/model.hpp"

namespace cumulus::fuzz {

inline int initialize(int* argc, char*** argv) {
  // The solvers' checks ask for the rank count. Never finalised: LeakSanitizer's check at exit
  // crashes after MPI_Finalize, and what Open MPI holds is suppressed by name (lsan.supp).
  MPI_Init(argc, argv);
  Log::instance().set_rank(1);  // quiet: check() prints its memory estimate on rank 0
  return 0;
}

inline void check_job(const std::string& text, const std::vector<std::string>& sets) {
  const auto& reg = SolverRegistry::all();
  try {
    Config cfg = parse_job_text(text, "fuzz.toml", sets, [&](const std::string& s, Schema& sc) { reg.build_schema(s, sc); });
    const SolverEntry& entry = *reg.find(cfg.get<std::string>("solver"));
    check_common_keys(cfg, entry);
    entry.check(cfg, 1);
  } catch (const InputError&) {
    // refused with a message (exit 2): the expected outcome for bad input
  }
}

}  // namespace cumulus::fuzz
