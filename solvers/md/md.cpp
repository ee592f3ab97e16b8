// The molecular dynamics model: it wires the parts (set-up, atoms, decomposition, neighbour list,
// pair style, thermostat, computes) and runs velocity Verlet. docs/md.md has a table of the parts
// and their files.
//
// Spatial decomposition: the box is cut into ownership cells a quarter of cutoff + skin wide (or
// wider: a multiple of the ranks along each split axis), split over ranks by
// CartesianDecomposition. A rank owns the atoms in its cells (reassigned when the list is rebuilt)
// and keeps ghost copies of other ranks' atoms within cutoff + skin of its block (positions
// refreshed every step). Ghosts carry their wrapped coordinates and global ids; the
// force loop takes the minimum image and each atom sums its pairs in ascending global id, so every
// rank count computes the same forces from the same numbers: trajectories are bit-identical at any
// rank count; the thermo sums are exact fixed-point sums, so the thermo output is too.
#include "solvers/md/md.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <omp.h>

#include "core/memory.hpp"
#include "core/strings.hpp"
#include "core/timers.hpp"
#include "mesh/decomposition.hpp"
#include "solvers/md/atoms.hpp"
#include "solvers/md/barostat.hpp"
#include "solvers/md/barostat_kernels.hpp"
#include "solvers/md/bonded.hpp"
#include "solvers/md/constraints.hpp"
#include "solvers/md/data_file.hpp"
#include "solvers/md/domain.hpp"
#include "solvers/md/lattice.hpp"
#include "solvers/md/md_kernels.hpp"
#include "solvers/md/neighbor_list.hpp"
#include "solvers/md/fixed_point.hpp"
#include "solvers/md/force.hpp"
#include "solvers/md/kspace.hpp"
#include "solvers/md/topology.hpp"
#include "solvers/md/particle_state.hpp"
#include "solvers/md/rdf.hpp"
#include "solvers/md/settle.hpp"
#include "solvers/md/shake.hpp"
#include "solvers/md/setup.hpp"
#include "solvers/md/pme_kernels.hpp"
#include "solvers/md/sim_box.hpp"
#include "solvers/md/step_checks.hpp"
#include "solvers/md/thermo.hpp"
#include "solvers/md/thermostat.hpp"
#include "solvers/md/velocities.hpp"

