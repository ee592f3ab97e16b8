// The molecular dynamics model: keys, checks, lattice set-up, the Verlet list, velocity Verlet,
// thermo and the state description (host code; the kernels are in md_kernels.cpp).
#include "solvers/md/md.hpp"
#include "solvers/md/md_kernels.hpp"
#include "solvers/md/pair.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <filesystem>
#include <omp.h>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "core/memory.hpp"
#include "core/strings.hpp"
#include "core/timers.hpp"
#include "io/run_directory.hpp"
#include "mesh/decomposition.hpp"

namespace cumulus::md {

namespace {
constexpr double kPi = 3.14159265358979323846;

struct Setup {
  std::string lattice;
  double density = 0, temperature = 0, cutoff = 0, skin = 0, dt = 0;
  int ntypes = 1;
  std::vector<double> masses;     // per type (a data file's Masses replace them)
  std::vector<double> fractions;  // lattice: share of each type
  std::string pair_style;
  std::array<int, 3> cells{1, 1, 1};
  std::int64_t seed = 0;
  std::string thermostat;
  double damping = 1, t_bath = 0, nhc_damping = 0.5;
  int nhc_length = 3;
  std::string data_file;
  std::int64_t rdf_every = 0, rdf_bins = 100, neighbor_every = 1;
  bool neighbor_check = true;
  std::string neighbor_build = "auto";
  double rdf_range = 0;
};

// A LAMMPS data file, atom_style atomic, orthogonal box: header counts and box, Masses, Atoms
// (id type x y z [ix iy iz]), optional Velocities (id vx vy vz). Errors name the file and line.
struct DataFile {
  std::int64_t natoms = 0;
  int ntypes = 0;
  double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
  std::vector<double> mass;  // per type (1-based types: mass[t - 1])
  std::vector<std::int64_t> id;
  std::vector<int> type;
  std::vector<double> x[3], v[3];
  std::vector<int> image[3];
  bool has_velocities = false;
};

DataFile read_data_file(const std::string& path, bool header_only) {
  std::ifstream in(path);
  if (!in) throw InputError("cannot open LAMMPS data file '" + path + "'");
  DataFile d;
  std::string line;
  long n = 0;
  auto fail = [&](const std::string& what) {
    throw InputError(strprintf("%s:%ld: %s", path.c_str(), n, what.c_str()));
  };
  auto strip = [](std::string t) {
    const auto hash = t.find('#');
    if (hash != std::string::npos) t.erase(hash);
    const auto a = t.find_first_not_of(" \t\r"), b = t.find_last_not_of(" \t\r");
    return a == std::string::npos ? std::string() : t.substr(a, b - a + 1);
  };
  std::getline(in, line);  // the title line
  ++n;
  bool box[3] = {false, false, false};
  std::string section;
  // Header: "N atoms", "N atom types", "lo hi xlo xhi", ...; it ends at the first section keyword.
  while (std::getline(in, line)) {
    ++n;
    const std::string t = strip(line);
    if (t.empty()) continue;
    std::istringstream ss(t);
    std::vector<std::string> w;
    for (std::string x; ss >> x;) w.push_back(x);
    auto number = [&](const std::string& x) {
      char* end = nullptr;
      const double v = std::strtod(x.c_str(), &end);
      if (end == x.c_str() || *end != '\0' || !std::isfinite(v)) fail("expected a number, got '" + x + "'");
      return v;
    };
    if (w.size() == 2 && w[1] == "atoms") {
      d.natoms = static_cast<std::int64_t>(number(w[0]));
    } else if (w.size() == 3 && w[1] == "atom" && w[2] == "types") {
      d.ntypes = static_cast<int>(number(w[0]));
    } else if (w.size() == 4 && (w[2] == "xlo" || w[2] == "ylo" || w[2] == "zlo")) {
      const int a = w[2][0] - 'x';
      d.lo[a] = number(w[0]);
      d.hi[a] = number(w[1]);
      if (!(d.hi[a] > d.lo[a])) fail("the box's " + w[2] + " " + w[3] + " bounds are empty or reversed");
      box[a] = true;
    } else if (w.size() >= 4 && w[3] == "xy") {
      fail("triclinic boxes (xy xz yz) are not supported: cumulus takes orthogonal boxes");
    } else if (w.size() == 1 && (w[0] == "Masses" || w[0] == "Atoms" || w[0] == "Velocities")) {
      section = w[0];
      break;
    } else if (w.size() >= 2 && (w[1] == "bonds" || w[1] == "angles" || w[1] == "dihedrals" || w[1] == "impropers")) {
      if (number(w[0]) != 0) fail("bonded terms ('" + t + "') are not supported: atom_style atomic only");
    } else if (w.size() >= 3 && w[2] == "types") {
      // bond/angle types: allowed only as zero counts
    } else {
      fail("unrecognised header line '" + t + "' (expected 'N atoms', 'N atom types' or 'lo hi xlo xhi')");
    }
  }
  if (d.natoms <= 0) fail("the header gives no 'N atoms' (or zero atoms)");
  if (d.ntypes <= 0) fail("the header gives no 'N atom types'");
  for (int a = 0; a < 3; ++a)
    if (!box[a]) fail(std::string("the header gives no '") + "xyz"[a] + "lo " + "xyz"[a] + "hi' line");
  if (header_only) return d;
  d.mass.assign(static_cast<std::size_t>(d.ntypes), 0.0);
  std::set<std::int64_t> ids;
  std::map<std::int64_t, std::size_t> index;
  while (!section.empty()) {
    std::string next;
    std::int64_t rows = 0;
    const std::int64_t want = section == "Masses" ? d.ntypes : d.natoms;
    while (std::getline(in, line)) {
      ++n;
      const std::string t = strip(line);
      if (t.empty()) continue;
      if (t == "Masses" || t == "Atoms" || t == "Velocities") {
        next = t;
        break;
      }
      if (t.find_first_of("abcdfghijklmnopqrstuvwyzABCDFGHIJKLMNOPQRSTUVWXYZ") != std::string::npos && rows == want) {
        fail("unknown section '" + t + "' (atom_style atomic files have Masses, Atoms and Velocities)");
      }
      std::istringstream ss(t);
      std::vector<std::string> w;
      for (std::string x; ss >> x;) w.push_back(x);
      auto num = [&](std::size_t k) {
        char* end = nullptr;
        const double v = std::strtod(w[k].c_str(), &end);
        if (end == w[k].c_str() || *end != '\0' || !std::isfinite(v)) fail("expected a number, got '" + w[k] + "'");
        return v;
      };
      auto integer = [&](std::size_t k) {
        const double v = num(k);
        if (v != std::floor(v)) fail("expected an integer, got '" + w[k] + "'");
        return static_cast<std::int64_t>(v);
      };
      if (rows >= want) fail(strprintf("more %s lines than the header's %lld", section.c_str(), static_cast<long long>(want)));
      if (section == "Masses") {
        if (w.size() != 2) fail("a Masses line is 'type mass'");
        const std::int64_t ty = integer(0);
        if (ty < 1 || ty > d.ntypes) fail(strprintf("atom type %lld is not among the header's %d types", static_cast<long long>(ty), d.ntypes));
        if (!(num(1) > 0)) fail("a mass must be positive");
        d.mass[static_cast<std::size_t>(ty - 1)] = num(1);
      } else if (section == "Atoms") {
        if (w.size() != 5 && w.size() != 8) fail("an Atoms line (atom_style atomic) is 'id type x y z' or 'id type x y z ix iy iz'");
        const std::int64_t id = integer(0), ty = integer(1);
        if (id < 1) fail("atom ids start at 1");
        if (!ids.insert(id).second) fail(strprintf("atom id %lld appears twice", static_cast<long long>(id)));
        if (ty < 1 || ty > d.ntypes)
          fail(strprintf("atom %lld has type %lld, not among the header's %d types", static_cast<long long>(id),
                         static_cast<long long>(ty), d.ntypes));
        index[id] = d.id.size();
        d.id.push_back(id);
        d.type.push_back(static_cast<int>(ty));
        for (int a = 0; a < 3; ++a) {
          d.x[a].push_back(num(2 + a));
          d.image[a].push_back(w.size() == 8 ? static_cast<int>(integer(5 + a)) : 0);
          d.v[a].push_back(0.0);
        }
      } else {
        if (d.id.empty()) fail("Velocities before Atoms");
        if (w.size() != 4) fail("a Velocities line is 'id vx vy vz'");
        const auto it = index.find(integer(0));
        if (it == index.end()) fail(strprintf("velocity for atom %lld, which is not in Atoms", static_cast<long long>(integer(0))));
        for (int a = 0; a < 3; ++a) d.v[a][it->second] = num(1 + a);
        d.has_velocities = true;
      }
      ++rows;
    }
    if (rows != want)
      fail(strprintf("%s has %lld lines, the header says %lld", section.c_str(), static_cast<long long>(rows),
                     static_cast<long long>(want)));
    section = next;
  }
  if (static_cast<std::int64_t>(d.id.size()) != d.natoms) fail("no Atoms section");
  for (int t = 0; t < d.ntypes; ++t)
    if (d.mass[static_cast<std::size_t>(t)] <= 0) fail(strprintf("no mass for atom type %d (Masses section)", t + 1));
  return d;
}

// `file_types`: the atom types a data file's header declares (0: no data file). md.types left at
// its default takes them.
std::string data_file_path(const Config& cfg) {
  std::filesystem::path path(cfg.get<std::string>("md.data_file"));
  if (path.empty()) return {};
  if (path.is_relative() && !cfg.file().empty()) path = std::filesystem::path(cfg.file()).parent_path() / path;
  return path.string();
}

Setup read_setup(const Config& cfg, int file_types) {
  Setup s;
  s.ntypes = static_cast<int>(cfg.get<std::int64_t>("md.types"));
  if (file_types > 0 && cfg.where("md.types") == "default") s.ntypes = file_types;
  s.masses = cfg.get<std::vector<double>>("md.masses");
  if (s.masses.empty()) s.masses.assign(static_cast<std::size_t>(s.ntypes), cfg.get<double>("md.mass"));
  s.fractions = cfg.get<std::vector<double>>("md.type_fractions");
  if (s.fractions.empty() && s.ntypes == 1) s.fractions = {1.0};
  s.pair_style = cfg.get<std::string>("md.pair_style");
  s.lattice = cfg.get<std::string>("md.lattice");
  s.density = cfg.get<double>("md.density");
  const auto c = cfg.get<std::vector<std::int64_t>>("md.cells");
  for (int d = 0; d < 3; ++d) s.cells[d] = static_cast<int>(c[c.size() == 1 ? 0 : d]);
  s.temperature = cfg.get<double>("md.temperature");
  s.seed = cfg.get<std::int64_t>("md.seed");
  s.skin = cfg.get<double>("md.skin");
  s.neighbor_every = cfg.get<std::int64_t>("md.neighbor_every");
  s.neighbor_check = cfg.get<bool>("md.neighbor_check");
  s.neighbor_build = cfg.get<std::string>("md.neighbor_build");
  s.dt = cfg.get<double>("md.dt");
  s.thermostat = cfg.get<std::string>("md.thermostat");
  s.damping = cfg.get<double>("md.langevin_damping");
  s.nhc_damping = cfg.get<double>("md.nhc_damping");
  s.nhc_length = static_cast<int>(cfg.get<std::int64_t>("md.nhc_length"));
  s.t_bath = cfg.get<double>("md.thermostat_temperature");
  if (s.t_bath < 0) s.t_bath = s.temperature;
  s.rdf_every = cfg.get<std::int64_t>("md.rdf_every");
  s.rdf_bins = cfg.get<std::int64_t>("md.rdf_bins");
  s.rdf_range = cfg.get<double>("md.rdf_range");
  s.data_file = data_file_path(cfg);
  // The interaction range: the pair style's longest cutoff (only when the types are consistent;
  // check() reports them first).
  if (static_cast<int>(s.masses.size()) == s.ntypes) s.cutoff = pair_style(s.pair_style).reach(cfg, s.ntypes);
  if (s.rdf_range <= 0) s.rdf_range = s.cutoff;
  return s;
}

// Basis of the conventional cubic cell, in lattice units.
std::vector<std::array<double, 3>> basis(const std::string& lattice) {
  if (lattice == "fcc") return {{0, 0, 0}, {0.5, 0.5, 0}, {0.5, 0, 0.5}, {0, 0.5, 0.5}};
  if (lattice == "bcc") return {{0, 0, 0}, {0.5, 0.5, 0.5}};
  return {{0, 0, 0}};
}

double lattice_constant(const Setup& s) { return std::cbrt(static_cast<double>(basis(s.lattice).size()) / s.density); }

// A counter-based generator: splitmix64 of (seed, atom id, draw), so a velocity depends only on
// those three numbers, not on how atoms are spread over ranks or in what order they are visited.
std::uint64_t splitmix64(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
double uniform(std::uint64_t seed, std::uint64_t id, std::uint64_t draw) {
  const std::uint64_t r = splitmix64(splitmix64(seed ^ splitmix64(id)) + draw);
  return (static_cast<double>(r >> 11) + 0.5) * (1.0 / 9007199254740992.0);  // (0, 1)
}
// One atom's list candidates among n binned atoms (a row of bins): the ranks (in id order) of those
// within rl of it, not itself, of rank >= min_rank and local index < max_local, appended to out;
// returns how many. Flags first, in a loop the compiler vectorises (compiled for AVX-512, AVX2
// and the baseline, chosen at run time), then a branch-free compaction.
struct ScanQuery {
  double x, y, z, shx, shy, shz, rl2;
  int self_rank, min_rank, max_local;
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
      const int r = rank[k0 + k];
      flag[k] = static_cast<unsigned char>((dx * dx + dy * dy + dz * dz < q.rl2) & (r != q.self_rank) &
                                           (r >= q.min_rank) & (local[k0 + k] < q.max_local));
    }
    for (int k = 0; k < m; ++k) {
      out[count] = rank[k0 + k];
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
                hi = _mm512_set1_epi32(q.max_local);
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
    const __mmask16 keep = _mm512_mask_cmpneq_epi32_mask(near, r, self) & _mm512_cmpge_epi32_mask(r, lo) &
                           _mm512_cmplt_epi32_mask(l, hi);
    _mm512_storeu_si512(out + count, _mm512_maskz_compress_epi32(keep, r));
    count += __builtin_popcount(static_cast<unsigned>(keep));
  }
  return count;
}
#endif
int scan_candidates(const ScanQuery& q, int n, const double* x, const double* y, const double* z, const int* rank,
                    const int* local, int* out) {
#if defined(__x86_64__)
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  if (avx512) return scan_candidates_avx512(q, n, x, y, z, rank, local, out);
#endif
  return scan_candidates_auto(q, n, x, y, z, rank, local, out);
}
}  // namespace

// order[r] = the index of the r-th smallest of `ids` (distinct, non-negative): an LSD radix sort
// on 11-bit digits, as many passes as the largest id needs (3 below 2^33): linear, where a
// comparison sort of the local atoms took a tenth of a list build.
static void sort_by_id(const std::vector<std::int64_t>& ids, std::vector<int>& order) {
  const std::size_t n = ids.size();
  order.resize(n);
  for (std::size_t k = 0; k < n; ++k) order[k] = static_cast<int>(k);
  std::int64_t top = 0;
  for (std::int64_t v : ids) top = std::max(top, v);
  std::vector<int> tmp(n);
  constexpr int kBits = 11, kBuckets = 1 << kBits;
  for (int shift = 0; shift == 0 || (top >> shift) > 0; shift += kBits) {
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

void declare_keys(Schema& s) {
  s.key("md.lattice", ValueType::string, "Initial positions: fcc, bcc or sc lattice filling the box")
      .def(std::string("fcc"))
      .one_of({"fcc", "bcc", "sc"});
  s.key("md.density", ValueType::real, "Number density of the lattice (reduced units, atoms per sigma^3)")
      .def(0.8442)
      .positive();
  s.key("md.cells", ValueType::integer_array, "Unit cells of the lattice along x, y, z (one entry: all three)")
      .def(std::vector<std::int64_t>{20})
      .length(1, 3)
      .at_least(1);
  s.key("md.temperature", ValueType::real,
        "Initial temperature: Gaussian velocities, total momentum zero, scaled to exactly this with 3N - 3 "
        "degrees of freedom (0: at rest)")
      .def(1.44)
      .at_least(0);
  s.key("md.seed", ValueType::integer, "Seed of the counter-based generator keyed by (seed, atom id)")
      .def(std::int64_t{87287})
      .at_least(0);
  s.key("md.skin", ValueType::real, "Verlet list skin: the list holds pairs within cutoff + skin")
      .def(0.3)
      .at_least(0);
  s.key("md.neighbor_every", ValueType::integer,
        "Consider rebuilding the Verlet list only on steps that are multiples of this (LAMMPS's neigh_modify every)")
      .def(std::int64_t{1})
      .at_least(1);
  s.key("md.neighbor_check", ValueType::boolean,
        "Rebuild (on those steps) only when an atom has moved more than half the skin; false: always (LAMMPS's check "
        "no). Builds later than needed are counted as dangerous_builds")
      .def(true);
  s.key("md.neighbor_build", ValueType::string,
        "Who builds the Verlet list: 'kernels' (binning by radix sort, count, prefix sum, fill, on the backend; at one "
        "rank the atoms stay in its memory and are re-sorted by bin at every build), 'host' (the CPU builder, a half "
        "list at one thread) or 'auto' (kernels on CUDA, host on the host). Same trajectory bits either way")
      .def(std::string("auto"))
      .one_of({"auto", "host", "kernels"});
  s.key("md.types", ValueType::integer,
        "Number of atom types (with a data file left at its default: the file's 'atom types')")
      .def(std::int64_t{1})
      .at_least(1)
      .at_most(64);
  s.key("md.type_fractions", ValueType::real_array,
        "Lattice: the share of each type, one entry per type, summing to 1 (empty: every atom type 1; needed for "
        "several types). Counts are rounded; which atom gets which type is drawn with md.seed")
      .def(std::vector<double>{})
      .at_least(0);
  s.key("md.mass", ValueType::real, "Mass of every atom type not given by md.masses").def(1.0).positive();
  s.key("md.masses", ValueType::real_array, "Mass of each atom type (empty: md.mass for all; a data file's Masses replace them)")
      .def(std::vector<double>{})
      .positive();
  std::vector<std::string> styles;
  for (const PairStyleInfo& p : pair_styles()) styles.push_back(p.name);
  s.key("md.pair_style", ValueType::string, "Pair potential (a registered style; its keys follow)")
      .def(std::string("lj/cut"))
      .one_of(styles);
  for (const PairStyleInfo& p : pair_styles()) p.declare_keys(s);
  s.key("md.dt", ValueType::real, "Time step (reduced time units, tau)").def(0.005).positive();
  s.key("md.data_file", ValueType::string,
        "A LAMMPS data file (atom_style atomic, orthogonal box) to start from instead of a lattice; its Masses "
        "replace md.mass, its Velocities (if any) md.temperature. Relative to the job file's directory")
      .def(std::string());
  s.key("md.rdf_every", ValueType::integer,
        "Sample the radial distribution function every this many steps (0: off); the average since the start (or "
        "restart) is written to rdf.csv in the run directory with every diagnostics row")
      .def(std::int64_t{0})
      .at_least(0);
  s.key("md.rdf_bins", ValueType::integer, "Bins of the radial distribution function").def(std::int64_t{100}).at_least(1).at_most(100000);
  s.key("md.rdf_range", ValueType::real, "Largest distance of the radial distribution function (0: md.cutoff); at most md.cutoff")
      .def(0.0)
      .at_least(0);
  s.key("md.thermostat", ValueType::string,
        "none (NVE, velocity Verlet), langevin (NVT, BAOAB; random numbers keyed by seed, atom id and step) or "
        "nose_hoover (NVT, a Nose-Hoover chain, Martyna-Tuckerman-Klein splitting)")
      .def(std::string("none"))
      .one_of({"none", "langevin", "nose_hoover"});
  s.key("md.nhc_damping", ValueType::real, "Nose-Hoover relaxation time (tau; LAMMPS's Tdamp): Q1 = Nf kT t^2, Qi = kT t^2")
      .def(0.5)
      .positive();
  s.key("md.nhc_length", ValueType::integer, "Thermostats in the Nose-Hoover chain").def(std::int64_t{3}).at_least(1).at_most(10);
  s.key("md.langevin_damping", ValueType::real, "Langevin damping time 1/gamma (tau)").def(1.0).positive();
  s.key("md.thermostat_temperature", ValueType::real, "Bath temperature of the thermostat (-1: md.temperature)")
      .def(-1.0)
      .at_least(-1);
}

// The box lengths: the lattice's, or the data file's.
std::array<double, 3> box_lengths(const Setup& s, const DataFile* data) {
  std::array<double, 3> L{};
  for (int d = 0; d < 3; ++d) L[d] = data ? data->hi[d] - data->lo[d] : lattice_constant(s) * s.cells[d];
  return L;
}

// Ownership cells: a quarter of cutoff + skin wide, and a rank's block at least four of them (cutoff
// + skin) thick along a split axis. Finer than the list's bins so that the ranks' shares are even: on
// in.lj's box, 11 list bins split over 2 ranks are 5 and 6 (45% and 55% of the atoms), 47 cells
// are 23 and 24 (49% and 51%).
constexpr int kOwnerCellsPerReach = 4;
CartesianDecomposition make_decomposition(const Setup& s, const std::array<double, 3>& L, int nranks) {
  Index3 nb;
  for (int d = 0; d < 3; ++d)
    nb[d] = std::max(1, static_cast<int>(std::floor(L[d] * kOwnerCellsPerReach / (s.cutoff + s.skin))));
  return CartesianDecomposition(nb, {true, true, true}, nranks, 3, kOwnerCellsPerReach);
}

void check(const Config& cfg, int nranks) {
  const auto c = cfg.get<std::vector<std::int64_t>>("md.cells");
  if (c.size() == 2) cfg.fail("md.cells", "has 2 entries: give one (all axes) or three");
  DataFile data;
  const std::string path = data_file_path(cfg);
  const bool from_file = !path.empty();
  if (from_file) {
    try {
      data = read_data_file(path, false);
    } catch (const InputError& e) {
      cfg.fail("md.data_file", e.what());
    }
  }
  const int nt = static_cast<int>(cfg.get<std::int64_t>("md.types"));
  if (from_file && cfg.where("md.types") != "default" && nt != data.ntypes)
    cfg.fail("md.types", strprintf("is %d, but the data file %s declares %d atom types", nt, path.c_str(), data.ntypes));
  const int ntypes = from_file ? data.ntypes : nt;
  const auto masses = cfg.get<std::vector<double>>("md.masses");
  if (!masses.empty() && static_cast<int>(masses.size()) != ntypes)
    cfg.fail("md.masses", strprintf("has %zu entries for %d atom types (one per type, or none)", masses.size(), ntypes));
  const auto fractions = cfg.get<std::vector<double>>("md.type_fractions");
  if (from_file && !fractions.empty())
    cfg.fail("md.type_fractions", "is for lattices: a data file gives each atom's type");
  if (!from_file) {
    if (fractions.empty() && ntypes > 1)
      cfg.fail("md.type_fractions", strprintf("is needed for a lattice of %d atom types (one share per type, summing to 1)", ntypes));
    if (!fractions.empty()) {
      if (static_cast<int>(fractions.size()) != ntypes)
        cfg.fail("md.type_fractions", strprintf("has %zu entries for %d atom types", fractions.size(), ntypes));
      double sum = 0;
      for (double f : fractions) sum += f;
      if (std::fabs(sum - 1) > 1e-9) cfg.fail("md.type_fractions", strprintf("sums to %.12g, not 1", sum));
    }
  }
  const PairStyleInfo& style = pair_style(cfg.get<std::string>("md.pair_style"));
  style.check(cfg, ntypes);
  const Setup s = read_setup(cfg, from_file ? data.ntypes : 0);
  const std::array<double, 3> L = box_lengths(s, from_file ? &data : nullptr);
  double natoms = from_file ? static_cast<double>(data.natoms) : static_cast<double>(basis(s.lattice).size());
  for (int d = 0; d < 3; ++d) {
    if (!from_file) natoms *= s.cells[d];
    if (L[d] < 2 * (s.cutoff + s.skin))
      cfg.fail(from_file ? "md.data_file" : "md.cutoff",
               strprintf("the longest cutoff + skin = %g is more than half the box (%g along axis %d): every pair must "
                         "have one nearest image; use a larger box or a shorter cutoff",
                         s.cutoff + s.skin, L[d], d));
  }
  if (natoms > 2e9) cfg.fail("md.cells", strprintf("%.3g atoms is more than cumulus indexes (2^31)", natoms));
  try {
    make_decomposition(s, L, nranks);
  } catch (const InputError& e) {
    cfg.fail("md.cells", strprintf("the box holds too few bins of cutoff + skin for %d ranks: %s", nranks, e.what()));
  }
  if (s.rdf_range > s.cutoff)
    cfg.fail("md.rdf_range", strprintf("%g is beyond the cutoff %g (the longest of any type pair): the radial distribution function is sampled "
                                       "from the neighbour list, which holds pairs within the cutoff (plus the skin)",
                                       s.rdf_range, s.cutoff));
}

// Spatial decomposition: the box is cut into bins at least cutoff + skin wide, and the bins are
// split over ranks by CartesianDecomposition. A rank owns the atoms in its bins (reassigned when the
// list is rebuilt) and keeps ghost copies of other ranks' atoms within cutoff + skin of its block
// (positions refreshed every step). Ghosts carry their wrapped coordinates and global ids; the
// force loop takes the minimum image and each atom sums its pairs in ascending global id, so every
// rank count computes the same forces from the same numbers: trajectories are bit-identical at any
// rank count; the thermo sums are exact fixed-point sums, so the thermo output is too.
class MdModel : public Model {
 public:
  MdModel(const Config& cfg, const Context& ctx)
      : ctx_(ctx), me_(ctx.comm.rank()), np_(ctx.comm.size()),
        data_(data_file_path(cfg).empty() ? DataFile{} : read_data_file(data_file_path(cfg), false)),
        s_(read_setup(cfg, data_.ntypes)), data_has_velocities_(data_.has_velocities),
        decomp_(make_decomposition(s_, box_lengths(s_, s_.data_file.empty() ? nullptr : &data_), np_)),
        pair_(pair_style(s_.pair_style).create(cfg, s_.ntypes, ctx.exec)) {
    const bool from_file = !s_.data_file.empty();
    const std::array<double, 3> L = box_lengths(s_, from_file ? &data_ : nullptr);
    for (int d = 0; d < 3; ++d) {
      box_[d] = L[d];
      nbins_[d] = decomp_.global_cells()[d];
      binw_[d] = box_[d] / nbins_[d];
    }
    // Bin -> owning rank.
    owner_.assign(static_cast<std::size_t>(nbins_[0]) * nbins_[1] * nbins_[2], 0);
    for (int r = 0; r < np_; ++r) {
      const Box bb = decomp_.box_of(r);
      for (int k = bb.lo[2]; k < bb.hi[2]; ++k)
        for (int j = bb.lo[1]; j < bb.hi[1]; ++j)
          for (int i = bb.lo[0]; i < bb.hi[0]; ++i) owner_[(static_cast<std::size_t>(k) * nbins_[1] + j) * nbins_[0] + i] = r;
    }
    type_counts_.assign(static_cast<std::size_t>(s_.ntypes), 0.0);
    auto keep = [&](std::int64_t id, int type, const double p[3], const int img[3], const double* vel) {
      type_counts_[static_cast<std::size_t>(type)] += 1;
      if (owner_of(p) != me_) return;
      for (int d = 0; d < 3; ++d) {
        hx_[d].push_back(p[d]);
        hv_[d].push_back(vel ? vel[d] : 0.0);
        hi_[d].push_back(img[d]);
      }
      hid_.push_back(id);
      htype_.push_back(type);
      hw_.push_back(0.0);
    };
    if (from_file) {
      // Atoms from the file: shifted so the box starts at 0, wrapped into it (image counts kept),
      // ids from 0 (file id - 1), types from 0, the file's masses.
      n_total_ = data_.natoms;
      s_.masses = data_.mass;
      for (std::size_t k = 0; k < data_.id.size(); ++k) {
        double p[3], vel[3];
        int img[3];
        for (int d = 0; d < 3; ++d) {
          double x = data_.x[d][k] - data_.lo[d];
          img[d] = data_.image[d][k];
          const double f = std::floor(x / box_[d]);
          x -= f * box_[d];
          if (x >= box_[d]) x -= box_[d];
          img[d] += static_cast<int>(f);
          p[d] = x;
          vel[d] = data_.v[d][k];
        }
        keep(data_.id[k] - 1, data_.type[k] - 1, p, img, vel);
      }
    } else {
      // Lattice atoms (atom id = lattice index: cells x fastest, then the basis).
      const double a = lattice_constant(s_);
      const auto b = basis(s_.lattice);
      n_total_ = static_cast<std::int64_t>(b.size()) * s_.cells[0] * s_.cells[1] * s_.cells[2];
      const std::vector<int> types = lattice_types();
      std::int64_t id = 0;
      const int zero[3] = {0, 0, 0};
      for (int k = 0; k < s_.cells[2]; ++k)
        for (int j = 0; j < s_.cells[1]; ++j)
          for (int i = 0; i < s_.cells[0]; ++i)
            for (const auto& q : b) {
              const double p[3] = {(i + q[0]) * a, (j + q[1]) * a, (k + q[2]) * a};
              const int t = types.empty() ? 0 : types[static_cast<std::size_t>(id)];
              keep(id++, t, p, zero, nullptr);
            }
    }
    data_ = DataFile{};  // not needed any more
    nown_ = static_cast<int>(hid_.size());
    if (s_.temperature > 0 && n_total_ > 1 && !(from_file && data_has_velocities_)) {
      // Gaussian components of variance kT / m (unit variance, divided by sqrt(m)), the centre of
      // mass at rest, scaled to the temperature.
      double p[3] = {0, 0, 0}, msum = 0;
      for (int i = 0; i < nown_; ++i) {
        const double m = s_.masses[static_cast<std::size_t>(htype_[static_cast<std::size_t>(i)])];
        msum += m;
        for (int d = 0; d < 3; ++d) {
          const std::uint64_t aid = static_cast<std::uint64_t>(hid_[static_cast<std::size_t>(i)]);
          const double u1 = uniform(static_cast<std::uint64_t>(s_.seed), aid, 2 * d);
          const double u2 = uniform(static_cast<std::uint64_t>(s_.seed), aid, 2 * d + 1);
          const double v = std::sqrt(-2 * std::log(u1)) * std::cos(2 * kPi * u2) / std::sqrt(m);
          hv_[d][static_cast<std::size_t>(i)] = v;
          p[d] += m * v;
        }
      }
      // Global sums in id order would need a gather; the sums below differ between rank counts
      // only by rounding, so the mean and scale are rounded to 12 digits' worth: the same
      // velocities at any rank count. (Sums of ~N Gaussians carry ~1e-16 N relative error.)
      const double mtotal = round_to(ctx.comm.sum(msum));
      double mean[3];
      for (int d = 0; d < 3; ++d) mean[d] = round_to(ctx.comm.sum(p[d]) / mtotal);
      double ke2 = 0;
      for (int i = 0; i < nown_; ++i) {
        const double m = s_.masses[static_cast<std::size_t>(htype_[static_cast<std::size_t>(i)])];
        for (int d = 0; d < 3; ++d) {
          double& v = hv_[d][static_cast<std::size_t>(i)];
          v -= mean[d];
          ke2 += m * v * v;
        }
      }
      const double scale = round_to(std::sqrt(s_.temperature * (3.0 * n_total_ - 3) / ctx.comm.sum(ke2)));
      for (auto& v : hv_)
        for (double& x : v) x *= scale;
    }
    mass_ = Buffer<double>(ctx.exec.backend(), s_.masses.size());
    memory::copy(ctx.exec, ctx.exec.backend(), mass_.data(), Backend::host, s_.masses.data(), s_.masses.size() * sizeof(double));
    kernel_build_ = s_.neighbor_build == "kernels" || (s_.neighbor_build == "auto" && ctx.exec.is_cuda());
    resident_ = kernel_build_ && np_ == 1;
    rebuild(true);
    compute_forces();
  }

  std::string describe() const override {
    const Index3& p = decomp_.dims();
    const std::string origin = s_.data_file.empty() ? strprintf("%s lattice at density %g", s_.lattice.c_str(), s_.density)
                                                    : "from " + s_.data_file;
    std::string types;
    for (int t = 0; t < s_.ntypes; ++t)
      types += strprintf("%s%.0f of mass %g", t == 0 ? "" : ", ", type_counts_[static_cast<std::size_t>(t)],
                         s_.masses[static_cast<std::size_t>(t)]);
    std::string thermostat = "; NVE";
    if (s_.thermostat == "langevin")
      thermostat = strprintf("; Langevin thermostat (BAOAB) at T %g, damping time %g", s_.t_bath, s_.damping);
    else if (s_.thermostat == "nose_hoover")
      thermostat = strprintf("; Nose-Hoover chain of %d at T %g, relaxation time %g (Q1 = %g, Qi = %g)", s_.nhc_length,
                             s_.t_bath, s_.nhc_damping, chain_q(0), chain_q(1));
    return strprintf("md: %lld atoms, %s (box %.6g x %.6g x %.6g), %d type(s) (%s), T0 %g; %s; Verlet list skin %g "
                     "(rebuilt when an atom has moved skin/2, %s); velocity Verlet, dt %g%s; %d rank(s) as %d x %d x %d "
                     "blocks of %d x %d x %d ownership cells in all",
                     static_cast<long long>(n_total_), origin.c_str(), box_[0], box_[1], box_[2], s_.ntypes,
                     types.c_str(), s_.temperature, pair_->describe().c_str(), s_.skin,
                     kernel_build_ ? (resident_ ? "built by kernels, atoms re-sorted by bin on the backend"
                                                : "built by kernels on the backend")
                                   : "built on the host",
                     s_.dt, thermostat.c_str(), np_,
                     p[0], p[1], p[2], nbins_[0], nbins_[1], nbins_[2]);
  }
  double preferred_dt() const override { return s_.dt; }
  bool fixed_dt() const override { return true; }
  double work_per_step() const override { return static_cast<double>(n_total_); }
  std::string work_unit() const override { return "atom-steps"; }

  void advance(double time, double dt) override {
    const Exec& ex = ctx_.exec;
    if (stale_) refresh();
    const double h = 0.5 * dt;
    const bool nhc = s_.thermostat == "nose_hoover";
    if (nhc) chain_half_step(dt);
    if (s_.thermostat == "langevin") {
      const double c1 = std::exp(-dt / s_.damping);
      const std::uint64_t step = static_cast<std::uint64_t>(std::llround(time / dt));
      CUMULUS_KERNEL(ex, kernels, kick_drift_langevin)(ex, atoms(), h, dt, c1, s_.t_bath,
                                                       static_cast<std::uint64_t>(s_.seed) ^ 0x5DEECE66Dull, step);
    } else {
      CUMULUS_KERNEL(ex, kernels, kick_drift)(ex, atoms(), h, dt);
    }
    // The list is rebuilt on steps that are multiples of md.neighbor_every, when an atom has
    // moved more than half the skin since the last build (md.neighbor_check) or always. A build
    // later than the first step on which an atom had moved that far is dangerous (pairs may have
    // been missed): counted and reported, as LAMMPS does.
    const double half_skin = 0.5 * s_.skin;
    const double moved = ctx_.comm.max(CUMULUS_KERNEL(ex, kernels, max_displacement2)(ex, atoms()));
    const bool far = moved > half_skin * half_skin;
    const std::int64_t this_step = std::llround((time + dt) / dt);
    const bool due = this_step % s_.neighbor_every == 0;
    if (due && (far || !s_.neighbor_check)) {
      if (far && overdue_) ++dangerous_;
      overdue_ = false;
      rebuild(false);
    } else {
      if (far) overdue_ = true;
      forward_ghosts();
    }
    compute_forces(false);
    CUMULUS_KERNEL(ex, kernels, kick)(ex, atoms(), h);
    if (nhc) chain_half_step(dt);
    const std::int64_t step = std::llround((time + dt) / dt);
    if (s_.rdf_every > 0 && step % s_.rdf_every == 0) sample_rdf();
  }

  std::optional<HealthIssue> check_health() override {
    const Exec& ex = ctx_.exec;
    const std::int64_t bad = CUMULUS_KERNEL(ex, kernels, first_bad_atom)(ex, atoms());
    const std::int64_t none = std::numeric_limits<std::int64_t>::max();
    std::int64_t id = none;
    if (bad != none) memory::copy(ex, Backend::host, &id, ex.backend(), idd_.data() + bad, sizeof(std::int64_t));
    const std::int64_t gid = ctx_.comm.min(id);
    if (gid == none) return std::nullopt;
    return HealthIssue{"position or velocity", strprintf("atom %lld", static_cast<long long>(gid))};
  }

  std::vector<std::pair<std::string, double>> diagnostics(double /*time*/) override {
    if (stale_) refresh();
    if (!energies_fresh_) compute_forces(true);
    const Comm& c = ctx_.comm;
    const double n = static_cast<double>(n_total_), V = box_[0] * box_[1] * box_[2], rho = n / V;
    // Exact sums (thermo_fixed): the same bits at any rank count and storage layout.
    const double ke = 0.5 * exact_sum(0);
    double pe = exact_sum(1);
    const double w = exact_sum(2);
    // Degrees of freedom: 3N - 3 where the total momentum is conserved (NVE, Nose-Hoover), 3N under
    // Langevin, whose friction and noise act on every component (measured: 108 atoms read 0.7 %
    // hot with 3N - 3, as 3N / (3N - 3) predicts).
    const double dof = s_.thermostat == "langevin" ? 3.0 * n : 3.0 * n - 3.0;
    const double T = dof > 0 ? 2 * ke / dof : 0;
    double p_virial = w / (3 * V);
    const auto [e_tail, p_tail] = pair_->tail(type_counts_, V);
    pe += e_tail;
    p_virial += p_tail;
    const double p = dof * T / (3 * V) + p_virial;
    const double work = exact_sum(3) + chain_energy();
    if (s_.rdf_every > 0) write_rdf(rho);
    return {{"temperature", T},
            {"pe_per_atom", pe / n},
            {"ke_per_atom", ke / n},
            {"etotal_per_atom", (pe + ke) / n},
            {"conserved_per_atom", (pe + ke + work) / n},
            {"pressure", p},
            {"virial_pressure", p_virial},
            {"neighbor_builds", static_cast<double>(builds_)},
            {"dangerous_builds", static_cast<double>(dangerous_)},
            {"pairs_per_atom", c.sum(pairs_) / n},
            {"ghosts_per_rank", c.sum(static_cast<double>(nghost_)) / np_}};
  }

  StateDescription state() override {
    if (stale_) refresh();
    download_owned();
    StateDescription s;
    s.geometry.ndim = 3;
    s.geometry.corners_per_cell = 1;
    for (int d = 0; d < 3; ++d) s.geometry.spacing[d] = box_[d];  // particles: the periodic box's edges (H5MD)
    s.geometry.cell_corners = [this] {
      std::vector<double> out(3 * static_cast<std::size_t>(nown_));
      for (int i = 0; i < nown_; ++i)
        for (int d = 0; d < 3; ++d) out[3 * static_cast<std::size_t>(i) + d] = hx_[d][static_cast<std::size_t>(i)];
      return out;
    };
    const Index3& dims = decomp_.dims();
    s.decomposition = {dims[0], dims[1], dims[2]};
    // Atoms as a 1D array of n_total entries, each rank a contiguous run (prefix sum of counts).
    long long mine = nown_, offset = 0;
    mpi_check(MPI_Exscan(&mine, &offset, 1, MPI_LONG_LONG, MPI_SUM, ctx_.comm.raw()), "MPI_Exscan");
    if (me_ == 0) offset = 0;
    const Box global(0, 0, 0, static_cast<int>(n_total_), 1, 1);
    const Box local(static_cast<int>(offset), 0, 0, static_cast<int>(offset + mine), 1, 1);
    const int n = nown_;
    auto arr = [&](const char* name, const char* units, DType t, int ncomp, auto read, auto write) {
      GridArray g;
      g.name = name;
      g.units = units;
      g.dtype = t;
      g.ncomp = ncomp;
      g.global_box = global;
      g.local_box = local;
      g.read_local = read;
      g.write_local = write;
      s.arrays.push_back(std::move(g));
    };
    auto doubles = [n](const std::vector<double>* v) {
      std::vector<unsigned char> out(3 * sizeof(double) * static_cast<std::size_t>(n));
      for (int d = 0; d < 3; ++d) std::memcpy(out.data() + d * sizeof(double) * n, v[d].data(), sizeof(double) * n);
      return out;
    };
    auto set_doubles = [this, n](std::vector<double>* v, const std::vector<unsigned char>& in) {
      for (int d = 0; d < 3; ++d) {
        v[d].assign(static_cast<std::size_t>(n), 0.0);
        std::memcpy(v[d].data(), in.data() + d * sizeof(double) * n, sizeof(double) * n);
      }
      nown_ = n;
      stale_ = true;  // the restored atoms go to their owners and get a list at the next use
    };
    arr("position", "sigma", DType::f64, 3, [this, doubles] { return doubles(hx_); },
        [this, set_doubles](const std::vector<unsigned char>& in) { set_doubles(hx_, in); });
    arr("velocity", "sigma/tau", DType::f64, 3, [this, doubles] { return doubles(hv_); },
        [this, set_doubles](const std::vector<unsigned char>& in) { set_doubles(hv_, in); });
    arr("image", "box lengths", DType::i32, 3,
        [this, n] {
          std::vector<unsigned char> out(3 * sizeof(int) * static_cast<std::size_t>(n));
          for (int d = 0; d < 3; ++d) std::memcpy(out.data() + d * sizeof(int) * n, hi_[d].data(), sizeof(int) * n);
          return out;
        },
        [this, n](const std::vector<unsigned char>& in) {
          for (int d = 0; d < 3; ++d) {
            hi_[d].assign(static_cast<std::size_t>(n), 0);
            std::memcpy(hi_[d].data(), in.data() + d * sizeof(int) * n, sizeof(int) * n);
          }
          stale_ = true;
        });
    arr("thermostat_work", "epsilon", DType::f64, 1,
        [this, n] {
          std::vector<unsigned char> out(sizeof(double) * static_cast<std::size_t>(n));
          if (n > 0) std::memcpy(out.data(), hw_.data(), out.size());
          return out;
        },
        [this, n](const std::vector<unsigned char>& in) {
          hw_.assign(static_cast<std::size_t>(n), 0.0);
          if (n > 0) std::memcpy(hw_.data(), in.data(), sizeof(double) * static_cast<std::size_t>(n));
          stale_ = true;
        });
    arr("id", "", DType::i32, 1,
        [this, n] {
          std::vector<int> v(static_cast<std::size_t>(n));
          for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = static_cast<int>(hid_[static_cast<std::size_t>(i)]);
          std::vector<unsigned char> out(sizeof(int) * static_cast<std::size_t>(n));
          std::memcpy(out.data(), v.data(), out.size());
          return out;
        },
        [this, n](const std::vector<unsigned char>& in) {
          std::vector<int> v(static_cast<std::size_t>(n));
          std::memcpy(v.data(), in.data(), sizeof(int) * static_cast<std::size_t>(n));
          hid_.assign(v.begin(), v.end());
          stale_ = true;
        });
    arr("type", "", DType::i32, 1,
        [this, n] {
          std::vector<int> v(static_cast<std::size_t>(n));
          for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = htype_[static_cast<std::size_t>(i)] + 1;
          std::vector<unsigned char> out(sizeof(int) * static_cast<std::size_t>(n));
          if (n > 0) std::memcpy(out.data(), v.data(), out.size());
          return out;
        },
        [this, n](const std::vector<unsigned char>& in) {
          htype_.assign(static_cast<std::size_t>(n), 0);
          if (n > 0) std::memcpy(htype_.data(), in.data(), sizeof(int) * static_cast<std::size_t>(n));
          for (int& t : htype_) t -= 1;
          stale_ = true;
        });
    if (s_.thermostat == "nose_hoover") {
      // The chain's positions and velocities: global numbers, written by rank 0 and sent to every
      // rank after a restart (refresh()).
      GridArray g;
      g.name = "thermostat_chain";
      g.units = "1, 1/tau";
      g.dtype = DType::f64;
      g.ncomp = 1;
      const int M = s_.nhc_length;
      g.global_box = Box(0, 0, 0, 2 * M, 1, 1);
      g.local_box = me_ == 0 ? g.global_box : Box(0, 0, 0, 0, 1, 1);
      g.in_output = false;
      g.read_local = [this, M] {
        std::vector<unsigned char> out;
        if (me_ != 0) return out;
        out.resize(2 * M * sizeof(double));
        std::memcpy(out.data(), chain_xi_.data(), M * sizeof(double));
        std::memcpy(out.data() + M * sizeof(double), chain_v_.data(), M * sizeof(double));
        return out;
      };
      g.write_local = [this, M](const std::vector<unsigned char>& in) {
        if (me_ == 0 && in.size() == 2 * M * sizeof(double)) {
          std::memcpy(chain_xi_.data(), in.data(), M * sizeof(double));
          std::memcpy(chain_v_.data(), in.data() + M * sizeof(double), M * sizeof(double));
        }
        stale_ = true;
      };
      s.arrays.push_back(std::move(g));
    }
    return s;
  }

 private:
  // Rounds to about 12 significant digits: sums over ranks then agree at any rank count.
  static double round_to(double v) {
    if (v == 0) return 0;
    const double e = std::pow(10.0, 11 - std::floor(std::log10(std::fabs(v))));
    return std::round(v * e) / e;
  }
  int bin_index(double x, int d) const {
    return std::clamp(static_cast<int>(std::floor(x / binw_[d])), 0, nbins_[d] - 1);
  }
  int owner_of(const double p[3]) const {
    return owner_[(static_cast<std::size_t>(bin_index(p[2], 2)) * nbins_[1] + bin_index(p[1], 1)) * nbins_[0] +
                  bin_index(p[0], 0)];
  }
  // Squared distance from a point to rank r's block, through the periodic boundaries.
  double distance2_to_block(const double p[3], int r) const {
    const Box bb = decomp_.box_of(r);
    double s = 0;
    for (int d = 0; d < 3; ++d) {
      const double lo = bb.lo[d] * binw_[d], hi = bb.hi[d] * binw_[d];
      double best = std::numeric_limits<double>::max();
      for (int k = -1; k <= 1; ++k) {
        const double x = p[d] + k * box_[d];
        const double dd = x < lo ? lo - x : (x > hi ? x - hi : 0.0);
        best = std::min(best, dd);
      }
      s += best * best;
    }
    return s;
  }

  Atoms atoms() const {
    Atoms a;
    a.x = x_[0].data();
    a.y = x_[1].data();
    a.z = x_[2].data();
    a.vx = v_[0].data();
    a.vy = v_[1].data();
    a.vz = v_[2].data();
    a.fx = f_[0].data();
    a.fy = f_[1].data();
    a.fz = f_[2].data();
    a.pe = pe_.data();
    a.virial = vir_.data();
    a.ix = img_[0].data();
    a.iy = img_[1].data();
    a.iz = img_[2].data();
    a.x0 = x0_[0].data();
    a.y0 = x0_[1].data();
    a.z0 = x0_[2].data();
    a.start = start_.data();
    a.neighbors = nbr_.data();
    a.work = work_.data();
    a.id = idd_.data();
    a.type = type_.data();
    a.mass = mass_.data();
    a.n = nown_;
    a.half = half_;
    a.order = order_.data();
    a.nslots = nslots_;
    for (int d = 0; d < 3; ++d) a.box[d] = box_[d];
    return a;
  }

  // Forces, and with `energy` the per-atom energies and virials (needed only for thermo rows: the
  // diagnostics recompute them when the last step went without; forces are the same bits).
  void compute_forces(bool energy = true) {
    Atoms a = atoms();
    a.energy = energy;
    energies_fresh_ = energy;
    if (half_) {  // the kernel timers see for_each kernels; the half-list loop is plain host code
      ScopedTimer timer("md.forces");
      pair_->compute(ctx_.exec, a);
    } else {
      pair_->compute(ctx_.exec, a);
    }
  }

  // Nose-Hoover chain (Martyna, Klein & Tuckerman 1992), integrated as Martyna, Tuckerman, Tobias &
  // Klein (1996) split it: half a step of the chain around velocity Verlet, each thermostat's
  // velocity updated over quarter steps from the outer end inwards and back, the atoms' velocities
  // scaled by exp(-dt/2 v_1) in between. The chain is global: every rank holds the same numbers,
  // computed from the exactly summed kinetic energy, so trajectories stay bit-identical at any rank
  // count and on the host and CUDA.
  double chain_q(int i) const {
    const double nf = 3.0 * static_cast<double>(n_total_) - 3.0, t2 = s_.nhc_damping * s_.nhc_damping;
    return (i == 0 ? nf : 1.0) * s_.t_bath * t2;
  }
  // A thermo sum over all atoms (thermo_fixed: 0 m v^2, 1 energy, 2 virial, 3 work), exactly.
  double exact_sum(int which) {
    const Exec& ex = ctx_.exec;
    const Atoms a = atoms();
    std::uint64_t part[2] = {static_cast<std::uint64_t>(CUMULUS_KERNEL(ex, kernels, thermo_fixed)(ex, a, which, 0)),
                             static_cast<std::uint64_t>(CUMULUS_KERNEL(ex, kernels, thermo_fixed)(ex, a, which, 1))};
    std::uint64_t total[2] = {0, 0};
    mpi_check(MPI_Allreduce(part, total, 2, MPI_UINT64_T, MPI_SUM, ctx_.comm.raw()), "MPI_Allreduce");
    return static_cast<double>(static_cast<std::int64_t>(total[0])) * (1.0 / 1048576.0) +
           static_cast<double>(static_cast<std::int64_t>(total[1])) * (1.0 / 4503599627370496.0);
  }
  // Twice the kinetic energy, summed exactly (kinetic_fixed's fixed point), identical on every rank.
  double kinetic2_exact() {
    const Exec& ex = ctx_.exec;
    const Atoms a = atoms();
    std::uint64_t part[2] = {static_cast<std::uint64_t>(CUMULUS_KERNEL(ex, kernels, kinetic_fixed)(ex, a, 0)),
                             static_cast<std::uint64_t>(CUMULUS_KERNEL(ex, kernels, kinetic_fixed)(ex, a, 1))};
    std::uint64_t total[2] = {0, 0};
    mpi_check(MPI_Allreduce(part, total, 2, MPI_UINT64_T, MPI_SUM, ctx_.comm.raw()), "MPI_Allreduce");
    return static_cast<double>(static_cast<std::int64_t>(total[0])) * (1.0 / 1048576.0) +
           static_cast<double>(static_cast<std::int64_t>(total[1])) * (1.0 / 4503599627370496.0);
  }
  void chain_half_step(double dt) {
    const int M = s_.nhc_length;
    const double kT = s_.t_bath, nf = 3.0 * static_cast<double>(n_total_) - 3.0;
    const double dt2 = 0.5 * dt, dt4 = 0.25 * dt, dt8 = 0.125 * dt;
    std::vector<double>& v = chain_v_;
    double ke2 = kinetic2_exact();
    auto force = [&](int i) {
      return i == 0 ? (ke2 - nf * kT) / chain_q(0) : (chain_q(i - 1) * v[i - 1] * v[i - 1] - kT) / chain_q(i);
    };
    auto update = [&](int i) {  // quarter-step kick of thermostat i, damped by the next one
      if (i == M - 1) {
        v[i] += dt4 * force(i);
        return;
      }
      const double e = std::exp(-dt8 * v[i + 1]);
      v[i] = (v[i] * e + dt4 * force(i)) * e;
    };
    for (int i = M - 1; i >= 0; --i) update(i);
    for (int i = 0; i < M; ++i) chain_xi_[i] += dt2 * v[i];
    const double scale = std::exp(-dt2 * v[0]);
    CUMULUS_KERNEL(ctx_.exec, kernels, scale_velocities)(ctx_.exec, atoms(), scale);
    ke2 *= scale * scale;
    for (int i = 0; i < M; ++i) update(i);
  }
  // The chain's share of the conserved quantity: sum Q_i v_i^2 / 2 + Nf kT xi_1 + kT sum_{i>1} xi_i.
  double chain_energy() const {
    if (s_.thermostat != "nose_hoover") return 0;
    const double nf = 3.0 * static_cast<double>(n_total_) - 3.0;
    double e = 0;
    for (int i = 0; i < s_.nhc_length; ++i)
      e += 0.5 * chain_q(i) * chain_v_[i] * chain_v_[i] + (i == 0 ? nf : 1.0) * s_.t_bath * chain_xi_[i];
    return e;
  }

  // Lattice atoms' types: exactly round(fraction N) of each (the last type takes the rest), given to
  // the atoms in the order of a hash of (seed, id): a random arrangement that does not depend on
  // the rank count. Empty for one type.
  std::vector<int> lattice_types() const {
    if (s_.ntypes == 1) return {};
    const std::int64_t n = n_total_;
    std::vector<std::pair<double, std::int64_t>> key(static_cast<std::size_t>(n));
    for (std::int64_t id = 0; id < n; ++id)
      key[static_cast<std::size_t>(id)] = {uniform(static_cast<std::uint64_t>(s_.seed) ^ 0x7495A3C1ull, static_cast<std::uint64_t>(id), 0), id};
    std::sort(key.begin(), key.end());
    std::vector<int> type(static_cast<std::size_t>(n), s_.ntypes - 1);
    std::int64_t k = 0;
    for (int t = 0; t + 1 < s_.ntypes; ++t) {
      const std::int64_t count = std::min<std::int64_t>(n - k, std::llround(s_.fractions[static_cast<std::size_t>(t)] * static_cast<double>(n)));
      for (std::int64_t c = 0; c < count; ++c, ++k) type[static_cast<std::size_t>(key[static_cast<std::size_t>(k)].second)] = t;
    }
    return type;
  }

  // One sample of the radial distribution function: every owned atom's neighbours within the range
  // (the list holds every pair within the cutoff), from the current positions, owned and ghosts.
  void sample_rdf() {
    const Exec& ex = ctx_.exec;
    const int nlocal = nown_ + nghost_;
    std::vector<double> h[3];
    for (int d = 0; d < 3; ++d) {
      h[d].resize(static_cast<std::size_t>(nlocal));
      if (nlocal > 0)
        memory::copy(ex, Backend::host, h[d].data(), ex.backend(), x_[d].data(), sizeof(double) * static_cast<std::size_t>(nlocal));
    }
    if (rdf_hist_.empty()) rdf_hist_.assign(static_cast<std::size_t>(s_.rdf_bins), 0.0);
    const double range = s_.rdf_range, scale = s_.rdf_bins / range;
    auto image = [&](double d, int axis) {
      const double L = box_[axis];
      return d > 0.5 * L ? d - L : (d < -0.5 * L ? d + L : d);
    };
    // Each owned atom counts its pairs: a full list's slot is its owned atom; a half list holds
    // every pair once, counted for each of its owned atoms.
    for (int slot = 0; slot < nslots_; ++slot) {
      const int i = half_ ? host_order_[static_cast<std::size_t>(slot)] : slot;
      for (std::int64_t k = host_start_[static_cast<std::size_t>(slot)]; k < host_start_[static_cast<std::size_t>(slot) + 1]; ++k) {
        const int j = host_list_[static_cast<std::size_t>(k)];
        const double weight = half_ ? static_cast<double>((i < nown_) + (j < nown_)) : 1.0;
        double r2 = 0;
        for (int d = 0; d < 3; ++d) {
          const double dd = image(h[d][static_cast<std::size_t>(i)] - h[d][static_cast<std::size_t>(j)], d);
          r2 += dd * dd;
        }
        const double r = std::sqrt(r2);
        if (r < range) rdf_hist_[std::min(static_cast<std::size_t>(r * scale), rdf_hist_.size() - 1)] += weight;
      }
    }
    ++rdf_samples_;
  }

  // g(r) = pairs in the shell / (samples N rho shell volume), and the running coordination number
  // 4 pi rho integral g r^2 dr; rank 0 writes rdf.csv (atomically).
  void write_rdf(double rho) {
    std::vector<double> hist(static_cast<std::size_t>(s_.rdf_bins), 0.0), mine = rdf_hist_;
    mine.resize(hist.size(), 0.0);
    mpi_check(MPI_Reduce(mine.data(), hist.data(), static_cast<int>(hist.size()), MPI_DOUBLE, MPI_SUM, 0, ctx_.comm.raw()),
              "MPI_Reduce");
    if (!ctx_.comm.is_root() || rdf_samples_ == 0 || ctx_.run_dir.empty()) return;
    const double dr = s_.rdf_range / s_.rdf_bins, n = static_cast<double>(n_total_);
    std::string text = strprintf("# radial distribution function, %ld samples (every %lld steps) since the start or "
                                 "restart; r is the shell's middle\nr,g,coordination\n",
                                 rdf_samples_, static_cast<long long>(s_.rdf_every));
    double coordination = 0;
    for (std::size_t b = 0; b < hist.size(); ++b) {
      const double r0 = b * dr, r1 = (b + 1) * dr;
      const double shell = 4.0 / 3.0 * kPi * (r1 * r1 * r1 - r0 * r0 * r0);
      const double g = hist[b] / (static_cast<double>(rdf_samples_) * n * rho * shell);
      coordination += hist[b] / (static_cast<double>(rdf_samples_) * n);
      text += strprintf("%.6g,%.10g,%.10g\n", 0.5 * (r0 + r1), g, coordination);
    }
    write_file_atomic(ctx_.run_dir + "/rdf.csv", text);
  }

  // After a restart replaced the atoms: owners, ghosts, a list and forces for them.
  void refresh() {
    stale_ = false;
    mpi_check(MPI_Bcast(chain_xi_.data(), static_cast<int>(chain_xi_.size()), MPI_DOUBLE, 0, ctx_.comm.raw()), "MPI_Bcast");
    mpi_check(MPI_Bcast(chain_v_.data(), static_cast<int>(chain_v_.size()), MPI_DOUBLE, 0, ctx_.comm.raw()), "MPI_Bcast");
    rebuild(true);
    compute_forces();
  }

  // The owned atoms' state from the backend into the host copies (for a build on the host, a
  // checkpoint or output). Ids and types too: a build by kernels may have re-sorted the atoms.
  void download_owned() {
    const Exec& ex = ctx_.exec;
    const std::size_t n = static_cast<std::size_t>(nown_);
    hw_.resize(n);
    hid_.resize(n);
    htype_.resize(n);
    if (n > 0) {
      memory::copy(ex, Backend::host, hw_.data(), ex.backend(), work_.data(), n * sizeof(double));
      memory::copy(ex, Backend::host, hid_.data(), ex.backend(), idd_.data(), n * sizeof(std::int64_t));
      memory::copy(ex, Backend::host, htype_.data(), ex.backend(), type_.data(), n * sizeof(int));
    }
    for (int d = 0; d < 3; ++d) {
      hx_[d].resize(n);
      hv_[d].resize(n);
      hi_[d].resize(n);
      if (n == 0) continue;
      memory::copy(ex, Backend::host, hx_[d].data(), ex.backend(), x_[d].data(), n * sizeof(double));
      memory::copy(ex, Backend::host, hv_[d].data(), ex.backend(), v_[d].data(), n * sizeof(double));
      memory::copy(ex, Backend::host, hi_[d].data(), ex.backend(), img_[d].data(), n * sizeof(int));
    }
  }

  // Device arrays for the owned atoms (positions with room for the ghosts come in rebuild()).
  // A buffer holding at least n elements, reused across rebuilds while it is large enough (fresh
  // allocations every rebuild cost page faults), grown with a margin.
  template <class T>
  void fit(Buffer<T>& b, std::size_t n) const {
    if (b.size() < n || b.size() == 0) b = Buffer<T>(ctx_.exec.backend(), std::max<std::size_t>(n + n / 8, 1));
  }

  void upload_owned() {
    const Exec& ex = ctx_.exec;
    const Backend where = ex.backend();
    const std::size_t n = static_cast<std::size_t>(std::max(nown_, 1));
    for (int d = 0; d < 3; ++d) {
      fit(v_[d], n);
      fit(f_[d], n);
      fit(x0_[d], n);
      fit(img_[d], n);
      if (nown_ > 0) {
        memory::copy(ex, where, v_[d].data(), Backend::host, hv_[d].data(), sizeof(double) * static_cast<std::size_t>(nown_));
        memory::copy(ex, where, img_[d].data(), Backend::host, hi_[d].data(), sizeof(int) * static_cast<std::size_t>(nown_));
      }
    }
    fit(pe_, n);
    fit(vir_, n);
    fit(work_, n);
    fit(idd_, n);
    if (nown_ > 0) {
      memory::copy(ex, where, work_.data(), Backend::host, hw_.data(), sizeof(double) * static_cast<std::size_t>(nown_));
      memory::copy(ex, where, idd_.data(), Backend::host, hid_.data(), sizeof(std::int64_t) * static_cast<std::size_t>(nown_));
    }
  }

  // Collective: atoms to their owners, ghost lists, the Verlet list. `from_host`: the host copies
  // hx_, hv_, hi_, hid_, htype_, hw_ of the owned atoms are the current state (set-up, restart);
  // otherwise the backend's arrays are. With kernel builds at one rank the atoms never leave the
  // backend: no migration, no ghosts, so the build is build_list_kernels() alone.
  void rebuild(bool from_host) {
    ScopedTimer timer("md.neighbor_build");
    if (resident_ && !from_host) {
      build_list_kernels();
      return;
    }
    if (!from_host) download_owned();
    const Exec& ex = ctx_.exec;
    const Comm& comm = ctx_.comm;
    auto tph = std::make_unique<ScopedTimer>("md.neighbor_build.order");
    if (np_ > 1) migrate();
    // Owned atoms in a layout that keeps partners near in memory. Ids are spatially coherent for a
    // fresh lattice or a data file written from one: then id order (the slots' order, best for the
    // half list's loop). Otherwise (shuffled ids, long diffusion) spatial order: by list bin (z, y,
    // x), by id within a bin. Measured on in.lj: with its ids shuffled, forces ran 1.5x slower in
    // id order and 15 % faster in bin order than that; unshuffled, bin order cost 3 %. The test:
    // the mean squared step between id-consecutive atoms, against (2 spacings)^2. Results do not
    // depend on the layout (forces sum in id order, thermo sums are exact).
    {
      std::vector<int> order;
      sort_by_id(hid_, order);
      double step2 = 0;
      for (int k = 1; k < nown_; ++k) {
        const std::size_t p = static_cast<std::size_t>(order[static_cast<std::size_t>(k) - 1]),
                          q = static_cast<std::size_t>(order[static_cast<std::size_t>(k)]);
        for (int d = 0; d < 3; ++d) {
          double dd = hx_[d][q] - hx_[d][p];
          dd = dd > 0.5 * box_[d] ? dd - box_[d] : (dd < -0.5 * box_[d] ? dd + box_[d] : dd);
          step2 += dd * dd;
        }
      }
      const double spacing = std::cbrt(box_[0] * box_[1] * box_[2] / std::max<double>(static_cast<double>(n_total_), 1.0));
      const bool coherent = nown_ < 2 || step2 / (nown_ - 1) < 4 * spacing * spacing;
      if (!coherent) {
        const double rl = s_.cutoff + s_.skin;
        int nb[3];
        for (int d = 0; d < 3; ++d) nb[d] = std::max(1, static_cast<int>(std::floor(box_[d] / rl)));
        auto bin1 = [&](double x, int d) { return std::clamp(static_cast<int>(std::floor(x * nb[d] / box_[d])), 0, nb[d] - 1); };
        const std::size_t nbins = static_cast<std::size_t>(nb[0]) * nb[1] * nb[2];
        std::vector<int> start(nbins + 1, 0), bin(static_cast<std::size_t>(nown_));
        for (int i = 0; i < nown_; ++i) {
          const std::size_t u = static_cast<std::size_t>(i);
          bin[u] = (bin1(hx_[2][u], 2) * nb[1] + bin1(hx_[1][u], 1)) * nb[0] + bin1(hx_[0][u], 0);
          ++start[static_cast<std::size_t>(bin[u]) + 1];
        }
        for (std::size_t k = 0; k < nbins; ++k) start[k + 1] += start[k];
        // Visiting the atoms in id order makes each bin's run ascend in id (a stable counting sort).
        std::vector<int> by_bin(static_cast<std::size_t>(nown_));
        for (int r = 0; r < nown_; ++r) {
          const int i = order[static_cast<std::size_t>(r)];
          by_bin[static_cast<std::size_t>(start[static_cast<std::size_t>(bin[static_cast<std::size_t>(i)])]++)] = i;
        }
        order.swap(by_bin);
      }
      bool identity = true;
      for (int i = 0; i < nown_ && identity; ++i) identity = order[static_cast<std::size_t>(i)] == i;
      auto permute = [&](auto& v) {
        if (identity) return;
        auto w = v;
        for (std::size_t k = 0; k < order.size(); ++k) w[k] = v[static_cast<std::size_t>(order[k])];
        v.swap(w);
      };
      for (int d = 0; d < 3; ++d) {
        permute(hx_[d]);
        permute(hv_[d]);
        permute(hi_[d]);
      }
      permute(hid_);
      permute(htype_);
      permute(hw_);
    }
    upload_owned();
    tph = std::make_unique<ScopedTimer>("md.neighbor_build.ghosts");
    // Ghosts: every owned atom within cutoff + skin of another rank's block goes there.
    send_lists_.assign(static_cast<std::size_t>(np_), {});
    std::vector<double> gx[3];
    std::vector<std::int64_t> gid;
    std::vector<int> gtype;
    if (np_ > 1) {
      const double rl = s_.cutoff + s_.skin, rl2 = rl * rl;
      for (int i = 0; i < nown_; ++i) {
        const double p[3] = {hx_[0][static_cast<std::size_t>(i)], hx_[1][static_cast<std::size_t>(i)], hx_[2][static_cast<std::size_t>(i)]};
        for (int r = 0; r < np_; ++r)
          if (r != me_ && distance2_to_block(p, r) < rl2) send_lists_[static_cast<std::size_t>(r)].push_back(i);
      }
      std::vector<double> recv = exchange_records(send_lists_, 5, [&](int i, double* rec) {
        for (int d = 0; d < 3; ++d) rec[d] = hx_[d][static_cast<std::size_t>(i)];
        rec[3] = static_cast<double>(hid_[static_cast<std::size_t>(i)]);
        rec[4] = htype_[static_cast<std::size_t>(i)];
      }, &recv_counts_);
      const std::size_t ng = recv.size() / 5;
      for (std::size_t k = 0; k < ng; ++k) {
        for (int d = 0; d < 3; ++d) gx[d].push_back(recv[5 * k + d]);
        gid.push_back(static_cast<std::int64_t>(recv[5 * k + 3]));
        gtype.push_back(static_cast<int>(recv[5 * k + 4]));
      }
    }
    nghost_ = static_cast<int>(gid.size());
    if (np_ > 1 && (ex.backend() != Backend::host || kernel_build_)) upload_send_index();
    const int nlocal = nown_ + nghost_;
    std::vector<double> lx[3];
    for (int d = 0; d < 3; ++d) {
      lx[d] = hx_[d];
      lx[d].insert(lx[d].end(), gx[d].begin(), gx[d].end());
    }
    std::vector<std::int64_t> lid = hid_;
    lid.insert(lid.end(), gid.begin(), gid.end());
    std::vector<int> ltype = htype_;
    ltype.insert(ltype.end(), gtype.begin(), gtype.end());
    upload_local(lx, lid, ltype);
    if (kernel_build_) {
      tph.reset();
      build_list_kernels();
      return;
    }

    tph = std::make_unique<ScopedTimer>("md.neighbor_build.bins");
    // The Verlet list of the owned atoms over owned + ghost atoms.
    const double rl = s_.cutoff + s_.skin, rl2 = rl * rl;
    // Coordinates are wrapped into the box, so one comparison per axis finds the nearest image.
    auto image = [&](double d, int axis) {
      const double L = box_[axis];
      return d > 0.5 * L ? d - L : (d < -0.5 * L ? d + L : d);
    };
    auto close = [&](int i, int j) {
      const double dx = image(lx[0][static_cast<std::size_t>(i)] - lx[0][static_cast<std::size_t>(j)], 0);
      const double dy = image(lx[1][static_cast<std::size_t>(i)] - lx[1][static_cast<std::size_t>(j)], 1);
      const double dz = image(lx[2][static_cast<std::size_t>(i)] - lx[2][static_cast<std::size_t>(j)], 2);
      return dx * dx + dy * dy + dz * dz < rl2;
    };
    // List bins: at least cutoff + skin wide (not the decomposition's finer cells), searched one bin out in rows of
    // three along x (long rows suit the vectorised scan better than half-width bins two out, which
    // check half as many atoms in rows too short to vectorise: measured the same speed); all pairs
    // where the box holds fewer than three bins along an axis.
    const int reach = 1;
    int nb3[3];
    for (int d = 0; d < 3; ++d) nb3[d] = std::max(1, static_cast<int>(std::floor(box_[d] / rl)));
    const bool brute = nb3[0] < 3 || nb3[1] < 3 || nb3[2] < 3;
    auto list_bin = [&](double x, int d) {
      return std::clamp(static_cast<int>(std::floor(x * nb3[d] / box_[d])), 0, nb3[d] - 1);
    };
    std::vector<int> count, bins;
    std::vector<unsigned char> has_owned;  // per bin: holds an owned atom (ghost slots scan only those)
    std::vector<int> bin_max_rank;         // per bin: the largest id rank of its atoms
    std::vector<double> sx, sy, sz;
    std::vector<int> srank;
    // Local atoms (owned and ghosts) ranked by global id: a list sorted by rank is sorted by id.
    std::vector<int> by_rank(static_cast<std::size_t>(nlocal)), idrank(static_cast<std::size_t>(nlocal));
    sort_by_id(lid, by_rank);
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
      for (int i = 0; i < nlocal; ++i) {
        const std::size_t b = bin_of(i);
        ++count[b + 1];
        if (i < nown_) has_owned[b] = 1;
      }
      for (std::size_t b = 0; b < nb; ++b) count[b + 1] += count[b];
      std::vector<int> fill(count.begin(), count.end() - 1);
      for (int i = 0; i < nlocal; ++i) bins[static_cast<std::size_t>(fill[bin_of(i)]++)] = i;
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
    // Atoms in contiguous chunks per OpenMP thread, each chunk's lists joined in thread order: the
    // same list whatever the thread count (each atom's own list is sorted).
    tph.reset();
    auto tpairs_region = std::make_unique<ScopedTimer>("md.neighbor_build.pairs");
    const int nthreads = omp_get_max_threads();
    // One thread on the host: a half list (each pair once; md_kernels.cpp's lj_forces_half gives
    // the full list's bits at half the work). Otherwise the full list (threads and CUDA threads
    // each own their atoms' sums).
    half_ = ex.backend() == Backend::host && nthreads == 1;
    const int nslots = half_ ? nlocal : nown_;
    // The threads' list parts persist across builds (their capacity: no fresh pages each build).
    std::vector<std::vector<int>>& part = parts_;
    part.resize(static_cast<std::size_t>(nthreads));
    for (auto& p : part) p.clear();
    std::vector<std::int64_t> counts_per_atom(static_cast<std::size_t>(nslots), 0);
    const bool half = half_;
    const int nown = nown_;
    std::vector<double> entries(static_cast<std::size_t>(nthreads), 0.0);
#pragma omp parallel num_threads(nthreads)
    {
      const int t = omp_get_thread_num(), nt = omp_get_num_threads();
      const int i0 = static_cast<int>(static_cast<std::int64_t>(nslots) * t / nt);
      const int i1 = static_cast<int>(static_cast<std::int64_t>(nslots) * (t + 1) / nt);
      std::vector<int>& mine = part[static_cast<std::size_t>(t)];
      // Room for as many pairs per atom as last time, and a margin (growing it copies).
      mine.reserve(static_cast<std::size_t>((i1 - i0) * (pairs_ / std::max(nslots, 1) * 1.1 + 8)));
      // Candidates as ranks in id order (idrank): a bitmap over the ranks puts them in ascending
      // id without a comparison sort when they span few words (ids that are near in space are
      // mostly near in number); otherwise they are sorted.
      std::vector<int> cand(1024);
      std::vector<std::uint64_t> bitmap(static_cast<std::size_t>(nlocal) / 64 + 1, 0);
      const double* const psx = sx.data();
      const double* const psy = sy.data();
      const double* const psz = sz.data();
      const int* const prank = srank.data();
      const int* const plocal = bins.data();
      std::int64_t entries_int = 0;
      for (int slot = i0; slot < i1; ++slot) {
        const int i = half ? by_rank[static_cast<std::size_t>(slot)] : slot;
        const bool own_i = i < nown;
        std::size_t ncand = 0;
        if (brute) {
          for (int j = 0; j < nlocal; ++j)
            if ((half ? idrank[static_cast<std::size_t>(j)] > slot && (own_i || j < nown)
                      : lid[static_cast<std::size_t>(j)] != lid[static_cast<std::size_t>(i)]) &&
                close(i, j)) {
              if (ncand == cand.size()) cand.resize(2 * ncand + 64);
              cand[ncand++] = idrank[static_cast<std::size_t>(j)];
            }
        } else {
          const int b0 = list_bin(lx[0][static_cast<std::size_t>(i)], 0), b1 = list_bin(lx[1][static_cast<std::size_t>(i)], 1),
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
            *shift = b < 0 ? box_[d] : (b >= nb3[d] ? -box_[d] : 0.0);
            return b < 0 ? b + nb3[d] : (b >= nb3[d] ? b - nb3[d] : b);
          };
          // Rows of bins along x, (2 reach + 1) bins each, contiguous in the bin-sorted arrays
          // unless they cross the periodic boundary (then up to three segments, each with its
          // shift); rows whose y-z extent is beyond reach of the atom are skipped.
          const double wy = box_[1] / nb3[1], wz = box_[2] / nb3[2];
          auto gap = [](double lo, double hi, double x) { return x < lo ? lo - x : (x > hi ? x - hi : 0.0); };
          // Branch-free compaction: every candidate is written, and the count advances by one
          // for a hit (a quarter of them: a branch on it would be mispredicted often).
          const int self_rank = idrank[static_cast<std::size_t>(i)];
          auto scan = [&](int k0, int k1, double shx, double shy, double shz) {
            if (ncand + (k1 - k0) + 16 > cand.size()) cand.resize(2 * (ncand + (k1 - k0)) + 16);
            const ScanQuery q{xi, yi, zi, shx, shy, shz, rl2, self_rank, min_rank, max_local};
            ncand += static_cast<std::size_t>(scan_candidates(q, k1 - k0, psx + k0, psy + k0, psz + k0, prank + k0,
                                                              plocal + k0, cand.data() + ncand));
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
              if (half && !own_i) {
                // A ghost's slot keeps owned partners only: bins without an owned atom (most of
                // its stencil: the block's bins hold its owned atoms, the rest ghosts) are skipped.
                for (int dx = -reach; dx <= reach; ++dx) {
                  double shx;
                  const std::size_t b = row + static_cast<std::size_t>(wrap_bin(b0 + dx, 0, &shx));
                  if (has_owned[b] && bin_max_rank[b] > slot) scan(count[b], count[b + 1], shx, shy, shz);
                }
                continue;
              }
              const int lo = b0 - reach, hi = b0 + reach, n0 = nb3[0];
              if (half) {
                int top = -1;
                for (int dx = -reach; dx <= reach; ++dx) {
                  double shx;
                  top = std::max(top, bin_max_rank[row + static_cast<std::size_t>(wrap_bin(b0 + dx, 0, &shx))]);
                }
                if (top <= slot) continue;
              }
              if (lo < 0) scan(count[row + n0 + lo], count[row + n0], box_[0], shy, shz);
              scan(count[row + std::max(lo, 0)], count[row + std::min(hi, n0 - 1) + 1], 0.0, shy, shz);
              if (hi >= n0) scan(count[row], count[row + hi - n0 + 1], -box_[0], shy, shz);
            }
          }
        }
        // Ascending global id: the force on an atom sums its pairs in the same order at any rank
        // count and whenever the list was built (a restart rebuilds it elsewhere in time).
        if (ncand > 0) {
          const auto first = cand.begin(), last = cand.begin() + static_cast<std::ptrdiff_t>(ncand);
          const int lo = *std::min_element(first, last), hi = *std::max_element(first, last);
          const int w0 = lo >> 6, w1 = hi >> 6;
          // Written in place (no push_back: its capacity check per entry was measurable).
          const std::size_t base = mine.size();
          mine.resize(base + ncand);
          int* out = mine.data() + base;
          const int* const rank_to_local = by_rank.data();
          if (w1 - w0 < 4 * static_cast<int>(ncand)) {
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
          if (half) {  // full-list entries: each pair once for each of its owned atoms
            std::int64_t e = 0;
            for (std::size_t q = base; q < mine.size(); ++q) e += own_i + (mine[q] < nown);
            entries_int += e;
          } else {
            entries_int += static_cast<std::int64_t>(ncand);
          }
        }
        counts_per_atom[static_cast<std::size_t>(slot)] = static_cast<std::int64_t>(ncand);
      }
      entries[t] = static_cast<double>(entries_int);
    }
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
    if (half_) {
      for (int d = 0; d < 3; ++d) fit(f_[d], static_cast<std::size_t>(std::max(nlocal, 1)));
      fit(pe_, static_cast<std::size_t>(std::max(nlocal, 1)));
      fit(vir_, static_cast<std::size_t>(std::max(nlocal, 1)));
    }
    if (half_) {
      fit(order_, static_cast<std::size_t>(std::max(nlocal, 1)));
      if (nlocal > 0) std::memcpy(order_.data(), by_rank.data(), sizeof(int) * static_cast<std::size_t>(nlocal));
    }
    // The list on the backend (grown as needed: never a dropped pair).
    const Backend where = ex.backend();
    if (nbr_.size() < npairs || nbr_.size() == 0) nbr_ = Buffer<int>(where, std::max<std::size_t>(npairs + npairs / 4, 1));
    // The threads' parts, joined in thread order straight into the list's buffer.
    std::size_t at = 0;
    for (const auto& p : part) {
      if (!p.empty()) memory::copy(ex, where, nbr_.data() + at, Backend::host, p.data(), p.size() * sizeof(int));
      at += p.size();
    }
    if (s_.rdf_every > 0) {  // the radial distribution function reads the list on the host
      host_list_.clear();
      for (const auto& p : part) host_list_.insert(host_list_.end(), p.begin(), p.end());
      host_start_ = start;
      host_order_ = half_ ? by_rank : std::vector<int>();
    }
    fit(start_, start.size());
    memory::copy(ex, where, start_.data(), Backend::host, start.data(), start.size() * sizeof(std::int64_t));
    pairs_ = 0;
    for (double e : entries) pairs_ += e;
    ++builds_;
    (void)comm;
  }

  // The local atoms (owned, then ghosts) to the backend: positions (and, for the owned, the
  // positions the next list check measures from), global ids and types.
  void upload_local(const std::vector<double>* lx, const std::vector<std::int64_t>& lid, const std::vector<int>& ltype) {
    const Exec& ex = ctx_.exec;
    const Backend where = ex.backend();
    const std::size_t nlocal = lid.size(), n = std::max<std::size_t>(nlocal, 1);
    for (int d = 0; d < 3; ++d) {
      fit(x_[d], n);
      if (nlocal > 0) memory::copy(ex, where, x_[d].data(), Backend::host, lx[d].data(), sizeof(double) * nlocal);
      if (nown_ > 0) memory::copy(ex, where, x0_[d].data(), Backend::host, lx[d].data(), sizeof(double) * static_cast<std::size_t>(nown_));
    }
    fit(type_, n);
    fit(idd_, n);
    if (nlocal > 0) {
      memory::copy(ex, where, type_.data(), Backend::host, ltype.data(), sizeof(int) * nlocal);
      memory::copy(ex, where, idd_.data(), Backend::host, lid.data(), sizeof(std::int64_t) * nlocal);
    }
  }

  // The full Verlet list built by kernels on the backend (md_kernels.cpp: bin_keys .. list_fill),
  // from the positions and ids in x_ and idd_ (owned, then ghosts). At one rank the owned atoms
  // are first put in bin order (a stable radix sort by list bin, then every per-atom array
  // gathered): partners are then near in memory, which a GPU's gathers need, and the bins need no
  // index array. Results do not depend on the order (forces sum in id order; thermo sums are exact).
  void build_list_kernels() {
    const Exec& ex = ctx_.exec;
    const Backend where = ex.backend();
    const int nlocal = nown_ + nghost_;
    const std::size_t nl = static_cast<std::size_t>(std::max(nlocal, 1));
    ListGrid g;
    const double rl = s_.cutoff + s_.skin;
    g.rl2 = rl * rl;
    g.brute = false;
    for (int d = 0; d < 3; ++d) {
      g.nb[d] = std::max(1, static_cast<int>(std::floor(box_[d] / rl)));
      g.box[d] = box_[d];
      g.brute = g.brute || g.nb[d] < 3;
    }
    ListInput in;
    in.x = x_[0].data();
    in.y = x_[1].data();
    in.z = x_[2].data();
    in.id = idd_.data();
    in.nown = nown_;
    in.nlocal = nlocal;
    in.g = g;
    std::size_t sort_bytes = 0, scan_bytes = 0;
    fit(counts_, static_cast<std::size_t>(std::max(nown_, 1)));
    fit(start_, static_cast<std::size_t>(nown_) + 1);
    CUMULUS_KERNEL(ex, kernels, prefix_sum)(ex, counts_.data(), start_.data(), nown_, nullptr, &scan_bytes);
    if (!g.brute && nlocal > 0) {
      const int nbins = g.nb[0] * g.nb[1] * g.nb[2];
      fit(key_in_, nl);
      fit(key_out_, nl);
      fit(val_in_, nl);
      fit(val_out_, nl);
      fit(bin_start_, static_cast<std::size_t>(nbins) + 1);
      CUMULUS_KERNEL(ex, kernels, sort_pairs)(ex, key_in_.data(), key_out_.data(), val_in_.data(), val_out_.data(), nlocal,
                                              nbins, nullptr, &sort_bytes);
      fit(temp_, std::max<std::size_t>({sort_bytes, scan_bytes, 1}));
      CUMULUS_KERNEL(ex, kernels, bin_keys)(ex, in, nlocal, key_in_.data(), val_in_.data());
      CUMULUS_KERNEL(ex, kernels, sort_pairs)(ex, key_in_.data(), key_out_.data(), val_in_.data(), val_out_.data(), nlocal,
                                              nbins, temp_.data(), &sort_bytes);
      if (resident_) {
        permute_owned(val_out_.data());
        in.bin_atoms = nullptr;
      } else {
        in.bin_atoms = val_out_.data();
      }
      CUMULUS_KERNEL(ex, kernels, bin_bounds)(ex, key_out_.data(), nlocal, nbins, bin_start_.data());
      in.bin_start = bin_start_.data();
    } else {
      fit(temp_, std::max<std::size_t>(scan_bytes, 1));
    }
    // The next list check measures from here.
    for (int d = 0; d < 3; ++d)
      if (nown_ > 0) memory::copy(ex, where, x0_[d].data(), where, x_[d].data(), sizeof(double) * static_cast<std::size_t>(nown_));
    CUMULUS_KERNEL(ex, kernels, list_count)(ex, in, counts_.data());
    CUMULUS_KERNEL(ex, kernels, prefix_sum)(ex, counts_.data(), start_.data(), nown_, temp_.data(), &scan_bytes);
    std::int64_t total = 0;
    memory::copy(ex, Backend::host, &total, where, start_.data() + nown_, sizeof(std::int64_t));
    if (nbr_.size() < static_cast<std::size_t>(total) || nbr_.size() == 0)
      nbr_ = Buffer<int>(where, std::max<std::size_t>(static_cast<std::size_t>(total + total / 4), 1));
    CUMULUS_KERNEL(ex, kernels, list_fill)(ex, in, start_.data(), nbr_.data());
    half_ = false;
    nslots_ = nown_;
    pairs_ = static_cast<double>(total);
    if (s_.rdf_every > 0) {  // the radial distribution function reads the list on the host
      host_start_.resize(static_cast<std::size_t>(nown_) + 1);
      memory::copy(ex, Backend::host, host_start_.data(), where, start_.data(), host_start_.size() * sizeof(std::int64_t));
      host_list_.resize(static_cast<std::size_t>(total));
      if (total > 0) memory::copy(ex, Backend::host, host_list_.data(), where, nbr_.data(), host_list_.size() * sizeof(int));
      host_order_.clear();
    }
    ++builds_;
  }
  // Every per-atom array of the owned atoms reordered: new atom k is old atom perm[k].
  void permute_owned(const int* perm) {
    const Exec& ex = ctx_.exec;
    const Backend where = ex.backend();
    const int n = nown_;
    if (n == 0) return;
    const std::size_t un = static_cast<std::size_t>(n);
    fit(scratch_f64_, un);
    fit(scratch_i32_, un);
    fit(scratch_i64_, un);
    auto f64 = [&](Buffer<double>& b) {
      CUMULUS_KERNEL(ex, kernels, gather_f64)(ex, b.data(), scratch_f64_.data(), perm, n);
      memory::copy(ex, where, b.data(), where, scratch_f64_.data(), un * sizeof(double));
    };
    auto i32 = [&](Buffer<int>& b) {
      CUMULUS_KERNEL(ex, kernels, gather_i32)(ex, b.data(), scratch_i32_.data(), perm, n);
      memory::copy(ex, where, b.data(), where, scratch_i32_.data(), un * sizeof(int));
    };
    for (int d = 0; d < 3; ++d) {
      f64(x_[d]);
      f64(v_[d]);
      i32(img_[d]);
    }
    f64(work_);
    i32(type_);
    CUMULUS_KERNEL(ex, kernels, gather_i64)(ex, idd_.data(), scratch_i64_.data(), perm, n);
    memory::copy(ex, where, idd_.data(), where, scratch_i64_.data(), un * sizeof(std::int64_t));
  }

  // Owned atoms that left this rank's block go to their new owners (id, position, velocity, image).
  void migrate() {
    std::vector<std::vector<int>> out(static_cast<std::size_t>(np_));
    std::vector<int> keep;
    for (int i = 0; i < nown_; ++i) {
      const double p[3] = {hx_[0][static_cast<std::size_t>(i)], hx_[1][static_cast<std::size_t>(i)], hx_[2][static_cast<std::size_t>(i)]};
      const int r = owner_of(p);
      if (r == me_) keep.push_back(i);
      else out[static_cast<std::size_t>(r)].push_back(i);
    }
    std::vector<int> counts;
    const std::vector<double> recv = exchange_records(out, 12, [&](int i, double* rec) {
      for (int d = 0; d < 3; ++d) {
        rec[d] = hx_[d][static_cast<std::size_t>(i)];
        rec[3 + d] = hv_[d][static_cast<std::size_t>(i)];
        rec[6 + d] = hi_[d][static_cast<std::size_t>(i)];
      }
      rec[9] = static_cast<double>(hid_[static_cast<std::size_t>(i)]);
      rec[10] = hw_[static_cast<std::size_t>(i)];
      rec[11] = htype_[static_cast<std::size_t>(i)];
    }, &counts);
    std::vector<double> nx[3], nv[3];
    std::vector<int> ni[3];
    std::vector<std::int64_t> nid;
    std::vector<int> ntype;
    std::vector<double> nw;
    for (int i : keep) {
      nw.push_back(hw_[static_cast<std::size_t>(i)]);
      for (int d = 0; d < 3; ++d) {
        nx[d].push_back(hx_[d][static_cast<std::size_t>(i)]);
        nv[d].push_back(hv_[d][static_cast<std::size_t>(i)]);
        ni[d].push_back(hi_[d][static_cast<std::size_t>(i)]);
      }
      nid.push_back(hid_[static_cast<std::size_t>(i)]);
      ntype.push_back(htype_[static_cast<std::size_t>(i)]);
    }
    for (std::size_t k = 0; k < recv.size() / 12; ++k) {
      for (int d = 0; d < 3; ++d) {
        nx[d].push_back(recv[12 * k + d]);
        nv[d].push_back(recv[12 * k + 3 + d]);
        ni[d].push_back(static_cast<int>(recv[12 * k + 6 + d]));
      }
      nid.push_back(static_cast<std::int64_t>(recv[12 * k + 9]));
      nw.push_back(recv[12 * k + 10]);
      ntype.push_back(static_cast<int>(recv[12 * k + 11]));
    }
    for (int d = 0; d < 3; ++d) {
      hx_[d].swap(nx[d]);
      hv_[d].swap(nv[d]);
      hi_[d].swap(ni[d]);
    }
    hid_.swap(nid);
    htype_.swap(ntype);
    hw_.swap(nw);
    nown_ = static_cast<int>(hid_.size());
  }

  // Sends `width` doubles per listed atom to each rank (pack(i, record) fills them); returns what
  // arrives, senders in rank order. `counts` receives the number of records from each rank.
  template <class Pack>
  std::vector<double> exchange_records(const std::vector<std::vector<int>>& lists, int width, Pack pack,
                                       std::vector<int>* counts) {
    std::vector<int> scount(static_cast<std::size_t>(np_)), rcount(static_cast<std::size_t>(np_));
    std::vector<int> sdisp(static_cast<std::size_t>(np_) + 1, 0), rdisp(static_cast<std::size_t>(np_) + 1, 0);
    std::vector<double> send;
    for (int r = 0; r < np_; ++r) {
      scount[static_cast<std::size_t>(r)] = static_cast<int>(lists[static_cast<std::size_t>(r)].size()) * width;
      sdisp[static_cast<std::size_t>(r) + 1] = sdisp[static_cast<std::size_t>(r)] + scount[static_cast<std::size_t>(r)];
      for (int i : lists[static_cast<std::size_t>(r)]) {
        send.resize(send.size() + static_cast<std::size_t>(width));
        pack(i, &send[send.size() - static_cast<std::size_t>(width)]);
      }
    }
    mpi_check(MPI_Alltoall(scount.data(), 1, MPI_INT, rcount.data(), 1, MPI_INT, ctx_.comm.raw()), "MPI_Alltoall");
    for (int r = 0; r < np_; ++r) rdisp[static_cast<std::size_t>(r) + 1] = rdisp[static_cast<std::size_t>(r)] + rcount[static_cast<std::size_t>(r)];
    std::vector<double> recv(static_cast<std::size_t>(rdisp[static_cast<std::size_t>(np_)]));
    mpi_check(MPI_Alltoallv(send.data(), scount.data(), sdisp.data(), MPI_DOUBLE, recv.data(), rcount.data(),
                            rdisp.data(), MPI_DOUBLE, ctx_.comm.raw()),
              "MPI_Alltoallv");
    counts->assign(static_cast<std::size_t>(np_), 0);
    for (int r = 0; r < np_; ++r) (*counts)[static_cast<std::size_t>(r)] = rcount[static_cast<std::size_t>(r)] / width;
    return recv;
  }

  // Every step between rebuilds: the ghosts' new positions from their owners (same lists, so the
  // counts are known from the build: one MPI_Alltoallv, buffers reused). The host builder's runs
  // pack from and unpack into the position arrays directly; otherwise (CUDA, or kernel-built lists)
  // kernels pack the sent atoms on the backend and unpack the arrivals there, so only the ghost
  // data crosses to the host and back (MPI here is not assumed to be CUDA-aware).
  void forward_ghosts() {
    if (np_ == 1) return;
    ScopedTimer timer("md.ghosts");
    const Exec& ex = ctx_.exec;
    const bool direct = ex.backend() == Backend::host && !kernel_build_;
    const std::size_t P = static_cast<std::size_t>(np_);
    fwd_scount_.assign(P, 0);
    fwd_rcount_.assign(P, 0);
    fwd_sdisp_.assign(P + 1, 0);
    fwd_rdisp_.assign(P + 1, 0);
    for (std::size_t r = 0; r < P; ++r) {
      fwd_scount_[r] = 3 * static_cast<int>(send_lists_[r].size());
      fwd_rcount_[r] = 3 * recv_counts_[r];
      fwd_sdisp_[r + 1] = fwd_sdisp_[r] + fwd_scount_[r];
      fwd_rdisp_[r + 1] = fwd_rdisp_[r] + fwd_rcount_[r];
    }
    const std::size_t nsend = static_cast<std::size_t>(fwd_sdisp_[P]), nrecv = static_cast<std::size_t>(fwd_rdisp_[P]);
    fwd_send_.resize(nsend);
    fwd_recv_.resize(nrecv);
    if (direct) {
      const double* const x = x_[0].data();
      const double* const y = x_[1].data();
      const double* const z = x_[2].data();
      double* out = fwd_send_.data();
      for (std::size_t r = 0; r < P; ++r)
        for (int i : send_lists_[r]) {
          *out++ = x[i];
          *out++ = y[i];
          *out++ = z[i];
        }
    } else if (nsend > 0) {
      CUMULUS_KERNEL(ex, kernels, pack_positions)(ex, atoms(), send_index_.data(), static_cast<int>(nsend / 3),
                                                  fwd_dev_.data());
      memory::copy(ex, Backend::host, fwd_send_.data(), ex.backend(), fwd_dev_.data(), nsend * sizeof(double));
    }
    mpi_check(MPI_Alltoallv(fwd_send_.data(), fwd_scount_.data(), fwd_sdisp_.data(), MPI_DOUBLE, fwd_recv_.data(),
                            fwd_rcount_.data(), fwd_rdisp_.data(), MPI_DOUBLE, ctx_.comm.raw()),
              "MPI_Alltoallv");
    const double* in = fwd_recv_.data();
    if (direct) {
      double* const gx = x_[0].data() + nown_;
      double* const gy = x_[1].data() + nown_;
      double* const gz = x_[2].data() + nown_;
      for (int k = 0; k < nghost_; ++k) {
        gx[k] = in[3 * k];
        gy[k] = in[3 * k + 1];
        gz[k] = in[3 * k + 2];
      }
      return;
    }
    if (nghost_ > 0) {
      memory::copy(ex, ex.backend(), fwd_dev_.data(), Backend::host, in, nrecv * sizeof(double));
      CUMULUS_KERNEL(ex, kernels, unpack_positions)(ex, atoms(), fwd_dev_.data(), nown_, nghost_);
    }
  }
  // forward_ghosts' index of the atoms sent (all peers, in rank order) and staging on the backend.
  void upload_send_index() {
    std::vector<int> all;
    for (const auto& l : send_lists_) all.insert(all.end(), l.begin(), l.end());
    fit(send_index_, std::max<std::size_t>(all.size(), 1));
    if (!all.empty())
      memory::copy(ctx_.exec, ctx_.exec.backend(), send_index_.data(), Backend::host, all.data(), all.size() * sizeof(int));
    fit(fwd_dev_, 3 * std::max<std::size_t>({all.size(), static_cast<std::size_t>(nghost_), 1}));
  }
  Buffer<int> send_index_;
  Buffer<double> fwd_dev_;
  std::vector<double> fwd_send_, fwd_recv_;  // forward_ghosts' buffers
  std::vector<int> fwd_scount_, fwd_rcount_, fwd_sdisp_, fwd_rdisp_;

  Context ctx_;
  int me_, np_;
  DataFile data_;
  Setup s_;
  bool data_has_velocities_ = false;
  CartesianDecomposition decomp_;
  std::unique_ptr<PairStyle> pair_;
  std::vector<double> type_counts_;  // atoms of each type (global)
  std::vector<double> chain_xi_ = std::vector<double>(10, 0.0), chain_v_ = std::vector<double>(10, 0.0);
  double box_[3] = {0, 0, 0}, binw_[3] = {0, 0, 0};
  int nbins_[3] = {1, 1, 1};
  std::vector<int> owner_;
  std::int64_t n_total_ = 0;
  int nown_ = 0, nghost_ = 0;
  // Host copies of the owned atoms (kept current at rebuilds and for checkpoints).
  std::vector<double> hx_[3], hv_[3];
  std::vector<int> hi_[3];
  std::vector<std::int64_t> hid_;
  std::vector<int> htype_;
  std::vector<double> hw_;  // thermostat work per owned atom
  std::vector<std::vector<int>> send_lists_;
  std::vector<int> recv_counts_;
  Buffer<double> x_[3], v_[3], f_[3], x0_[3], pe_, vir_, work_, mass_;
  Buffer<int> img_[3], nbr_, type_;
  Buffer<std::int64_t> start_, idd_;
  std::vector<std::vector<int>> parts_;  // rebuild(): each OpenMP thread's share of the list
  long builds_ = 0, dangerous_ = 0;
  bool overdue_ = false;  // an atom moved more than half the skin since the last build
  double pairs_ = 0;
  std::vector<double> rdf_hist_;
  long rdf_samples_ = 0;
  std::vector<int> host_list_, host_order_;
  bool half_ = false, energies_fresh_ = false;
  int nslots_ = 0;
  Buffer<int> order_;
  // build_list_kernels(): whether it builds the list, whether the atoms then stay on the backend
  // between builds (one rank), and its buffers.
  bool kernel_build_ = false, resident_ = false;
  Buffer<int> key_in_, key_out_, val_in_, val_out_, bin_start_, scratch_i32_;
  Buffer<std::int64_t> counts_, scratch_i64_;
  Buffer<double> scratch_f64_;
  Buffer<unsigned char> temp_;
  std::vector<std::int64_t> host_start_;
  bool stale_ = false;
};

std::unique_ptr<Model> create(const Config& cfg, const Context& ctx) { return std::make_unique<MdModel>(cfg, ctx); }

void register_solver(SolverRegistry& r) {
  r.add(SolverEntry{"md", "molecular dynamics: Lennard-Jones atoms, Verlet lists, velocity Verlet, spatial decomposition",
                    declare_keys, check, create, {"position", "velocity", "image", "id", "type", "thermostat_work"}, true});
}

}  // namespace cumulus::md
