// Kernel bodies of lj/cut/coul/long and coul/long in mixed precision (md.precision = "mixed"; one
// source per backend pass: core/kernel_pass.hpp): pair_lj_cut_coul_long.hpp says what is fp32 and
// what fp64. Each pair's terms (its force components fp32 products, its energy and virial fp64) are
// rounded once to fixed point and summed as integers
// (fixed_point.hpp), so the sums do not depend on the order of the pairs: the host's half list
// serves any number of threads (each pair once, its partner's share in the thread's own arrays),
// the full list and CUDA give the same bits, and so does every rank count.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <vector>
#if !defined(__CUDACC__)
#include <omp.h>
#endif

#include "core/macros.hpp"
#include "solvers/md/fixed_point.hpp"
#include "solvers/md/pair_host_simd.hpp"
#include "solvers/md/pair_lj_cut_coul_long.hpp"
#include "solvers/md/pair_mixed_simd.hpp"
#include "solvers/md/pair_mixed_simd512.hpp"

namespace cumulus::md {
namespace coul_mixed_kernels::CUMULUS_PASS {

namespace {

// One pair (i, j) at special level `level`: the fp32 separation and terms, returned in fp64 (exact
// conversions) for the caller's fp64 products and sums. Antisymmetric in (i, j) bit for bit (the
// minimum image and the rounding to fp32 are), so the half list's partner gets the exact negative.
struct MixedPair {
  double dx, dy, dz, r2;
  CoulTerms t;
};
CUMULUS_HD inline MixedPair mixed_pair(const Atoms& a, const LjTable32& lj, const CoulParams32& p, int i, int j, int level) {
  const float dx = separation32(a.x[i], a.x[j], a.box[0]);
  const float dy = separation32(a.y[i], a.y[j], a.box[1]);
  const float dz = separation32(a.z[i], a.z[j], a.box[2]);
  const float r2 = dx * dx + dy * dy + dz * dz;
  const float qq = p.qqr2e * (static_cast<float>(a.q[i]) * static_cast<float>(a.q[j]));
  const LjCoefficients32& c = lj.c[lj.ntypes == 1 ? 0 : a.type[i] * lj.ntypes + a.type[j]];
  float f, ev, ec, ek;
  coul_pair_tabulated(p, c, r2, qq, p.special_coul[level], p.special_lj[level], p.lj, &f, &ev, &ec, &ek);
  MixedPair m;
  m.dx = dx;
  m.dy = dy;
  m.dz = dz;
  m.r2 = r2;
  m.t.fpair = f;
  m.t.evdwl = ev;
  m.t.ecoul = ec;
  m.t.ecorr = ek;
  return m;
}

CUMULUS_HD inline double share(int which, const MixedPair& m) {
  const double f = m.t.fpair;
  switch (which) {
    case 0:
      return m.dx * m.dx * f;
    case 1:
      return m.dy * m.dy * f;
    case 2:
      return m.dz * m.dz * f;
    case 3:
      return m.dx * m.dy * f;
    case 4:
      return m.dx * m.dz * f;
    case 5:
      return m.dy * m.dz * f;
    case 6:
      return m.t.evdwl;
    case 7:
      return m.t.ecoul;
    default:
      return m.t.ecorr;
  }
}

// One pair's terms in fixed-point units: the force components dx F/r (fp32 products), and with
// `energy` the energy (fp64 sum of the three fp32 terms) and the virial r^2 F/r (an exact fp64
// product). bad: bit 0 a force term out of range (or NaN), bit 1 an energy or virial term.
CUMULUS_HD inline double product32(double d, double f) { return static_cast<float>(d) * static_cast<float>(f); }
struct FixedTerms {
  std::int64_t f[3] = {0, 0, 0}, e = 0, v = 0;
  int bad = 0;
};
CUMULUS_HD inline FixedTerms fixed_terms(const MixedPair& m, bool energy) {
  FixedTerms u;
  const double f = m.t.fpair;
  // Every conversion runs (no short circuit): each writes its term.
  const bool okx = fixed::units(product32(m.dx, f), &u.f[0]), oky = fixed::units(product32(m.dy, f), &u.f[1]),
             okz = fixed::units(product32(m.dz, f), &u.f[2]);
  u.bad = okx && oky && okz ? 0 : 1;
  if (energy) {
    const bool oke = fixed::units(m.t.evdwl + m.t.ecoul + m.t.ecorr, &u.e), okv = fixed::units(m.r2 * f, &u.v);
    if (!(oke && okv)) u.bad |= 2;
  }
  return u;
}

}  // namespace

#if !defined(__CUDACC__) && defined(__x86_64__)
// The host's loop by hand in AVX2, 8 fp32 lanes: mixed_pair's operations in its order, lane by
// lane, so the same bits as the generic loop (which GCC 12 does not vectorise: its gathers). Two
// passes over a chunk of atom i's list: (1) every entry's separation (separation32, from the packed
// fp32 rows) and r^2, the pairs whose r^2 is below the largest cutoff (or NaN) kept in list order
// with their separations, r^2 and charges (about 60 % of a list with a 2 A skin); (2) the kept
// pairs' terms in fp32 and in fixed-point units (fixed_terms'). A pair dropped has zero terms
// (r^2 at or beyond every cutoff), which change no sum. AVX2 rather than AVX-512: every x86-64 machine this runs on has it (AVX-512's 16 lanes
// are the next step), and the tests check its bits wherever they run.
namespace {
constexpr int kChunk = 256;  // a multiple of 16; 256 rather than 64: see the double loop's kChunk
int chunk_len = kChunk;      // this force call's (pair_simd::chunk_entries), set by pack_rows
bool use_avx512 = false;     // mixed_chunk_avx512 rather than mixed_chunk_avx2, set by pack_rows
// A chunk's kept partners (their fp32 separations, r^2 and charges), their terms in fixed-point
// units (fixed_terms'), and per-partner flags when a term was out of range (filled only then, by
// the scalar path).
struct alignas(64) MixedChunk {
  // j and type: room for the type gather's and the padding's whole vectors past the kept count
  int j[kChunk + 16], level[kChunk], type[kChunk + 16];
  float dx[kChunk], dy[kChunk], dz[kChunk], r2[kChunk], qj[kChunk];
  std::int64_t f[3][kChunk], e[kChunk], v[kChunk];
  int bad[kChunk];
  float tf[kChunk], tev[kChunk], tec[kChunk], tek[kChunk];  // with the energy: F/r and the three energies
};
// The local atoms' fp32 rows (x, y, z, charge: separation32's coordinates and mixed_pair's
// charges) and the box in fp32 for tb, in the calling thread's buffer (kept between calls).
void pack_rows(const Atoms& a, mixed_simd::Tables& tb) {
  chunk_len = pair_simd::chunk_entries(kChunk);
  static const bool avx512 = mixed_simd512::has_avx512_mixed();
  use_avx512 = avx512 && std::getenv("CUMULUS_HOST_AVX2") == nullptr;
  thread_local std::vector<float> buf;
  const std::size_t n = static_cast<std::size_t>(a.nlocal > a.n ? a.nlocal : a.n);
  buf.resize(4 * n + 16);
  float* const f0 = buf.data() + (16 - (reinterpret_cast<std::uintptr_t>(buf.data()) / sizeof(float)) % 16) % 16;
  for (std::size_t k = 0; k < n; ++k) {
    float* const f = f0 + 4 * k;
    f[0] = static_cast<float>(a.x[k]), f[1] = static_cast<float>(a.y[k]), f[2] = static_cast<float>(a.z[k]);
    f[3] = static_cast<float>(a.q[k]);
  }
  tb.xyzq = f0;
  for (int d = 0; d < 3; ++d) tb.box[d] = static_cast<float>(a.box[d]);
}
// The AVX2 loop where the CPU has it (CUMULUS_NO_AVX512 in the environment, as for the double
// path's hand-written loop: the generic loops; the tests compare the two).
bool mixed_simd() {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2 && !std::getenv("CUMULUS_NO_AVX512");
}

// The padding lanes' separations (atom i itself, beyond every cutoff: zero terms) and the kept
// partners' special levels, for both hand-written loops: each of i's few special partners found
// among the kept ones by its local index (Atoms::special_local: a compare over the chunk, which the
// compiler vectorises), or else by its id (a compare of each kept partner's; either way in any
// order of the list: ForceTerm::needs_id_order). A cursor walked along the chunk (the double
// loops' SpecialCursor) needs the partners in id order, and ran until it passed i's last special
// partner: most of a list whose partners' ids start below i's (the spatial half list's,
// NeighborList::allow_either_slot), about 5 % of a step.
__attribute__((always_inline)) inline void pad_and_levels(const Atoms& a, int i, float reach2, int mc, int mp, MixedChunk& c) {
  for (int k = mc; k < mp; ++k) {
    c.dx[k] = c.dy[k] = c.dz[k] = c.qj[k] = 0;
    c.r2[k] = 2 * reach2 + 1;
  }
  for (int k = 0; k < mp; ++k) c.level[k] = 0;
  for (int s = 0; s < a.nspecial; ++s) {
    const std::int64_t v = a.special[s][i];
    if (v < 0) continue;
    const int level = static_cast<int>(v & 3);
    if (a.special_local) {
      const int l = a.special_local[static_cast<std::size_t>(s) * static_cast<std::size_t>(a.nlocal) + static_cast<std::size_t>(i)];
      if (l < 0) continue;  // not on this rank: not a partner here
      for (int k = 0; k < mc; ++k) c.level[k] = c.j[k] == l ? level : c.level[k];
    } else {
      const std::int64_t id = v >> 2;
      for (int k = 0; k < mc; ++k) c.level[k] = a.id[c.j[k]] == id ? level : c.level[k];
    }
  }
}

// How much of each row of the host builder's half list the hand-written loops take this force
// call (Atoms::shells): a pair of a shell that starts at least reach + 2 d beyond its atoms, where
// d is the largest displacement of a local atom since the build, is still beyond reach (the
// triangle inequality on the periodic box's distance): its terms are zeros, and the shell is left
// out; a pair of a shell that ends 2 d within reach is surely within it, and the shell is taken
// without the first pass's test. Rows are taken whole where the box changed since the build (a
// barostat) or the loops have no shells. Zero terms left out or computed change no sum, so the
// same bits either way (tests: PairCoulLong.MixedShellsLeaveTheBits).
struct ShellCut {
  int keep = ListShells::kCount, sure = 0;  // shells [0, keep) taken, [0, sure) without the test
  bool on = false;
};
ShellCut shell_cut(const Atoms& a, float reach2) {
  ShellCut cut;
  const ListShells& sh = a.shells;
  if (!sh.end || sh.nlocal != a.nlocal || std::getenv("CUMULUS_NO_SHELLS")) return cut;
  for (int d = 0; d < 3; ++d)
    if (sh.box[d] != a.box[d]) return cut;
  // d^2 and the largest coordinate over the local atoms, threaded (it was serial: 0.3 % of a
  // step's samples on two threads); a coordinate not finite takes whole rows (their terms mark it).
  double d2 = 0, big = 0;
  bool finite = true;
#pragma omp parallel
  {
    double d2t = 0, bigt = 0;
    bool ft = true;
#pragma omp for schedule(static) nowait
    for (int k = 0; k < a.nlocal; ++k) {
      const double* const x0 = sh.x0 + 3 * static_cast<std::size_t>(k);
      const double dx = minimum_image(a.x[k] - x0[0], a.box[0]), dy = minimum_image(a.y[k] - x0[1], a.box[1]),
                   dz = minimum_image(a.z[k] - x0[2], a.box[2]);
      const double r2 = dx * dx + dy * dy + dz * dz;
      const double m = std::max(std::fabs(a.x[k]), std::max(std::fabs(a.y[k]), std::fabs(a.z[k])));
      if (!std::isfinite(r2) || !std::isfinite(m)) ft = false;
      d2t = std::max(d2t, r2);
      bigt = std::max(bigt, m);
    }
#pragma omp critical(cumulus_shell_cut)
    {
      d2 = std::max(d2, d2t);
      big = std::max(big, bigt);
      finite = finite && ft;
    }
  }
  if (!finite) return cut;
  // Margins far above the roundings: of the distances (fp64); of separation32 against the true
  // separation (per component, the coordinates' roundings, the difference's, L's and the image's:
  // within 2^-24 (4 X + 1.5 L) for coordinates up to X, so the vector within sqrt(3) 2^-23 (2 X +
  // L)); and of fp32 r^2 against reach2 (a pair whose fp32 r^2 is at least reach2 has zero terms;
  // an fp32 separation a millionth beyond its root gives such an r^2).
  const double L = std::max(a.box[0], std::max(a.box[1], a.box[2]));
  const double reach = std::sqrt(static_cast<double>(reach2)), slack = 2 * std::sqrt(d2) + 1e-9 * sh.reach;
  const double fp32 = 1.8 * 0x1p-23 * (2 * big + L);
  cut.keep = ListShells::kCount;
  for (int k = 1; k < ListShells::kCount; ++k)
    if (ListShells::edge(k - 1, sh.reach) * (1 - 1e-12) - slack - fp32 >= reach * (1 + 1e-6)) {
      cut.keep = k;
      break;
    }
  cut.sure = 0;
  for (int k = 0; k + 1 < ListShells::kCount && ListShells::edge(k, sh.reach) + slack <= reach; ++k) cut.sure = k + 1;
  cut.sure = std::min(cut.sure, cut.keep);
  cut.on = true;
  return cut;
}
// Slot s's row as the loops take it: its first n entries, the first n_sure without the test.
inline void row_span(const Atoms& a, const ShellCut& cut, int s, std::int64_t& n, std::int64_t& n_sure) {
  n = a.start[s + 1] - a.start[s];
  n_sure = 0;
  if (!cut.on) return;
  const int* const end = a.shells.end + static_cast<std::size_t>(s) * ListShells::kCount;
  n = end[cut.keep - 1];
  n_sure = cut.sure > 0 ? end[cut.sure - 1] : 0;
}

CUMULUS_SIMD_WARNINGS_OFF  // core/macros.hpp
// The first pass over atom i's list entries nb[0 .. m) (m <= kChunk), 8 at a time: each entry's
// separation as separation32 computes it (tb's fp32 rows; the image by two compares, as
// minimum_image) and r^2 as mixed_pair sums it; the entries whose r^2 is not at or beyond tb.reach2
// (NaN kept), and all of the first m_sure (a row's near shells: ListShells), compacted in list order
// into c: partner, separation, r^2 and charge. Each compacted vector is stored whole at the count
// kept so far, at most the entry it came from: the stores end within m rounded up to 8. Returns how
// many were kept.
__attribute__((target("avx2"))) inline int separations8(const mixed_simd::Tables& tb, int i, const int* nb, int m, int m_sure,
                                                        MixedChunk& c) {
  const float* const rows = tb.xyzq;
  __m256 ci[3], L[3], h[3], mh[3];
  for (int d = 0; d < 3; ++d) {
    ci[d] = _mm256_set1_ps(rows[4 * static_cast<std::ptrdiff_t>(i) + d]);
    L[d] = _mm256_set1_ps(tb.box[d]);
    h[d] = _mm256_set1_ps(0.5f * tb.box[d]);
    mh[d] = _mm256_set1_ps(-(0.5f * tb.box[d]));
  }
  const __m256 reach2 = _mm256_set1_ps(tb.reach2);
  alignas(32) int tail[8];
  int mc = 0;
  for (int q = 0; q < m; q += 8) {
    const int live = m - q < 8 ? m - q : 8;
    const int* const jj = pair_simd::entries8(nb, q, m, tail);
    __m256 pos[4];  // x, y, z, charge
    pair_simd::rows8(rows, jj, pos);
    __m256 dv[3];
    for (int d = 0; d < 3; ++d) {
      const __m256 x = _mm256_sub_ps(ci[d], pos[d]);
      const __m256 gt = _mm256_cmp_ps(x, h[d], _CMP_GT_OQ), lt = _mm256_cmp_ps(x, mh[d], _CMP_LT_OQ);
      dv[d] = _mm256_blendv_ps(_mm256_blendv_ps(x, _mm256_add_ps(x, L[d]), lt), _mm256_sub_ps(x, L[d]), gt);
    }
    const __m256 r2 = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(dv[0], dv[0]), _mm256_mul_ps(dv[1], dv[1])), _mm256_mul_ps(dv[2], dv[2]));
    const int sure = m_sure - q >= 8 ? 0xFF : (m_sure > q ? (1 << (m_sure - q)) - 1 : 0);
    const int keep = (_mm256_movemask_ps(_mm256_cmp_ps(r2, reach2, _CMP_NGE_UQ)) | sure) & ((1 << live) - 1);
    const __m256i perm = _mm256_load_si256(reinterpret_cast<const __m256i*>(pair_simd::kCompact8.idx[keep]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c.j + mc),
                        _mm256_permutevar8x32_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(jj)), perm));
    float* const out[5] = {c.dx + mc, c.dy + mc, c.dz + mc, c.r2 + mc, c.qj + mc};
    const __m256 val[5] = {dv[0], dv[1], dv[2], r2, pos[3]};
    for (int w = 0; w < 5; ++w) _mm256_storeu_ps(out[w], _mm256_permutevar8x32_ps(val[w], perm));
    mc += __builtin_popcount(static_cast<unsigned>(keep));
  }
  return mc;
}

