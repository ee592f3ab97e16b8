#pragma once
// The only place that asks which compiler is looking: kernel bodies are written once and compiled
// by nvcc (CUDA build) or g++ (host-only build).
#if defined(__CUDACC__)
#define CUMULUS_HD __host__ __device__
#define CUMULUS_COMPILING_CUDA 1
#else
#define CUMULUS_HD
#define CUMULUS_COMPILING_CUDA 0
#endif

// For the helpers of a kernel body (collision operators, storage conversions): inlined into the
// loop, or the host compiler calls them once per cell and cannot vectorise the loop.
#if defined(__CUDACC__)
#define CUMULUS_INLINE __forceinline__
#else
#define CUMULUS_INLINE inline __attribute__((always_inline))
#endif

// The same for a lambda inside such a helper (GCC's inliner otherwise gives up on some of a
// fully unrolled loop's lambdas in large translation units). nvcc inlines device lambdas itself.
#if defined(__CUDACC__)
#define CUMULUS_LAMBDA_INLINE
#else
#define CUMULUS_LAMBDA_INLINE __attribute__((always_inline))
#endif

// Around hand-written SIMD code: GCC 12's AVX2 and AVX-512 headers pass _mm*_undefined_*() as the
// unused source of their masked builtins and gathers, which -Wuninitialized and
// -Wmaybe-uninitialized report once those inline into a caller (a known header issue, not ours).
// Clang has no -Wmaybe-uninitialized.
#if defined(__clang__)
#define CUMULUS_SIMD_WARNINGS_OFF _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wuninitialized\"")
#else
#define CUMULUS_SIMD_WARNINGS_OFF                                                            \
  _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wuninitialized\"") \
      _Pragma("GCC diagnostic ignored \"-Wmaybe-uninitialized\"")
#endif
#define CUMULUS_SIMD_WARNINGS_ON _Pragma("GCC diagnostic pop")

// In a host thread's spin on a flag another thread sets (a few microseconds at most): the CPU's
// pause hint, which spares the other hardware thread of a core and the memory order machinery.
#if defined(__x86_64__) && !defined(__CUDACC__)
#define CUMULUS_SPIN_PAUSE() __builtin_ia32_pause()
#else
#define CUMULUS_SPIN_PAUSE() ((void)0)
#endif
