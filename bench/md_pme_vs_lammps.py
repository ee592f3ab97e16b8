#!/usr/bin/python3
"""cumulus md with PME against LAMMPS with PPPM, side by side in the same run (issue #18).

The case: molten NaCl in real units, 22^3 = 10,648 ions (validation/md/electrostatics.py's
molten_nacl: a hot rock-salt lattice of spacing 3 A that melts), lj/cut/coul/long with a 10 A
cutoff, NVE, dt 1 fs, --steps steps (default 100), neighbour lists checked every step with a 2 A
skin in both codes. K-space at the same relative accuracy (default 1e-5: LAMMPS's `kspace_style
pppm 1e-5`, cumulus's `md.kspace_tolerance = 1e-5`, which derives alpha and the grid the same way)
and the same spline order (5). LAMMPS is Debian's `lmp`. On 1 rank and on 2 ranks (mpirun), one
OpenMP thread per rank.

Figures, best of --repeats: the force evaluation per step (LAMMPS: its timing table's Pair +
Kspace rows; cumulus: md.forces + md.kspace + md.coul_sum, the thermo steps' energy and virial
sums) and the whole loop per step, and the speed ratio cumulus / LAMMPS (issue #18's
target: >= 1.5). Then cumulus's force time split into the real space (the pair term and its
thermo sums) and the k-space's spreading (zeroing, spreading, the ghost sums,
the conversion), FFTs (the rest of md.kspace), the spectral pass and interpolation, as LAMMPS does
not split its own. A benchmark, not a test: exits 0 whatever the ratio (1 when a program fails).

    /usr/bin/python3 bench/md_pme_vs_lammps.py [build/cumulus] [--steps N] [--repeats R] [--size M]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "validation", "md"))
import electrostatics as es  # noqa: E402  (the molten NaCl builder and its LJ parameters)

MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np"]
RC, SKIN, TOL = 10.0, 2.0, 1e-5


def lammps(workdir, data, steps, ranks):
    coeffs = "".join(f"pair_coeff {t} {t} {e!r} {sg!r}\n" for t, (e, sg) in es.NACL_LJ.items())
    script = f"""units real