// separations8 on 16 lanes (AVX-512F): the same operations, so the same values and pairs kept,
// compacted by one compress each (in registers: the compress to memory is microcoded on Zen 4).
CUMULUS_AVX512_MIXED inline int separations16(const mixed_simd::Tables& tb, int i, const int* nb, int m, int m_sure,
                                                             MixedChunk& c) {
  const float* const rows = tb.xyzq;
  __m512 ci[3], L[3], h[3], mh[3];
  for (int d = 0; d < 3; ++d) {
    ci[d] = _mm512_set1_ps(rows[4 * static_cast<std::ptrdiff_t>(i) + d]);
    L[d] = _mm512_set1_ps(tb.box[d]);
    h[d] = _mm512_set1_ps(0.5f * tb.box[d]);
    mh[d] = _mm512_set1_ps(-(0.5f * tb.box[d]));
  }
  const __m512 reach2 = _mm512_set1_ps(tb.reach2);
  int mc = 0;
  for (int q = 0; q < m; q += 16) {
    const __mmask16 live = m - q >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (m - q)) - 1u);
    const __m512i jv = _mm512_maskz_loadu_epi32(live, nb + q);  // dead lanes: atom 0, not kept
    alignas(64) int jj[16];
    _mm512_store_si512(jj, jv);
    __m512 pos[4];  // x, y, z, charge
    mixed_simd512::rows16(rows, jj, pos);
    __m512 dv[3];
    for (int d = 0; d < 3; ++d) {
      const __m512 x = _mm512_sub_ps(ci[d], pos[d]);
      const __mmask16 gt = _mm512_cmp_ps_mask(x, h[d], _CMP_GT_OQ), lt = _mm512_cmp_ps_mask(x, mh[d], _CMP_LT_OQ);
      dv[d] = _mm512_mask_add_ps(_mm512_mask_sub_ps(x, gt, x, L[d]), lt, x, L[d]);
    }
    const __m512 r2 = _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(dv[0], dv[0]), _mm512_mul_ps(dv[1], dv[1])), _mm512_mul_ps(dv[2], dv[2]));
    const __mmask16 sure = m_sure - q >= 16 ? __mmask16(0xFFFF) : (m_sure > q ? __mmask16((1u << (m_sure - q)) - 1u) : __mmask16(0));
    const __mmask16 keep = live & (sure | _mm512_cmp_ps_mask(r2, reach2, _CMP_NGE_UQ));
    _mm512_storeu_si512(c.j + mc, _mm512_maskz_compress_epi32(keep, jv));
    float* const out[5] = {c.dx + mc, c.dy + mc, c.dz + mc, c.r2 + mc, c.qj + mc};
    const __m512 val[5] = {dv[0], dv[1], dv[2], r2, pos[3]};
    for (int w = 0; w < 5; ++w) _mm512_storeu_ps(out[w], _mm512_maskz_compress_ps(keep, val[w]));
    mc += __builtin_popcount(static_cast<unsigned>(keep));
  }
  return mc;
}

