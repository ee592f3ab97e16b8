// The host builder of the Verlet list: list bins at least cutoff + skin wide, one row of three bins
// scanned at a time by a vectorised distance test, each atom's partners put in ascending global id.
// At one OpenMP thread, or at any for a force term that takes it (ForceTerm::threaded_half), a half
// list (each pair once); otherwise a full list (each thread owns its atoms' sums).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <utility>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <omp.h>

#include "core/macros.hpp"
#include "core/timers.hpp"
#include "solvers/md/neighbor_list.hpp"

namespace cumulus::md {

// order[r] = the index of the r-th smallest of `ids` (distinct, non-negative): an LSD radix sort
// on 11-bit digits, as many passes as the largest id needs (3 below 2^33): linear, where a
// comparison sort of the local atoms took a tenth of a list build.
void sort_by_id(const std::int64_t* ids, std::size_t n, std::vector<int>& order) {
  order.resize(n);
  for (std::size_t k = 0; k < n; ++k) order[k] = static_cast<int>(k);
  std::int64_t top = 0;
  for (std::size_t k = 0; k < n; ++k) top = std::max(top, ids[k]);
  std::vector<int> tmp(n);
  constexpr int kBits = 11, kBuckets = 1 << kBits;
  // shift < 64: an id of 2^55 or more would otherwise shift by 66 (undefined; UBSan, issue #20).
  for (int shift = 0; shift == 0 || (shift < 64 && (top >> shift) > 0); shift += kBits) {
    std::size_t count[kBuckets + 1] = {};
    for (std::size_t k = 0; k < n; ++k) ++count[((ids[static_cast<std::size_t>(order[k])] >> shift) & (kBuckets - 1)) + 1];
    for (int b = 0; b < kBuckets; ++b) count[b + 1] += count[b];
    for (std::size_t k = 0; k < n; ++k) {
      const int i = order[k];
      tmp[count[(ids[static_cast<std::size_t>(i)] >> shift) & (kBuckets - 1)]++] = i;
    }
    order.swap(tmp);
  }
}
void sort_by_id(const std::vector<std::int64_t>& ids, std::vector<int>& order) { sort_by_id(ids.data(), ids.size(), order); }

namespace {
// One atom's list candidates among n binned atoms (a row of bins): the ranks (in id order) of those
// within rl of it, not itself, and either of local index < free_local or of rank >= min_rank and
// local index in [min_local, max_local), appended to out; returns how many. Flags first, in a loop
// the compiler vectorises (compiled for AVX-512, AVX2 and the baseline, chosen at run time), then a
// branch-free compaction.
// With r2 set, each hit's r^2 (the scan's) is also written there, at the hit's place in out.
struct ScanQuery {
  double x, y, z, shx, shy, shz, rl2;
  int self_rank, min_rank, max_local;
  int free_local = 0, min_local = 0;
  double* r2 = nullptr;
};
__attribute__((target_clones("avx2", "default"))) int scan_candidates_auto(
    const ScanQuery& q, int n, const double* x, const double* y, const double* z, const int* rank, const int* local,
    int* out) {
  constexpr int kChunk = 64;
  unsigned char flag[kChunk];
  int count = 0;
  for (int k0 = 0; k0 < n; k0 += kChunk) {
    const int m = n - k0 < kChunk ? n - k0 : kChunk;
    for (int k = 0; k < m; ++k) {
      const double dx = (q.x - x[k0 + k]) + q.shx, dy = (q.y - y[k0 + k]) + q.shy, dz = (q.z - z[k0 + k]) + q.shz;
      const int r = rank[k0 + k], l = local[k0 + k];
      flag[k] = static_cast<unsigned char>((dx * dx + dy * dy + dz * dz < q.rl2) & (r != q.self_rank) &
                                           ((l < q.free_local) | ((r >= q.min_rank) & (l >= q.min_local) & (l < q.max_local))));
    }
    for (int k = 0; k < m; ++k) {
      out[count] = rank[k0 + k];
      if (q.r2) {
        const double dx = (q.x - x[k0 + k]) + q.shx, dy = (q.y - y[k0 + k]) + q.shy, dz = (q.z - z[k0 + k]) + q.shz;
        q.r2[count] = dx * dx + dy * dy + dz * dz;
      }
      count += flag[k];
    }
  }
  return count;
}
#if defined(__x86_64__)
// The same scan with AVX-512 by hand: 8 candidates per step, the hits packed with one compress
// instruction (the compiler does not find it: the compaction above costs more than the distances).
// The same arithmetic in the same order (no contraction), so the same hits. `out` needs room for 16
// entries past the last hit (the compressed vector is stored whole).
__attribute__((target("avx512f"))) int scan_candidates_avx512(
    const ScanQuery& q, int n, const double* x, const double* y, const double* z, const int* rank, const int* local,
    int* out) {
  const __m512d qx = _mm512_set1_pd(q.x), qy = _mm512_set1_pd(q.y), qz = _mm512_set1_pd(q.z);
  const __m512d sx = _mm512_set1_pd(q.shx), sy = _mm512_set1_pd(q.shy), sz = _mm512_set1_pd(q.shz);
  const __m512d rl2 = _mm512_set1_pd(q.rl2);
  const __m512i self = _mm512_set1_epi32(q.self_rank), lo = _mm512_set1_epi32(q.min_rank),
                hi = _mm512_set1_epi32(q.max_local), free = _mm512_set1_epi32(q.free_local),
                min_local = _mm512_set1_epi32(q.min_local);
  int count = 0;
  for (int k = 0; k < n; k += 8) {
    const __mmask8 live = n - k >= 8 ? __mmask8(0xFF) : __mmask8((1u << (n - k)) - 1u);
    const __m512d dx = _mm512_add_pd(_mm512_sub_pd(qx, _mm512_maskz_loadu_pd(live, x + k)), sx);
    const __m512d dy = _mm512_add_pd(_mm512_sub_pd(qy, _mm512_maskz_loadu_pd(live, y + k)), sy);
    const __m512d dz = _mm512_add_pd(_mm512_sub_pd(qz, _mm512_maskz_loadu_pd(live, z + k)), sz);
    const __m512d r2 = _mm512_add_pd(_mm512_add_pd(_mm512_mul_pd(dx, dx), _mm512_mul_pd(dy, dy)), _mm512_mul_pd(dz, dz));
    const __mmask16 near = _mm512_mask_cmp_pd_mask(live, r2, rl2, _CMP_LT_OQ);
    const __m512i r = _mm512_maskz_loadu_epi32(live, rank + k);
    const __m512i l = _mm512_maskz_loadu_epi32(live, local + k);
    const __mmask16 keep = _mm512_mask_cmpneq_epi32_mask(near, r, self) &
                           (_mm512_cmplt_epi32_mask(l, free) |
                            (_mm512_cmpge_epi32_mask(r, lo) & _mm512_cmpge_epi32_mask(l, min_local) & _mm512_cmplt_epi32_mask(l, hi)));
    _mm512_storeu_si512(out + count, _mm512_maskz_compress_epi32(keep, r));
    if (q.r2) _mm512_storeu_pd(q.r2 + count, _mm512_maskz_compress_pd(static_cast<__mmask8>(keep), r2));
    count += __builtin_popcount(static_cast<unsigned>(keep));
  }
  return count;
}
#endif
#if defined(__x86_64__)
// The same with AVX2 by hand, for machines without AVX-512 (the compaction of the loop above, a
// store and an add per candidate, costs more than its distances): 8 candidates per step as two
// fp64 halves, the hits packed by a permute from a table of the 256 masks. The same arithmetic in
// the same order, so the same hits; `out` needs room for 8 entries past the last hit.
struct CompressTable {
  alignas(32) int idx[256][8];
  CompressTable() {
    for (int m = 0; m < 256; ++m) {
      int c = 0;
      for (int l = 0; l < 8; ++l)
        if (m >> l & 1) idx[m][c++] = l;
      for (; c < 8; ++c) idx[m][c] = 0;
    }
  }
};
__attribute__((target("avx2"))) int scan_candidates_avx2(const ScanQuery& q, int n, const double* x, const double* y,
                                                         const double* z, const int* rank, const int* local, int* out) {
  static const CompressTable table;
  const __m256d qx = _mm256_set1_pd(q.x), qy = _mm256_set1_pd(q.y), qz = _mm256_set1_pd(q.z);
  const __m256d sx = _mm256_set1_pd(q.shx), sy = _mm256_set1_pd(q.shy), sz = _mm256_set1_pd(q.shz);
  const __m256d rl2 = _mm256_set1_pd(q.rl2);
  const __m256i self = _mm256_set1_epi32(q.self_rank), lo = _mm256_set1_epi32(q.min_rank - 1),
                hi = _mm256_set1_epi32(q.max_local), free = _mm256_set1_epi32(q.free_local),
                min_local = _mm256_set1_epi32(q.min_local - 1);
  int count = 0, k = 0;
  for (; k + 8 <= n; k += 8) {
    int near = 0;
    alignas(32) double r2s[8];
    for (int h = 0; h < 2; ++h) {
      const int kh = k + 4 * h;
      const __m256d dx = _mm256_add_pd(_mm256_sub_pd(qx, _mm256_loadu_pd(x + kh)), sx);
      const __m256d dy = _mm256_add_pd(_mm256_sub_pd(qy, _mm256_loadu_pd(y + kh)), sy);
      const __m256d dz = _mm256_add_pd(_mm256_sub_pd(qz, _mm256_loadu_pd(z + kh)), sz);
      const __m256d r2 = _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(dx, dx), _mm256_mul_pd(dy, dy)), _mm256_mul_pd(dz, dz));
      near |= _mm256_movemask_pd(_mm256_cmp_pd(r2, rl2, _CMP_LT_OQ)) << (4 * h);
      if (q.r2) _mm256_store_pd(r2s + 4 * h, r2);
    }
    const __m256i r = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rank + k));
    const __m256i l = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(local + k));
    // rank != self, and local < free_local or rank >= min_rank (rank > min_rank - 1), local >=
    // min_local (> min_local - 1) and local < max_local
    const __m256i in_range = _mm256_and_si256(_mm256_and_si256(_mm256_cmpgt_epi32(r, lo), _mm256_cmpgt_epi32(l, min_local)),
                                              _mm256_cmpgt_epi32(hi, l));
    const __m256i ok = _mm256_andnot_si256(_mm256_cmpeq_epi32(r, self), _mm256_or_si256(_mm256_cmpgt_epi32(free, l), in_range));
    const int keep = near & _mm256_movemask_ps(_mm256_castsi256_ps(ok));
    const __m256i packed = _mm256_permutevar8x32_epi32(r, _mm256_load_si256(reinterpret_cast<const __m256i*>(table.idx[keep])));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + count), packed);
    if (q.r2)
      for (int c = 0, b = keep; b; b &= b - 1) q.r2[count + c++] = r2s[__builtin_ctz(static_cast<unsigned>(b))];
    count += __builtin_popcount(static_cast<unsigned>(keep));
  }
  // The rest (fewer than 8) one at a time, the same arithmetic (a call to the portable loop cost
  // more than these few candidates: rows of a few dozen atoms end in one such rest).
  for (; k < n; ++k) {
    const double dx = (q.x - x[k]) + q.shx, dy = (q.y - y[k]) + q.shy, dz = (q.z - z[k]) + q.shz;
    const int r = rank[k], l = local[k];
    out[count] = r;
    if (q.r2) q.r2[count] = dx * dx + dy * dy + dz * dz;
    count += (dx * dx + dy * dy + dz * dz < q.rl2) & (r != q.self_rank) &
             ((l < q.free_local) | ((r >= q.min_rank) & (l >= q.min_local) & (l < q.max_local)));
  }
  return count;
}
#endif
// The builder's hand-written loops: the CPU's best, or for the tests, as for the pair loops,
// CUMULUS_NO_AVX512 (the compiler's loop and the scalar shell sort) or CUMULUS_HOST_AVX2 (the AVX2
// scan) in the environment; read once a build.
enum class ScanIsa { portable, avx2, avx512 };
ScanIsa scan_isa() {
#if defined(__x86_64__)
  static const bool avx512 = __builtin_cpu_supports("avx512f"), avx2 = __builtin_cpu_supports("avx2");
  if (std::getenv("CUMULUS_NO_AVX512")) return ScanIsa::portable;
  if (avx512 && !std::getenv("CUMULUS_HOST_AVX2")) return ScanIsa::avx512;
  if (avx2) return ScanIsa::avx2;
#endif
  return ScanIsa::portable;
}
int scan_candidates(ScanIsa isa, const ScanQuery& q, int n, const double* x, const double* y, const double* z, const int* rank,
                    const int* local, int* out) {
#if defined(__x86_64__)
  if (isa == ScanIsa::avx512) return scan_candidates_avx512(q, n, x, y, z, rank, local, out);
  if (isa == ScanIsa::avx2) return scan_candidates_avx2(q, n, x, y, z, rank, local, out);
#endif
  return scan_candidates_auto(q, n, x, y, z, rank, local, out);
}

