// The lattice Boltzmann kernels of D2Q9 and those that know no lattice (fills, vorticity, probes).
// A kernel source: compiled once per backend (g++ for the host, nvcc for CUDA), each pass in its
// own namespace (core/kernel_pass.hpp). The kernel bodies are in lbm_kernels_impl.hpp; the 3D
// lattices are instantiated in lbm_kernels_d3q19.cpp and lbm_kernels_d3q27_*.cpp, each its own
// nvcc compile (a single one took 254 s for all three lattices).
#include "solvers/lbm/lbm_kernels_impl.hpp"

namespace cumulus::lbm {

namespace kernels::CUMULUS_PASS {

template <class S>
void fill_zero(const Exec& ex, const View<S>& fv, const Box& box, int ncomp) {
  for_each(ex, "lbm.fill", box, [=] CUMULUS_HD(int i, int j, int k) {
    for (int c = 0; c < ncomp; ++c) fv(i, j, k, c) = S(0);
  });
}

void vorticity(const Exec& ex, const View<double>& m, const View<double>& out, const Box& box, bool three_d) {
  if (!three_d) {
    for_each(ex, "lbm.vorticity", box, [=] CUMULUS_HD(int i, int j, int k) {
      out(i, j, k) = 0.5 * ((m(i + 1, j, k, 2) - m(i - 1, j, k, 2)) - (m(i, j + 1, k, 1) - m(i, j - 1, k, 1)));
    });
    return;
  }
  for_each(ex, "lbm.vorticity", box, [=] CUMULUS_HD(int i, int j, int k) {
    const double wx = 0.5 * ((m(i, j + 1, k, 3) - m(i, j - 1, k, 3)) - (m(i, j, k + 1, 2) - m(i, j, k - 1, 2)));
    const double wy = 0.5 * ((m(i, j, k + 1, 1) - m(i, j, k - 1, 1)) - (m(i + 1, j, k, 3) - m(i - 1, j, k, 3)));
    const double wz = 0.5 * ((m(i + 1, j, k, 2) - m(i - 1, j, k, 2)) - (m(i, j + 1, k, 1) - m(i, j - 1, k, 1)));
    out(i, j, k) = sqrt_r(wx * wx + wy * wy + wz * wz);
  });
}

double probe_sum(const Exec& ex, const View<double>& m, const View<std::uint8_t>& flags, const Box& box,
                 const double pos[3], int ndim, bool weights) {
  const double px = pos[0], py = pos[1], pz = pos[2];
  return reduce(ex, "lbm.probes", box, 0.0, SumOp{}, [=] CUMULUS_HD(int i, int j, int k) {
    if (cell_type(flags(i, j, k)) != kFluid) return 0.0;
    const double dx = px - i, dy = py - j, dz = pz - k;
    double w = (1 - (dx < 0 ? -dx : dx)) * (1 - (dy < 0 ? -dy : dy));
    if (ndim == 3) w *= 1 - (dz < 0 ? -dz : dz);
    return weights ? w : w * (m(i, j, k, 0) - 1.0);
  });
}

CUMULUS_LBM_INSTANTIATE_ALL(D2Q9)
template void fill_zero<double>(const Exec&, const View<double>&, const Box&, int);
template void fill_zero<float>(const Exec&, const View<float>&, const Box&, int);
template void fill_zero<std::uint16_t>(const Exec&, const View<std::uint16_t>&, const Box&, int);
}  // namespace kernels::CUMULUS_PASS

}  // namespace cumulus::lbm
