#pragma once
// The copy-bandwidth ceiling the benchmarks divide by, measured in the same process on the same
// backend: STREAM-style Copy b[i] = a[i] (McCalpin's "Copy", 16 bytes counted per element: one
// read, one write; write-allocate traffic is not counted, as in STREAM), on arrays of the shape
// the solver allocates. Contains kernel bodies: a source that includes it is compiled by nvcc in
// a CUDA build (cumulus_kernel_sources).
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "core/comm.hpp"
#include "core/error.hpp"
#include "core/strings.hpp"
#include "core/exec.hpp"
#include "core/memory.hpp"
#include "core/timers.hpp"
#include "mesh/field.hpp"

namespace cumulus::bench {

// ---- (a) copy ceiling ---------------------------------------------------------------------------
// Free functions: nvcc takes extended lambdas only in free or public functions (not in main).

// Copy with the solver's own launch path (for_each over a 3D box, View indexing): used on CUDA.
void copy_kernel(const Exec& ex, const View<double>& dst, const View<double>& src, const Box& box) {
  for_each(ex, "bench.copy", box, [=] CUMULUS_HD(int i, int j, int k) { dst(i, j, k) = src(i, j, k); });
}
void fill_kernel(const Exec& ex, const View<double>& v, const Box& box) {
  for_each(ex, "bench.fill", box, [=] CUMULUS_HD(int i, int j, int k) { v(i, j, k) = 1.0 + 1e-3 * (i + j + k); });
}

// STREAM Copy on the host: a flat OpenMP loop over the whole allocation, static schedule, the same
// threads that first-touched the pages (memory::allocate) touching them again.
void host_copy(double* __restrict dst, const double* __restrict src, std::int64_t n) {
#pragma omp parallel for simd schedule(static)
  for (std::int64_t i = 0; i < n; ++i) dst[i] = src[i];
}

// Two arrays of the shape of this rank's field allocation (interior + ghost layers): the same
// working set as the stencil's u and u_next, so both are measured in the same cache regime.
class CopyArrays {
 public:
  CopyArrays(const Exec& ex, const Comm& comm, const Box& alloc)
      : ex_(ex),
        comm_(comm),
        alloc_(alloc),
        a_("a", ex.backend(), alloc, {0, 0, 0}, 1),
        b_("b", ex.backend(), alloc, {0, 0, 0}, 1) {
    fill_kernel(ex, a_.view(), alloc);
    fill_kernel(ex, b_.view(), alloc);
    ex.synchronize();
    bytes_ = static_cast<double>(comm.sum(static_cast<std::int64_t>(2 * sizeof(double) * alloc.volume())));
  }
  // Bytes counted per copy, all ranks together: 8 read + 8 written per element.
  double bytes() const { return bytes_; }
  // One copy on every rank at once; the slowest rank's seconds. `how`: omp, kernel or memcpy.
  double run(const std::string& how) {
    const std::int64_t n = alloc_.volume();
    comm_.barrier();
    const double t0 = wall_seconds();
    if (how == "omp")
      host_copy(b_.buffer().data(), a_.buffer().data(), n);
    else if (how == "memcpy")
      memory::copy_async(ex_, ex_.backend(), b_.buffer().data(), ex_.backend(), a_.buffer().data(),
                         static_cast<std::size_t>(n) * sizeof(double));
    else
      copy_kernel(ex_, b_.view(), a_.view(), alloc_);
    ex_.synchronize();
    return comm_.max(wall_seconds() - t0);
  }
  // Reads one copied value back, so that no compiler can drop the copies.
  void verify() const {
    const std::vector<double> probe = b_.buffer().to_host(ex_);
    if (!(probe[probe.size() / 2] > 0)) throw Error("bench: the copy produced a wrong value");
  }

 private:
  Exec ex_;
  Comm comm_;
  Box alloc_;
  Field<double> a_, b_;
  double bytes_ = 0;
};

// ---- (b) what every benchmark's command line and report use ------------------------------------

[[noreturn]] inline void usage_error(const std::string& msg) { throw InputError(msg + " (see --help)"); }

// An integer option's value, at least `lo` (exit 2 naming the option otherwise).
inline long parse_long(const std::string& opt, const std::string& s, long lo) {
  char* end = nullptr;
  const long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || v < lo)
    usage_error(strprintf("%s %s: expected an integer >= %ld", opt.c_str(), s.c_str(), lo));
  return v;
}

// A value with an SI prefix: si(2.5e9, "B/s") = "2.5 GB/s".
inline std::string si(double v, const char* unit) {
  const char* prefix[] = {"", "k", "M", "G", "T", "P"};
  int p = 0;
  while (std::fabs(v) >= 1000 && p < 5) {
    v /= 1000;
    ++p;
  }
  return strprintf("%.3g %s%s", v, prefix[p], unit);
}

// A benchmark's main(): MPI set up around `body`, errors printed once with the program's name and
// turned into the exit status (2 for bad options).
inline int run_benchmark(int argc, char** argv, const char* name, int (*body)(int, char**)) {
  MpiSession mpi(&argc, &argv);
  int code = 0;
  try {
    code = body(argc, argv);
  } catch (const Error& e) {
    if (Comm::world().is_root()) std::fprintf(stderr, "%s: %s\n", name, e.what());
    code = static_cast<int>(e.code());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: unexpected: %s\n", name, e.what());
    code = 1;
  }
  return code;
}

}  // namespace cumulus::bench
