// The distributed FFT (mesh/fft.hpp): a real-to-complex forward and complex-to-real backward
// transform of N^3, timed beside a peer in the same process.
//
// Host (default sizes 128 and 256, double): beside FFTW's own MPI transform (slabs, the same
// threads; built when CMake finds libfftw3-mpi-dev: bench/setup-fft-peer) and a single-rank FFTW 3D
// plan; and the split of cumulus' time into FFTW's line transforms and the moving of data (gathers,
// scatters, exchanges), with that movement's effective bandwidth as a ratio to a memory copy
// measured in the same run.
//
//   OMP_NUM_THREADS=2 mpirun --bind-to none -np 1 build/host/cumulus_bench_fft [--sizes 128,256] [--reps 5] [--rounds 3]
//   OMP_NUM_THREADS=1 mpirun -np 2 build/host/cumulus_bench_fft
//
// GPU (a CUDA build; default size 512, double and single): beside one cuFFT 3D plan of the same
// grid (cufftMakePlan3d, R2C/C2R or D2Z/Z2D, out of place) on the same stream, on rank 0's GPU.
//
//   build/cumulus_bench_fft --backend cuda [--sizes 512] [--precision double,single]
//
// Times are the best round (of --rounds) of the mean over --reps forward + backward pairs, the
// slowest rank's. Ratios are speed ratios (the other code's time / cumulus' time): above 1, cumulus
// is faster.
#include <fftw3.h>
#ifdef CUMULUS_HAVE_FFTW_MPI
#include <fftw3-mpi.h>
#endif
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/comm.hpp"
#include "core/error.hpp"
#include "core/strings.hpp"
#include "core/timers.hpp"
#include "mesh/fft.hpp"

#ifdef CUMULUS_HAVE_CUDA
#include "mesh/cufft_api.hpp"
#endif

using namespace cumulus;

namespace {

struct Options {
  std::vector<int> sizes;  // default: 128,256 on the host, 512 on a GPU
  std::string backend = "host";
  std::vector<std::string> precisions{"double"};
  bool precision_given = false;
  int reps = 5, rounds = 3;
};

std::vector<std::string> split(const std::string& v) {
  std::vector<std::string> out;
  for (std::size_t p = 0; p < v.size();) {
    const std::size_t q = v.find(',', p);
    out.push_back(v.substr(p, q - p));
    p = q == std::string::npos ? v.size() : q + 1;
  }
  return out;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    if (a + 1 >= argc) throw InputError("" + arg + " needs a value");
    const std::string v = argv[++a];
    if (arg == "--sizes") {
      o.sizes.clear();
      for (const std::string& n : split(v)) o.sizes.push_back(std::stoi(n));
    } else if (arg == "--backend") {
      o.backend = v;
    } else if (arg == "--precision") {
      o.precisions = split(v);
      o.precision_given = true;
      for (const std::string& p : o.precisions)
        if (p != "double" && p != "single") throw InputError("--precision takes double and/or single, not " + p);
    } else if (arg == "--reps") {
      o.reps = std::stoi(v);
    } else if (arg == "--rounds") {
      o.rounds = std::stoi(v);
    } else {
      throw InputError("unknown option " + arg + " (--sizes, --backend, --precision, --reps, --rounds)");
    }
  }
  for (int n : o.sizes)
    if (n < 1) throw InputError("--sizes takes positive grid sizes, not " + std::to_string(n));
  if (o.reps < 1 || o.rounds < 1) throw InputError("--reps and --rounds must be at least 1");
  return o;
}

double field_value(int i, int j, int k) {
  return std::sin(0.1 * i + 0.2 * j) * std::cos(0.3 * k) + 0.01 * ((i * 7 + j * 3 + k) % 11);
}

// Best of `rounds` of the mean seconds of `reps` calls of f, the slowest rank's.
template <class F>
double best_time(const Comm& comm, const Options& o, F f) {
  double best = 1e300;
  for (int r = 0; r < o.rounds; ++r) {
    comm.barrier();
    const double t0 = wall_seconds();
    for (int n = 0; n < o.reps; ++n) f();
    best = std::min(best, comm.max((wall_seconds() - t0) / o.reps));
  }
  return best;
}

