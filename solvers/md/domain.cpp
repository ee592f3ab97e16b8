// The md solver's decomposition: owners, migration, ghosts and their positions every step, with the
// neighbour ranks only (mesh/particle_exchange).
#include "solvers/md/domain.hpp"

#include <algorithm>
#include <cstring>

#include "core/error.hpp"
#include "core/timers.hpp"

namespace cumulus::md {

AtomDomain::AtomDomain(const Comm& comm, const Exec& ex, const CartesianDecomposition& decomp, const double box[3],
                       double reach)
    : comm_(comm), ex_(&ex), np_(comm.size()), reach_(reach), geometry_(decomp, {box[0], box[1], box[2]}, comm.rank()),
      exchange_(comm, geometry_.peers_within(reach)) {}

void AtomDomain::migrate(MdAtoms& atoms, std::int64_t step, bool any_rank) {
  ParticleStore& st = atoms.store;
  const int n = st.nown();
  if (any_rank) {
    const std::size_t w = st.record_bytes(false);
    std::vector<std::vector<std::byte>> to(static_cast<std::size_t>(np_));
    std::vector<int> keep;
    for (int i = 0; i < n; ++i) {
      const double p[3] = {atoms.hx(0)[i], atoms.hx(1)[i], atoms.hx(2)[i]};
      const int r = owner_of(p);
      if (r == comm_.rank()) {
        keep.push_back(i);
        continue;
      }
      std::vector<std::byte>& out = to[static_cast<std::size_t>(r)];
      out.resize(out.size() + w);
      st.pack(i, false, reinterpret_cast<unsigned char*>(out.data() + out.size() - w));
    }
    const std::vector<std::byte> in = exchange_with_all(comm_, to, static_cast<int>(w));
    st.keep_and_append(keep, reinterpret_cast<const unsigned char*>(in.data()), in.size() / w);
    return;
  }
  const std::size_t P = exchange_.peers().size(), w = st.record_bytes(false);
  records_.resize(P);
  for (auto& r : records_) r.clear();
  std::vector<int> keep;
  keep.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    const double p[3] = {atoms.hx(0)[i], atoms.hx(1)[i], atoms.hx(2)[i]};
    // -1: stays; an owner that is not a peer (an atom that went further than one rebuild carries,
    // possible with md.neighbor_check = false) is an Error naming the atom and the step.
    int slot = -1;
    try {
      slot = exchange_.migration_slot(owner_of(p), atoms.hid()[i], step);
    } catch (const Error& e) {
      throw Error(std::string(e.what()) + "; md.neighbor_check = true (the default) rebuilds before any atom can, "
                  "or make md.neighbor_every smaller");
    }
    if (slot < 0) {
      keep.push_back(i);
      continue;
    }
    std::vector<std::byte>& out = records_[static_cast<std::size_t>(slot)];
    out.resize(out.size() + w);
    st.pack(i, false, reinterpret_cast<unsigned char*>(out.data() + out.size() - w));
  }
  exchange_.exchange_begin(records_, static_cast<int>(w));
  std::vector<int> counts;
  const std::vector<std::byte>& in = exchange_.exchange_finish(&counts);
  st.keep_and_append(keep, reinterpret_cast<const unsigned char*>(in.data()), in.size() / w);
}

void AtomDomain::exchange_ghosts(MdAtoms& atoms) {
  ParticleStore& st = atoms.store;
  const std::size_t P = exchange_.peers().size();
  send_lists_.assign(P, {});
  recv_counts_.assign(P, 0);
  if (P == 0) {
    st.set_ghosts(nullptr, 0);
    exchange_.plan(recv_counts_, recv_counts_);
    return;
  }
  // Every owned atom within reach of a peer's block goes there (in owned order, peers ascending).
  const double rl2 = reach_ * reach_;
  const std::vector<int>& peers = exchange_.peers();
  for (int i = 0; i < st.nown(); ++i) {
    const double p[3] = {atoms.hx(0)[i], atoms.hx(1)[i], atoms.hx(2)[i]};
    for (std::size_t q = 0; q < P; ++q)
      if (geometry_.distance2_to_block(p, peers[q]) < rl2) send_lists_[q].push_back(i);
  }
  const std::size_t w = st.record_bytes(true);
  records_.resize(P);
  for (std::size_t q = 0; q < P; ++q) {
    records_[q].resize(send_lists_[q].size() * w);
    for (std::size_t k = 0; k < send_lists_[q].size(); ++k)
      st.pack(send_lists_[q][k], true, reinterpret_cast<unsigned char*>(records_[q].data() + k * w));
  }
  exchange_.exchange_begin(records_, static_cast<int>(w));
  const std::vector<std::byte>& in = exchange_.exchange_finish(&recv_counts_);
  st.set_ghosts(reinterpret_cast<const unsigned char*>(in.data()), in.size() / w);
  std::vector<int> send_counts(P);
  for (std::size_t q = 0; q < P; ++q) send_counts[q] = static_cast<int>(send_lists_[q].size());
  exchange_.plan(send_counts, recv_counts_);
}

