// ParticleStore (mesh/particle_store.hpp): registered per-atom arrays of every scalar type and
// width, the host mirror and the backend copy, records for migration and ghosts, reordering on
// the host and on the backend, and the registration errors. Every value is a function of (atom,
// array, component), so a row that lands in the wrong place or a byte from the wrong array shows.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "../backends.hpp"
#include "core/error.hpp"
#include "core/memory.hpp"
#include "mesh/particle_store.hpp"

using namespace cumulus;
using cumulus::testing::backend_name;
using cumulus::testing::built_backends;
using Scalar = ParticleStore::Scalar;

namespace {

// Five arrays, ghost and non-ghost interleaved in registration order, so that a record offset that
// counts a non-ghost array in a ghost record (or the reverse) moves every later value.
struct Handles {
  int pos, flags, id, vel, type;
};
Handles register_arrays(ParticleStore& s) {
  Handles h;
  h.pos = s.add({"position", "sigma", Scalar::f64, 3, true, true, 0});
  h.flags = s.add({"flags", "", Scalar::i32, 2, false, true, 0});
  h.id = s.add({"id", "", Scalar::i64, 1, true, true, 0});
  h.vel = s.add({"velocity", "sigma/tau", Scalar::f64, 2, false, false, 0});
  h.type = s.add({"type", "", Scalar::i32, 1, true, true, 1});
  return h;
}

// The value atom `a` (a tag: the same atom keeps it wherever it moves) holds in each array.
double pos_of(int a, int c) { return 1000.0 * a + c + 0.25; }
std::int32_t flags_of(int a, int c) { return -(10 * a + c) - 1; }
// Above 2^32, so a 64-bit id cut to 32 bits would show.
std::int64_t id_of(int a) { return (std::int64_t{1} << 40) + 7 * a; }
double vel_of(int a, int c) { return -0.5 * a - 0.125 * c; }
std::int32_t type_of(int a) { return a % 3; }

void fill(ParticleStore& s, const Handles& h, int row, int a) {
  const std::size_t r = static_cast<std::size_t>(row);
  for (int c = 0; c < 3; ++c) s.host<double>(h.pos, c)[r] = pos_of(a, c);
  for (int c = 0; c < 2; ++c) s.host<std::int32_t>(h.flags, c)[r] = flags_of(a, c);
  s.host<std::int64_t>(h.id)[r] = id_of(a);
  for (int c = 0; c < 2; ++c) s.host<double>(h.vel, c)[r] = vel_of(a, c);
  s.host<std::int32_t>(h.type)[r] = type_of(a);
}

// Whether row `row` of the host mirror holds atom a in every array (ghost rows: ghost arrays only).
::testing::AssertionResult holds(const ParticleStore& s, const Handles& h, int row, int a, bool ghost_row = false) {
  const std::size_t r = static_cast<std::size_t>(row);
  for (int c = 0; c < 3; ++c)
    if (s.host<double>(h.pos, c)[r] != pos_of(a, c)) return ::testing::AssertionFailure() << "position " << c;
  if (s.host<std::int64_t>(h.id)[r] != id_of(a)) return ::testing::AssertionFailure() << "id";
  if (s.host<std::int32_t>(h.type)[r] != type_of(a)) return ::testing::AssertionFailure() << "type";
  if (!ghost_row) {
    for (int c = 0; c < 2; ++c)
      if (s.host<std::int32_t>(h.flags, c)[r] != flags_of(a, c)) return ::testing::AssertionFailure() << "flags " << c;
    for (int c = 0; c < 2; ++c)
      if (s.host<double>(h.vel, c)[r] != vel_of(a, c)) return ::testing::AssertionFailure() << "velocity " << c;
  }
  return ::testing::AssertionSuccess() << "row " << row << " holds atom " << a;
}

// A store of n owned atoms, atom k at row k.
void make_atoms(ParticleStore& s, const Handles& h, int n) {
  s.resize_owned(n);
  for (int k = 0; k < n; ++k) fill(s, h, k, k);
}

// One component of an array in backend memory, copied to the host.
template <class T>
std::vector<T> device_values(const Exec& ex, const ParticleStore& s, int f, int c, int n) {
  std::vector<T> out(static_cast<std::size_t>(n));
  memory::copy(ex, Backend::host, out.data(), ex.backend(), s.device<T>(f, c), sizeof(T) * out.size());
  return out;
}

}  // namespace

