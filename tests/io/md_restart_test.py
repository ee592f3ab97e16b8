#!/usr/bin/env python3
"""Molecular dynamics checkpoints: 2N steps in one run equal N steps, checkpoint, restart, N steps,
bit for bit under a Langevin thermostat (positions, velocities, image counts, the thermostat's work,
compared atom by atom in id order: the random numbers are keyed by atom id and step), and for a
binary mixture under a Nose-Hoover chain (types, and the chain's state, which rank 0 writes and
every rank gets back), on 1 rank, from 2 ranks to 3 and, in a long box, from 1 to 4 (where a rank
reads atoms whose owners are not its neighbours), although the restart rebuilds the Verlet
list and redistributes the atoms at another step than the straight run did; the ParaView output is
one vertex per atom. The H5MD trajectory of a restarted run equals the straight run's, frame for
frame and bit for bit (no repeated frame at the restart), its particles in id order match the
checkpoint, and a trajectory file left unreadable or of the wrong shapes is set aside (*.damaged)
and a new one begun."""
import json
import os
import re
import shutil
import subprocess

import h5py
import numpy as np

from common import Results, array, run, scratch

N = 40
K = ["--set", "md.neighbor_build=kernels"]
ck = "checkpoints/checkpoint_%012d.h5"
r = Results()
d = scratch("""solver = "md"
[run]
end_step = 80
[md]
cells = [6]
temperature = 1.44
thermostat = "langevin"
thermostat_temperature = 2.0
langevin_damping = 0.2
[output]
format = "none"
""")
NHC = """solver = "md"
[run]
end_step = 80
[md]
cells = [6]
temperature = 1.8
types = 2
type_fractions = [0.75, 0.25]
masses = [1.0, 3.0]
thermostat = "nose_hoover"
thermostat_temperature = 1.2
nhc_damping = 0.1
[md.pairs.ab]
types = [1, 2]
epsilon = 1.3
sigma = 0.9
[output]
format = "none"
"""
with open(os.path.join(d, "nhc.toml"), "w") as f:
    f.write(NHC)


def by_id(run_dir, name):
    a = array(os.path.join(d, run_dir, ck % 80), name)
    if name in ("barostat_state", "thermostat_chain"):  # global numbers, not per atom
        return a
    ids = array(os.path.join(d, run_dir, ck % 80), "id").ravel()
    return a.reshape(a.shape[0], -1)[:, ids.argsort()]


for job, fields in (("job.toml", ("position", "velocity", "image", "thermostat_work")),
                    ("nhc.toml", ("position", "velocity", "image", "type"))):
    ref = "ref_" + job[:-5]
    rc, out = run(["run", job, "--set", f"run.directory={ref}"], d)
    r.check(rc == 0, f"{job}: reference run", out)
    # The last two: the list built by kernels (at one rank the atoms stay on the backend and are
    # re-sorted by bin at each build), against the reference's host-built list.
    for first, second, how in [(1, 1, []), (2, 3, []), (1, 1, K), (1, 2, K)]:
        name = f"rs{first}{second}{'k' if how else ''}_{job[:-5]}"
        rc1, out1 = run(["run", job, "--set", f"run.directory={name}", "--set", f"run.end_step={N}"] + how, d, ranks=first)
        rc2, out2 = run(["run", job, "--set", f"run.directory={name}", "--restart", "auto"] + how, d, ranks=second)
        ok = rc == 0 and rc1 == 0 and rc2 == 0 and f"checkpoint_{N:012d}.h5" in out2
        first = f"{first}{' (kernel-built list)' if how else ''}"
        r.check(ok, f"{job}: N steps on {first} rank(s), then restart to 2N on {second}", out1 + out2)
        if ok:
            for field in fields:
                a, b = by_id(ref, field), by_id(name, field)
                r.check(a.tobytes() == b.tobytes(), f"{job}: {field} bit-identical after restart {first} -> {second} ranks")
            if job == "nhc.toml":
                a = array(os.path.join(d, ref, ck % 80), "thermostat_chain")
                b = array(os.path.join(d, name, ck % 80), "thermostat_chain")
                r.check(a.tobytes() == b.tobytes() and abs(a).max() > 0,
                        f"{job}: the chain's state bit-identical after restart {first} -> {second} ranks", str(a))
    if job == "nhc.toml" and rc == 0:
        t = array(os.path.join(d, ref, ck % 80), "type").ravel()
        r.check((t == 1).sum() == 648 and (t == 2).sum() == 216, "nhc.toml: 75 % type 1, 25 % type 2, exactly",
                str(((t == 1).sum(), (t == 2).sum())))
