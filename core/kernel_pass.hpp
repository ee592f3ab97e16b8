#pragma once
// Kernel sources are compiled once per backend that is built: by g++ for the host, and in a CUDA
// build also by nvcc for the device (cumulus_kernel_passes in CMake). Each pass puts its functions
// in its own namespace, `host_pass` or `cuda_pass`, and a caller picks by the Exec at run time:
//
//   CUMULUS_KERNEL(exec, kernels, update)(exec, u, un, box, ...);
//
// Why not one nvcc compile for both: nvcc turns a __host__ __device__ lambda into a wrapper that
// host code calls through a function pointer, once per cell; the host loop then neither inlines
// nor vectorises (measured: the heat stencil 2.8x slower on the CPU in a CUDA build). The host
// pass compiles the same body as a plain lambda.
#ifndef CUMULUS_PASS
#define CUMULUS_PASS host_pass
#endif

#ifdef CUMULUS_HAVE_CUDA
#define CUMULUS_DECLARE_KERNEL_PASSES(ns, decls) \
  namespace ns::host_pass {                      \
  decls                                          \
  }                                              \
  namespace ns::cuda_pass {                      \
  decls                                          \
  }
// Variadic so that a template instantiation with several arguments can be named: fn<L, S>.
#define CUMULUS_KERNEL(exec, ns, ...) ((exec).is_cuda() ? &ns::cuda_pass::__VA_ARGS__ : &ns::host_pass::__VA_ARGS__)
#else
#define CUMULUS_DECLARE_KERNEL_PASSES(ns, decls) \
  namespace ns::host_pass {                      \
  decls                                          \
  }
#define CUMULUS_KERNEL(exec, ns, ...) (&ns::host_pass::__VA_ARGS__)
#endif
