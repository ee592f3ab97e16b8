// The LAMMPS data file reader: atom_style atomic, charge and full, orthogonal boxes, the topology
// sections; every error names the file and line. One function per section, sharing the line
// reader's state (a Reader).
#include "solvers/md/data_file.hpp"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/error.hpp"
#include "core/input_limits.hpp"
#include "core/strings.hpp"

namespace cumulus::md {

namespace {

// Section keywords: the topology sections with their atoms per entry, the coefficient sections.
const std::map<std::string, int> kTopologySections = {{"Bonds", 2}, {"Angles", 3}, {"Dihedrals", 4}, {"Impropers", 4}};
bool is_section(const std::string& t) {
  return t == "Masses" || t == "Atoms" || t == "Velocities" || kTopologySections.count(t) || t == "Pair Coeffs" ||
         t == "Bond Coeffs" || t == "Angle Coeffs" || t == "Dihedral Coeffs" || t == "Improper Coeffs";
}

class Reader {
 public:
  explicit Reader(const std::string& path) : path_(path), in_(path) {
    if (!in_) throw InputError("cannot open LAMMPS data file '" + path + "'");
    std::error_code e;
    file_bytes_ = std::filesystem::file_size(path, e);
    // Only a regular file has a size to bound the counts by (and /dev/zero would be one endless line).
    if (e) throw InputError("LAMMPS data file '" + path + "' is not a regular file");
  }
  std::uintmax_t file_bytes() const { return file_bytes_; }

  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(strprintf("%s:%ld: %s", path_.c_str(), line_no_, what.c_str()));
  }

  // The next non-blank line without its comment, split into words; false at the end of the file.
  // `comment` receives the text after '#' (a section line's style hint: "Atoms # full").
  bool next(std::string& text, std::vector<std::string>& words, std::string* comment = nullptr) {
    std::string line;
    while (std::getline(in_, line)) {
      ++line_no_;
      std::string c;
      const auto hash = line.find('#');
      if (hash != std::string::npos) {
        c = line.substr(hash + 1);
        line.erase(hash);
      }
      text = trim(line);
      if (text.empty()) continue;
      if (comment) *comment = trim(c);
      words.clear();
      std::istringstream ss(text);
      for (std::string w; ss >> w;) words.push_back(w);
      return true;
    }
    return false;
  }
  void skip_title() {
    std::string line;
    std::getline(in_, line);
    ++line_no_;
  }

  double number(const std::string& x) const {
    char* end = nullptr;
    const double v = std::strtod(x.c_str(), &end);
    if (end == x.c_str() || *end != '\0' || !std::isfinite(v)) fail("expected a number, got '" + x + "'");
    return v;
  }
  std::int64_t integer(const std::string& x) const {
    const double v = number(x);
    if (v != std::floor(v)) fail("expected an integer, got '" + x + "'");
    // Beyond 2^53 a double no longer holds every integer (and beyond 2^63 the conversion is undefined).
    if (std::fabs(v) > 9007199254740992.0) fail("the integer '" + x + "' is out of range (at most 2^53 in magnitude)");
    return static_cast<std::int64_t>(v);
  }

