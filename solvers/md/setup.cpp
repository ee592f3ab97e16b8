// The md solver's keys, their checks, and the set-up read from them.
#include "solvers/md/setup.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "core/error.hpp"
#include "core/memory.hpp"
#include "core/strings.hpp"
#include "solvers/md/barostat.hpp"
#include "solvers/md/bonded.hpp"
#include "solvers/md/lattice.hpp"
#include "solvers/md/force.hpp"
#include "solvers/md/constraints.hpp"
#include "solvers/md/kspace.hpp"

namespace cumulus::md {

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
  s.units = units_named(cfg.get<std::string>("md.units"));
  // The interaction range: the pair style's longest cutoff (only when the types are consistent;
  // check() reports them first).
  if (static_cast<int>(s.masses.size()) == s.ntypes) s.cutoff = force_style(s.pair_style).reach(cfg, s.ntypes);
  if (s.rdf_range <= 0) s.rdf_range = s.cutoff;
  return s;
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
  s.key("md.precision", ValueType::string,
        "double (every force term in fp64) or mixed (as OpenMM's and GROMACS's: the pair terms of lj/cut, lj/cut/coul/long "
        "and coul/long (from fp32 coordinates) and PME's grid, FFT and interpolation in fp32, summed in fixed point; the Ewald sum, bonded "
        "terms, constraints and integration in fp64). Either has the same bits at any rank count")
      .def(std::string("double"))
      .one_of({"double", "mixed"});
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
  for (const ForceStyle& p : force_styles()) styles.push_back(p.name);
  s.key("md.pair_style", ValueType::string, "Pair potential (a registered style; its keys follow)")
      .def(std::string("lj/cut"))
      .one_of(styles);
  for (const ForceStyle& p : force_styles()) p.declare_keys(s);
  s.key("md.dt", ValueType::real, "Time step (tau in lj units, fs in real units)").def(0.005).positive();
  s.key("md.units", ValueType::string,
        "Unit system, as LAMMPS's units command: lj (reduced) or real (Angstrom, fs, kcal/mol, g/mol, e, K, atm)")
      .def(std::string("lj"))
      .one_of({"lj", "real"});
  s.key("md.data_file", ValueType::string,
        "A LAMMPS data file (atom_style atomic, charge or full, orthogonal box; with the topology sections) to start "
        "from instead of a lattice; its Masses replace md.mass, its Velocities (if any) md.temperature. Relative to the "
        "job file's directory")
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
  declare_kspace_keys(s);
  declare_bonded_keys(s);
  declare_constraint_keys(s);
  declare_barostat_keys(s);
  s.key("md.thermostat_temperature", ValueType::real, "Bath temperature of the thermostat (-1: md.temperature)")
      .def(-1.0)
      .at_least(-1);
}

std::array<double, 3> box_lengths(const Setup& s, const DataFile* data) {
  std::array<double, 3> L{};
  for (int d = 0; d < 3; ++d) L[d] = data ? data->hi[d] - data->lo[d] : lattice_constant(s) * s.cells[d];
  return L;
}

// Ownership cells: a quarter of cutoff + skin wide, and a rank's block at least four of them (cutoff
// + skin) thick along a split axis. Finer than the list's bins so that the ranks' shares are even: on
// in.lj's box, 11 list bins split over 2 ranks are 5 and 6 (45% and 55% of the atoms), 47 cells
// are 23 and 24 (49% and 51%).
namespace {
constexpr int kOwnerCellsPerReach = 4;
Index3 owner_cells(const Setup& s, const std::array<double, 3>& L) {
  Index3 nb;
  for (int d = 0; d < 3; ++d)
    nb[d] = std::max(1, static_cast<int>(std::floor(L[d] * kOwnerCellsPerReach / (s.cutoff + s.skin))));
  return nb;
}
}  // namespace

