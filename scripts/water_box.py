#!/usr/bin/env python3
"""Writes a LAMMPS data file of liquid water (and optionally NaCl) for cumulus's md solver.

    scripts/water_box.py OUT.data [--model spce|tip3p] [--molecules 512] [--density 0.997]
                                  [--ions 0] [--seed 2020]

The molecules sit on a simple cubic lattice filling a cubic box at the mass density given (g/cm^3,
water and ions together), oxygens on the sites, each molecule turned to a uniformly random
orientation. The orientation of molecule k is drawn from a counter-based generator (splitmix64 of
the seed, k and the draw, as solvers/md/random.hpp draws), so a box depends only on its arguments.
`--ions K` puts K Na+ and K Cl- ions on randomly chosen sites (the same generator) in place of
waters: the molecule count stays --molecules (waters plus ions).

Models (rigid: the job holds bonds and angles with md.constrain_bonds / md.constrain_angles):
  spce   Berendsen, Grigera & Straatsma, J. Phys. Chem. 91, 6269 (1987): O-H 1 A, H-O-H 109.47
         degrees, q_O -0.8476 e, LJ on O epsilon 0.1553 kcal/mol, sigma 3.166 A.
  tip3p  Jorgensen et al., J. Chem. Phys. 79, 926 (1983), the original parameters: O-H 0.9572 A,
         H-O-H 104.52 degrees, q_O -0.834 e, LJ on O epsilon 0.1521 kcal/mol, sigma 3.15061 A.
Ions (with either): Joung & Cheatham, J. Phys. Chem. B 112, 9020 (2008), their SPC/E set:
  Na+ epsilon 0.3526418 kcal/mol, sigma 2.159538 A; Cl- epsilon 0.0127850 kcal/mol, sigma 4.830453 A.

Atom types: 1 O, 2 H, 3 Na+, 4 Cl- (the ion types only with --ions). The file carries Masses, Pair
Coeffs (hydrogens with epsilon 0: no LJ), Bond Coeffs and Angle Coeffs (K 1000 and 100: they only
give the constraints' r0 and theta0 to a rigid model).
"""
import argparse
import math

MODELS = {
    "spce": {"r": 1.0, "theta": 109.47, "qo": -0.8476, "eps": 0.1553, "sigma": 3.166},
    "tip3p": {"r": 0.9572, "theta": 104.52, "qo": -0.834, "eps": 0.1521, "sigma": 3.15061},
}
MASS = {1: 15.9994, 2: 1.008, 3: 22.98977, 4: 35.453}
IONS = {3: (1.0, 0.3526418, 2.159538), 4: (-1.0, 0.0127850, 4.830453)}  # q, epsilon, sigma
AVOGADRO = 6.02214076e23
MASK = (1 << 64) - 1


