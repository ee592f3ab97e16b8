#!/usr/bin/env python3
"""Lattice Boltzmann checkpoints: 2N steps in one run equal N steps, checkpoint, restart, N steps, bit
for bit, on 1 rank and across rank counts (2 -> 3), for fp32 and fp16 storage, with an inlet, an
outlet, walls and an obstacle. A restart whose geometry changed is refused (exit 2); a run that
diverges stops with exit 3 naming the cell and keeps its earlier checkpoints."""
import os

import numpy as np

from common import Results, array, run, scratch

N = 40
ck = "checkpoints/checkpoint_%012d.h5"
JOBS = {
    "d2q9_fp32": """solver = "lbm"
[run]
end_step = 80
[lbm]
cells = [48, 20]
length = [0.48]
velocity = 1.0
reynolds = 60.0
reference_length = 0.06
lattice_velocity = 0.05
precision = "fp32"
magic = 0.05
ramp_time = 0.002
[lbm.boundary]
xlo = "inlet"
xlo_velocity = [1.5, 0.0]
xlo_profile = "parabolic"
xhi = "outlet"
ylo = "wall"
yhi = "wall"
[lbm.obstacles.cyl]
shape = "cylinder"
center = [0.12, 0.095]
radius = 0.03
[output]
format = "none"
""",
    "d3q19_fp16": """solver = "lbm"
[run]
end_step = 80
[lbm]
lattice = "D3Q19"
cells = [16, 12, 10]
length = [1.6]
velocity = 1.0
viscosity = 0.02
precision = "fp16"
[lbm.boundary]
ylo = "wall"
yhi = "moving_wall"
yhi_velocity = [1.0, 0.0, 0.3]
[lbm.obstacles.s]
shape = "sphere"
center = [0.8, 0.6, 0.5]
radius = 0.25
[output]
format = "none"
""",
}

r = Results()
for case, job in JOBS.items():
    d = scratch(job)
    rc, out = run(["run", "job.toml", "--set", "run.directory=ref", "--set", f"run.end_step={2 * N}"], d)
    r.check(rc == 0, f"{case}: reference run", out)
    if rc != 0:
        continue
    ref = array(os.path.join(d, "ref", ck % (2 * N)), "populations")
    r.check(np.count_nonzero(ref) > ref.size // 4, f"{case}: the flow developed (populations left their rest value)")
    for first, second in [(1, 1), (2, 3)]:
        name = f"r{first}_{second}"
        rc1, out1 = run(["run", "job.toml", "--set", f"run.directory={name}", "--set", f"run.end_step={N}"], d, ranks=first)
        rc2, out2 = run(["run", "job.toml", "--set", f"run.directory={name}", "--set", f"run.end_step={2 * N}",
                         "--restart", "auto"], d, ranks=second)
        ok = rc1 == 0 and rc2 == 0 and f"checkpoint_{N:012d}.h5" in out2
        r.check(ok, f"{case}: {first} rank(s) for N steps, then restart on {second}", out1 + out2)
        if ok:
            got = array(os.path.join(d, name, ck % (2 * N)), "populations")
            r.check(got.tobytes() == ref.tobytes(), f"{case}: bit-identical after restart {first} -> {second} ranks")
    # The geometry changed: the job differs from the checkpoint's, exit 2.
    key = "lbm.obstacles.cyl.radius=0.035" if "cyl" in job else "lbm.obstacles.s.radius=0.3"
    rc, out = run(["run", "job.toml", "--set", "run.directory=r1_1", "--set", key, "--set", f"run.end_step={3 * N}",
                   "--restart", "auto"], d)
    r.check(rc == 2 and key.split("=")[0] in out, f"{case}: changed obstacle refused with exit 2", out)

# Divergence: a body force accelerates a periodic box past lattice speed 0.5; exit 3 names the cell,
# and the checkpoints written before are still there and verify.
d = scratch("""solver = "lbm"
[run]
end_step = 400
health_every = 10
[lbm]
cells = [16, 16]
length = [1.0]
velocity = 1.0
viscosity = 0.01
force = [32.0, 0.0]
[checkpoint]
every_steps = 20
at_exit = false
[output]
format = "none"
""")
rc, out = run(["run", "job.toml"], d)
r.check(rc == 3 and "lattice speed above 0.5" in out and "cell (" in out, "divergence: exit 3 naming the cell", out)
cks = sorted(os.listdir(os.path.join(d, "job", "checkpoints"))) if os.path.isdir(os.path.join(d, "job", "checkpoints")) else []
r.check(len(cks) >= 1, "divergence: earlier checkpoints kept", str(cks))
if cks:
    rc, out = run(["inspect", os.path.join("job", "checkpoints", cks[-1])], d)
    r.check(rc == 0, "divergence: the newest kept checkpoint verifies", out)
r.finish()
