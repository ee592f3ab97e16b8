// The distributed FFT (mesh/fft.hpp): a real-to-complex forward and complex-to-real backward
// transform of N^3 (default 128 and 256), timed beside FFTW's own MPI transform (slabs, the same
// threads; built when CMake finds libfftw3-mpi-dev: bench/setup-fft-peer) and a single-rank FFTW 3D
// plan, all in the same process; and the transposes' share of the time with their effective
// bandwidth as a ratio to a memory copy measured in the same run. Host backend.
//
//   OMP_NUM_THREADS=2 mpirun -np 1 build/host/cumulus_bench_fft [--sizes 128,256] [--reps 5] [--rounds 3]
//   OMP_NUM_THREADS=1 mpirun -np 2 build/host/cumulus_bench_fft
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
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/comm.hpp"
#include "core/error.hpp"
#include "core/timers.hpp"
#include "mesh/fft.hpp"

using namespace cumulus;

namespace {

struct Options {
  std::vector<int> sizes{128, 256};
  int reps = 5, rounds = 3;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    if (a + 1 >= argc) throw InputError("fft_bench: " + arg + " needs a value");
    const std::string v = argv[++a];
    if (arg == "--sizes") {
      o.sizes.clear();
      for (std::size_t p = 0; p < v.size();) {
        const std::size_t q = v.find(',', p);
        o.sizes.push_back(std::stoi(v.substr(p, q - p)));
        p = q == std::string::npos ? v.size() : q + 1;
      }
    } else if (arg == "--reps") {
      o.reps = std::stoi(v);
    } else if (arg == "--rounds") {
      o.rounds = std::stoi(v);
    } else {
      throw InputError("fft_bench: unknown option " + arg + " (--sizes, --reps, --rounds)");
    }
  }
  return o;
}

double field_value(int i, int j, int k) { return std::sin(0.1 * i + 0.2 * j) * std::cos(0.3 * k) + 0.01 * ((i * 7 + j * 3 + k) % 11); }

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
  plan.forward(u.view(), spec);  // warm-up: first touch of every buffer
  plan.backward(spec, v.view());

  double best = 1e300, share = 0, line_share = 0;
  for (int r = 0; r < o.rounds; ++r) {
    comm.barrier();
    const double t0 = wall_seconds(), tr0 = plan.seconds_transposes(), tl0 = plan.seconds_lines();
    for (int n = 0; n < o.reps; ++n) {
      plan.forward(u.view(), spec);
      plan.backward(spec, v.view());
    }
    const double t = comm.max((wall_seconds() - t0) / o.reps);
    const double tr = comm.max((plan.seconds_transposes() - tr0) / o.reps);
    const double tl = comm.max((plan.seconds_lines() - tl0) / o.reps);
    if (t < best) {
      best = t;
      share = tr;
      line_share = tl;
    }
  }
  // Effective bandwidth of the transposes, counted as STREAM counts a copy (each byte read once and
  // written once): per transform the data is copied twice (pack, unpack; MPI's own copy is not
  // counted), and a forward + backward pair is two transforms. 1.0 would mean the transposes run
  // as fast as two plain copies of their data.
  const double moved = static_cast<double>(comm.sum(plan.bytes_transposed_per_transform()));
  const double transpose_bw = 2.0 * 2.0 * 2.0 * moved / share;
  const double copy_bw = copy_bandwidth(comm, std::max<std::int64_t>(plan.bytes_transposed_per_transform() / 8, 1 << 20), o.rounds);
  if (comm.is_root()) {
    std::printf("\n%d^3 r2c forward + c2r backward, double, %d rank(s) x %d thread(s); bricks: z-slabs\n", N, P, threads);
    std::printf("  %s\n", plan.describe().c_str());
    std::printf("  cumulus          %9.2f ms\n", best * 1e3);
    std::printf("  transposes       %9.2f ms = %.0f %% of the time; %.2f GB/s effective = %.2f of a memory copy (%.2f GB/s, same run)\n",
                share * 1e3, 100 * share / best, transpose_bw / 1e9, transpose_bw / copy_bw, copy_bw / 1e9);
    std::printf("  1D line transforms %7.2f ms = %.0f %% of the time\n", line_share * 1e3, 100 * line_share / best);
  }

  // Checksum: sum of |u_hat|^2 over the stored half-spectrum (compared with FFTW-MPI's below).
  const auto all = plan.gather_spectrum(spec);
  double ours_sum = 0;
  for (const auto& c : all) ours_sum += c.re * c.re + c.im * c.im;

#ifdef CUMULUS_HAVE_FFTW_MPI
  {
    // FFTW's MPI slab transform (the first dimension of its row-major N x N x N is our z), with the
    // spectrum left transposed (FFTW_MPI_TRANSPOSED_OUT / _IN), as ours stays in pencils: one global
    // transpose each way, as in a cumulus slab. FFTW_MEASURE: the peer at its best.
    fftw_plan_with_nthreads(threads);
    ptrdiff_t ln0, l0s, ln1, l1s;
    const ptrdiff_t alloc = fftw_mpi_local_size_3d_transposed(N, N, N / 2 + 1, comm.raw(), &ln0, &l0s, &ln1, &l1s);
    double* in = fftw_alloc_real(2 * alloc);
    double* back = fftw_alloc_real(2 * alloc);
    fftw_complex* out = fftw_alloc_complex(alloc);
    const double tp0 = wall_seconds();
    fftw_plan pf = fftw_mpi_plan_dft_r2c_3d(N, N, N, in, out, comm.raw(), FFTW_MEASURE | FFTW_MPI_TRANSPOSED_OUT);
    fftw_plan pb = fftw_mpi_plan_dft_c2r_3d(N, N, N, out, back, comm.raw(), FFTW_MEASURE | FFTW_MPI_TRANSPOSED_IN);
    const double planning = comm.max(wall_seconds() - tp0);
    const std::int64_t row = 2 * (N / 2 + 1);  // padded real rows
    for (ptrdiff_t k = 0; k < ln0; ++k)
      for (int j = 0; j < N; ++j)
        for (int i = 0; i < row; ++i) in[(k * N + j) * row + i] = i < N ? field_value(i, j, static_cast<int>(l0s + k)) : 0.0;
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
      std::printf("  FFTW-MPI slabs   %9.2f ms   speed ratio cumulus / FFTW-MPI = %.2f   (planning %.1f s; checksum "
                  "agreement %.1e)\n",
                  t * 1e3, t / best, planning, std::abs(ours_sum - peer_sum) / peer_sum);
    fftw_destroy_plan(pf);
    fftw_destroy_plan(pb);
    fftw_free(in);
    fftw_free(back);
    fftw_free(out);
    fftw_plan_with_nthreads(1);
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
      for (std::size_t c = 0; c < cells; ++c) in[c] = field_value(static_cast<int>(c % N), static_cast<int>(c / N % N), static_cast<int>(c / N / N));
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
    for (int n : o.sizes) run_size(n, comm, o);
#ifdef CUMULUS_HAVE_FFTW_MPI
    fftw_mpi_cleanup();
#endif
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "fft_bench: %s\n", e.what());
    return static_cast<int>(e.code());
  }
}