def splitmix64(z):
    z = (z + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def uniform(seed, key, draw):
    """Uniform in (0, 1), keyed by (seed, key, draw): solvers/md/random.hpp's uniform()."""
    r = splitmix64((splitmix64(seed ^ splitmix64(key)) + draw) & MASK)
    return ((r >> 11) + 0.5) * (1.0 / 9007199254740992.0)


def rotation(seed, k):
    """A uniformly random rotation (Shoemake's quaternion from three uniforms) as a 3x3 matrix."""
    u1, u2, u3 = (uniform(seed, k, d) for d in range(3))
    a, b = math.sqrt(1 - u1), math.sqrt(u1)
    w, x, y, z = a * math.sin(2 * math.pi * u2), a * math.cos(2 * math.pi * u2), b * math.sin(2 * math.pi * u3), \
        b * math.cos(2 * math.pi * u3)
    return [[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--model", choices=sorted(MODELS), default="spce")
    ap.add_argument("--molecules", type=int, default=512)
    ap.add_argument("--density", type=float, default=0.997, help="g/cm^3")
    ap.add_argument("--ions", type=int, default=0, help="Na+ / Cl- pairs in place of waters")
    ap.add_argument("--seed", type=int, default=2020)
    a = ap.parse_args()
    m = MODELS[a.model]
    n = a.molecules
    if n < 1 or 2 * a.ions >= n:
        raise SystemExit("water_box.py: need at least one water and fewer ion pairs than half the molecules")
    side = math.ceil(n ** (1 / 3) - 1e-9)
    water = 2 * MASS[2] + MASS[1]
    grams = ((n - 2 * a.ions) * water + a.ions * (MASS[3] + MASS[4])) / AVOGADRO
    L = (grams / a.density * 1e24) ** (1 / 3)  # A
    h = L / side
    # Sites in order; the ions on sites drawn without replacement (a Fisher-Yates shuffle's head).
    sites = list(range(n))
    for k in range(n - 1, 0, -1):
        j = min(int(uniform(a.seed, 1 << 40 | k, 0) * (k + 1)), k)
        sites[k], sites[j] = sites[j], sites[k]
    kind = {}
    for k in range(a.ions):
        kind[sites[k]] = 3
        kind[sites[a.ions + k]] = 4
    half = math.radians(m["theta"]) / 2
    body = [(0.0, 0.0, 0.0), (m["r"] * math.sin(half), m["r"] * math.cos(half), 0.0),
            (-m["r"] * math.sin(half), m["r"] * math.cos(half), 0.0)]
    atoms, bonds, angles = [], [], []
    for k in range(n):
        c = [(k % side + 0.5) * h, (k // side % side + 0.5) * h, (k // (side * side) + 0.5) * h]
        mol = k + 1
        if k in kind:
            t = kind[k]
            atoms.append((mol, t, IONS[t][0], c))
            continue
        R = rotation(a.seed, k)
        ids = []
        for s, (t, q) in enumerate(((1, m["qo"]), (2, -m["qo"] / 2), (2, -m["qo"] / 2))):
            p = [c[i] + sum(R[i][j] * body[s][j] for j in range(3)) for i in range(3)]
            atoms.append((mol, t, q, p))
            ids.append(len(atoms))
        bonds += [(ids[0], ids[1]), (ids[0], ids[2])]
        angles.append((ids[1], ids[0], ids[2]))
    ntypes = 4 if a.ions else 2
    with open(a.out, "w") as f:
        f.write(f"{a.model} water, {n - 2 * a.ions} molecules{f' and {a.ions} Na+ / Cl- pairs' if a.ions else ''} at "
                f"{a.density} g/cm^3 (scripts/water_box.py --model {a.model} --molecules {n} --density {a.density} "
                f"--ions {a.ions} --seed {a.seed})\n\n")
        f.write(f"{len(atoms)} atoms\n{ntypes} atom types\n{len(bonds)} bonds\n1 bond types\n{len(angles)} angles\n"
                f"1 angle types\n\n")
        for d in "xyz":
            f.write(f"0 {L!r} {d}lo {d}hi\n")
        f.write("\nMasses\n\n" + "".join(f"{t} {MASS[t]!r}\n" for t in range(1, ntypes + 1)))
        f.write(f"\nPair Coeffs\n\n1 {m['eps']!r} {m['sigma']!r}\n2 0.0 1.0\n")
        for t in range(3, ntypes + 1):
            f.write(f"{t} {IONS[t][1]!r} {IONS[t][2]!r}\n")
        f.write(f"\nBond Coeffs\n\n1 1000.0 {m['r']!r}\n\nAngle Coeffs\n\n1 100.0 {m['theta']!r}\n\nAtoms # full\n\n")
        for i, (mol, t, q, p) in enumerate(atoms):
            f.write(f"{i + 1} {mol} {t} {q!r} {p[0]!r} {p[1]!r} {p[2]!r}\n")
        f.write("\nBonds\n\n" + "".join(f"{k + 1} 1 {b[0]} {b[1]}\n" for k, b in enumerate(bonds)))
        f.write("\nAngles\n\n" + "".join(f"{k + 1} 1 {b[0]} {b[1]} {b[2]}\n" for k, b in enumerate(angles)))
    print(f"{a.out}: {len(atoms)} atoms ({n - 2 * a.ions} {a.model} waters, {a.ions} ion pairs), box {L:.4f} A")


if __name__ == "__main__":
    main()
