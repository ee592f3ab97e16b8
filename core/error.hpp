#pragma once
#include <stdexcept>
#include <string>

namespace cumulus {

// Exit statuses of the cumulus binary (DESIGN.md, "The run").
enum class ExitCode : int {
  done = 0,
  failure = 1,     // anything else
  bad_input = 2,   // job file, command line, checkpoint that does not fit
  blow_up = 3,     // a non-finite value in the solver state
  stopped = 75,    // signal or wall-time limit, after the exit writers ran (EX_TEMPFAIL: requeue)
};

// The project's one exception type: a user-facing message plus the exit status it maps to.
// Libraries throw it; only main() turns it into an exit status.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, ExitCode code = ExitCode::failure)
      : std::runtime_error(message), code_(code) {}
  ExitCode code() const { return code_; }

 private:
  ExitCode code_;
};

// Bad input from the user (job file, --set, command line): exit status 2.
class InputError : public Error {
 public:
  explicit InputError(const std::string& message) : Error(message, ExitCode::bad_input) {}
};

}  // namespace cumulus
