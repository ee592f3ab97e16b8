// The md solver's Verlet lists (solvers/md/neighbor_list.hpp) against a brute-force O(N^2) search
// with the minimum image, on the host backend: random atoms in periodic boxes with fewer than three
// list bins along an axis (the builders' all-pairs path) and with many, owned atoms only and with
// "ghost" atoms after them. Both builders must give every owned atom exactly its partners within
// `reach` (by global id, ascending); the host builder's half list (one OpenMP thread) each pair
// once; pairs() the full-list entry count.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <ostream>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "core/memory.hpp"
#include "solvers/md/atoms.hpp"
#include "solvers/md/neighbor_list.hpp"

using namespace cumulus;
using namespace cumulus::md;

namespace {

struct Case {
  const char* name;
  double box[3];
  double reach;
  int nown, nghost;
};

// List bins per axis are floor(L / reach): {2, 5, 4} and {1, 1, 1} take the all-pairs path,
// {3, 6, 3} the binned path with the fewest bins it accepts, {7, 6, 8} many bins; the dense cases
// the host builder's half-width bins.
// gtest prints a failing case by its name (not as 48 bytes).
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<Case> cases() {
  return {
      {"brute", {3.0, 7.5, 6.0}, 1.3, 150, 0},
      {"brute_ghosts", {3.0, 7.5, 6.0}, 1.3, 120, 40},
      {"tiny", {2.0, 2.1, 1.9}, 1.2, 12, 4},
      {"three_bins", {4.0, 8.0, 5.0}, 1.3, 160, 0},
      {"three_bins_ghosts", {4.0, 8.0, 5.0}, 1.3, 130, 50},
      {"many_bins", {9.1, 8.3, 10.7}, 1.25, 600, 0},
      {"many_bins_ghosts", {9.1, 8.3, 10.7}, 1.25, 450, 150},
      // Dense: more than 64 atoms to a reach-wide bin, so the host builder's bins are half as
      // wide and searched two out ({6, 5, 7} of them: the fewest it accepts along y).
      {"dense_half_bins", {9.1, 8.3, 10.7}, 3.0, 2000, 0},
      {"dense_half_bins_ghosts", {9.1, 8.3, 10.7}, 3.0, 1600, 500},
  };
}

// Positions in [0, L) from the raw 64-bit draws (the same numbers with any standard library),
// including atoms on the lower faces and one ulp below the upper ones; distinct ids scattered over
// [0, 2^35) (several radix-sort passes) and unrelated to the atoms' order.
struct Points {
  std::vector<double> x[3];
  std::vector<std::int64_t> id;
};
Points random_points(const Case& c, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto unit = [&] { return static_cast<double>(rng() >> 11) * 0x1p-53; };
  const int n = c.nown + c.nghost;
  Points p;
  std::set<std::int64_t> used;
  for (int k = 0; k < n; ++k) {
    for (int d = 0; d < 3; ++d) {
      double v = unit() * c.box[d];
      if (k % 29 == 3) v = 0.0;
      if (k % 31 == 5) v = std::nextafter(c.box[d], 0.0);
      p.x[d].push_back(std::min(v, std::nextafter(c.box[d], 0.0)));
    }
    std::int64_t id;
    do id = static_cast<std::int64_t>(rng() >> 29);
    while (!used.insert(id).second);
    p.id.push_back(id);
  }
  return p;
}

// Atoms in an MdAtoms store: the first nown owned, the rest ghosts (set through ghost records, as
// the domain does), then uploaded.
void load(MdAtoms& atoms, const Points& p, int nown, const Exec& ex) {
  const int n = static_cast<int>(p.id.size());
  atoms.store.resize_owned(nown);
  MdAtoms src(ex, {1.0});  // the ghosts' owner
  src.store.resize_owned(n);
  for (MdAtoms* a : {&atoms, &src})
    for (int i = 0; i < (a == &atoms ? nown : n); ++i) {
      for (int d = 0; d < 3; ++d) a->hx(d)[i] = p.x[d][static_cast<std::size_t>(i)];
      a->hid()[i] = p.id[static_cast<std::size_t>(i)];
      a->htype()[i] = 0;
    }
  const std::size_t rec = src.store.record_bytes(true);
  std::vector<unsigned char> ghosts(rec * static_cast<std::size_t>(n - nown));
  for (int i = nown; i < n; ++i) src.store.pack(i, true, ghosts.data() + rec * static_cast<std::size_t>(i - nown));
  atoms.store.set_ghosts(ghosts.data(), static_cast<std::size_t>(n - nown));
  atoms.store.upload();
}

double image(double d, double L) { return d > 0.5 * L ? d - L : (d < -0.5 * L ? d + L : d); }
double distance2(MdAtoms& a, int i, int j, const double box[3]) {
  double r2 = 0;
  for (int d = 0; d < 3; ++d) {
    const double s = image(a.hx(d)[i] - a.hx(d)[j], box[d]);
    r2 += s * s;
  }
  return r2;
}

// The reference: for each owned atom (host mirror order), the ids of every other local atom within
// reach, ascending.
std::vector<std::vector<std::int64_t>> brute_force(MdAtoms& a, const double box[3], double reach) {
  std::vector<std::vector<std::int64_t>> ref(static_cast<std::size_t>(a.nown()));
  for (int i = 0; i < a.nown(); ++i) {
    for (int j = 0; j < a.nlocal(); ++j)
      if (j != i && distance2(a, i, j, box) < reach * reach) ref[static_cast<std::size_t>(i)].push_back(a.hid()[j]);
    std::sort(ref[static_cast<std::size_t>(i)].begin(), ref[static_cast<std::size_t>(i)].end());
  }
  return ref;
}
std::size_t entries(const std::vector<std::vector<std::int64_t>>& ref) {
  std::size_t n = 0;
  for (const auto& r : ref) n += r.size();
  return n;
}

// The list, copied from backend memory: start[nslots + 1], neighbours (local indices), slot order.
struct HostList {
  std::vector<std::int64_t> start;
  std::vector<int> nbr, order;
};
HostList copy_list(const NeighborList& l, int nlocal, const Exec& ex) {
  HostList h;
  h.start.resize(static_cast<std::size_t>(l.nslots()) + 1);
  memory::copy(ex, Backend::host, h.start.data(), ex.backend(), l.start(), h.start.size() * sizeof(std::int64_t));
  h.nbr.resize(static_cast<std::size_t>(h.start.back()));
  if (!h.nbr.empty())
    memory::copy(ex, Backend::host, h.nbr.data(), ex.backend(), l.neighbors(), h.nbr.size() * sizeof(int));
  if (l.half()) {
    h.order.resize(static_cast<std::size_t>(nlocal));
    memory::copy(ex, Backend::host, h.order.data(), ex.backend(), l.order(), h.order.size() * sizeof(int));
  }
  return h;
}

// A full list: slot i is owned atom i, its partners as ids in list order.
void expect_full_list_is(const NeighborList& l, MdAtoms& a, const std::vector<std::vector<std::int64_t>>& ref,
                         const Exec& ex) {
  ASSERT_FALSE(l.half());
  ASSERT_EQ(l.nslots(), a.nown());
  const HostList h = copy_list(l, a.nlocal(), ex);
  for (int i = 0; i < a.nown(); ++i) {
    std::vector<std::int64_t> got;
    for (std::int64_t k = h.start[static_cast<std::size_t>(i)]; k < h.start[static_cast<std::size_t>(i) + 1]; ++k) {
      const int j = h.nbr[static_cast<std::size_t>(k)];
      ASSERT_TRUE(j >= 0 && j < a.nlocal()) << "atom " << i << " lists local index " << j;
      got.push_back(a.hid()[j]);
    }
    EXPECT_EQ(got, ref[static_cast<std::size_t>(i)]) << "partners (ids, in list order) of owned atom " << i;
  }
  EXPECT_EQ(l.pairs(), static_cast<double>(entries(ref)));
}

// Restores the OpenMP thread count a test changes.
struct Threads {
  int saved = omp_get_max_threads();
  explicit Threads(int n) { omp_set_num_threads(n); }
  ~Threads() { omp_set_num_threads(saved); }
};

// Whether the builders take their all-pairs path (fewer than three list bins along an axis).
bool all_pairs(const Case& c) {
  bool brute = false;
  for (int d = 0; d < 3; ++d) brute = brute || std::floor(c.box[d] / c.reach) < 3;
  return brute;
}

}  // namespace

