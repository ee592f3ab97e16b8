// The distributed FFT's 1D line transforms: FFTW on the host (its plans, the batches, the fused
// passes that transform a batch and scatter it straight into the next layout) and cuFFT on the
// GPU (batched plans, one work area). The plan, the layouts and the transposes are in fft.cpp.
#include "mesh/fft.hpp"

#include <fftw3.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include "core/strings.hpp"
#include "core/timers.hpp"
#include "mesh/fft_host.hpp"

#ifdef CUMULUS_HAVE_CUDA
#include <cuda_runtime.h>

#include "mesh/cufft_api.hpp"
#endif

namespace cumulus {

namespace {

// FFTW's double and single precision interfaces under one name. Every plan is made with
// FFTW_ESTIMATE: FFTW_MEASURE chooses among algorithms by timing them, so two runs (or two rank
// counts) could round differently.
template <class T>
struct Fftw;
template <>
struct Fftw<double> {
  using cpx = fftw_complex;
  static void* c2c(int n, int howmany, void* in, void* out, int sign) {
    return fftw_plan_many_dft(1, &n, howmany, static_cast<cpx*>(in), nullptr, 1, n, static_cast<cpx*>(out), nullptr, 1,
                              n, sign, FFTW_ESTIMATE);
  }
  static void* r2c(int n, int howmany, void* in, void* out) {
    return fftw_plan_many_dft_r2c(1, &n, howmany, static_cast<double*>(in), nullptr, 1, n, static_cast<cpx*>(out),
                                  nullptr, 1, n / 2 + 1, FFTW_ESTIMATE);
  }
  static void* c2r(int n, int howmany, void* in, void* out) {
    return fftw_plan_many_dft_c2r(1, &n, howmany, static_cast<cpx*>(in), nullptr, 1, n / 2 + 1,
                                  static_cast<double*>(out), nullptr, 1, n, FFTW_ESTIMATE);
  }
  static void run_c2c(void* p, void* in, void* out) {
    fftw_execute_dft(static_cast<fftw_plan>(p), static_cast<cpx*>(in), static_cast<cpx*>(out));
  }
  static void run_r2c(void* p, void* in, void* out) {
    fftw_execute_dft_r2c(static_cast<fftw_plan>(p), static_cast<double*>(in), static_cast<cpx*>(out));
  }
  static void run_c2r(void* p, void* in, void* out) {
    fftw_execute_dft_c2r(static_cast<fftw_plan>(p), static_cast<cpx*>(in), static_cast<double*>(out));
  }
  static void destroy(void* p) { fftw_destroy_plan(static_cast<fftw_plan>(p)); }
  static double cost(void* p) { return fftw_estimate_cost(static_cast<fftw_plan>(p)); }
  static int alignment(const void* p) { return fftw_alignment_of(static_cast<double*>(const_cast<void*>(p))); }
};
template <>
struct Fftw<float> {
  using cpx = fftwf_complex;
  static void* c2c(int n, int howmany, void* in, void* out, int sign) {
    return fftwf_plan_many_dft(1, &n, howmany, static_cast<cpx*>(in), nullptr, 1, n, static_cast<cpx*>(out), nullptr,
                               1, n, sign, FFTW_ESTIMATE);
  }
  static void* r2c(int n, int howmany, void* in, void* out) {
    return fftwf_plan_many_dft_r2c(1, &n, howmany, static_cast<float*>(in), nullptr, 1, n, static_cast<cpx*>(out),
                                   nullptr, 1, n / 2 + 1, FFTW_ESTIMATE);
  }
  static void* c2r(int n, int howmany, void* in, void* out) {
    return fftwf_plan_many_dft_c2r(1, &n, howmany, static_cast<cpx*>(in), nullptr, 1, n / 2 + 1,
                                   static_cast<float*>(out), nullptr, 1, n, FFTW_ESTIMATE);
  }
  static void run_c2c(void* p, void* in, void* out) {
    fftwf_execute_dft(static_cast<fftwf_plan>(p), static_cast<cpx*>(in), static_cast<cpx*>(out));
  }
  static void run_r2c(void* p, void* in, void* out) {
    fftwf_execute_dft_r2c(static_cast<fftwf_plan>(p), static_cast<float*>(in), static_cast<cpx*>(out));
  }
  static void run_c2r(void* p, void* in, void* out) {
    fftwf_execute_dft_c2r(static_cast<fftwf_plan>(p), static_cast<cpx*>(in), static_cast<float*>(out));
  }
  static void destroy(void* p) { fftwf_destroy_plan(static_cast<fftwf_plan>(p)); }
  static double cost(void* p) { return fftwf_estimate_cost(static_cast<fftwf_plan>(p)); }
  static int alignment(const void* p) { return fftwf_alignment_of(static_cast<float*>(const_cast<void*>(p))); }
};

// Lines per host batch. Fixed (not derived from the rank count), so that every line is transformed
// by the same FFTW plan at every rank count; 16 lines keep every batch's start 64-byte aligned in
// both precisions (the alignment FFTW planned for: Buffer's host memory), and a multiple of any
// SIMD width FFTW may vectorise across lines, so no line falls into a remainder loop.
constexpr int kHostBatch = 16;
// Lines per cuFFT batch: about 2^21 elements a launch (launch overhead amortised), from the longest
// axis, so again from the global sizes only.
int cuda_batch(const Index3& n) {
  const int longest = std::max({n[0], n[1], n[2]});
  int b = 1;
  while (2 * b * static_cast<std::int64_t>(longest) <= (std::int64_t{1} << 21)) b *= 2;
  return b;
}

using fft_host::max_threads;
using fft_host::this_thread;

const char* axis_name(int a) { return a == 0 ? "x" : (a == 1 ? "y" : "z"); }

}  // namespace

template <class T>
int FftPlan<T>::line_batch(const Exec& exec, const Index3& n) {
  return exec.is_cuda() ? cuda_batch(n) : kHostBatch;
}

template <class T>
void FftPlan<T>::destroy_line_plans() {
  for (int p = 0; p < 6; ++p)
    if (host_plans_[p]) Fftw<T>::destroy(host_plans_[p]);
#ifdef CUMULUS_HAVE_CUDA
  if (cuda_plans_made_)
    for (int p = 0; p < 6; ++p)
      if (cuda_plans_[p]) cufft().destroy(cuda_plans_[p]);
  if (cuda_work_) cudaFreeAsync(cuda_work_, exec_.stream());
#endif
}

template <class T>
bool FftPlan<T>::cuda_fft_available(std::string* why) {
#ifdef CUMULUS_HAVE_CUDA
  const std::string& e = cufft().error;
  if (why) *why = e;
  return e.empty();
#else
  if (why) *why = "built without CUDA";
  return false;
#endif
}

template <class T>
void FftPlan<T>::make_line_plans() {
  const bool r2c = kind_ == FftKind::real_to_complex;
  if (!exec_.is_cuda()) {
    // Each OpenMP thread's batch of lines in and out (the fused passes), made once: nothing is
    // allocated inside a transform. A slot holds batch_ lines of the longest axis at a 64-byte pitch.
    const int longest = std::max({n_[0], n_[1], n_[2]});
    scratch_threads_ = max_threads();
    scratch_slot_ = 2 * static_cast<std::size_t>(batch_) * ((static_cast<std::size_t>(longest) * sizeof(Complex) + 63) / 64 * 64);
    scratch_ = Buffer<unsigned char>(Backend::host, scratch_slot_ * static_cast<std::size_t>(scratch_threads_), "fft.scratch");
    for (int s = 0; s <= last_stage(); ++s) {
      const int n = n_[s];
      void* a = work_a_.data();
      void* b = work_b_.data();
      for (int dir = 0; dir < 2; ++dir) {
        auto make = [&](int howmany) {
          if (s == 0 && r2c) return dir == 0 ? Fftw<T>::r2c(n, howmany, a, b) : Fftw<T>::c2r(n, howmany, a, b);
          return Fftw<T>::c2c(n, howmany, a, b, dir == 0 ? FFTW_FORWARD : FFTW_BACKWARD);
        };
        // FFTW_ESTIMATE plans a batch of lines as a loop over lines or as one vector plan across
        // them, by its operation-count model; for some lengths (128- and 64-point real lines,
        // for example) its batch plan costs 3x a loop over its one-line plan by that same model,
        // and runs about 2x slower. Both plans are made, and the cheaper by FFTW's own estimate
        // (a deterministic count, not a timing) is kept: the choice depends only on the length,
        // the kind and the precision, so every rank count makes the same one.
        void* batch = make(batch_);
        void* single = make(1);
        if (!batch || !single) throw Error(strprintf("FFTW: no plan for %d-point lines along %s", n, axis_name(s)));
        // A one-line plan runs on each line where it lies, so every line must start at FFTW's
        // SIMD alignment (16 bytes) as the planning arrays do: lines a whole number of 16 bytes long.
        const std::size_t in_bytes = (s == 0 && r2c && dir == 0) ? n * sizeof(T) : (s == 0 && r2c ? n / 2 + 1 : n) * sizeof(Complex);
        const std::size_t out_bytes = (s == 0 && r2c && dir == 1) ? n * sizeof(T) : (s == 0 && r2c ? n / 2 + 1 : n) * sizeof(Complex);
        const bool use_single = in_bytes % 16 == 0 && out_bytes % 16 == 0 &&
                                batch_ * Fftw<T>::cost(single) < Fftw<T>::cost(batch);
        Fftw<T>::destroy(use_single ? batch : single);
        host_plans_[2 * s + dir] = use_single ? single : batch;
        host_single_[2 * s + dir] = use_single;
      }
    }
    return;
  }
#ifdef CUMULUS_HAVE_CUDA
  constexpr bool dbl = sizeof(T) == 8;
  const CufftApi& api = cufft();
  if (!api.error.empty()) throw Error(api.error);
  std::size_t most = 0;
  cuda_plans_made_ = true;
  for (int s = 0; s <= last_stage(); ++s) {
    int n = n_[s];
    for (int dir = 0; dir < 2; ++dir) {
      cufftHandle h = 0;
      cufft_check(api.create(&h), "cufftCreate");
      cuda_plans_[2 * s + dir] = h;
      // The work area comes from one Buffer made below, shared: the plans run one after another
      // on the Exec's stream.
      cufft_check(api.set_auto_allocation(h, 0), "cufftSetAutoAllocation");
      cufftType type;
      int in_len = n, out_len = n;
      if (s == 0 && r2c) {
        type = dir == 0 ? (dbl ? CUFFT_D2Z : CUFFT_R2C) : (dbl ? CUFFT_Z2D : CUFFT_C2R);
        (dir == 0 ? out_len : in_len) = n / 2 + 1;
      } else {
        type = dbl ? CUFFT_Z2Z : CUFFT_C2C;
      }
      std::size_t ws = 0;
      cufft_check(api.make_plan_many(h, 1, &n, &in_len, 1, in_len, &out_len, 1, out_len, type, batch_, &ws),
                  "cufftMakePlanMany");
      most = std::max(most, ws);
      cufft_check(api.set_stream(h, exec_.stream()), "cufftSetStream");
    }
  }
  // The work area from the stream-ordered pool (select_backend keeps the pool's memory), on the
  // Exec's stream, made once here and returned by destroy_line_plans.
  const std::size_t bytes = std::max<std::size_t>(most, 1);
  const cudaError_t e = cudaMallocAsync(&cuda_work_, bytes, exec_.stream());
  if (e != cudaSuccess) {
    cudaGetLastError();  // not sticky: report it once, here
    throw Error(strprintf("cannot allocate %.3g GB of cuFFT work area on the GPU: %s", bytes / 1e9, cudaGetErrorString(e)));
  }
  for (int p = 0; p < 2 * (last_stage() + 1); ++p)
    cufft_check(api.set_work_area(cuda_plans_[p], cuda_work_), "cufftSetWorkArea");
#else
  throw Error("FftPlan: a CUDA Exec in a build without CUDA");
#endif
}

template <class T>
void FftPlan<T>::add_compute(double seconds) {
#pragma omp critical(cumulus_fft_compute)
  pass_compute_ = std::max(pass_compute_, seconds);
}

template <class T>
double FftPlan<T>::run_host_batch(int p, bool real_side, bool forward, unsigned char* in, std::size_t pitch_in,
                                  unsigned char* out, std::size_t pitch_out, int count) const {
  const double t0 = wall_seconds();
  void* plan = host_plans_[p];
  auto run = [&](void* i, void* o) {
    if (!real_side)
      Fftw<T>::run_c2c(plan, i, o);
    else if (forward)
      Fftw<T>::run_r2c(plan, i, o);
    else
      Fftw<T>::run_c2r(plan, i, o);
  };
  if (!host_single_[p]) {
    if (count >= 0 && count != batch_) throw Error("FftPlan: part of a batch through a batch plan (an internal error)");
    run(in, out);
    return wall_seconds() - t0;
  }
  for (int q = 0; q < (count >= 0 ? count : batch_); ++q) {
    unsigned char* i = in + q * pitch_in;
    unsigned char* o = out + q * pitch_out;
    // make_line_plans chose a one-line plan only for lines that keep the planning alignment.
    if (Fftw<T>::alignment(i) != 0 || Fftw<T>::alignment(o) != 0)
      throw Error("FftPlan: a line is not at FFTW's SIMD alignment (an internal error)");
    run(i, o);
  }
  return wall_seconds() - t0;
}

template <class T>
bool FftPlan<T>::host_lines_in_place(int p, const void* first, std::size_t pitch) const {
  // Lines a pitch apart keep the first line's alignment when the pitch itself keeps it.
  const auto* second = static_cast<const unsigned char*>(first) + pitch;
  return !exec_.is_cuda() && host_single_[p] && Fftw<T>::alignment(first) == 0 && Fftw<T>::alignment(second) == 0;
}

template <class T>
void FftPlan<T>::lines(int s, bool forward, const void* in_c, void* out) {
  const double t0 = wall_seconds();
  const Stage& st = stage_[s];
  const bool real_side = s == 0 && kind_ == FftKind::real_to_complex;
  void* in = const_cast<void*>(in_c);  // FFTW and cuFFT take non-const inputs (c2c out-of-place keeps them)
  const int n = n_[s];
  // Elements (of T for real lines, of Complex otherwise) per line, before and after.
  const std::int64_t len_in = real_side && forward ? n : (real_side ? n / 2 + 1 : n);
  const std::int64_t len_out = real_side && !forward ? n : (real_side ? n / 2 + 1 : n);
  const std::size_t esize_in = real_side && forward ? sizeof(T) : sizeof(Complex);
  const std::size_t esize_out = real_side && !forward ? sizeof(T) : sizeof(Complex);
  const std::int64_t batches = st.padded_lines / batch_;
  const std::size_t step_in = static_cast<std::size_t>(batch_ * len_in) * esize_in;
  const std::size_t step_out = static_cast<std::size_t>(batch_ * len_out) * esize_out;
  auto* pin = static_cast<unsigned char*>(in);
  auto* pout = static_cast<unsigned char*>(out);
  const int p = 2 * s + (forward ? 0 : 1);
  if (!exec_.is_cuda()) {
    // Batches over the OpenMP threads, each with the same plan (FFTW's new-array execute is thread
    // safe): a line's bits do not depend on the thread count, as they would with FFTW's own threads
    // splitting a batch differently.
    pass_compute_ = 0;
#pragma omp parallel if (batches > 1)
    {
      double busy = 0;
#pragma omp for schedule(static)
      for (std::int64_t b = 0; b < batches; ++b)
        busy += run_host_batch(p, real_side, forward, pin + b * step_in, static_cast<std::size_t>(len_in) * esize_in,
                               pout + b * step_out, static_cast<std::size_t>(len_out) * esize_out);
      add_compute(busy);
    }
    t_compute_ += pass_compute_;
  } else {
#ifdef CUMULUS_HAVE_CUDA
    const cufftHandle h = cuda_plans_[p];
    const CufftApi& api = cufft();
    constexpr bool dbl = sizeof(T) == 8;
    for (std::int64_t b = 0; b < batches; ++b) {
      void* i = pin + b * step_in;
      void* o = pout + b * step_out;
      cufftResult r;
      if constexpr (dbl) {
        if (!real_side)
          r = api.z2z(h, static_cast<cufftDoubleComplex*>(i), static_cast<cufftDoubleComplex*>(o),
                           forward ? CUFFT_FORWARD : CUFFT_INVERSE);
        else if (forward)
          r = api.d2z(h, static_cast<cufftDoubleReal*>(i), static_cast<cufftDoubleComplex*>(o));
        else
          r = api.z2d(h, static_cast<cufftDoubleComplex*>(i), static_cast<cufftDoubleReal*>(o));
      } else {
        if (!real_side)
          r = api.c2c(h, static_cast<cufftComplex*>(i), static_cast<cufftComplex*>(o),
                           forward ? CUFFT_FORWARD : CUFFT_INVERSE);
        else if (forward)
          r = api.r2c(h, static_cast<cufftReal*>(i), static_cast<cufftComplex*>(o));
        else
          r = api.c2r(h, static_cast<cufftComplex*>(i), static_cast<cufftReal*>(o));
      }
      cufft_check(r, "cufftExec");
    }
#endif
  }
  t_lines_ += wall_seconds() - t0;
}

template <class T>
void FftPlan<T>::lines_into_transpose(int s, bool forward, const void* in, const Transpose& t, bool reverse,
                                      const StridedView<Complex>& dst, const std::int64_t* in_strides) {
  const double t0 = wall_seconds();
  const Stage& st = stage_[s];
  const int a = st.axis;
  const bool real_in = s == 0 && kind_ == FftKind::real_to_complex && forward;
  const std::int64_t len_in = real_in ? n_[0] : st.box.size(a), len_out = st.box.size(a);
  const std::size_t esize_in = real_in ? sizeof(T) : sizeof(Complex);
  // The input's strides (elements): the stage's storage, or the real x-pencils (x, y, z).
  std::int64_t in_stride[3] = {st.stride[0], st.stride[1], st.stride[2]};
  if (real_in) {
    in_stride[0] = 1;
    in_stride[1] = n_[0];
    in_stride[2] = static_cast<std::int64_t>(n_[0]) * st.box.size(1);
  }
  if (in_strides)
    for (int d = 0; d < 3; ++d) in_stride[d] = in_strides[d];
  const Index3 order = reverse ? t.src_order : t.dst_order;
  const int u = order[0] == a ? order[1] : order[0];  // batches run along the destination's contiguous axis
  const int w = 3 - a - u;
  const auto& out_box = reverse ? t.recv : t.send;
  const auto& out_displ = reverse ? t.recv_displ : t.send_displ;
  const int members = static_cast<int>(out_box.size());
  // Where each member's part goes: this rank's own into dst, the others' into the send buffer laid
  // out as transpose() packs it (the receiver's order, box-relative).
  std::vector<StridedView<Complex>>& to = to_views_;  // sized at set-up: no allocation here
  Complex* sbuf = reinterpret_cast<Complex*>(send_.data());
  for (int m = 0; m < members; ++m) {
    const Box& b = out_box[static_cast<std::size_t>(m)];
    if (b.empty()) continue;
    if (m == t.self) {
      to[static_cast<std::size_t>(m)] = dst;
      continue;
    }
    std::int64_t str[3];
    str[order[0]] = 1;
    str[order[1]] = b.size(order[0]);
    str[order[2]] = static_cast<std::int64_t>(b.size(order[0])) * b.size(order[1]);
    to[static_cast<std::size_t>(m)] =
        StridedView<Complex>{sbuf + out_displ[static_cast<std::size_t>(m)], b.lo[0], b.lo[1], b.lo[2], str[0], str[1], str[2]};
  }
  const int nu = st.box.size(u), nw = st.box.size(w), ulo = st.box.lo[u], wlo = st.box.lo[w], alo = st.box.lo[a];
  const std::int64_t batches_u = (nu + batch_ - 1) / batch_, work = batches_u * nw;
  const int plan = 2 * s + (forward ? 0 : 1);
  // A batch plan needs its lines back to back; a one-line plan takes each at a 64-byte boundary.
  const std::size_t pitch_in = host_pitch(plan, static_cast<std::size_t>(len_in) * esize_in);
  const std::size_t pitch_out = host_pitch(plan, static_cast<std::size_t>(len_out) * sizeof(Complex));
  const std::int64_t out_pitch = static_cast<std::int64_t>(pitch_out / sizeof(Complex));
  const auto* base = static_cast<const unsigned char*>(in);
  pass_compute_ = 0;
#pragma omp parallel num_threads(std::min(max_threads(), scratch_threads_))
  {
    double busy = 0;
    // A batch's input and output in this thread's scratch, aligned as FFTW's planning arrays are
    // (its SIMD codelets may require it); padding lines are zero and their results never read.
    const std::size_t in_bytes = batch_ * pitch_in;
    void* tin = scratch_.data() + static_cast<std::size_t>(this_thread()) * scratch_slot_;
    void* tout = static_cast<unsigned char*>(tin) + scratch_slot_ / 2;
    std::memset(tin, 0, in_bytes);
#pragma omp for schedule(static)
    for (std::int64_t job = 0; job < work; ++job) {
      const int wv = wlo + static_cast<int>(job / batches_u);
      const int u0 = ulo + static_cast<int>(job % batches_u) * batch_;
      const int cnt = u0 + batch_ <= ulo + nu ? batch_ : ulo + nu - u0;
      for (int q = 0; q < cnt; ++q) {
        const std::int64_t row = (static_cast<std::int64_t>(u0 + q - ulo) * in_stride[u] + static_cast<std::int64_t>(wv - wlo) * in_stride[w]);
        std::memcpy(static_cast<unsigned char*>(tin) + q * pitch_in,
                    base + static_cast<std::size_t>(row) * esize_in, static_cast<std::size_t>(len_in) * esize_in);
      }
      if (cnt < batch_)
        std::memset(static_cast<unsigned char*>(tin) + cnt * pitch_in, 0, (batch_ - cnt) * pitch_in);
      busy += run_host_batch(plan, real_in, forward, static_cast<unsigned char*>(tin), pitch_in,
                             static_cast<unsigned char*>(tout), pitch_out);
      const Complex* out = static_cast<const Complex*>(tout);
      for (int m = 0; m < members; ++m) {
        const Box& b = out_box[static_cast<std::size_t>(m)];
        if (b.empty() || wv < b.lo[w] || wv >= b.hi[w]) continue;
        const int q0 = std::max(u0, b.lo[u]), q1 = std::min(u0 + cnt, b.hi[u]);
        if (q0 >= q1) continue;
        const StridedView<Complex>& v = to[static_cast<std::size_t>(m)];
        const std::int64_t sv[3] = {v.s0, v.s1, v.s2};
        for (int ta = b.lo[a]; ta < b.hi[a]; ++ta) {
          int c[3];
          c[a] = ta;
          c[u] = q0;
          c[w] = wv;
          Complex* d = &v(c[0], c[1], c[2]);
          const Complex* src = out + static_cast<std::int64_t>(q0 - u0) * out_pitch + (ta - alo);
          for (int q = q0; q < q1; ++q, d += sv[u], src += out_pitch) *d = *src;
        }
      }
    }
    add_compute(busy);
  }
  t_compute_ += pass_compute_;
  t_lines_ += wall_seconds() - t0;
}

template <class T>
template <class E>
void FftPlan<T>::lines_to_bricks(const StridedView<E>& out) {
  const double t0 = wall_seconds();
  const Stage& st = stage_[0];
  const bool real_out = kind_ == FftKind::real_to_complex;
  const int n = n_[0];
  const int plan = 1;  // the x stage, backward
  // The x stage's spectral lines lie back to back in work_a (as lines() reads them); the real or
  // complex result of a batch goes to scratch, then row by row into the caller's brick.
  const std::size_t pitch_in = static_cast<std::size_t>(real_out ? m0_ : n) * sizeof(Complex);
  const std::size_t row = static_cast<std::size_t>(n) * sizeof(E);
  const std::size_t pitch_out = host_pitch(plan, row);
  const int ny = st.box.size(1), ylo = st.box.lo[1], zlo = st.box.lo[2];
  const std::int64_t batches = st.padded_lines / batch_;
  auto* in = reinterpret_cast<unsigned char*>(work_a_.data());
  pass_compute_ = 0;
#pragma omp parallel num_threads(std::min(max_threads(), scratch_threads_))
  {
    double busy = 0;
    auto* tout = scratch_.data() + static_cast<std::size_t>(this_thread()) * scratch_slot_;
#pragma omp for schedule(static)
    for (std::int64_t b = 0; b < batches; ++b) {
      busy += run_host_batch(plan, real_out, false, in + static_cast<std::size_t>(b * batch_) * pitch_in, pitch_in,
                             tout, pitch_out);
      for (int q = 0; q < batch_; ++q) {
        const std::int64_t line = b * batch_ + q;
        if (line >= st.lines) break;
        const int y = ylo + static_cast<int>(line % ny), z = zlo + static_cast<int>(line / ny);
        std::memcpy(&out(0, y, z), tout + q * pitch_out, row);
      }
    }
    add_compute(busy);
  }
  t_compute_ += pass_compute_;
  t_lines_ += wall_seconds() - t0;
}


// The members defined here, for both precisions (the class itself is instantiated in fft.cpp).
#define CUMULUS_FFT_LINE_MEMBERS(T)                                                                    \
  template bool FftPlan<T>::cuda_fft_available(std::string*);                                          \
  template int FftPlan<T>::line_batch(const Exec&, const Index3&);                                     \
  template void FftPlan<T>::destroy_line_plans();                                                      \
  template void FftPlan<T>::make_line_plans();                                                         \
  template void FftPlan<T>::add_compute(double);                                                       \
  template double FftPlan<T>::run_host_batch(int, bool, bool, unsigned char*, std::size_t, unsigned char*, \
                                             std::size_t, int) const;                                  \
  template bool FftPlan<T>::host_lines_in_place(int, const void*, std::size_t) const;                    \
  template void FftPlan<T>::lines(int, bool, const void*, void*);                                      \
  template void FftPlan<T>::lines_into_transpose(int, bool, const void*, const typename FftPlan<T>::Transpose&, bool,       \
                                                 const StridedView<typename FftPlan<T>::Complex>&, const std::int64_t*);    \
  template void FftPlan<T>::lines_to_bricks<T>(const StridedView<T>&);                                 \
  template void FftPlan<T>::lines_to_bricks<FftComplex<T>>(const StridedView<FftComplex<T>>&);
CUMULUS_FFT_LINE_MEMBERS(double)
CUMULUS_FFT_LINE_MEMBERS(float)
#undef CUMULUS_FFT_LINE_MEMBERS

}  // namespace cumulus