namespace cumulus::md {

namespace {

class MdModel : public Model {
 public:
  MdModel(const Config& cfg, const Context& ctx)
      : ctx_(ctx), np_(ctx.comm.size()),
        data_(data_file_path(cfg).empty() ? DataFile{} : read_data_file(data_file_path(cfg), false)),
        cfg_(data_file_path(cfg).empty() ? cfg : with_data_pair_coeffs(cfg, data_)),
        s_(read_setup(cfg_, data_.ntypes)),
        decomp_(make_decomposition(s_, box_lengths(s_, s_.data_file.empty() ? nullptr : &data_), np_)),
        pair_(force_style(s_.pair_style).create(cfg_, s_.ntypes, ctx_.exec)),
        box_(box_lengths(s_, s_.data_file.empty() ? nullptr : &data_)) {
    const bool from_file = !s_.data_file.empty();
    if (from_file) s_.masses = data_.mass;
    // Charges and exclusions: registered only when the job has them (an LJ job's checkpoints stay
    // as they were).
    const bool charged = from_file && data_.atom_style != "atomic";
    if (from_file) special_ = special_partners(data_);
    std::size_t nspecial = 0, nbond = 0, nangle = 0;
    for (const auto& sp : special_) nspecial = std::max(nspecial, sp.size());
    // Bonded terms: every atom holds the terms it is part of (bonded.hpp).
    if (from_file) {
      clusters_ = constraint_topology(cfg_, &data_);
      bonded_ = make_bonded_terms(cfg_, data_, ctx_.exec);
      atom_bonded_ = bonded_terms(data_, uses_bonds(cfg_), uses_angles(cfg_), clusters_.bond_type_constrained,
                                  clusters_.angle_type_constrained);
    }
    // Constraints: SETTLE's rigid water, SHAKE/RATTLE's other clusters (constraints.hpp).
    if (clusters_.water.molecules > 0)
      constraints_.push_back(std::make_unique<Settle>(ctx_.exec, clusters_.water.geometry, clusters_.water.molecules));
    if (clusters_.shake.clusters > 0)
      constraints_.push_back(std::make_unique<Shake>(ctx_.exec, clusters_.shake, cfg_.get<double>("md.shake_tolerance"),
                                                     static_cast<int>(cfg_.get<std::int64_t>("md.shake_iterations"))));
    for (const auto& c : constraints_) s_.constraint_dof += c->removed_dof();
    for (const AtomBonded& b : atom_bonded_) {
      nbond = std::max(nbond, b.bonds.size());
      nangle = std::max(nangle, b.angles.size());
    }
    std::vector<double> internal_mass = s_.masses;  // in energy units: m mvv2e (units.hpp)
    for (double& m : internal_mass) m *= s_.units.mvv2e;
    atoms_ = std::make_unique<MdAtoms>(ctx_.exec, internal_mass,
                                       AtomLayout{charged, static_cast<int>(nspecial), static_cast<int>(nbond), static_cast<int>(nangle),
                                                  clusters_.water.molecules > 0, clusters_.shake.clusters > 0});
    if (!bonded_.empty() || !constraints_.empty()) {
      std::int64_t max_id = 0;  // zero-based ids index the topology's map
      for (std::int64_t id : data_.id) max_id = std::max(max_id, id);
      topology_ = std::make_unique<BondedTopology>(ctx_.exec, max_id);
    }
    if (charged) {
      kspace_ = make_kspace(cfg_, box_lengths(s_, &data_), charge_totals(data_), coul_cutoff(cfg_));
      if (kspace_) pair_->set_ewald_alpha(kspace_->alpha());
    }
    domain_ = std::make_unique<AtomDomain>(ctx_.comm, ctx_.exec, decomp_, box_.lengths(), s_.cutoff + s_.skin);
    // Atoms migrate when one has moved half the skin: no owned atom is farther outside its block.
    if (kspace_) kspace_->set_domain(decomp_, 0.5 * s_.skin);
    type_counts_.assign(static_cast<std::size_t>(s_.ntypes), 0.0);
    place_atoms(from_file);
    const bool velocities_given = from_file && data_.has_velocities;
    // The bonds for trajectories that draw molecules (rank 0 writes them).
    if (ctx_.comm.rank() == 0)
      for (const Bonded& b : data_.bonds) {
        bonds_out_.push_back(b.atom[0] - 1);
        bonds_out_.push_back(b.atom[1] - 1);
      }
    data_ = DataFile{};  // not needed any more
    special_.clear();
    atom_bonded_.clear();
    clusters_ = ConstraintTopology{};
    ParticleStore& st = atoms_->store;
    if (s_.temperature > 0 && n_total_ > 1 && !velocities_given) {
      double* v[3] = {st.host<double>(atoms_->velocity, 0), st.host<double>(atoms_->velocity, 1), st.host<double>(atoms_->velocity, 2)};
      initial_velocities(s_, n_total_, ctx_.comm, st.nown(), atoms_->hid(), atoms_->htype(), v);
    }
    const bool kernel_build = s_.neighbor_build == "kernels" || (s_.neighbor_build == "auto" && ctx_.exec.is_cuda());
    list_ = kernel_build ? make_kernel_neighbor_list(ctx_.exec, np_ == 1) : make_host_neighbor_list(ctx_.exec);
    list_->keep_host_copy(s_.rdf_every > 0);
    list_->allow_threaded_half(pair_->threaded_half());
    list_->allow_either_slot(pair_->either_slot());
    // Partners in id order only where the pair term's loops need it (double precision's sums in list
    // order; mixed precision's are order-free and find special partners by search)
    list_->set_id_order(pair_->needs_id_order(ctx_.exec));
    kernel_build_ = kernel_build;
    // Newton's third law across ranks where the pair term sums in fixed point (mixed precision):
    // each pair across ranks computed once, its ghost's share sent back to the owner.
    newton_ = np_ > 1 && !kernel_build && pair_->fills_fixed_rows();
    list_->set_ghost_slots(!newton_);
    thermostat_ = make_thermostat(s_, n_total_);
    barostat_ = make_barostat(cfg_, s_);
    if (s_.rdf_every > 0) rdf_ = std::make_unique<Rdf>(s_.rdf_every, s_.rdf_bins, s_.rdf_range);
    tctx_.ex = &ctx_.exec;
    tctx_.atoms = [this] { return view(); };
    tctx_.kinetic2 = [this] { return kinetic2_sum(ctx_.exec, ctx_.comm, view()); };
    tctx_.keep = [this] {
      KeptPositions k;
      if (!constraints_.empty()) {
        const ParticleStore& st = atoms_->store;
        k.x = st.device<double>(atoms_->reference_position, 0);
        k.y = st.device<double>(atoms_->reference_position, 1);
        k.z = st.device<double>(atoms_->reference_position, 2);
      }
      return k;
    };
    rebuild(true, 0);
    if (!constraints_.empty()) start_rigid(s_.temperature > 0 && n_total_ > 1 && !velocities_given);
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
    const Index3& nb = decomp_.global_cells();
    return strprintf("md: %lld atoms, %s (box %.6g x %.6g x %.6g), %d type(s) (%s), T0 %g; %s; Verlet list skin %g "
                     "(rebuilt when an atom has moved skin/2, %s); velocity Verlet, dt %g%s; %d rank(s) as %d x %d x %d "
                     "blocks of %d x %d x %d ownership cells in all",
                     static_cast<long long>(n_total_), origin.c_str(), box_.length(0), box_.length(1), box_.length(2), s_.ntypes,
                     types.c_str(), s_.temperature, pair_->describe().c_str(), s_.skin, list_->describe().c_str(),
                     s_.dt, thermostat_->describe().c_str(), np_, p[0], p[1], p[2], nb[0], nb[1], nb[2]) +
           (kspace_ ? kspace_->describe() : std::string()) + bonded_description() +
           constraint_description() + "; units " + s_.units.name;
  }
  double preferred_dt() const override { return s_.dt; }
  bool fixed_dt() const override { return true; }
  double work_per_step() const override { return static_cast<double>(n_total_); }
  std::string work_unit() const override { return "atom-steps"; }

