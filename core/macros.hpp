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