 private:
  static std::string trim(const std::string& t) {
    const auto a = t.find_first_not_of(" \t\r"), b = t.find_last_not_of(" \t\r");
    return a == std::string::npos ? std::string() : t.substr(a, b - a + 1);
  }
  std::string path_;
  std::ifstream in_;
  long line_no_ = 0;
  std::uintmax_t file_bytes_ = 0;
};

// The header: counts, types and box, up to the first section keyword (returned, with its comment).
std::string read_header(Reader& r, DataFile& d, std::string& comment) {
  bool box[3] = {false, false, false};
  std::string t;
  std::vector<std::string> w;
  r.skip_title();
  while (r.next(t, w, &comment)) {
    if (is_section(t)) {
      for (int a = 0; a < 3; ++a)
        if (!box[a]) r.fail(std::string("the header gives no '") + "xyz"[a] + "lo " + "xyz"[a] + "hi' line");
      return t;
    }
    // Counts are checked before anything is allocated from them (core/input_limits.hpp): against a
    // documented limit, the bytes the file must hold them in, and the node's memory.
    auto count = [&](const std::string& what, const limits::CountLimit& lim) {
      const double v = r.number(w[0]);
      const std::string problem = limits::count_problem(v, what, lim);
      if (!problem.empty()) r.fail(problem);
      return static_cast<std::int64_t>(v);
    };
    if (w.size() == 2 && w[1] == "atoms") {
      // The shortest Atoms line is "1 1 0 0 0\n" (10 bytes); in memory id, type, charge, molecule,
      // position, velocity, image flags and the id index (~200 bytes).
      d.natoms = count("atoms", {limits::kMaxAtoms, r.file_bytes(), 10, 200});
    } else if (w.size() == 3 && w[1] == "atom" && w[2] == "types") {
      d.ntypes = static_cast<int>(count("atom types", {limits::kMaxAtomTypes, r.file_bytes(), 4, 8}));  // "1 1\n" a mass
    } else if (w.size() == 2 && (w[1] == "bonds" || w[1] == "angles" || w[1] == "dihedrals" || w[1] == "impropers")) {
      // Each entry a line of 2 + (2 .. 4) numbers (at least 2 bytes each) and as many int64 in memory.
      const int per = w[1] == "bonds" ? 4 : w[1] == "angles" ? 5 : 6;
      const std::int64_t n = r.number(w[0]) == 0 ? 0 : count(w[1], {4 * limits::kMaxAtoms, r.file_bytes(), 2.0 * per, 8.0 * per});
      (w[1] == "bonds" ? d.nbonds : w[1] == "angles" ? d.nangles : w[1] == "dihedrals" ? d.ndihedrals : d.nimpropers) = n;
    } else if (w.size() == 3 && w[2] == "types" &&
               (w[1] == "bond" || w[1] == "angle" || w[1] == "dihedral" || w[1] == "improper")) {
      const int n = r.number(w[0]) == 0 ? 0 : static_cast<int>(count(w[1] + " types", {limits::kMaxAtomTypes, 0, 0, 64}));
      (w[1] == "bond" ? d.nbond_types : w[1] == "angle" ? d.nangle_types : w[1] == "dihedral" ? d.ndihedral_types : d.nimproper_types) = n;
    } else if (w.size() == 4 && (w[2] == "xlo" || w[2] == "ylo" || w[2] == "zlo")) {
      const int a = w[2][0] - 'x';
      d.lo[a] = r.number(w[0]);
      d.hi[a] = r.number(w[1]);
      if (!(d.hi[a] > d.lo[a])) r.fail("the box's " + w[2] + " " + w[3] + " bounds are empty or reversed");
      box[a] = true;
    } else if (w.size() >= 4 && w[3] == "xy") {
      r.fail("triclinic boxes (xy xz yz) are not supported: cumulus takes orthogonal boxes");
    } else if (w.size() >= 3 && w[1] == "extra") {
      // "N extra bond per atom" and the like: LAMMPS's reservations, nothing to reserve here
    } else {
      r.fail("unrecognised header line '" + t + "' (expected 'N atoms', 'N atom types', 'N bonds', 'N bond types', ... or 'lo hi xlo xhi')");
    }
  }
  r.fail("the file ends before any section (Masses, Atoms)");
}

// Reads the rows of one section until the next section keyword (returned; empty at the end of the
// file), calling row(words) for each and checking that there are `want` of them.
template <class Row>
std::string read_rows(Reader& r, const std::string& section, std::int64_t want, std::string& comment, Row row) {
  std::string t;
  std::vector<std::string> w;
  std::int64_t rows = 0;
  std::string next;
  while (r.next(t, w, &comment)) {
    if (is_section(t)) {
      next = t;
      break;
    }
    if (rows >= want) {
      if (t.find_first_of("abcdfghijklmnopqrstuvwyzABCDFGHIJKLMNOPQRSTUVWXYZ") != std::string::npos)
        r.fail("unknown section '" + t + "' (cumulus reads Masses, Atoms, Velocities, Bonds, Angles, Dihedrals, Impropers "
               "and the Coeffs sections)");
      r.fail(strprintf("more %s lines than the header's %lld", section.c_str(), static_cast<long long>(want)));
    }
    row(w);
    ++rows;
  }
  if (rows != want)
    r.fail(strprintf("%s has %lld lines, the header says %lld", section.c_str(), static_cast<long long>(rows), static_cast<long long>(want)));
  return next;
}

std::string read_masses(Reader& r, DataFile& d, std::string& comment) {
  return read_rows(r, "Masses", d.ntypes, comment, [&](const std::vector<std::string>& w) {
    if (w.size() != 2) r.fail("a Masses line is 'type mass'");
    const std::int64_t ty = r.integer(w[0]);
    if (ty < 1 || ty > d.ntypes) r.fail(strprintf("atom type %lld is not among the header's %d types", static_cast<long long>(ty), d.ntypes));
    if (!(r.number(w[1]) > 0)) r.fail("a mass must be positive");
    d.mass[static_cast<std::size_t>(ty - 1)] = r.number(w[1]);
  });
}

// Atoms: the style from the section's comment ("Atoms # full") when there is one, else from the
// number of columns (5 or 8 atomic, 6 or 9 charge, 7 or 10 full).
std::string read_atoms(Reader& r, DataFile& d, std::string& comment, std::map<std::int64_t, std::size_t>& index) {
  std::string style = comment;
  if (!style.empty() && style != "atomic" && style != "charge" && style != "full")
    r.fail("atom_style '" + style + "' is not supported (atomic, charge or full)");
  if (!style.empty()) d.atom_style = style;
  return read_rows(r, "Atoms", d.natoms, comment, [&](const std::vector<std::string>& w) {
    if (style.empty()) {
      const std::size_t n = w.size();
      style = n == 5 || n == 8 ? "atomic" : n == 6 || n == 9 ? "charge" : n == 7 || n == 10 ? "full" : "";
      if (style.empty())
        r.fail(strprintf("an Atoms line of %zu columns: atomic has 5 (id type x y z), charge 6 (id type q x y z), full 7 "
                         "(id molecule type q x y z), each with 3 more for image flags", n));
      d.atom_style = style;
    }
    const std::size_t cols = style == "atomic" ? 5 : style == "charge" ? 6 : 7;
    if (w.size() != cols && w.size() != cols + 3)
      r.fail(strprintf("an Atoms line (atom_style %s) has %zu or %zu columns, not %zu", style.c_str(), cols, cols + 3, w.size()));
    const std::size_t ct = style == "full" ? 2 : 1;  // the type's column; the charge's follows it
    const std::int64_t id = r.integer(w[0]), ty = r.integer(w[ct]);
    if (id < 1) r.fail("atom ids start at 1");
    if (!index.emplace(id, d.id.size()).second) r.fail(strprintf("atom id %lld appears twice", static_cast<long long>(id)));
    if (ty < 1 || ty > d.ntypes)
      r.fail(strprintf("atom %lld has type %lld, not among the header's %d types", static_cast<long long>(id),
                       static_cast<long long>(ty), d.ntypes));
    d.id.push_back(id);
    d.type.push_back(static_cast<int>(ty));
    d.molecule.push_back(style == "full" ? r.integer(w[1]) : 0);
    d.q.push_back(style == "atomic" ? 0.0 : r.number(w[ct + 1]));
    const std::size_t cx = cols - 3;
    if (w.size() == cols + 3) d.has_image_flags = true;
    for (int a = 0; a < 3; ++a) {
      d.x[a].push_back(r.number(w[cx + static_cast<std::size_t>(a)]));
      const std::int64_t im = w.size() == cols + 3 ? r.integer(w[cols + static_cast<std::size_t>(a)]) : 0;
      if (im < -2147483647 || im > 2147483647) r.fail("an image flag must fit in 32 bits, got '" + w[cols + static_cast<std::size_t>(a)] + "'");
      d.image[a].push_back(static_cast<int>(im));
      d.v[a].push_back(0.0);
    }
  });
}

std::string read_velocities(Reader& r, DataFile& d, std::string& comment, const std::map<std::int64_t, std::size_t>& index) {
  if (d.id.empty()) r.fail("Velocities before Atoms");
  return read_rows(r, "Velocities", d.natoms, comment, [&](const std::vector<std::string>& w) {
    if (w.size() != 4) r.fail("a Velocities line is 'id vx vy vz'");
    const auto it = index.find(r.integer(w[0]));
    if (it == index.end()) r.fail(strprintf("velocity for atom %lld, which is not in Atoms", static_cast<long long>(r.integer(w[0]))));
    for (int a = 0; a < 3; ++a) d.v[a][it->second] = r.number(w[1 + static_cast<std::size_t>(a)]);
    d.has_velocities = true;
  });
}

// Bonds, Angles, Dihedrals, Impropers: 'id type atom1 .. atomN', atoms that exist, distinct.
std::string read_topology(Reader& r, DataFile& d, const std::string& section, std::string& comment,
                          const std::map<std::int64_t, std::size_t>& index) {
  const int natom = kTopologySections.at(section);
  const bool bonds = section == "Bonds", angles = section == "Angles", dihedrals = section == "Dihedrals";
  std::vector<Bonded>& out = bonds ? d.bonds : angles ? d.angles : dihedrals ? d.dihedrals : d.impropers;
  const std::int64_t want = bonds ? d.nbonds : angles ? d.nangles : dihedrals ? d.ndihedrals : d.nimpropers;
  const int ntypes = bonds ? d.nbond_types : angles ? d.nangle_types : dihedrals ? d.ndihedral_types : d.nimproper_types;
  if (d.id.empty()) r.fail(section + " before Atoms");
  return read_rows(r, section, want, comment, [&](const std::vector<std::string>& w) {
    if (static_cast<int>(w.size()) != 2 + natom) r.fail(strprintf("a %s line is 'id type' and %d atom ids", section.c_str(), natom));
    Bonded b;
    const std::int64_t ty = r.integer(w[1]);
    if (ty < 1 || ty > ntypes)
      r.fail(strprintf("%s type %lld is not among the header's %d", section.c_str(), static_cast<long long>(ty), ntypes));
    b.type = static_cast<int>(ty);
    for (int k = 0; k < natom; ++k) {
      const std::int64_t a = r.integer(w[2 + static_cast<std::size_t>(k)]);
      if (!index.count(a)) r.fail(strprintf("%s entry %s names atom %lld, which is not in Atoms", section.c_str(), w[0].c_str(), static_cast<long long>(a)));
      for (int m = 0; m < k; ++m)
        if (b.atom[static_cast<std::size_t>(m)] == a) r.fail(strprintf("%s entry %s names atom %lld twice", section.c_str(), w[0].c_str(), static_cast<long long>(a)));
      b.atom[static_cast<std::size_t>(k)] = a;
    }
    out.push_back(b);
  });
}

// Pair Coeffs ('type c1 c2 ...'), Bond Coeffs, Angle Coeffs, Dihedral and Improper Coeffs: each
// type's numbers as given (their meaning is the style's).
std::string read_coeffs(Reader& r, DataFile& d, const std::string& section, std::string& comment) {
  const int ntypes = section == "Pair Coeffs" ? d.ntypes : section == "Bond Coeffs" ? d.nbond_types
                     : section == "Angle Coeffs" ? d.nangle_types : section == "Dihedral Coeffs" ? d.ndihedral_types
                                                                                                : d.nimproper_types;
  std::vector<std::vector<double>> dropped;
  std::vector<std::vector<double>>& out = section == "Pair Coeffs" ? d.pair_coeffs : section == "Bond Coeffs" ? d.bond_coeffs
                                          : section == "Angle Coeffs" ? d.angle_coeffs : dropped;
  out.assign(static_cast<std::size_t>(ntypes), {});
  return read_rows(r, section, ntypes, comment, [&](const std::vector<std::string>& w) {
    if (w.size() < 2) r.fail("a " + section + " line is 'type' and the style's coefficients");
    const std::int64_t ty = r.integer(w[0]);
    if (ty < 1 || ty > ntypes) r.fail(strprintf("%s for type %lld, not among the header's %d", section.c_str(), static_cast<long long>(ty), ntypes));
    std::vector<double>& c = out[static_cast<std::size_t>(ty - 1)];
    if (!c.empty()) r.fail(strprintf("%s: type %lld given twice", section.c_str(), static_cast<long long>(ty)));
    for (std::size_t k = 1; k < w.size(); ++k) c.push_back(r.number(w[k]));
  });
}

}  // namespace

