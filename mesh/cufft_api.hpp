#pragma once
// cuFFT, loaded when it is first needed rather than linked (CUDA builds only). libcufft is about
// 280 MB, and a link dependency would make every CUDA-built program (the solvers that never
// transform included) refuse to start on a machine that has the driver but not the toolkit's
// libraries, which is what a lent GPU machine has: the programs link the static CUDA runtime for
// that reason. mesh/fft.cpp uses the batched 1D plans; the FFT benchmark uses a 3D plan as its peer.
#include <cufft.h>

#include <string>

namespace cumulus {

struct CufftApi {
  decltype(&cufftCreate) create = nullptr;
  decltype(&cufftSetAutoAllocation) set_auto_allocation = nullptr;
  decltype(&cufftMakePlanMany) make_plan_many = nullptr;
  decltype(&cufftMakePlan3d) make_plan_3d = nullptr;
  decltype(&cufftSetStream) set_stream = nullptr;
  decltype(&cufftSetWorkArea) set_work_area = nullptr;
  decltype(&cufftDestroy) destroy = nullptr;
  decltype(&cufftExecZ2Z) z2z = nullptr;
  decltype(&cufftExecD2Z) d2z = nullptr;
  decltype(&cufftExecZ2D) z2d = nullptr;
  decltype(&cufftExecC2C) c2c = nullptr;
  decltype(&cufftExecR2C) r2c = nullptr;
  decltype(&cufftExecC2R) c2r = nullptr;
  std::string error;  // empty when the library and every function were found
};

// The library, opened once (libcufft.so.<major> through the loader's search path, then the
// toolkit's library folder the build found); `error` says why not where it cannot be.
const CufftApi& cufft();

// Throws Error naming `what` and the result code unless r is CUFFT_SUCCESS.
void cufft_check(cufftResult r, const char* what);

}  // namespace cumulus