  // Velocity Verlet: the thermostat's first half (Nose-Hoover), half kick and drift (Langevin:
  // BAOAB), the list or the ghosts, forces, the second half kick, the thermostat's second half.
  void advance(double time, double dt) override {
    const Exec& ex = ctx_.exec;
    if (stale_) refresh();
    // The constraints' reference positions: the owned atoms' kept by kick_drift, the ghosts' here.
    if (!constraints_.empty()) keep_reference(ex, *atoms_, atoms_->nown());
    thermostat_->begin_step(tctx_, dt);
    thermostat_->kick_drift(tctx_, time, dt);
    // The list is rebuilt on steps that are multiples of md.neighbor_every, when an atom has
    // moved more than half the skin since the last build (md.neighbor_check) or always. A build
    // later than the first step on which an atom had moved that far is dangerous (pairs may have
    // been missed): counted and reported, as LAMMPS does.
    // The list check is the step's one wait for the device: the last step's constraint and PME
    // checks come back with it (step_checks.hpp).
    const double half_skin = 0.5 * s_.skin;
    CUMULUS_KERNEL(ex, kernels, max_displacement2)(ex, view(), checks_.moved2());
    const CheckResults checked = checks_.read(ctx_.comm);
    report(checked);
    const double moved = checked.value.moved2;
    // A barostat's box changes since the build count as displacement too: a pair across the
    // boundary moves by the change of the box length beyond its atoms' own displacements.
    const double allowed = std::max(half_skin - box_drift_, 0.0);
    const bool far = moved > allowed * allowed;
    const std::int64_t step = std::llround((time + dt) / dt);
    const bool due = step % s_.neighbor_every == 0;
    if (due && (far || !s_.neighbor_check)) {
      if (far && overdue_) ++dangerous_;
      overdue_ = false;
      rebuild(false, step);
    } else {
      if (far) overdue_ = true;
      domain_->forward_positions(*atoms_, host_positions());
    }
    if (!constraints_.empty()) {  // the clusters at their lengths again, and their ghosts' positions
      for (std::size_t k = 0; k < constraints_.size(); ++k)
        constraints_[k]->positions(ctx_.comm, *atoms_, view(), topology_->view(), dt, step, true,
                                   checks_.constraint(static_cast<int>(k), step));
      domain_->forward_positions(*atoms_, host_positions());
    }
    const bool rescale = barostat_ && barostat_->due(step);
    compute_forces(rescale, step);  // with energies where the barostat needs the pressure
    CUMULUS_KERNEL(ex, kernels, kick)(ex, view(), 0.5 * dt);
    if (!constraints_.empty()) {  // no relative velocity along the bonds (the ghosts' velocities current first)
      domain_->forward_velocities(*atoms_, host_positions());
      for (const auto& c : constraints_) c->velocities(*atoms_, view(), topology_->view(), dt);
    }
    thermostat_->end_step(tctx_, dt);
    if (rescale) rescale_box(step);
    if (rdf_ && rdf_->due(step)) rdf_->sample(ex, *atoms_, *list_, box_.lengths());
  }

  std::optional<HealthIssue> check_health() override {
    if (stale_) refresh();  // after a restart: check the restored atoms
    const Exec& ex = ctx_.exec;
    const std::int64_t bad = CUMULUS_KERNEL(ex, kernels, first_bad_atom)(ex, view());
    const std::int64_t none = std::numeric_limits<std::int64_t>::max();
    std::int64_t id = none;
    if (bad != none)
      memory::copy(ex, Backend::host, &id, ex.backend(), atoms_->store.device<std::int64_t>(atoms_->id) + bad, sizeof(std::int64_t));
    const std::int64_t gid = ctx_.comm.min(id);
    if (gid == none) return std::nullopt;
    return HealthIssue{"position or velocity", strprintf("atom %lld", static_cast<long long>(gid))};
  }

  std::vector<std::pair<std::string, double>> diagnostics(double /*time*/) override {
    if (stale_) refresh();
    if (!energies_fresh_) compute_forces(true);
    const Comm& c = ctx_.comm;
    const Exec& ex = ctx_.exec;
    const Atoms a = view();
    const double n = static_cast<double>(n_total_), V = box_.volume(), rho = n / V;
    const double ke = 0.5 * thermo_sum(ex, c, a, ThermoSum::mv2);
    double pe = thermo_sum(ex, c, a, ThermoSum::energy);
    const Thermo th = measure();
    const double T = th.temperature, p = th.pressure, p_virial = th.virial_pressure, e_tail = th.e_tail;
    pe += e_tail;
    const double work = thermo_sum(ex, c, a, ThermoSum::work) + thermostat_->energy() + (barostat_ ? barostat_->energy(V) : 0.0);
    if (rdf_) rdf_->write(c, ctx_.run_dir, n_total_, rho);
    std::vector<std::pair<std::string, double>> rows = {{"temperature", T},
            {"pe_per_atom", pe / n},
            {"ke_per_atom", ke / n},
            {"etotal_per_atom", (pe + ke) / n},
            {"conserved_per_atom", (pe + ke + work) / n},
            {"pressure", p},
            {"virial_pressure", p_virial},
            {"neighbor_builds", static_cast<double>(list_->builds())},
            {"dangerous_builds", static_cast<double>(dangerous_)},
            {"pairs_per_atom", c.sum(list_->pairs()) / n},
            {"ghosts_per_rank", c.sum(static_cast<double>(atoms_->nghost())) / np_}};
    // Coulomb jobs: each term's total energy (LAMMPS's evdwl is e_vdwl, its ecoul e_coul + e_special,
    // its elong e_long + e_self + e_background), and the tail correction.
    for (const auto& t : pair_->energy_terms(ex, c, a)) rows.push_back(t);
    if (kspace_)
      for (const auto& t : kspace_->energy_terms()) rows.push_back(t);
    for (const auto& b : bonded_) rows.push_back({b->energy_name(), b->energy(ex, c, a, topology_->view())});
    if (pair_->coulomb()) rows.push_back({"e_tail", e_tail});
    if (barostat_) {
      rows.push_back({"volume", V});
      // Mass density: g/cm^3 in real units (g/mol over Avogadro's number, A^3 = 1e-24 cm^3),
      // mass / sigma^3 in lj units.
      const double density = total_mass_ / V * (s_.units.name == "real" ? 1.0 / 0.602214076 : 1.0);
      rows.push_back({"density", density});
    }
    return rows;
  }