// Atom i's partners nb[0 .. m) (m <= kChunk): keeps those within tb.reach2 (see above) and puts their
// terms into c.f, c.e, c.v in list order. Returns how many were kept (partners in c.j, levels in
// c.level), and in *bad fixed_terms' bad bits over the lanes (then the values of the bad lanes are
// not fixed_terms': the caller redoes the kept pairs by scalar). The partners' coordinates and
// charges come from tb's packed fp32 rows, loaded whole and transposed rather than gathered (a
// gather of 8 lanes costs about as much as 8 loads on the Zen 3 this was measured on).
__attribute__((target("avx2"))) int mixed_chunk_avx2(int m, const int* nb, const Atoms& a, const LjTable32& lj, const CoulParams32& p, const mixed_simd::Tables& tb,
                                                      int i, bool energy, int m_sure, MixedChunk& c, int* bad) {
  using namespace mixed_simd;
  // (1) every entry's separation and r^2; those that may have terms kept (separations8).
  const bool several_types = lj.ntypes > 1;
  // The row's LJ part, unless all of it is +0 (water's hydrogens): only then are types read.
  const bool row_lj = p.lj && !(lj.ntypes <= 8 && tb.no_lj[lj.ntypes == 1 ? 0 : a.type[i]]);
  const int mc = separations8(tb, i, nb, m, m_sure, c);
  *bad = 0;
  if (mc == 0) return 0;
  if (several_types && row_lj)
    for (int k = 0; k < mc; ++k) c.type[k] = a.type[c.j[k]];
  // Padding to whole pairs of 8-lane groups: atom i itself beyond every cutoff (zero terms).
  const int mp = (mc + 15) / 16 * 16;
  for (int k = mc; k < mp; ++k) {
    c.j[k] = i;
    c.type[k] = several_types ? a.type[i] : 0;
  }
  pad_and_levels(a, i, tb.reach2, mc, mp, c);
  // (2) terms
  const __m256 qi = _mm256_set1_ps(static_cast<float>(a.q[i]));
  const bool one_type = lj.ntypes == 1, few_types = !one_type && lj.ntypes <= 8;
  const int ti = one_type ? 0 : a.type[i];
  Consts kc = consts(p, tb);
  kc.lj = p.lj && !(lj.ntypes <= 8 && tb.no_lj[ti]);  // this row's LJ part, unless all of it is +0
  const float* const row = &lj.c[ti * lj.ntypes].cut2;  // 6 floats per partner type
  __m256 rowv[6];
  if (few_types) lj_rows(tb, ti, rowv);
  const int nfields = energy ? 6 : 3;  // the energy's fields only when it is wanted
  __m256d ok_f = _mm256_castsi256_pd(_mm256_set1_epi64x(-1)), ok_e = ok_f;
  // Two groups of 8 lanes at a time (terms<2>: their chains interleave).
  constexpr int G = 2;
  for (int q0 = 0; q0 < mp; q0 += 8 * G) {
    __m256 dv[G][3], r2[G], qq[G], lc[G][6];
    __m256i lev[G];
    for (int g = 0; g < G; ++g) {
      const int q = q0 + 8 * g;
      dv[g][0] = _mm256_load_ps(c.dx + q);
      dv[g][1] = _mm256_load_ps(c.dy + q);
      dv[g][2] = _mm256_load_ps(c.dz + q);
      r2[g] = _mm256_load_ps(c.r2 + q);
      qq[g] = _mm256_mul_ps(kc.qqr2e, _mm256_mul_ps(qi, _mm256_load_ps(c.qj + q)));
      lev[g] = _mm256_load_si256(reinterpret_cast<const __m256i*>(c.level + q));
      if (kc.lj) {
        if (one_type) {
          for (int w = 0; w < nfields; ++w) lc[g][w] = _mm256_set1_ps(row[w]);
        } else if (few_types) {
          const __m256i tj = _mm256_load_si256(reinterpret_cast<const __m256i*>(c.type + q));
          for (int w = 0; w < nfields; ++w) lc[g][w] = _mm256_permutevar8x32_ps(rowv[w], tj);
        } else {
          const __m256i t6 = _mm256_mullo_epi32(_mm256_load_si256(reinterpret_cast<const __m256i*>(c.type + q)), _mm256_set1_epi32(6));
          for (int w = 0; w < nfields; ++w) lc[g][w] = _mm256_i32gather_ps(row, _mm256_add_epi32(t6, _mm256_set1_epi32(w)), 4);
        }
      }
    }
    Terms t[G];
    terms<G>(kc, r2, qq, lev, lc, energy, t);
    for (int g = 0; g < G; ++g) {
      const int q = q0 + 8 * g;
      Fixed u;
      to_fixed(t[g], dv[g][0], dv[g][1], dv[g][2], r2[g], energy, u, ok_f, ok_e);
      for (int w = 0; w < 3; ++w)
        for (int hh = 0; hh < 2; ++hh) _mm256_store_si256(reinterpret_cast<__m256i*>(c.f[w] + q + 4 * hh), u.f[w][hh]);
      if (energy) {
        for (int hh = 0; hh < 2; ++hh) {
          _mm256_store_si256(reinterpret_cast<__m256i*>(c.e + q + 4 * hh), u.e[hh]);
          _mm256_store_si256(reinterpret_cast<__m256i*>(c.v + q + 4 * hh), u.v[hh]);
        }
        // The terms apart, for coul_sums_half_mixed.
        _mm256_store_ps(c.tf + q, t[g].f);
        _mm256_store_ps(c.tev + q, t[g].evdwl);
        _mm256_store_ps(c.tec + q, t[g].ecoul);
        _mm256_store_ps(c.tek + q, t[g].ecorr);
      }
    }
  }
  *bad = (_mm256_movemask_pd(ok_f) == 0xf ? 0 : 1) | (_mm256_movemask_pd(ok_e) == 0xf ? 0 : 2);
  return mc;
}

