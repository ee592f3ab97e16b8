#include "mesh/particle_exchange.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.hpp"
#include "core/strings.hpp"

namespace cumulus {

// ---------------------------------------------------------------------------------------------
// ParticleDomain

ParticleDomain::ParticleDomain(const CartesianDecomposition& decomp, std::array<double, 3> box, int rank)
    : decomp_(decomp), box_(box), rank_(rank) {
  if (rank < 0 || rank >= decomp.nranks())
    throw Error(strprintf("ParticleDomain: rank %d outside 0..%d", rank, decomp.nranks() - 1));
  for (int d = 0; d < 3; ++d) {
    if (!(box[d] > 0)) throw Error(strprintf("ParticleDomain: box length %g along axis %d", box[d], d));
    nbins_[d] = decomp.global_cells()[d];
    binw_[d] = box_[d] / nbins_[d];
    // Block c along axis d holds bins [split_lo(c), split_lo(c + 1)) (CartesianDecomposition::box_of).
    const int parts = decomp.dims()[d];
    coord_of_bin_[d].resize(static_cast<std::size_t>(nbins_[d]));
    for (int c = 0; c < parts; ++c)
      for (int b = split_lo(nbins_[d], parts, c); b < split_lo(nbins_[d], parts, c + 1); ++b)
        coord_of_bin_[d][static_cast<std::size_t>(b)] = c;
  }
}

int ParticleDomain::bin_index(double x, int d) const {
  return std::clamp(static_cast<int>(std::floor(x / binw_[d])), 0, nbins_[d] - 1);
}

// The owner of a bin is the block holding it along every axis: the same rank as a table filled
// from box_of (md.cpp's), without the table.
int ParticleDomain::owner_of(const double p[3]) const {
  Index3 c;
  for (int d = 0; d < 3; ++d) c[d] = coord_of_bin_[d][static_cast<std::size_t>(bin_index(p[d], d))];
  return decomp_.rank_of(c);
}

double ParticleDomain::distance2_to_block(const double p[3], int r) const {
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

std::array<double, 2> ParticleDomain::coordinate_range(int d, int lo, int hi) const {
  // The smallest x >= 0 with floor(x / w) >= b: near b * w, found by stepping one ulp at a time
  // (x / w is monotone in x, so this takes a step or two).
  auto first_in = [&](int b) {
    double x = b * binw_[d];
    while (x > 0 && std::floor(x / binw_[d]) >= b) x = std::nextafter(x, 0.0);
    while (std::floor(x / binw_[d]) < b) x = std::nextafter(x, std::numeric_limits<double>::infinity());
    return x;
  };
  const double a = lo == 0 ? 0.0 : first_in(lo);
  const double z = hi == nbins_[d] ? box_[d] : std::nextafter(first_in(hi), 0.0);
  return {a, z};
}

// Whether some position of `from`'s block lies within `reach` of `to`'s block by
// distance2_to_block. That distance is a rounded sum of per-axis terms, each monotone in the term,
// so its least value over the block is the sum of the per-axis least values. Along an axis, each
// image's distance does not increase up to the image of the block and does not decrease after it
// (rounding keeps that order), so its least value over the coordinate range is 0 when the
// range meets the block and otherwise is at one end of the range.
namespace {
bool within_reach(const Box& to, const std::array<std::array<double, 2>, 3>& range, const std::array<double, 3>& binw,
                  const std::array<double, 3>& box, double reach) {
  double s = 0;
  for (int d = 0; d < 3; ++d) {
    const double lo = to.lo[d] * binw[d], hi = to.hi[d] * binw[d];
    auto gap = [&](double x) { return x < lo ? lo - x : (x > hi ? x - hi : 0.0); };
    double best = std::numeric_limits<double>::max();
    for (int k = -1; k <= 1; ++k) {
      const double xa = range[d][0] + k * box[d], xz = range[d][1] + k * box[d];
      const double dd = (xa <= hi && xz >= lo) ? 0.0 : std::min(gap(xa), gap(xz));
      best = std::min(best, dd);
    }
    s += best * best;
  }
  return s < reach * reach;
}
}  // namespace

std::vector<int> ParticleDomain::peers_within(double reach) const {
  auto ranges_of = [&](int r) {
    const Box b = decomp_.box_of(r);
    std::array<std::array<double, 2>, 3> out;
    for (int d = 0; d < 3; ++d) out[d] = coordinate_range(d, b.lo[d], b.hi[d]);
    return out;
  };
  const Box mine = decomp_.box_of(rank_);
  const auto my_range = ranges_of(rank_);
  std::vector<int> peers;
  for (int r = 0; r < decomp_.nranks(); ++r) {
    if (r == rank_) continue;
    // Both directions: the exchanges need every peer relation to be mutual (each side posts a
    // receive for the other's counts), and rounding need not make the two tests agree.
    if (within_reach(decomp_.box_of(r), my_range, binw_, box_, reach) ||
        within_reach(mine, ranges_of(r), binw_, box_, reach))
      peers.push_back(r);
  }
  return peers;
}

// ---------------------------------------------------------------------------------------------
// ParticleExchange

namespace {
// Tags per kind of message; matching within a kind relies on MPI's ordering between two ranks.
constexpr int kTagCounts = 7101, kTagRecords = 7102, kTagForward = 7103, kTagReverse = 7104;

int message_size(std::size_t bytes) {
  if (bytes > static_cast<std::size_t>(INT_MAX))
    throw Error(strprintf("ParticleExchange: a message of %zu bytes is larger than MPI's int count", bytes));
  return static_cast<int>(bytes);
}
}  // namespace

ParticleExchange::ParticleExchange(const Comm& comm, std::vector<int> peers)
    : comm_(comm), me_(comm.rank()), peers_(std::move(peers)) {
  std::sort(peers_.begin(), peers_.end());
  const int n = comm.size();
  for (std::size_t p = 0; p < peers_.size(); ++p) {
    if (peers_[p] < 0 || peers_[p] >= n || peers_[p] == me_)
      throw Error(strprintf("ParticleExchange: peer %d is not another rank of the %d", peers_[p], n));
    if (p > 0 && peers_[p] == peers_[p - 1]) throw Error(strprintf("ParticleExchange: peer %d given twice", peers_[p]));
  }
  const std::size_t P = peers_.size();
  xsend_counts_.assign(P, 0);
  xrecv_counts_.assign(P, 0);
  plan_send_.assign(P, 0);
  plan_recv_.assign(P, 0);
  requests_.reserve(4 * P);
}

ParticleExchange::~ParticleExchange() {
  // Only when an error left an operation in flight (the run is ending): drop the requests.
  for (MPI_Request& r : requests_)
    if (r != MPI_REQUEST_NULL) {
      MPI_Cancel(&r);
      MPI_Request_free(&r);
    }
}

int ParticleExchange::peer_index(int rank) const {
  const auto it = std::lower_bound(peers_.begin(), peers_.end(), rank);
  return it != peers_.end() && *it == rank ? static_cast<int>(it - peers_.begin()) : -1;
}

std::vector<std::byte> exchange_with_all(const Comm& comm, const std::vector<std::vector<std::byte>>& send, int width) {
  const int np = comm.size(), me = comm.rank();
  if (static_cast<int>(send.size()) != np) throw Error("exchange_with_all: one record list per rank is needed");
  std::vector<int> scount(static_cast<std::size_t>(np), 0), rcount(static_cast<std::size_t>(np), 0);
  std::vector<int> sdisp(static_cast<std::size_t>(np) + 1, 0), rdisp(static_cast<std::size_t>(np) + 1, 0);
  for (int r = 0; r < np; ++r) {
    const std::size_t bytes = r == me ? 0 : send[static_cast<std::size_t>(r)].size();
    if (bytes % static_cast<std::size_t>(width) != 0) throw Error("exchange_with_all: a record list is not a whole number of records");
    if (bytes > static_cast<std::size_t>(INT_MAX) - static_cast<std::size_t>(sdisp[static_cast<std::size_t>(r)]))
      throw Error("exchange_with_all: more than 2 GB of records from one rank");
    scount[static_cast<std::size_t>(r)] = static_cast<int>(bytes);
    sdisp[static_cast<std::size_t>(r) + 1] = sdisp[static_cast<std::size_t>(r)] + scount[static_cast<std::size_t>(r)];
  }
  std::vector<std::byte> out(static_cast<std::size_t>(sdisp[static_cast<std::size_t>(np)]) + 1), in;
  for (int r = 0; r < np; ++r)
    if (scount[static_cast<std::size_t>(r)] > 0)
      std::memcpy(out.data() + sdisp[static_cast<std::size_t>(r)], send[static_cast<std::size_t>(r)].data(),
                  static_cast<std::size_t>(scount[static_cast<std::size_t>(r)]));
  mpi_check(MPI_Alltoall(scount.data(), 1, MPI_INT, rcount.data(), 1, MPI_INT, comm.raw()), "MPI_Alltoall");
  for (int r = 0; r < np; ++r) {
    if (static_cast<std::size_t>(rcount[static_cast<std::size_t>(r)]) >
        static_cast<std::size_t>(INT_MAX) - static_cast<std::size_t>(rdisp[static_cast<std::size_t>(r)]))
      throw Error("exchange_with_all: more than 2 GB of records arriving");
    rdisp[static_cast<std::size_t>(r) + 1] = rdisp[static_cast<std::size_t>(r)] + rcount[static_cast<std::size_t>(r)];
  }
  in.resize(static_cast<std::size_t>(rdisp[static_cast<std::size_t>(np)]) + 1);
  mpi_check(MPI_Alltoallv(out.data(), scount.data(), sdisp.data(), MPI_BYTE, in.data(), rcount.data(), rdisp.data(), MPI_BYTE,
                          comm.raw()),
            "MPI_Alltoallv");
  in.resize(static_cast<std::size_t>(rdisp[static_cast<std::size_t>(np)]));
  return in;
}

int ParticleExchange::migration_slot(int owner, std::int64_t id, std::int64_t step) const {
  if (owner == me_) return -1;
  const int slot = peer_index(owner);
  if (slot < 0)
    throw Error(
        strprintf("particle %lld moved from rank %d's block into rank %d's by step %lld: further than one "
                  "exchange carries (to the %zu ranks within reach of rank %d); it moved more than a block's "
                  "width between two rebuilds",
                  static_cast<long long>(id), me_, owner, static_cast<long long>(step), peers_.size(), me_));
  return slot;
}

void ParticleExchange::isend(const void* data, std::size_t bytes, int peer, int tag) {
  requests_.push_back(MPI_REQUEST_NULL);
  mpi_check(MPI_Isend(data, message_size(bytes), MPI_BYTE, peer, tag, comm_.raw(), &requests_.back()),
            "MPI_Isend (particles)");
  ++traffic_.messages;
  traffic_.bytes += static_cast<std::int64_t>(bytes);
}

void ParticleExchange::irecv(void* data, std::size_t bytes, int peer, int tag) {
  requests_.push_back(MPI_REQUEST_NULL);
  mpi_check(MPI_Irecv(data, message_size(bytes), MPI_BYTE, peer, tag, comm_.raw(), &requests_.back()),
            "MPI_Irecv (particles)");
}

void ParticleExchange::wait_all(const char* what) {
  mpi_check(MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE), what);
  requests_.clear();
}

void ParticleExchange::start(Phase p) {
  if (phase_ != Phase::idle) throw Error("ParticleExchange: begin while another operation is in flight");
  phase_ = p;
}

void ParticleExchange::finish(Phase p) {
  if (phase_ != p) throw Error("ParticleExchange: finish without the matching begin");
  phase_ = Phase::idle;
}

void ParticleExchange::exchange_begin(const std::vector<std::vector<std::byte>>& send, int width) {
  const std::size_t P = peers_.size();
  if (send.size() != P) throw Error("ParticleExchange::exchange_begin: one record list per peer is needed");
  if (width < 1) throw Error("ParticleExchange::exchange_begin: records need a width of at least one byte");
  std::size_t total = 0;
  for (std::size_t p = 0; p < P; ++p) {
    if (send[p].size() % static_cast<std::size_t>(width) != 0)
      throw Error("ParticleExchange::exchange_begin: a record list is not a whole number of records");
    const std::size_t n = send[p].size() / static_cast<std::size_t>(width);
    if (n > static_cast<std::size_t>(INT_MAX)) throw Error("ParticleExchange::exchange_begin: too many records");
    xsend_counts_[p] = static_cast<int>(n);
    total += send[p].size();
  }
  start(Phase::exchange);
  width_ = width;
  xsend_.resize(total);
  std::size_t off = 0;
  for (std::size_t p = 0; p < P; ++p) {
    if (!send[p].empty()) std::memcpy(xsend_.data() + off, send[p].data(), send[p].size());
    off += send[p].size();
  }
  // The count receives come first in requests_: exchange_finish waits for those alone first.
  for (std::size_t p = 0; p < P; ++p) irecv(&xrecv_counts_[p], sizeof(int), peers_[p], kTagCounts);
  for (std::size_t p = 0; p < P; ++p) isend(&xsend_counts_[p], sizeof(int), peers_[p], kTagCounts);
  off = 0;
  for (std::size_t p = 0; p < P; ++p) {
    if (!send[p].empty()) isend(xsend_.data() + off, send[p].size(), peers_[p], kTagRecords);
    off += send[p].size();
  }
}

const std::vector<std::byte>& ParticleExchange::exchange_finish(std::vector<int>* recv_counts) {
  finish(Phase::exchange);
  const std::size_t P = peers_.size();
  mpi_check(MPI_Waitall(static_cast<int>(P), requests_.data(), MPI_STATUSES_IGNORE), "MPI_Waitall (particle counts)");
  std::size_t total = 0;
  for (std::size_t p = 0; p < P; ++p) {
    if (xrecv_counts_[p] < 0) throw Error("ParticleExchange: a negative record count arrived");
    total += static_cast<std::size_t>(xrecv_counts_[p]) * static_cast<std::size_t>(width_);
  }
  xrecv_.resize(total);
  std::size_t off = 0;
  for (std::size_t p = 0; p < P; ++p) {
    const std::size_t bytes = static_cast<std::size_t>(xrecv_counts_[p]) * static_cast<std::size_t>(width_);
    if (bytes > 0) irecv(xrecv_.data() + off, bytes, peers_[p], kTagRecords);
    off += bytes;
  }
  wait_all("MPI_Waitall (particle records)");
  *recv_counts = xrecv_counts_;
  return xrecv_;
}

void ParticleExchange::plan(std::vector<int> send_counts, std::vector<int> recv_counts) {
  if (phase_ != Phase::idle) throw Error("ParticleExchange::plan while an operation is in flight");
  if (send_counts.size() != peers_.size() || recv_counts.size() != peers_.size())
    throw Error("ParticleExchange::plan: one send and one receive count per peer are needed");
  std::int64_t ns = 0, nr = 0;
  for (std::size_t p = 0; p < peers_.size(); ++p) {
    if (send_counts[p] < 0 || recv_counts[p] < 0) throw Error("ParticleExchange::plan: negative count");
    ns += send_counts[p];
    nr += recv_counts[p];
  }
  if (ns > INT_MAX || nr > INT_MAX) throw Error("ParticleExchange::plan: too many records");
  plan_send_ = std::move(send_counts);
  plan_recv_ = std::move(recv_counts);
  plan_send_total_ = static_cast<int>(ns);
  plan_recv_total_ = static_cast<int>(nr);
}

void ParticleExchange::post_fixed(const double* send, const std::vector<int>& send_counts,
                                  const std::vector<int>& recv_counts, int ncomp, int tag) {
  if (ncomp < 1) throw Error("ParticleExchange: records need at least one component");
  ncomp_ = ncomp;
  const std::size_t nc = static_cast<std::size_t>(ncomp);
  std::size_t ns = 0, nr = 0;
  for (std::size_t p = 0; p < peers_.size(); ++p) {
    ns += static_cast<std::size_t>(send_counts[p]) * nc;
    nr += static_cast<std::size_t>(recv_counts[p]) * nc;
  }
  fsend_.resize(ns);
  frecv_.resize(nr);
  if (ns > 0) std::memcpy(fsend_.data(), send, ns * sizeof(double));
  std::size_t off = 0;
  for (std::size_t p = 0; p < peers_.size(); ++p) {
    const std::size_t n = static_cast<std::size_t>(recv_counts[p]) * nc;
    if (n > 0) irecv(frecv_.data() + off, n * sizeof(double), peers_[p], tag);
    off += n;
  }
  off = 0;
  for (std::size_t p = 0; p < peers_.size(); ++p) {
    const std::size_t n = static_cast<std::size_t>(send_counts[p]) * nc;
    if (n > 0) isend(fsend_.data() + off, n * sizeof(double), peers_[p], tag);
    off += n;
  }
}

void ParticleExchange::forward_begin(const double* send, int ncomp) {
  start(Phase::forward);
  post_fixed(send, plan_send_, plan_recv_, ncomp, kTagForward);
}

void ParticleExchange::forward_finish(double* recv) {
  finish(Phase::forward);
  wait_all("MPI_Waitall (particle forward)");
  if (!frecv_.empty()) std::memcpy(recv, frecv_.data(), frecv_.size() * sizeof(double));
}

void ParticleExchange::reverse_begin(const double* send, int ncomp) {
  start(Phase::reverse);
  post_fixed(send, plan_recv_, plan_send_, ncomp, kTagReverse);
}

void ParticleExchange::reverse_finish(double* recv) {
  finish(Phase::reverse);
  wait_all("MPI_Waitall (particle reverse)");
  if (!frecv_.empty()) std::memcpy(recv, frecv_.data(), frecv_.size() * sizeof(double));
}

// ---------------------------------------------------------------------------------------------
// GlobalIdMap

// splitmix64's finaliser: consecutive ids (the usual case) spread over the whole table.
std::size_t GlobalIdMap::home(std::int64_t id) const {
  std::uint64_t z = static_cast<std::uint64_t>(id) + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return static_cast<std::size_t>(z ^ (z >> 31)) & mask_;
}

void GlobalIdMap::build(const std::int64_t* ids, int n) {
  if (n < 0) throw Error("GlobalIdMap::build: negative count");
  std::size_t cap = 2;
  while (cap < 2 * static_cast<std::size_t>(n)) cap *= 2;  // at most half full: short probe runs
  mask_ = cap - 1;
  slots_.assign(cap, Slot{0, -1});
  n_ = 0;
  for (int i = 0; i < n; ++i) {
    std::size_t s = home(ids[i]);
    while (slots_[s].index >= 0 && slots_[s].id != ids[i]) s = (s + 1) & mask_;
    if (slots_[s].index >= 0) continue;  // seen before, at a lower index: keep that one
    slots_[s] = Slot{ids[i], i};
    ++n_;
  }
}

int GlobalIdMap::find(std::int64_t id) const {
  if (slots_.empty()) return -1;
  for (std::size_t s = home(id);; s = (s + 1) & mask_) {
    if (slots_[s].index < 0) return -1;
    if (slots_[s].id == id) return slots_[s].index;
  }
}

}  // namespace cumulus
