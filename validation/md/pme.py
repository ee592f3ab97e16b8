#!/usr/bin/python3
"""Validation of md's PME (kspace_style = "pme"); prints each error. The Ewald sum (validated in
electrostatics.py against the Madelung constants, NIST and LAMMPS) is the reference; PME must meet
its tolerance against it, converge to it as the tolerance tightens, and agree with LAMMPS's PPPM
at the same accuracy.

  madelung  NaCl (512 ions) and CsCl (432 ions), coul/long + pme in lj units at md.kspace_tolerance
            1e-8, 1e-10 (alpha from the tolerance is replaced by the Ewald case's, erfc(alpha rc) ~ 1e-15,
            so that only the k-space part differs): the Madelung constants, relative error within 10x
            the tolerance.
  nist      NIST's SPC/E configuration 1 with PME at tolerances 1e-4 .. 1e-7 (NIST's alpha 5.6/L):
            the total and the k-space energy against the Ewald sum converged in k (|n|^2 <= 200),
            the virial pressure likewise; the error must fall with the tolerance and stay within twice
            it (energies relative to the total; the tolerance is a force accuracy, which bounds the
            energy's error only roughly).
  forces    The SPC/E file's per-atom forces with PME (tolerance 1e-6) against the converged Ewald
            sum's, both from cumulus (one 1e-4 fs step from rest: the velocities carry the forces):
            the RMS and largest differences relative to the RMS force (target 2e-5); then the same
            against LAMMPS's pppm at the same accuracy (kspace_style pppm 1e-6, order 5).
  nve       Molten NaCl (1,000 ions, real units, LJ Na+/Cl- mixed Lorentz-Berthelot), PME at 1e-5,
            dt 1 fs, NVE for --nve-steps (default 5,000; --quick 200): the drift of the total energy
            (a linear fit, per ns and per atom) and its RMS fluctuation about the fit, relative to the
            kinetic energy's fluctuation.

    /usr/bin/python3 validation/md/pme.py [build/cumulus] [--out DIR] [--quick] [--cases a,b]
"""
import argparse
import math
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import electrostatics as es  # noqa: E402  (data files, runs, checks and constants)

REPO = es.REPO


def madelung(binary, out, check, quick):
    print("madelung: NaCl and CsCl from the PME energy (lj units, unit charges)")
    n, m = (3, 5) if quick else (4, 6)
    L = 2.0 * n
    nacl = [(1 if (i + j + k) % 2 == 0 else 2, 1.0 if (i + j + k) % 2 == 0 else -1.0, float(i), float(j), float(k))
            for i in range(2 * n) for j in range(2 * n) for k in range(2 * n)]
    cscl = []
    for i in range(m):
        for j in range(m):
            for k in range(m):
                cscl.append((1, 1.0, float(i), float(j), float(k)))
                cscl.append((2, -1.0, i + 0.5, j + 0.5, k + 0.5))
    for name, atoms, box, r0, ref in (("NaCl", nacl, L, 1.0, es.NACL_MADELUNG), ("CsCl", cscl, float(m), math.sqrt(3) / 2, es.CSCL_MADELUNG)):
        data = os.path.join(out, f"{name}.data")
        es.write_data(data, name, [(0.0, box)] * 3, [1.0, 1.0], atoms)
        rc = 0.5 * box - 0.3 - 1e-9
        alpha = 5.8 / rc
        for tol in ((1e-8,) if quick else (1e-6, 1e-8, 1e-10)):
            rows = es.run_cumulus(binary, os.path.join(out, f"{name}-pme-{tol}"), data,
                                  {"pair_style": '"coul/long"', "kspace_style": '"pme"', "cutoff": rc, "skin": 0.3,
                                   "temperature": 0, "ewald_alpha": alpha, "kspace_tolerance": tol, "pme_order": 6})
            pe = rows[0]["pe_per_atom"]
            check(f"{name} ({len(atoms)} ions) Madelung, PME at tolerance {tol:.0e}", -2 * pe * r0, ref, 10 * tol)


