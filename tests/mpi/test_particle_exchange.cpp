// ParticleExchange across ranks on a synthetic particle system: atoms on a jittered lattice
// take a deterministic pseudo-random walk (each step's move a hash of the atom's id and the step,
// so every rank can compute every atom's position: the brute-force reference). Every few steps a
// rebuild migrates atoms to their owners and selects ghosts (distance2_to_block < reach^2 to the
// peers); the other steps forward positions to the ghosts; every step sends values back from the
// ghosts to their owners (reverse). Checked against the reference:
//  - after each migration every atom is owned exactly once, by owner_of(its position);
//  - each rank's ghosts are exactly what a selection over all ranks gives, owners in rank order;
//  - forward delivers the ghosts' current positions, bit for bit;
//  - reverse returns to the owner what each ghost held, in the owner's send order;
//  - messages sent stay within the neighbour count: <= peers per forward or reverse, <= 2 peers
//    per exchange of a rebuild (counts + payloads).
// A line with the rank count, the peers and the message counts is printed (rank 0) for the CI log.
// Two shapes: a cube split as md.cpp splits it, and a rod of one block per rank (peers stay 2 as
// the rank count grows). Run by ctest at 1-4 ranks (mpi.npN) and 27 (mpi.particles.np27); 64 by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/comm.hpp"
#include "core/error.hpp"
#include "mesh/particle_exchange.hpp"

using namespace cumulus;

