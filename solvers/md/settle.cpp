// SETTLE: the keys, the rigid molecules of the data file and their checks, and the constraint
// step (settle.hpp has the order of a step; settle_kernels.* the arithmetic).
#include "solvers/md/settle.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "core/constants.hpp"
#include "core/error.hpp"
#include "core/strings.hpp"
#include "solvers/md/setup.hpp"

namespace cumulus::md {

void declare_settle_keys(Schema& s) {
  s.key("md.constrain_bonds", ValueType::integer_array,
        "Bond types held at their length r0 (the data file's Bond Coeffs), as LAMMPS's fix shake b: with "
        "md.constrain_angles, rigid three-site molecules (water) by SETTLE; left out of md.bond_style")
      .def(std::vector<std::int64_t>{})
      .at_least(1);
  s.key("md.constrain_angles", ValueType::integer_array,
        "Angle types held at their theta0 (the data file's Angle Coeffs), as LAMMPS's fix shake a: each such angle and "
        "its two constrained bonds a rigid molecule (SETTLE); left out of md.angle_style")
      .def(std::vector<std::int64_t>{})
      .at_least(1);
}

bool uses_settle(const Config& cfg) {
  return !cfg.get<std::vector<std::int64_t>>("md.constrain_bonds").empty() ||
         !cfg.get<std::vector<std::int64_t>>("md.constrain_angles").empty();
}

RigidWater rigid_water(const Config& cfg, const DataFile* d) {
  RigidWater w;
  if (!uses_settle(cfg)) return w;
  const auto cb = cfg.get<std::vector<std::int64_t>>("md.constrain_bonds");
  const auto ca = cfg.get<std::vector<std::int64_t>>("md.constrain_angles");
  const std::string key = cb.empty() ? "md.constrain_angles" : "md.constrain_bonds";
  if (!d) cfg.fail(key, "needs a topology: a LAMMPS data file (md.data_file) with Bonds and Angles");
  const std::string path = data_file_path(cfg);
  if (cb.empty() || ca.empty())
    cfg.fail(cb.empty() ? "md.constrain_bonds" : "md.constrain_angles",
             "is empty: rigid molecules need both (the bonds and the angle between them); SHAKE/RATTLE for constrained "
             "bonds alone is not built yet");
  w.bond_type_constrained.assign(static_cast<std::size_t>(d->nbond_types) + 1, false);
  w.angle_type_constrained.assign(static_cast<std::size_t>(d->nangle_types) + 1, false);
  for (std::int64_t t : cb) {
    if (t > d->nbond_types)
      cfg.fail("md.constrain_bonds", strprintf("names bond type %lld, but %s declares %d bond types", static_cast<long long>(t),
                                               path.c_str(), d->nbond_types));
    const std::size_t k = static_cast<std::size_t>(t - 1);
    if (k >= d->bond_coeffs.size() || d->bond_coeffs[k].size() != 2 || !(d->bond_coeffs[k][1] > 0))
      cfg.fail("md.constrain_bonds", strprintf("holds bond type %lld at its r0, but %s gives no Bond Coeffs 'K r0' with r0 > 0 "
                                               "for it", static_cast<long long>(t), path.c_str()));
    w.bond_type_constrained[static_cast<std::size_t>(t)] = true;
  }
  for (std::int64_t t : ca) {
    if (t > d->nangle_types)
      cfg.fail("md.constrain_angles", strprintf("names angle type %lld, but %s declares %d angle types",
                                                static_cast<long long>(t), path.c_str(), d->nangle_types));
    const std::size_t k = static_cast<std::size_t>(t - 1);
    if (k >= d->angle_coeffs.size() || d->angle_coeffs[k].size() != 2)
      cfg.fail("md.constrain_angles", strprintf("holds angle type %lld at its theta0, but %s gives no Angle Coeffs 'K theta0' "
                                                "for it", static_cast<long long>(t), path.c_str()));
    const double theta0 = d->angle_coeffs[k][1];
    if (!(theta0 > 0 && theta0 < 180))
      cfg.fail("md.constrain_angles", strprintf("holds angle type %lld at theta0 = %g degrees (%s): a rigid molecule needs "
                                                "0 < theta0 < 180 (a straight or folded one has no plane)",
                                                static_cast<long long>(t), theta0, path.c_str()));
    w.angle_type_constrained[static_cast<std::size_t>(t)] = true;
  }
  std::map<std::int64_t, std::size_t> index;
  for (std::size_t k = 0; k < d->id.size(); ++k) index[d->id[k]] = k;
  // The constrained bonds by their atom pair.
  std::map<std::pair<std::int64_t, std::int64_t>, int> bonds;
  for (const Bonded& b : d->bonds)
    if (w.bond_type_constrained[static_cast<std::size_t>(b.type)])
      bonds[{std::min(b.atom[0], b.atom[1]), std::max(b.atom[0], b.atom[1])}] = b.type;
  std::set<std::pair<std::int64_t, std::int64_t>> used;
  w.atoms.assign(d->id.size(), {-1, -1, -1});
  w.type.assign(d->id.size(), 0);
  std::map<int, std::size_t> geometry_of;  // angle type -> geometry index
  for (const Bonded& a : d->angles) {
    if (!w.angle_type_constrained[static_cast<std::size_t>(a.type)]) continue;
    const std::int64_t o = a.atom[1], h1 = a.atom[0], h2 = a.atom[2];
    const auto b1 = bonds.find({std::min(o, h1), std::max(o, h1)}), b2 = bonds.find({std::min(o, h2), std::max(o, h2)});
    if (b1 == bonds.end() || b2 == bonds.end())
      cfg.fail("md.constrain_angles", strprintf("holds the angle %lld-%lld-%lld (type %d) of %s rigid, but its atoms %lld and %lld "
                                                "are not joined by a constrained bond (md.constrain_bonds) to its vertex %lld",
                                                static_cast<long long>(h1), static_cast<long long>(o), static_cast<long long>(h2),
                                                a.type, path.c_str(), static_cast<long long>(h1), static_cast<long long>(h2),
                                                static_cast<long long>(o)));
    const double r1 = d->bond_coeffs[static_cast<std::size_t>(b1->second - 1)][1],
                 r2 = d->bond_coeffs[static_cast<std::size_t>(b2->second - 1)][1];
    const double m1 = d->mass[static_cast<std::size_t>(d->type[index.at(h1)] - 1)],
                 m2 = d->mass[static_cast<std::size_t>(d->type[index.at(h2)] - 1)];
    if (r1 != r2 || m1 != m2)
      cfg.fail("md.constrain_angles", strprintf("the rigid molecule %lld-%lld-%lld of %s has %s (%g and %g): SETTLE takes two "
                                                "equal arms (SHAKE/RATTLE for other shapes is not built yet)",
                                                static_cast<long long>(h1), static_cast<long long>(o), static_cast<long long>(h2),
                                                path.c_str(), r1 != r2 ? "bonds of two lengths" : "end atoms of two masses",
                                                r1 != r2 ? r1 : m1, r1 != r2 ? r2 : m2));
    const double theta0 = d->angle_coeffs[static_cast<std::size_t>(a.type - 1)][1] * kPi / 180;
    const SettleGeometry g{r1, 2 * r1 * std::sin(0.5 * theta0)};
    std::size_t gi;
    const auto found = geometry_of.find(a.type);
    if (found == geometry_of.end()) {
      gi = w.geometry.size();
      geometry_of[a.type] = gi;
      w.geometry.push_back(g);
    } else {
      gi = found->second;
      if (w.geometry[gi].r_oh != g.r_oh)
        cfg.fail("md.constrain_angles", strprintf("angle type %d of %s joins constrained bonds of two lengths in different "
                                                  "molecules (%g and %g): give each geometry its own angle type",
                                                  a.type, path.c_str(), w.geometry[gi].r_oh, g.r_oh));
    }
    for (std::int64_t id : {o, h1, h2}) {
      const std::size_t k = index.at(id);
      if (w.atoms[k][0] >= 0)
        cfg.fail("md.constrain_angles", strprintf("atom %lld of %s is in two rigid molecules", static_cast<long long>(id), path.c_str()));
      w.atoms[k] = {o - 1, h1 - 1, h2 - 1};
      w.type[k] = static_cast<int>(gi);
    }
    used.insert({std::min(o, h1), std::max(o, h1)});
    used.insert({std::min(o, h2), std::max(o, h2)});
    ++w.molecules;
  }
  for (const auto& [pair, type] : bonds)
    if (!used.count(pair))
      cfg.fail("md.constrain_bonds", strprintf("holds the bond %lld-%lld (type %d) of %s rigid outside any rigid three-site "
                                               "molecule: SHAKE/RATTLE for such bonds is not built yet (only SETTLE's water)",
                                               static_cast<long long>(pair.first), static_cast<long long>(pair.second), type,
                                               path.c_str()));
  if (w.molecules == 0)
    cfg.fail("md.constrain_angles", "holds no angle of " + path + " rigid: no angle has a constrained type");
  return w;
}

Settle::Settle(const Exec& ex, const std::vector<SettleGeometry>& geometry, std::int64_t molecules)
    : ex_(&ex), host_(geometry), geometry_(Buffer<SettleGeometry>::copy_of(ex, geometry, 1)), molecules_(molecules) {}

std::string Settle::describe() const {
  std::string out = strprintf("; SETTLE: %lld rigid molecules", static_cast<long long>(molecules_));
  for (const SettleGeometry& g : host_) out += strprintf(" (O-H %g, H-H %g)", g.r_oh, g.r_hh);
  return out;
}

void Settle::keep_reference(MdAtoms& atoms) const {
  const Exec& ex = *ex_;
  const std::size_t n = static_cast<std::size_t>(atoms.nlocal());
  if (n == 0) return;
  for (int d = 0; d < 3; ++d)
    memory::copy(ex, ex.backend(), atoms.store.device<double>(atoms.reference_position, d), ex.backend(),
                 atoms.store.device<double>(atoms.position, d), n * sizeof(double));
}

void Settle::positions(const Comm& comm, MdAtoms& atoms, const Atoms& a, const TopologyView& t, double dt, std::int64_t step,
                       bool with_velocities) {
  const Exec& ex = *ex_;
  const int n = atoms.nown();
  for (auto& b : d_) fit(ex, b, static_cast<std::size_t>(std::max(n, 1)));
  const std::int64_t none = std::numeric_limits<std::int64_t>::max();
  std::int64_t bad = none;
  if (n > 0) {
    const ParticleStore& st = atoms.store;
    bad = CUMULUS_KERNEL(ex, settle_kernels, settle_displacements)(
        ex, a, t, geometry_.data(), st.device<double>(atoms.reference_position, 0), st.device<double>(atoms.reference_position, 1),
        st.device<double>(atoms.reference_position, 2), d_[0].data(), d_[1].data(), d_[2].data());
  }
  bad = comm.min(bad);
  if (bad != none)
    throw Error(strprintf("md: SETTLE found no rigid placement for the molecule of oxygen %lld (its data-file id) at step %lld: "
                          "its atoms moved too far in one step (the time step is too long, or the run blew up)",
                          static_cast<long long>(bad + 1), static_cast<long long>(step)),
                ExitCode::blow_up);
  if (n > 0)
    CUMULUS_KERNEL(ex, settle_kernels, settle_apply_positions)(ex, a, d_[0].data(), d_[1].data(), d_[2].data(),
                                                               with_velocities ? 1 / dt : 0.0);
}

// The velocity changes are virial_part's; here they are applied.
void Settle::velocities(MdAtoms& atoms, const Atoms& a, const TopologyView& t, double dt) {
  if (atoms.nown() == 0) return;
  virial_part(atoms, a, t, dt, 0.0, false);
  const Exec& ex = *ex_;
  CUMULUS_KERNEL(ex, settle_kernels, settle_apply_velocities)(ex, a, d_[0].data(), d_[1].data(), d_[2].data());
}

void Settle::virial_part(MdAtoms& atoms, const Atoms& a, const TopologyView& t, double dt, double centripetal, bool accumulate) {
  const Exec& ex = *ex_;
  const int n = atoms.nown();
  if (n == 0) return;
  for (auto& b : d_) fit(ex, b, static_cast<std::size_t>(n));
  fit(ex, virial_, static_cast<std::size_t>(n));
  CUMULUS_KERNEL(ex, settle_kernels, settle_velocity_changes)(ex, a, t, d_[0].data(), d_[1].data(), d_[2].data(),
                                                              virial_.data(), 2 / dt, centripetal, accumulate);
}

double Settle::sum_virial(const Comm& comm, const MdAtoms& atoms) const {
  constexpr int kExp = -60;
  const Exec& ex = *ex_;
  ExactSum s;
  if (atoms.nown() > 0) s = CUMULUS_KERNEL(ex, settle_kernels, settle_sum)(ex, virial_.data(), atoms.nown(), kExp);
  comm.sum_in_place(s.words(), ExactSum::kWords);
  double v = 0;
  return s.value(kExp, &v) ? v : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace cumulus::md
