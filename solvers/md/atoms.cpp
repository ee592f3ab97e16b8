// The md solver's registered per-atom arrays and the kernels' view of them.
#include "solvers/md/atoms.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/strings.hpp"

#include "solvers/md/neighbor_list.hpp"

namespace cumulus::md {

using Scalar = ParticleStore::Scalar;

MdAtoms::MdAtoms(const Exec& ex, const std::vector<double>& masses, const AtomLayout& layout) : store(ex), ex_(&ex) {
  const bool charged = layout.charged;
  const int nspec = layout.nspecial, nb = layout.nbond, na = layout.nangle;
  position = store.add({"position", "sigma", Scalar::f64, 3, true, true, 0});
  velocity = store.add({"velocity", "sigma/tau", Scalar::f64, 3, layout.settle || layout.shake, true, 0});
  image = store.add({"image", "box lengths", Scalar::i32, 3, false, true, 0});
  work = store.add({"thermostat_work", "epsilon", Scalar::f64, 1, false, true, 0});  // energy a thermostat took out
  id = store.add({"id", "", Scalar::i64, 1, true, true, 0});
  type = store.add({"type", "", Scalar::i32, 1, true, true, 1});  // 1-based in files, as LAMMPS numbers types
  if (charged) {
    charge = store.add({"charge", "e", Scalar::f64, 1, true, true, 0});
    molecule = store.add({"molecule", "", Scalar::i64, 1, false, true, 0});
  }
  if (nspec > 0) {
    if (nspec > Atoms::kMaxSpecial)
      throw InputError(strprintf("an atom has %d special partners (1-2, 1-3, 1-4): at most %d are supported", nspec, Atoms::kMaxSpecial));
    nspecial = nspec;
    special = store.add({"special", "id * 4 + level", Scalar::i64, nspec, true, true, 0});
  }
  if (nb > 0) {
    nbond = nb;
    bond_atom = store.add({"bond_atom", "id", Scalar::i64, nb, false, true, 0});
    bond_type = store.add({"bond_type", "", Scalar::i32, nb, false, true, 1});
  }
  if (na > 0) {
    nangle = na;
    angle_atom = store.add({"angle_atom", "id", Scalar::i64, 3 * na, false, true, 0});
    angle_type = store.add({"angle_type", "", Scalar::i32, na, false, true, 1});
  }
  if (layout.settle) {
    settle_atom = store.add({"settle_atom", "id", Scalar::i64, 3, false, true, 0});
    settle_type = store.add({"settle_type", "", Scalar::i32, 1, false, true, 1});
  }
  if (layout.shake) {
    shake_atom = store.add({"shake_atom", "id", Scalar::i64, 4, false, true, 0});
    shake_type = store.add({"shake_type", "", Scalar::i32, 1, false, true, 1});
  }
  if (layout.settle || layout.shake)
    reference_position = store.add({"reference_position", "sigma", Scalar::f64, 3, true, false, 0});
  mass_ = Buffer<double>(ex.backend(), masses.size());
  memory::copy(ex, ex.backend(), mass_.data(), Backend::host, masses.data(), masses.size() * sizeof(double));
}

void MdAtoms::fit_scratch(int n) {
  const std::size_t m = static_cast<std::size_t>(std::max(n, 1)), own = static_cast<std::size_t>(std::max(nown(), 1));
  for (int d = 0; d < 3; ++d) {
    fit(*ex_, f_[d], m);
    fit(*ex_, x0_[d], own);
  }
  fit(*ex_, pe_, m);
  fit(*ex_, vir_, m);
}

void MdAtoms::mark_list_positions() {
  const Exec& ex = *ex_;
  if (nown() == 0) return;
  for (int d = 0; d < 3; ++d)
    memory::copy(ex, ex.backend(), x0_[d].data(), ex.backend(), store.device<double>(position, d),
                 sizeof(double) * static_cast<std::size_t>(nown()));
}

Atoms MdAtoms::view(const NeighborList* list, const double box[3]) const {
  Atoms a;
  a.x = store.device<double>(position, 0);
  a.y = store.device<double>(position, 1);
  a.z = store.device<double>(position, 2);
  a.vx = store.device<double>(velocity, 0);
  a.vy = store.device<double>(velocity, 1);
  a.vz = store.device<double>(velocity, 2);
  a.fx = f_[0].data();
  a.fy = f_[1].data();
  a.fz = f_[2].data();
  a.pe = pe_.data();
  a.virial = vir_.data();
  a.ix = store.device<int>(image, 0);
  a.iy = store.device<int>(image, 1);
  a.iz = store.device<int>(image, 2);
  a.x0 = x0_[0].data();
  a.y0 = x0_[1].data();
  a.z0 = x0_[2].data();
  a.work = store.device<double>(work);
  a.id = store.device<std::int64_t>(id);
  a.type = store.device<int>(type);
  a.mass = mass_.data();
  if (charge >= 0) a.q = store.device<double>(charge);
  a.nspecial = nspecial;
  for (int k = 0; k < nspecial; ++k) a.special[k] = store.device<std::int64_t>(special, k);
  a.n = nown();
  a.nlocal = nlocal();
  if (list) {
    a.start = list->start();
    a.neighbors = list->neighbors();
    a.half = list->half();
    a.order = list->order();
    a.nslots = list->nslots();
    a.list_build = list->builds();
    a.shells = list->shells();
  }
  for (int d = 0; d < 3; ++d) a.box[d] = box[d];
  return a;
}

}  // namespace cumulus::md
