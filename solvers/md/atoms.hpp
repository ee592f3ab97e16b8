#pragma once
// The md solver's atoms: the per-atom arrays it registers in a ParticleStore (mesh/), the scratch
// arrays of a step (forces, energies, the positions at the last list build) and the kernels' view.
#include <cstdint>
#include <vector>

#include "core/exec.hpp"
#include "core/memory.hpp"
#include "mesh/particle_store.hpp"
#include "solvers/md/md_kernels.hpp"

namespace cumulus::md {

class NeighborList;

// The optional per-atom arrays a job needs: `charged`, the charge and the molecule id; `nspecial`,
// columns of special partners (exclusions; 0: none); `nbond`, `nangle`, columns of bonded terms
// (the most bonds and angles of any atom; 0: none); `settle`, the rigid-water arrays (a molecule's
// three atoms), `shake`, the SHAKE clusters' arrays (a cluster's atoms); with either, the
// reference positions of a step, and velocities go to ghosts too, for the velocity constraints.
struct AtomLayout {
  bool charged = false;
  int nspecial = 0, nbond = 0, nangle = 0;
  bool settle = false, shake = false;
};

class MdAtoms {
 public:
  // `masses` per type in energy units (mass times mvv2e: units.hpp); `layout`: the optional arrays.
  MdAtoms(const Exec& ex, const std::vector<double>& masses, const AtomLayout& layout = {});
  MdAtoms(const Exec&& ex, const std::vector<double>& masses, const AtomLayout& layout = {}) = delete;  // keeps a pointer to ex

  ParticleStore store;
  // Handles of the registered arrays. Positions, ids and types go to ghosts; every array migrates,
  // follows reorders and is checkpointed. A new per-atom quantity (a charge, a molecule id) is one
  // more store.add() where it is introduced.
  int position, velocity, image, work, id, type;
  // Registered only when the job has charges (-1 otherwise): charge (to ghosts), molecule id;
  // special partners (to ghosts) when it has exclusions.
  int charge = -1, molecule = -1, special = -1;
  int nspecial = 0;
  // The bonded terms each atom takes part in (topology.hpp's bonded_terms), owned atoms only
  // (migrating and checkpointed with them; -1 when unused): bond_atom's column c is the partner's
  // id of the atom's c-th bond, bond_type its type; angle_atom's columns 3c .. 3c + 2 the ids of
  // its c-th angle (the vertex second), angle_type its type. Registered when a bond or angle style
  // is set (-1 otherwise).
  int bond_atom = -1, bond_type = -1, angle_atom = -1, angle_type = -1;
  int nbond = 0, nangle = 0;
  // Rigid water (settle.hpp; -1 otherwise): settle_atom's three columns the ids of the atom's
  // molecule (the oxygen, then the hydrogens; -1 when the atom is in none), settle_type its
  // geometry (the angle type); reference_position the positions at the start of a step (to
  // ghosts; not checkpointed).
  int settle_atom = -1, settle_type = -1, reference_position = -1;
  // SHAKE clusters (shake.hpp; -1 otherwise): shake_atom's four columns the ids of the atom's
  // cluster in ascending order (-1 for unused places, and when the atom is in none), shake_type
  // its geometry.
  int shake_atom = -1, shake_type = -1;

  int nown() const { return store.nown(); }
  int nghost() const { return store.nghost(); }
  int nlocal() const { return store.nlocal(); }
  // Host mirror shortcuts.
  double* hx(int d) { return store.host<double>(position, d); }
  std::int64_t* hid() { return store.host<std::int64_t>(id); }
  int* htype() { return store.host<int>(type); }

  // Scratch of a step, on the backend: forces, per-atom energy and virial for `n` atoms (owned,
  // or owned and ghosts for a half list), the owned atoms' positions at the last list build.
  void fit_scratch(int n);
  // The positions the next list check measures from: the owned atoms' current ones.
  void mark_list_positions();
  // Raw pointers for the kernels, with the list's arrays.
  Atoms view(const NeighborList* list, const double box[3]) const;

 private:
  const Exec* ex_;
  Buffer<double> f_[3], x0_[3], pe_, vir_, mass_;
};

// A buffer holding at least n elements, reused while it is large enough (fresh allocations every
// list build cost page faults), grown with a margin.
template <class T>
void fit(const Exec& ex, Buffer<T>& b, std::size_t n) {
  if (b.size() < n || b.size() == 0) b = Buffer<T>(ex.backend(), std::max<std::size_t>(n + n / 8, 1));
}

}  // namespace cumulus::md
