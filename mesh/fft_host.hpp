#pragma once
// Internal to mesh/fft_*.cpp: the OpenMP thread count and index the host passes size their
// per-thread scratch by (1 and 0 without OpenMP).
#ifdef _OPENMP
#include <omp.h>
#endif

namespace cumulus::fft_host {

inline int max_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

inline int this_thread() {
#ifdef _OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}

}  // namespace cumulus::fft_host
