#!/usr/bin/python3
"""Validation of the molecular dynamics solver (solver = "md"), the cases that exist so far.

  lattice   The perfect fcc lattice of LAMMPS's bench/in.lj (density 0.8442, 32,000 atoms, cutoff 2.5,
            no shift, no tail): E_pair/N = -6.773368053 and virial pressure -6.235317270 (LAMMPS),
            target: both within 1e-8 relative.
  nve       Energy conservation of velocity Verlet on the Lennard-Jones liquid (in.lj's state, 4,000
            atoms, melted from the lattice; potential shifted to zero at the cutoff, so that pairs
            crossing it do not make the energy jump): the RMS fluctuation of the total energy per
            atom over 20 time units (5 with --quick) at dt = 0.01, 0.005, 0.0025, its order in dt
            (target: 2 +/- 0.3), and the drift (slope of a straight-line fit).
Not yet: NIST reference states, thermostats, several ranks (see docs/md.md).

    /usr/bin/python3 validation/md/run.py [build/cumulus] [--out DIR] [--quick]
"""
import argparse
import csv
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
LAMMPS_PE = -6.773368053
LAMMPS_PVIR = -6.235317270


def run(binary, out, name, sets):
    d = os.path.join(out, name)
    cmd = [binary, "run", os.path.join(REPO, "configs", "lj.toml"), "--set", f"run.directory={d}",
           "--set", "run.progress_seconds=600"] + [x for s in sets for x in ("--set", s)]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{name}: exit {p.returncode}\n{p.stdout[-2000:]}")
    with open(os.path.join(d, "diagnostics.csv")) as f:
        return list(csv.DictReader(f))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary", nargs="?", default=os.path.join(REPO, "build", "cumulus"))
    ap.add_argument("--out", default=os.path.join(REPO, "build", "validation-md"))
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    binary = os.path.abspath(a.binary)
    fails = []

    def check(ok, what):
        print(f"    {'PASS' if ok else 'FAIL'}  {what}")
        if not ok:
            fails.append(what)

    try:
        print("in.lj perfect lattice (32,000 atoms)")
        rows = run(binary, a.out, "lattice", ["run.end_step=1", "diagnostics.every_steps=1"])
        pe, pv = float(rows[0]["pe_per_atom"]), float(rows[0]["virial_pressure"])
        for name, got, ref in (("E_pair/N", pe, LAMMPS_PE), ("virial pressure", pv, LAMMPS_PVIR)):
            rel = abs(got / ref - 1)
            print(f"    {name}: {got:.10f} (LAMMPS {ref:.9f}), relative error {rel:.1e}")
            check(rel < 1e-8, f"lattice: {name} within 1e-8 of LAMMPS")
        total = float(rows[0]["pressure"])
        print(f"    pressure with the kinetic term at T 1.44, 3N-3 degrees of freedom: {total:.7f} (LAMMPS -5.0197073)")
        check(abs(total + 5.0197073) < 1e-6, "lattice: total pressure as LAMMPS prints it")

        print("NVE energy conservation (4,000 atoms, T0 1.44, 20 tau)")
        span = 5.0 if a.quick else 20.0
        flucts = []
        for dt in (0.01, 0.005, 0.0025):
            steps = int(round(span / dt))
            rows = run(binary, a.out, f"nve_{dt}", ["md.cells=[10]", "md.shift=true", f"md.dt={dt}", f"run.end_step={steps}",
                                                    f"diagnostics.every_steps={max(1, steps // 200)}"])
            # Discard the first 10 %: the lattice melts and the energy settles.
            e = [float(r["etotal_per_atom"]) for r in rows]
            t = [float(r["time"]) for r in rows]
            k0 = len(e) // 10
            e, t = e[k0:], t[k0:]
            mean = sum(e) / len(e)
            rms = math.sqrt(sum((x - mean) ** 2 for x in e) / len(e))
            tm = sum(t) / len(t)
            slope = sum((ti - tm) * (x - mean) for ti, x in zip(t, e)) / sum((ti - tm) ** 2 for ti in t)
            flucts.append(rms)
            print(f"    dt {dt}: {steps} steps, E/N {mean:.6f}, RMS fluctuation {rms:.3e}, drift {slope:.2e} per tau "
                  f"({slope * span / abs(mean):.1e} relative over the run), T {float(rows[-1]['temperature']):.3f}")
        for k in range(1, len(flucts)):
            order = math.log2(flucts[k - 1] / flucts[k])
            check(abs(order - 2) < 0.3, f"nve: fluctuation order in dt {order:.2f} = 2 +/- 0.3")
    except RuntimeError as e:
        print(f"FAIL {e}")
        return 1
    print(f"\n{len(fails)} target(s) failed" if fails else "\nall targets passed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
