// ParticleDomain's geometry (owners, distances, peers) for many decompositions, GlobalIdMap, and
// ParticleExchange's checks that need no other rank (the not-a-peer error). The exchanges
// themselves are tested across ranks in tests/mpi/test_particle_exchange.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <set>

#include "core/error.hpp"
#include "mesh/particle_exchange.hpp"

using namespace cumulus;

namespace {

struct Layout {
  Index3 cells;
  int nranks;
  Index3 dims;  // {0, 0, 0}: chosen by CartesianDecomposition
  std::array<double, 3> box;
};

// 1 and 2 ranks, 3x3x3 and 4x4x4, uneven splits (13 bins over 3 blocks), and axes with one block
// (the rank is its own neighbour) or two (the same rank is adjacent on both sides).
std::vector<Layout> layouts() {
  return {
      {{8, 8, 8}, 1, {0, 0, 0}, {8.0, 8.0, 8.0}},        {{8, 8, 8}, 2, {0, 0, 0}, {8.0, 8.0, 8.0}},
      {{12, 12, 12}, 27, {3, 3, 3}, {12.0, 12.0, 12.0}}, {{20, 20, 20}, 64, {4, 4, 4}, {5.0, 5.0, 5.0}},
      {{13, 11, 9}, 6, {3, 2, 1}, {7.3, 5.9, 4.1}},      {{13, 12, 16}, 12, {1, 3, 4}, {6.5, 6.0, 8.0}},
      {{16, 9, 8}, 8, {2, 2, 2}, {8.0, 4.5, 4.0}},
  };
}

CartesianDecomposition decomposition(const Layout& l) {
  return CartesianDecomposition(l.cells, {true, true, true}, l.nranks, 3, 1, l.dims);
}

// md.cpp's owner lookup before this layer: a bin -> rank table filled from box_of.
std::vector<int> owner_table(const CartesianDecomposition& d) {
  const Index3 n = d.global_cells();
  std::vector<int> owner(static_cast<std::size_t>(n[0]) * n[1] * n[2], -1);
  for (int r = 0; r < d.nranks(); ++r) {
    const Box b = d.box_of(r);
    for (int k = b.lo[2]; k < b.hi[2]; ++k)
      for (int j = b.lo[1]; j < b.hi[1]; ++j)
        for (int i = b.lo[0]; i < b.hi[0]; ++i) owner[(static_cast<std::size_t>(k) * n[1] + j) * n[0] + i] = r;
  }
  return owner;
}

// Random points, plus points on and one ulp either side of every bin boundary along one axis.
std::vector<std::array<double, 3>> sample_points(const ParticleDomain& dom, std::mt19937_64& rng, int count) {
  std::vector<std::array<double, 3>> pts;
  const auto L = dom.box();
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int k = 0; k < count; ++k) pts.push_back({u(rng) * L[0], u(rng) * L[1], u(rng) * L[2]});
  const auto w = dom.bin_width();
  for (int d = 0; d < 3; ++d)
    for (int b = 0; b <= dom.decomposition().global_cells()[d]; ++b)
      for (double x : {std::nextafter(b * w[d], -1.0), b * w[d], std::nextafter(b * w[d], 1e300)}) {
        if (x < 0 || x >= L[d]) continue;
        std::array<double, 3> p{u(rng) * L[0], u(rng) * L[1], u(rng) * L[2]};
        p[static_cast<std::size_t>(d)] = x;
        pts.push_back(p);
      }
  return pts;
}

}  // namespace

TEST(ParticleDomain, OwnerOfMatchesTheBinTable) {
  std::mt19937_64 rng(17);
  for (const Layout& l : layouts()) {
    const CartesianDecomposition d = decomposition(l);
    const ParticleDomain dom(d, l.box, 0);
    const std::vector<int> table = owner_table(d);
    const Index3 n = d.global_cells();
    for (const auto& p : sample_points(dom, rng, 2000)) {
      std::size_t bin = 0;
      for (int a = 2; a >= 0; --a) {
        const int b = std::clamp(static_cast<int>(std::floor(p[a] / (l.box[a] / n[a]))), 0, n[a] - 1);
        ASSERT_EQ(dom.bin_index(p[a], a), b);  // md.cpp's formula, bit for bit at bin boundaries too
        bin = bin * static_cast<std::size_t>(n[a]) + static_cast<std::size_t>(b);
      }
      ASSERT_EQ(dom.owner_of(p.data()), table[bin]) << l.nranks << " ranks, p = " << p[0] << " " << p[1] << " " << p[2];
      // A position is in its owner's block.
      ASSERT_EQ(dom.distance2_to_block(p.data(), table[bin]), 0.0);
    }
  }
}

