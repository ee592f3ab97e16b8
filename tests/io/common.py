"""Shared helpers for the checkpoint/output tests: run cumulus (optionally under mpirun) in a
scratch directory, read checkpoint arrays with h5py, and count results."""
import os
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy as np

BINARY = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else "build/cumulus"
SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MPIRUN = shutil.which("mpirun") or shutil.which("mpiexec")

# A small 2D heat job with a Gaussian (asymmetric, so a wrong split shows) and fixed walls.
JOB = """solver = "heat"
[run]
end_step = 40
progress_seconds = 100
[heat]
cells = [45, 31]
boundary = ["periodic", "fixed"]
fixed_value = 0.5
initial = "gaussian"
gaussian_center = [0.3, 0.6]
gaussian_width = 0.1
[output]
format = "none"
"""


def env():
    e = dict(os.environ)
    e.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="1",
             OMPI_MCA_rmaps_base_oversubscribe="1")
    return e


def command(args, ranks=1):
    base = [BINARY] + args
    if ranks > 1:
        base = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", str(ranks)] + base
    return base


def run(args, cwd, ranks=1, timeout=120, extra_env=None):
    e = env()
    if extra_env:
        e.update(extra_env)
    p = subprocess.run(command(args, ranks), cwd=cwd, capture_output=True, text=True, timeout=timeout, env=e)
    return p.returncode, p.stdout + p.stderr


def scratch(job=JOB):
    d = tempfile.mkdtemp(prefix="cumulus-io-")
    with open(os.path.join(d, "job.toml"), "w") as f:
        f.write(job)
    return d


def array(path, name="temperature"):
    with h5py.File(path, "r") as f:
        return f["arrays/" + name][...]


class Results:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, ok, what, detail=""):
        if ok:
            self.passed += 1
            print(f"ok    {what}")
        else:
            self.failed += 1
            print(f"FAIL  {what}\n{detail}")
        return ok

    def finish(self):
        print(f"{self.passed} passed, {self.failed} failed")
        sys.exit(1 if self.failed or not self.passed else 0)