TEST(ParticleStore, RegistersArraysOfEveryTypeAndWidth) {
  Exec ex;
  ParticleStore s(ex);
  const Handles h = register_arrays(s);
  EXPECT_EQ(h.pos, 0);
  EXPECT_EQ(h.type, 4);
  EXPECT_EQ(s.find("id"), h.id);
  EXPECT_EQ(s.find("velocity"), h.vel);
  EXPECT_EQ(s.find("charge"), -1);
  ASSERT_EQ(s.fields().size(), 5u);
  EXPECT_EQ(s.fields()[static_cast<std::size_t>(h.flags)].ncomp, 2);
  EXPECT_EQ(s.fields()[static_cast<std::size_t>(h.type)].file_offset, 1);
  EXPECT_FALSE(s.fields()[static_cast<std::size_t>(h.vel)].checkpoint);
  EXPECT_EQ(ParticleStore::scalar_bytes(Scalar::f64), 8u);
  EXPECT_EQ(ParticleStore::scalar_bytes(Scalar::i32), 4u);
  EXPECT_EQ(ParticleStore::scalar_bytes(Scalar::i64), 8u);
  // A full record: 3 x 8 + 2 x 4 + 8 + 2 x 8 + 4; a ghost record: the ghost arrays only.
  EXPECT_EQ(s.record_bytes(false), 60u);
  EXPECT_EQ(s.record_bytes(true), 36u);
  EXPECT_EQ(s.nown(), 0);
  EXPECT_EQ(s.nlocal(), 0);
}

// resize_owned keeps the first atoms' values and zeroes new ones, in every array.
TEST(ParticleStore, ResizeOwnedKeepsTheFirstAtomsAndZeroesNewOnes) {
  Exec ex;
  ParticleStore s(ex);
  const Handles h = register_arrays(s);
  make_atoms(s, h, 5);
  EXPECT_EQ(s.nown(), 5);
  EXPECT_EQ(s.nghost(), 0);
  s.resize_owned(8);
  EXPECT_EQ(s.nown(), 8);
  for (int k = 0; k < 5; ++k) EXPECT_TRUE(holds(s, h, k, k));
  for (std::size_t k = 5; k < 8; ++k) {
    for (int c = 0; c < 3; ++c) EXPECT_EQ(s.host<double>(h.pos, c)[k], 0.0);
    for (int c = 0; c < 2; ++c) EXPECT_EQ(s.host<std::int32_t>(h.flags, c)[k], 0);
    EXPECT_EQ(s.host<std::int64_t>(h.id)[k], 0);
    EXPECT_EQ(s.host<std::int32_t>(h.type)[k], 0);
  }
  s.resize_owned(3);
  EXPECT_EQ(s.nown(), 3);
  for (int k = 0; k < 3; ++k) EXPECT_TRUE(holds(s, h, k, k));
}

// Access with the wrong element size or a component that does not exist is an Error.
TEST(ParticleStore, AccessChecksTheElementSizeAndComponent) {
  Exec ex;
  ParticleStore s(ex);
  const Handles h = register_arrays(s);
  make_atoms(s, h, 4);
  s.upload();
  EXPECT_THROW(s.host<float>(h.pos), Error);        // 4 bytes, the array holds 8
  EXPECT_THROW(s.host<std::int32_t>(h.id), Error);  // 4 bytes, the array holds 8
  EXPECT_THROW(s.host<double>(h.type), Error);      // 8 bytes, the array holds 4
  EXPECT_THROW(s.host<double>(h.pos, 3), Error);    // components 0 .. 2
  EXPECT_THROW(s.host<double>(h.pos, -1), Error);
  EXPECT_THROW(s.device<std::int64_t>(h.flags), Error);
  EXPECT_THROW(s.device<std::int32_t>(h.flags, 2), Error);
  EXPECT_NO_THROW(s.host<std::int64_t>(h.pos));  // the size is what is checked, not the type
  EXPECT_NO_THROW(s.device<std::int32_t>(h.flags, 1));
  const ParticleStore& cs = s;
  EXPECT_THROW(cs.host<std::int32_t>(h.vel, 0), Error);
  EXPECT_EQ(cs.host<double>(h.vel, 1)[2], vel_of(2, 1));
}