TEST(ParticleDomain, DistanceToBlockGoesThroughThePeriodicBoundary) {
  // 10 bins of width 1 along x over 2 ranks: rank 0 owns [0, 5], rank 1 [5, 10].
  const CartesianDecomposition d({10, 1, 1}, {true, true, true}, 2, 3, 1, {2, 1, 1});
  const ParticleDomain dom(d, {10.0, 4.0, 4.0}, 0);
  const double a[3] = {7.5, 1.0, 1.0}, b[3] = {9.5, 3.0, 0.5}, c[3] = {6.0, 2.0, 2.0};
  EXPECT_EQ(dom.distance2_to_block(a, 0), 2.5 * 2.5);
  EXPECT_EQ(dom.distance2_to_block(b, 0), 0.5 * 0.5);  // through x = 10 == 0
  EXPECT_EQ(dom.distance2_to_block(c, 0), 1.0);
  EXPECT_EQ(dom.distance2_to_block(c, 1), 0.0);
}

// peers_within is mutual, excludes this rank, ascends, and contains every rank a point of the
// block reaches (brute force over sampled points and all ranks). With blocks at least `reach`
// wide it is exactly the distinct adjacent ranks.
TEST(ParticleDomain, PeersWithinAreTheRanksAPointCanReach) {
  std::mt19937_64 rng(4);
  for (const Layout& l : layouts()) {
    const CartesianDecomposition d = decomposition(l);
    double narrowest = 1e300;  // the narrowest block along a split axis
    for (int r = 0; r < d.nranks(); ++r)
      for (int a = 0; a < 3; ++a)
        if (d.dims()[a] > 1) narrowest = std::min(narrowest, d.box_of(r).size(a) * (l.box[a] / d.global_cells()[a]));
    for (double reach : {0.4, 0.99 * std::min(narrowest, 1e3), 1.7}) {
      std::vector<std::vector<int>> peers(static_cast<std::size_t>(d.nranks()));
      for (int r = 0; r < d.nranks(); ++r)
        peers[static_cast<std::size_t>(r)] = ParticleDomain(d, l.box, r).peers_within(reach);
      const ParticleDomain any(d, l.box, 0);
      std::vector<std::set<int>> reached(static_cast<std::size_t>(d.nranks()));
      for (const auto& p : sample_points(any, rng, 3000)) {
        const int o = any.owner_of(p.data());
        for (int r = 0; r < d.nranks(); ++r)
          if (r != o && any.distance2_to_block(p.data(), r) < reach * reach)
            reached[static_cast<std::size_t>(o)].insert(r);
      }
      for (int r = 0; r < d.nranks(); ++r) {
        const auto& pr = peers[static_cast<std::size_t>(r)];
        SCOPED_TRACE(testing::Message() << l.nranks << " ranks, rank " << r << ", reach " << reach);
        EXPECT_TRUE(std::is_sorted(pr.begin(), pr.end()));
        EXPECT_EQ(std::adjacent_find(pr.begin(), pr.end()), pr.end());
        EXPECT_EQ(std::count(pr.begin(), pr.end(), r), 0);
        for (int q : reached[static_cast<std::size_t>(r)])
          EXPECT_EQ(std::count(pr.begin(), pr.end(), q), 1) << "misses " << q;
        for (int q : pr) {
          const auto& back = peers[static_cast<std::size_t>(q)];
          EXPECT_EQ(std::count(back.begin(), back.end(), r), 1) << q << " does not list " << r;
        }
        if (reach <= narrowest) {
          std::set<int> adjacent;
          for (int dz = -1; dz <= 1; ++dz)
            for (int dy = -1; dy <= 1; ++dy)
              for (int dx = -1; dx <= 1; ++dx) {
                const int q = d.neighbor(r, {dx, dy, dz});
                if (q != r) adjacent.insert(q);
              }
          EXPECT_EQ(std::set<int>(pr.begin(), pr.end()), adjacent);
          EXPECT_LE(pr.size(), 26u);
        }
      }
    }
  }
}