DataFile read_data_file(const std::string& path, bool header_only) {
  Reader r(path);
  DataFile d;
  std::string comment;
  std::string section = read_header(r, d, comment);
  if (d.natoms <= 0) r.fail("the header gives no 'N atoms' (or zero atoms)");
  if (d.ntypes <= 0) r.fail("the header gives no 'N atom types'");
  if (header_only) return d;
  d.mass.assign(static_cast<std::size_t>(d.ntypes), 0.0);
  std::map<std::int64_t, std::size_t> index;  // file id -> position in d's arrays
  std::map<std::string, bool> seen;
  while (!section.empty()) {
    if (seen[section]) r.fail("section '" + section + "' appears twice");
    seen[section] = true;
    if (section == "Masses") {
      section = read_masses(r, d, comment);
    } else if (section == "Atoms") {
      section = read_atoms(r, d, comment, index);
    } else if (section == "Velocities") {
      section = read_velocities(r, d, comment, index);
    } else if (kTopologySections.count(section)) {
      section = read_topology(r, d, section, comment, index);
    } else {
      section = read_coeffs(r, d, section, comment);
    }
  }
  if (static_cast<std::int64_t>(d.id.size()) != d.natoms) r.fail("no Atoms section");
  for (int t = 0; t < d.ntypes; ++t)
    if (d.mass[static_cast<std::size_t>(t)] <= 0) r.fail(strprintf("no mass for atom type %d (Masses section)", t + 1));
  const std::pair<const char*, std::int64_t> topo[] = {{"Bonds", d.nbonds}, {"Angles", d.nangles}, {"Dihedrals", d.ndihedrals}, {"Impropers", d.nimpropers}};
  for (const auto& [name, count] : topo)
    if (count > 0 && !seen[name]) r.fail(strprintf("the header gives %lld %s but there is no %s section", static_cast<long long>(count), name, name));
  return d;
}

}  // namespace cumulus::md