# A long box split 4 x 1 x 1: after a restart from 1 rank each rank reads a run of the file whose
# atoms may belong to a rank that is not its neighbour (rank 3 is not rank 1's); the first migration
# reaches every rank (the time loop's, neighbours only, could not).
LONG = ["--set", "md.cells=[24,6,6]"]
rc, out = run(["run", "job.toml", "--set", "run.directory=ref_long"] + LONG, d)
rc1, out1 = run(["run", "job.toml", "--set", "run.directory=rs_long", "--set", f"run.end_step={N}"] + LONG, d, ranks=1)
rc2, out2 = run(["run", "job.toml", "--set", "run.directory=rs_long", "--restart", "auto"] + LONG, d, ranks=4)
ok = rc == 0 and rc1 == 0 and rc2 == 0
r.check(ok, "long box: N steps on 1 rank, then restart to 2N on 4 ranks (4 x 1 x 1, atoms beyond the neighbours)",
        out + out1 + out2)
if ok:
    for field in ("position", "velocity", "image", "thermostat_work"):
        r.check(by_id("ref_long", field).tobytes() == by_id("rs_long", field).tobytes(),
                f"long box: {field} bit-identical after restart 1 -> 4 ranks")
rc = 0
if rc == 0:
    img = array(os.path.join(d, "ref_job", ck % 80), "image")
    r.check(abs(img).max() >= 1, "atoms crossed the box (image counts moved)", str(abs(img).max()))
rc, out = run(["run", "job.toml", "--set", "run.directory=out", "--set", "run.end_step=4", "--set", "output.format=vtk",
               "--set", "output.every_steps=2"], d, ranks=2)
r.check(rc == 0, "run with vtk output", out)
if rc == 0:
    cells = 0
    for rank in (0, 1):
        piece = open(os.path.join(d, "out", "output", f"job_000000004_r{rank:05d}.vtu"), "rb").read()
        head = piece[:piece.index(b"<AppendedData")].decode()
        cells += int(re.search(r'NumberOfCells="(\d+)"', head).group(1))
        r.check('Name="velocity"' in head and 'Name="id"' in head, f"vtk: rank {rank}'s atoms carry velocity and id")
    r.check(cells == 4 * 216, "vtk: one vertex per atom over both pieces", str(cells))

# H5MD trajectories: a straight run on 2 ranks against 40 steps on 2 + restart on 3.
def traj(run_dir):
    with h5py.File(os.path.join(d, run_dir, "trajectory.h5md"), "r") as f:
        out = {k: f[k][()] for k in ("particles/all/position/value", "particles/all/position/step",
                                     "particles/all/velocity/value", "particles/all/image/value",
                                     "particles/all/image/time", "particles/all/species", "particles/all/id",
                                     "particles/all/box/edges/value", "particles/all/box/edges/step")}
        out["version"] = f["h5md"].attrs["version"]
        out["boundary"] = list(f["particles/all/box"].attrs["boundary"])
        out["creator"] = f["h5md/creator"].attrs["name"]
    return out


