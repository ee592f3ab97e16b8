#!/usr/bin/env python3
"""ParaView itself opens the heat solver's output, in both formats, at 1 and 2 ranks: the number
of time steps, the time values, the array names, and the values (every cell at the last step)
equal the solver's own (its diagnostics times and its final checkpoint). Fails on any reader error
(' ERR| ' in ParaView's output) and runs under a kill timeout."""
import csv
import json
import os
import shutil
import subprocess

import numpy as np

from common import Results, array, run, scratch

PVPYTHON = shutil.which("pvpython") or "/usr/bin/pvpython"
HERE = os.path.dirname(os.path.abspath(__file__))
r = Results()

job = open(os.path.join(HERE, "..", "..", "configs", "heat.toml")).read()
d = scratch(
    """solver = "heat"
[run]
end_step = 30
progress_seconds = 100
[heat]
cells = [24, 17]
length = [1.2, 0.85]
boundary = ["periodic", "fixed"]
initial = "gaussian"
gaussian_center = [0.4, 0.5]
gaussian_width = 0.15
[output]
every_steps = 10
[diagnostics]
every_steps = 10
""")

for fmt, series in (("vtk", "pvd"), ("xdmf", "xmf")):
    for ranks in (1, 2):
        name = f"{fmt}{ranks}"
        rc, out = run(["run", "job.toml", f"--set=run.directory={name}", f"--set=run.name={name}",
                       f"--set=output.format={fmt}"], d, ranks=ranks)
        if not r.check(rc == 0, f"{fmt}, {ranks} rank(s): run", out):
            continue
        with open(os.path.join(d, name, "diagnostics.csv")) as f:
            solver_times = [float(row["time"]) for row in csv.DictReader(f)]
        solver_final = array(os.path.join(d, name, "checkpoints", "checkpoint_%012d.h5" % 30)).ravel()
        try:
            p = subprocess.run([PVPYTHON, os.path.join(HERE, "pv_probe.py"), os.path.join(d, name, f"{name}.{series}"),
                                "temperature"], capture_output=True, text=True, timeout=120)
            text = p.stdout + p.stderr
        except subprocess.TimeoutExpired as e:  # subprocess kills the child on timeout
            r.check(False, f"{fmt}, {ranks} rank(s): pvpython finished", str(e))
            continue
        r.check(p.returncode == 0 and " ERR| " not in text, f"{fmt}, {ranks} rank(s): ParaView read without errors",
                text[-3000:])
        probe = [line for line in text.splitlines() if line.startswith("PROBE ")]
        if not probe:
            r.check(False, f"{fmt}, {ranks} rank(s): probe output", text[-3000:])
            continue
        got = json.loads(probe[0][6:])
        r.check(len(got["times"]) == 4 and np.allclose(got["times"], solver_times, rtol=0, atol=1e-15),
                f"{fmt}, {ranks} rank(s): 4 time steps at the solver's times",
                f"ParaView {got['times']} vs solver {solver_times}")
        r.check(all(a == ["temperature"] for a in got["arrays"]), f"{fmt}, {ranks} rank(s): array names",
                str(got["arrays"]))
        values = np.array(got["values"])
        r.check(values.shape == solver_final.shape and values.tobytes() == solver_final.tobytes(),
                f"{fmt}, {ranks} rank(s): every cell value at the last step equals the solver's",
                f"dims {got['dims']}, {values.shape} vs {solver_final.shape}")

# A restarted run continues the same series: 20 steps, then a restart to 30, reads as one series
# of 4 distinct times, identical to the uninterrupted run's.
for fmt, series in (("vtk", "pvd"), ("xdmf", "xmf")):
    name = f"restart_{fmt}"
    base = ["run", "job.toml", f"--set=run.directory={name}", f"--set=run.name={name}", f"--set=output.format={fmt}"]
    rc1, out1 = run(base + ["--set=run.end_step=20"], d)
    rc2, out2 = run(base + ["--restart", "auto"], d)
    if not r.check(rc1 == 0 and rc2 == 0, f"{fmt}: run 20 steps, restart to 30", out1 + out2):
        continue
    p = subprocess.run([PVPYTHON, os.path.join(HERE, "pv_probe.py"), os.path.join(d, name, f"{name}.{series}"),
                        "temperature"], capture_output=True, text=True, timeout=120)
    probe = [line for line in p.stdout.splitlines() if line.startswith("PROBE ")]
    got = json.loads(probe[0][6:]) if probe else {"times": [], "values": []}
    with open(os.path.join(d, f"{fmt}1", "diagnostics.csv")) as f:
        straight = [float(row["time"]) for row in csv.DictReader(f)]
    r.check(got["times"] == straight and " ERR| " not in p.stdout + p.stderr,
            f"{fmt}: the restarted series has each time once", f"{got['times']} vs {straight}")
    final = array(os.path.join(d, f"{fmt}1", "checkpoints", "checkpoint_%012d.h5" % 30)).ravel()
    r.check(np.array(got["values"]).tobytes() == final.tobytes(), f"{fmt}: restarted series ends on the same values")

# The cubed sphere: a surface of quadrilaterals (one .vtu piece per rank; XDMF quadrilaterals), every
# cell's depth equal to the final checkpoint's, and the corners on the sphere of radius a.
sw = scratch("""solver = "shallow_water"
[run]
end_step = 6
progress_seconds = 100
[shallow_water]
case = "williamson2"
resolution = 8
[output]
every_steps = 3
""")
for fmt, series in (("vtk", "pvd"), ("xdmf", "xmf")):
    rc, out = run(["run", "job.toml", f"--set=run.directory={fmt}", f"--set=run.name={fmt}",
                   f"--set=output.format={fmt}"], sw, ranks=2)
    if not r.check(rc == 0, f"sphere {fmt}: run on 2 ranks", out):
        continue
    p = subprocess.run([PVPYTHON, os.path.join(HERE, "pv_probe.py"), os.path.join(sw, fmt, f"{fmt}.{series}"), "depth"],
                       capture_output=True, text=True, timeout=120)
    text = p.stdout + p.stderr
    probe = [line for line in text.splitlines() if line.startswith("PROBE ")]
    r.check(p.returncode == 0 and " ERR| " not in text and probe, f"sphere {fmt}: ParaView read without errors", text[-3000:])
    if not probe:
        continue
    got = json.loads(probe[0][6:])
    final = array(os.path.join(sw, fmt, "checkpoints", "checkpoint_%012d.h5" % 6), "depth").ravel()
    r.check(len(got["times"]) == 3 and got["dims"][:2] == [384, 4 * 384], f"sphere {fmt}: 3 steps of 384 quads",
            f"{got['times']} {got['dims']}")
    r.check(np.array(got["values"]).tobytes() == final.tobytes(), f"sphere {fmt}: every cell's depth equals the solver's")
    r.check({"height", "velocity", "vorticity", "topography"} <= set(got["arrays"][-1]), f"sphere {fmt}: arrays",
            str(got["arrays"][-1]))
shutil.rmtree(sw)

shutil.rmtree(d)
r.finish()
