#!/usr/bin/python3
"""Smoke tests of the cumulus command line: info, check, keys, a tiny run, a numerical blow-up.

Usage: smoke.py CUMULUS [CASE_NAME_SUBSTRING ...]   (mpirun: $CUMULUS_MPIRUN, else the first on PATH)

Every command runs in a fresh temporary directory with a timeout. Standard library only.
"""
import math
import os
import re
import shutil
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from cli_common import Failure, base_env, mpirun_command, mpirun_path, run_cases, run_captured

HERE = os.path.dirname(os.path.abspath(__file__))
HEAT_TOML = os.path.normpath(os.path.join(HERE, "..", "..", "configs", "heat.toml"))
TIMEOUT_S = 60




def run(cmd, cwd, extra_env=None):
    """Runs cmd; returns (status, stdout, stderr)."""
    e = base_env()
    e.update(extra_env or {})
    status, out, err, timed_out = run_captured(cmd, cwd, e, TIMEOUT_S)
    if timed_out:
        raise Failure(f"timed out after {TIMEOUT_S} s: {' '.join(cmd)}")
    return status, out, err


def expect_status(cmd, status, want, out, err):
    if status != want:
        raise Failure(f"`{' '.join(cmd)}` exited {status}, expected {want}\nstdout: {out[-1500:]}\nstderr: {err[-1500:]}")


def read(path):
    with open(path, "r", errors="replace") as f:
        return f.read()


# ---- cases ------------------------------------------------------------------------------------
def info(cumulus, work):
    cmd = [cumulus, "info"]
    status, out, err = run(cmd, work)
    expect_status(cmd, status, 0, out, err)
    m = re.search(r"^backends built:\s+(.*)$", out, re.M)
    if not m or "host" not in m.group(1):
        raise Failure(f"no 'backends built: host ...' line:\n{out}")
    if not re.search(r"^CUDA devices:\s+\d+", out, re.M):
        raise Failure(f"no 'CUDA devices: N' line:\n{out}")
    if not re.search(r"^solvers:.*\bheat\b", out, re.M):
        raise Failure(f"no 'solvers: ... heat' line:\n{out}")
    return "backends built: " + m.group(1)


def check_default_job(cumulus, work):
    cmd = [cumulus, "check", HEAT_TOML]
    status, out, err = run(cmd, work)
    expect_status(cmd, status, 0, out, err)
    if "OK (heat, 1 rank(s))" not in out or not re.search(r"^cells = \[\d+, \d+", out, re.M):
        raise Failure(f"unexpected output:\n{out[:1500]}")
    if os.listdir(work):
        raise Failure(f"`cumulus check` wrote into the working directory: {os.listdir(work)}")
    return "OK, nothing written"


def keys(cumulus, work):
    cmd = [cumulus, "keys", "heat"]
    status, out, err = run(cmd, work)
    expect_status(cmd, status, 0, out, err)
    lines = out.strip().splitlines()
    if not lines or not lines[0].startswith("| key | type | default |"):
        raise Failure(f"not a Markdown table:\n{out[:500]}")
    rows = [l for l in lines[2:]]
    names = []
    for r in rows:
        m = re.match(r"^\| `([a-z0-9_.]+)` \|", r)
        if not m or r.count(" | ") < 4:
            raise Failure(f"malformed row: {r!r}")
        names.append(m.group(1))
    for k in ("solver", "heat.cells", "heat.dt", "run.end_step", "run.end_time", "run.walltime"):
        if k not in names:
            raise Failure(f"`cumulus keys heat` does not list {k}")
    if not re.search(r"^\| `heat\.cells` \| an array of integers \| \*\*required\*\* \|", out, re.M):
        raise Failure("heat.cells is not listed as a required array of integers")
    return f"{len(names)} keys"


