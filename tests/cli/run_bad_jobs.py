#!/usr/bin/python3
"""Bad input must be rejected with exit status 2, a message that names the problem, and no trace on disk.

Usage: run_bad_jobs.py CUMULUS [CASE_NAME_SUBSTRING ...]   (mpirun: $CUMULUS_MPIRUN, else the first on PATH)

Every case runs `cumulus run JOB` (or `check`) in a fresh temporary working directory and asserts:
  * exit status 2 (from mpirun too, for the cases with several ranks);
  * every `expect` substring, and at least one `expect-any` substring when given, in stdout+stderr;
  * the run did not start ("run directory:" is never printed);
  * the working directory is byte-for-byte unchanged: no run directory appears where there was
    none, and in every other case a pre-existing run directory (a sentinel file, an old log, an old
    diagnostics.csv, a nested folder) keeps the same listing and the same SHA-256 of every file.

Cases come from tests/cli/bad_jobs/*.toml, whose leading comment lines hold directives:
  # expect: TEXT          a substring the output must contain (first line; may repeat)
  # expect-any: TEXT      at least one of the expect-any lines must match (optional)
  # args: ARGS            extra command-line arguments (shell-quoted)
  # ranks: N              run under mpirun with N ranks (default: 1, no mpirun)
  # command: run|check    the subcommand (default: run)
  # requires: no-cuda-device   skipped when `cumulus info` reports a CUDA device
  # with: FILE            copy bad_jobs/inputs/FILE beside the job (an input the job names; may repeat)
Files that cannot carry a comment (empty, whitespace only, binary, a directory, a FIFO, a missing
file) are the GENERATED cases below. Standard library only; every subprocess has a timeout.
"""
import concurrent.futures
import hashlib
import os
import random
import re
import shlex
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from cli_common import base_env, mpirun_command, mpirun_path, run_captured

HERE = os.path.dirname(os.path.abspath(__file__))
BAD_JOBS = os.path.join(HERE, "bad_jobs")
TIMEOUT_S = 60
DIRECTIVE = re.compile(r"^#\s*(expect|expect-any|args|ranks|command|requires|with):\s?(.*?)\s*$")


class Case:
    def __init__(self, name, job, expect, expect_any=(), args=(), ranks=1, command="run", requires=(),
                 make=None, source=None):
        self.name = name
        self.job = job  # the job path given on the command line, relative to the working directory
        self.expect = list(expect)
        self.expect_any = list(expect_any)
        self.args = list(args)
        self.ranks = ranks
        self.command = command
        self.requires = list(requires)
        self.make = make  # make(workdir): creates the job file (or whatever stands in its place)
        self.source = source


def file_case(path):
    name = os.path.splitext(os.path.basename(path))[0]
    with open(path, "rb") as f:
        data = f.read()
    d = {"expect": [], "expect-any": [], "args": [], "ranks": 1, "command": "run", "requires": [], "with": []}
    lines = data.split(b"\n")
    if not lines or not lines[0].startswith(b"# expect:"):
        raise SystemExit(f"{path}: the first line must be '# expect: ...'")
    for raw in lines:
        if not raw.startswith(b"#"):
            break
        m = DIRECTIVE.match(raw.decode("utf-8"))
        if not m:
            continue
        key, value = m.group(1), m.group(2)
        if key in ("expect", "expect-any", "requires", "with"):
            if not value:
                raise SystemExit(f"{path}: empty '{key}:' directive")
            d[key].append(value)
        elif key == "args":
            d["args"] += shlex.split(value)
        elif key == "ranks":
            d["ranks"] = int(value)
        elif key == "command":
            d["command"] = value
    base = os.path.basename(path)

    def make(workdir, data=data, base=base, extra=tuple(d["with"])):
        with open(os.path.join(workdir, base), "wb") as f:
            f.write(data)
        for name in extra:
            with open(os.path.join(BAD_JOBS, "inputs", name), "rb") as src, open(os.path.join(workdir, name), "wb") as f:
                f.write(src.read())

    return Case(name, base, d["expect"], d["expect-any"], d["args"], d["ranks"], d["command"], d["requires"],
                make, source=path)


