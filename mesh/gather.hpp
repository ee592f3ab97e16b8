#pragma once
// Collects a distributed field's interior on one rank (tests, small outputs, diagnostics).
#include <vector>

#include "core/comm.hpp"
#include "mesh/decomposition.hpp"
#include "mesh/field.hpp"

namespace cumulus {

// On `root`: all components of the global field, ordered (c, k, j, i), i fastest. Elsewhere: empty.
template <class T>
std::vector<T> gather_field(const Field<T>& f, const CartesianDecomposition& decomp, const Comm& comm,
                            const Exec& exec, int root = 0);

}  // namespace cumulus