namespace {

constexpr double kReach = 1.0;     // cutoff + skin
constexpr double kSpacing = 0.5;   // of the lattice the atoms start on
constexpr double kMaxMove = 0.08;  // per axis and step
constexpr int kSteps = 15, kEvery = 5;

std::uint64_t mix(std::uint64_t z) {  // splitmix64's finaliser
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
// Uniform in [-0.5, 0.5), a function of (id, step, axis) alone.
double jitter(std::int64_t id, int step, int axis) {
  const std::uint64_t h = mix(mix(static_cast<std::uint64_t>(id)) ^
                              (static_cast<std::uint64_t>(step) << 2 | static_cast<std::uint64_t>(axis)));
  return static_cast<double>(h >> 11) * 0x1p-53 - 0.5;
}

using Vec = std::array<double, 3>;

// A periodic box and the lattice of atoms in it (one per kSpacing^3).
struct Lattice {
  Vec box;
  Index3 side;
  explicit Lattice(Vec b) : box(b) {
    for (int d = 0; d < 3; ++d) side[d] = static_cast<int>(b[d] / kSpacing + 0.5);
  }
  std::int64_t atoms() const { return std::int64_t{side[0]} * side[1] * side[2]; }
  Vec initial(std::int64_t id) const {
    const std::int64_t c[3] = {id % side[0], id / side[0] % side[1], id / (std::int64_t{side[0]} * side[1])};
    Vec p;
    for (int d = 0; d < 3; ++d) p[d] = (static_cast<double>(c[d]) + 0.5 + 0.4 * jitter(id, 0, d)) * (box[d] / side[d]);
    return p;
  }
  void walk(Vec& p, std::int64_t id, int step) const {
    for (int d = 0; d < 3; ++d) {
      p[d] += 2 * kMaxMove * jitter(id, step, d);
      if (p[d] < 0) p[d] += box[d];
      if (p[d] >= box[d]) p[d] -= box[d];  // also catches -tiny + L rounding to L
    }
  }
};

// Records of the rebuild's exchanges: a 64-bit id and a position, as bytes.
constexpr int kWidth = sizeof(std::int64_t) + 3 * sizeof(double);
void pack(std::vector<std::byte>& out, std::int64_t id, const Vec& p) {
  const std::size_t at = out.size();
  out.resize(at + kWidth);
  std::memcpy(out.data() + at, &id, sizeof id);
  std::memcpy(out.data() + at + sizeof id, p.data(), 3 * sizeof(double));
}
void unpack(const std::byte* rec, std::int64_t& id, Vec& p) {
  std::memcpy(&id, rec, sizeof id);
  std::memcpy(p.data(), rec + sizeof id, 3 * sizeof(double));
}

struct Counters {
  std::int64_t bad = 0;  // failed checks on this rank
  std::int64_t migrated = 0;
  int max_forward = 0, max_reverse = 0, max_migration = 0, max_ghosts = 0, max_ghost_count = 0;
};

// One rank's share of the system, driven the way MD drives it.
class System {
 public:
  System(const Comm& comm, const CartesianDecomposition& decomp, const Lattice& lattice)
      : comm_(comm),
        me_(comm.rank()),
        lat_(lattice),
        natoms_(lattice.atoms()),
        dom_(decomp, lattice.box, me_),
        x_(comm, dom_.peers_within(kReach)) {
    for (std::int64_t id = 0; id < natoms_; ++id) {
      ref_.push_back(lat_.initial(id));
      if (dom_.owner_of(ref_.back().data()) == me_) {
        id_.push_back(id);
        pos_.push_back(ref_.back());
      }
    }
  }
  const std::vector<int>& peers() const { return x_.peers(); }
  Counters& counters() { return c_; }

  void move(int step) {
    for (std::int64_t id = 0; id < natoms_; ++id) lat_.walk(ref_[static_cast<std::size_t>(id)], id, step);
    for (std::size_t i = 0; i < id_.size(); ++i) lat_.walk(pos_[i], id_[i], step);
  }

  void rebuild(int step) {
    migrate(step);
    select_ghosts();
  }

  // Forward: the ghosts' positions from their owners, packed in peer order.
  void forward() {
    fwd_.clear();
    for (const auto& list : send_lists_)
      for (int i : list)
        fwd_.insert(fwd_.end(), pos_[static_cast<std::size_t>(i)].begin(), pos_[static_cast<std::size_t>(i)].end());
    std::vector<double> in(3 * ghost_id_.size());
    x_.reset_traffic();
    x_.forward_begin(fwd_.data(), 3);
    x_.forward_finish(in.data());
    c_.max_forward = std::max(c_.max_forward, static_cast<int>(x_.traffic().messages));
    if (x_.traffic().messages > static_cast<std::int64_t>(peers().size())) ++c_.bad;
    for (std::size_t g = 0; g < ghost_id_.size(); ++g) {
      ghost_pos_[g] = {in[3 * g], in[3 * g + 1], in[3 * g + 2]};
      if (ghost_pos_[g] != ref_[static_cast<std::size_t>(ghost_id_[g])]) ++c_.bad;
    }
  }

  // Reverse: each ghost holds (its id, this rank, the step); the owner must get those back, record
  // k for the atom it sent as forward record k.
  void reverse(int step) {
    std::vector<double> out;
    for (std::int64_t id : ghost_id_)
      out.insert(out.end(), {static_cast<double>(id), static_cast<double>(me_), static_cast<double>(step)});
    std::vector<double> back(3 * static_cast<std::size_t>(x_.planned_sends()), -1.0);
    x_.reset_traffic();
    x_.reverse_begin(out.data(), 3);
    x_.reverse_finish(back.data());
    c_.max_reverse = std::max(c_.max_reverse, static_cast<int>(x_.traffic().messages));
    if (x_.traffic().messages > static_cast<std::int64_t>(peers().size())) ++c_.bad;
    std::size_t k = 0;
    for (std::size_t p = 0; p < send_lists_.size(); ++p)
      for (int i : send_lists_[p]) {
        const double expect[3] = {static_cast<double>(id_[static_cast<std::size_t>(i)]),
                                  static_cast<double>(peers()[p]), static_cast<double>(step)};
        if (!std::equal(expect, expect + 3, back.begin() + static_cast<std::ptrdiff_t>(3 * k))) ++c_.bad;
        ++k;
      }
  }

 private:
  // Atoms that left this rank's block go to their owners (kept atoms first, then the arrivals in
  // peer order, as md.cpp does). Checked: the owned set is exactly the reference's.
  void migrate(int step) {
    std::vector<std::vector<std::byte>> out(peers().size());
    std::vector<std::int64_t> id;
    std::vector<Vec> pos;
    for (std::size_t i = 0; i < id_.size(); ++i) {
      int slot = -1;
      try {
        slot = x_.migration_slot(dom_.owner_of(pos_[i].data()), id_[i], step);
      } catch (const Error&) {
        ++c_.bad;  // an owner beyond the peers: counted here (a throw on one rank alone would hang the others)
      }
      if (slot < 0) {
        id.push_back(id_[i]);
        pos.push_back(pos_[i]);
      } else {
        pack(out[static_cast<std::size_t>(slot)], id_[i], pos_[i]);
        ++c_.migrated;
      }
    }
    x_.reset_traffic();
    x_.exchange_begin(out, kWidth);
    std::vector<int> counts;
    const std::vector<std::byte>& in = x_.exchange_finish(&counts);
    c_.max_migration = std::max(c_.max_migration, static_cast<int>(x_.traffic().messages));
    if (x_.traffic().messages > 2 * static_cast<std::int64_t>(peers().size())) ++c_.bad;
    for (std::size_t r = 0; r < in.size() / kWidth; ++r) {
      id.emplace_back();
      pos.emplace_back();
      unpack(in.data() + r * kWidth, id.back(), pos.back());
    }
    id_.swap(id);
    pos_.swap(pos);
    // Owned exactly once: this rank holds exactly the atoms the reference puts here, at the
    // reference's positions (the sum over ranks of owned counts then is the atom count).
    std::vector<char> seen(ref_.size(), 0);
    for (std::size_t i = 0; i < id_.size(); ++i) {
      const std::size_t u = static_cast<std::size_t>(id_[i]);
      if (id_[i] < 0 || id_[i] >= natoms_ || seen[u] || pos_[i] != ref_[u] || dom_.owner_of(pos_[i].data()) != me_) {
        ++c_.bad;
        continue;
      }
      seen[u] = 1;
    }
    for (std::size_t u = 0; u < ref_.size(); ++u)
      if (!seen[u] && dom_.owner_of(ref_[u].data()) == me_) ++c_.bad;
    if (comm_.sum(static_cast<std::int64_t>(id_.size())) != natoms_) ++c_.bad;
  }

  // Owned atoms within reach of a peer's block go there as ghosts; the pattern is the plan for the
  // steps until the next rebuild. Checked against a selection by every rank for every atom.
  void select_ghosts() {
    send_lists_.assign(peers().size(), {});
    std::vector<std::vector<std::byte>> out(peers().size());
    std::vector<int> send_counts(peers().size());
    for (std::size_t p = 0; p < peers().size(); ++p) {
      for (std::size_t i = 0; i < id_.size(); ++i)
        if (dom_.distance2_to_block(pos_[i].data(), peers()[p]) < kReach * kReach) {
          send_lists_[p].push_back(static_cast<int>(i));
          pack(out[p], id_[i], pos_[i]);
        }
      send_counts[p] = static_cast<int>(send_lists_[p].size());
    }
    x_.reset_traffic();
    x_.exchange_begin(out, kWidth);
    std::vector<int> counts;
    const std::vector<std::byte>& in = x_.exchange_finish(&counts);
    c_.max_ghosts = std::max(c_.max_ghosts, static_cast<int>(x_.traffic().messages));
    if (x_.traffic().messages > 2 * static_cast<std::int64_t>(peers().size())) ++c_.bad;
    x_.plan(send_counts, counts);
    ghost_id_.resize(in.size() / kWidth);
    ghost_pos_.resize(ghost_id_.size());
    for (std::size_t g = 0; g < ghost_id_.size(); ++g) unpack(in.data() + g * kWidth, ghost_id_[g], ghost_pos_[g]);
    c_.max_ghost_count = std::max(c_.max_ghost_count, static_cast<int>(ghost_id_.size()));

    // The reference: every atom owned elsewhere within reach of this block, from any rank.
    std::vector<std::int64_t> expect;
    for (std::int64_t id = 0; id < natoms_; ++id) {
      const Vec& p = ref_[static_cast<std::size_t>(id)];
      if (dom_.owner_of(p.data()) != me_ && dom_.distance2_to_block(p.data(), me_) < kReach * kReach)
        expect.push_back(id);
    }
    std::vector<std::int64_t> got = ghost_id_;
    std::sort(got.begin(), got.end());
    if (got != expect) ++c_.bad;
    int last_owner = -1;  // senders in rank order, as md.cpp's all-ranks exchange delivered them
    for (std::size_t g = 0; g < ghost_id_.size(); ++g) {
      const std::size_t u = static_cast<std::size_t>(ghost_id_[g]);
      if (u >= ref_.size() || ghost_pos_[g] != ref_[u]) {
        ++c_.bad;
        continue;
      }
      const int owner = dom_.owner_of(ghost_pos_[g].data());
      if (owner < last_owner) ++c_.bad;
      last_owner = owner;
    }
  }

  Comm comm_;
  int me_;
  Lattice lat_;
  std::int64_t natoms_;
  ParticleDomain dom_;
  ParticleExchange x_;
  std::vector<Vec> ref_;  // every atom's position (the reference)
  std::vector<std::int64_t> id_, ghost_id_;
  std::vector<Vec> pos_, ghost_pos_;
  std::vector<std::vector<int>> send_lists_;
  std::vector<double> fwd_;
  Counters c_;
};

// Runs the system on `decomp` and prints its line; returns the most peers of any rank.
int run(const Comm& comm, const char* name, const Lattice& lat, const CartesianDecomposition& decomp) {
  const int np = comm.size();
  System sys(comm, decomp, lat);
  sys.rebuild(0);
  for (int step = 1; step <= kSteps; ++step) {
    sys.move(step);
    if (step % kEvery == 0)
      sys.rebuild(step);
    else
      sys.forward();
    sys.reverse(step);
  }
  const Counters& c = sys.counters();
  const std::int64_t bad = comm.sum(c.bad);
  const std::int64_t migrated = comm.sum(c.migrated);
  auto max_of = [&](int v) { return static_cast<int>(comm.max(static_cast<double>(v))); };
  const int peers = max_of(static_cast<int>(sys.peers().size()));
  const int fwd = max_of(c.max_forward), rev = max_of(c.max_reverse), mig = max_of(c.max_migration),
            gho = max_of(c.max_ghosts), ghosts = max_of(c.max_ghost_count);
  if (comm.is_root())
    std::printf(
        "particles (%s): %d ranks (%dx%dx%d), %lld atoms, %d steps, %d rebuilds: max peers %d; messages per "
        "step: forward max %d, reverse max %d; per rebuild exchange (counts + payloads, bound 2 x peers): "
        "migration max %d, ghosts max %d; %lld atoms migrated, at most %d ghosts on a rank\n",
        name, np, decomp.dims()[0], decomp.dims()[1], decomp.dims()[2], static_cast<long long>(lat.atoms()), kSteps,
        kSteps / kEvery + 1, peers, fwd, rev, mig, gho, static_cast<long long>(migrated), ghosts);
  EXPECT_EQ(bad, 0) << name;
  if (np > 1) {
    EXPECT_GT(migrated, 0) << name;  // the walk does move atoms across blocks: migration was exercised
    EXPECT_GT(ghosts, 0) << name;
  }
  return peers;
}

// Bins of reach/4, at least 4 per rank along a split axis, as md.cpp decomposes.
Index3 bins_of(const Lattice& lat) {
  Index3 b;
  for (int d = 0; d < 3; ++d) b[d] = static_cast<int>(lat.box[d] * 4 / kReach);
  return b;
}

}  // namespace

// A cube of 5 reach (1000 atoms) split as md.cpp splits it: at 27 ranks (3x3x3) every rank is
// adjacent to every other, at 64 (4x4x4) each has 26 peers of 63 ranks.
TEST(ParticleExchangeRanks, CubeAgainstBruteForce) {
  const Comm comm = Comm::world();
  const Lattice lat({5.0, 5.0, 5.0});
  const CartesianDecomposition decomp(bins_of(lat), {true, true, true}, comm.size(), 3, 4);
  EXPECT_LE(run(comm, "cube", lat, decomp), 26);
}

// A rod as long as the rank count, one block per rank along it: at most 2 peers at any rank
// count, so the messages per step stay at 2 however many ranks there are.
TEST(ParticleExchangeRanks, RodAgainstBruteForce) {
  const Comm comm = Comm::world();
  const int np = comm.size();
  const Lattice lat({1.25 * std::max(np, 2), 3.0, 3.0});
  const CartesianDecomposition decomp(bins_of(lat), {true, true, true}, np, 3, 4, {np, 1, 1});
  EXPECT_LE(run(comm, "rod", lat, decomp), 2);
}
