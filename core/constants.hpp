#pragma once
// Mathematical constants, defined once for every solver, the meshes and the tests (each file had
// its own copy of pi before). Host and device code may both use them: they are constexpr.

namespace cumulus {

// pi rounded to the nearest double (0x1.921fb54442d18p+1).
inline constexpr double kPi = 3.14159265358979323846;

}  // namespace cumulus