  // The instantaneous temperature, pressure (kinetic, every virial, the constraint forces' and the
  // tail's, in the units' pressure) and energies, from forces computed with energies. Collective.
  struct Thermo {
    double temperature = 0, pressure = 0, virial_pressure = 0, ke = 0, pe = 0, e_tail = 0;
  };
  Thermo measure() {
    const Comm& c = ctx_.comm;
    const Exec& ex = ctx_.exec;
    const Atoms a = view();
    const double n = static_cast<double>(n_total_), V = box_.volume();
    Thermo t;
    t.ke = 0.5 * thermo_sum(ex, c, a, ThermoSum::mv2);
    t.pe = thermo_sum(ex, c, a, ThermoSum::energy);
    const double w = thermo_sum(ex, c, a, ThermoSum::virial) + (constraints_.empty() ? 0.0 : constraint_virial());
    const double dof = thermostat_->degrees_of_freedom(n) - s_.constraint_dof;
    const Units& u = s_.units;
    t.temperature = dof > 0 ? 2 * t.ke / (dof * u.boltz) : 0;
    double p_virial = w / (3 * V);
    const auto [e_tail, p_tail] = pair_->tail(type_counts_, V);
    t.e_tail = e_tail;
    t.pe += e_tail;
    p_virial += p_tail;
    // Pressure in the units' pressure (atm for real: nktv2p), as LAMMPS prints it.
    t.pressure = u.nktv2p * (dof * u.boltz * t.temperature / (3 * V) + p_virial);
    t.virial_pressure = p_virial * u.nktv2p;
    return t;
  }

  // The barostat's rescaling at the end of step `step` (barostat.hpp): the pressure from this
  // step's forces (computed with energies), the box and the atoms scaled, the ghosts' positions
  // sent, the forces computed anew; the change of E + P0 V is the barostat's work.
  void rescale_box(std::int64_t step) {
    finish_checks();  // this step's constraint and PME checks first: their errors, not the rescaling's
    const Exec& ex = ctx_.exec;
    const Thermo before = measure();
    const double V0 = box_.volume();
    const double mu = barostat_->scale(before.pressure, V0, step);
    const double reach = s_.cutoff + s_.skin;
    std::array<double, 3> L{};
    for (int d = 0; d < 3; ++d) {
      L[static_cast<std::size_t>(d)] = mu * box_.length(d);
      if (L[static_cast<std::size_t>(d)] < 2 * reach)
        throw Error(strprintf("md: the barostat shrank the box to %g along axis %d at step %lld, less than twice the cutoff + "
                              "skin (%g): the pressure collapsed (a wrong md.pressure or md.compressibility?)",
                              L[static_cast<std::size_t>(d)], d, static_cast<long long>(step), 2 * reach),
                    ExitCode::blow_up);
    }
    const int n = atoms_->nown();
    for (auto& b : shift_) fit(ex, b, static_cast<std::size_t>(std::max(n, 1)));
    const TopologyView t = topology_ ? topology_->view() : TopologyView{};
    if (n > 0) {
      CUMULUS_KERNEL(ex, barostat_kernels, rescale_shifts)(ex, view(), t, mu, shift_[0].data(), shift_[1].data(), shift_[2].data());
      CUMULUS_KERNEL(ex, barostat_kernels, rescale_apply)(ex, view(), shift_[0].data(), shift_[1].data(), shift_[2].data(), 1 / mu,
                                                          L.data());
    }
    // The list stays (every atom moved by far less than the skin; the box's change is counted in the
    // next list checks); the decomposition's geometry is made for the new box at the next build.
    for (int d = 0; d < 3; ++d) box_drift_ += std::fabs(L[static_cast<std::size_t>(d)] - box_.length(d));
    box_.set_lengths(L);
    domain_stale_ = true;
    domain_->forward_positions(*atoms_, host_positions());
    compute_forces(true);
    const Thermo after = measure();
    barostat_->add_work(after.pe + after.ke - before.pe - before.ke, box_.volume() - V0);
  }

  // A new box (a restart's): the decomposition's geometry made anew (the k-space terms follow the
  // atoms' view).
  void set_box(const std::array<double, 3>& L) {
    box_.set_lengths(L);
    domain_ = std::make_unique<AtomDomain>(ctx_.comm, ctx_.exec, decomp_, box_.lengths(), s_.cutoff + s_.skin);
    domain_stale_ = false;
  }

  StateDescription state() override {
    if (stale_) refresh();
    atoms_->store.download_owned();
    StateDescription s = describe_particles(atoms_->store, ctx_.comm, n_total_, box_.lengths(), [this] { stale_ = true; });
    const Index3& dims = decomp_.dims();
    s.decomposition = {dims[0], dims[1], dims[2]};
    thermostat_->describe_state(s, ctx_.comm.rank());
    if (barostat_) barostat_->describe_state(s, ctx_.comm.rank(), box_.lengths());
    s.connectivity = bonds_out_;
    return s;
  }

 private:
  Atoms view() const {
    Atoms a = atoms_->view(list_.get(), box_.lengths());
    if (newton_ && a.half) a.fixed_rows = rows_.data();
    return a;
  }
  // The host builder's positions live in host memory on the host backend: the ghosts' positions
  // are then packed and unpacked by loops, not kernels.
  bool host_positions() const { return ctx_.exec.backend() == Backend::host && !kernel_build_; }

