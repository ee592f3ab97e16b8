// Constraints: the keys, the clusters of the data file and their checks, and what every solver's
// step shares (constraints.hpp has the order of a step).
#include "solvers/md/constraints.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <tuple>

#include "core/constants.hpp"
#include "core/error.hpp"
#include "core/exact_sum.hpp"
#include "core/memory.hpp"
#include "core/strings.hpp"
#include "solvers/md/settle_kernels.hpp"
#include "solvers/md/setup.hpp"

namespace cumulus::md {

void declare_constraint_keys(Schema& s) {
  s.key("md.constrain_bonds", ValueType::integer_array,
        "Bond types held at their length r0 (the data file's Bond Coeffs), as LAMMPS's fix shake b: every bond of these "
        "types is a constraint (SHAKE/RATTLE; rigid three-site water by SETTLE); left out of md.bond_style")
      .def(std::vector<std::int64_t>{})
      .at_least(1);
  s.key("md.constrain_angles", ValueType::integer_array,
        "Angle types held at their theta0 (the data file's Angle Coeffs), as LAMMPS's fix shake a: each such angle's two "
        "bonds must be constrained (md.constrain_bonds); the angle then holds its end atoms' distance; left out of "
        "md.angle_style")
      .def(std::vector<std::int64_t>{})
      .at_least(1);
  s.key("md.settle", ValueType::boolean,
        "Rigid three-site molecules with two equal arms and end atoms of one mass (water) by SETTLE (closed form); false: "
        "by SHAKE/RATTLE like every other cluster")
      .def(true);
  s.key("md.shake_tolerance", ValueType::real,
        "SHAKE: every constrained distance to within this fraction of its length after each step's positions")
      .def(1e-10)
      .positive();
  s.key("md.shake_iterations", ValueType::integer,
        "SHAKE: the most Newton iterations a cluster's positions may take (they converge quadratically: 2 to 4 at "
        "1e-10 for a 2 fs step); more is a failure, exit 3, naming the cluster and the step")
      .def(std::int64_t{50})
      .at_least(1);
}

bool uses_constraints(const Config& cfg) {
  return !cfg.get<std::vector<std::int64_t>>("md.constrain_bonds").empty() ||
         !cfg.get<std::vector<std::int64_t>>("md.constrain_angles").empty();
}

namespace {

std::string id_list(const std::vector<std::int64_t>& ids) {
  std::string s;
  for (std::size_t k = 0; k < ids.size(); ++k) s += strprintf("%s%lld", k ? ", " : "", static_cast<long long>(ids[k]));
  return s;
}

// One cluster while it is being classified: its atoms (data-file ids, ascending), its constrained
// bonds and angles.
struct Cluster {
  std::vector<std::int64_t> atoms;
  std::vector<std::pair<std::pair<std::int64_t, std::int64_t>, int>> bonds;  // (ids, bond type)
  std::vector<const Bonded*> angles;
};

}  // namespace

ConstraintTopology constraint_topology(const Config& cfg, const DataFile* d) {
  ConstraintTopology c;
  if (!uses_constraints(cfg)) return c;
  const auto cb = cfg.get<std::vector<std::int64_t>>("md.constrain_bonds");
  const auto ca = cfg.get<std::vector<std::int64_t>>("md.constrain_angles");
  const std::string key = cb.empty() ? "md.constrain_angles" : "md.constrain_bonds";
  if (!d) cfg.fail(key, "needs a topology: a LAMMPS data file (md.data_file) with Bonds (and Angles)");
  const std::string path = data_file_path(cfg);
  if (cb.empty())
    cfg.fail("md.constrain_bonds", "is empty while md.constrain_angles is not: a constrained angle holds the distance between "
                                   "the ends of two constrained bonds, so both need their bond types here");
  c.bond_type_constrained.assign(static_cast<std::size_t>(d->nbond_types) + 1, false);
  c.angle_type_constrained.assign(static_cast<std::size_t>(d->nangle_types) + 1, false);
  for (std::int64_t t : cb) {
    if (t > d->nbond_types)
      cfg.fail("md.constrain_bonds", strprintf("names bond type %lld, but %s declares %d bond types", static_cast<long long>(t),
                                               path.c_str(), d->nbond_types));
    const std::size_t k = static_cast<std::size_t>(t - 1);
    if (k >= d->bond_coeffs.size() || d->bond_coeffs[k].size() != 2 || !(d->bond_coeffs[k][1] > 0))
      cfg.fail("md.constrain_bonds", strprintf("holds bond type %lld at its r0, but %s gives no Bond Coeffs 'K r0' with r0 > 0 "
                                               "for it", static_cast<long long>(t), path.c_str()));
    c.bond_type_constrained[static_cast<std::size_t>(t)] = true;
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
    c.angle_type_constrained[static_cast<std::size_t>(t)] = true;
  }
  std::map<std::int64_t, std::size_t> index;
  for (std::size_t k = 0; k < d->id.size(); ++k) index[d->id[k]] = k;
  auto r0 = [&](int type) { return d->bond_coeffs[static_cast<std::size_t>(type - 1)][1]; };
  auto mass = [&](std::int64_t id) { return d->mass[static_cast<std::size_t>(d->type[index.at(id)] - 1)]; };

  // The clusters: the atoms joined by constrained bonds (union-find over the data file's rows).
  std::vector<std::size_t> parent(d->id.size());
  std::iota(parent.begin(), parent.end(), std::size_t{0});
  auto root = [&](std::size_t k) {
    while (parent[k] != k) k = parent[k] = parent[parent[k]];
    return k;
  };
  std::map<std::pair<std::int64_t, std::int64_t>, int> bonds;  // constrained bonds by their ids
  for (const Bonded& b : d->bonds)
    if (c.bond_type_constrained[static_cast<std::size_t>(b.type)]) {
      const auto pair = std::make_pair(std::min(b.atom[0], b.atom[1]), std::max(b.atom[0], b.atom[1]));
      if (bonds.count(pair)) continue;  // a bond listed twice is one constraint
      bonds[pair] = b.type;
      const std::size_t i = root(index.at(b.atom[0])), j = root(index.at(b.atom[1]));
      parent[std::max(i, j)] = std::min(i, j);
    }
  std::map<std::size_t, Cluster> clusters;  // by root row: in the data file's order
  for (const auto& [pair, type] : bonds) clusters[root(index.at(pair.first))].bonds.push_back({pair, type});
  for (const Bonded& a : d->angles) {
    if (!c.angle_type_constrained[static_cast<std::size_t>(a.type)]) continue;
    const std::int64_t o = a.atom[1], h1 = a.atom[0], h2 = a.atom[2];
    if (!bonds.count({std::min(o, h1), std::max(o, h1)}) || !bonds.count({std::min(o, h2), std::max(o, h2)}))
      cfg.fail("md.constrain_angles", strprintf("holds the angle %lld-%lld-%lld (type %d) of %s rigid, but its atoms %lld and %lld "
                                                "are not both joined by a constrained bond (md.constrain_bonds) to its vertex %lld",
                                                static_cast<long long>(h1), static_cast<long long>(o), static_cast<long long>(h2),
                                                a.type, path.c_str(), static_cast<long long>(h1), static_cast<long long>(h2),
                                                static_cast<long long>(o)));
    clusters[root(index.at(o))].angles.push_back(&a);
  }
  for (std::size_t k = 0; k < d->id.size(); ++k)
    if (root(k) != k || clusters.count(k)) clusters[root(k)].atoms.push_back(d->id[k]);

  const bool settle = cfg.get<bool>("md.settle");
  c.water.atoms.assign(d->id.size(), {-1, -1, -1});
  c.water.type.assign(d->id.size(), 0);
  c.shake.atoms.assign(d->id.size(), {-1, -1, -1, -1});
  c.shake.type.assign(d->id.size(), 0);
  std::map<int, std::size_t> water_geometry;  // angle type -> geometry index
  std::map<std::vector<double>, std::size_t> shake_geometry;  // shape -> geometry index
  for (auto& entry : clusters) {
    Cluster& cl = entry.second;  // a named reference: lambdas below capture it (clang 14 takes no bindings)
    std::sort(cl.atoms.begin(), cl.atoms.end());
    // SETTLE's molecules: three atoms, two bonds of one length from the vertex of a constrained
    // angle to end atoms of one mass.
    if (cl.atoms.size() == 3 && cl.bonds.size() == 2 && cl.angles.size() == 1) {
      const Bonded& a = *cl.angles[0];
      const std::int64_t o = a.atom[1], h1 = a.atom[0], h2 = a.atom[2];
      const double r1 = r0(bonds.at({std::min(o, h1), std::max(o, h1)})), r2 = r0(bonds.at({std::min(o, h2), std::max(o, h2)}));
      if (settle && r1 == r2 && mass(h1) == mass(h2)) {
        const double theta0 = d->angle_coeffs[static_cast<std::size_t>(a.type - 1)][1] * kPi / 180;
        const SettleGeometry g{r1, 2 * r1 * std::sin(0.5 * theta0)};
        auto found = water_geometry.find(a.type);
        std::size_t gi;
        if (found == water_geometry.end()) {
          gi = c.water.geometry.size();
          water_geometry[a.type] = gi;
          c.water.geometry.push_back(g);
        } else {
          gi = found->second;
          if (c.water.geometry[gi].r_oh != g.r_oh)
            cfg.fail("md.constrain_angles", strprintf("angle type %d of %s joins constrained bonds of two lengths in different "
                                                      "molecules (%g and %g): give each geometry its own angle type",
                                                      a.type, path.c_str(), c.water.geometry[gi].r_oh, g.r_oh));
        }
        for (std::int64_t id : {o, h1, h2}) {
          const std::size_t k = index.at(id);
          c.water.atoms[k] = {o - 1, h1 - 1, h2 - 1};
          c.water.type[k] = static_cast<int>(gi);
        }
        ++c.water.molecules;
        continue;
      }
    }
    // SHAKE's clusters.
    const std::size_t nc = cl.bonds.size() + cl.angles.size();
    if (cl.atoms.size() > static_cast<std::size_t>(kShakeAtoms) || nc > 3)
      cfg.fail("md.constrain_bonds", strprintf("makes a cluster of %zu atoms (%s) held by %zu constrained distances in %s: SHAKE "
                                               "takes clusters of at most %d atoms and 3 distances (a central atom and up to "
                                               "three partners, as LAMMPS's fix shake); constrain fewer bond types",
                                               cl.atoms.size(), id_list(cl.atoms).c_str(), nc, path.c_str(), kShakeAtoms));
    auto place = [&](std::int64_t id) {
      return static_cast<int>(std::lower_bound(cl.atoms.begin(), cl.atoms.end(), id) - cl.atoms.begin());
    };
    ShakeGeometry g;
    g.natoms = static_cast<int>(cl.atoms.size());
    for (const auto& [pair, type] : cl.bonds) {
      g.p[g.nconstraints] = place(pair.first);
      g.q[g.nconstraints] = place(pair.second);
      g.length[g.nconstraints++] = r0(type);
    }
    for (const Bonded* a : cl.angles) {
      const std::int64_t o = a->atom[1], h1 = std::min(a->atom[0], a->atom[2]), h2 = std::max(a->atom[0], a->atom[2]);
      const double r1 = r0(bonds.at({std::min(o, h1), std::max(o, h1)})), r2 = r0(bonds.at({std::min(o, h2), std::max(o, h2)}));
      const double theta0 = d->angle_coeffs[static_cast<std::size_t>(a->type - 1)][1] * kPi / 180;
      g.p[g.nconstraints] = place(h1);
      g.q[g.nconstraints] = place(h2);
      g.length[g.nconstraints++] = std::sqrt(r1 * r1 + r2 * r2 - 2 * r1 * r2 * std::cos(theta0));
    }
    std::vector<double> shape = {static_cast<double>(g.natoms), static_cast<double>(g.nconstraints)};
    for (int e = 0; e < g.nconstraints; ++e) shape.insert(shape.end(), {static_cast<double>(g.p[e]), static_cast<double>(g.q[e]), g.length[e]});
    auto found = shake_geometry.find(shape);
    std::size_t gi;
    if (found == shake_geometry.end()) {
      gi = c.shake.geometry.size();
      shake_geometry[shape] = gi;
      c.shake.geometry.push_back(g);
    } else {
      gi = found->second;
    }
    std::array<std::int64_t, kShakeAtoms> ids = {-1, -1, -1, -1};
    for (std::size_t m = 0; m < cl.atoms.size(); ++m) ids[m] = cl.atoms[m] - 1;
    for (std::int64_t id : cl.atoms) {
      c.shake.atoms[index.at(id)] = ids;
      c.shake.type[index.at(id)] = static_cast<int>(gi);
    }
    ++c.shake.clusters;
    c.shake.constraints += g.nconstraints;
  }
  if (!ca.empty()) {
    bool any = false;
    for (const Bonded& a : d->angles) any = any || c.angle_type_constrained[static_cast<std::size_t>(a.type)];
    if (!any) cfg.fail("md.constrain_angles", "holds no angle of " + path + " rigid: no angle has a constrained type");
  }
  if (bonds.empty()) cfg.fail("md.constrain_bonds", "holds no bond of " + path + ": no bond has a constrained type");
  return c;
}

void keep_reference(const Exec& ex, MdAtoms& atoms, int first) {
  const int n = atoms.nlocal() - first;
  if (n <= 0) return;
  for (int d = 0; d < 3; ++d)
    memory::copy(ex, ex.backend(), atoms.store.device<double>(atoms.reference_position, d) + first, ex.backend(),
                 atoms.store.device<double>(atoms.position, d) + first, static_cast<std::size_t>(n) * sizeof(double));
}

double sum_constraint_virial(const Exec& ex, const Comm& comm, const double* v, int n) {
  constexpr int kExp = -60;
  ExactSum s;
  if (n > 0) s = CUMULUS_KERNEL(ex, settle_kernels, settle_sum)(ex, v, n, kExp);
  comm.sum_in_place(s.words(), ExactSum::kWords);
  double out = 0;
  return s.value(kExp, &out) ? out : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace cumulus::md
