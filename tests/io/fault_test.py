#!/usr/bin/env python3
"""Checkpoints never lose work: the writer SIGKILLed at each phase of a checkpoint write (a test
hook pauses it there), then --restart auto resumes from the previous good checkpoint and the
result is bit-identical to an uninterrupted run; truncated, bit-flipped and incomplete
checkpoints are detected, reported by name and skipped; a failed write stops the run with a clear
error and leaves the previous checkpoint intact."""
import os
import shutil
import signal
import subprocess
import time

import h5py
import numpy as np

from common import Results, array, command, env, run, scratch

r = Results()
d = scratch()
ck = "checkpoints/checkpoint_%012d.h5"
cadence = ["--set", "checkpoint.every_steps=10", "--set", "checkpoint.keep=3"]

rc, out = run(["run", "job.toml", "--set", "run.directory=ref"] + cadence, d)
r.check(rc == 0, "reference run", out)
ref = array(os.path.join(d, "ref", ck % 40))

for ranks in (1, 2):
    for phase in ("data", "verify", "rename", "prune"):
        name = f"kill_{phase}_{ranks}"
        e = env()
        e["CUMULUS_TEST_PAUSE_CHECKPOINT"] = phase
        # The pause hook fires at the first checkpoint (step 10); a first checkpoint at step 10 must exist
        # before it, so run 10 steps cleanly first and pause in the write at step 20.
        rc, out = run(["run", "job.toml", f"--set=run.directory={name}", "--set", "run.end_step=10"] + cadence, d,
                      ranks=ranks)
        ok = rc == 0
        p = subprocess.Popen(command(["run", "job.toml", f"--set=run.directory={name}", "--restart", "auto"] + cadence,
                                     ranks), cwd=d, env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             start_new_session=True)
        marker = os.path.join(d, name, ck % 20 + ".tmp.paused-" + phase)
        deadline = time.time() + 60
        while time.time() < deadline and not os.path.exists(marker) and p.poll() is None:
            time.sleep(0.05)
        reached = os.path.exists(marker)
        os.killpg(p.pid, signal.SIGKILL)  # the whole process group: mpirun and every rank
        p.wait(timeout=30)
        r.check(ok and reached, f"{ranks} rank(s): writer paused in phase '{phase}' and was killed",
                p.stdout.read().decode(errors="replace"))
        rc, out = run(["run", "job.toml", f"--set=run.directory={name}", "--restart", "auto"] + cadence, d, ranks=ranks)
        # Before the rename the new checkpoint does not exist; after it, it is complete and verified.
        resumed_from = 20 if phase == "prune" else 10
        r.check(rc == 0 and f"restarted from {name}/{ck % resumed_from}" in out,
                f"{ranks} rank(s), killed in '{phase}': resumed from step {resumed_from}", out)
        if rc == 0:
            got = array(os.path.join(d, name, ck % 40))
            r.check(got.tobytes() == ref.tobytes(), f"{ranks} rank(s), killed in '{phase}': bit-identical result")

# Damaged checkpoints: each reported by name and skipped; the newest good one is used.
def damaged_case(label, damage):
    name = "damaged_" + label
    rc, out = run(["run", "job.toml", f"--set=run.directory={name}", "--set", "run.end_step=20"] + cadence, d)
    newest = os.path.join(d, name, ck % 20)
    damage(newest)
    rc, out = run(["run", "job.toml", f"--set=run.directory={name}", "--restart", "auto"] + cadence, d)
    ok = (rc == 0 and f"skipping damaged checkpoint {name}/{ck % 20}" in out
          and f"restarted from {name}/{ck % 10}" in out)
    r.check(ok, f"{label} checkpoint detected, reported and skipped", out)
    if rc == 0:
        r.check(array(os.path.join(d, name, ck % 40)).tobytes() == ref.tobytes(), f"{label}: bit-identical result")


def truncate(path):
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.truncate(size // 2)


def flip_bytes(path):
    with h5py.File(path, "r") as f:
        offset = f["arrays/temperature"].id.get_offset()
    with open(path, "r+b") as f:
        f.seek(offset + 1000)
        b = f.read(4)
        f.seek(offset + 1000)
        f.write(bytes(x ^ 0x5A for x in b))


def drop_dataset(path):
    with h5py.File(path, "r+") as f:
        del f["arrays/temperature"]


damaged_case("truncated", truncate)
damaged_case("bit-flipped", flip_bytes)
damaged_case("incomplete", drop_dataset)

# A damaged file named explicitly is refused (exit 2), not silently replaced by another.
truncate(os.path.join(d, "damaged_truncated", ck % 20))
rc, out = run(["run", "job.toml", "--set=run.directory=damaged_truncated", "--restart",
               os.path.join("damaged_truncated", ck % 20)], d)
r.check(rc == 2 and "cannot open" in out, "an explicitly named damaged checkpoint is refused with exit 2", out)

# A write that fails (here: the temporary name is taken by a directory that cannot be removed)
# stops the run with a clear error; the previous checkpoint stays intact and usable.
name = "write_failure"
rc, out = run(["run", "job.toml", f"--set=run.directory={name}", "--set", "run.end_step=10"] + cadence, d)
block = os.path.join(d, name, ck % 20 + ".tmp")
os.makedirs(os.path.join(block, "in-the-way"))
before = open(os.path.join(d, name, ck % 10), "rb").read()
rc, out = run(["run", "job.toml", f"--set=run.directory={name}", "--restart", "auto"] + cadence, d)
r.check(rc == 1 and "cannot create" in out and ck % 20 in out, "failed checkpoint write stops the run with exit 1", out)
r.check(open(os.path.join(d, name, ck % 10), "rb").read() == before, "previous checkpoint untouched after the failure")
shutil.rmtree(block)
rc, out = run(["run", "job.toml", f"--set=run.directory={name}", "--restart", "auto"] + cadence, d)
r.check(rc == 0 and array(os.path.join(d, name, ck % 40)).tobytes() == ref.tobytes(),
        "after the failure, restart from the previous checkpoint is bit-identical", out)

shutil.rmtree(d)
r.finish()