  // The atoms this rank owns at the start: a lattice's, or the data file's (shifted so the box
  // starts at 0, wrapped into it with the image counts kept, ids from 0 (file id - 1), types
  // from 0, with their charges, molecule ids and special partners where the job has them).
  void place_atoms(bool from_file) {
    std::vector<std::int64_t> ids;
    std::vector<int> types, img[3];
    std::vector<double> x[3], v[3];
    std::vector<std::size_t> rows;  // the data file's row of each kept atom
    auto keep = [&](std::int64_t id, int type, const double p[3], const int im[3], const double* vel) {
      type_counts_[static_cast<std::size_t>(type)] += 1;
      total_mass_ += s_.masses[static_cast<std::size_t>(type)];
      if (domain_->owner_of(p) != ctx_.comm.rank()) return false;
      for (int d = 0; d < 3; ++d) {
        x[d].push_back(p[d]);
        v[d].push_back(vel ? vel[d] : 0.0);
        img[d].push_back(im[d]);
      }
      ids.push_back(id);
      types.push_back(type);
      return true;
    };
    const double* L = box_.lengths();
    if (from_file) {
      n_total_ = data_.natoms;
      for (std::size_t k = 0; k < data_.id.size(); ++k) {
        double p[3], vel[3];
        int im[3];
        for (int d = 0; d < 3; ++d) {
          double q = data_.x[d][k] - data_.lo[d];
          im[d] = data_.image[d][k];
          const double f = std::floor(q / L[d]);
          q -= f * L[d];
          if (q >= L[d]) q -= L[d];
          im[d] += static_cast<int>(f);
          p[d] = q;
          vel[d] = data_.v[d][k];
        }
        if (keep(data_.id[k] - 1, data_.type[k] - 1, p, im, vel)) rows.push_back(k);
      }
    } else {
      n_total_ = lattice_atom_count(s_);
      const int zero[3] = {0, 0, 0};
      lattice_atoms(s_, [&](std::int64_t id, int type, const double p[3]) { keep(id, type, p, zero, nullptr); });
    }
    ParticleStore& st = atoms_->store;
    const int n = static_cast<int>(ids.size());
    st.resize_owned(n);
    if (n == 0) return;
    for (int d = 0; d < 3; ++d) {
      std::memcpy(st.host<double>(atoms_->position, d), x[d].data(), sizeof(double) * n);
      std::memcpy(st.host<double>(atoms_->velocity, d), v[d].data(), sizeof(double) * n);
      std::memcpy(st.host<int>(atoms_->image, d), img[d].data(), sizeof(int) * n);
    }
    std::memcpy(atoms_->hid(), ids.data(), sizeof(std::int64_t) * n);
    std::memcpy(atoms_->htype(), types.data(), sizeof(int) * n);
    if (atoms_->charge >= 0)
      for (int i = 0; i < n; ++i) {
        const std::size_t k = rows[static_cast<std::size_t>(i)];
        st.host<double>(atoms_->charge)[i] = data_.q[k];
        st.host<std::int64_t>(atoms_->molecule)[i] = data_.molecule[k];
      }
    for (int c = 0; c < atoms_->nspecial; ++c)
      for (int i = 0; i < n; ++i) {
        const std::vector<std::int64_t>& sp = special_[rows[static_cast<std::size_t>(i)]];
        st.host<std::int64_t>(atoms_->special, c)[i] = static_cast<std::size_t>(c) < sp.size() ? sp[static_cast<std::size_t>(c)] : -1;
      }
    if (atoms_->settle_atom >= 0)
      for (int i = 0; i < n; ++i) {
        const std::size_t k = rows[static_cast<std::size_t>(i)];
        for (int m = 0; m < 3; ++m)
          st.host<std::int64_t>(atoms_->settle_atom, m)[i] = clusters_.water.atoms[k][static_cast<std::size_t>(m)];
        st.host<int>(atoms_->settle_type)[i] = clusters_.water.type[k];
      }
    if (atoms_->shake_atom >= 0)
      for (int i = 0; i < n; ++i) {
        const std::size_t k = rows[static_cast<std::size_t>(i)];
        for (int m = 0; m < kShakeAtoms; ++m)
          st.host<std::int64_t>(atoms_->shake_atom, m)[i] = clusters_.shake.atoms[k][static_cast<std::size_t>(m)];
        st.host<int>(atoms_->shake_type)[i] = clusters_.shake.type[k];
      }
    for (int i = 0; i < n && !atom_bonded_.empty(); ++i) {
      const AtomBonded& b = atom_bonded_[rows[static_cast<std::size_t>(i)]];
      for (int c = 0; c < atoms_->nbond; ++c) {
        const bool used = static_cast<std::size_t>(c) < b.bonds.size();
        st.host<std::int64_t>(atoms_->bond_atom, c)[i] = used ? b.bonds[static_cast<std::size_t>(c)].first : -1;
        st.host<int>(atoms_->bond_type, c)[i] = used ? b.bonds[static_cast<std::size_t>(c)].second : 0;
      }
      for (int c = 0; c < atoms_->nangle; ++c) {
        const bool used = static_cast<std::size_t>(c) < b.angles.size();
        for (int m = 0; m < 3; ++m)
          st.host<std::int64_t>(atoms_->angle_atom, 3 * c + m)[i] =
              used ? b.angles[static_cast<std::size_t>(c)].first[static_cast<std::size_t>(m)] : -1;
        st.host<int>(atoms_->angle_type, c)[i] = used ? b.angles[static_cast<std::size_t>(c)].second : 0;
      }
    }
  }

