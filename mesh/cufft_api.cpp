// cuFFT opened at run time: see cufft_api.hpp for why it is not linked.
#include "mesh/cufft_api.hpp"

#include <dlfcn.h>

#include <type_traits>

#include "core/error.hpp"
#include "core/strings.hpp"

namespace cumulus {

void cufft_check(cufftResult r, const char* what) {
  if (r != CUFFT_SUCCESS) throw Error(strprintf("cuFFT: %s failed (cufftResult %d)", what, static_cast<int>(r)));
}

const CufftApi& cufft() {
  static const CufftApi api = [] {
    CufftApi a;
    const std::string name = "libcufft.so." + std::to_string(CUFFT_VER_MAJOR);
    void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
#ifdef CUMULUS_CUFFT_DIR
    if (!h) h = dlopen((std::string(CUMULUS_CUFFT_DIR) + "/" + name).c_str(), RTLD_NOW | RTLD_LOCAL);
#endif
    if (!h) {
      const char* why = dlerror();
      a.error = "cannot load " + name + " (cuFFT, for the FFT on the GPU): " + (why ? why : "not found");
      return a;
    }
    auto load = [&](auto& f, const char* symbol) {
      f = reinterpret_cast<std::remove_reference_t<decltype(f)>>(dlsym(h, symbol));
      if (!f && a.error.empty()) a.error = name + " has no " + symbol;
    };
    load(a.create, "cufftCreate");
    load(a.set_auto_allocation, "cufftSetAutoAllocation");
    load(a.make_plan_many, "cufftMakePlanMany");
    load(a.make_plan_3d, "cufftMakePlan3d");
    load(a.set_stream, "cufftSetStream");
    load(a.set_work_area, "cufftSetWorkArea");
    load(a.destroy, "cufftDestroy");
    load(a.z2z, "cufftExecZ2Z");
    load(a.d2z, "cufftExecD2Z");
    load(a.z2d, "cufftExecZ2D");
    load(a.c2c, "cufftExecC2C");
    load(a.r2c, "cufftExecR2C");
    load(a.c2r, "cufftExecC2R");
    return a;
  }();
  return api;
}

}  // namespace cumulus