def nist(binary, out, check, quick):
    print("nist: SPC/E configuration 1 with PME against the Ewald sum converged in k (alpha 5.6/L)")
    data = os.path.join(out, "spce1.data")
    L, n = es.spce_data(data)
    keys = es.spce_keys(L, 5.6 / L, 200)
    ew = es.run_cumulus(binary, os.path.join(out, "spce1-ewald200"), data, keys)[0]
    total = ew["pe_per_atom"] * n
    print(f"  Ewald (|n|^2 <= 200): total {total:.10f} kcal/mol, k-space {ew['e_long']:.10f}")
    last = None
    for tol in ((1e-6,) if quick else (1e-4, 1e-5, 1e-6, 1e-7)):
        k = dict(keys)
        k.update({"kspace_style": '"pme"', "kspace_tolerance": tol})
        p = es.run_cumulus(binary, os.path.join(out, f"spce1-pme-{tol}"), data, k)[0]
        err = abs(p["pe_per_atom"] * n - total) / abs(total)
        perr = abs(p["virial_pressure"] - ew["virial_pressure"]) / abs(ew["virial_pressure"])
        print(f"  tolerance {tol:.0e}: k-space {p['e_long']:.10f}, total relative error {err:.2e}, virial pressure {perr:.2e}")
        # A force accuracy bounds the energy's error only roughly: within twice the tolerance.
        check(f"PME total vs Ewald at tolerance {tol:.0e} (relative to the total)", p["pe_per_atom"] * n, total, 2 * tol)
        check(f"PME virial pressure vs Ewald at tolerance {tol:.0e}", p["virial_pressure"], ew["virial_pressure"], 10 * tol)
        if last is not None and not quick:
            check(f"PME error ratio, tolerance {tol:.0e} over {tol * 10:.0e} (must be < 1)", err / last, 0.0, 0.999, relative=False)
        last = max(err, 1e-300)


def velocities(binary, d, data, keys, n):
    import h5py
    es.run_cumulus(binary, d, data, keys, steps=1)
    with h5py.File(os.path.join(d, "run", "checkpoints", "checkpoint_000000000001.h5"), "r") as f:
        ids = f["arrays/id"][...].ravel()
        vel = f["arrays/velocity"][...].reshape(3, -1)
    return {int(i) + 1: vel[:, k] for k, i in enumerate(ids)}


def compare(a, b):
    rms = math.sqrt(sum(sum(c * c for c in v) for v in b.values()) / (3 * len(b)))
    diff = math.sqrt(sum((a[i][d] - b[i][d]) ** 2 for i in b for d in range(3)) / (3 * len(b))) / rms
    worst = max(abs(a[i][d] - b[i][d]) for i in b for d in range(3)) / rms
    return diff, worst


def forces(binary, out, check, quick):
    print("forces: SPC/E configuration 1, per-atom PME forces (one 1e-4 fs step from rest) against Ewald and LAMMPS pppm")
    try:
        import h5py  # noqa: F401
    except ImportError:
        print("  h5py not found: skipped")
        return
    data = os.path.join(out, "spce1.data")
    L, n = es.spce_data(data)
    tol, dt = 1e-6, 1e-4
    keys = es.spce_keys(L, 5.6 / L, 200)
    keys.update({"tail_correction": "false", "dt": dt})
    ref = velocities(binary, os.path.join(out, "spce1-f-ewald"), data, keys, n)
    k = dict(keys)
    k.update({"kspace_style": '"pme"', "kspace_tolerance": tol, "pme_order": 5})
    ours = velocities(binary, os.path.join(out, "spce1-f-pme"), data, k, n)
    rms_err, worst = compare(ours, ref)
    print(f"  PME vs Ewald: RMS difference {rms_err:.2e}, largest {worst:.2e} of the RMS force")
    # Target 2e-5 of the RMS force: measured 4.9e-6 (2026-12-02), LAMMPS's own pppm at this accuracy
    # is 4.1e-6 from the same Ewald sum.
    check("PME forces vs Ewald, RMS difference / RMS force", rms_err, 0.0, 2e-5, relative=False)
    lmp = shutil.which("lmp")
    if not lmp:
        print("  lmp not found: the LAMMPS comparison skipped")
        return
    _, theirs = es.lammps_run(lmp, os.path.join(out, "spce1-f-pppm"), es.lammps_full_script(
        data, es.SPCE_COEFFS, f"kspace_style pppm {tol}\nkspace_modify gewald {5.6 / L!r} order 5", dt), n)
    rms_err, worst = compare(ours, theirs)
    rms_ref, _ = compare(theirs, ref)
    print(f"  PME vs LAMMPS pppm: RMS difference {rms_err:.2e} of the RMS force (LAMMPS pppm vs our Ewald: {rms_ref:.2e})")
    check("PME forces vs LAMMPS pppm at the same accuracy, RMS difference / RMS force", rms_err, 0.0, 2e-5, relative=False)