  // Rigid molecules at the start: positions to their geometry (no velocity change), velocities
  // without relative motion along the bonds, and with `rescale` (velocities drawn here, not read)
  // scaled back to md.temperature with the constrained degrees of freedom.
  void start_rigid(bool rescale) {
    const Exec& ex = ctx_.exec;
    keep_reference(ex, *atoms_);
    for (const auto& c : constraints_) c->positions(ctx_.comm, *atoms_, view(), topology_->view(), s_.dt, 0, false);
    domain_->forward_positions(*atoms_, host_positions());
    domain_->forward_velocities(*atoms_, host_positions());
    for (const auto& c : constraints_) c->velocities(*atoms_, view(), topology_->view(), s_.dt);
    if (rescale) {
      const double dof = thermostat_->degrees_of_freedom(static_cast<double>(n_total_)) - s_.constraint_dof;
      const double k2 = kinetic2_sum(ex, ctx_.comm, view());
      if (k2 > 0 && dof > 0) CUMULUS_KERNEL(ex, kernels, scale_velocities)(ex, view(), std::sqrt(s_.temperature * s_.units.boltz * dof / k2));
    }
  }

  // The constraint forces' virial at this instant (collective; settle.hpp says why not a step's):
  // the part that holds rotating bonds at their lengths, from the rigid velocities, plus the part
  // that cancels the forces along the bonds, from a virtual half kick on a copy of the velocities,
  // which are then put back. The ghosts' velocities are refreshed before each part.
  double constraint_virial() {
    const Exec& ex = ctx_.exec;
    const std::size_t n = static_cast<std::size_t>(atoms_->nown());
    ParticleStore& st = atoms_->store;
    domain_->forward_velocities(*atoms_, host_positions());
    for (const auto& c : constraints_) c->virial_part(*atoms_, view(), topology_->view(), s_.dt, 0.5 * s_.dt, false);
    fit(ex, saved_v_, 3 * std::max<std::size_t>(n, 1));
    for (int d = 0; d < 3; ++d)
      if (n) memory::copy(ex, ex.backend(), saved_v_.data() + d * n, ex.backend(), st.device<double>(atoms_->velocity, d), n * sizeof(double));
    CUMULUS_KERNEL(ex, kernels, kick)(ex, view(), 0.5 * s_.dt);
    domain_->forward_velocities(*atoms_, host_positions());
    for (const auto& c : constraints_) c->virial_part(*atoms_, view(), topology_->view(), s_.dt, 0.0, true);
    for (int d = 0; d < 3; ++d)
      if (n) memory::copy(ex, ex.backend(), st.device<double>(atoms_->velocity, d), ex.backend(), saved_v_.data() + d * n, n * sizeof(double));
    double w = 0;
    for (const auto& c : constraints_) w += c->sum_virial(ctx_.comm, *atoms_);
    return w;
  }

  std::string constraint_description() const {
    std::string out;
    for (const auto& c : constraints_) out += c->describe();
    return out;
  }

  std::string bonded_description() const {
    std::string out;
    for (const auto& b : bonded_) out += "; " + b->describe();
    return out;
  }

  // The checks queued by the steps since the last read (collective): a failure is reported naming
  // the step it happened at. Before anything is written, and at the end of a run.
  void finish_checks() override {
    if (checks_.pending()) report(checks_.read(ctx_.comm));
  }
  void report(const CheckResults& c) const {
    for (std::size_t k = 0; k < constraints_.size() && k < CheckSlots::kConstraintSolvers; ++k)
      if (c.constraint_step[k] >= 0 && c.value.constraint[k] != CheckSlots::kNone)
        constraints_[k]->fail(c.value.constraint[k], c.constraint_step[k]);
    if (c.outside_step >= 0 && c.value.outside > 0) throw Error(pme_outside_error(c.value.outside, c.outside_step));
  }