class NeighborListTest : public ::testing::TestWithParam<Case> {};

// The host builder at 2 and 3 threads builds the full list: exactly the brute-force partners.
TEST_P(NeighborListTest, HostFullListIsTheBruteForceList) {
  const Case c = GetParam();
  Exec ex;
  MdAtoms atoms(ex, {1.0});
  load(atoms, random_points(c, 11), c.nown, ex);
  const auto ref = brute_force(atoms, c.box, c.reach);
  ASSERT_GT(entries(ref), 0u);
  for (int t : {2, 3}) {
    SCOPED_TRACE(::testing::Message() << t << " threads");
    Threads threads(t);
    auto list = make_host_neighbor_list(ex);
    list->build(atoms, c.box, c.reach);
    expect_full_list_is(*list, atoms, ref, ex);
  }
}

// The host builder at one thread builds the half list: slots in ascending id, each slot's partners
// of larger id in ascending id, a ghost's owned ones only; every pair with an owned atom exactly
// once. Spread to both atoms of each pair, it is the brute-force full list.
TEST_P(NeighborListTest, HostHalfListHoldsEachPairOnce) {
  const Case c = GetParam();
  Exec ex;
  MdAtoms atoms(ex, {1.0});
  load(atoms, random_points(c, 12), c.nown, ex);
  const auto ref = brute_force(atoms, c.box, c.reach);
  Threads threads(1);
  auto list = make_host_neighbor_list(ex);
  list->build(atoms, c.box, c.reach);
  ASSERT_TRUE(list->half());
  ASSERT_EQ(list->nslots(), atoms.nlocal());
  const HostList h = copy_list(*list, atoms.nlocal(), ex);
  const int nown = atoms.nown();
  std::vector<std::vector<std::int64_t>> spread(static_cast<std::size_t>(nown));
  std::set<std::pair<std::int64_t, std::int64_t>> seen;
  std::vector<int> slot_of(static_cast<std::size_t>(atoms.nlocal()), -1);
  for (int s = 0; s < list->nslots(); ++s) {
    const int i = h.order[static_cast<std::size_t>(s)];
    ASSERT_TRUE(i >= 0 && i < atoms.nlocal());
    ASSERT_EQ(slot_of[static_cast<std::size_t>(i)], -1) << "atom " << i << " has two slots";
    slot_of[static_cast<std::size_t>(i)] = s;
    if (s > 0) {
      EXPECT_LT(atoms.hid()[h.order[static_cast<std::size_t>(s) - 1]], atoms.hid()[i]) << "slot " << s;
    }
    std::int64_t last = atoms.hid()[i];
    for (std::int64_t k = h.start[static_cast<std::size_t>(s)]; k < h.start[static_cast<std::size_t>(s) + 1]; ++k) {
      const int j = h.nbr[static_cast<std::size_t>(k)];
      ASSERT_TRUE(j >= 0 && j < atoms.nlocal());
      EXPECT_GT(atoms.hid()[j], last) << "slot " << s << ": partners not of larger id, ascending";
      last = atoms.hid()[j];
      EXPECT_TRUE(i < nown || j < nown) << "a pair of two ghosts";
      EXPECT_LT(distance2(atoms, i, j, c.box), c.reach * c.reach);
      EXPECT_TRUE(seen.insert({atoms.hid()[i], atoms.hid()[j]}).second) << "a pair listed twice";
      if (i < nown) spread[static_cast<std::size_t>(i)].push_back(atoms.hid()[j]);
      if (j < nown) spread[static_cast<std::size_t>(j)].push_back(atoms.hid()[i]);
    }
  }
  for (auto& v : spread) std::sort(v.begin(), v.end());
  for (int i = 0; i < nown; ++i)
    EXPECT_EQ(spread[static_cast<std::size_t>(i)], ref[static_cast<std::size_t>(i)]) << "owned atom " << i;
  EXPECT_EQ(list->pairs(), static_cast<double>(entries(ref)));  // full-list entries, not pairs
}

