"""Helpers shared by the CLI test scripts (standard library only)."""
import os
import shutil
import signal
import subprocess
import tempfile
import time


def base_env(omp_threads=None):
    """The caller's environment, plus what mpirun needs as root and on more ranks than cores."""
    env = dict(os.environ)
    env.update({
        "OMPI_ALLOW_RUN_AS_ROOT": "1",
        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
        "OMPI_MCA_rmaps_base_oversubscribe": "1",
    })
    if omp_threads is not None:
        env["OMP_NUM_THREADS"] = str(omp_threads)
    env.pop("CUMULUS_LOG_ALL_RANKS", None)
    return env


def mpirun_path():
    """$CUMULUS_MPIRUN (set by CMake from FindMPI), else the first mpirun on PATH, else None."""
    return os.environ.get("CUMULUS_MPIRUN") or shutil.which("mpirun")


def mpirun_command(mpirun, ranks, cmd):
    return [mpirun, "--allow-run-as-root", "--oversubscribe", "-np", str(ranks)] + list(cmd)


def _parent_of(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    # "pid (comm) state ppid ...": comm may hold spaces and parentheses; split after the last ')'.
    return int(stat[stat.rfind(")") + 2:].split()[1])


def children(pid):
    """Direct children of pid, from /proc."""
    return [int(d) for d in os.listdir("/proc") if d.isdigit() and _parent_of(int(d)) == pid]


def descendants(pid):
    out, todo = [], [pid]
    while todo:
        kids = children(todo.pop())
        out += kids
        todo += kids
    return out


def kill_tree(p):
    """SIGKILLs a Popen started with start_new_session=True, its process group, and every descendant
    (mpirun puts each rank in a process group of its own). Descendants are listed first: once their
    parent is gone they are re-parented and can no longer be found."""
    if p.poll() is not None:
        return
    victims = descendants(p.pid)
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    for pid in victims:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def run_captured(cmd, cwd, env, timeout_s, merge_stderr=False):
    """Runs cmd in a session of its own; returns (status, stdout, stderr, timed_out).
    On a timeout the whole process tree is killed."""
    p = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE, start_new_session=True)
    timed_out = False
    try:
        out, err = p.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill_tree(p)
        try:
            out, err = p.communicate(timeout=10)
        except subprocess.TimeoutExpired:  # something still holds the pipes: give up on the output
            out, err = b"", b""
    dec = lambda b: (b or b"").decode("utf-8", "replace")
    return p.returncode, dec(out), dec(err), timed_out


class Failure(Exception):
    """A check that did not hold."""


def run_cases(cases, filters, prefix, call):
    """Runs each (name, fn) whose name contains one of `filters` (all when none) in a fresh
    temporary directory. call(fn, work) returns a detail line ("SKIP: why" skips the case);
    Failure fails it. Prints a line per case and the closing count; returns the exit status."""
    passed = failed = 0
    for name, fn in cases:
        if filters and not any(f in name for f in filters):
            continue
        t0 = time.monotonic()
        with tempfile.TemporaryDirectory(prefix=prefix) as work:
            try:
                detail = call(fn, work)
                if detail.startswith("SKIP"):
                    print(f"SKIP {name}: {detail[6:]}")
                    continue
                passed += 1
                print(f"PASS {name} ({time.monotonic() - t0:.1f} s): {detail}")
            except Failure as e:
                failed += 1
                print(f"FAIL {name} ({time.monotonic() - t0:.1f} s): {e}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or passed == 0 else 0