  // Forces, and with `energy` the per-atom energies and virials (needed only for thermo rows: the
  // diagnostics recompute them when the last step went without; forces are the same bits). Within
  // a step (`step` >= 0) PME's check is queued with the step's others; elsewhere it is waited for.
  void compute_forces(bool energy = true, std::int64_t step = -1) {
    Atoms a = view();
    a.energy = energy;
    energies_fresh_ = energy;
    std::int64_t* const outside = kspace_ && step >= 0 && kspace_->checks_outside() ? checks_.outside(step) : nullptr;
    // The host's half list with a k-space that adds each atom's terms once (PME): the k-space runs
    // inside the pair term's call, on the calling thread, into arrays of its own (-0 each, added
    // after: the same bits as in place), while the pair term's other thread finishes
    // (ForceTerm::compute_with), where the pair term overlaps them (overlaps_other). md.forces is
    // then the pair term's time less the k-space's. Not on the k-space's first call: it sets
    // itself up then (PME's FFT plans take the thread count they see, one inside the overlap).
    // Decided once, by every rank together: with the overlap the k-space's messages come before the
    // ghosts' rows go back to their owners (fixed rows), without it after, so the ranks must agree
    // (a rank run with another thread count than the others would otherwise wait forever).
    if (kspace_ && kspace_calls_ > 0 && overlap_ < 0) {
      const bool mine = list_->half() && kspace_->adds_once() && pair_->overlaps_other(a);
      overlap_ = ctx_.comm.min(std::int64_t{mine ? 1 : 0}) == 1 ? 1 : 0;
    }
    const bool overlap = kspace_ && kspace_calls_ > 0 && overlap_ == 1;
    if (kspace_) ++kspace_calls_;
    bool kspace_done = false;  // (by the overlap; else after the pair term, whatever the list)
    if (list_->half()) {  // the kernel timers see for_each kernels; the half-list loop is plain host code
      if (overlap) {
        const std::size_t n = static_cast<std::size_t>(a.n);
        for (auto* v : {&kspace_f_[0], &kspace_f_[1], &kspace_f_[2], &kspace_f_[3], &kspace_f_[4]}) v->assign(n, -0.0);
        Atoms k = a;
        k.fx = kspace_f_[0].data(), k.fy = kspace_f_[1].data(), k.fz = kspace_f_[2].data();
        k.pe = kspace_f_[3].data(), k.virial = kspace_f_[4].data();
        double kspace_seconds = 0;
        const double t0 = wall_seconds();
        pair_->compute_with(ctx_.exec, a, [&] {
          const double tk = wall_seconds();
          {
            ScopedTimer timer("md.kspace");
            kspace_->compute(ctx_.exec, ctx_.comm, k, outside);
          }
          kspace_seconds = wall_seconds() - tk;
        });
        TimerRegistry::add(TimerRegistry::instance().slot("md.forces"), wall_seconds() - t0 - kspace_seconds);
        kspace_done = true;
      } else {
        ScopedTimer timer("md.forces");
        pair_->compute(ctx_.exec, a);
      }
      if (a.fixed_rows) {  // the ghosts' shares to their owners (timed as md.ghosts), then the owned atoms' forces
        domain_->reverse_add(rows_.data(), fixed::kRow, *atoms_);
        fixed::store_rows(a, rows_.data());
      }
      if (overlap) {
        double* const f[5] = {a.fx, a.fy, a.fz, a.pe, a.virial};
        for (int c = 0; c < (energy ? 5 : 3); ++c)
          for (int i = 0; i < a.n; ++i) f[c][i] += kspace_f_[c][static_cast<std::size_t>(i)];
      }
    } else {
      pair_->compute(ctx_.exec, a);
    }
    if (kspace_ && !kspace_done) {
      ScopedTimer timer("md.kspace");
      kspace_->compute(ctx_.exec, ctx_.comm, a, outside);
    }
    for (const auto& b : bonded_) b->compute(ctx_.exec, a, topology_->view());
  }

  // After a restart replaced the atoms: owners, ghosts, a list and forces for them.
  void refresh() {
    stale_ = false;
    thermostat_->restored(ctx_.comm);
    if (barostat_) {
      const std::array<double, 3> L = barostat_->restored(ctx_.comm);
      if (L[0] > 0) set_box(L);
    }
    rebuild(true, 0);
    compute_forces();
  }

  // Owned atoms in a layout that keeps partners near in memory. Ids are spatially coherent for a
  // fresh lattice or a data file written from one: then id order (the slots' order, best for the
  // half list's loop). Otherwise (shuffled ids, long diffusion) spatial order: by list bin (z, y,
  // x), by id within a bin. Measured on in.lj: with its ids shuffled, forces ran 1.5x slower in id
  // order and 15 % faster in bin order than that; unshuffled, bin order cost 3 %. The test: the
  // mean squared step between id-consecutive atoms, against (2 spacings)^2. Results do not depend
  // on the layout (forces sum in id order, thermo sums are exact).
  std::vector<int> layout_order() {
    const int nown = atoms_->nown();
    const double* hx[3] = {atoms_->hx(0), atoms_->hx(1), atoms_->hx(2)};
    const double* L = box_.lengths();
    std::vector<int> order;
    sort_by_id(atoms_->hid(), static_cast<std::size_t>(nown), order);
    double step2 = 0;
    for (int k = 1; k < nown; ++k) {
      const std::size_t p = static_cast<std::size_t>(order[static_cast<std::size_t>(k) - 1]),
                        q = static_cast<std::size_t>(order[static_cast<std::size_t>(k)]);
      for (int d = 0; d < 3; ++d) {
        double dd = hx[d][q] - hx[d][p];
        dd = dd > 0.5 * L[d] ? dd - L[d] : (dd < -0.5 * L[d] ? dd + L[d] : dd);
        step2 += dd * dd;
      }
    }
    const double spacing = std::cbrt(box_.volume() / std::max<double>(static_cast<double>(n_total_), 1.0));
    const bool coherent = nown < 2 || step2 / (nown - 1) < 4 * spacing * spacing;
    if (coherent) return order;
    const double rl = s_.cutoff + s_.skin;
    int nb[3];
    for (int d = 0; d < 3; ++d) nb[d] = std::max(1, static_cast<int>(std::floor(L[d] / rl)));
    auto bin1 = [&](double x, int d) { return std::clamp(static_cast<int>(std::floor(x * nb[d] / L[d])), 0, nb[d] - 1); };
    const std::size_t nbins = static_cast<std::size_t>(nb[0]) * nb[1] * nb[2];
    std::vector<int> start(nbins + 1, 0), bin(static_cast<std::size_t>(nown));
    for (int i = 0; i < nown; ++i) {
      const std::size_t u = static_cast<std::size_t>(i);
      bin[u] = (bin1(hx[2][u], 2) * nb[1] + bin1(hx[1][u], 1)) * nb[0] + bin1(hx[0][u], 0);
      ++start[static_cast<std::size_t>(bin[u]) + 1];
    }
    for (std::size_t k = 0; k < nbins; ++k) start[k + 1] += start[k];
    // Visiting the atoms in id order makes each bin's run ascend in id (a stable counting sort).
    std::vector<int> by_bin(static_cast<std::size_t>(nown));
    for (int r = 0; r < nown; ++r) {
      const int i = order[static_cast<std::size_t>(r)];
      by_bin[static_cast<std::size_t>(start[static_cast<std::size_t>(bin[static_cast<std::size_t>(i)])]++)] = i;
    }
    return by_bin;
  }