// A row's hits (ranks cand[0 .. m), r^2 r2[..]) as local indices (rank_to_local) in out, grouped
// by ListShells::shell, nearest first and in scan order within a shell; ends[k]: where shell k
// ends. scratch: room for 2 m + 32 ints. A stable counting sort; with AVX-512 the shells by
// vector and each shell gathered by a compress pass (the scalar sort's count and place, a store
// and a load of a counter per hit, doubled the list's pairs pass).
void shell_partition_scalar(const int* cand, const double* r2, int m, const int* rank_to_local, double inv_rl, int* out,
                            int* ends) {
  constexpr int kShells = ListShells::kCount;
  int cnt[kShells] = {};
  for (int q = 0; q < m; ++q) ++cnt[ListShells::shell(r2[q], inv_rl)];
  int at[kShells];
  for (int k = 0, sum = 0; k < kShells; ++k) {
    at[k] = sum;
    sum += cnt[k];
    ends[k] = sum;
  }
  for (int q = 0; q < m; ++q) out[at[ListShells::shell(r2[q], inv_rl)]++] = rank_to_local[cand[q]];
}
#if defined(__x86_64__)
CUMULUS_SIMD_WARNINGS_OFF  // core/macros.hpp
// out: room for 16 entries past m (each shell's compressed vectors are stored whole: a compressing
// store to memory is microcoded on AMD Zen 4).
__attribute__((target("avx512f"))) void shell_partition_avx512(const int* cand, const double* r2, int m, const int* rank_to_local,
                                                               double inv_rl, int* out, int* ends, int* scratch) {
  constexpr int kShells = ListShells::kCount;
  int* const shell = scratch;
  int* const local = scratch + ((m + 15) / 16 * 16);
  // ListShells::shell's operations, 8 lanes at a time (the same values).
  const __m512d inv = _mm512_set1_pd(inv_rl), lo = _mm512_set1_pd(0.66), twenty = _mm512_set1_pd(20), one = _mm512_set1_pd(1),
                zero = _mm512_setzero_pd(), top = _mm512_set1_pd(kShells - 1);
  for (int q = 0; q < m; q += 8) {
    const __mmask8 live = m - q >= 8 ? __mmask8(0xFF) : __mmask8((1u << (m - q)) - 1u);
    const __m512d r = _mm512_sqrt_pd(_mm512_maskz_loadu_pd(live, r2 + q));
    __m512d t = _mm512_add_pd(_mm512_mul_pd(_mm512_sub_pd(_mm512_mul_pd(r, inv), lo), twenty), one);
    t = _mm512_min_pd(_mm512_max_pd(t, zero), top);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(shell + q), _mm512_cvttpd_epi32(t));
  }
  for (int q = 0; q < m; q += 16) {
    const __mmask16 live = m - q >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (m - q)) - 1u);
    const __m512i c = _mm512_maskz_loadu_epi32(live, cand + q);
    _mm512_storeu_si512(local + q, _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), live, c, rank_to_local, 4));
  }
  int n = 0;
  for (int k = 0; k < kShells; ++k) {
    const __m512i kv = _mm512_set1_epi32(k);
    for (int q = 0; q < m; q += 16) {
      const __mmask16 live = m - q >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (m - q)) - 1u);
      const __mmask16 in = _mm512_mask_cmpeq_epi32_mask(live, _mm512_loadu_si512(shell + q), kv);
      _mm512_storeu_si512(out + n, _mm512_maskz_compress_epi32(in, _mm512_loadu_si512(local + q)));
      n += __builtin_popcount(static_cast<unsigned>(in));
    }
    ends[k] = n;
  }
}
CUMULUS_SIMD_WARNINGS_ON
#endif
void shell_partition(ScanIsa isa, const int* cand, const double* r2, int m, const int* rank_to_local, double inv_rl, int* out,
                     int* ends, int* scratch) {
#if defined(__x86_64__)
  if (isa == ScanIsa::avx512) return shell_partition_avx512(cand, r2, m, rank_to_local, inv_rl, out, ends, scratch);
#endif
  (void)scratch;
  shell_partition_scalar(cand, r2, m, rank_to_local, inv_rl, out, ends);
}

