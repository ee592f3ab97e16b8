#!/usr/bin/env python3
"""h5py (a reader that is not cumulus) finds the documented checkpoint layout (docs/checkpoints.md):
root attributes, /arrays/<name> as [ncomp, nz, ny, nx] with units, dtype and checksum, and the
checksum recomputed here from its documented definition. Also the XDMF step files' layout."""
import os
import shutil
import tomllib

import h5py
import numpy as np

from common import Results, run, scratch

r = Results()
d = scratch()
rc, out = run(["run", "job.toml", "--set=run.directory=a", "--set=output.format=xdmf"], d, ranks=2)
r.check(rc == 0, "run on 2 ranks", out)
path = os.path.join(d, "a", "checkpoints", "checkpoint_%012d.h5" % 40)

with h5py.File(path, "r") as f:
    a = f.attrs
    text = lambda k: a[k].decode() if isinstance(a[k], bytes) else str(a[k])  # noqa: E731
    r.check(text("format") == "cumulus-checkpoint" and int(a["format_version"]) == 1, "format attributes")
    ckpt_time = float(a["time"])
    r.check(text("solver") == "heat" and int(a["step"]) == 40 and ckpt_time > 0, "solver, step, time")
    r.check(int(a["nranks"]) == 2 and list(a["decomposition"]) in ([2, 1, 1], [1, 2, 1]), "rank count, decomposition",
            f"{a['nranks']} {list(a['decomposition'])}")
    job = tomllib.loads(text("job"))
    r.check(job["solver"] == "heat" and job["heat"]["cells"] == [45, 31] and job["run"]["end_step"] == 40,
            "the resolved job is stored and parses as TOML")
    r.check(len(text("git_commit")) > 0 and len(text("cumulus_version")) > 0, "build identity")
    ds = f["arrays/temperature"]
    r.check(ds.shape == (1, 1, 31, 45) and ds.dtype == np.float64, "temperature is [ncomp, nz, ny, nx] float64",
            str(ds.shape))
    da = ds.attrs
    r.check(da["units"].decode() == "K" and da["dtype"].decode() == "f64", "units and dtype attributes")
    r.check(da["checksum_algorithm"].decode() == "sum-splitmix64-v2", "checksum algorithm named")

    # The documented checksum: sum over elements (mod 2^64) of splitmix64(bits ^ index * 0x9E3779B97F4A7C15).
    def splitmix64(x):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))

    with np.errstate(over="ignore"):
        bits = ds[...].ravel().view(np.uint64)
        index = np.arange(bits.size, dtype=np.uint64)
        total = int(np.sum(splitmix64(bits ^ (index * np.uint64(0x9E3779B97F4A7C15))), dtype=np.uint64))
    r.check(total == int(da["checksum"]), "checksum recomputed from its definition matches",
            f"{total:016x} vs {int(da['checksum']):016x}")

step_file = os.path.join(d, "a", "output", "job_%09d.h5" % 40)
with h5py.File(step_file, "r") as f:
    r.check(f["temperature"].shape == (1, 31, 45) and float(f.attrs["time"]) == ckpt_time,
            "XDMF step file: temperature [nz, ny, nx] and its time")

shutil.rmtree(d)
r.finish()
