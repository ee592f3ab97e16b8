// Bonded terms: the keys, the set-up checks against the data file, the styles by name, and the
// resolution of each owned atom's bonded partners to local indices (bonded.hpp says why every atom
// of a term holds it).
#include "solvers/md/bonded.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "core/error.hpp"
#include "core/strings.hpp"
#include "solvers/md/setup.hpp"
#include "solvers/md/shake_kernels.hpp"

namespace cumulus::md {

void declare_bonded_keys(Schema& s) {
  s.key("md.bond_style", ValueType::string,
        "Bonds of the data file: none (they only make special pairs, md.special_lj / md.special_coul; LAMMPS's bond_style "
        "zero) or harmonic (E = K (r - r0)^2, K and r0 per bond type from the data file's Bond Coeffs, as LAMMPS's "
        "bond_style harmonic)")
      .def(std::string("none"))
      .one_of({"none", "harmonic"});
  s.key("md.angle_style", ValueType::string,
        "Angles of the data file: none (not computed) or harmonic (E = K (theta - theta0)^2, K and theta0 in degrees per "
        "angle type from the data file's Angle Coeffs, as LAMMPS's angle_style harmonic)")
      .def(std::string("none"))
      .one_of({"none", "harmonic"});
}

bool uses_bonds(const Config& cfg) { return cfg.get<std::string>("md.bond_style") != "none"; }
bool uses_angles(const Config& cfg) { return cfg.get<std::string>("md.angle_style") != "none"; }

namespace {

// The coefficients of every type a section's entries use: present, `count` numbers each.
void check_coeffs(const Config& cfg, const std::string& key, const std::string& section, const std::vector<Bonded>& terms,
                  const std::vector<std::vector<double>>& coeffs, std::size_t count, const std::string& names) {
  const std::string style = cfg.get<std::string>(key);
  std::vector<bool> used(coeffs.size() + 1, false);
  int missing = 0;
  for (const Bonded& b : terms) {
    const std::size_t t = static_cast<std::size_t>(b.type - 1);
    if (t >= coeffs.size() || coeffs[t].empty()) {
      missing = b.type;
      break;
    }
    used[t] = true;
  }
  if (missing > 0)
    cfg.fail("md.data_file", data_file_path(cfg) + strprintf(" gives no %s for %s type %d: %s %s takes %s of each type from them", section.c_str(),
                                       section == "Bond Coeffs" ? "bond" : "angle", missing, key.c_str(), style.c_str(),
                                       names.c_str()));
  for (std::size_t t = 0; t < coeffs.size(); ++t)
    if (used[t] && coeffs[t].size() != count)
      cfg.fail("md.data_file", data_file_path(cfg) + strprintf(": its %s give type %zu %zu numbers: %s %s takes %zu (%s)", section.c_str(), t + 1,
                                         coeffs[t].size(), key.c_str(), style.c_str(), count, names.c_str()));
}

}  // namespace

void check_bonded(const Config& cfg, const DataFile* d, const std::array<double, 3>& L, double reach) {
  const bool bonds = uses_bonds(cfg), angles = uses_angles(cfg);
  // Constrained bonds and angles (constraints.hpp) need their atoms among the ghosts too.
  std::vector<bool> held_bond, held_angle;
  for (std::int64_t t : cfg.get<std::vector<std::int64_t>>("md.constrain_bonds")) {
    if (held_bond.size() <= static_cast<std::size_t>(t)) held_bond.resize(static_cast<std::size_t>(t) + 1, false);
    held_bond[static_cast<std::size_t>(t)] = true;
  }
  for (std::int64_t t : cfg.get<std::vector<std::int64_t>>("md.constrain_angles")) {
    if (held_angle.size() <= static_cast<std::size_t>(t)) held_angle.resize(static_cast<std::size_t>(t) + 1, false);
    held_angle[static_cast<std::size_t>(t)] = true;
  }
  auto held = [](const std::vector<bool>& types, int t) { return static_cast<std::size_t>(t) < types.size() && types[static_cast<std::size_t>(t)]; };
  if (!d) {
    if (!bonds && !angles) return;
    cfg.fail(bonds ? "md.bond_style" : "md.angle_style", "needs a topology: a LAMMPS data file (md.data_file) with Bonds or Angles");
  }
  if (!bonds && !angles && held_bond.empty()) return;
  if (bonds) check_coeffs(cfg, "md.bond_style", "Bond Coeffs", d->bonds, d->bond_coeffs, 2, "K r0");
  if (angles) {
    check_coeffs(cfg, "md.angle_style", "Angle Coeffs", d->angles, d->angle_coeffs, 2, "K theta0");
    for (std::size_t t = 0; t < d->angle_coeffs.size(); ++t)
      if (d->angle_coeffs[t].size() == 2 && !(d->angle_coeffs[t][1] >= 0 && d->angle_coeffs[t][1] <= 180))
        cfg.fail("md.data_file", data_file_path(cfg) + strprintf(": its Angle Coeffs give type %zu theta0 = %g degrees: expected 0 to 180", t + 1,
                                           d->angle_coeffs[t][1]));
  }
  // The map from ids to local atoms is an array as long as the largest id (per rank, 4 bytes an
  // entry): ids may leave gaps, within reason.
  std::int64_t max_id = 0;
  for (std::int64_t id : d->id) max_id = std::max(max_id, id);
  if (max_id > 4 * d->natoms)
    cfg.fail("md.data_file", data_file_path(cfg) + strprintf(": its largest atom id is %lld for %lld atoms: with bonded terms, ids must be at most 4 "
                                       "times the atom count (each rank maps ids to atoms through an array)",
                                       static_cast<long long>(max_id), static_cast<long long>(d->natoms)));
  // Every pair of atoms of a term: near enough for the ghosts to hold them, and (with image flags)
  // along the nearest image, which is the one the solver takes.
  std::map<std::int64_t, std::size_t> index;
  for (std::size_t k = 0; k < d->id.size(); ++k) index[d->id[k]] = k;
  auto check_pair = [&](const char* what, std::int64_t a, std::int64_t b) {
    const std::size_t i = index.at(a), j = index.at(b);
    double r2 = 0, u2 = 0;
    int axis = -1;
    for (int c = 0; c < 3; ++c) {
      const double dx = d->x[c][j] - d->x[c][i];
      const double unwrapped = dx + (d->image[c][j] - d->image[c][i]) * L[static_cast<std::size_t>(c)];
      const double h = 0.5 * L[static_cast<std::size_t>(c)];
      double m = std::fmod(dx, L[static_cast<std::size_t>(c)]);
      m = m > h ? m - 2 * h : (m < -h ? m + 2 * h : m);
      r2 += m * m;
      u2 += unwrapped * unwrapped;
      if (d->has_image_flags && std::fabs(unwrapped) > h) axis = c;
    }
    if (axis >= 0)
      cfg.fail("md.data_file", data_file_path(cfg) + strprintf(": the %s between atoms %lld and %lld is %.6g long with the file's image flags, more than "
                                         "half the box along axis %d (%g): it would be computed through another image",
                                         what, static_cast<long long>(a), static_cast<long long>(b), std::sqrt(u2), axis,
                                         L[static_cast<std::size_t>(axis)]));
    if (std::sqrt(r2) >= reach)
      cfg.fail("md.data_file", data_file_path(cfg) + strprintf(": the %s between atoms %lld and %lld is %.6g long: a bonded partner must be nearer than "
                                         "the cutoff + skin (%g), the distance ghosts reach",
                                         what, static_cast<long long>(a), static_cast<long long>(b), std::sqrt(r2), reach));
  };
  for (const Bonded& b : d->bonds)
    if (bonds || held(held_bond, b.type)) check_pair("bond", b.atom[0], b.atom[1]);
  for (const Bonded& b : d->angles)
    if (angles || held(held_angle, b.type)) {
      check_pair("angle", b.atom[0], b.atom[1]);
      check_pair("angle", b.atom[1], b.atom[2]);
      check_pair("angle", b.atom[0], b.atom[2]);
    }
}

std::vector<std::unique_ptr<BondedTerm>> make_bonded_terms(const Config& cfg, const DataFile& d, const Exec& ex) {
  std::vector<std::unique_ptr<BondedTerm>> terms;
  if (cfg.get<std::string>("md.bond_style") == "harmonic") terms.push_back(make_bond_harmonic(d.bond_coeffs, ex));
  if (cfg.get<std::string>("md.angle_style") == "harmonic") terms.push_back(make_angle_harmonic(d.angle_coeffs, ex));
  return terms;
}

BondedTopology::BondedTopology(const Exec& ex, std::int64_t natoms) : ex_(&ex), natoms_(natoms) {
  // Filled with -1 once; resolve() checks each entry's id, so it is never cleared again.
  map_ = Buffer<int>::copy_of(ex, std::vector<int>(static_cast<std::size_t>(std::max<std::int64_t>(natoms, 1)), -1));
}

void BondedTopology::resolve(const Comm& comm, const MdAtoms& atoms, std::int64_t step) {
  const Exec& ex = *ex_;
  const ParticleStore& st = atoms.store;
  const int nown = atoms.nown(), nlocal = atoms.nlocal();
  const std::size_t n = static_cast<std::size_t>(std::max(nown, 1));
  fit(ex, bond_atom_, n * static_cast<std::size_t>(std::max(atoms.nbond, 1)));
  fit(ex, bond_type_, n * static_cast<std::size_t>(std::max(atoms.nbond, 1)));
  fit(ex, angle_atom_, 3 * n * static_cast<std::size_t>(std::max(atoms.nangle, 1)));
  fit(ex, angle_type_, n * static_cast<std::size_t>(std::max(atoms.nangle, 1)));
  fit(ex, settle_atom_, 3 * n);
  fit(ex, settle_type_, n);
  fit(ex, shake_atom_, kShakeAtoms * n);
  fit(ex, shake_type_, n);
  const std::int64_t none = std::numeric_limits<std::int64_t>::max();
  std::int64_t missing = none;
  // The columns' answers go to missing_ and come back in one read (one wait for a GPU, not one a column).
  const std::size_t columns = static_cast<std::size_t>(atoms.nbond + 3 * atoms.nangle + (atoms.settle_atom >= 0 ? 3 : 0) +
                                                       (atoms.shake_atom >= 0 ? kShakeAtoms : 0));
  fit(ex, missing_, std::max<std::size_t>(columns, 1));
  std::size_t used = 0;
  if (nown > 0) {
    const std::int64_t* id = st.device<std::int64_t>(atoms.id);
    CUMULUS_KERNEL(ex, bonded_kernels, map_ids)(ex, id, nown, nlocal, map_.data());
    auto resolve = [&](int field, int c, int* out) {
      CUMULUS_KERNEL(ex, bonded_kernels, resolve_column)(ex, st.device<std::int64_t>(field, c), id, map_.data(), nown, nlocal, out,
                                                         missing_.data() + used++);
    };
    const std::size_t col = static_cast<std::size_t>(nown);
    for (int c = 0; c < atoms.nbond; ++c) {
      resolve(atoms.bond_atom, c, bond_atom_.data() + c * col);
      memory::copy(ex, ex.backend(), bond_type_.data() + c * col, ex.backend(), st.device<int>(atoms.bond_type, c), sizeof(int) * col);
    }
    for (int c = 0; c < atoms.nangle; ++c) {
      for (int m = 0; m < 3; ++m) resolve(atoms.angle_atom, 3 * c + m, angle_atom_.data() + (3 * c + m) * col);
      memory::copy(ex, ex.backend(), angle_type_.data() + c * col, ex.backend(), st.device<int>(atoms.angle_type, c), sizeof(int) * col);
    }
    if (atoms.settle_atom >= 0) {
      for (int m = 0; m < 3; ++m) resolve(atoms.settle_atom, m, settle_atom_.data() + m * col);
      memory::copy(ex, ex.backend(), settle_type_.data(), ex.backend(), st.device<int>(atoms.settle_type), sizeof(int) * col);
    }
    if (atoms.shake_atom >= 0) {
      for (int m = 0; m < kShakeAtoms; ++m) resolve(atoms.shake_atom, m, shake_atom_.data() + m * col);
      memory::copy(ex, ex.backend(), shake_type_.data(), ex.backend(), st.device<int>(atoms.shake_type), sizeof(int) * col);
    }
  }
  if (used > 0) {
    std::vector<std::int64_t> got(used);
    memory::copy(ex, Backend::host, got.data(), ex.backend(), missing_.data(), used * sizeof(std::int64_t));
    for (const std::int64_t m : got) missing = std::min(missing, m);
  }
  const std::int64_t first = comm.min(missing);
  if (first != none)
    throw Error(strprintf("md: atom %lld (its data-file id)'s bonded partner is not within the cutoff + skin of its rank's block at step %lld: a "
                          "bond or angle has stretched beyond the ghost distance (the molecule blew apart, or the time step "
                          "is too long)",
                          static_cast<long long>(first + 1), static_cast<long long>(step)),
                ExitCode::blow_up);
  view_.bond_atom = bond_atom_.data();
  view_.bond_type = bond_type_.data();
  view_.nbond = atoms.nbond;
  view_.angle_atom = angle_atom_.data();
  view_.angle_type = angle_type_.data();
  view_.nangle = atoms.nangle;
  view_.settle_atom = atoms.settle_atom >= 0 ? settle_atom_.data() : nullptr;
  view_.settle_type = atoms.settle_atom >= 0 ? settle_type_.data() : nullptr;
  view_.shake_atom = atoms.shake_atom >= 0 ? shake_atom_.data() : nullptr;
  view_.shake_type = atoms.shake_atom >= 0 ? shake_type_.data() : nullptr;
  view_.nown = nown;
}

}  // namespace cumulus::md
