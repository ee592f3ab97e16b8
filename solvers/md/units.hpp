#pragma once
// The md solver's unit systems (md.units), as LAMMPS's `units lj` and `units real` define them
// (LAMMPS src/update.cpp), so that a LAMMPS data file and LAMMPS's thermo output compare directly.
//
// real: distance Angstrom, time fs, energy kcal/mol, mass g/mol, charge e, temperature K, pressure
// atm. The conversion factors are LAMMPS's, to its digits:
//   boltz  = 0.0019872067 kcal/mol/K        (Boltzmann's constant)
//   mvv2e  = 48.88821291^2                  (g/mol A^2/fs^2 -> kcal/mol)
//   ftm2v  = 1 / 48.88821291^2              (kcal/mol/A / (g/mol) -> A/fs^2)
//   nktv2p = 68568.415                      (kcal/mol/A^3 -> atm)
//   qqr2e  = 332.06371                      (e^2/A -> kcal/mol: the Coulomb constant)
// lj: every factor 1 (charges in units of sqrt(4 pi eps0 sigma epsilon)).
#include <string>

namespace cumulus::md {

struct Units {
  std::string name = "lj";
  double boltz = 1, mvv2e = 1, ftm2v = 1, nktv2p = 1, qqr2e = 1;
};

inline Units units_named(const std::string& name) {
  Units u;
  u.name = name;
  if (name == "real") {
    u.boltz = 0.0019872067;
    u.mvv2e = 48.88821291 * 48.88821291;
    u.ftm2v = 1.0 / 48.88821291 / 48.88821291;
    u.nktv2p = 68568.415;
    u.qqr2e = 332.06371;
  }
  return u;
}

}  // namespace cumulus::md