// A block's share of the list: a vector whose resize leaves new entries unset (every entry is
// written before it is read). A plain vector's resize zeroed each row's entries before the row was
// written in: a memset of the whole list (12 MB for the water benchmark's) every build.
template <class T>
struct NoInit : std::allocator<T> {
  using std::allocator<T>::allocator;
  template <class U>
  struct rebind {
    using other = NoInit<U>;
  };
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... A>
  void construct(U* p, A&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<A>(args)...);
  }
};
using ListPart = std::vector<int, NoInit<int>>;

class HostNeighborList : public NeighborList {
 public:
  explicit HostNeighborList(const Exec& ex) : NeighborList(ex) {}
  std::string describe() const override { return "built on the host"; }

  void build(MdAtoms& atoms, const double box[3], double rl) override {
    const Exec& ex = *ex_;
    const int n_own = atoms.nown(), nlocal = atoms.nlocal();
    const double* lx[3] = {atoms.hx(0), atoms.hx(1), atoms.hx(2)};
    const std::int64_t* lid = atoms.hid();
    std::unique_ptr<ScopedTimer> tph;
    tph = std::make_unique<ScopedTimer>("md.neighbor_build.bins");
    // The Verlet list of the owned atoms over owned + ghost atoms.
    const double rl2 = rl * rl;
    // Coordinates are wrapped into the box, so one comparison per axis finds the nearest image.
    auto image = [&](double d, int axis) {
      const double L = box[axis];
      return d > 0.5 * L ? d - L : (d < -0.5 * L ? d + L : d);
    };
    auto dist2 = [&](int i, int j) {
      const double dx = image(lx[0][static_cast<std::size_t>(i)] - lx[0][static_cast<std::size_t>(j)], 0);
      const double dy = image(lx[1][static_cast<std::size_t>(i)] - lx[1][static_cast<std::size_t>(j)], 1);
      const double dz = image(lx[2][static_cast<std::size_t>(i)] - lx[2][static_cast<std::size_t>(j)], 2);
      return dx * dx + dy * dy + dz * dz;
    };
    auto close = [&](int i, int j) { return dist2(i, j) < rl2; };
    // List bins (not the decomposition's finer cells): at least cutoff + skin wide, searched one
    // bin out in rows of three along x; or, where such a bin would hold more than 64 atoms, half as
    // wide, searched two out in rows of five, the rows beyond reach in y and z skipped: about half
    // the candidates (rigid SPC/E at 12 A: 2,200 against 4,600 an atom; list builds 1.15x faster),
    // while rows stay long enough for the vectorised scan (in.lj's bins of 18 atoms: 1.4x slower
    // halved). All pairs where the box holds too few bins along an axis.
    double volume = box[0] * box[1] * box[2];
    const double per_bin = nlocal * (rl * rl * rl) / std::max(volume, 1e-300);
    const int reach = per_bin > 64 ? 2 : 1;
    int nb3[3];
    for (int d = 0; d < 3; ++d) nb3[d] = std::max(1, static_cast<int>(std::floor(box[d] * reach / rl)));
    const bool brute = nb3[0] < 2 * reach + 1 || nb3[1] < 2 * reach + 1 || nb3[2] < 2 * reach + 1;
    auto list_bin = [&](double x, int d) {
      return std::clamp(static_cast<int>(std::floor(x * nb3[d] / box[d])), 0, nb3[d] - 1);
    };
    std::vector<int> count, bins;
    std::vector<unsigned char> has_owned;  // per bin: holds an owned atom (ghost slots scan only those)
    std::vector<unsigned char> has_ghost;  // per bin: holds a ghost (the spatial half list's backward bins)
    std::vector<int> pos_of;               // each local atom's place in bin order
    std::vector<int> bin_max_rank;         // per bin: the largest id rank of its atoms
    std::vector<double> sx, sy, sz;
    std::vector<int> srank;
    // Local atoms (owned and ghosts) ranked by global id: a list sorted by rank is sorted by id.
    std::vector<int> by_rank(static_cast<std::size_t>(nlocal)), idrank(static_cast<std::size_t>(nlocal));
    sort_by_id(lid, static_cast<std::size_t>(nlocal), by_rank);
    for (int r = 0; r < nlocal; ++r) idrank[static_cast<std::size_t>(by_rank[static_cast<std::size_t>(r)])] = r;
    if (!brute) {
      const std::size_t nb = static_cast<std::size_t>(nb3[0]) * nb3[1] * nb3[2];
      count.assign(nb + 1, 0);
      bins.resize(static_cast<std::size_t>(nlocal));
      auto bin_of = [&](int i) {
        return (static_cast<std::size_t>(list_bin(lx[2][static_cast<std::size_t>(i)], 2)) * nb3[1] +
                list_bin(lx[1][static_cast<std::size_t>(i)], 1)) * nb3[0] + list_bin(lx[0][static_cast<std::size_t>(i)], 0);
      };
      has_owned.assign(nb, 0);
      has_ghost.assign(nb, 0);
      for (int i = 0; i < nlocal; ++i) {
        const std::size_t b = bin_of(i);
        ++count[b + 1];
        (i < n_own ? has_owned : has_ghost)[b] = 1;
      }
      for (std::size_t b = 0; b < nb; ++b) count[b + 1] += count[b];
      std::vector<int> fill(count.begin(), count.end() - 1);
      for (int i = 0; i < nlocal; ++i) bins[static_cast<std::size_t>(fill[bin_of(i)]++)] = i;
      pos_of.resize(static_cast<std::size_t>(nlocal));
      for (int k = 0; k < nlocal; ++k) pos_of[static_cast<std::size_t>(bins[static_cast<std::size_t>(k)])] = k;
      // Coordinates and ids in bin order: the candidate scan below streams through them.
      sx.resize(static_cast<std::size_t>(nlocal));
      sy.resize(static_cast<std::size_t>(nlocal));
      sz.resize(static_cast<std::size_t>(nlocal));
      srank.resize(static_cast<std::size_t>(nlocal));
      for (int k = 0; k < nlocal; ++k) {
        const std::size_t j = static_cast<std::size_t>(bins[static_cast<std::size_t>(k)]);
        sx[static_cast<std::size_t>(k)] = lx[0][j];
        sy[static_cast<std::size_t>(k)] = lx[1][j];
        sz[static_cast<std::size_t>(k)] = lx[2][j];
        srank[static_cast<std::size_t>(k)] = idrank[j];
      }
      // Per bin, the largest id rank in it: a half list's slot keeps partners of larger rank only,
      // so a bin (or row of bins) whose atoms all rank below the slot holds none of its partners.
      // Where ids follow space (lattices, data files written from them, and long after, since atoms
      // diffuse slowly) that skips about half the stencil; elsewhere the test is one comparison.
      bin_max_rank.assign(nb, -1);
      for (std::size_t b = 0; b < nb; ++b)
        for (int k = count[b]; k < count[b + 1]; ++k)
          bin_max_rank[b] = std::max(bin_max_rank[b], srank[static_cast<std::size_t>(k)]);
    }
    // Slots in contiguous blocks, taken by the threads as they come free, each block's rows joined
    // in block order: the same list whatever the thread count (each slot's row is its own). Blocks
    // rather than a share per thread: rows differ in cost (a half list's in id order: the slots of
    // small ids keep more partners), and with two equal shares one thread took 1.3x the other's
    // time (water at two threads: 17.6 against 13.7 ms a build).
    tph.reset();
    auto tpairs_region = std::make_unique<ScopedTimer>("md.neighbor_build.pairs");
    const int nthreads = omp_get_max_threads();
    constexpr int kBlocksPerThread = 16;
    // One thread on the host: a half list (each pair once; pair_lj_cut_kernels.cpp's lj_forces_half gives
    // the full list's bits at half the work). Otherwise the full list (threads and CUDA threads
    // each own their atoms' sums), unless the force term takes a half list at any thread count
    // (order-free sums: threads add to each other's atoms through their own arrays; or rows
    // computed ahead and added in the one-thread order: coul_forces_half).
    half_ = ex.backend() == Backend::host && (nthreads == 1 || threaded_half_);
    const int nslots = half_ ? nlocal : n_own;
    // The blocks' list parts persist across builds (their capacity: no fresh pages each build).
    std::vector<ListPart>& part = parts_;
    const int nblocks = nthreads == 1 ? 1 : std::max(1, std::min(nslots, kBlocksPerThread * nthreads));
    part.resize(static_cast<std::size_t>(nblocks));
    for (auto& p : part) p.clear();
    std::vector<std::int64_t> counts_per_atom(static_cast<std::size_t>(nslots), 0);
    const bool half = half_, ghost_slots = ghost_slots_, id_order = id_order_;
    // Distance shells (ListShells) where the partners need not be in id order: each row put in
    // shells of the partners' distance now (a stable counting sort, so the same list at any thread
    // count), and the positions kept, so that a force call can bound how near a pair of a far
    // shell can have come since.
    constexpr int kShells = ListShells::kCount;
    const bool shells = half && !id_order;
    const double inv_rl = 1 / rl;
    const ScanIsa isa = scan_isa();
    if (shells) {
      shell_end_.assign(static_cast<std::size_t>(nslots) * kShells, 0);
      shell_x0_.resize(3 * static_cast<std::size_t>(nlocal));
      for (int k = 0; k < nlocal; ++k)
        for (int d = 0; d < 3; ++d) shell_x0_[3 * static_cast<std::size_t>(k) + static_cast<std::size_t>(d)] = lx[d][static_cast<std::size_t>(k)];
      shell_reach_ = rl;
      for (int d = 0; d < 3; ++d) shell_box_[d] = box[d];
    } else {
      shell_end_.clear();
      shell_x0_.clear();
    }
    // A spatial half list where the force term takes a pair in either atom's slot (either_slot_:
    // order-free sums, antisymmetric pair terms) and no slot is a ghost's: the pairs of owned atoms
    // from the forward half of each atom's stencil only (rows above it in z, or in y within its
    // z-plane, and along its own row the atoms after it in bin order), each pair once, half the
    // candidates; a ghost partner, from anywhere, when its id is the larger (the rule across ranks:
    // the smaller id's owner computes the pair). Slots stay in rank order; partners in id order
    // where id_order_.
    const bool spatial = half && either_slot_ && (!ghost_slots || nlocal == n_own) && !brute;
    const int nown = n_own;
    std::vector<double> entries(static_cast<std::size_t>(nthreads), 0.0);
    // An exception may not leave an OpenMP region (std::terminate): a thread's (a failed
    // allocation of its list part, say) is kept and thrown after the region, where the caller's
    // handler names it (issue #20).
    std::exception_ptr failure;
    int next_block = 0;
#pragma omp parallel num_threads(nthreads)
    try {
      const int t = omp_get_thread_num();
      // Candidates as ranks in id order (idrank): a bitmap over the ranks puts them in ascending
      // id without a comparison sort when they span few words (ids that are near in space are
      // mostly near in number); otherwise they are sorted.
      std::vector<int> cand(1024);
      std::vector<std::uint64_t> bitmap(static_cast<std::size_t>(nlocal) / 64 + 1, 0);
      std::vector<double> cand_r2(shells ? cand.size() : 0);  // the hits' r^2, for the shells
      std::vector<int> shell_of;  // shell_partition's scratch
      const double* const psx = sx.data();
      const double* const psy = sy.data();
      const double* const psz = sz.data();
      const int* const prank = srank.data();
      const int* const plocal = bins.data();
      std::int64_t entries_int = 0;
      for (;;) {
        int blk;
#pragma omp atomic capture
        blk = next_block++;
        if (blk >= nblocks) break;
        const int i0 = static_cast<int>(static_cast<std::int64_t>(nslots) * blk / nblocks);
        const int i1 = static_cast<int>(static_cast<std::int64_t>(nslots) * (blk + 1) / nblocks);
        ListPart& mine = part[static_cast<std::size_t>(blk)];
        // Room for as many pairs per atom as last time, and a margin (growing it copies).
        mine.reserve(static_cast<std::size_t>((i1 - i0) * (pairs_ / std::max(nslots, 1) * 1.1 + 8)));
        for (int slot = i0; slot < i1; ++slot) {
          const int i = half ? by_rank[static_cast<std::size_t>(slot)] : slot;
          const bool own_i = i < nown;
          if (half && !own_i && !ghost_slots) {  // its pairs are the owner's rank's (set_ghost_slots)
            counts_per_atom[static_cast<std::size_t>(slot)] = 0;
            continue;
          }
          std::size_t ncand = 0;
          if (brute) {
            for (int j = 0; j < nlocal; ++j)
              if ((half ? idrank[static_cast<std::size_t>(j)] > slot && (own_i || j < nown)
                        : lid[static_cast<std::size_t>(j)] != lid[static_cast<std::size_t>(i)]) &&
                  close(i, j)) {
                if (ncand == cand.size()) cand.resize(2 * ncand + 64);
                if (shells) {
                  if (cand_r2.size() < cand.size()) cand_r2.resize(cand.size());
                  cand_r2[ncand] = dist2(i, j);
                }
                cand[ncand++] = idrank[static_cast<std::size_t>(j)];
              }
          } else {
            const int b0 = list_bin(lx[0][static_cast<std::size_t>(i)], 0),
                      b1 = list_bin(lx[1][static_cast<std::size_t>(i)], 1),
                      b2 = list_bin(lx[2][static_cast<std::size_t>(i)], 2);
            const double xi = lx[0][static_cast<std::size_t>(i)], yi = lx[1][static_cast<std::size_t>(i)],
                         zi = lx[2][static_cast<std::size_t>(i)];
            // Which partners a slot keeps: full list, every other atom; half list, those of larger
            // id (rank), and for a ghost only owned ones.
            const int min_rank = half ? slot + 1 : 0;
            const int max_local = half && !own_i ? nown : nlocal;
            // A neighbour bin across the periodic boundary holds atoms one box length away: the
            // shift is the minimum image (the same sums as minimum_image() in the force kernel).
            auto wrap_bin = [&](int b, int d, double* shift) {
              *shift = b < 0 ? box[d] : (b >= nb3[d] ? -box[d] : 0.0);
              return b < 0 ? b + nb3[d] : (b >= nb3[d] ? b - nb3[d] : b);
            };
            // Rows of bins along x, (2 reach + 1) bins each, contiguous in the bin-sorted arrays
            // unless they cross the periodic boundary (then up to three segments, each with its
            // shift); rows whose y-z extent is beyond reach of the atom are skipped.
            const double wy = box[1] / nb3[1], wz = box[2] / nb3[2], inv_wx = nb3[0] / box[0];
            auto gap = [](double lo, double hi, double x) { return x < lo ? lo - x : (x > hi ? x - hi : 0.0); };
            // Branch-free compaction: every candidate is written, and the count advances by one
            // for a hit (a quarter of them: a branch on it would be mispredicted often).
            const int self_rank = idrank[static_cast<std::size_t>(i)];
            // keep: the slot's rule (rank), or the spatial half list's: owned partners and ghosts of
            // larger id (forward), ghosts of larger id only (backward).
            enum class Keep { rank, forward, backward };
            auto scan = [&](int k0, int k1, double shx, double shy, double shz, Keep keep = Keep::rank) {
              if (k1 <= k0) return;
              if (ncand + (k1 - k0) + 16 > cand.size()) cand.resize(2 * (ncand + (k1 - k0)) + 16);
              if (shells && cand_r2.size() < cand.size()) cand_r2.resize(cand.size());
              ScanQuery q{xi, yi, zi, shx, shy, shz, rl2, self_rank, min_rank, max_local};
              if (shells) q.r2 = cand_r2.data() + ncand;
              if (keep != Keep::rank) {
                q.min_rank = slot + 1;
                q.max_local = nlocal;
                q.free_local = keep == Keep::forward ? nown : 0;
                q.min_local = keep == Keep::forward ? 0 : nown;
              }
              ncand += static_cast<std::size_t>(scan_candidates(isa, q, k1 - k0, psx + k0, psy + k0, psz + k0,
                                                                prank + k0, plocal + k0, cand.data() + ncand));
            };
            for (int dz = -reach; dz <= reach; ++dz) {
              const double gz = gap((b2 + dz) * wz, (b2 + dz + 1) * wz, zi);
              if (gz * gz >= rl2) continue;
              double shz;
              const int bz = wrap_bin(b2 + dz, 2, &shz);
              for (int dy = -reach; dy <= reach; ++dy) {
                const double gy = gap((b1 + dy) * wy, (b1 + dy + 1) * wy, yi);
                if (gz * gz + gy * gy >= rl2) continue;
                double shy;
                const int by = wrap_bin(b1 + dy, 1, &shy);
                const std::size_t row = (static_cast<std::size_t>(bz) * nb3[1] + by) * nb3[0];
                // The row's bins within reach along x: those the atom's chord of the sphere at this
                // row's y-z gap meets (widened by a millionth of the reach, far above the rounding of
                // the bounds: the scan's own test decides, so the same list). Rigid SPC/E at 12 A:
                // 1,790 candidates an atom against 2,520 for whole rows, the pairs' pass 6 % faster.
                // (Finer bins, reach 3 or 4, scan fewer still but were slower: each row segment
                // costs about as much as 60 candidates.)
                const double half_chord = std::sqrt(rl2 - gz * gz - gy * gy) + 1e-6 * rl;
                const int lo = std::clamp(static_cast<int>(std::floor((xi - half_chord) * inv_wx)), b0 - reach, b0);
                const int hi = std::clamp(static_cast<int>(std::floor((xi + half_chord) * inv_wx)), b0, b0 + reach);
                if (half && !own_i) {
                  // A ghost's slot keeps owned partners only: bins without an owned atom (most of
                  // its stencil: the block's bins hold its owned atoms, the rest ghosts) are skipped.
                  // Neighbouring bins kept, contiguous in the bin-sorted arrays with the same shift,
                  // are scanned as one segment (a scan per bin cost more in calls than in
                  // candidates; the same hits, and the list is put in id order below).
                  int k0 = 0, k1 = 0;
                  double sh0 = 0;
                  for (int bx = lo; bx <= hi; ++bx) {
                    double shx;
                    const std::size_t b = row + static_cast<std::size_t>(wrap_bin(bx, 0, &shx));
                    if (!(has_owned[b] && bin_max_rank[b] > slot)) continue;
                    if (k1 > k0 && count[b] == k1 && shx == sh0) {
                      k1 = count[b + 1];
                      continue;
                    }
                    if (k1 > k0) scan(k0, k1, sh0, shy, shz);
                    k0 = count[b], k1 = count[b + 1], sh0 = shx;
                  }
                  if (k1 > k0) scan(k0, k1, sh0, shy, shz);
                  continue;
                }
                const int n0 = nb3[0];
                if (spatial) {
                  // Whether a bin of the row within reach holds a ghost of larger id (a backward
                  // part's only partners).
                  auto ghost_above = [&](int b_lo, int b_hi) {
                    if (nlocal == nown) return false;
                    for (int bx = b_lo; bx <= b_hi; ++bx) {
                      double shx;
                      const std::size_t b = row + static_cast<std::size_t>(wrap_bin(bx, 0, &shx));
                      if (has_ghost[b] && bin_max_rank[b] > slot) return true;
                    }
                    return false;
                  };
                  if (dz == 0 && dy == 0) {  // the atom's own row: forward past it in bin order
                    const int at = pos_of[static_cast<std::size_t>(i)];
                    scan(at + 1, count[row + std::min(hi, n0 - 1) + 1], 0.0, shy, shz, Keep::forward);
                    if (hi >= n0) scan(count[row], count[row + hi - n0 + 1], -box[0], shy, shz, Keep::forward);
                    if (ghost_above(lo, b0)) {
                      scan(count[row + std::max(lo, 0)], at, 0.0, shy, shz, Keep::backward);
                      if (lo < 0) scan(count[row + n0 + lo], count[row + n0], box[0], shy, shz, Keep::backward);
                    }
                    continue;
                  }
                  const bool forward = dz > 0 || (dz == 0 && dy > 0);
                  if (!forward && !ghost_above(lo, hi)) continue;
                  const Keep keep = forward ? Keep::forward : Keep::backward;
                  if (lo < 0) scan(count[row + n0 + lo], count[row + n0], box[0], shy, shz, keep);
                  scan(count[row + std::max(lo, 0)], count[row + std::min(hi, n0 - 1) + 1], 0.0, shy, shz, keep);
                  if (hi >= n0) scan(count[row], count[row + hi - n0 + 1], -box[0], shy, shz, keep);
                  continue;
                }
                if (half) {
                  int top = -1;
                  for (int bx = lo; bx <= hi; ++bx) {
                    double shx;
                    top = std::max(top, bin_max_rank[row + static_cast<std::size_t>(wrap_bin(bx, 0, &shx))]);
                  }
                  if (top <= slot) continue;
                }
                if (lo < 0) scan(count[row + n0 + lo], count[row + n0], box[0], shy, shz);
                scan(count[row + std::max(lo, 0)], count[row + std::min(hi, n0 - 1) + 1], 0.0, shy, shz);
                if (hi >= n0) scan(count[row], count[row + hi - n0 + 1], -box[0], shy, shz);
              }
            }
          }
          // Ascending global id: the force on an atom sums its pairs in the same order at any rank
          // count and whenever the list was built (a restart rebuilds it elsewhere in time). A
          // force term whose sums do not depend on the order (set_id_order) takes them in the
          // order the scan found them (the ordering was a third of a build), grouped by distance
          // shell (ListShells) where the list is a half list.
          if (ncand > 0) {
            const auto first = cand.begin(), last = cand.begin() + static_cast<std::ptrdiff_t>(ncand);
            // Written in place (no push_back: its capacity check per entry was measurable).
            const std::size_t base = mine.size();
            mine.resize(base + ncand);
            int* out = mine.data() + base;
            const int* const rank_to_local = by_rank.data();
            const int lo = id_order ? *std::min_element(first, last) : 0,
                      hi = id_order ? *std::max_element(first, last) : 0;
            const int w0 = lo >> 6, w1 = hi >> 6;
            if (shells) {  // by shell of the scan's r^2, in scan order within a shell
              if (shell_of.size() < 2 * ncand + 32) shell_of.resize(2 * ncand + 32);
              mine.resize(base + ncand + 16);  // room for whole vectors past the row (shell_partition)
              shell_partition(isa, cand.data(), cand_r2.data(), static_cast<int>(ncand), rank_to_local, inv_rl,
                              mine.data() + base, shell_end_.data() + static_cast<std::size_t>(slot) * kShells,
                              shell_of.data());
              mine.resize(base + ncand);
            } else if (!id_order) {
              for (auto it = first; it != last; ++it) *out++ = rank_to_local[*it];
            } else if (w1 - w0 < 4 * static_cast<int>(ncand)) {
              std::uint64_t* const bm = bitmap.data();
              for (auto it = first; it != last; ++it) bm[*it >> 6] |= std::uint64_t{1} << (*it & 63);
              for (int w = w0; w <= w1; ++w) {
                std::uint64_t bits = bm[w];
                bm[w] = 0;
                while (bits) {
                  *out++ = rank_to_local[w * 64 + __builtin_ctzll(bits)];
                  bits &= bits - 1;
                }
              }
            } else {
              std::sort(first, last);
              for (auto it = first; it != last; ++it) *out++ = rank_to_local[*it];
            }
            if (half && !ghost_slots) {  // each pair on one rank only: twice, once for each atom
              entries_int += 2 * static_cast<std::int64_t>(ncand);
            } else if (half) {  // full-list entries: each pair once for each of its owned atoms
              std::int64_t e = 0;
              for (std::size_t q = base; q < mine.size(); ++q) e += own_i + (mine[q] < nown);
              entries_int += e;
            } else {
              entries_int += static_cast<std::int64_t>(ncand);
            }
          }
          counts_per_atom[static_cast<std::size_t>(slot)] = static_cast<std::int64_t>(ncand);
        }
      }
      entries[t] = static_cast<double>(entries_int);
    } catch (...) {
#pragma omp critical(cumulus_neighbor_failure)
      if (!failure) failure = std::current_exception();
    }
    if (failure) std::rethrow_exception(failure);
    tpairs_region.reset();
    tph = std::make_unique<ScopedTimer>("md.neighbor_build.copy");
    std::size_t npairs = 0;
    for (const auto& p : part) npairs += p.size();
    std::vector<std::int64_t> start(static_cast<std::size_t>(nslots) + 1, 0);
    for (int i = 0; i < nslots; ++i)
      start[static_cast<std::size_t>(i) + 1] = start[static_cast<std::size_t>(i)] + counts_per_atom[static_cast<std::size_t>(i)];
    nslots_ = nslots;
    // The half-list force loop adds every pair's term to both atoms, ghosts too (no branch on the
    // partner being owned, which mispredicts where ghosts and owned atoms interleave in id order):
    // force, energy and virial arrays hold a scratch entry for every ghost.
    // (MdAtoms::fit_scratch gives them that room after the build.)
    if (half_) {
      fit(ex, order_, static_cast<std::size_t>(std::max(nlocal, 1)));
      if (nlocal > 0) std::memcpy(order_.data(), by_rank.data(), sizeof(int) * static_cast<std::size_t>(nlocal));
    }
    // The list on the backend (grown as needed: never a dropped pair).
    const Backend where = ex.backend();
    if (nbr_.size() < npairs || nbr_.size() == 0) nbr_ = Buffer<int>(where, std::max<std::size_t>(npairs + npairs / 4, 1));
    // The blocks' parts, joined in block order straight into the list's buffer (on the host by
    // the threads: the copy was 1.6 % of a water step at two threads, serial).
    std::vector<std::size_t> at(part.size() + 1, 0);
    for (std::size_t t = 0; t < part.size(); ++t) at[t + 1] = at[t] + part[t].size();
    if (where == Backend::host) {
      int* const into = nbr_.data();
#pragma omp parallel for num_threads(nthreads) schedule(dynamic, 1)
      for (std::size_t t = 0; t < part.size(); ++t)
        if (!part[t].empty()) std::memcpy(into + at[t], part[t].data(), part[t].size() * sizeof(int));
    } else {
      for (std::size_t t = 0; t < part.size(); ++t)
        if (!part[t].empty()) memory::copy(ex, where, nbr_.data() + at[t], Backend::host, part[t].data(), part[t].size() * sizeof(int));
    }
    if (keep_host_) {  // host-side computes (the radial distribution function) read the list there
      host_list_.clear();
      for (const auto& p : part) host_list_.insert(host_list_.end(), p.begin(), p.end());
      host_start_ = start;
      host_order_ = half_ ? by_rank : std::vector<int>();
    }
    fit(ex, start_, start.size());
    memory::copy(ex, where, start_.data(), Backend::host, start.data(), start.size() * sizeof(std::int64_t));
    pairs_ = 0;
    for (double e : entries) pairs_ += e;
    ++builds_;
  }

 private:
  std::vector<ListPart> parts_;  // each block's share of the list (capacity kept)
};
}  // namespace

std::unique_ptr<NeighborList> make_host_neighbor_list(const Exec& ex) { return std::make_unique<HostNeighborList>(ex); }

}  // namespace cumulus::md
