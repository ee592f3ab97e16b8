#!/usr/bin/env python3
"""Issue #18's GPU figure: molten NaCl with PME at about 100,000 ions, steps per second on a backend.

The case is bench/md_pme_vs_lammps.py's (validation/md/electrostatics.py's molten_nacl: Na+ and
Cl- on a hot rock-salt lattice of spacing 3 A; lj/cut/coul/long at 10 A, skin 2 A, NVE, dt 1 fs,
PME at accuracy 1e-5 with order 5), at --size^3 ions (default 46: 97,336). The time is the run's
"total run (wall)": its time loop with the list builds and a thermo row at the first and last step;
the set-up (reading the data file, the first list) is left out. No peer runs on the lent machine,
so the figure is recorded, not compared.

Then --check-steps steps of the small case (--check-size, 10,648 ions) on the host and on the backend
under test: their last thermo rows (temperature, energies, pressure) must agree within --check-tol
relative (PME's FFT is cuFFT on one and FFTW on the other: the same to rounding, not to the bit).

    python3 bench/md_pme_gpu.py build-gpu/cumulus [--backend cuda] [--size 46] [--steps 500]

A benchmark, not a test: exits 0 whatever the figure, 1 when a run fails or the check differs.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "validation", "md"))
import electrostatics as es  # noqa: E402  (the molten NaCl builder and its LJ parameters)


def job(data, steps):
    keys = {"units": '"real"', "pair_style": '"lj/cut/coul/long"', "kspace_style": '"pme"', "kspace_tolerance": 1e-5,
            "pme_order": 5, "cutoff": 10.0, "skin": 2.0, "dt": 1.0}
    for t, (e, sg) in es.NACL_LJ.items():
        keys[f"pairs.t{t}"] = f"{{ types = [{t}, {t}], epsilon = {e!r}, sigma = {sg!r} }}"
    text = (f'solver = "md"\n[run]\nend_step = {steps}\nprogress_seconds = 600\n'
            f'[diagnostics]\nevery_steps = {steps}\n[output]\nformat = "none"\n[checkpoint]\nevery_steps = 0\n'
            f'[md]\ndata_file = "{data}"\n')
    return text + "".join(f"{k} = {v}\n" for k, v in keys.items())


def run(exe, work, name, text, backend, env=None):
    """Runs the job `text` in work/name on `backend`; returns (loop wall s, first and last
    diagnostics rows, the timers). Also bench/md_water_gpu.py's."""
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "job.toml"), "w") as f:
        f.write(text)
    p = subprocess.run([exe, "run", "job.toml", "--backend", backend, "--set", 'run.directory="run"'], cwd=d,
                       capture_output=True, text=True,
                       env=dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"), **(env or {})))
    if p.returncode != 0:
        print(p.stdout[-3000:] + p.stderr[-3000:])
        sys.exit(f"{os.path.basename(sys.argv[0])}: {name} failed with exit {p.returncode}")
    log = open(os.path.join(d, "run", "cumulus.log")).read()
    wall = float(re.search(r"total run \(wall\)\s+([0-9.]+)", log).group(1))
    t = {m.group(1): float(m.group(3)) for m in re.finditer(r"^(\S+)\s+(\d+)\s+([0-9.]+)\s+[0-9.]+%", log, re.M)}
    with open(os.path.join(d, "run", "diagnostics.csv")) as f:
        rows = [line.strip().split(",") for line in f if line.strip()]
    return wall, rows[0], rows[-1], t


def worst_difference(head, host, dev):
    """The largest relative difference between two thermo rows, over the physical columns, and its
    column."""
    worst, col = 0.0, ""
    for k, name in enumerate(head):
        if name in ("step", "time", "neighbor_builds", "dangerous_builds", "ghosts_per_rank"):
            continue
        a, b = float(host[k]), float(dev[k])
        rel = abs(a - b) / max(abs(a), 1e-300)
        if rel > worst:
            worst, col = rel, name
    return worst, col


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary")
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--size", type=int, default=46, help="ions per lattice edge (default 46: 97,336 ions)")
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--check-size", type=int, default=22)
    ap.add_argument("--check-steps", type=int, default=20)
    ap.add_argument("--check-tol", type=float, default=1e-8)
    args = ap.parse_args()
    exe = os.path.abspath(args.binary)
    with tempfile.TemporaryDirectory(prefix="md_pme_gpu_") as work:
        data = os.path.join(work, "big.data")
        _, n = es.molten_nacl(data, m=args.size)
        wall, _, _, t = run(exe, work, "big", job(data, args.steps), args.backend)
        print(f"molten NaCl, {n:,} ions, PME 1e-5 order 5, lj/cut/coul/long 10 A, {args.steps} steps on {args.backend}: "
              f"{args.steps / wall:,.1f} steps/s ({1e3 * wall / args.steps:.3f} ms per step)")
        per = {k: 1e3 * v / args.steps for k, v in t.items() if k in ("md.forces", "md.kspace", "md.neighbor_build", "md.integrate")}
        print("  per step (ms): " + ", ".join(f"{k} {v:.3f}" for k, v in sorted(per.items())))
        small = os.path.join(work, "small.data")
        _, ns = es.molten_nacl(small, m=args.check_size)
        _, head, host, _ = run(exe, work, "check-host", job(small, args.check_steps), "host")
        _, _, dev, _ = run(exe, work, "check-" + args.backend, job(small, args.check_steps), args.backend)
        worst, col = worst_difference(head, host, dev)
        ok = worst <= args.check_tol
        print(f"  host vs {args.backend}, {ns:,} ions after {args.check_steps} steps: worst relative difference "
              f"{worst:.2e} ({col or 'none'}): {'within' if ok else 'BEYOND'} {args.check_tol:g}")
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