// mixed_chunk_avx2 in AVX-512 where the CPU has it (mixed_simd512::has_avx512_mixed; not with
// CUMULUS_HOST_AVX2, which the tests set to compare the two): the first pass (separations16) and
// the terms and their fixed-point units 16 fp32 lanes at a time (one group: two, as the AVX2 loop interleaves, spilled 168 vector registers
// against 92 and measured 5 % slower on Zen 4). The same operations in the same order per lane, so
// the same bits.
CUMULUS_AVX512_MIXED int mixed_chunk_avx512(int m, const int* nb, const Atoms& a, const LjTable32& lj,
                                            const CoulParams32& p, const mixed_simd::Tables& tb, int i,
                                            bool energy, int m_sure, MixedChunk& c, int* bad) {
  namespace v16 = mixed_simd512;
  const bool several_types = lj.ntypes > 1;
  // The row's LJ part, unless all of it is +0 (water's hydrogens): only then are types read.
  const bool row_lj = p.lj && !(lj.ntypes <= 8 && tb.no_lj[lj.ntypes == 1 ? 0 : a.type[i]]);
  const int mc = separations16(tb, i, nb, m, m_sure, c);
  *bad = 0;
  if (mc == 0) return 0;
  if (several_types && row_lj)  // the kept partners' types, 16 by a gather (c.type has room)
    for (int q = 0; q < mc; q += 16) {
      const __mmask16 live = mc - q >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (mc - q)) - 1u);
      _mm512_storeu_si512(c.type + q, _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), live, _mm512_loadu_si512(c.j + q), a.type, 4));
    }
  // Padding to whole 16-lane groups: atom i itself beyond every cutoff (zero terms).
  constexpr int G = 1;
  const int mp = (mc + 16 * G - 1) / (16 * G) * (16 * G);
  for (int k = mc; k < mp; ++k) {
    c.j[k] = i;
    c.type[k] = several_types ? a.type[i] : 0;
  }
  pad_and_levels(a, i, tb.reach2, mc, mp, c);
  // The terms.
  const __m512 qi = _mm512_set1_ps(static_cast<float>(a.q[i]));
  const bool one_type = lj.ntypes == 1, few_types = !one_type && lj.ntypes <= 8;
  const int ti = one_type ? 0 : a.type[i];
  v16::Consts kc = v16::consts(p, tb);
  kc.lj = p.lj && !(lj.ntypes <= 8 && tb.no_lj[ti]);  // this row's LJ part, unless all of it is +0
  const float* const row = &lj.c[ti * lj.ntypes].cut2;  // 6 floats per partner type
  __m512 rowv[6];
  if (few_types)
    for (int w = 0; w < 6; ++w) rowv[w] = v16::low8(tb.rows[ti][w]);
  const int nfields = energy ? 6 : 3;
  __mmask8 ok_f = 0xFF, ok_e = 0xFF;
  for (int q0 = 0; q0 < mp; q0 += 16 * G) {
    __m512 dv[G][3], r2[G], qq[G], lc[G][6];
    __m512i lev[G];
    for (int g = 0; g < G; ++g) {
      const int q = q0 + 16 * g;
      dv[g][0] = _mm512_load_ps(c.dx + q);
      dv[g][1] = _mm512_load_ps(c.dy + q);
      dv[g][2] = _mm512_load_ps(c.dz + q);
      r2[g] = _mm512_load_ps(c.r2 + q);
      qq[g] = _mm512_mul_ps(kc.qqr2e, _mm512_mul_ps(qi, _mm512_load_ps(c.qj + q)));
      lev[g] = _mm512_load_si512(c.level + q);
      if (kc.lj) {
        if (one_type) {
          for (int w = 0; w < nfields; ++w) lc[g][w] = _mm512_set1_ps(row[w]);
        } else if (few_types) {
          const __m512i tj = _mm512_load_si512(c.type + q);
          for (int w = 0; w < nfields; ++w) lc[g][w] = _mm512_permutexvar_ps(tj, rowv[w]);
        } else {
          const __m512i t6 = _mm512_mullo_epi32(_mm512_load_si512(c.type + q), _mm512_set1_epi32(6));
          for (int w = 0; w < nfields; ++w) lc[g][w] = _mm512_i32gather_ps(_mm512_add_epi32(t6, _mm512_set1_epi32(w)), row, 4);
        }
      }
    }
    v16::Terms t[G];
    v16::terms<G>(kc, r2, qq, lev, lc, energy, t);
    for (int g = 0; g < G; ++g) {
      const int q = q0 + 16 * g;
      v16::Fixed u;
      v16::to_fixed(t[g], dv[g][0], dv[g][1], dv[g][2], r2[g], energy, u, ok_f, ok_e);
      for (int w = 0; w < 3; ++w)
        for (int hh = 0; hh < 2; ++hh) _mm512_store_si512(c.f[w] + q + 8 * hh, u.f[w][hh]);
      if (energy) {
        for (int hh = 0; hh < 2; ++hh) {
          _mm512_store_si512(c.e + q + 8 * hh, u.e[hh]);
          _mm512_store_si512(c.v + q + 8 * hh, u.v[hh]);
        }
        _mm512_store_ps(c.tf + q, t[g].f);
        _mm512_store_ps(c.tev + q, t[g].evdwl);
        _mm512_store_ps(c.tec + q, t[g].ecoul);
        _mm512_store_ps(c.tek + q, t[g].ecorr);
      }
    }
  }
  *bad = (ok_f == 0xFF ? 0 : 1) | (ok_e == 0xFF ? 0 : 2);
  return mc;
}