// Along each split axis, the cells then rounded down to a multiple of the ranks there, so that the
// blocks are equal (wider cells are still at least a quarter of the reach; the split already had
// kOwnerCellsPerReach a rank): the water benchmark's 45 A box has 15 cells of 3 A, which 2 ranks
// split 7 and 8 (46 % and 54 % of the atoms, the second rank the whole run's pace); 14 split 7 and
// 7. Which rank owns an atom changes no bits (every sum is in id order).
CartesianDecomposition make_decomposition(const Setup& s, const std::array<double, 3>& L, int nranks) {
  const Index3 cells = owner_cells(s, L);
  CartesianDecomposition first(cells, {true, true, true}, nranks, 3, kOwnerCellsPerReach);
  Index3 even = cells;
  for (int d = 0; d < 3; ++d) even[d] = cells[d] / first.dims()[d] * first.dims()[d];
  if (even == cells) return first;
  return CartesianDecomposition(even, {true, true, true}, nranks, 3, kOwnerCellsPerReach, first.dims());
}

ChargeTotals charge_totals(const DataFile& d) {
  ChargeTotals c;
  c.natoms = static_cast<double>(d.natoms);
  for (double q : d.q) {
    c.qsum += q;
    c.qsqsum += q * q;
  }
  return c;
}

double coul_cutoff(const Config& cfg) {
  const double rc = cfg.get<double>("md.coul_cutoff");
  return rc > 0 ? rc : cfg.get<double>("md.cutoff");
}

namespace {
// A Coulomb pair style needs charges (a data file of atom_style charge or full) and a k-space
// style; a k-space style needs a Coulomb pair style. Then the k-space's own checks.
// Returns the k-space term's memory estimate (bytes over all ranks; 0 without one).
double check_charges(const Config& cfg, const DataFile* data) {
  const std::string pair = cfg.get<std::string>("md.pair_style"), kspace = cfg.get<std::string>("md.kspace_style");
  const bool coulomb = pair.find("coul") != std::string::npos;
  if (kspace != "none" && !coulomb)
    cfg.fail("md.kspace_style", "is " + kspace + ", but the pair style " + pair + " has no Coulomb term (lj/cut/coul/long, coul/long)");
  if (!coulomb) return 0;
  if (!data || data->atom_style == "atomic")
    cfg.fail("md.data_file", "pair style " + pair + " needs charges: a LAMMPS data file of atom_style charge or full");
  const std::array<double, 3> L{data->hi[0] - data->lo[0], data->hi[1] - data->lo[1], data->hi[2] - data->lo[2]};
  return check_kspace(cfg, L, charge_totals(*data), coul_cutoff(cfg));
}
}  // namespace

Config with_data_pair_coeffs(const Config& cfg, const DataFile& d) {
  const std::string style = cfg.get<std::string>("md.pair_style");
  if (d.pair_coeffs.empty() || style.rfind("lj/", 0) != 0) return cfg;
  if (cfg.where("md.epsilon") != "default" || cfg.where("md.sigma") != "default") return cfg;
  std::vector<bool> given(static_cast<std::size_t>(d.ntypes) + 1, false);
  for (const std::string& name : cfg.instances("md.pairs")) {
    const auto t = cfg.get<std::vector<std::int64_t>>("md.pairs." + name + ".types");
    if (t.size() == 2 && t[0] == t[1] && t[0] >= 1 && t[0] <= d.ntypes) given[static_cast<std::size_t>(t[0])] = true;
  }
  Config out = cfg;
  const std::string where = data_file_path(cfg) + " (Pair Coeffs)";
  for (int ty = 1; ty <= d.ntypes; ++ty) {
    const std::vector<double>& c = d.pair_coeffs[static_cast<std::size_t>(ty - 1)];
    if (c.empty() || given[static_cast<std::size_t>(ty)]) continue;
    if (c.size() < 2 || c.size() > 3)
      cfg.fail("md.data_file", strprintf("its Pair Coeffs give type %d %zu numbers: %s's are epsilon sigma [cutoff]", ty,
                                         c.size(), style.c_str()));
    const std::string k = strprintf("md.pairs.data_type%d.", ty);
    out.set(k + "types", std::vector<std::int64_t>{ty, ty}, where);
    out.set(k + "epsilon", c[0], where);
    out.set(k + "sigma", c[1], where);
    out.set(k + "cutoff", c.size() == 3 ? c[2] : 0.0, where);
  }
  return out;
}

