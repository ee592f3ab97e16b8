// The LAMMPS data file reader: atom_style atomic, orthogonal boxes; every error names the line.
#include "solvers/md/data_file.hpp"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "core/input_limits.hpp"
#include "core/strings.hpp"

namespace cumulus::md {

DataFile read_data_file(const std::string& path, bool header_only) {
  std::ifstream in(path);
  if (!in) throw InputError("cannot open LAMMPS data file '" + path + "'");
  DataFile d;
  std::error_code size_error;
  const std::uintmax_t file_bytes = std::filesystem::file_size(path, size_error);
  // Only a regular file has a size to bound the counts by (and /dev/zero would be one endless line).
  if (size_error) throw InputError("LAMMPS data file '" + path + "' is not a regular file");
  std::string line;
  long n = 0;
  auto fail = [&](const std::string& what) {
    throw InputError(strprintf("%s:%ld: %s", path.c_str(), n, what.c_str()));
  };
  auto strip = [](std::string t) {
    const auto hash = t.find('#');
    if (hash != std::string::npos) t.erase(hash);
    const auto a = t.find_first_not_of(" \t\r"), b = t.find_last_not_of(" \t\r");
    return a == std::string::npos ? std::string() : t.substr(a, b - a + 1);
  };
  std::getline(in, line);  // the title line
  ++n;
  bool box[3] = {false, false, false};
  std::string section;
  // Header: "N atoms", "N atom types", "lo hi xlo xhi", ...; it ends at the first section keyword.
  while (std::getline(in, line)) {
    ++n;
    const std::string t = strip(line);
    if (t.empty()) continue;
    std::istringstream ss(t);
    std::vector<std::string> w;
    for (std::string x; ss >> x;) w.push_back(x);
    auto number = [&](const std::string& x) {
      char* end = nullptr;
      const double v = std::strtod(x.c_str(), &end);
      if (end == x.c_str() || *end != '\0' || !std::isfinite(v)) fail("expected a number, got '" + x + "'");
      return v;
    };
    // Counts are checked before anything is allocated from them (core/input_limits.hpp): the
    // shortest Atoms line is "1 1 0 0 0\n" (10 bytes), the shortest Masses line "1 1\n" (4 bytes).
    auto count = [&](const std::string& what, const limits::CountLimit& lim) {
      const double v = number(w[0]);
      const std::string problem = limits::count_problem(v, what, lim);
      if (!problem.empty()) fail(problem);
      return static_cast<std::int64_t>(v);
    };
    if (w.size() == 2 && w[1] == "atoms") {
      // In memory: id, type, position, velocity, image flags and the id index (~180 bytes).
      d.natoms = count("atoms", {limits::kMaxAtoms, file_bytes, 10, 180});
    } else if (w.size() == 3 && w[1] == "atom" && w[2] == "types") {
      d.ntypes = static_cast<int>(count("atom types", {limits::kMaxAtomTypes, file_bytes, 4, 8}));
    } else if (w.size() == 4 && (w[2] == "xlo" || w[2] == "ylo" || w[2] == "zlo")) {
      const int a = w[2][0] - 'x';
      d.lo[a] = number(w[0]);
      d.hi[a] = number(w[1]);
      if (!(d.hi[a] > d.lo[a])) fail("the box's " + w[2] + " " + w[3] + " bounds are empty or reversed");
      box[a] = true;
    } else if (w.size() >= 4 && w[3] == "xy") {
      fail("triclinic boxes (xy xz yz) are not supported: cumulus takes orthogonal boxes");
    } else if (w.size() == 1 && (w[0] == "Masses" || w[0] == "Atoms" || w[0] == "Velocities")) {
      section = w[0];
      break;
    } else if (w.size() >= 2 && (w[1] == "bonds" || w[1] == "angles" || w[1] == "dihedrals" || w[1] == "impropers")) {
      if (number(w[0]) != 0) fail("bonded terms ('" + t + "') are not supported: atom_style atomic only");
    } else if (w.size() >= 3 && w[2] == "types") {
      // bond/angle types: allowed only as zero counts
    } else {
      fail("unrecognised header line '" + t + "' (expected 'N atoms', 'N atom types' or 'lo hi xlo xhi')");
    }
  }
  if (d.natoms <= 0) fail("the header gives no 'N atoms' (or zero atoms)");
  if (d.ntypes <= 0) fail("the header gives no 'N atom types'");
  for (int a = 0; a < 3; ++a)
    if (!box[a]) fail(std::string("the header gives no '") + "xyz"[a] + "lo " + "xyz"[a] + "hi' line");
  if (header_only) return d;
  d.mass.assign(static_cast<std::size_t>(d.ntypes), 0.0);
  std::set<std::int64_t> ids;
  std::map<std::int64_t, std::size_t> index;
  while (!section.empty()) {
    std::string next;
    std::int64_t rows = 0;
    const std::int64_t want = section == "Masses" ? d.ntypes : d.natoms;
    while (std::getline(in, line)) {
      ++n;
      const std::string t = strip(line);
      if (t.empty()) continue;
      if (t == "Masses" || t == "Atoms" || t == "Velocities") {
        next = t;
        break;
      }
      if (t.find_first_of("abcdfghijklmnopqrstuvwyzABCDFGHIJKLMNOPQRSTUVWXYZ") != std::string::npos && rows == want) {
        fail("unknown section '" + t + "' (atom_style atomic files have Masses, Atoms and Velocities)");
      }
      std::istringstream ss(t);
      std::vector<std::string> w;
      for (std::string x; ss >> x;) w.push_back(x);
      auto num = [&](std::size_t k) {
        char* end = nullptr;
        const double v = std::strtod(w[k].c_str(), &end);
        if (end == w[k].c_str() || *end != '\0' || !std::isfinite(v)) fail("expected a number, got '" + w[k] + "'");
        return v;
      };
      auto integer = [&](std::size_t k) {
        const double v = num(k);
        if (v != std::floor(v)) fail("expected an integer, got '" + w[k] + "'");
        // Beyond 2^53 a double no longer holds every integer (and beyond 2^63 the conversion is undefined).
        if (std::fabs(v) > 9007199254740992.0) fail("the integer '" + w[k] + "' is out of range (at most 2^53 in magnitude)");
        return static_cast<std::int64_t>(v);
      };
      if (rows >= want) fail(strprintf("more %s lines than the header's %lld", section.c_str(), static_cast<long long>(want)));
      if (section == "Masses") {
        if (w.size() != 2) fail("a Masses line is 'type mass'");
        const std::int64_t ty = integer(0);
        if (ty < 1 || ty > d.ntypes) fail(strprintf("atom type %lld is not among the header's %d types", static_cast<long long>(ty), d.ntypes));
        if (!(num(1) > 0)) fail("a mass must be positive");
        d.mass[static_cast<std::size_t>(ty - 1)] = num(1);
      } else if (section == "Atoms") {
        if (w.size() != 5 && w.size() != 8) fail("an Atoms line (atom_style atomic) is 'id type x y z' or 'id type x y z ix iy iz'");
        const std::int64_t id = integer(0), ty = integer(1);
        if (id < 1) fail("atom ids start at 1");
        if (!ids.insert(id).second) fail(strprintf("atom id %lld appears twice", static_cast<long long>(id)));
        if (ty < 1 || ty > d.ntypes)
          fail(strprintf("atom %lld has type %lld, not among the header's %d types", static_cast<long long>(id),
                         static_cast<long long>(ty), d.ntypes));
        index[id] = d.id.size();
        d.id.push_back(id);
        d.type.push_back(static_cast<int>(ty));
        for (int a = 0; a < 3; ++a) {
          d.x[a].push_back(num(2 + a));
          const std::int64_t im = w.size() == 8 ? integer(5 + a) : 0;
          if (im < -2147483647 || im > 2147483647) fail("an image flag must fit in 32 bits, got '" + w[5 + a] + "'");
          d.image[a].push_back(static_cast<int>(im));
          d.v[a].push_back(0.0);
        }
      } else {
        if (d.id.empty()) fail("Velocities before Atoms");
        if (w.size() != 4) fail("a Velocities line is 'id vx vy vz'");
        const auto it = index.find(integer(0));
        if (it == index.end()) fail(strprintf("velocity for atom %lld, which is not in Atoms", static_cast<long long>(integer(0))));
        for (int a = 0; a < 3; ++a) d.v[a][it->second] = num(1 + a);
        d.has_velocities = true;
      }
      ++rows;
    }
    if (rows != want)
      fail(strprintf("%s has %lld lines, the header says %lld", section.c_str(), static_cast<long long>(rows),
                     static_cast<long long>(want)));
    section = next;
  }
  if (static_cast<std::int64_t>(d.id.size()) != d.natoms) fail("no Atoms section");
  for (int t = 0; t < d.ntypes; ++t)
    if (d.mass[static_cast<std::size_t>(t)] <= 0) fail(strprintf("no mass for atom type %d (Masses section)", t + 1));
  return d;
}

}  // namespace cumulus::md
