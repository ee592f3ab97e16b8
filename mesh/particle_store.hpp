#pragma once
// Per-particle arrays of one rank: the atoms it owns, then ghost copies of other ranks' atoms, in
// the backend's memory with a host mirror. A solver registers named arrays (position, velocity,
// id, charge, molecule id, ...); registering one is enough for it to travel with an atom that
// changes rank, to follow every reordering, to be described for checkpoints and output and, when
// asked, to be copied to ghosts. The store knows nothing of forces or of MPI: the exchange
// (mesh/particle_exchange.hpp) moves the records it packs.
//
// Layout: structure of arrays, one contiguous array per component, owned atoms at [0, nown) and
// ghosts at [nown, nown + nghost). Only arrays registered with `ghost` hold ghost entries; the
// others are sized for the owned atoms. Which copy is current is the solver's business: the host
// mirror at set-up, restart, migration and host-built lists; the backend's during the time loop.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/exec.hpp"
#include "core/memory.hpp"

namespace cumulus {

class ParticleStore {
 public:
  enum class Scalar { f64, i32, i64 };
  struct Field {
    std::string name, units;
    Scalar type = Scalar::f64;
    int ncomp = 1;
    bool ghost = false;       // ghosts carry it (copied from the owner at every ghost exchange)
    bool checkpoint = true;   // part of the solver's persistent state (checkpoints and output)
    int file_offset = 0;      // integers: added when written to a file, subtracted when read (1-based types)
  };

  explicit ParticleStore(const Exec& ex) : ex_(&ex) {}
  explicit ParticleStore(const Exec&& ex) = delete;  // keeps a pointer to ex: not to a temporary
  ParticleStore(const ParticleStore&) = delete;
  ParticleStore& operator=(const ParticleStore&) = delete;

  // Registers an array (before atoms are added); returns its handle.
  int add(Field f);
  int find(const std::string& name) const;  // -1 when there is none
  const std::vector<Field>& fields() const { return fields_; }
  static std::size_t scalar_bytes(Scalar t) { return t == Scalar::i32 ? 4 : 8; }

  int nown() const { return nown_; }
  int nghost() const { return nghost_; }
  int nlocal() const { return nown_ + nghost_; }

  // The host mirror and the backend copy of component c of array f (checked against T's size).
  template <class T>
  T* host(int f, int c = 0) {
    return reinterpret_cast<T*>(host_bytes(f, c, sizeof(T)));
  }
  template <class T>
  const T* host(int f, int c = 0) const {
    return reinterpret_cast<const T*>(const_cast<ParticleStore*>(this)->host_bytes(f, c, sizeof(T)));
  }
  template <class T>
  T* device(int f, int c = 0) const {
    return reinterpret_cast<T*>(device_bytes(f, c, sizeof(T)));
  }

  // Host mirror: `nown` owned atoms, no ghosts (values of the first atoms kept, new ones zero).
  void resize_owned(int nown);
  // Host mirror: the owned atoms in a new order (new atom k is old atom order[k]).
  void permute_owned_host(const std::vector<int>& order);
  // Backend: the same, from a permutation in backend memory (kernels gather every array).
  void permute_owned_device(const int* order);
  // Host mirror -> backend: every array's owned atoms, and the ghosts of ghost arrays. The backend
  // arrays keep their capacity between calls and grow with a margin (fresh allocations at every
  // list build cost page faults).
  void upload();
  // Backend -> host mirror: every array's owned atoms (the ghosts' host entries are left as they
  // were: they are refreshed at the next ghost exchange).
  void download_owned();

  // Records: one atom's values of every array (`ghost`: of the ghost arrays only), packed as bytes
  // in registration order, so 64-bit ids travel exactly.
  std::size_t record_bytes(bool ghost) const;
  void pack(int i, bool ghost, unsigned char* out) const;
  // Migration, on the host mirror: the owned atoms become keep[0..] (in that order) followed by
  // `n` arriving full records; the ghosts are dropped.
  void keep_and_append(const std::vector<int>& keep, const unsigned char* records, std::size_t n);
  // Ghosts, on the host mirror: `n` ghost records after the owned atoms (replacing any before).
  void set_ghosts(const unsigned char* records, std::size_t n);

 private:
  struct Column {
    std::vector<unsigned char> host;
    Buffer<unsigned char> dev;
  };
  unsigned char* host_bytes(int f, int c, std::size_t size);
  unsigned char* device_bytes(int f, int c, std::size_t size) const;
  Column& column(int f, int c) { return columns_[static_cast<std::size_t>(first_[static_cast<std::size_t>(f)] + c)]; }
  std::size_t rows(int f) const;  // host rows of array f: nown, plus nghost for ghost arrays

  const Exec* ex_;
  std::vector<Field> fields_;
  std::vector<int> first_;  // fields_[f]'s first column
  std::vector<Column> columns_;
  int nown_ = 0, nghost_ = 0;
  Buffer<unsigned char> scratch_;  // permute_owned_device's gather target
};

}  // namespace cumulus
