// The md solver's decomposition: owners, migration, ghosts and their positions every step.
#include "solvers/md/domain.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/timers.hpp"

namespace cumulus::md {

AtomDomain::AtomDomain(const Comm& comm, const Exec& ex, const CartesianDecomposition& decomp, const double box[3],
                       double reach)
    : comm_(comm), ex_(&ex), decomp_(&decomp), me_(comm.rank()), np_(comm.size()), reach_(reach) {
  for (int d = 0; d < 3; ++d) {
    box_[d] = box[d];
    nbins_[d] = decomp.global_cells()[d];
    binw_[d] = box_[d] / nbins_[d];
  }
  owner_.assign(static_cast<std::size_t>(nbins_[0]) * nbins_[1] * nbins_[2], 0);
  for (int r = 0; r < np_; ++r) {
    const Box bb = decomp.box_of(r);
    for (int k = bb.lo[2]; k < bb.hi[2]; ++k)
      for (int j = bb.lo[1]; j < bb.hi[1]; ++j)
        for (int i = bb.lo[0]; i < bb.hi[0]; ++i) owner_[(static_cast<std::size_t>(k) * nbins_[1] + j) * nbins_[0] + i] = r;
  }
}

int AtomDomain::bin_index(double x, int d) const {
  return std::clamp(static_cast<int>(std::floor(x / binw_[d])), 0, nbins_[d] - 1);
}
int AtomDomain::owner_of(const double p[3]) const {
  return owner_[(static_cast<std::size_t>(bin_index(p[2], 2)) * nbins_[1] + bin_index(p[1], 1)) * nbins_[0] + bin_index(p[0], 0)];
}
// Squared distance from a point to rank r's block, through the periodic boundaries.
double AtomDomain::distance2_to_block(const double p[3], int r) const {
  const Box bb = decomp_->box_of(r);
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

void AtomDomain::migrate(MdAtoms& atoms, std::int64_t /*step*/) {
  ParticleStore& st = atoms.store;
  const int n = st.nown();
  std::vector<std::vector<int>> out(static_cast<std::size_t>(np_));
  std::vector<int> keep;
  for (int i = 0; i < n; ++i) {
    const double p[3] = {atoms.hx(0)[i], atoms.hx(1)[i], atoms.hx(2)[i]};
    const int r = owner_of(p);
    if (r == me_) keep.push_back(i);
    else out[static_cast<std::size_t>(r)].push_back(i);
  }
  const std::size_t w = st.record_bytes(false);
  std::vector<int> scount(static_cast<std::size_t>(np_)), rcount(static_cast<std::size_t>(np_));
  std::vector<int> sdisp(static_cast<std::size_t>(np_) + 1, 0), rdisp(static_cast<std::size_t>(np_) + 1, 0);
  std::vector<unsigned char> send;
  for (int r = 0; r < np_; ++r) {
    scount[static_cast<std::size_t>(r)] = static_cast<int>(out[static_cast<std::size_t>(r)].size() * w);
    sdisp[static_cast<std::size_t>(r) + 1] = sdisp[static_cast<std::size_t>(r)] + scount[static_cast<std::size_t>(r)];
    for (int i : out[static_cast<std::size_t>(r)]) {
      send.resize(send.size() + w);
      st.pack(i, false, &send[send.size() - w]);
    }
  }
  mpi_check(MPI_Alltoall(scount.data(), 1, MPI_INT, rcount.data(), 1, MPI_INT, comm_.raw()), "MPI_Alltoall");
  for (int r = 0; r < np_; ++r) rdisp[static_cast<std::size_t>(r) + 1] = rdisp[static_cast<std::size_t>(r)] + rcount[static_cast<std::size_t>(r)];
  std::vector<unsigned char> recv(static_cast<std::size_t>(rdisp[static_cast<std::size_t>(np_)]) + 1);
  mpi_check(MPI_Alltoallv(send.data(), scount.data(), sdisp.data(), MPI_BYTE, recv.data(), rcount.data(), rdisp.data(),
                          MPI_BYTE, comm_.raw()),
            "MPI_Alltoallv");
  st.keep_and_append(keep, recv.data(), static_cast<std::size_t>(rdisp[static_cast<std::size_t>(np_)]) / w);
}

void AtomDomain::exchange_ghosts(MdAtoms& atoms) {
  ParticleStore& st = atoms.store;
  const int n = st.nown();
  send_lists_.assign(static_cast<std::size_t>(np_), {});
  recv_counts_.assign(static_cast<std::size_t>(np_), 0);
  if (np_ == 1) {
    st.set_ghosts(nullptr, 0);
    return;
  }
  const double rl2 = reach_ * reach_;
  for (int i = 0; i < n; ++i) {
    const double p[3] = {atoms.hx(0)[i], atoms.hx(1)[i], atoms.hx(2)[i]};
    for (int r = 0; r < np_; ++r)
      if (r != me_ && distance2_to_block(p, r) < rl2) send_lists_[static_cast<std::size_t>(r)].push_back(i);
  }
  const std::size_t w = st.record_bytes(true);
  std::vector<int> scount(static_cast<std::size_t>(np_)), rcount(static_cast<std::size_t>(np_));
  std::vector<int> sdisp(static_cast<std::size_t>(np_) + 1, 0), rdisp(static_cast<std::size_t>(np_) + 1, 0);
  std::vector<unsigned char> send;
  for (int r = 0; r < np_; ++r) {
    scount[static_cast<std::size_t>(r)] = static_cast<int>(send_lists_[static_cast<std::size_t>(r)].size() * w);
    sdisp[static_cast<std::size_t>(r) + 1] = sdisp[static_cast<std::size_t>(r)] + scount[static_cast<std::size_t>(r)];
    for (int i : send_lists_[static_cast<std::size_t>(r)]) {
      send.resize(send.size() + w);
      st.pack(i, true, &send[send.size() - w]);
    }
  }
  mpi_check(MPI_Alltoall(scount.data(), 1, MPI_INT, rcount.data(), 1, MPI_INT, comm_.raw()), "MPI_Alltoall");
  for (int r = 0; r < np_; ++r) rdisp[static_cast<std::size_t>(r) + 1] = rdisp[static_cast<std::size_t>(r)] + rcount[static_cast<std::size_t>(r)];
  std::vector<unsigned char> recv(static_cast<std::size_t>(rdisp[static_cast<std::size_t>(np_)]) + 1);
  mpi_check(MPI_Alltoallv(send.data(), scount.data(), sdisp.data(), MPI_BYTE, recv.data(), rcount.data(), rdisp.data(),
                          MPI_BYTE, comm_.raw()),
            "MPI_Alltoallv");
  for (int r = 0; r < np_; ++r) recv_counts_[static_cast<std::size_t>(r)] = rcount[static_cast<std::size_t>(r)] / static_cast<int>(w);
  st.set_ghosts(recv.data(), static_cast<std::size_t>(rdisp[static_cast<std::size_t>(np_)]) / w);
}

void AtomDomain::upload_send_index(const MdAtoms& atoms) {
  std::vector<int> all;
  for (const auto& l : send_lists_) all.insert(all.end(), l.begin(), l.end());
  fit(*ex_, send_index_, std::max<std::size_t>(all.size(), 1));
  if (!all.empty())
    memory::copy(*ex_, ex_->backend(), send_index_.data(), Backend::host, all.data(), all.size() * sizeof(int));
  fit(*ex_, fwd_dev_, 3 * std::max<std::size_t>({all.size(), static_cast<std::size_t>(atoms.nghost()), 1}));
}

void AtomDomain::forward_positions(MdAtoms& atoms, bool host_arrays) {
  if (np_ == 1) return;
  ScopedTimer timer("md.ghosts");
  const Exec& ex = *ex_;
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
  const double box[3] = {box_[0], box_[1], box_[2]};
  const Atoms a = atoms.view(nullptr, box);
  if (host_arrays) {
    double* out = fwd_send_.data();
    for (std::size_t r = 0; r < P; ++r)
      for (int i : send_lists_[r]) {
        *out++ = a.x[i];
        *out++ = a.y[i];
        *out++ = a.z[i];
      }
  } else if (nsend > 0) {
    CUMULUS_KERNEL(ex, kernels, pack_positions)(ex, a, send_index_.data(), static_cast<int>(nsend / 3), fwd_dev_.data());
    memory::copy(ex, Backend::host, fwd_send_.data(), ex.backend(), fwd_dev_.data(), nsend * sizeof(double));
  }
  mpi_check(MPI_Alltoallv(fwd_send_.data(), fwd_scount_.data(), fwd_sdisp_.data(), MPI_DOUBLE, fwd_recv_.data(),
                          fwd_rcount_.data(), fwd_rdisp_.data(), MPI_DOUBLE, comm_.raw()),
            "MPI_Alltoallv");
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

}  // namespace cumulus::md