// The memory-copy ceiling: every rank copies `n` doubles at once (OpenMP, static schedule), 16
// bytes counted per element as STREAM's Copy. All ranks' bytes over the slowest rank's time.
double copy_bandwidth(const Comm& comm, std::int64_t n, int rounds) {
  std::vector<double> a(static_cast<std::size_t>(n), 1.0), b(static_cast<std::size_t>(n), 0.0);
  double best = 1e300;
  for (int r = 0; r < 3 * rounds; ++r) {
    comm.barrier();
    const double t0 = wall_seconds();
    double* __restrict dst = b.data();
    const double* __restrict src = a.data();
#pragma omp parallel for simd schedule(static)
    for (std::int64_t i = 0; i < n; ++i) dst[i] = src[i];
    best = std::min(best, comm.max(wall_seconds() - t0));
  }
  return static_cast<double>(comm.sum(16 * n)) / best;
}

// One cumulus plan's best forward + backward pair, and of it the time in FFTW's execute calls and
// in the transposes' exchanges (the slowest rank's, in the best round).
struct PlanTiming {
  double best = 1e300, compute = 0, exchanges = 0;
};

PlanTiming time_plan(FftPlan<double>& plan, const Field<double>& u, Field<double>& v, Buffer<FftComplex<double>>& spec,
                     const Comm& comm, const Options& o) {
  plan.forward(u.view(), spec);  // warm-up: first touch of every buffer
  plan.backward(spec, v.view());
  PlanTiming pt;
  for (int r = 0; r < o.rounds; ++r) {
    comm.barrier();
    const double t0 = wall_seconds(), tc0 = plan.seconds_line_compute(), tx0 = plan.seconds_transposes();
    for (int n = 0; n < o.reps; ++n) {
      plan.forward(u.view(), spec);
      plan.backward(spec, v.view());
    }
    const double t = comm.max((wall_seconds() - t0) / o.reps);
    const double tc = comm.max((plan.seconds_line_compute() - tc0) / o.reps);
    const double tx = comm.max((plan.seconds_transposes() - tx0) / o.reps);
    if (t < pt.best) pt = {t, tc, tx};
  }
  return pt;
}