CUMULUS_SIMD_WARNINGS_ON

// The chunk's terms lane by lane by the generic path (fixed_terms), with each lane's bad bits: the
// rare chunk in which a term was out of range.
int chunk_scalar(int m, const Atoms& a, const LjTable32& lj, const CoulParams32& p, int i, bool energy, MixedChunk& c) {
  int bad = 0;
  for (int k = 0; k < m; ++k) {
    const FixedTerms u = fixed_terms(mixed_pair(a, lj, p, i, c.j[k], c.level[k]), energy);
    for (int w = 0; w < 3; ++w) c.f[w][k] = u.f[w];
    c.e[k] = u.e;
    c.v[k] = u.v;
    c.bad[k] = u.bad;
    bad |= u.bad;
  }
  return bad;
}

// Atom i's pairs nb[0 .. n) a chunk at a time: calls add(c, m, bad) with each chunk's m kept pairs (bad:
// some c.bad[k] are set; otherwise c.bad is not read).
// The first n_sure entries are taken without the first pass's test (row_span).
template <class Add>
void mixed_pairs(const Atoms& a, const LjTable32& lj, const CoulParams32& p, const mixed_simd::Tables& tb, int i,
                 const int* nb, std::int64_t n, std::int64_t n_sure, MixedChunk& c, Add add) {
  for (std::int64_t k0 = 0; k0 < n; k0 += chunk_len) {
    const int len = static_cast<int>(n - k0 < chunk_len ? n - k0 : chunk_len);
    const int sure = static_cast<int>(std::clamp<std::int64_t>(n_sure - k0, 0, len));
    int bad = 0;
    const int kept = use_avx512 ? mixed_chunk_avx512(len, nb + k0, a, lj, p, tb, i, a.energy, sure, c, &bad)
                                : mixed_chunk_avx2(len, nb + k0, a, lj, p, tb, i, a.energy, sure, c, &bad);
    if (bad) bad = chunk_scalar(kept, a, lj, p, i, a.energy, c);
    add(c, kept, bad);
  }
}
}  // namespace
#endif