TEST(ParticleStore, RegistrationErrors) {
  Exec ex;
  ParticleStore s(ex);
  s.add({"position", "sigma", Scalar::f64, 3, true, true, 0});
  EXPECT_THROW(s.add({"position", "", Scalar::i32, 1, false, true, 0}), Error);  // the name is taken
  EXPECT_THROW(s.add({"empty", "", Scalar::f64, 0, false, true, 0}), Error);     // no component
  EXPECT_EQ(s.fields().size(), 1u);  // the failed registrations left nothing behind
  s.resize_owned(0);                 // no atoms yet: still open
  EXPECT_NO_THROW(s.add({"id", "", Scalar::i64, 1, true, true, 0}));
  s.resize_owned(2);
  EXPECT_THROW(s.add({"charge", "e", Scalar::f64, 1, true, true, 0}), Error);  // atoms exist
  EXPECT_EQ(s.fields().size(), 2u);
}

// Migration: the kept atoms in the order given, then the arrivals in record order; ghosts dropped.
TEST(ParticleStore, PackAndKeepAndAppendMoveWholeAtoms) {
  Exec ex;
  ParticleStore from(ex), to(ex);
  const Handles h = register_arrays(from);
  const Handles h2 = register_arrays(to);
  ASSERT_EQ(h.vel, h2.vel);
  // `from` holds atoms 100 .. 105; atoms 102 and 105 leave it for `to`.
  from.resize_owned(6);
  for (int k = 0; k < 6; ++k) fill(from, h, k, 100 + k);
  const std::size_t rec = from.record_bytes(false);
  std::vector<unsigned char> records(2 * rec);
  from.pack(5, false, records.data());
  from.pack(2, false, records.data() + rec);
  // `to` holds atoms 0 .. 4 and a ghost; it keeps 3, 0 and 4, in that order.
  make_atoms(to, h, 5);
  std::vector<unsigned char> ghost(to.record_bytes(true));
  from.pack(0, true, ghost.data());
  to.set_ghosts(ghost.data(), 1);
  ASSERT_EQ(to.nghost(), 1);
  to.keep_and_append({3, 0, 4}, records.data(), 2);
  EXPECT_EQ(to.nown(), 5);
  EXPECT_EQ(to.nghost(), 0);
  const int expect[] = {3, 0, 4, 105, 102};
  for (int k = 0; k < 5; ++k) EXPECT_TRUE(holds(to, h, k, expect[k]));
  // Nothing kept, nothing arriving: no atoms.
  to.keep_and_append({}, nullptr, 0);
  EXPECT_EQ(to.nlocal(), 0);
}

// Ghost records carry the ghost arrays only and land after the owned atoms; a second call replaces
// the first; the owned atoms are untouched.
TEST(ParticleStore, SetGhostsFillsTheGhostArraysOnly) {
  Exec ex;
  ParticleStore from(ex), to(ex);
  const Handles h = register_arrays(from);
  register_arrays(to);
  from.resize_owned(4);
  for (int k = 0; k < 4; ++k) fill(from, h, k, 50 + k);
  const std::size_t rec = from.record_bytes(true);
  std::vector<unsigned char> records(3 * rec);
  for (int k = 0; k < 3; ++k) from.pack(3 - k, true, records.data() + static_cast<std::size_t>(k) * rec);
  // A ghost record holds exactly the ghost arrays' values, in registration order.
  double x0;
  std::int64_t id;
  std::int32_t type;
  std::memcpy(&x0, records.data(), 8);
  std::memcpy(&id, records.data() + 24, 8);
  std::memcpy(&type, records.data() + 32, 4);
  EXPECT_EQ(x0, pos_of(53, 0));
  EXPECT_EQ(id, id_of(53));
  EXPECT_EQ(type, type_of(53));

  make_atoms(to, h, 2);
  to.set_ghosts(records.data(), 3);
  EXPECT_EQ(to.nown(), 2);
  EXPECT_EQ(to.nghost(), 3);
  EXPECT_EQ(to.nlocal(), 5);
  for (int k = 0; k < 2; ++k) EXPECT_TRUE(holds(to, h, k, k));
  for (int k = 0; k < 3; ++k) EXPECT_TRUE(holds(to, h, 2 + k, 53 - k, true));
  to.set_ghosts(records.data() + rec, 1);  // atom 52 alone
  EXPECT_EQ(to.nghost(), 1);
  EXPECT_TRUE(holds(to, h, 2, 52, true));
  for (int k = 0; k < 2; ++k) EXPECT_TRUE(holds(to, h, k, k));
  // A ghost packs as a ghost record again (what a second hop of the exchange would send).
  std::vector<unsigned char> again(rec);
  to.pack(2, true, again.data());
  EXPECT_EQ(std::memcmp(again.data(), records.data() + rec, rec), 0);
}

class ParticleStoreBackend : public ::testing::TestWithParam<Backend> {};