atom_style charge
boundary p p p
read_data {data}
pair_style lj/cut/coul/long {RC}
pair_modify mix arithmetic
{coeffs}kspace_style pppm {TOL}
kspace_modify order 5
neighbor {SKIN} bin
neigh_modify every 1 delay 0 check yes
timestep 1.0
fix 1 all nve
thermo {steps}
run {steps}
"""
    with open(os.path.join(workdir, "in.nacl"), "w") as f:
        f.write(script)
    cmd = ([] if ranks == 1 else MPIRUN + [str(ranks)]) + ["lmp", "-in", "in.nacl", "-log", "log.lammps", "-screen", "none"]
    p = subprocess.run(cmd, cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       env=dict(os.environ, OMP_NUM_THREADS="1"))
    if p.returncode != 0:
        raise RuntimeError(f"lmp: exit {p.returncode}\n{p.stdout[-2000:]}")
    log = open(os.path.join(workdir, "log.lammps")).read()
    loop = float(re.search(r"Loop time of ([0-9.eE+-]+) on", log).group(1))
    rows = {}
    for name in ("Pair", "Kspace", "Neigh", "Comm"):
        m = re.search(rf"^{name}\s+\|\s+([0-9.eE+-]+)\s+\|\s+([0-9.eE+-]+)\s+\|\s+([0-9.eE+-]+)", log, re.M)
        rows[name] = float(m.group(2)) if m else 0.0  # the average over ranks
    grid = re.search(r"grid = (\d+) (\d+) (\d+)", log)
    acc = re.search(r"estimated relative force accuracy = ([0-9.eE+-]+)", log)
    return {"loop": loop, "force": rows["Pair"] + rows["Kspace"], "kspace": rows["Kspace"],
            "grid": "x".join(grid.groups()) if grid else "?", "accuracy": float(acc.group(1)) if acc else float("nan")}


def cumulus(binary, workdir, data, steps, ranks):
    keys = {"units": '"real"', "pair_style": '"lj/cut/coul/long"', "kspace_style": '"pme"', "kspace_tolerance": TOL,
            "pme_order": 5, "cutoff": RC, "skin": SKIN, "dt": 1.0}
    for t, (e, sg) in es.NACL_LJ.items():
        keys[f"pairs.t{t}"] = f"{{ types = [{t}, {t}], epsilon = {e!r}, sigma = {sg!r} }}"
    job = os.path.join(workdir, "job.toml")
    text = (f'solver = "md"\n[run]\nend_step = {steps}\nprogress_seconds = 600\ndirectory = "{workdir}/run"\n'
            f'[diagnostics]\nevery_steps = {steps}\n[output]\nformat = "none"\n[checkpoint]\nevery_steps = 0\n'
            f'[md]\ndata_file = "{data}"\n')
    text += "".join(f"{k} = {v}\n" for k, v in keys.items())
    with open(job, "w") as f:
        f.write(text)
    cmd = ([] if ranks == 1 else MPIRUN + [str(ranks)]) + [binary, "run", job]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       env=dict(os.environ, OMP_NUM_THREADS="1"))
    if p.returncode != 0:
        raise RuntimeError(f"cumulus: exit {p.returncode}\n{p.stdout[-3000:]}")
    log = open(os.path.join(workdir, "run", "cumulus.log")).read()
    t = {m.group(1): float(m.group(3)) for m in re.finditer(r"^(\S+)\s+(\d+)\s+([0-9.]+)\s+[0-9.]+%", log, re.M)}
    wall = float(re.search(r"total run \(wall\)\s+([0-9.]+)", log).group(1))
    grid = re.search(r"k-space: PME, grid (\d+x\d+x\d+)", log)
    spread = sum(t.get(k, 0.0) for k in t if k.startswith("md.pme_halo")) + t.get("md.pme_zero", 0) + \
        t.get("md.pme_spread", 0) + t.get("md.pme_to_real", 0)
    spectral = t.get("md.pme_sums", 0) + t.get("md.pme_convolve", 0)
    interp = t.get("md.pme_forces", 0)
    kspace = t.get("md.kspace", 0)
    return {"loop": wall, "force": t.get("md.forces", 0) + kspace + t.get("md.coul_sum", 0), "kspace": kspace,
            "spread": spread, "fft": max(kspace - spread - spectral - interp, 0.0), "spectral": spectral,
            "interp": interp, "grid": grid.group(1) if grid else "?"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary", nargs="?", default=os.path.join(REPO, "build", "cumulus"))
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--size", type=int, default=22, help="ions per lattice edge (default 22: 10,648 ions)")
    args = ap.parse_args()
    if not shutil.which("lmp"):
        print("lmp (Debian's lammps) not found: apt-get install lammps")
        return 1
    binary = os.path.abspath(args.binary)
    with tempfile.TemporaryDirectory(prefix="cumulus-pme-bench-") as tmp:
        data = os.path.join(tmp, "nacl.data")
        L, n = es.molten_nacl(data, m=args.size)
        print(f"molten NaCl: {n} ions, box {L:g} A, lj/cut/coul/long {RC} A, skin {SKIN} A, k-space accuracy {TOL}, "
              f"order 5, {args.steps} steps NVE; best of {args.repeats}")
        for ranks in (1, 2):
            best_l = best_c = None
            for r in range(args.repeats):
                wl, wc = os.path.join(tmp, f"l{ranks}-{r}"), os.path.join(tmp, f"c{ranks}-{r}")
                os.makedirs(wl)
                os.makedirs(wc)
                a = lammps(wl, data, args.steps, ranks)
                b = cumulus(binary, wc, data, args.steps, ranks)
                best_l = a if best_l is None or a["force"] < best_l["force"] else best_l
                best_c = b if best_c is None or b["force"] < best_c["force"] else best_c
            ms = 1e3 / args.steps
            print(f"\n{ranks} rank(s), 1 thread each:")
            print(f"  LAMMPS pppm (grid {best_l['grid']}, estimated relative force accuracy {best_l['accuracy']:.2g}):"
                  f" force {best_l['force'] * ms:.3f} ms/step (k-space {best_l['kspace'] * ms:.3f}), loop {best_l['loop'] * ms:.3f} ms/step")
            print(f"  cumulus pme (grid {best_c['grid']}): force {best_c['force'] * ms:.3f} ms/step (k-space "
                  f"{best_c['kspace'] * ms:.3f}), loop {best_c['loop'] * ms:.3f} ms/step")
            print(f"  speed ratio cumulus / LAMMPS: force {best_l['force'] / best_c['force']:.2f}, k-space "
                  f"{best_l['kspace'] / best_c['kspace']:.2f}, loop {best_l['loop'] / best_c['loop']:.2f}   (target >= 1.5)")
            f = best_c["force"]
            if f > 0:
                real = f - best_c["kspace"]
                print(f"  cumulus force split: real space {100 * real / f:.0f} %, spreading {100 * best_c['spread'] / f:.0f} %, "
                      f"FFTs {100 * best_c['fft'] / f:.0f} %, spectral {100 * best_c['spectral'] / f:.0f} %, "
                      f"interpolation {100 * best_c['interp'] / f:.0f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