void run_size(int N, const Comm& comm, const Options& o) {
  const int P = comm.size(), threads = omp_get_max_threads();
  const Exec ex = Exec::host();
  // z-slab bricks, the layout FFTW-MPI takes: both codes start from the same split.
  const CartesianDecomposition d({N, N, N}, {true, true, true}, P, 3, 1, {1, 1, P});
  fftw_forget_wisdom();  // the peer's FFTW_MEASURE wisdom of an earlier size must not steer our plans
  FftPlan<double> plan(d, comm, ex, FftKind::real_to_complex);
  const Box box = d.box_of(comm.rank());
  Field<double> u("u", Backend::host, box, {0, 0, 0}, 1), v("v", Backend::host, box, {0, 0, 0}, 1);
  const View<double> uv = u.view();
  for (int k = box.lo[2]; k < box.hi[2]; ++k)
    for (int j = box.lo[1]; j < box.hi[1]; ++j)
      for (int i = box.lo[0]; i < box.hi[0]; ++i) uv(i, j, k) = field_value(i, j, k);
  auto spec = plan.make_spectral_buffer();
  const PlanTiming pt = time_plan(plan, u, v, spec, comm, o);
  const double best = pt.best, compute = pt.compute, exchanges = pt.exchanges;
  // The same transform with the transpose as MPI messages (force_staging), the path between nodes:
  // what the shared-memory transpose gains, measured beside it.
  double messages = 0;
  if (plan.shared_memory_transpose()) {
    FftPlan<double> mp(d, comm, ex, FftKind::real_to_complex, {}, true);
    auto mspec = mp.make_spectral_buffer();
    messages = time_plan(mp, u, v, mspec, comm, o).best;
  }
  plan.forward(u.view(), spec);  // the spectrum for the checksum below
  // The moving of data: all of a transform but FFTW's execute calls (the gathers into and
  // scatters out of each batch, the exchanges with MPI's own copies, the unpacking, any copy to or
  // from the bricks). Its effective bandwidth counts each transpose's data once, as STREAM counts a
  // copy (read once, written once), forward and backward: 1.0 would mean all that movement costs
  // one plain copy of the data per transpose, the least a transpose-based transform can move
  // through memory apart from its line transforms (more than 1.0: some of it hidden behind them).
  const double movement = std::max(best - compute, 1e-12);
  const double moved = static_cast<double>(comm.sum(plan.bytes_transposed_per_transform()));
  const double movement_bw = 2.0 * 2.0 * moved / movement;
  const double copy_bw =
      copy_bandwidth(comm, std::max<std::int64_t>(plan.bytes_transposed_per_transform() / 8, 1 << 20), o.rounds);
  if (comm.is_root()) {
    std::printf("\n%d^3 r2c forward + c2r backward, double, %d rank(s) x %d thread(s); bricks: z-slabs\n", N, P,
                threads);
    std::printf("  %s\n", plan.describe().c_str());
    std::printf("  cumulus          %9.2f ms\n", best * 1e3);
    std::printf("  1D FFTs (FFTW)   %9.2f ms = %.0f %% of the time\n", compute * 1e3, 100 * compute / best);
    std::printf(
        "  data movement    %9.2f ms = %.0f %% of the time; %.2f GB/s effective = %.2f of a memory copy (%.2f GB/s, "
        "same run)\n",
        movement * 1e3, 100 * movement / best, movement_bw / 1e9, movement_bw / copy_bw, copy_bw / 1e9);
    std::printf("    of which exchanges %6.2f ms (%s)\n", exchanges * 1e3,
                plan.shared_memory_transpose()
                    ? "the barriers of the shared-memory transpose, waiting for the slowest rank"
                    : "MPI_Alltoallv with MPI's copies, the unpacking, copies between bricks and pencils");
    if (messages > 0)
      std::printf("  cumulus, messages %8.2f ms   the transpose as MPI_Alltoallv messages (between nodes): shared "
                  "memory is %.2fx faster\n",
                  messages * 1e3, messages / best);
  }

  // Checksum: sum of |u_hat|^2 over the stored half-spectrum (compared with FFTW-MPI's below).
  const auto all = plan.gather_spectrum(spec);
  double ours_sum = 0;
  for (const auto& c : all) ours_sum += c.re * c.re + c.im * c.im;

#ifdef CUMULUS_HAVE_FFTW_MPI
  {
    // FFTW's MPI slab transform (the first dimension of its row-major N x N x N is our z), with the
    // spectrum left transposed (FFTW_MPI_TRANSPOSED_OUT / _IN), as ours stays in pencils: one global
    // transpose each way, as in a cumulus slab. FFTW_MEASURE: the peer at its best (its planner
    // times candidates, so two runs may pick different algorithms and bits). First FFTW_ESTIMATE,
    // the deterministic planner cumulus's line plans use (before MEASURE's wisdom exists, which
    // ESTIMATE would otherwise take up).
    for (const unsigned flags : {FFTW_ESTIMATE, FFTW_MEASURE}) {
      fftw_plan_with_nthreads(threads);
      ptrdiff_t ln0, l0s, ln1, l1s;
      const ptrdiff_t alloc = fftw_mpi_local_size_3d_transposed(N, N, N / 2 + 1, comm.raw(), &ln0, &l0s, &ln1, &l1s);
      double* in = fftw_alloc_real(2 * alloc);
      double* back = fftw_alloc_real(2 * alloc);
      fftw_complex* out = fftw_alloc_complex(alloc);
      const double tp0 = wall_seconds();
      fftw_plan pf = fftw_mpi_plan_dft_r2c_3d(N, N, N, in, out, comm.raw(), flags | FFTW_MPI_TRANSPOSED_OUT);
      fftw_plan pb = fftw_mpi_plan_dft_c2r_3d(N, N, N, out, back, comm.raw(), flags | FFTW_MPI_TRANSPOSED_IN);
      const double planning = comm.max(wall_seconds() - tp0);
      const std::int64_t row = 2 * (N / 2 + 1);  // padded real rows
      for (ptrdiff_t k = 0; k < ln0; ++k)
        for (int j = 0; j < N; ++j)
          for (int i = 0; i < row; ++i)
            in[(k * N + j) * row + i] = i < N ? field_value(i, j, static_cast<int>(l0s + k)) : 0.0;
      fftw_execute(pf);
      double peer_sum = 0;
      for (ptrdiff_t m = 0; m < ln1 * N * (N / 2 + 1); ++m) peer_sum += out[m][0] * out[m][0] + out[m][1] * out[m][1];
      peer_sum = comm.sum(peer_sum);
      // The r2c input is kept by FFTW out of place; c2r destroys `out`, which the next forward rewrites.
      const double t = best_time(comm, o, [&] {
        fftw_execute(pf);
        fftw_execute(pb);
      });
      if (comm.is_root())
        std::printf(
            "  FFTW-MPI slabs   %9.2f ms   speed ratio cumulus / FFTW-MPI = %.2f%s   (%s, planning %.1f s; "
            "checksum agreement %.1e)\n",
            t * 1e3, t / best, messages > 0 ? strprintf(" (with messages %.2f)", t / messages).c_str() : "",
            flags == FFTW_MEASURE ? "FFTW_MEASURE" : "FFTW_ESTIMATE", planning,
            std::abs(ours_sum - peer_sum) / peer_sum);
      fftw_destroy_plan(pf);
      fftw_destroy_plan(pb);
      fftw_free(in);
      fftw_free(back);
      fftw_free(out);
      fftw_plan_with_nthreads(1);
    }
  }
#else
  (void)ours_sum;
  if (comm.is_root()) std::printf("  FFTW-MPI: not built (bench/setup-fft-peer, then re-run cmake)\n");
#endif

  {
    // A single-rank FFTW 3D plan of the whole grid on rank 0 with this rank's threads, the others
    // waiting: what one process would get without any decomposition.
    double t = 0;
    if (comm.is_root()) {
      fftw_plan_with_nthreads(threads);
      const std::size_t cells = static_cast<std::size_t>(N) * N * N;
      double* in = fftw_alloc_real(cells);
      double* back = fftw_alloc_real(cells);
      fftw_complex* out = fftw_alloc_complex(static_cast<std::size_t>(N) * N * (N / 2 + 1));
      fftw_plan pf = fftw_plan_dft_r2c_3d(N, N, N, in, out, FFTW_MEASURE);
      fftw_plan pb = fftw_plan_dft_c2r_3d(N, N, N, out, back, FFTW_MEASURE);
      for (std::size_t c = 0; c < cells; ++c)
        in[c] = field_value(static_cast<int>(c % N), static_cast<int>(c / N % N), static_cast<int>(c / N / N));
      t = best_time(Comm::self(), o, [&] {
        fftw_execute(pf);
        fftw_execute(pb);
      });
      fftw_destroy_plan(pf);
      fftw_destroy_plan(pb);
      fftw_free(in);
      fftw_free(back);
      fftw_free(out);
      fftw_plan_with_nthreads(1);
      std::printf("  FFTW 3D, 1 rank  %9.2f ms   speed ratio cumulus / FFTW 3D = %.2f   (%d thread(s))\n", t * 1e3,
                  t / best, threads);
    }
    comm.barrier();
  }
}

