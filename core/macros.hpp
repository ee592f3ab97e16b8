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