using fixed::store_sums;


// The full list, on either backend: each owned atom sums its own pairs.
void coul_forces_mixed(const Exec& ex, const Atoms& a, const LjTable32& lj, const CoulParams32& p, std::int64_t* rows) {
  const bool energy = a.energy;
#if !defined(__CUDACC__) && defined(__x86_64__)
  if (!ex.is_cuda() && mixed_simd()) {
    detail::KernelTimer<int> timer(ex, "md.forces");
    mixed_simd::Tables tb;
    tb.init(lj, p);
    pack_rows(a, tb);
#pragma omp parallel
    {
      MixedChunk c;
#pragma omp for schedule(static)
      for (int i = 0; i < a.n; ++i) {
        std::int64_t s[5] = {0, 0, 0, 0, 0};
        int bad = 0;
        mixed_pairs(a, lj, p, tb, i, a.neighbors + a.start[i], a.start[i + 1] - a.start[i], 0, c, [&](const MixedChunk& ch, int m, int b) {
          for (int w = 0; w < 3; ++w)
            for (int k = 0; k < m; ++k) s[w] += ch.f[w][k];
          if (energy)
            for (int k = 0; k < m; ++k) {
              s[3] += ch.e[k];
              s[4] += ch.v[k];
            }
          bad |= b;
        });
        store_sums(a, i, s, bad, energy);
      }
    }
    return;
  }
#endif
  // The generic loop (CUDA's; the host's without AVX2): each atom's partners shared out over
  // `split` threads, partner k to thread k mod split (on CUDA neighbouring threads, so that a warp's
  // list reads are runs of 32 bytes), each thread's integer sums added into the atom's row
  // atomically, then the rows stored. On a GPU one thread an atom would leave a liquid's 700-pair
  // loops to 24,000 threads: a tenth of an H200's, and each serial. The host splits in 2, for the
  // tests to see the split's bits (the same: integer sums). The rows are zero on entry (zero_rows
  // when made) and the pass that stores them clears them again: no pass of their own to zero them.
  const int split = ex.is_cuda() ? 8 : 2, n = a.n;
  for_each(ex, "md.forces", Box(0, 0, 0, split, n, 1), [=] CUMULUS_HD(int s, int i, int) {
    std::int64_t t[5] = {0, 0, 0, 0, 0};
    int bad = 0;
    for (std::int64_t k = a.start[i] + s; k < a.start[i + 1]; k += split) {
      const int j = a.neighbors[k];
      const FixedTerms u = fixed_terms(mixed_pair(a, lj, p, i, j, a.nspecial > 0 ? special_level(a, i, a.id[j]) : 0), energy);
      t[0] += u.f[0];
      t[1] += u.f[1];
      t[2] += u.f[2];
      t[3] += u.e;
      t[4] += u.v;
      bad |= u.bad;
    }
    fixed::add_row(rows, i, t, bad, energy);
  });
  for_each(ex, "md.forces", Box(0, 0, 0, n, 1, 1), [=] CUMULUS_HD(int i, int, int) {
    fixed::store_row(a, i, rows, energy);
    for (int w = 0; w < fixed::kRow; ++w) rows[static_cast<std::ptrdiff_t>(fixed::kRow) * i + w] = 0;
  });
}

void zero_rows(const Exec& ex, std::int64_t* rows, std::size_t n) {
  const int rows_of = 1024, nrows = static_cast<int>((n + rows_of - 1) / rows_of);  // past 2^31 entries too
  for_each(ex, "md.forces", Box(0, 0, 0, rows_of, nrows, 1), [=] CUMULUS_HD(int k, int r, int) {
    const std::size_t at = static_cast<std::size_t>(r) * rows_of + static_cast<std::size_t>(k);
    if (at < n) rows[at] = 0;
  });
}

