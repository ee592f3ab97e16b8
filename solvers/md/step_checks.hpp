// The checks of a molecular dynamics step that the host needs answered, read together: on a GPU
// each answer read on its own is a wait for the device, and a step had one for the list check, one
// for each constraint solver and one for PME's atoms outside their block. Here the kernels store
// their answers in one small block of device memory (reduce_into) and the host reads the block once
// a step, with the list check, which must be answered before the step can go on. The other checks
// are then a step late: a failure is reported at the next read, naming the step it happened at (kept
// when the check was queued). md.cpp reads the block also before anything is written (checkpoints,
// output, diagnostics) and at the end of a run, so that nothing of a failed step is ever written.
#pragma once

#include <cstdint>
#include <limits>

#include "core/comm.hpp"
#include "core/exec.hpp"

namespace cumulus::md {

// The block, in the run's backend memory. Each entry is stored (not combined) by one reduction.
struct CheckSlots {
  static constexpr int kConstraintSolvers = 4;
  static constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::max();
  double moved2 = 0;  // the largest squared displacement since the list's build (max over ranks)
  std::int64_t constraint[kConstraintSolvers] = {kNone, kNone, kNone, kNone};  // the smallest failing id (min)
  std::int64_t outside = 0;  // PME: atoms farther outside their rank's block than the ghosts allow (sum)
};

// What a read found, over all ranks: each check queued since the last read, with the step it was
// queued at (-1 and the entry's "nothing" when it was not queued).
struct CheckResults {
  CheckSlots value;
  std::int64_t constraint_step[CheckSlots::kConstraintSolvers] = {-1, -1, -1, -1};
  std::int64_t outside_step = -1;
  bool moved = false;  // value.moved2 was queued
};

class StepChecks {
 public:
  explicit StepChecks(const Exec& ex);
  ~StepChecks();
  StepChecks(const StepChecks&) = delete;
  StepChecks& operator=(const StepChecks&) = delete;

  // Where a check stores its answer (ex's memory), marking it queued at `step`.
  double* moved2();
  std::int64_t* constraint(int solver, std::int64_t step);
  std::int64_t* outside(std::int64_t step);
  bool pending() const { return moved_ || outside_step_ >= 0 || any_constraint_; }

  // Reads the block (one wait on a GPU) and combines it over the ranks (collective: every rank
  // queues the same checks). The queued marks are cleared.
  CheckResults read(const Comm& comm);

 private:
  const Exec* ex_;
  CheckSlots* dev_ = nullptr;   // ex's memory
  CheckSlots* host_ = nullptr;  // page-locked where there is a device
  bool moved_ = false, any_constraint_ = false;
  std::int64_t constraint_step_[CheckSlots::kConstraintSolvers] = {-1, -1, -1, -1};
  std::int64_t outside_step_ = -1;
};

}  // namespace cumulus::md