// Not padded: blocks exactly `reach` apart are not peers at that reach, and are just above it.
TEST(ParticleDomain, PeersWithinIsExactAtTheEdge) {
  // 8 bins of width 1 along x over 4 ranks: blocks [0,2], [2,4], [4,6], [6,8]; ranks 0 and 2 are
  // 2.0 apart.
  const CartesianDecomposition d({8, 1, 1}, {true, true, true}, 4, 3, 1, {4, 1, 1});
  const ParticleDomain dom(d, {8.0, 3.0, 3.0}, 0);
  EXPECT_EQ(dom.peers_within(2.0), (std::vector<int>{1, 3}));
  EXPECT_EQ(dom.peers_within(2.0 + 1e-12), (std::vector<int>{1, 2, 3}));
  EXPECT_TRUE(ParticleDomain(CartesianDecomposition({8, 1, 1}, {true, true, true}, 1, 3), {8.0, 3.0, 3.0}, 0)
                  .peers_within(100.0)
                  .empty());
}

TEST(GlobalIdMap, FindsEveryIdAndOnlyThose) {
  GlobalIdMap m;
  EXPECT_EQ(m.find(3), -1);  // never built
  std::vector<std::int64_t> ids;
  for (std::int64_t k = 0; k < 5000; ++k) ids.push_back((k * 7919) % 5003 + (std::int64_t{1} << 40));
  ids.push_back(-12);  // ids are opaque 64-bit numbers
  std::shuffle(ids.begin(), ids.end(), std::mt19937_64(9));
  m.build(ids.data(), static_cast<int>(ids.size()));
  EXPECT_EQ(m.size(), static_cast<int>(ids.size()));
  for (std::size_t i = 0; i < ids.size(); ++i) ASSERT_EQ(m.find(ids[i]), static_cast<int>(i));
  std::set<std::int64_t> present(ids.begin(), ids.end());
  for (std::int64_t probe = (std::int64_t{1} << 40) - 100; probe < (std::int64_t{1} << 40) + 5200; ++probe)
    if (!present.count(probe)) {
      ASSERT_EQ(m.find(probe), -1) << probe;
    }
  // Rebuilt smaller, and with a repeated id: the lowest index wins.
  const std::int64_t again[] = {5, 9, 5, 7};
  m.build(again, 4);
  EXPECT_EQ(m.size(), 3);
  EXPECT_EQ(m.find(5), 0);
  EXPECT_EQ(m.find(9), 1);
  EXPECT_EQ(m.find(7), 3);
  EXPECT_EQ(m.find(ids[0]), -1);
  m.build(nullptr, 0);
  EXPECT_EQ(m.find(5), -1);
}

// An atom whose new owner is not a peer is an error naming it and the step, not a silent loss.
TEST(ParticleExchangeChecks, AnOwnerBeyondThePeersIsAnError) {
  const Comm self = Comm::self();
  ParticleExchange x(self, {});
  EXPECT_EQ(x.peer_index(0), -1);
  EXPECT_EQ(x.migration_slot(0, 42, 7), -1);  // its own rank: the atom stays
  try {
    x.migration_slot(5, 123456789012LL, 4242);
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("123456789012"), std::string::npos) << m;
    EXPECT_NE(m.find("step 4242"), std::string::npos) << m;
    EXPECT_NE(m.find("rank 5"), std::string::npos) << m;
  }
  // Peers must be other ranks of the communicator, each once.
  EXPECT_THROW(ParticleExchange(self, {0}), Error);
  EXPECT_THROW(ParticleExchange(self, {1}), Error);
}