#ifdef CUMULUS_HAVE_CUDA
// A field without trigonometry: the 512^3 set-up runs serially on the host, twice per precision.
double cheap_value(int i, int j, int k) {
  return 0.001 * static_cast<double>((i * 7 + j * 13 + k * 29) % 101) + 0.25 * static_cast<double>(((i ^ j) + k) % 3);
}

// One precision on the GPU: cumulus' plan over the ranks (one GPU each) against one cuFFT 3D plan
// of the whole grid on rank 0's GPU, on the same stream.
template <class T>
void run_gpu(int N, const Comm& comm, const Options& o, const Exec& ex) {
  using C = FftComplex<T>;
  const int P = comm.size();
  const CartesianDecomposition d({N, N, N}, {true, true, true}, P, 3, 1, {1, 1, P});
  FftPlan<T> plan(d, comm, ex, FftKind::real_to_complex);
  const Box box = d.box_of(comm.rank());
  Field<T> u("u", Backend::cuda, box, {0, 0, 0}, 1), v("v", Backend::cuda, box, {0, 0, 0}, 1);
  std::vector<T> host(static_cast<std::size_t>(box.volume()));
  std::size_t c = 0;
  for (int k = box.lo[2]; k < box.hi[2]; ++k)
    for (int j = box.lo[1]; j < box.hi[1]; ++j)
      for (int i = box.lo[0]; i < box.hi[0]; ++i) host[c++] = static_cast<T>(cheap_value(i, j, k));
  u.interior_from_host(ex, host);
  auto spec = plan.make_spectral_buffer();
  plan.forward(u.view(), spec);  // warm-up
  plan.backward(spec, v.view());
  ex.synchronize();
  const double ours = best_time(comm, o, [&] {
    plan.forward(u.view(), spec);
    plan.backward(spec, v.view());
    ex.synchronize();
  });
  double ours_sum = 0;
  for (const C& z : plan.gather_spectrum(spec))
    ours_sum += static_cast<double>(z.re) * z.re + static_cast<double>(z.im) * z.im;
  const char* prec = sizeof(T) == 8 ? "double" : "single";
  if (comm.is_root()) {
    std::printf("\n%d^3 r2c forward + c2r backward, %s, %d rank(s) on the GPU\n", N, prec, P);
    std::printf("  %s\n", plan.describe().c_str());
    std::printf("  cumulus          %9.3f ms\n", ours * 1e3);
    // The peer: one 3D plan of the whole grid (rows of N reals, x fastest, as our bricks).
    const CufftApi& api = cufft();
    if (!api.error.empty()) throw Error(api.error);
    const std::size_t cells = static_cast<std::size_t>(N) * N * N, half = static_cast<std::size_t>(N) * N * (N / 2 + 1);
    Buffer<T> in(Backend::cuda, cells, "bench.cufft_in"), back(Backend::cuda, cells, "bench.cufft_back");
    Buffer<C> out(Backend::cuda, half, "bench.cufft_out");
    std::vector<T> all(cells);
    for (std::size_t q = 0; q < cells; ++q)
      all[q] = static_cast<T>(
          cheap_value(static_cast<int>(q % N), static_cast<int>(q / N % N), static_cast<int>(q / N / N)));
    in.from_host(ex, all);
    constexpr bool dbl = sizeof(T) == 8;
    cufftHandle fwd = 0, bwd = 0;
    std::size_t ws = 0;
    cufft_check(api.create(&fwd), "cufftCreate");
    cufft_check(api.create(&bwd), "cufftCreate");
    cufft_check(api.make_plan_3d(fwd, N, N, N, dbl ? CUFFT_D2Z : CUFFT_R2C, &ws), "cufftMakePlan3d");
    cufft_check(api.make_plan_3d(bwd, N, N, N, dbl ? CUFFT_Z2D : CUFFT_C2R, &ws), "cufftMakePlan3d");
    cufft_check(api.set_stream(fwd, ex.stream()), "cufftSetStream");
    cufft_check(api.set_stream(bwd, ex.stream()), "cufftSetStream");
    auto pair = [&] {
      if constexpr (dbl) {
        cufft_check(api.d2z(fwd, reinterpret_cast<cufftDoubleReal*>(in.data()),
                            reinterpret_cast<cufftDoubleComplex*>(out.data())),
                    "cufftExecD2Z");
        cufft_check(api.z2d(bwd, reinterpret_cast<cufftDoubleComplex*>(out.data()),
                            reinterpret_cast<cufftDoubleReal*>(back.data())),
                    "cufftExecZ2D");
      } else {
        cufft_check(api.r2c(fwd, reinterpret_cast<cufftReal*>(in.data()), reinterpret_cast<cufftComplex*>(out.data())),
                    "cufftExecR2C");
        cufft_check(
            api.c2r(bwd, reinterpret_cast<cufftComplex*>(out.data()), reinterpret_cast<cufftReal*>(back.data())),
            "cufftExecC2R");
      }
      ex.synchronize();
    };
    pair();
    double peer_sum = 0;
    {
      // c2r destroyed `out`: the spectrum again, for the checksum
      if constexpr (dbl)
        cufft_check(api.d2z(fwd, reinterpret_cast<cufftDoubleReal*>(in.data()),
                            reinterpret_cast<cufftDoubleComplex*>(out.data())),
                    "cufftExecD2Z");
      else
        cufft_check(api.r2c(fwd, reinterpret_cast<cufftReal*>(in.data()), reinterpret_cast<cufftComplex*>(out.data())),
                    "cufftExecR2C");
      for (const C& z : out.to_host(ex))
        peer_sum += static_cast<double>(z.re) * z.re + static_cast<double>(z.im) * z.im;
    }
    const double peer = best_time(Comm::self(), o, pair);
    api.destroy(fwd);
    api.destroy(bwd);
    std::printf("  cuFFT 3D plan    %9.3f ms   speed ratio cumulus / cuFFT 3D = %.2f   (checksum agreement %.1e)\n",
                peer * 1e3, peer / ours, std::abs(ours_sum - peer_sum) / peer_sum);
    std::printf("FIGURE: fft.gpu.%d.%s.ms %.3f\nFIGURE: fft.gpu.%d.%s.ratio_cufft3d %.3f\n", N, prec, ours * 1e3, N,
                prec, peer / ours);
  }
  comm.barrier();
}
#endif

}  // namespace