T = ["--set", "trajectory.every_steps=20"]
rc0, out0 = run(["run", "nhc.toml", "--set", "run.directory=tr_ref"] + T, d, ranks=2)
rc1, out1 = run(["run", "nhc.toml", "--set", "run.directory=tr_rs", "--set", f"run.end_step={N}"] + T, d, ranks=2)
rc2, out2 = run(["run", "nhc.toml", "--set", "run.directory=tr_rs", "--restart", "auto"] + T, d, ranks=3)
ok = rc0 == 0 and rc1 == 0 and rc2 == 0
r.check(ok, "trajectory runs (2 ranks; 2 then 3 after a restart)", out0 + out1 + out2)
if ok:
    a, b = traj("tr_ref"), traj("tr_rs")
    r.check(list(a["particles/all/position/step"]) == [0, 20, 40, 60, 80], "h5md: frames at steps 0, 20, 40, 60, 80",
            str(a["particles/all/position/step"]))
    r.check(list(a["version"]) == [1, 1] and a["boundary"] == [b"periodic"] * 3 and a["creator"] == b"cumulus",
            "h5md: version 1.1, periodic box, creator", str((a["version"], a["boundary"], a["creator"])))
    r.check(all(np.array_equal(a[k], b[k]) and a[k].tobytes() == b[k].tobytes() for k in a if k.startswith("particles")),
            "h5md: the restarted run's trajectory equals the straight run's, bit for bit")
    ids = array(os.path.join(d, "tr_ref", ck % 80), "id").ravel()
    pos = array(os.path.join(d, "tr_ref", ck % 80), "position").reshape(3, -1)[:, ids.argsort()].T
    r.check(a["particles/all/position/value"][-1].tobytes() == np.ascontiguousarray(pos).tobytes() and
            list(a["particles/all/id"]) == sorted(ids), "h5md: last frame = the checkpoint's positions, in id order")
    r.check(sorted(np.bincount(a["particles/all/species"])[1:]) == [216, 648], "h5md: species 1 and 2 as the lattice has them")
    edges = a["particles/all/box/edges/value"]
    r.check(list(a["particles/all/box/edges/step"]) == list(a["particles/all/position/step"]) and edges.shape == (5, 3)
            and all((row == edges[0]).all() for row in edges) and (edges[0] > 0).all(),
            "h5md: the box's edges, one row per frame (a fixed box: every row the same)", str(edges))
# A damaged trajectory (a run killed mid-write) is set aside on restart.
rc1, out1 = run(["run", "nhc.toml", "--set", "run.directory=tr_bad", "--set", f"run.end_step={N}"] + T, d, ranks=2)
path = os.path.join(d, "tr_bad", "trajectory.h5md")
if rc1 == 0:
    with open(path, "r+b") as f:
        f.truncate(3000)
rc2, out2 = run(["run", "nhc.toml", "--set", "run.directory=tr_bad", "--restart", "auto"] + T, d, ranks=2)
r.check(rc1 == 0 and rc2 == 0 and os.path.exists(path + ".damaged") and "could not be read back" in out2,
        "h5md: an unreadable trajectory is kept as .damaged and the restart goes on", out2[-2000:])
if rc2 == 0:
    steps = list(traj("tr_bad")["particles/all/position/step"])
    r.check(steps == [60, 80], "h5md: the new trajectory goes on from the first frame after the restart", str(steps))
# Hostile shapes (issue #20): a trajectory whose positions are not frames x N x 3 (here 1-D, which
# was read as dims[0] and dims[1] past the end) or whose times disagree with the frames (which sized
# the buffer the times are read into) is set aside the same way, before its shapes size anything.
for label, damage in (("positions of one dimension", "flat"), ("more times than frames", "times")):
    run_dir = "tr_shape_" + damage
    rc1, out1 = run(["run", "nhc.toml", "--set", f"run.directory={run_dir}", "--set", f"run.end_step={N}"] + T, d)
    path = os.path.join(d, run_dir, "trajectory.h5md")
    if rc1 == 0:
        with h5py.File(path, "r+") as f:
            g = f["particles/all/position"]
            if damage == "flat":
                del g["value"]
                g.create_dataset("value", data=np.zeros(7))
            else:
                del g["time"]
                g.create_dataset("time", data=np.zeros(1000))
    rc2, out2 = run(["run", "nhc.toml", "--set", f"run.directory={run_dir}", "--restart", "auto"] + T, d)
    r.check(rc1 == 0 and rc2 == 0 and os.path.exists(path + ".damaged") and "could not be read back" in out2,
            "h5md: a trajectory with " + label + " is kept as .damaged and the restart goes on", out2[-2000:])