def _write(name, data):
    def make(workdir):
        with open(os.path.join(workdir, name), "wb") as f:
            f.write(data)
    return make


def _garbage(with_nul):
    # Fixed seed: the same bytes on every run and machine.
    data = random.Random(20240601).randbytes(4096)
    return data if with_nul else data.replace(b"\0", b"\x01")


# Cases whose job file cannot hold a '# expect:' comment.
GENERATED = [
    Case("empty_file", "empty_file.toml", ["empty_file.toml: the job file is empty"],
         make=_write("empty_file.toml", b"")),
    Case("whitespace_only", "whitespace_only.toml", ["whitespace_only.toml: the job file is empty"],
         make=_write("whitespace_only.toml", b"  \n\t\n\r\n   \n")),
    Case("binary_garbage", "binary_garbage.toml",
         ["binary_garbage.toml: not a TOML job file", "NUL bytes"], make=_write("binary_garbage.toml", _garbage(True))),
    Case("binary_garbage_no_nul", "binary_garbage_no_nul.toml",
         ["binary_garbage_no_nul.toml:", "not valid TOML"], make=_write("binary_garbage_no_nul.toml", _garbage(False))),
    Case("directory_as_job", "directory_as_job.toml",
         ["directory_as_job.toml: cannot read the job file: it is a directory"],
         make=lambda w: os.mkdir(os.path.join(w, "directory_as_job.toml"))),
    Case("fifo_as_job", "fifo_as_job.toml", ["fifo_as_job.toml: cannot read the job file: not a regular file"],
         make=lambda w: os.mkfifo(os.path.join(w, "fifo_as_job.toml"))),
    Case("nonexistent_file", "nonexistent_file.toml", ["nonexistent_file.toml: cannot read the job file: no such file"],
         make=lambda w: None),
    Case("nonexistent_directory", "no/such/dir/job.toml", ["no/such/dir/job.toml: cannot read the job file: no such file"],
         make=lambda w: None),
    Case("missing_job_argument", None, ["job is required"], make=lambda w: None),
]