// The host builder for a force term that takes a pair in either atom's slot (allow_either_slot),
// without ghost slots (Newton's third law across ranks), at 1 and 2 threads: a pair of owned atoms
// exactly once, in either atom's slot (the spatial half stencil's choice); a pair with a ghost
// exactly once, in the owned atom's slot, when the ghost's id is the larger (the other rank lists
// it otherwise); ghosts' slots empty; each slot's partners ascending in id, or in any order without
// id order (a mixed-precision term's). Without ghosts the ghost slots are moot and it is the same
// list with them.
TEST_P(NeighborListTest, HostSpatialHalfListHoldsEachPairOnce) {
  const Case c = GetParam();
  Exec ex;
  MdAtoms atoms(ex, {1.0});
  load(atoms, random_points(c, 14), c.nown, ex);
  const int nown = atoms.nown(), nlocal = atoms.nlocal();
  std::set<std::pair<std::int64_t, std::int64_t>> want;  // (smaller id, larger id)
  for (int i = 0; i < nown; ++i)
    for (int j = 0; j < nlocal; ++j) {
      if (j == i || distance2(atoms, i, j, c.box) >= c.reach * c.reach) continue;
      const std::int64_t a = atoms.hid()[i], b = atoms.hid()[j];
      if (j < nown || a < b) want.insert({std::min(a, b), std::max(a, b)});
    }
  ASSERT_FALSE(want.empty());
  for (int t : {1, 2})
    for (bool ghost_slots : {false, true})
      for (bool id_order : {true, false}) {
        if (ghost_slots && c.nghost > 0) continue;
        SCOPED_TRACE(::testing::Message()
                     << t << " threads" << (ghost_slots ? ", ghost slots" : "") << (id_order ? "" : ", unordered"));
        Threads threads(t);
        auto list = make_host_neighbor_list(ex);
        list->allow_threaded_half(true);
        list->allow_either_slot(true);
        list->set_ghost_slots(ghost_slots);
        list->set_id_order(id_order);
        list->build(atoms, c.box, c.reach);
        ASSERT_TRUE(list->half());
        const HostList h = copy_list(*list, nlocal, ex);
        std::set<std::pair<std::int64_t, std::int64_t>> got;
        std::size_t listed = 0;
        for (int s = 0; s < list->nslots(); ++s) {
          const int i = h.order[static_cast<std::size_t>(s)];
          ASSERT_TRUE(i >= 0 && i < nlocal);
          if (s > 0) {
            EXPECT_LT(atoms.hid()[h.order[static_cast<std::size_t>(s) - 1]], atoms.hid()[i]) << "slot " << s;
          }
          const std::int64_t k0 = h.start[static_cast<std::size_t>(s)], k1 = h.start[static_cast<std::size_t>(s) + 1];
          if (i >= nown) {
            EXPECT_EQ(k1, k0) << "ghost slot " << s << " holds pairs";
          }
          std::int64_t last = -1;
          for (std::int64_t k = k0; k < k1; ++k) {
            const int j = h.nbr[static_cast<std::size_t>(k)];
            ASSERT_TRUE(j >= 0 && j < nlocal && j != i);
            const std::int64_t a = atoms.hid()[i], b = atoms.hid()[j];
            if (id_order) {
              EXPECT_GT(b, last) << "slot " << s << ": partners not ascending in id";
            }
            last = b;
            EXPECT_LT(distance2(atoms, i, j, c.box), c.reach * c.reach);
            EXPECT_TRUE(j < nown || a < b) << "slot " << s << " lists a ghost of smaller id";
            EXPECT_TRUE(got.insert({std::min(a, b), std::max(a, b)}).second) << "a pair listed twice";
            ++listed;
          }
        }
        EXPECT_EQ(got, want);
        EXPECT_EQ(list->pairs(), 2.0 * static_cast<double>(listed));
      }
}

