#!/usr/bin/python3
"""Validation of md's bonded terms (bond_style and angle_style harmonic); prints each error.

  lammps    NIST's SPC/E configuration 1 (100 molecules, L = 20 A) made flexible with SPC/Fw's
            coefficients (Wu, Tepper & Voth, J. Chem. Phys. 124, 024503 (2006): k_b = 1059.162
            kcal/mol/A^2, r0 = 1.012 A, k_theta = 75.90 kcal/mol/rad^2, theta0 = 113.24 degrees; in
            LAMMPS's form E = K (r - r0)^2, K holding the 1/2: K = 529.581 and 37.95), every atom
            displaced by a seeded random step (up to 0.15 A, so that bonds and angles spread; some
            molecules straddle the periodic boundary), against LAMMPS (Debian's lmp) with the same data
            file and pair_style zero: the bond and angle energies and the pressure (their virial, the
            atoms at rest) to 1e-10 relative, and the per-atom forces through one 1e-4 fs step from
            rest (v = dt/2 (F(0) + F(dt)) / m in both codes) to 1e-10 of the RMS force.
  closed    The same configuration against the closed forms computed here in Python (math.acos in
            double, the minimum image): the energies to 1e-12 relative. Needs no LAMMPS.

    /usr/bin/python3 validation/md/bonded.py [build/cumulus] [--out DIR] [--quick] [--cases a,b]
"""
import math
import os
import random

from electrostatics import (checkpoint, lammps_head, lammps_run, lammps_with_h5py, read_spce, run_cases, run_cumulus, velocities_from,
                            write_data)

# SPC/Fw in LAMMPS's form (K holds the 1/2).
BOND_K, BOND_R0 = 1059.162 / 2, 1.012
ANGLE_K, ANGLE_THETA0 = 75.90 / 2, 113.24


def flexible_data(path, seed=20061):
    """NIST's configuration 1 with each atom moved by up to 0.15 A along each axis (seeded), SPC/Fw's
    Bond and Angle Coeffs in the file. Returns (L, atoms as (type, x, y, z), bonds, angles)."""
    L, sites = read_spce()
    rng = random.Random(seed)
    atoms, bonds, angles = [], [], []
    for k, (el, x, y, z) in enumerate(sites):
        p = [c + rng.uniform(-0.15, 0.15) for c in (x, y, z)]
        atoms.append((1 if el == "O" else 2, -0.8476 if el == "O" else 0.4238, p[0], p[1], p[2], k // 3 + 1))
        if el == "O":
            o = k + 1
            bonds += [(o, o + 1), (o, o + 2)]
            angles.append((o + 1, o, o + 2))
    write_data(path, "NIST SPC/E configuration 1, displaced, with SPC/Fw coefficients", [(-L / 2, L / 2)] * 3,
               [15.9994, 1.008], atoms, bonds, angles, "full")
    text = open(path).read()
    coeffs = f"Bond Coeffs\n\n1 {BOND_K!r} {BOND_R0!r}\n\nAngle Coeffs\n\n1 {ANGLE_K!r} {ANGLE_THETA0!r}\n\nAtoms"
    with open(path, "w") as f:
        f.write(text.replace("Atoms", coeffs, 1))
    return L, atoms, bonds, angles


def closed_forms(L, atoms, bonds, angles):
    def d(i, j):
        out = []
        for c in range(3):
            v = atoms[i - 1][2 + c] - atoms[j - 1][2 + c]
            out.append(v - L * round(v / L))
        return out

    eb = sum(BOND_K * (math.sqrt(sum(c * c for c in d(a, b))) - BOND_R0) ** 2 for a, b in bonds)
    ea = 0.0
    for a, b, c in angles:
        d1, d3 = d(a, b), d(c, b)
        cos = sum(x * y for x, y in zip(d1, d3)) / math.sqrt(sum(x * x for x in d1) * sum(x * x for x in d3))
        ea += ANGLE_K * (math.acos(cos) - math.radians(ANGLE_THETA0)) ** 2
    return eb, ea


def cumulus_keys(dt):
    # No pair interaction (every pair's epsilon 0): the bonded terms alone.
    keys = {"units": '"real"', "pair_style": '"lj/cut"', "cutoff": 8.0, "skin": 0.0, "temperature": 0, "mixing": '"none"',
            "dt": dt, "bond_style": '"harmonic"', "angle_style": '"harmonic"'}
    for name, t in (("oo", "[1, 1]"), ("oh", "[1, 2]"), ("hh", "[2, 2]")):
        keys[f"pairs.{name}"] = f"{{ types = {t}, epsilon = 0.0, sigma = 1.0 }}"
    return keys


def lammps_script(data, dt):
    return lammps_head(data) + f"""pair_style zero 8.0
pair_coeff * *
neighbor 0.0 bin
timestep {dt!r}
fix 1 all nve
dump 1 all custom 1 v.dump id vx vy vz
dump_modify 1 format float %.17g sort id
thermo_style custom step pe ebond eangle press
thermo_modify format float %.17g
run 1
"""


def lammps(binary, out, check, quick):
    print("lammps: flexible SPC/E configuration 1 (SPC/Fw bonds and angles) against LAMMPS's harmonic styles")
    lmp = lammps_with_h5py()
    if not lmp:
        return
    data = os.path.join(out, "flexible.data")
    L, atoms, bonds, angles = flexible_data(data)
    n, dt = len(atoms), 1e-4
    d = os.path.join(out, "flexible")
    rows = run_cumulus(binary, d, data, cumulus_keys(dt), steps=1)
    ours = velocities_from(checkpoint(d), n)
    row, theirs = lammps_run(lmp, os.path.join(out, "flexible-lammps"), lammps_script(data, dt), n)
    check("bond energy vs LAMMPS (kcal/mol)", rows[0]["e_bond"], row["E_bond"], 1e-10)
    check("angle energy vs LAMMPS (kcal/mol)", rows[0]["e_angle"], row["E_angle"], 1e-10)
    check("pressure (bonded virial) vs LAMMPS (atm)", rows[0]["pressure"], row["Press"], 1e-10)
    rms = math.sqrt(sum(sum(c * c for c in v) for v in theirs.values()) / (3 * n))
    worst = max(abs(ours[i][c] - theirs[i][c]) for i in theirs for c in range(3)) / rms
    check("per-atom forces vs LAMMPS (relative to the RMS force)", worst, 0.0, 1e-10, relative=False)


def closed(binary, out, check, quick):
    print("closed: the same configuration against the closed forms (Python, math.acos)")
    data = os.path.join(out, "flexible.data")
    L, atoms, bonds, angles = flexible_data(data)
    eb, ea = closed_forms(L, atoms, bonds, angles)
    rows = run_cumulus(binary, os.path.join(out, "flexible-closed"), data, cumulus_keys(1e-4), steps=1)
    check("bond energy vs closed form (kcal/mol)", rows[0]["e_bond"], eb, 1e-12)
    check("angle energy vs closed form (kcal/mol)", rows[0]["e_angle"], ea, 1e-12)
    print(f"  {len(bonds)} bonds, {len(angles)} angles; E_bond {eb:.6f}, E_angle {ea:.6f} kcal/mol")


CASES = {"closed": closed, "lammps": lammps}


def main():
    run_cases(CASES, "validation-md-bonded", "bonded")


if __name__ == "__main__":
    main()