#if !defined(__CUDACC__)
namespace {
// The half list's per-thread arrays, in units: for each local atom (owned and ghosts) a row of 4,
// its force components and its energy negated (fx, fy, fz, -e: a partner's four terms then take
// one subtraction, (fx, fy, fz, e) - (tx, ty, tz, te)), then a column of virials and one of bad
// bits. kPer int64 an atom; each thread's block 32-byte aligned.
constexpr int kPer = 6;
struct MixedAcc {
  std::int64_t* rows;  // 4 an atom
  std::int64_t* virial;
  std::int64_t* bad;
};
MixedAcc mixed_acc(std::int64_t* block, std::size_t nl) { return {block, block + 4 * nl, block + 5 * nl}; }

#if defined(__x86_64__)
// A chunk's m kept pairs into atom i's sums (si: x, y, z, energy) and its partners' rows: the
// terms transposed 4 pairs at a time from the chunk's columns into rows (fx, fy, fz, e), added to
// si and subtracted from each partner's row. Integers: the same sums in any grouping.
__attribute__((target("avx2"))) void add_chunk_rows(const MixedChunk& ch, int m, bool energy, std::int64_t* rows, std::int64_t* si) {
  __m256i s4 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(si));
  int k = 0;
  for (; k + 4 <= m; k += 4) {
    const __m256i x = _mm256_load_si256(reinterpret_cast<const __m256i*>(ch.f[0] + k));
    const __m256i y = _mm256_load_si256(reinterpret_cast<const __m256i*>(ch.f[1] + k));
    const __m256i z = _mm256_load_si256(reinterpret_cast<const __m256i*>(ch.f[2] + k));
    const __m256i e = energy ? _mm256_load_si256(reinterpret_cast<const __m256i*>(ch.e + k)) : _mm256_setzero_si256();
    __m256d rowd[4];
    pair_simd::columns_to_rows4(_mm256_castsi256_pd(x), _mm256_castsi256_pd(y), _mm256_castsi256_pd(z), _mm256_castsi256_pd(e), rowd);
    for (int l = 0; l < 4; ++l) {
      const __m256i row = _mm256_castpd_si256(rowd[l]);
      s4 = _mm256_add_epi64(s4, row);
      __m256i* const rj = reinterpret_cast<__m256i*>(rows + 4 * static_cast<std::size_t>(ch.j[k + l]));
      _mm256_store_si256(rj, _mm256_sub_epi64(_mm256_load_si256(rj), row));
    }
  }
  for (; k < m; ++k) {
    const __m256i row = _mm256_setr_epi64x(ch.f[0][k], ch.f[1][k], ch.f[2][k], energy ? ch.e[k] : 0);
    s4 = _mm256_add_epi64(s4, row);
    __m256i* const rj = reinterpret_cast<__m256i*>(rows + 4 * static_cast<std::size_t>(ch.j[k]));
    _mm256_store_si256(rj, _mm256_sub_epi64(_mm256_load_si256(rj), row));
  }
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(si), s4);
}
#endif
}  // namespace

// The half list, at any number of threads: each pair once, from either atom's slot (the slot of the
// smaller id, or the spatial half list's choice: NeighborList::allow_either_slot); both
// atoms' terms go to the arrays of the thread that computes it (the partner's the exact negative),
// and the threads' arrays are added at the end (integers: the same bits in any grouping). Ghost
// entries are scratch, or with a.fixed_rows their owners' shares (the rows go back to them).
//
// With `other` (ForceTerm::compute_with: the k-space into arrays of its own) at two threads, the
// calling thread runs it first and then joins the rows the other thread has been taking (the
// rows are taken as the threads come free): the k-space's serial parts (its halo's small copies,
// the FFT's) no longer leave a thread waiting, and its loops run on that one thread, nested
// regions of one. `other` (and MPI, if it calls any) stays on the calling thread, and writes none
// of the pair term's arrays. Elsewhere (one thread, a team of one, more than two threads:
// unmeasured) it runs after, on all of them; an exception from it reaches the caller.
void coul_forces_half_mixed(const Atoms& a, const LjTable32& lj, const CoulParams32& p, std::vector<std::int64_t>& scratch,
                            const std::function<void()>* other) {
  const int nthreads = omp_get_max_threads();
  const std::size_t nl = static_cast<std::size_t>(a.nlocal > a.n ? a.nlocal : a.n), per = (kPer * nl + 3) / 4 * 4;
  // The threads' arrays, from a 32-byte boundary.
  const std::size_t packed = per * static_cast<std::size_t>(nthreads);
  if (scratch.size() < packed + 4) scratch.resize(packed + 4);
  std::int64_t* const base = scratch.data() + (4 - (reinterpret_cast<std::uintptr_t>(scratch.data()) / sizeof(std::int64_t)) % 4) % 4;
  const bool energy = a.energy;
#if defined(__x86_64__)
  mixed_simd::Tables tb;
  tb.init(lj, p);
  pack_rows(a, tb);
  const ShellCut cut = shell_cut(a, tb.reach2);
#endif
  bool other_ran = other == nullptr;
  std::exception_ptr failure;
#pragma omp parallel num_threads(nthreads)
  {
    // The team that runs (fewer than asked under OMP_DYNAMIC): only its arrays are zeroed and added.
    const int team = omp_get_num_threads();
    std::int64_t* const mine = base + per * static_cast<std::size_t>(omp_get_thread_num());
    const MixedAcc acc = mixed_acc(mine, nl);
    std::fill(mine, mine + per, std::int64_t{0});
#if defined(__x86_64__)
    const bool simd = mixed_simd();
    MixedChunk c;
#endif
    if (other && nthreads == 2 && team == 2 && omp_get_thread_num() == 0) {
      other_ran = true;
      try {
        omp_set_num_threads(1);  // this thread's own regions in `other`: one thread, whether or not nested ones may be active
        (*other)();
      } catch (...) {
        failure = std::current_exception();
      }
    }
#pragma omp for schedule(dynamic, 32)
    for (int s = 0; s < a.nslots; ++s) {
      const int i = a.order[s];
      alignas(32) std::int64_t si[4] = {0, 0, 0, 0};
      std::int64_t sv = 0;
      int bad_i = 0;
#if defined(__x86_64__)
      if (simd) {
        std::int64_t n, n_sure;
        row_span(a, cut, s, n, n_sure);
        mixed_pairs(a, lj, p, tb, i, a.neighbors + a.start[s], n, n_sure, c, [&](const MixedChunk& ch, int m, int bad) {
          add_chunk_rows(ch, m, energy, acc.rows, si);
          if (energy)
            for (int k = 0; k < m; ++k) {
              sv += ch.v[k];
              acc.virial[ch.j[k]] += ch.v[k];
            }
          if (bad)
            for (int k = 0; k < m; ++k) {
              bad_i |= ch.bad[k];
              acc.bad[ch.j[k]] |= ch.bad[k];
            }
        });
      } else
#endif
      {
        for (std::int64_t k = a.start[s]; k < a.start[s + 1]; ++k) {
          const int j = a.neighbors[k];
          const FixedTerms u = fixed_terms(mixed_pair(a, lj, p, i, j, a.nspecial > 0 ? special_level(a, i, a.id[j]) : 0), energy);
          std::int64_t* const rj = acc.rows + 4 * static_cast<std::size_t>(j);
          for (int w = 0; w < 3; ++w) {
            si[w] += u.f[w];
            rj[w] -= u.f[w];
          }
          if (energy) {
            si[3] += u.e;
            sv += u.v;
            rj[3] -= u.e;
            acc.virial[j] += u.v;
          }
          bad_i |= u.bad;
          acc.bad[j] |= u.bad;
        }
      }
      std::int64_t* const ri = acc.rows + 4 * static_cast<std::size_t>(i);
      for (int w = 0; w < 3; ++w) ri[w] += si[w];
      ri[3] -= si[3];
      acc.virial[i] += sv;
      acc.bad[i] |= bad_i;
    }
    // (the implicit barrier of the loop above: every thread's arrays are complete)
    // With a.fixed_rows (Newton's third law across ranks) every local atom's sums, ghosts' too,
    // go there as rows for the solver to add across ranks; otherwise the owned atoms' are stored.
    std::int64_t* const rows = a.fixed_rows;
    const int nsum = rows ? a.nlocal : a.n;
#pragma omp for schedule(static)
    for (int i = 0; i < nsum; ++i) {
      std::int64_t t[5] = {0, 0, 0, 0, 0};
      std::int64_t bad = 0;
      for (int th = 0; th < team; ++th) {
        const MixedAcc o = mixed_acc(base + per * static_cast<std::size_t>(th), nl);
        const std::int64_t* const ri = o.rows + 4 * static_cast<std::size_t>(i);
        for (int w = 0; w < 3; ++w) t[w] += ri[w];
        if (energy) {
          t[3] -= ri[3];
          t[4] += o.virial[i];
        }
        bad |= o.bad[i];
      }
      if (rows)
        fixed::put_row(rows, i, t, bad);
      else
        store_sums(a, i, t, static_cast<int>(bad), energy);
    }
  }
  if (failure) std::rethrow_exception(failure);
  if (!other_ran) (*other)();
}