void AtomDomain::upload_send_index(const MdAtoms& atoms) {
  std::vector<int> all;
  for (const auto& l : send_lists_) all.insert(all.end(), l.begin(), l.end());
  fit(*ex_, send_index_, std::max<std::size_t>(all.size(), 1));
  if (!all.empty())
    memory::copy(*ex_, ex_->backend(), send_index_.data(), Backend::host, all.data(), all.size() * sizeof(int));
  fit(*ex_, fwd_dev_, 3 * std::max<std::size_t>({all.size(), static_cast<std::size_t>(atoms.nghost()), 1}));
}

// The host builder's runs pack from and unpack into the position arrays directly; otherwise (CUDA,
// or kernel-built lists) kernels pack the sent atoms on the backend and unpack the arrivals there,
// so only the ghost data crosses to the host and back (MPI here is not assumed to be CUDA-aware).
void AtomDomain::forward_positions(MdAtoms& atoms, bool host_arrays) { forward(atoms, host_arrays, atoms.position); }
void AtomDomain::forward_velocities(MdAtoms& atoms, bool host_arrays) { forward(atoms, host_arrays, atoms.velocity); }

// Any three-component ghost array: the kernels pack and unpack a view's x, y, z, here pointed at it.
void AtomDomain::forward(MdAtoms& atoms, bool host_arrays, int field) {
  if (np_ == 1) return;
  ScopedTimer timer("md.ghosts");
  const Exec& ex = *ex_;
  const std::size_t nsend = 3 * static_cast<std::size_t>(exchange_.planned_sends()),
                    nrecv = 3 * static_cast<std::size_t>(exchange_.planned_receives());
  fwd_send_.resize(std::max<std::size_t>(nsend, 1));
  fwd_recv_.resize(std::max<std::size_t>(nrecv, 1));
  const double box[3] = {0, 0, 0};
  Atoms a = atoms.view(nullptr, box);
  a.x = atoms.store.device<double>(field, 0);
  a.y = atoms.store.device<double>(field, 1);
  a.z = atoms.store.device<double>(field, 2);
  if (host_arrays) {
    double* out = fwd_send_.data();
    for (const auto& list : send_lists_)
      for (int i : list) {
        *out++ = a.x[i];
        *out++ = a.y[i];
        *out++ = a.z[i];
      }
  } else if (nsend > 0) {
    CUMULUS_KERNEL(ex, kernels, pack_positions)(ex, a, send_index_.data(), static_cast<int>(nsend / 3), fwd_dev_.data());
    memory::copy(ex, Backend::host, fwd_send_.data(), ex.backend(), fwd_dev_.data(), nsend * sizeof(double));
  }
  exchange_.forward_begin(fwd_send_.data(), 3);
  exchange_.forward_finish(fwd_recv_.data());
  const double* in = fwd_recv_.data();
  const int nown = atoms.nown(), nghost = atoms.nghost();
  if (host_arrays) {
    for (int k = 0; k < nghost; ++k) {
      a.x[nown + k] = in[3 * k];
      a.y[nown + k] = in[3 * k + 1];
      a.z[nown + k] = in[3 * k + 2];
    }
    return;
  }
  if (nghost > 0) {
    memory::copy(ex, ex.backend(), fwd_dev_.data(), Backend::host, in, nrecv * sizeof(double));
    CUMULUS_KERNEL(ex, kernels, unpack_positions)(ex, a, fwd_dev_.data(), nown, nghost);
  }
}

// Each 64-bit integer travels as two doubles, its high half (signed) and its low half (unsigned):
// both exact in a double, whatever the bits.
void AtomDomain::reverse_add(std::int64_t* rows, int width, const MdAtoms& atoms) {
  if (np_ == 1) return;
  ScopedTimer timer("md.ghosts");
  const int nown = atoms.nown(), nghost = atoms.nghost();
  const std::size_t w2 = 2 * static_cast<std::size_t>(width);
  rev_send_.resize(std::max<std::size_t>(w2 * static_cast<std::size_t>(nghost), 1));
  rev_recv_.resize(std::max<std::size_t>(w2 * static_cast<std::size_t>(exchange_.planned_sends()), 1));
  for (std::size_t k = 0; k < static_cast<std::size_t>(nghost) * static_cast<std::size_t>(width); ++k) {
    const std::int64_t v = rows[static_cast<std::size_t>(nown) * static_cast<std::size_t>(width) + k];
    rev_send_[2 * k] = static_cast<double>(v >> 32);
    rev_send_[2 * k + 1] = static_cast<double>(v & 0xffffffff);
  }
  exchange_.reverse_begin(rev_send_.data(), static_cast<int>(w2));
  exchange_.reverse_finish(rev_recv_.data());
  // Record k is the ghost of the k-th atom sent (send lists in peer order).
  const double* in = rev_recv_.data();
  for (const auto& list : send_lists_)
    for (int i : list) {
      std::int64_t* const r = rows + static_cast<std::size_t>(i) * static_cast<std::size_t>(width);
      for (int c = 0; c < width; ++c, in += 2)
        r[c] += static_cast<std::int64_t>(static_cast<std::uint64_t>(static_cast<std::int64_t>(in[0])) << 32) + static_cast<std::int64_t>(in[1]);
    }
}

}  // namespace cumulus::md
