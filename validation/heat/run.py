#!/usr/bin/python3
"""Convergence study of the heat solver against the analytic sine-mode solution.

Runs sine2d.toml at 32, 64, 128 cells per axis and sine3d.toml at 16, 32, 64 (heat.cfl fixed, so
dt ~ h^2), reads l2_error and linf_error at the end time from each run's diagnostics.csv, prints
a table with the observed order between successive resolutions, and fails (exit 1) unless every
observed order is 2 +/- 0.1. Draws convergence.png under --out (and, with --update-figure, also
the copy kept in git beside this script). See README.md.

Run with /usr/bin/python3 (needs numpy and matplotlib):
    /usr/bin/python3 validation/heat/run.py [build/cumulus] [--out DIR] [--update-figure]
"""
import argparse
import csv
import math
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

EXPECTED_ORDER = 2.0
TOLERANCE = 0.1

# (name, job file, cells per axis, number of axes)
CASES = [
    ("2D", "sine2d.toml", [32, 64, 128], 2),
    ("3D", "sine3d.toml", [16, 32, 64], 3),
]


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def read_job(path):
    """The job file as a dict (tomllib: Python >= 3.11)."""
    import tomllib

    with open(path, "rb") as f:
        job = tomllib.load(f)
    return job


def run_case(binary, job_path, n, ndim, run_dir, backend):
    if os.path.isdir(run_dir):
        shutil.rmtree(run_dir)
    cells = ",".join([str(n)] * ndim)
    cmd = [binary, "run", job_path, "--backend", backend,
           "--set", f"heat.cells=[{cells}]", f'run.directory="{run_dir}"']
    t0 = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        fail(f"{' '.join(cmd)} exited with {p.returncode}:\n{p.stdout[-3000:]}")
    with open(os.path.join(run_dir, "diagnostics.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        fail(f"{run_dir}/diagnostics.csv has no rows")
    last = rows[-1]
    return {
        "step": int(last["step"]),
        "time": float(last["time"]),
        "l2": float(last["l2_error"]),
        "linf": float(last["linf_error"]),
        "wall": wall,
    }


def predicted_errors(job, n, ndim):
    """The error the scheme must make, from its exact discrete solution.

    With u = 0 (or the fixed value) mirrored through the face, a sine mode sampled at cell centres is
    an exact eigenvector of the discrete Laplacian on periodic and fixed axes alike, with eigenvalue
    -sum_d 4 sin^2(k_d h_d / 2) / h_d^2. Forward Euler multiplies it by G = 1 - dt * that each step.
    So u_h(t) = mode * prod G_n exactly (up to rounding), and the error is the mode's grid norm times
    |prod G_n - exp(-alpha |k|^2 t)|. The step sequence is replayed as solvers/simulation.cpp takes it
    (the last step shortened to land on run.end_time)."""
    h = job["heat"]
    alpha = h.get("diffusivity", 1.0)
    length = h.get("length", [1.0])
    bc = h.get("boundary", ["periodic"])
    modes = h.get("modes", [1])
    amp = h.get("amplitude", 1.0)
    cfl = h.get("cfl", 0.5)
    end = job["run"]["end_time"]
    hs, ks = [], []
    for d in range(ndim):
        L = length[d] if len(length) > 1 else length[0]
        b = bc[d] if len(bc) > 1 else bc[0]
        m = modes[d] if len(modes) > 1 else modes[0]
        hs.append(L / n)
        ks.append((2 if b == "periodic" else 1) * math.pi * m / L)
    dt_pref = cfl * (1.0 / (2.0 * alpha * sum(1.0 / (x * x) for x in hs)))
    lam_h = alpha * sum(4 * math.sin(k * x / 2) ** 2 / (x * x) for k, x in zip(ks, hs))
    lam = alpha * sum(k * k for k in ks)
    t, g = 0.0, 1.0
    while not t >= end * (1 - 1e-14):
        dt = dt_pref
        last = t + dt >= end
        if last:
            dt = end - t
        g *= 1.0 - dt * lam_h
        t = end if last else t + dt
    diff = abs(g - math.exp(-lam * t))
    # Grid norms of prod_d sin(k_d x_d) at cell centres: rms = 2^(-d/2) exactly (m < N), max by sampling.
    import numpy as np

    peak = 1.0
    for k, x in zip(ks, hs):
        peak *= np.max(np.abs(np.sin(k * (np.arange(n) + 0.5) * x)))
    return abs(amp) * diff * 2 ** (-ndim / 2), abs(amp) * diff * peak


def order(e_coarse, e_fine, h_coarse, h_fine):
    return math.log(e_coarse / e_fine) / math.log(h_coarse / h_fine)


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(6.4, 4.8), dpi=120)
    colors = {"2D": "tab:blue", "3D": "tab:red"}
    for name, rows in results.items():
        h = np.array([r["h"] for r in rows])
        ax.loglog(h, [r["l2"] for r in rows], "o-", color=colors[name], label=f"{name} L2 error")
        ax.loglog(h, [r["linf"] for r in rows], "s--", color=colors[name], mfc="none", label=f"{name} Linf error")
        # Slope-2 reference through the finest L2 point, drawn a factor 3 below it to stay readable.
        href = np.array([h.min() * 0.8, h.max() * 1.25])
        ax.loglog(href, rows[-1]["l2"] / 3 * (href / h.min()) ** 2, ":", color="gray",
                  label="slope 2 reference" if name == "2D" else None)
    ns = sorted({r["n"] for rows in results.values() for r in rows})
    ax.set_xticks([1.0 / n for n in ns], [f"1/{n}" for n in ns], minor=False)
    ax.set_xticks([], minor=True)
    ax.set_xlabel("cell size h (unit domain)")
    ax.set_ylabel("error at end time vs analytic solution")
    ax.set_title("cumulus heat solver: sine-mode convergence (dt ~ h$^2$)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary", nargs="?", default=os.path.join(REPO, "build", "cumulus"),
                    help="cumulus binary (default: build/cumulus in the repository)")
    ap.add_argument("--out", default=os.path.join(HERE, "runs"),
                    help="folder for the runs, results.csv and convergence.png (default: validation/heat/runs)")
    ap.add_argument("--backend", default="host", choices=["auto", "host", "cuda"],
                    help="run.backend for every run (default: host)")
    ap.add_argument("--update-figure", action="store_true",
                    help="also copy convergence.png to validation/heat/convergence.png (the one kept in git)")
    args = ap.parse_args()

    binary = os.path.abspath(args.binary)
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        fail(f"no cumulus binary at {binary} (build it: cd build && ninja, or pass its path)")
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)

    t_start = time.monotonic()
    results = {}
    problems = []
    print(f"cumulus heat: convergence against the analytic sine mode; binary {binary}, backend {args.backend}")
    print(f"expected order {EXPECTED_ORDER} +/- {TOLERANCE} (L2 and Linf, between successive resolutions)\n")
    hdr = f"{'case':4} {'N':>5} {'h':>10} {'steps':>6} {'L2 error':>12} {'Linf error':>12} " \
          f"{'order L2':>8} {'order Linf':>10} {'L2/pred':>8} {'wall s':>7}"
    print(hdr)
    print("-" * len(hdr))
    for name, job_file, ns, ndim in CASES:
        job_path = os.path.join(HERE, job_file)
        job = read_job(job_path)
        end = job["run"]["end_time"]
        rows = []
        for n in ns:
            r = run_case(binary, job_path, n, ndim, os.path.join(out, f"{job_file[:-5]}_n{n}"), args.backend)
            if abs(r["time"] - end) > 1e-12 * end:
                fail(f"{name} N={n}: the last diagnostics row is at t={r['time']}, not the end time {end}")
            r["n"], r["h"] = n, 1.0 / n * (job["heat"].get("length", [1.0])[0])
            r["pred_l2"], r["pred_linf"] = predicted_errors(job, n, ndim)
            r["order_l2"] = r["order_linf"] = None
            if rows:
                p = rows[-1]
                r["order_l2"] = order(p["l2"], r["l2"], p["h"], r["h"])
                r["order_linf"] = order(p["linf"], r["linf"], p["h"], r["h"])
                for kind in ("l2", "linf"):
                    o = r["order_" + kind]
                    if not abs(o - EXPECTED_ORDER) <= TOLERANCE:
                        problems.append(f"{name} N={p['n']}->{n}: observed {kind.upper()} order {o:.3f} is outside "
                                        f"{EXPECTED_ORDER} +/- {TOLERANCE}")
            rows.append(r)
            fmt = lambda v: f"{v:8.3f}" if v is not None else f"{'':8}"
            print(f"{name:4} {n:5d} {r['h']:10.3e} {r['step']:6d} {r['l2']:12.4e} {r['linf']:12.4e} "
                  f"{fmt(r['order_l2'])} {fmt(r['order_linf']):>10} {r['l2'] / r['pred_l2']:8.4f} {r['wall']:7.2f}")
        results[name] = rows

    with open(os.path.join(out, "results.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["case", "N", "h", "steps", "l2_error", "linf_error", "order_l2", "order_linf",
                    "predicted_l2", "predicted_linf"])
        for name, rows in results.items():
            for r in rows:
                w.writerow([name, r["n"], repr(r["h"]), r["step"], repr(r["l2"]), repr(r["linf"]),
                            "" if r["order_l2"] is None else f"{r['order_l2']:.4f}",
                            "" if r["order_linf"] is None else f"{r['order_linf']:.4f}",
                            repr(r["pred_l2"]), repr(r["pred_linf"])])
    png = os.path.join(out, "convergence.png")
    plot(results, png)
    print(f"\nwrote {os.path.join(out, 'results.csv')} and {png}")
    if args.update_figure:
        shutil.copyfile(png, os.path.join(HERE, "convergence.png"))
        print(f"updated {os.path.join(HERE, 'convergence.png')}")
    print(f"total wall time {time.monotonic() - t_start:.1f} s")

    if problems:
        fail("observed order of accuracy is not 2:\n  " + "\n  ".join(problems))
    print(f"PASS: every observed order is within {EXPECTED_ORDER} +/- {TOLERANCE}")


if __name__ == "__main__":
    main()