// The distance shells of a half list without id order (ListShells, for an order-free force term):
// each slot's row grouped by shell, the shells' ends ascending to the row's length, each entry's
// distance (minimum image, as the force loops measure it) within its shell's edges (to a millionth
// of the reach), the build positions kept; and the same rows, entry for entry, whichever of the
// builder's scans and shell sorts runs (CUMULUS_HOST_AVX2, CUMULUS_NO_AVX512: every one the CPU
// has), at 1 and 2 threads, spatial (no ghost slots) or not. With id order: no shells.
TEST_P(NeighborListTest, HostShellsHoldTheirDistances) {
  const Case c = GetParam();
  Exec ex;
  MdAtoms atoms(ex, {1.0});
  load(atoms, random_points(c, 15), c.nown, ex);
  const int nlocal = atoms.nlocal();
  constexpr int K = ListShells::kCount;
  for (int t : {1, 2})
    for (bool ghost_slots : {false, true}) {
      HostList first;
      std::vector<int> first_ends;
      for (const char* isa : {"", "CUMULUS_HOST_AVX2", "CUMULUS_NO_AVX512"}) {
        SCOPED_TRACE(::testing::Message() << t << " threads" << (ghost_slots ? ", ghost slots" : "") << " " << isa);
        Threads threads(t);
        if (*isa) ::setenv(isa, "1", 1);
        auto list = make_host_neighbor_list(ex);
        list->allow_threaded_half(true);
        list->allow_either_slot(true);
        list->set_ghost_slots(ghost_slots);
        list->set_id_order(false);
        list->build(atoms, c.box, c.reach);
        if (*isa) ::unsetenv(isa);
        ASSERT_TRUE(list->half());
        const ListShells sh = list->shells();
        ASSERT_NE(sh.end, nullptr);
        EXPECT_EQ(sh.nlocal, nlocal);
        EXPECT_EQ(sh.reach, c.reach);
        for (int k = 0; k < nlocal; ++k)
          for (int d = 0; d < 3; ++d) ASSERT_EQ(sh.x0[3 * k + d], atoms.hx(d)[k]);
        const HostList h = copy_list(*list, nlocal, ex);
        const std::vector<int> ends(sh.end, sh.end + static_cast<std::size_t>(list->nslots()) * K);
        std::size_t in_far = 0;
        for (int s = 0; s < list->nslots(); ++s) {
          const int i = h.order[static_cast<std::size_t>(s)];
          const std::int64_t k0 = h.start[static_cast<std::size_t>(s)], len = h.start[static_cast<std::size_t>(s) + 1] - k0;
          const int* e = ends.data() + static_cast<std::size_t>(s) * K;
          ASSERT_EQ(e[K - 1], len) << "slot " << s;
          for (int k = 0, from = 0; k < K; from = e[k], ++k) {
            ASSERT_LE(from, e[k]) << "slot " << s;
            for (int q = from; q < e[k]; ++q) {
              const int j = h.nbr[static_cast<std::size_t>(k0 + q)];
              const double r = std::sqrt(distance2(atoms, i, j, c.box));
              if (k > 0) {
                EXPECT_GE(r, ListShells::edge(k - 1, c.reach) * (1 - 1e-6)) << "slot " << s << ", shell " << k;
              }
              if (k < K - 1) {
                EXPECT_LT(r, ListShells::edge(k, c.reach) * (1 + 1e-6)) << "slot " << s << ", shell " << k;
              }
              in_far += k == K - 1;
            }
          }
        }
        EXPECT_GT(in_far, 0u) << "no entry in the last shell: the test has no bite";
        if (first.nbr.empty() && first.start.empty()) {
          first = h;
          first_ends = ends;
        } else {
          EXPECT_EQ(h.nbr, first.nbr) << "another scan, another list";
          EXPECT_EQ(ends, first_ends);
        }
      }
    }
  // Partners in id order: no shells.
  auto list = make_host_neighbor_list(ex);
  list->allow_threaded_half(true);
  list->build(atoms, c.box, c.reach);
  EXPECT_EQ(list->shells().end, nullptr);
}