# Charges with the Ewald sum and exclusions (a data file of atom_style full: 512 ions of charge
# +-1, every two along x bonded, their Coulomb excluded with the k-space correction, their LJ at
# half strength): straight against N steps, checkpoint, restart, N steps, 1 -> 1 and 2 -> 3 ranks.
# The charges and special partners come back from the checkpoint with their atoms.
m, a = 8, 1.25
with open(os.path.join(d, "ions.data"), "w") as f:
    f.write(f"ions\n\n{m ** 3} atoms\n2 atom types\n{m ** 3 // 2} bonds\n1 bond types\n\n" +
            "".join(f"0 {m * a!r} {x}lo {x}hi\n" for x in "xyz") + "\nMasses\n\n1 1\n2 1.5\n\nAtoms # full\n\n")
    k = 0
    for z in range(m):
        for y in range(m):
            for x in range(m):
                pos = (x + y + z) % 2 == 0
                f.write(f"{k + 1} {k // 2 + 1} {1 if pos else 2} {1.0 if pos else -1.0} {x * a!r} {y * a!r} {z * a!r}\n")
                k += 1
    f.write("\nBonds\n\n" + "".join(f"{b + 1} 1 {2 * b + 1} {2 * b + 2}\n" for b in range(k // 2)))
with open(os.path.join(d, "ewald.toml"), "w") as f:
    f.write("""solver = "md"
[run]
end_step = 80
[md]
data_file = "ions.data"
temperature = 3.0
dt = 0.002
pair_style = "lj/cut/coul/long"
kspace_style = "ewald"
kspace_tolerance = 1e-3
special_lj = [0.5, 0.0, 0.0]
[output]
format = "none"
""")
# The same with PME (kspace_style = "pme" through --set): its grid is made anew on the restarting
# ranks, split their way, and must give the same bits.
for style in ("ewald", "pme"):
    ref = f"ref_{style}"
    rc, out = run(["run", "ewald.toml", "--set", f"run.directory={ref}", "--set", f"md.kspace_style={style}"], d)
    r.check(rc == 0, f"{style}: reference run", out)
    for first, second in ((1, 1), (2, 3)):
        name = f"rs{first}{second}_{style}"
        rc1, out1 = run(["run", "ewald.toml", "--set", f"run.directory={name}", "--set", f"run.end_step={N}",
                         "--set", f"md.kspace_style={style}"], d, ranks=first)
        rc2, out2 = run(["run", "ewald.toml", "--set", f"run.directory={name}", "--set", f"md.kspace_style={style}",
                         "--restart", "auto"], d, ranks=second)
        ok = rc == 0 and rc1 == 0 and rc2 == 0
        r.check(ok, f"{style}: N steps on {first} rank(s), then restart to 2N on {second}", out1 + out2)
        if ok:
            for field in ("position", "velocity", "image", "charge", "molecule", "special"):
                r.check(by_id(ref, field).tobytes() == by_id(name, field).tobytes(),
                        f"{style}: {field} bit-identical after restart {first} -> {second} ranks")

# Molecules with harmonic bonds and angles (bent triatomics, LJ on the heavy atoms only, some
# straddling the periodic boundary): every atom's bonded terms (their partners' ids and types)
# come back from the checkpoint with it, and the partners are found again among the new ranks'
# ghosts; 1 -> 1 and 2 -> 3 ranks (PME's grid 18^3: at least 6 planes per rank at 3).
m, a = 6, 1.5
# (plain floats: numpy 2 writes a numpy scalar's repr as np.float64(...), which no data file reads)
s, c = float(0.5 * np.sin(np.radians(52.26))), float(0.5 * np.cos(np.radians(52.26)))
n = m ** 3
with open(os.path.join(d, "molecules.data"), "w") as f:
    f.write(f"molecules\n\n{3 * n} atoms\n2 atom types\n{2 * n} bonds\n1 bond types\n{n} angles\n1 angle types\n\n" +
            "".join(f"0 {m * a!r} {x}lo {x}hi\n" for x in "xyz") +
            "\nMasses\n\n1 1\n2 0.25\n\nBond Coeffs\n\n1 200 0.5\n\nAngle Coeffs\n\n1 50 104.52\n\nAtoms # full\n\n")
    for k in range(n):
        x, y, z = (k % m) * a + 0.3, (k // m % m) * a + 0.2, (k // (m * m)) * a + 0.1
        f.write(f"{3 * k + 1} {k + 1} 1 -0.8 {x!r} {y!r} {z!r}\n{3 * k + 2} {k + 1} 2 0.4 {x + s!r} {y + c!r} {z + 0.05!r}\n"
                f"{3 * k + 3} {k + 1} 2 0.4 {x - s!r} {y + c!r} {z - 0.05!r}\n")
    f.write("\nBonds\n\n" + "".join(f"{2 * k + 1} 1 {3 * k + 1} {3 * k + 2}\n{2 * k + 2} 1 {3 * k + 1} {3 * k + 3}\n" for k in range(n)))
    f.write("\nAngles\n\n" + "".join(f"{k + 1} 1 {3 * k + 2} {3 * k + 1} {3 * k + 3}\n" for k in range(n)))
with open(os.path.join(d, "molecules.toml"), "w") as f:
    f.write("""solver = "md"
[run]
end_step = 80
[md]
data_file = "molecules.data"
temperature = 1.0
dt = 0.002
pair_style = "lj/cut/coul/long"
kspace_style = "pme"
kspace_tolerance = 1e-3
pme_grid = [18]
cutoff = 2.5
bond_style = "harmonic"
angle_style = "harmonic"
[md.pairs.oh]
types = [1, 2]
epsilon = 0.0
sigma = 1.0
[md.pairs.hh]
types = [2, 2]
epsilon = 0.0
sigma = 1.0
[output]
format = "none"
""")
# The same molecules rigid (SETTLE; bonds and angles then no force terms): the molecules' atoms come
# back with the atoms.
# And at constant pressure (C-rescale: the box and the barostat's work come back from the
# checkpoint, the decomposition is made for that box).
NPT = ["--set", "md.thermostat=langevin", "--set", "md.thermostat_temperature=1.2", "--set", "md.langevin_damping=0.5",
       "--set", "md.barostat=c_rescale", "--set", "md.pressure=2.0", "--set", "md.compressibility=0.05", "--set",
       "md.barostat_damping=0.1"]
RIGID = ["--set", "md.bond_style=none", "--set", "md.angle_style=none", "--set", "md.constrain_bonds=[1]",
         "--set", "md.constrain_angles=[1]"]
# The bonds alone constrained (SHAKE/RATTLE; the angles harmonic), at constant pressure: the
# clusters' atoms come back with the atoms.
SHAKE = ["--set", "md.bond_style=none", "--set", "md.constrain_bonds=[1]"]
for label, tag, extra, fields in (
        ("molecules", "mol", [], ("position", "velocity", "image", "bond_atom", "bond_type", "angle_atom", "angle_type")),
        ("rigid molecules", "rig", RIGID, ("position", "velocity", "image", "settle_atom", "settle_type")),
        ("rigid molecules at constant pressure", "npt", RIGID + NPT, ("position", "velocity", "image", "barostat_state")),
        ("SHAKE clusters at constant pressure", "shk", SHAKE + NPT,
         ("position", "velocity", "image", "shake_atom", "shake_type", "barostat_state"))):
    rc, out = run(["run", "molecules.toml", "--set", f"run.directory=ref_{tag}"] + extra, d)
    r.check(rc == 0, f"{label}: reference run", out)
    for first, second in ((1, 1), (2, 3)):
        name = f"rs{first}{second}_{tag}"
        rc1, out1 = run(["run", "molecules.toml", "--set", f"run.directory={name}", "--set", f"run.end_step={N}"] + extra, d,
                        ranks=first)
        rc2, out2 = run(["run", "molecules.toml", "--set", f"run.directory={name}", "--restart", "auto"] + extra, d, ranks=second)
        ok = rc == 0 and rc1 == 0 and rc2 == 0
        r.check(ok, f"{label}: N steps on {first} rank(s), then restart to 2N on {second}", out1 + out2)
        if ok:
            for field in fields:
                r.check(by_id(f"ref_{tag}", field).tobytes() == by_id(name, field).tobytes(),
                        f"{label}: {field} bit-identical after restart {first} -> {second} ranks")
# Molecules in the trajectory: H5MD's /connectivity/bonds (particle indices) and trajectory.xmf,
# which ParaView opens: its times, the atoms as vertices and the bonds as lines, and the last
# frame's positions equal to the H5MD file's, bit for bit.
PVPYTHON = shutil.which("pvpython") or "/usr/bin/pvpython"
rc, out = run(["run", "molecules.toml", "--set", "run.directory=traj_mol", "--set", "trajectory.every_steps=20"] + RIGID, d,
              ranks=2)
if r.check(rc == 0, "rigid molecules: a run writing its trajectory", out):
    h5path = os.path.join(d, "traj_mol", "trajectory.h5md")
    with h5py.File(h5path, "r") as f:
        bonds = f["connectivity/bonds"][()]
        times = list(f["particles/all/position/time"][()])
        last = f["particles/all/position/value"][-1]
        ids = f["particles/all/id"][()]
        group = f[f["connectivity/bonds"].attrs["particles_group"]].name
    pairs = {(int(ids[a]), int(ids[b])) for a, b in bonds}
    want = {(3 * k, 3 * k + j) for k in range(n) for j in (1, 2)}
    r.check(bonds.shape == (2 * n, 2) and pairs == want and group == "/particles/all",
            "h5md: /connectivity/bonds holds every O-H bond (particle indices; particles_group /particles/all)",
            str((bonds.shape, group)))
    try:
        p = subprocess.run([PVPYTHON, os.path.join(os.path.dirname(os.path.abspath(__file__)), "pv_trajectory.py"),
                            os.path.join(d, "traj_mol", "trajectory.xmf")], capture_output=True, text=True, timeout=120)
        text = p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        text = str(e)
        p = None
    # The XDMF reader's one notice for hyperslab geometry (it cannot cache it) is not an error in
    # the data; any other ' ERR| ' is.
    errors = [line for line in text.splitlines() if " ERR| " in line and "no caching possible" not in line]
    probe = [line for line in text.splitlines() if line.startswith("PROBE ")]
    ok = p is not None and p.returncode == 0 and not errors and probe
    if r.check(ok, "paraview: trajectory.xmf opens without errors", text[-3000:]):
        got = json.loads(probe[0][6:])
        atoms, lines = got["blocks"][0], got["blocks"][1]
        r.check(np.allclose(got["times"], times, rtol=0, atol=1e-15), "paraview: the trajectory's times",
                f"{got['times']} vs {times}")
        r.check(atoms["points"] == 3 * n and atoms["cells"] == 3 * n and lines["cells"] == 2 * n and
                atoms["arrays"] == ["species", "velocity"], "paraview: atoms as vertices, the bonds as lines, species and velocity",
                str({k: v for k, v in atoms.items() if k != "xyz"}) + str({k: v for k, v in lines.items() if k != "xyz"}))
        r.check(np.array(atoms["xyz"]).tobytes() == np.ascontiguousarray(last).ravel().tobytes(),
                "paraview: the last frame's positions equal the H5MD file's")



def kept_until(run_dir, step, what):
    """A run that failed at `step`, checkpointing every 5 steps: the last checkpoint before the failure
    is the last one kept (none written after it); returns its path, or None."""
    kept = sorted(os.listdir(os.path.join(d, run_dir, "checkpoints")))
    last = (step - 1) // 5 * 5
    ok = r.check(kept and kept[-1] == f"checkpoint_{last:012d}.h5", f"{what}: the last good checkpoint kept, none after the failure",
                 str(kept))
    return os.path.join(d, run_dir, "checkpoints", kept[-1]) if ok else None


# SETTLE failing in a run (a time step far too long for the motion): exit 3 naming the molecule's
# oxygen and the step, the checkpoints before it kept and readable, none written after it.
rc, out = run(["run", "molecules.toml", "--set", "run.directory=settle_fail", "--set", "md.dt=0.05", "--set",
               "checkpoint.every_steps=5", "--set", "run.end_step=200"] + RIGID, d, ranks=2)
m = re.search(r"SETTLE found no rigid placement for the molecule of oxygen (\d+) \(its data-file id\) at step (\d+)", out)
r.check(rc == 3 and m is not None, "rigid molecules: SETTLE failing exits 3 naming the oxygen and the step", out[-1500:])
if m:
    path = kept_until("settle_fail", int(m.group(2)), "rigid molecules")
    if path:
        r.check(np.isfinite(array(path, "position")).all(), "rigid molecules: the kept checkpoint reads back, finite")
# SHAKE failing likewise: exit 3 naming the cluster's first atom and the step.
rc, out = run(["run", "molecules.toml", "--set", "run.directory=shake_fail", "--set", "md.dt=0.05", "--set",
               "run.end_step=200"] + SHAKE, d, ranks=2)
m = re.search(r"SHAKE did not converge for the cluster of atom (\d+) \(its data-file id\) at step (\d+)", out)
r.check(rc == 3 and m is not None, "SHAKE clusters: not converging exits 3 naming the cluster's atom and the step", out[-1500:])
# PME's atoms beyond the grid's reach (the list never rebuilt, so no atom migrates: one drifts out of
# its rank's block and the grid's ghost layers): exit 1 naming the step. The count is read a step
# late (solvers/md/step_checks.hpp), and the step's interpolation skips such an atom instead of
# reading outside the grid (a sanitizer run would see that read); the checkpoints before it kept,
# none after.
rc, out = run(["run", "molecules.toml", "--set", "run.directory=pme_outside", "--set", "md.neighbor_every=100000", "--set",
               "md.temperature=10", "--set", "run.end_step=400", "--set", "checkpoint.every_steps=5"], d, ranks=2)
m = re.search(r"PME: \d+ atom\(s\) at step (\d+) lie farther outside their rank's block", out)
r.check(rc == 1 and m is not None, "PME: an atom beyond the grid's reach exits 1 naming the step", out[-1500:])
if m:
    kept_until("pme_outside", int(m.group(1)), "PME")
# A bonded partner beyond the ghosts (the harmonic molecules blown apart by a step far too long), at
# 3 ranks: exit 3 naming the atom and the step (the list build's columns are resolved on the backend
# and read back together, bonded.cpp).
rc, out = run(["run", "molecules.toml", "--set", "run.directory=bonded_apart", "--set", "md.dt=0.02", "--set",
               "md.temperature=5", "--set", "run.end_step=300"], d, ranks=3)
m = re.search(r"atom (\d+) \(its data-file id\)'s bonded partner is not within the cutoff \+ skin of its rank's block at step "
              r"(\d+)", out)
r.check(rc == 3 and m is not None, "bonded: a partner beyond the ghosts exits 3 naming the atom and the step", out[-1500:])
r.finish()
