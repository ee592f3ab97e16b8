#pragma once
// The message of the InputError that f throws ("(no error)" when it throws none): the tests that
// check what a bad input is told share it.
#include <functional>
#include <string>

#include "core/error.hpp"

namespace cumulus::testing {

inline std::string input_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace cumulus::testing
