#pragma once
// What a Model persists and shows, described once: named arrays with their global layout.
// Checkpoints, restarts and ParaView output are written against this description for every
// solver. A grid array is a hyperslab per rank of a global (component, k, j, i) array. Cube-sphere
// tiles use the same description with the panel index as the k axis; particle sets are 1D arrays of
// all the atoms in which each rank holds a contiguous run (its owned count, its offset a prefix sum
// of the counts: solvers/md/particle_state.cpp).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/box.hpp"
#include "core/exec.hpp"

namespace cumulus {

enum class DType { f64, f32, i32, u16, u8, i64 };
std::size_t dtype_size(DType t);
const char* dtype_name(DType t);  // "f64", ...

struct GridArray {
  std::string name;   // dataset and ParaView array name
  std::string units;  // written beside the data
  DType dtype = DType::f64;
  int ncomp = 1;
  Box global_box;  // global cells
  Box local_box;   // this rank's part (a sub-box of global_box)
  // This rank's values, (c, k, j, i) order, i fastest, as raw bytes of dtype.
  std::function<std::vector<unsigned char>()> read_local;
  // Replaces this rank's values (same order) on restart; empty for output-only arrays.
  std::function<void(const std::vector<unsigned char>&)> write_local;
  // When the data live in host memory: the ghost-padded allocation they sit in, so that writers
  // can read the interior in place instead of through read_local's packed copy.
  const unsigned char* host_base = nullptr;
  Box host_alloc;
  bool in_checkpoint = true;  // persistent state
  bool in_output = true;      // shown in ParaView
};

// The DType of an element type (a compile error for types checkpoints cannot hold).
template <class T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, double>) return DType::f64;
  else if constexpr (std::is_same_v<T, float>) return DType::f32;
  else if constexpr (std::is_same_v<T, std::int32_t>) return DType::i32;
  else if constexpr (std::is_same_v<T, std::uint16_t>) return DType::u16;
  else {
    static_assert(std::is_same_v<T, std::uint8_t>, "no DType for this element type");
    return DType::u8;
  }
}

// A whole grid field, every component, as a GridArray (checkpointed and shown by default): read
// and restored through the field's packed interior copies, and, when the field lives in host
// memory, read in place by the writers (host_base). Every grid solver describes its state fields
// so. `field` and `ex` are held by reference: both must outlive the description (members of the
// Model whose state() made it). A template over mesh/'s Field<T>, so that io/ needs nothing of mesh/.
template <class FieldT>
GridArray grid_array(FieldT& field, const Exec& ex, const Box& global, std::string name, std::string units) {
  GridArray a;
  a.name = std::move(name);
  a.units = std::move(units);
  a.dtype = dtype_of<typename FieldT::value_type>();
  a.ncomp = field.ncomp();
  a.global_box = global;
  a.local_box = field.interior();
  a.read_local = [&field, &ex] { return field.interior_bytes(ex); };
  a.write_local = [&field, &ex](const std::vector<unsigned char>& b) { field.set_interior_bytes(ex, b); };
  // The address of the data now: a Field swapped later (a time step's two buffers) moves its data,
  // so a description is made anew for each write, never kept.
  if (field.space() == Backend::host) {
    a.host_base = reinterpret_cast<const unsigned char*>(field.buffer().data());
    a.host_alloc = field.allocated();
  }
  return a;
}

// The geometry ParaView needs to place a grid: 2 or 3 dimensions, origin and cell size. A grid of
// curved quadrilaterals (the cubed sphere) gives its cells' corners instead: corners_per_cell x
// (x, y, z) per local cell, in the arrays' (k, j, i) order; output is then an unstructured grid of
// quads (4 corners) or of vertices (1 corner: particles, one "cell" per atom).
struct GridGeometry {
  int ndim = 3;
  double origin[3] = {0, 0, 0};
  double spacing[3] = {1, 1, 1};
  std::function<std::vector<double>()> cell_corners;
  int corners_per_cell = 4;
};

struct StateDescription {
  GridGeometry geometry;
  std::vector<GridArray> arrays;
  std::vector<std::int64_t> decomposition;  // ranks along x, y, z (recorded in checkpoints)
  // Particle states: the bonds between particles as pairs of particle ids (flattened; rank 0 holds
  // them, the other ranks none), for trajectories that draw molecules (H5MD's /connectivity).
  std::vector<std::int64_t> connectivity;

  // The part checkpoints hold and restarts restore: the arrays marked in_checkpoint (derived output
  // fields such as a velocity computed from populations are left out).
  StateDescription persistent() const {
    StateDescription p = *this;
    p.arrays.clear();
    for (const GridArray& a : arrays)
      if (a.in_checkpoint) p.arrays.push_back(a);
    return p;
  }
};

}  // namespace cumulus