// The kernel builder (host backend), atoms left in place: the brute-force list, ghosts included.
TEST_P(NeighborListTest, KernelListIsTheBruteForceList) {
  const Case c = GetParam();
  Exec ex;
  MdAtoms atoms(ex, {1.0});
  load(atoms, random_points(c, 13), c.nown, ex);
  const auto ref = brute_force(atoms, c.box, c.reach);
  auto list = make_kernel_neighbor_list(ex, false);
  EXPECT_FALSE(list->resident());
  list->build(atoms, c.box, c.reach);
  expect_full_list_is(*list, atoms, ref, ex);
  // A second build over the same atoms reuses the buffers and gives the same list.
  list->build(atoms, c.box, c.reach);
  expect_full_list_is(*list, atoms, ref, ex);
  EXPECT_EQ(list->builds(), 2);
}

// The kernel builder's id order, on and off (NeighborList::set_id_order(false), for order-free
// force terms), on its two paths, ghosts included:
// - long lists (about 880 partners an atom: every gap of list_sort's Shell sort up to 701 in use)
//   in a box of two bins an axis (all pairs, a thread an atom: partners handed over in index order,
//   unrelated to the ids);
// - the binned path (3 to 4 bins an axis; a thread for each atom and bin around it).
// In id order: the brute-force list. Without: the same partners, in the order the path finds them
// (not ascending for most atoms), the same at every build.
TEST(KernelNeighborList, ListsInIdOrderOrNot) {
  for (const Case& c : {Case{"long_lists", {9.0, 9.2, 9.4}, 4.5, 1700, 100}, Case{"binned", {14.0, 14.2, 18.4}, 4.5, 1500, 300}}) {
    SCOPED_TRACE(c.name);
    Exec ex;
    MdAtoms atoms(ex, {1.0});
    load(atoms, random_points(c, 15), c.nown, ex);
    const auto ref = brute_force(atoms, c.box, c.reach);
    std::size_t longest = 0;
    for (const auto& v : ref) longest = std::max(longest, v.size());
    if (all_pairs(c)) {
      EXPECT_GT(longest, 701u);
    } else {
      EXPECT_GT(longest, 100u);
    }
    auto list = make_kernel_neighbor_list(ex, false);
    EXPECT_TRUE(list->id_order());
    list->build(atoms, c.box, c.reach);
    expect_full_list_is(*list, atoms, ref, ex);

    list->set_id_order(false);
    list->build(atoms, c.box, c.reach);
    const HostList h = copy_list(*list, atoms.nlocal(), ex);
    list->build(atoms, c.box, c.reach);
    const HostList h2 = copy_list(*list, atoms.nlocal(), ex);
    EXPECT_EQ(h.start, h2.start);
    EXPECT_EQ(h.nbr, h2.nbr) << "the order differs between two builds of the same atoms";
    int unsorted = 0;
    for (int i = 0; i < atoms.nown(); ++i) {
      std::vector<std::int64_t> got;
      for (std::int64_t k = h.start[static_cast<std::size_t>(i)]; k < h.start[static_cast<std::size_t>(i) + 1]; ++k)
        got.push_back(atoms.hid()[h.nbr[static_cast<std::size_t>(k)]]);
      unsorted += !std::is_sorted(got.begin(), got.end());
      std::sort(got.begin(), got.end());
      EXPECT_EQ(got, ref[static_cast<std::size_t>(i)]) << "partners of owned atom " << i;
    }
    EXPECT_GT(unsorted, atoms.nown() / 2) << "the partners came in id order: the flag was not exercised";
  }
}