def nve(binary, out, check, quick, steps):
    print(f"nve: molten NaCl (1,000 ions), PME at 1e-5, dt 1 fs, {steps} steps of NVE")
    data = os.path.join(out, "nacl1000.data")
    L, n = es.molten_nacl(data, m=10)
    keys = {"units": '"real"', "pair_style": '"lj/cut/coul/long"', "kspace_style": '"pme"', "kspace_tolerance": 1e-5,
            "cutoff": 10.0, "skin": 2.0, "dt": 1.0}
    for t, (e, sg) in es.NACL_LJ.items():
        keys[f"pairs.t{t}"] = f"{{ types = [{t}, {t}], epsilon = {e!r}, sigma = {sg!r} }}"
    rows = es.run_cumulus(binary, os.path.join(out, "nacl-nve"), data, keys, steps=steps)
    t = [r["step"] * 1e-6 for r in rows]  # ns
    e = [r["etotal_per_atom"] for r in rows]
    ke = [r["ke_per_atom"] for r in rows]
    tm, em = sum(t) / len(t), sum(e) / len(e)
    slope = sum((a - tm) * (b - em) for a, b in zip(t, e)) / sum((a - tm) ** 2 for a in t)
    resid = math.sqrt(sum((b - em - slope * (a - tm)) ** 2 for a, b in zip(t, e)) / len(e))
    kem = sum(ke) / len(ke)
    kfl = math.sqrt(sum((k - kem) ** 2 for k in ke) / len(ke))
    print(f"  total energy per atom: drift {slope:+.3e} kcal/mol per ns, RMS fluctuation about the trend {resid:.3e} "
          f"kcal/mol ({resid / kfl:.2e} of the kinetic energy's fluctuation {kfl:.3e}); mean T {sum(r['temperature'] for r in rows) / len(rows):.1f} K")
    check("NVE: RMS fluctuation of the total energy / kinetic energy's", resid / kfl, 0.0, 0.05, relative=False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary", nargs="?", default=os.path.join(REPO, "build", "cumulus"))
    ap.add_argument("--out", default=os.path.join(REPO, "build", "validation-md-pme"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--cases", default=None, help="default: all")
    ap.add_argument("--nve-steps", type=int, default=5000)
    args = ap.parse_args()
    binary = os.path.abspath(args.binary)
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    check = es.Check()
    cases = args.cases or ("madelung,nist" if args.quick else "madelung,nist,forces,nve")
    for case in cases.split(","):
        if case == "nve":
            nve(binary, out, check, args.quick, 200 if args.quick else args.nve_steps)
        else:
            {"madelung": madelung, "nist": nist, "forces": forces}[case](binary, out, check, args.quick)
    if check.failed:
        print("FAILED: " + ", ".join(check.failed))
        return 1
    print("all within their targets")
    return 0


if __name__ == "__main__":
    sys.exit(main())