  // Collective: atoms to their owners, ghosts, the Verlet list. `from_host`: the host mirror of
  // the owned atoms is the current state (set-up, restart); otherwise the backend's arrays are.
  // With a list that keeps the atoms on the backend (kernels at one rank) there is no migration
  // and no ghost: the build alone.
  void rebuild(bool from_host, std::int64_t step) {
    ScopedTimer timer("md.neighbor_build");
    if (domain_stale_) set_box({box_.length(0), box_.length(1), box_.length(2)});
    box_drift_ = 0;
    const double rl = s_.cutoff + s_.skin;
    if (!(list_->resident() && !from_host)) {
      ParticleStore& st = atoms_->store;
      if (!from_host) st.download_owned();
      auto tph = std::make_unique<ScopedTimer>("md.neighbor_build.order");
      // From the host state (set-up, restart) to any rank: a restarted rank holds a run of the
      // checkpoint's atoms, not its own; between builds atoms reach neighbour ranks only.
      if (np_ > 1) domain_->migrate(*atoms_, step, from_host);
      st.permute_owned_host(layout_order());
      tph = std::make_unique<ScopedTimer>("md.neighbor_build.ghosts");
      domain_->exchange_ghosts(*atoms_);
      st.upload();
      if (np_ > 1 && !host_positions()) domain_->upload_send_index(*atoms_);
    }
    atoms_->fit_scratch(atoms_->nown());
    list_->build(*atoms_, box_.lengths(), rl);
    atoms_->fit_scratch(list_->half() ? atoms_->nlocal() : atoms_->nown());
    if (newton_) rows_.assign(static_cast<std::size_t>(atoms_->nlocal()) * fixed::kRow, 0);
    atoms_->mark_list_positions();
    if (topology_) topology_->resolve(ctx_.comm, *atoms_, step);
  }

  Context ctx_;
  int np_;
  DataFile data_;
  Config cfg_;  // the job, with the data file's Pair Coeffs where it gives none (with_data_pair_coeffs)
  Setup s_;
  CartesianDecomposition decomp_;
  std::unique_ptr<ForceTerm> pair_;
  std::unique_ptr<KSpace> kspace_;
  std::vector<std::vector<std::int64_t>> special_;  // set-up only: each data file atom's special partners
  std::vector<AtomBonded> atom_bonded_;  // set-up only: each data file atom's bonded terms
  std::vector<std::unique_ptr<BondedTerm>> bonded_;  // md.bond_style, md.angle_style
  std::unique_ptr<BondedTopology> topology_;          // with bonded terms: their atoms' local indices
  ConstraintTopology clusters_;      // set-up only: the data file's constrained clusters
  std::vector<std::int64_t> bonds_out_;  // rank 0: the data file's bonds as id pairs (trajectories)
  std::vector<std::unique_ptr<ConstraintSolver>> constraints_;  // md.constrain_bonds / md.constrain_angles
  StepChecks checks_{ctx_.exec};     // the step's checks, read once a step (step_checks.hpp)
  Buffer<double> saved_v_;           // constraint_virial's copy of the velocities
  SimBox box_;
  std::unique_ptr<MdAtoms> atoms_;
  std::unique_ptr<AtomDomain> domain_;
  std::unique_ptr<NeighborList> list_;
  bool newton_ = false;                    // Newton's third law across ranks (above)
  std::vector<double> kspace_f_[5];        // the k-space's force x, y, z, energy, virial (compute_forces)
  long kspace_calls_ = 0;                  // the k-space's calls so far (compute_forces)
  int overlap_ = -1;                        // the k-space inside the pair term's call: -1 not yet decided, 0 no, 1 yes
  mutable std::vector<std::int64_t> rows_;  // and the local atoms' fixed-point rows it fills
  std::unique_ptr<Thermostat> thermostat_;
  std::unique_ptr<Barostat> barostat_;  // md.barostat (null: constant volume)
  Buffer<double> shift_[3];             // the barostat's per-atom shifts
  double box_drift_ = 0;                // the box lengths' changes since the last list build
  bool domain_stale_ = false;           // the box changed since the decomposition's geometry was made
  std::unique_ptr<Rdf> rdf_;
  ThermostatContext tctx_;
  std::vector<double> type_counts_;  // atoms of each type (global)
  double total_mass_ = 0;            // of every atom (the units' mass): the density row
  std::int64_t n_total_ = 0;
  long dangerous_ = 0;
  bool overdue_ = false;  // an atom moved more than half the skin since the last build
  bool energies_fresh_ = false, kernel_build_ = false, stale_ = false;
};

}  // namespace

std::unique_ptr<Model> create(const Config& cfg, const Context& ctx) { return std::make_unique<MdModel>(cfg, ctx); }

void register_solver(SolverRegistry& r) {
  r.add(SolverEntry{"md", "molecular dynamics: Lennard-Jones atoms, charges (Ewald), Verlet lists, velocity Verlet, spatial decomposition",
                    declare_keys, check, create,
                    {"position", "velocity", "image", "id", "type", "thermostat_work", "charge", "molecule", "special", "bond_atom",
                     "bond_type", "angle_atom", "angle_type", "settle_atom", "settle_type", "shake_atom", "shake_type"}, true});
}

}  // namespace cumulus::md