void check(const Config& job, int nranks) {
  const auto c = job.get<std::vector<std::int64_t>>("md.cells");
  if (c.size() == 2) job.fail("md.cells", "has 2 entries: give one (all axes) or three");
  DataFile data;
  const std::string path = data_file_path(job);
  const bool from_file = !path.empty();
  if (from_file) {
    try {
      data = read_data_file(path, false);
    } catch (const InputError& e) {
      job.fail("md.data_file", e.what());
    }
  }
  // The data file's Pair Coeffs where the job gives none (as the model does).
  const Config cfg = from_file ? with_data_pair_coeffs(job, data) : job;
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
  const ForceStyle& style = force_style(cfg.get<std::string>("md.pair_style"));
  style.check(cfg, ntypes);
  if (cfg.get<std::string>("md.precision") == "mixed") {
    const std::string pair = cfg.get<std::string>("md.pair_style");
    if (pair != "lj/cut" && !cfg.get<bool>("md.coul_table"))
      cfg.fail("md.precision", "is mixed, which takes the tabulated Coulomb term (md.coul_table = true), not the exact erfc");
  }
  const double kspace_bytes = check_charges(cfg, from_file ? &data : nullptr);
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
  check_bonded(cfg, from_file ? &data : nullptr, L, s.cutoff + s.skin);
  constraint_topology(cfg, from_file ? &data : nullptr);
  check_barostat(cfg, L, s.cutoff + s.skin);
  if (natoms > 2e9) cfg.fail("md.cells", strprintf("%.3g atoms is more than cumulus indexes (2^31)", natoms));
  {
    // Memory per rank, an estimate made before anything is allocated: each atom (owned or ghost)
    // carries about 32 words of per-atom arrays (positions, velocities, forces, ids, types, images,
    // exchange buffers: ~256 bytes) and a neighbour list of 4-byte indices, one per atom within
    // cutoff + skin; a rank's ghosts are the shell of that reach around its block. Each owned atom
    // also has the kernel builder's count and start for each of its 27 bins (432 bytes).
    const double volume = L[0] * L[1] * L[2];
    const double reach = s.cutoff + s.skin;
    const double neighbours = natoms / volume * 4.18879 * reach * reach * reach;  // 4/3 pi r^3 n
    const double side = std::cbrt(volume / nranks);
    const double ghost_factor = std::pow((side + 2 * reach) / side, 3);
    // The k-space term's grid (PME) or vectors (Ewald), spread over the ranks as its atoms are.
    const double per_atom = (256.0 + 4.0 * neighbours) * ghost_factor + 432.0 + (natoms > 0 ? kspace_bytes / natoms : 0);
    check_node_memory(cfg, from_file ? "md.data_file" : "md.cells", natoms, per_atom, nranks, "atoms",
                      strprintf("about %.0f bytes per atom with ghosts and neighbour lists%s", per_atom,
                                kspace_bytes > 0 ? " and the k-space term" : ""));
  }
  check_decomposition(cfg, "md.cells", owner_cells(s, L), {true, true, true}, nranks, 3, kOwnerCellsPerReach,
                      strprintf("the box holds too few bins of cutoff + skin for %d ranks", nranks));
  if (s.rdf_range > s.cutoff)
    cfg.fail("md.rdf_range", strprintf("%g is beyond the cutoff %g (the longest of any type pair): the radial distribution function is sampled "
                                       "from the neighbour list, which holds pairs within the cutoff (plus the skin)",
                                       s.rdf_range, s.cutoff));
}

}  // namespace cumulus::md
