// Lattice set-up: positions and types of the md solver's lattice atoms.
#include "solvers/md/lattice.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "solvers/md/random.hpp"

namespace cumulus::md {

std::vector<std::array<double, 3>> basis(const std::string& lattice) {
  if (lattice == "fcc") return {{0, 0, 0}, {0.5, 0.5, 0}, {0.5, 0, 0.5}, {0, 0.5, 0.5}};
  if (lattice == "bcc") return {{0, 0, 0}, {0.5, 0.5, 0.5}};
  return {{0, 0, 0}};
}

double lattice_constant(const Setup& s) { return std::cbrt(static_cast<double>(basis(s.lattice).size()) / s.density); }

std::int64_t lattice_atom_count(const Setup& s) {
  return static_cast<std::int64_t>(basis(s.lattice).size()) * s.cells[0] * s.cells[1] * s.cells[2];
}

void lattice_atoms(const Setup& s, const std::function<void(std::int64_t id, int type, const double p[3])>& add) {
  const double a = lattice_constant(s);
  const auto b = basis(s.lattice);
  const std::vector<int> types = lattice_types(s, lattice_atom_count(s));
  std::int64_t id = 0;
  for (int k = 0; k < s.cells[2]; ++k)
    for (int j = 0; j < s.cells[1]; ++j)
      for (int i = 0; i < s.cells[0]; ++i)
        for (const auto& q : b) {
          const double p[3] = {(i + q[0]) * a, (j + q[1]) * a, (k + q[2]) * a};
          const int t = types.empty() ? 0 : types[static_cast<std::size_t>(id)];
          add(id++, t, p);
        }
}

std::vector<int> lattice_types(const Setup& s, std::int64_t n) {
  if (s.ntypes == 1) return {};
  std::vector<std::pair<double, std::int64_t>> key(static_cast<std::size_t>(n));
  for (std::int64_t id = 0; id < n; ++id)
    key[static_cast<std::size_t>(id)] = {uniform(static_cast<std::uint64_t>(s.seed) ^ 0x7495A3C1ull, static_cast<std::uint64_t>(id), 0), id};
  std::sort(key.begin(), key.end());
  std::vector<int> type(static_cast<std::size_t>(n), s.ntypes - 1);
  std::int64_t k = 0;
  for (int t = 0; t + 1 < s.ntypes; ++t) {
    const std::int64_t count = std::min<std::int64_t>(n - k, std::llround(s.fractions[static_cast<std::size_t>(t)] * static_cast<double>(n)));
    for (std::int64_t c = 0; c < count; ++c, ++k) type[static_cast<std::size_t>(key[static_cast<std::size_t>(k)].second)] = t;
  }
  return type;
}

}  // namespace cumulus::md
