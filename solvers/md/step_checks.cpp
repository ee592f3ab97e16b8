#include "solvers/md/step_checks.hpp"

#include <new>

#include "core/error.hpp"
#include "core/memory.hpp"

namespace cumulus::md {

StepChecks::StepChecks(const Exec& ex) : ex_(&ex) {
  dev_ = static_cast<CheckSlots*>(memory::allocate(ex.backend(), sizeof(CheckSlots), "md step checks"));
  host_ = new (memory::allocate_pinned(sizeof(CheckSlots))) CheckSlots{};
  memory::copy(ex, ex.backend(), dev_, Backend::host, host_, sizeof(CheckSlots));
}

StepChecks::~StepChecks() {
  memory::release(ex_->backend(), dev_);
  memory::release_pinned(host_);
}

double* StepChecks::moved2() {
  moved_ = true;
  return &dev_->moved2;
}

std::int64_t* StepChecks::constraint(int solver, std::int64_t step) {
  if (solver < 0 || solver >= CheckSlots::kConstraintSolvers)
    throw Error("md: more constraint solvers than the step checks hold");
  constraint_step_[solver] = step;
  any_constraint_ = true;
  return &dev_->constraint[solver];
}

std::int64_t* StepChecks::outside(std::int64_t step) {
  outside_step_ = step;
  return &dev_->outside;
}

CheckResults StepChecks::read(const Comm& comm) {
  CheckResults r;
  if (pending()) memory::copy(*ex_, Backend::host, host_, ex_->backend(), dev_, sizeof(CheckSlots));
  // The entries not queued since the last read hold an older answer: "nothing" in their place.
  r.moved = moved_;
  if (moved_) r.value.moved2 = comm.max(host_->moved2);
  for (int s = 0; s < CheckSlots::kConstraintSolvers; ++s) {
    r.constraint_step[s] = constraint_step_[s];
    if (constraint_step_[s] >= 0) r.value.constraint[s] = comm.min(host_->constraint[s]);
  }
  r.outside_step = outside_step_;
  if (outside_step_ >= 0) r.value.outside = comm.sum(host_->outside);
  moved_ = any_constraint_ = false;
  for (auto& s : constraint_step_) s = -1;
  outside_step_ = -1;
  return r;
}

}  // namespace cumulus::md