// The nine sums over the half list in one pass, threads as above: each pair's shares in units,
// counted once for each of its atoms that this rank owns (in halves of units), totalled per thread
// in 128 bits and added exactly.
void coul_sums_half_mixed(const Atoms& a, const LjTable32& lj, const CoulParams32& p, int e, ExactSum* out) {
  __int128 total[9] = {};
  int bad_all = 0;
#if defined(__x86_64__)
  mixed_simd::Tables tb;
  tb.init(lj, p);
  pack_rows(a, tb);
  const ShellCut cut = shell_cut(a, tb.reach2);
#endif
#pragma omp parallel
  {
    __int128 mine[9] = {};
    int bad = 0;
    // Each pair counted for each of its atoms this rank owns; with Newton's third law across
    // ranks (a.fixed_rows) a pair across ranks is on one rank only, counted there for both.
    const bool both = a.fixed_rows != nullptr;
    auto add = [&](int i, int j, const MixedPair& m) {
      const int w = both ? 2 : (i < a.n) + (j < a.n);
      for (int q = 0; q < 9; ++q) {
        std::int64_t u;
        if (!fixed::units(share(q, m), &u)) bad = 1;
        mine[q] += static_cast<__int128>(w * u);
      }
    };
#if defined(__x86_64__)
    // The AVX2 loop's kept pairs and fp32 terms (a pair dropped has zero shares); a chunk it
    // found out of range, pair by pair.
    const bool simd = mixed_simd();
    MixedChunk c;
#endif
#pragma omp for schedule(dynamic, 32)
    for (int s = 0; s < a.nslots; ++s) {
      const int i = a.order[s];
#if defined(__x86_64__)
      if (simd) {
        std::int64_t n, n_sure;
        row_span(a, cut, s, n, n_sure);
        mixed_pairs(a, lj, p, tb, i, a.neighbors + a.start[s], n, n_sure, c,
                    [&](const MixedChunk& ch, int m, int chunk_bad) {
                      for (int k = 0; k < m; ++k) {
                        MixedPair mp;
                        if (chunk_bad) {
                          mp = mixed_pair(a, lj, p, i, ch.j[k], ch.level[k]);
                        } else {
                          mp.dx = ch.dx[k], mp.dy = ch.dy[k], mp.dz = ch.dz[k], mp.r2 = ch.r2[k];
                          mp.t.fpair = ch.tf[k], mp.t.evdwl = ch.tev[k], mp.t.ecoul = ch.tec[k], mp.t.ecorr = ch.tek[k];
                        }
                        add(i, ch.j[k], mp);
                      }
                    });
        continue;
      }
#endif
      for (std::int64_t k = a.start[s]; k < a.start[s + 1]; ++k) {
        const int j = a.neighbors[k];
        add(i, j, mixed_pair(a, lj, p, i, j, a.nspecial > 0 ? special_level(a, i, a.id[j]) : 0));
      }
    }
#pragma omp critical(cumulus_coul_sums_half_mixed)
    {
      for (int q = 0; q < 9; ++q) total[q] += mine[q];
      bad_all |= bad;
    }
  }
  for (int q = 0; q < 9; ++q) {
    out[q] = fixed::exact_half_units(total[q], e);
    if (bad_all) out[q] = out[q] + ExactSum::of_units(hd::detail::from_bits(0x7ff8000000000000ULL));
  }
}
#endif

// One of the nine sums over the full list, either backend: each owned atom's pairs' shares in
// units, an integer sum, taken as half (the atom's share of each pair) exactly.
ExactSum coul_sum_mixed(const Exec& ex, const Atoms& a, const LjTable32& lj, const CoulParams32& p, int which, int e) {
  return reduce(ex, "md.coul_sum.pairs", Box(0, 0, 0, a.n, 1, 1), ExactSum{}, SumOp{}, [=] CUMULUS_HD(int i, int, int) {
    std::int64_t t = 0;
    bool ok = true;
    for (std::int64_t k = a.start[i]; k < a.start[i + 1]; ++k) {
      const int j = a.neighbors[k];
      std::int64_t u;
      if (!fixed::units(share(which, mixed_pair(a, lj, p, i, j, a.nspecial > 0 ? special_level(a, i, a.id[j]) : 0)), &u)) ok = false;
      t += u;
    }
    return ok ? fixed::exact_half_units(t, e) : ExactSum::of_units(hd::detail::from_bits(0x7ff8000000000000ULL));
  });
}

}  // namespace coul_mixed_kernels::CUMULUS_PASS
}  // namespace cumulus::md
