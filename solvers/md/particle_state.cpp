// A particle store's arrays as GridArrays of a 1D global box of atoms.
#include "solvers/md/particle_state.hpp"

#include <cstring>
#include <limits>

#include "core/error.hpp"

namespace cumulus::md {

StateDescription describe_particles(ParticleStore& store, const Comm& comm, std::int64_t n_total, const double box[3],
                                    std::function<void()> restored) {
  using Scalar = ParticleStore::Scalar;
  StateDescription s;
  s.geometry.ndim = 3;
  s.geometry.corners_per_cell = 1;
  for (int d = 0; d < 3; ++d) s.geometry.spacing[d] = box[d];  // particles: the periodic box's edges (H5MD)
  const int n = store.nown();
  const int pos = store.find("position");
  s.geometry.cell_corners = [&store, n, pos] {
    std::vector<double> out(3 * static_cast<std::size_t>(n));
    for (int d = 0; d < 3; ++d) {
      const double* x = store.host<double>(pos, d);
      for (int i = 0; i < n; ++i) out[3 * static_cast<std::size_t>(i) + d] = x[i];
    }
    return out;
  };
  const std::int64_t offset = comm.exclusive_sum(static_cast<std::int64_t>(n));
  const Box global(0, 0, 0, static_cast<int>(n_total), 1, 1);
  const Box local(static_cast<int>(offset), 0, 0, static_cast<int>(offset + n), 1, 1);
  for (int f = 0; f < static_cast<int>(store.fields().size()); ++f) {
    const ParticleStore::Field& fl = store.fields()[static_cast<std::size_t>(f)];
    if (!fl.checkpoint) continue;
    GridArray g;
    g.name = fl.name;
    g.units = fl.units;
    g.dtype = fl.type == Scalar::f64 ? DType::f64 : (fl.type == Scalar::i64 ? DType::i64 : DType::i32);
    g.ncomp = fl.ncomp;
    g.global_box = global;
    g.local_box = local;
    const std::size_t w = ParticleStore::scalar_bytes(fl.type);
    const int offset_in_file = fl.file_offset;
    const Scalar type = fl.type;
    // Component-major, (c, i): each component's n values in turn.
    g.read_local = [&store, f, n, w, offset_in_file, type, ncomp = fl.ncomp] {
      std::vector<unsigned char> out(w * static_cast<std::size_t>(n) * static_cast<std::size_t>(ncomp));
      for (int c = 0; c < ncomp && n > 0; ++c) {
        unsigned char* dst = out.data() + static_cast<std::size_t>(c) * w * static_cast<std::size_t>(n);
        if (type == Scalar::f64) std::memcpy(dst, store.host<double>(f, c), w * static_cast<std::size_t>(n));
        else if (type == Scalar::i64) {
          const std::int64_t* v = store.host<std::int64_t>(f, c);
          for (int i = 0; i < n; ++i) {
            const std::int64_t x = v[i] + offset_in_file;
            std::memcpy(dst + 8 * static_cast<std::size_t>(i), &x, 8);
          }
        } else {
          const int* v = store.host<int>(f, c);
          for (int i = 0; i < n; ++i) {
            const int x = v[i] + offset_in_file;
            std::memcpy(dst + 4 * static_cast<std::size_t>(i), &x, 4);
          }
        }
      }
      return out;
    };
    g.write_local = [&store, f, n, w, offset_in_file, type, ncomp = fl.ncomp, restored](const std::vector<unsigned char>& in) {
      if (store.nown() != n) store.resize_owned(n);
      for (int c = 0; c < ncomp && n > 0; ++c) {
        const unsigned char* src = in.data() + static_cast<std::size_t>(c) * w * static_cast<std::size_t>(n);
        if (type == Scalar::f64) {
          std::memcpy(store.host<double>(f, c), src, w * static_cast<std::size_t>(n));
        } else if (type == Scalar::i64) {
          std::int64_t* v = store.host<std::int64_t>(f, c);
          std::memcpy(v, src, 8 * static_cast<std::size_t>(n));
          for (int i = 0; i < n; ++i) v[i] -= offset_in_file;
        } else {
          int* v = store.host<int>(f, c);
          std::memcpy(v, src, 4 * static_cast<std::size_t>(n));
          for (int i = 0; i < n; ++i) v[i] -= offset_in_file;
        }
      }
      restored();
    };
    s.arrays.push_back(std::move(g));
  }
  return s;
}

}  // namespace cumulus::md