int main(int argc, char** argv) {
  MpiSession mpi(&argc, &argv);
  try {
    std::setvbuf(stdout, nullptr, _IOLBF, 0);  // lines appear as measured, also into a file
    const Options o = parse(argc, argv);
    fftw_init_threads();
#ifdef CUMULUS_HAVE_FFTW_MPI
    fftw_mpi_init();
#endif
    fftw_plan_with_nthreads(1);  // FftPlan's 1D plans are single-threaded (threads run whole batches)
    const Comm comm = Comm::world();
    if (o.backend == "host") {
      if (o.precision_given && (o.precisions.size() != 1 || o.precisions[0] != "double"))
        throw InputError("the host comparison is in double precision only (FFTW-MPI's peer plan is double)");
      for (int n : o.sizes.empty() ? std::vector<int>{128, 256} : o.sizes) run_size(n, comm, o);
    } else if (o.backend == "cuda") {
#ifdef CUMULUS_HAVE_CUDA
      std::string why;
      const Exec ex = select_backend("cuda", comm.local_rank(), &why);
      if (!FftPlan<double>::cuda_fft_available(&why)) throw Error(why);
      const std::vector<std::string> precs =
          o.precision_given ? o.precisions : std::vector<std::string>{"double", "single"};
      for (int n : o.sizes.empty() ? std::vector<int>{512} : o.sizes)
        for (const std::string& p : precs) {
          if (p == "double")
            run_gpu<double>(n, comm, o, ex);
          else
            run_gpu<float>(n, comm, o, ex);
        }
#else
      throw InputError("--backend cuda needs a CUDA build (scripts/setup build/cuda -DCUMULUS_CUDA=ON)");
#endif
    } else {
      throw InputError("--backend is host or cuda, not " + o.backend);
    }
#ifdef CUMULUS_HAVE_FFTW_MPI
    fftw_mpi_cleanup();
#endif
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "fft_bench: %s\n", e.what());
    return static_cast<int>(e.code());
  } catch (const std::exception& e) {  // std::stoi on a word that is not a number
    std::fprintf(stderr, "fft_bench: bad argument (%s): --sizes, --reps and --rounds take numbers\n", e.what());
    return 2;
  }
}