def tiny_run(cumulus, work):
    shutil.copy(HEAT_TOML, os.path.join(work, "heat.toml"))
    cmd = [cumulus, "run", "heat.toml", "--backend", "host", "--set", "heat.cells=[16,16]", "run.end_time=0",
           "run.end_step=20", "diagnostics.every_time=0", "diagnostics.every_steps=5"]
    status, out, err = run(cmd, work, {"OMP_NUM_THREADS": "1"})
    expect_status(cmd, status, 0, out, err)
    rd = os.path.join(work, "heat")
    files = sorted(os.listdir(rd)) if os.path.isdir(rd) else []
    missing = [f for f in ("cumulus.log", "diagnostics.csv", "job.resolved.toml")
               if not os.path.isfile(os.path.join(rd, f))]
    if missing:
        raise Failure(f"run directory 'heat' lacks {missing} (it holds {files})")
    resolved = read(os.path.join(rd, "job.resolved.toml"))
    for text in ("cells = [16, 16]", "end_step = 20", 'backend = "host"', 'solver = "heat"'):
        if text not in resolved:
            raise Failure(f"job.resolved.toml lacks {text!r}:\n{resolved}")
    csv = read(os.path.join(rd, "diagnostics.csv")).strip().splitlines()
    if not csv or not csv[0].startswith("step,time,"):
        raise Failure(f"diagnostics.csv has no 'step,time,...' header: {csv[:1]}")
    steps = [int(r.split(",")[0]) for r in csv[1:]]
    if steps != [0, 5, 10, 15, 20]:
        raise Failure(f"diagnostics.csv rows at steps {steps}, expected [0, 5, 10, 15, 20]")
    for r in csv[1:]:
        if not all(math.isfinite(float(x)) for x in r.split(",")):
            raise Failure(f"non-finite diagnostics row: {r}")
    log = read(os.path.join(rd, "cumulus.log"))
    if not re.search(r"^done: 20 steps", log, re.M):
        raise Failure(f"the log has no 'done: 20 steps' line:\n{log[-1500:]}")
    # The resolved job is itself a valid job.
    cmd2 = [cumulus, "check", os.path.join("heat", "job.resolved.toml")]
    status, out, err = run(cmd2, work)
    expect_status(cmd2, status, 0, out, err)
    return f"exit 0, run directory holds {files}; 5 diagnostics rows; job.resolved.toml checks OK"


BLOW_UP_JOB = """# amplitude near the largest double: the first update overflows (-2 u + ...) to +-inf.
solver = "heat"

[run]
end_step = 20
health_every = 1

[heat]
cells = [16, 16]
amplitude = 1e308
modes = [2, 1]
"""


def first_overflow_cell(nx, ny, amplitude, mx, my):
    """The forward-Euler step of solvers/heat on a periodic [0,1]^2 grid with a sine mode, at cfl 0.5,
    in the same floating-point operations: the first cell (by x-fastest linear index) that becomes
    non-finite after step 1."""
    hx, hy = 1.0 / nx, 1.0 / ny
    wx, wy = 2 * math.pi * mx / 1.0, 2 * math.pi * my / 1.0
    u = [[(amplitude * math.exp(-0.0) * math.sin(wx * ((i + 0.5) * hx))) * math.sin(wy * ((j + 0.5) * hy))
          for j in range(ny)] for i in range(nx)]
    dt = 0.5 * (1.0 / (2.0 * 1.0 * (1.0 / (hx * hx) + 1.0 / (hy * hy))))
    cx, cy = dt / (hx * hx), dt / (hy * hy)
    for j in range(ny):
        for i in range(nx):
            c = u[i][j]
            lap = cx * (u[(i - 1) % nx][j] - 2 * c + u[(i + 1) % nx][j]) + cy * (
                u[i][(j - 1) % ny] - 2 * c + u[i][(j + 1) % ny])
            if not math.isfinite(c + lap):
                return (i, j, 0)
    return None


def blow_up(ranks):
    def case(cumulus, work):
        with open(os.path.join(work, "blow.toml"), "w") as f:
            f.write(BLOW_UP_JOB)
        cmd = [cumulus, "run", "blow.toml"]  # backend auto: the GPU path where there is one
        if ranks > 1:
            mpirun = mpirun_path()
            if not mpirun:
                return "SKIP: no mpirun on PATH"
            cmd = mpirun_command(mpirun, ranks, cmd)
        status, out, err = run(cmd, work, {"OMP_NUM_THREADS": "1"})
        expect_status(cmd, status, 3, out, err)
        cell = first_overflow_cell(16, 16, 1e308, 2, 1)
        assert cell == (1, 3, 0), cell  # i != j: a transposed index would show
        want = ("numerical blow-up: non-finite value (NaN or Inf) in field 'temperature' at cell (%d, %d, %d), step 1"
                % cell)
        if want not in err:
            raise Failure(f"stderr lacks {want!r}:\n{err[-1500:]}")
        if err.count("numerical blow-up") != 1:
            raise Failure(f"the blow-up is reported {err.count('numerical blow-up')} times, expected once:\n{err}")
        log = read(os.path.join(work, "blow", "cumulus.log"))
        if want not in log:
            raise Failure("the blow-up message is not in cumulus.log")
        return f"exit 3: {want}"
    return case


CASES = [
    ("info", info),
    ("check_default_job", check_default_job),
    ("keys_heat", keys),
    ("tiny_run", tiny_run),
    ("blow_up", blow_up(1)),
    ("blow_up_2_ranks", blow_up(2)),
]


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    cumulus = os.path.abspath(sys.argv[1])
    return run_cases(CASES, sys.argv[2:], "cumulus-smoke-", lambda fn, work: fn(cumulus, work))

if __name__ == "__main__":
    sys.exit(main())
