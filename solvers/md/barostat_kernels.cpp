// Kernel bodies of the barostat's rescaling (one source per backend pass: core/kernel_pass.hpp):
// first every owned atom's shift (mu - 1) times the point it scales about, then the shifts applied,
// so that no atom's new position is read by a partner still computing its own.
#include "solvers/md/barostat_kernels.hpp"

namespace cumulus::md {
namespace barostat_kernels::CUMULUS_PASS {

// The point an atom scales about: a rigid molecule's or SHAKE cluster's centre of mass, else the
// atom itself (so the constrained lengths stay as they are). The centre is taken in the atom's own
// periodic image (its partners by the minimum image from it): where a molecule straddles the
// boundary, its atoms' wrapped coordinates lie in different images, and a centre shared in one
// image would move the others by (mu - 1) L, breaking the molecule.
void rescale_shifts(const Exec& ex, const Atoms& a, const TopologyView& t, double mu, double* sx, double* sy, double* sz) {
  for_each(ex, "md.barostat", Box(0, 0, 0, a.n, 1, 1), [=] CUMULUS_HD(int i, int, int) {
    double c[3] = {a.x[i], a.y[i], a.z[i]};
    const double* x[3] = {a.x, a.y, a.z};
    const int la = t.settle_atom ? t.settle_atom[i] : -1;
    if (la >= 0) {
      const int lb = t.settle_atom[t.nown + i], lc = t.settle_atom[2 * t.nown + i];
      const double mo = a.mass[a.type[la]], mh = a.mass[a.type[lb]], M = mo + 2 * mh;
      for (int d = 0; d < 3; ++d) {
        const double da = minimum_image(x[d][la] - x[d][i], a.box[d]), db = minimum_image(x[d][lb] - x[d][i], a.box[d]),
                     dc = minimum_image(x[d][lc] - x[d][i], a.box[d]);
        c[d] = x[d][i] + (mo * da + mh * (db + dc)) / M;
      }
    } else if (t.shake_atom && t.shake_atom[i] >= 0) {
      double m = 0, s[3] = {0, 0, 0};
      for (int k = 0; k < 4; ++k) {
        const int j = t.shake_atom[k * t.nown + i];
        if (j < 0) continue;
        const double mj = a.mass[a.type[j]];
        m += mj;
        for (int d = 0; d < 3; ++d) s[d] += mj * minimum_image(x[d][j] - x[d][i], a.box[d]);
      }
      for (int d = 0; d < 3; ++d) c[d] = x[d][i] + s[d] / m;
    }
    sx[i] = (mu - 1) * c[0];
    sy[i] = (mu - 1) * c[1];
    sz[i] = (mu - 1) * c[2];
  });
}

// x += shift, back into the new box (counting crossings); v /= mu.
void rescale_apply(const Exec& ex, const Atoms& a, const double* sx, const double* sy, const double* sz, double inv_mu,
                   const double* new_box) {
  const double L0 = new_box[0], L1 = new_box[1], L2 = new_box[2];
  for_each(ex, "md.barostat", Box(0, 0, 0, a.n, 1, 1), [=] CUMULUS_HD(int i, int, int) {
    a.x[i] = wrap(a.x[i] + sx[i], L0, a.ix[i]);
    a.y[i] = wrap(a.y[i] + sy[i], L1, a.iy[i]);
    a.z[i] = wrap(a.z[i] + sz[i], L2, a.iz[i]);
    a.vx[i] *= inv_mu;
    a.vy[i] *= inv_mu;
    a.vz[i] *= inv_mu;
  });
}

}  // namespace barostat_kernels::CUMULUS_PASS
}  // namespace cumulus::md
