#!/usr/bin/python3
"""Validation of the shallow-water core (solver = "shallow_water") on the cubed sphere.

Cases (job files in ../../configs/, references in README.md):
  case1       Williamson et al. (1992) case 1, cosine-bell advection, 12 days, flow angles 0 and
              pi/2 - 0.05 (the bell passes near four cube corners): normalised l1, l2, linf errors
              at C24, C48, C96 and the observed order (the bell is only C1 at its rim: order >= 1.5).
  case2       Case 2, steady geostrophic flow, 5 days, flow angles 0 and pi/4: errors at C24, C48,
              C96 and the observed order; target: l1 and l2 order >= 3.5 between C48 and C96
              (measured 3.7-4.0 with sixth-order interior differences and each panel keeping its
              own edge flux; the ghost interpolation, 4 points near the cube corners, is fourth
              order there, likely what limits it). Until 2026-11-30 the scheme was second order
              (target 1.85).
  case5       Case 5, flow over an isolated mountain, 15 days at C96: a map of the height, and mass
              (relative change < 1e-13), energy and potential enstrophy changes.
  case6       Case 6, Rossby-Haurwitz wave, 14 days at C96: the same.
  galewsky    Galewsky, Scott & Polvani (2004), 6 days at C96: a map of relative vorticity (their
              Fig. 4 shows 0-90 N); and the unperturbed jet's largest height change at C96 and
              C192 (a balanced jet must stay put: target < 20 m at day 6 at C192, this project's
              choice, 0.2 % of the depth; C96 reported, 191 m: see README.md).
Every run: mass conserved to round-off (|relative change| < 1e-13). Each case prints its numbers
and PASS/FAIL; PNGs go to --out; the script exits 1 if a target fails. --quick runs cases 1 and 2
at C12 and C24 only (for CI, about 10 s).

Run with /usr/bin/python3 (numpy, h5py, matplotlib):
    /usr/bin/python3 validation/climate/run.py [build/cumulus] [--out DIR] [--quick] [--case NAME ...]
"""
import argparse
import csv
import glob
import math
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CONFIGS = os.path.join(REPO, "configs")
MASS_TOL = 1e-13
DAY = 86400.0


class Runner:
    def __init__(self, binary, out, threads):
        self.binary, self.out, self.threads = binary, out, threads
        self.failures = []

    def run(self, config, name, sets, output=False):
        d = os.path.join(self.out, name)
        cmd = [self.binary, "run", os.path.join(CONFIGS, config), "--set", f"run.directory={d}",
               "--set", "run.progress_seconds=600"]
        for s in sets:
            cmd += ["--set", s]
        if output:
            cmd += ["--set", "output.format=xdmf"]
        else:
            cmd += ["--set", "output.format=none"]
        env = dict(os.environ, OMP_NUM_THREADS=str(self.threads))
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        if p.returncode != 0:
            raise RuntimeError(f"{name}: cumulus exited {p.returncode}\n{p.stdout[-3000:]}")
        with open(os.path.join(d, "diagnostics.csv")) as f:
            rows = list(csv.DictReader(f))
        return d, rows

    def check(self, ok, what):
        print(f"    {'PASS' if ok else 'FAIL'}  {what}")
        if not ok:
            self.failures.append(what)

    def mass(self, name, rows):
        worst = max(abs(float(r["mass_change"])) for r in rows)
        self.check(worst < MASS_TOL, f"{name}: mass conserved, largest |relative change| {worst:.2e} < {MASS_TOL:g}")


def order(e_coarse, e_fine):
    return math.log2(e_coarse / e_fine)


def convergence(R, case, config, angles, resolutions, end_time, targets):
    for label, angle in angles:
        print(f"  {case}, flow angle {label}:")
        print(f"    {'grid':>6} {'steps':>6} {'l1':>11} {'l2':>11} {'linf':>11}   order l1/l2/linf")
        errs = []
        for n in resolutions:
            _, rows = R.run(config, f"{case}_{label}_C{n}",
                            [f"shallow_water.resolution={n}", f"shallow_water.flow_angle={angle!r}",
                             f"run.end_time={end_time!r}", f"diagnostics.every_time={end_time / 5!r}"])
            R.mass(f"{case} C{n} {label}", rows)
            last = rows[-1]
            e = [float(last["l1_error"]), float(last["l2_error"]), float(last["linf_error"])]
            o = "" if not errs else " ".join(f"{order(a, b):5.2f}" for a, b in zip(errs[-1], e))
            print(f"    C{n:<5} {last['step']:>6} {e[0]:11.3e} {e[1]:11.3e} {e[2]:11.3e}   {o}")
            errs.append(e)
        for k, name in enumerate(("l1", "l2", "linf")):
            if name in targets:
                o = order(errs[-2][k], errs[-1][k])
                R.check(o >= targets[name], f"{case} {label}: {name} order {o:.2f} >= {targets[name]} "
                                            f"(C{resolutions[-2]} -> C{resolutions[-1]})")
    return True


def final_fields(d, names):
    import h5py
    f = sorted(glob.glob(os.path.join(d, "output", "*.h5")))[-1]
    with h5py.File(f, "r") as h:
        return {n: h[n][...] for n in names}, float(h.attrs["time"])