// The kernel builder that re-sorts the atoms (one rank, so no ghosts): every registered array follows
// the new order on the backend (each id keeps its position), and the list over the new order is
// the brute-force list.
class ReorderingNeighborListTest : public ::testing::TestWithParam<Case> {};
TEST_P(ReorderingNeighborListTest, KernelListMovesWholeAtoms) {
  const Case c = GetParam();
  ASSERT_EQ(c.nghost, 0);
  Exec ex;
  MdAtoms atoms(ex, {1.0});
  const Points p = random_points(c, 14);
  load(atoms, p, c.nown, ex);
  for (int i = 0; i < c.nown; ++i) atoms.store.host<double>(atoms.velocity, 1)[i] = 0.5 * i;  // a passenger
  atoms.store.upload();
  std::map<std::int64_t, int> was;  // id -> original index
  for (int i = 0; i < c.nown; ++i) was[p.id[static_cast<std::size_t>(i)]] = i;
  auto list = make_kernel_neighbor_list(ex, true);
  EXPECT_TRUE(list->resident());
  list->build(atoms, c.box, c.reach);
  atoms.store.download_owned();
  bool moved = false;
  for (int i = 0; i < c.nown; ++i) {
    const auto it = was.find(atoms.hid()[i]);
    ASSERT_NE(it, was.end());
    const std::size_t k = static_cast<std::size_t>(it->second);
    for (int d = 0; d < 3; ++d) EXPECT_EQ(atoms.hx(d)[i], p.x[d][k]);
    EXPECT_EQ(atoms.store.host<double>(atoms.velocity, 1)[i], 0.5 * it->second);
    moved = moved || it->second != i;
  }
  if (!all_pairs(c)) {
    EXPECT_TRUE(moved) << "the binned path re-sorts the atoms";
  }
  expect_full_list_is(*list, atoms, brute_force(atoms, c.box, c.reach), ex);
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) { return info.param.name; }
INSTANTIATE_TEST_SUITE_P(Boxes, NeighborListTest, ::testing::ValuesIn(cases()), case_name);
// The re-sorting builder serves one rank, which has no ghosts: the cases without.
std::vector<Case> owned_only() {
  std::vector<Case> v;
  for (const Case& c : cases())
    if (c.nghost == 0) v.push_back(c);
  return v;
}
INSTANTIATE_TEST_SUITE_P(Boxes, ReorderingNeighborListTest, ::testing::ValuesIn(owned_only()), case_name);

// sort_by_id: order[r] is the index of the r-th smallest id, for ids that need one and several
// 11-bit radix passes.
TEST(SortById, OrdersByIdOverSeveralRadixPasses) {
  std::mt19937_64 rng(5);
  for (int top_bits : {10, 11, 22, 40, 62}) {
    std::vector<std::int64_t> ids;
    std::set<std::int64_t> used;
    while (ids.size() < 300) {
      const std::int64_t v = static_cast<std::int64_t>(rng() >> (64 - top_bits));
      if (used.insert(v).second) ids.push_back(v);
    }
    std::vector<int> order;
    sort_by_id(ids, order);
    ASSERT_EQ(order.size(), ids.size());
    std::vector<std::int64_t> sorted(ids);
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t r = 0; r < ids.size(); ++r)
      EXPECT_EQ(ids[static_cast<std::size_t>(order[r])], sorted[r]) << top_bits;
  }
}
