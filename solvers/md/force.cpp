// The force-style registry: one register call per style file. (An explicit list rather than
// static registrar objects: the solvers are a static library, and a linker drops an object file
// that nothing refers to, registrar and all; solvers/registry.cpp lists the solvers the same way.)
#include "solvers/md/force.hpp"

#include "core/error.hpp"

namespace cumulus::md {

const std::vector<ForceStyle>& force_styles() {
  static const std::vector<ForceStyle> styles = [] {
    std::vector<ForceStyle> v;
    register_lj_cut(v);
    register_lj_cut_coul_long(v);
    return v;
  }();
  return styles;
}

const ForceStyle& force_style(const std::string& name) {
  std::string names;
  for (const ForceStyle& s : force_styles()) {
    if (s.name == name) return s;
    names += (names.empty() ? "" : ", ") + s.name;
  }
  throw InputError("unknown pair style '" + name + "' (registered: " + names + ")");
}

}  // namespace cumulus::md
