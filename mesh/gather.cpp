#include "mesh/gather.hpp"

#include <cstdint>

namespace cumulus {

template <class T>
std::vector<T> gather_field(const Field<T>& f, const CartesianDecomposition& decomp, const Comm& comm,
                            const Exec& exec, int root) {
  const std::vector<T> mine = f.interior_to_host(exec);
  const int p = comm.size();
  std::vector<int> counts(static_cast<std::size_t>(p)), displs(static_cast<std::size_t>(p));
  std::int64_t total = 0;
  for (int r = 0; r < p; ++r) {
    counts[r] = static_cast<int>(decomp.box_of(r).volume() * f.ncomp() * static_cast<std::int64_t>(sizeof(T)));
    displs[r] = static_cast<int>(total);
    total += counts[r];
  }
  std::vector<unsigned char> all(comm.rank() == root ? static_cast<std::size_t>(total) : 0);
  mpi_check(MPI_Gatherv(mine.data(), static_cast<int>(mine.size() * sizeof(T)), MPI_BYTE, all.data(), counts.data(),
                        displs.data(), MPI_BYTE, root, comm.raw()),
            "MPI_Gatherv");
  if (comm.rank() != root) return {};
  const Box g = decomp.global_box();
  const std::int64_t gvol = g.volume();
  std::vector<T> out(static_cast<std::size_t>(gvol * f.ncomp()));
  for (int r = 0; r < p; ++r) {
    const Box b = decomp.box_of(r);
    const T* src = reinterpret_cast<const T*>(all.data() + displs[r]);
    std::size_t n = 0;
    for (int c = 0; c < f.ncomp(); ++c)
      for (int k = b.lo[2]; k < b.hi[2]; ++k)
        for (int j = b.lo[1]; j < b.hi[1]; ++j)
          for (int i = b.lo[0]; i < b.hi[0]; ++i)
            out[static_cast<std::size_t>(c * gvol + (static_cast<std::int64_t>(k) * g.size(1) + j) * g.size(0) + i)] =
                src[n++];
  }
  return out;
}

template std::vector<double> gather_field(const Field<double>&, const CartesianDecomposition&, const Comm&,
                                          const Exec&, int);
template std::vector<float> gather_field(const Field<float>&, const CartesianDecomposition&, const Comm&,
                                         const Exec&, int);

}  // namespace cumulus