def snapshot(root):
    """Every path under root with its kind, and size + SHA-256 for regular files."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for n in dirnames + sorted(filenames):
            p = os.path.join(dirpath, n)
            rel = os.path.relpath(p, root)
            if os.path.islink(p):
                out[rel] = ("link", os.readlink(p))
            elif os.path.isdir(p):
                out[rel] = ("dir",)
            elif os.path.isfile(p):
                with open(p, "rb") as f:
                    data = f.read()
                out[rel] = ("file", len(data), hashlib.sha256(data).hexdigest())
            else:
                out[rel] = ("other",)
    return out


def diff_snapshots(before, after):
    problems = []
    for k in sorted(set(before) | set(after)):
        if k not in after:
            problems.append(f"removed: {k}")
        elif k not in before:
            problems.append(f"created: {k}")
        elif before[k] != after[k]:
            problems.append(f"changed: {k}")
    return problems


def make_sentinel_run_directory(path):
    os.makedirs(os.path.join(path, "nested"))
    files = {
        "sentinel.txt": b"this run directory existed before the bad run\n",
        "cumulus.log": b"an old log: a rejected job must not append to it\n",
        "diagnostics.csv": b"step,time\n0,0\n",
        "job.resolved.toml": b'solver = "heat"\n',
        "nested/data.bin": bytes(range(256)),
    }
    for rel, data in files.items():
        with open(os.path.join(path, rel), "wb") as f:
            f.write(data)


def run_process(cmd, cwd, env):
    """Runs cmd; returns (status, stdout+stderr, timed_out)."""
    status, out, _, timed_out = run_captured(cmd, cwd, env, TIMEOUT_S, merge_stderr=True)
    return status, out, timed_out


def cuda_device_count(cumulus, env):
    status, out, _ = run_process([cumulus, "info"], tempfile.gettempdir(), env)
    m = re.search(r"^CUDA devices:\s+(\d+)", out, re.M)
    if status != 0 or not m:
        raise SystemExit(f"`{cumulus} info` failed (status {status}):\n{out}")
    return int(m.group(1))


def run_case(case, preexisting, cumulus, mpirun, env):
    """Runs one case; returns (passed, report text)."""
    with tempfile.TemporaryDirectory(prefix="cumulus-badjob-") as work:
        case.make(work)
        stem = os.path.splitext(os.path.basename(case.job))[0] if case.job else None
        preexisting = preexisting and stem is not None
        if preexisting:
            make_sentinel_run_directory(os.path.join(work, stem))
        before = snapshot(work)
        cmd = [cumulus, case.command] + ([case.job] if case.job else []) + case.args
        if case.ranks > 1:
            cmd = mpirun_command(mpirun, case.ranks, cmd)
        t0 = time.monotonic()
        status, out, timed_out = run_process(cmd, work, env)
        seconds = time.monotonic() - t0
        after = snapshot(work)

    problems = []
    if timed_out:
        problems.append(f"timed out after {TIMEOUT_S} s")
    if status != 2:
        problems.append(f"exit status {status}, expected 2")
    for e in case.expect:
        if e not in out:
            problems.append(f"output lacks {e!r}")
    if case.expect_any and not any(e in out for e in case.expect_any):
        problems.append(f"output has none of {case.expect_any!r}")
    if "run directory:" in out:
        problems.append("the run started (output has 'run directory:')")
    if "unexpected:" in out:
        problems.append("an unexpected exception was reported")
    problems += diff_snapshots(before, after)

    what = f"{case.name} ({case.ranks} ranks; " if case.ranks > 1 else f"{case.name} ("
    what += ("existing run dir" if preexisting else "no run dir") + f", {seconds:.1f} s)"
    if not problems:
        return True, f"PASS {what}"
    lines = [f"FAIL {what}", "     command: " + " ".join(shlex.quote(c) for c in cmd)]
    lines += ["     " + p for p in problems]
    lines.append("     output: " + "\n             ".join(out.strip().splitlines()[:12]))
    return False, "\n".join(lines)


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    cumulus = os.path.abspath(sys.argv[1])
    filters = sys.argv[2:]
    if not os.access(cumulus, os.X_OK):
        print(f"not an executable: {cumulus}")
        return 2
    # Nothing is computed: don't spin threads on shared cores. (Open MPI's ess_singleton_isolated
    # would start faster, but concurrent isolated singletons collide on their session directory.)
    env = base_env(omp_threads=1)
    mpirun = mpirun_path()

    cases = [file_case(os.path.join(BAD_JOBS, f)) for f in sorted(os.listdir(BAD_JOBS))
             if os.path.isfile(os.path.join(BAD_JOBS, f))]
    cases += GENERATED
    names = [c.name for c in cases]
    dups = {n for n in names if names.count(n) > 1}
    if dups:
        raise SystemExit(f"duplicate case names: {sorted(dups)}")
    if filters:
        cases = [c for c in cases if any(f in c.name for f in filters)]

    devices = None
    runnable = []
    for index, case in enumerate(cases):
        if "no-cuda-device" in case.requires:
            if devices is None:
                devices = cuda_device_count(cumulus, env)
            if devices > 0:
                print(f"SKIP {case.name}: a CUDA device is visible (this case needs a machine without one)")
                continue
        if case.ranks > 1 and not mpirun:
            print(f"SKIP {case.name}: needs mpirun for {case.ranks} ranks, none on PATH")
            continue
        # Half of the cases start with a run directory that must survive untouched.
        runnable.append((case, index % 2 == 0))

    t_all = time.monotonic()
    # Single-rank cases mostly wait (MPI start-up), so a few run at once; the mpirun cases run
    # alone afterwards. Results print when all are done: single-rank cases first, in order.
    single = [(c, pre) for c, pre in runnable if c.ranks == 1]
    multi = [(c, pre) for c, pre in runnable if c.ranks > 1]
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda cp: run_case(cp[0], cp[1], cumulus, mpirun, env), single))
    results += [run_case(c, pre, cumulus, mpirun, env) for c, pre in multi]
    passed = failed = 0
    for ok, text in results:
        print(text)
        passed += ok
        failed += not ok
    print(f"total {time.monotonic() - t_all:.1f} s")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
