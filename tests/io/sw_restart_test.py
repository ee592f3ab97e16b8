#!/usr/bin/env python3
"""Shallow-water checkpoints and output: 2N steps in one run equal N steps, checkpoint, restart, N
steps, bit for bit, on 1 rank and across rank counts (2 -> 3, tiles 2 x 1); a restart with a
different resolution is refused (exit 2); a blow-up stops with exit 3 naming the panel, cell and
position, and keeps its earlier checkpoints; the ParaView output is a series of quad surfaces and
the XDMF output names quadrilaterals with the corners beside them."""
import os
import re

import h5py
import numpy as np

from common import Results, array, run, scratch

N = 10
ck = "checkpoints/checkpoint_%012d.h5"
JOB = """solver = "shallow_water"
[run]
end_step = 20
[shallow_water]
case = "williamson6"
resolution = 16
tiles = [2, 1]
[output]
format = "none"
"""

r = Results()
d = scratch(JOB)
rc, out = run(["run", "job.toml", "--set", "run.directory=ref", "--set", f"run.end_step={2 * N}"], d)
r.check(rc == 0, "reference run", out)
if rc == 0:
    ref = {k: array(os.path.join(d, "ref", ck % (2 * N)), k) for k in ("depth", "velocity")}
    for first, second in [(1, 1), (2, 3)]:
        name = f"r{first}_{second}"
        rc1, out1 = run(["run", "job.toml", "--set", f"run.directory={name}", "--set", f"run.end_step={N}"], d, ranks=first)
        rc2, out2 = run(["run", "job.toml", "--set", f"run.directory={name}", "--set", f"run.end_step={2 * N}",
                         "--restart", "auto"], d, ranks=second)
        ok = rc1 == 0 and rc2 == 0 and f"checkpoint_{N:012d}.h5" in out2
        r.check(ok, f"{first} rank(s) for N steps, then restart on {second}", out1 + out2)
        if ok:
            for k, v in ref.items():
                got = array(os.path.join(d, name, ck % (2 * N)), k)
                r.check(got.tobytes() == v.tobytes(), f"{k} bit-identical after restart {first} -> {second} ranks")
    rc, out = run(["run", "job.toml", "--set", "run.directory=r1_1", "--set", "shallow_water.resolution=24",
                   "--set", f"run.end_step={3 * N}", "--restart", "auto"], d)
    r.check(rc == 2 and "shallow_water.resolution" in out, "changed resolution refused with exit 2", out)

# Blow-up: a time step far beyond the gravity-wave limit cannot be given (exit 2); a hyperviscosity
# time that is too short for the step either. A run that blows up (dt just under the CFL check,
# no hyperviscosity, a jet that steepens) stops with exit 3 naming where.
rc, out = run(["run", "job.toml", "--set", "shallow_water.dt=20000"], d)
r.check(rc == 2 and "shallow_water.dt" in out and "CFL" in out, "unstable dt refused with exit 2", out)
d2 = scratch("""solver = "shallow_water"
[run]
end_time = 8640000.0
health_every = 20
[shallow_water]
case = "williamson6"
resolution = 16
cfl = 1.2
hyperviscosity_time = 0.0
[checkpoint]
every_steps = 100
at_exit = false
[output]
format = "none"
""")
rc, out = run(["run", "job.toml"], d2)
r.check(rc == 3 and re.search(r"panel \d cell \(\d+, \d+\), longitude", out) is not None, "blow-up: exit 3 naming the cell", out)
cks = sorted(os.listdir(os.path.join(d2, "job", "checkpoints"))) if os.path.isdir(os.path.join(d2, "job", "checkpoints")) else []
r.check(len(cks) >= 1, "blow-up: earlier checkpoints kept", str(cks))
if cks:
    rc, out = run(["inspect", os.path.join("job", "checkpoints", cks[-1])], d2)
    r.check(rc == 0, "blow-up: the newest kept checkpoint verifies", out)

# Output: vtk (a .pvd of .pvtu of quads) and xdmf (quadrilaterals with corners), on 2 ranks.
for fmt in ("vtk", "xdmf"):
    rc, out = run(["run", "job.toml", "--set", f"run.directory=out_{fmt}", "--set", "run.end_step=4",
                   "--set", f"output.format={fmt}", "--set", "output.every_steps=2"], d, ranks=2)
    r.check(rc == 0, f"{fmt}: run with output", out)
    if rc != 0:
        continue
    od = os.path.join(d, f"out_{fmt}")
    if fmt == "vtk":
        pvd = open(os.path.join(od, "job.pvd")).read()
        r.check(pvd.count(".pvtu") == 3, "vtk: the series lists 3 .pvtu steps", pvd)
        piece = open(os.path.join(od, "output", "job_000000004_r00001.vtu"), "rb").read()
        head = piece[:piece.index(b"<AppendedData")].decode()
        cells = int(re.search(r'NumberOfCells="(\d+)"', head).group(1))
        r.check(cells == 6 * 16 * 16 // 2, "vtk: rank 1's piece holds half the cells", head[:400])
        for name in ("height", "velocity", "vorticity", "topography"):
            r.check(f'Name="{name}"' in head, f"vtk: {name} in the piece")
    else:
        xmf = open(os.path.join(od, "job.xmf")).read()
        r.check('TopologyType="Quadrilateral"' in xmf and 'GeometryType="XYZ"' in xmf, "xdmf: quadrilaterals", xmf[:600])
        with h5py.File(os.path.join(od, "output", "job_000000004.h5")) as f:
            corners = f["corners"][...]
            radius = np.linalg.norm(corners, axis=1)
            r.check(np.allclose(radius, 6.37122e6, rtol=1e-14), "xdmf: corners on the sphere")
            area = f["cell_area"][...]
            r.check(abs(area.sum() / (4 * np.pi * 6.37122e6 ** 2) - 1) < 1e-13, "xdmf: cell areas sum to 4 pi a^2",
                    str(area.sum()))
            r.check(f["velocity"].shape == (6 * 256, 3), "xdmf: velocity as 3D vectors per cell")
r.finish()