// Host -> backend -> host: every array's owned atoms and the ghost arrays' ghosts come back.
TEST_P(ParticleStoreBackend, UploadAndDownloadRoundTrip) {
  CUMULUS_EXEC_OR_SKIP(ex, GetParam());
  ParticleStore s(ex), src(ex);
  const Handles h = register_arrays(s);
  register_arrays(src);
  make_atoms(s, h, 37);
  src.resize_owned(2);
  fill(src, h, 0, 900);
  fill(src, h, 1, 901);
  std::vector<unsigned char> ghosts(2 * src.record_bytes(true));
  src.pack(0, true, ghosts.data());
  src.pack(1, true, ghosts.data() + src.record_bytes(true));
  s.set_ghosts(ghosts.data(), 2);
  s.upload();
  // The backend copy: owned atoms in every array, ghosts in the ghost arrays.
  const auto ids = device_values<std::int64_t>(ex, s, h.id, 0, 39);
  const auto ys = device_values<double>(ex, s, h.pos, 1, 39);
  const auto fl = device_values<std::int32_t>(ex, s, h.flags, 1, 37);
  for (int k = 0; k < 39; ++k) {
    const int a = k < 37 ? k : 900 + (k - 37);
    EXPECT_EQ(ids[static_cast<std::size_t>(k)], id_of(a)) << k;
    EXPECT_EQ(ys[static_cast<std::size_t>(k)], pos_of(a, 1)) << k;
    if (k < 37) {
      EXPECT_EQ(fl[static_cast<std::size_t>(k)], flags_of(a, 1)) << k;
    }
  }
  // Overwrite the host mirror, then download: the owned atoms come back in every array.
  for (int k = 0; k < 37; ++k) fill(s, h, k, 5000 + k);
  s.download_owned();
  for (int k = 0; k < 37; ++k) EXPECT_TRUE(holds(s, h, k, k));
  // The backend copy is kept between uploads and grows when the atoms do.
  make_atoms(s, h, 300);
  s.upload();
  for (int k = 0; k < 300; ++k) fill(s, h, k, 0);
  s.download_owned();
  for (int k = 0; k < 300; k += 7) EXPECT_TRUE(holds(s, h, k, k));
}

// The same permutation on the host mirror and on the backend gives the same arrays: new atom k is
// old atom order[k], in every array (32- and 64-bit gathers); the host keeps the ghost rows.
TEST_P(ParticleStoreBackend, PermuteOnTheHostAndOnTheBackendAgree) {
  CUMULUS_EXEC_OR_SKIP(ex, GetParam());
  const int n = 53;
  std::vector<int> order(static_cast<std::size_t>(n));
  for (int k = 0; k < n; ++k) order[static_cast<std::size_t>(k)] = (17 * k + 5) % n;  // 17 is prime to 53
  ParticleStore on_host(ex), on_device(ex), src(ex);
  const Handles h = register_arrays(on_host);
  register_arrays(on_device);
  register_arrays(src);
  make_atoms(on_host, h, n);
  make_atoms(on_device, h, n);
  src.resize_owned(1);
  fill(src, h, 0, 777);
  std::vector<unsigned char> ghost(src.record_bytes(true));
  src.pack(0, true, ghost.data());
  on_host.set_ghosts(ghost.data(), 1);

  on_host.permute_owned_host(order);
  for (int k = 0; k < n; ++k) EXPECT_TRUE(holds(on_host, h, k, order[static_cast<std::size_t>(k)]));
  EXPECT_TRUE(holds(on_host, h, n, 777, true));  // the ghost stayed where it was

  on_device.upload();
  Buffer<int> dorder(ex.backend(), order.size());
  dorder.from_host(ex, order);
  on_device.permute_owned_device(dorder.data());
  for (int k = 0; k < n; ++k) fill(on_device, h, k, 0);  // the host mirror is stale until downloaded
  on_device.download_owned();
  for (int k = 0; k < n; ++k) EXPECT_TRUE(holds(on_device, h, k, order[static_cast<std::size_t>(k)]));

  // The identity leaves everything as it is.
  std::vector<int> identity(static_cast<std::size_t>(n));
  for (int k = 0; k < n; ++k) identity[static_cast<std::size_t>(k)] = k;
  on_host.permute_owned_host(identity);
  for (int k = 0; k < n; ++k) EXPECT_TRUE(holds(on_host, h, k, order[static_cast<std::size_t>(k)]));
}

INSTANTIATE_TEST_SUITE_P(Backends, ParticleStoreBackend, ::testing::ValuesIn(built_backends()), backend_name);