def draw_map(R, d, field, title, png, lat_range=(-90, 90), levels=None, cmap="viridis"):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.tri as mtri
    except ImportError:
        print("    (matplotlib missing: no map)")
        return
    v, t = final_fields(d, [field, "longitude", "latitude"])
    lon, lat, val = v["longitude"], v["latitude"], v[field]
    # Copies shifted by +-360 degrees close the seam at the date line.
    lon3 = np.concatenate([lon - 360, lon, lon + 360])
    lat3 = np.concatenate([lat, lat, lat])
    val3 = np.concatenate([val, val, val])
    keep = (lon3 > -200) & (lon3 < 200)
    tri = mtri.Triangulation(lon3[keep], lat3[keep])
    fig, ax = plt.subplots(figsize=(11, 4.8 if lat_range == (-90, 90) else 3.6))
    cs = ax.tricontourf(tri, val3[keep], levels=levels if levels is not None else 24, cmap=cmap, extend="both")
    fig.colorbar(cs, ax=ax, shrink=0.9)
    ax.set_xlim(-180, 180)
    ax.set_ylim(*lat_range)
    ax.set_xlabel("longitude (degrees)")
    ax.set_ylabel("latitude (degrees)")
    ax.set_title(f"{title}, day {t / DAY:.1f}")
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)
    print(f"    map: {png}")


def long_run(R, case, config, n, png_field, title, extra=(), lat_range=(-90, 90), levels=None, cmap="viridis"):
    d, rows = R.run(config, f"{case}_C{n}", [f"shallow_water.resolution={n}", *extra], output=True)
    R.mass(f"{case} C{n}", rows)
    first, last = rows[0], rows[-1]
    print(f"    day {float(last['time']) / DAY:.1f}, {last['step']} steps: depth {float(last['depth_min']):.1f} .. "
          f"{float(last['depth_max']):.1f} m; relative change of mass {float(last['mass_change']):.2e}, energy "
          f"{float(last['energy_change']):.2e}, potential enstrophy {float(last['enstrophy_change']):.2e}")
    draw_map(R, d, png_field, title, os.path.join(R.out, f"{case}_C{n}_{png_field}.png"), lat_range, levels, cmap)
    return d, rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary", nargs="?", default=os.path.join(REPO, "build", "cumulus"))
    ap.add_argument("--out", default=os.path.join(REPO, "build", "validation-climate"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--case", action="append", default=[])
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    R = Runner(os.path.abspath(a.binary), os.path.abspath(a.out), a.threads)
    wanted = set(a.case) or {"case1", "case2", "case5", "case6", "galewsky"}
    if a.quick:
        wanted &= {"case1", "case2"}
    res = [12, 24] if a.quick else [24, 48, 96]
    try:
        if "case1" in wanted:
            print("Williamson case 1 (cosine bell, 12 days)")
            convergence(R, "case1", "williamson1.toml", [("0", 0.0), ("pi/2-0.05", math.pi / 2 - 0.05)], res,
                        12 * DAY, {"l1": 1.5 if not a.quick else 0.8})
        if "case2" in wanted:
            print("Williamson case 2 (steady geostrophic flow, 5 days)")
            convergence(R, "case2", "williamson2.toml", [("0", 0.0), ("pi/4", math.pi / 4)], res, 5 * DAY,
                        {"l1": 3.5, "l2": 3.5} if not a.quick else {"l1": 2.3, "l2": 2.3})
        if "case5" in wanted:
            print("Williamson case 5 (zonal flow over a mountain, 15 days)")
            long_run(R, "case5", "williamson5.toml", 96, "height", "Case 5: surface height h + hs (m)",
                     levels=np.arange(5000, 6001, 50))
        if "case6" in wanted:
            print("Williamson case 6 (Rossby-Haurwitz wave, 14 days)")
            long_run(R, "case6", "williamson6.toml", 96, "height", "Case 6: height (m)",
                     levels=np.arange(8000, 10601, 100))
        if "galewsky" in wanted:
            print("Galewsky et al. (2004) barotropic instability, 6 days")
            long_run(R, "galewsky", "galewsky.toml", 96, "vorticity", "Galewsky: relative vorticity (1/s)",
                     lat_range=(0, 90), levels=np.linspace(-1.6e-4, 1.6e-4, 17), cmap="RdBu_r")
            # The unperturbed jet must stay put. Reported at C96 and gated at C192: at C96 (0.94 degree
            # cells) the jet's southern flank, which doubles its speed within 0.8 degree at the cube
            # corners' latitude, is not resolved there, and the cube's imprint grows on the unstable
            # jet to 191 m by day 6 (README.md).
            for n in (96, 192):
                _, rows = R.run("galewsky.toml", f"galewsky_unperturbed_C{n}",
                                ["shallow_water.galewsky_perturbation=false", f"shallow_water.resolution={n}"])
                R.mass(f"galewsky unperturbed C{n}", rows)
                dh = float(rows[-1]["height_change_max"])
                days = {round(float(r["time"]) / DAY, 2): float(r["height_change_max"]) for r in rows}
                series = ", ".join(f"day {d:g}: {days[d]:.2f} m" for d in (1, 2, 3, 4, 5, 6) if d in days)
                print(f"    unperturbed jet C{n}, largest |h(t) - h(0)|: {series}")
            R.check(dh < 20.0, f"galewsky: the unperturbed jet stays balanced at C192 ({dh:.2f} m < 20 m at day 6)")
    except RuntimeError as e:
        print(f"FAIL  {e}")
        return 1
    print(f"\n{len(R.failures)} target(s) failed" if R.failures else "\nall targets passed")
    return 1 if R.failures else 0


if __name__ == "__main__":
    sys.exit(main())
