#!/usr/bin/python3
"""Smoke test of the private Slurm cluster harness (slurm_cluster.py).

Checks: plain batch job, srun --mpi=pmix launch, scontrol requeue (+release),
and --signal=B:USR1@50 delivered to a bash trap.  Runs in well under 2 min.
Prints "N passed, M failed"; exit 0 ok, 1 failure (also: Slurm not
installed), 77 skipped (not root), for ctest SKIP_RETURN_CODE 77.
"""

import os
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from slurm_cluster import SlurmCluster  # noqa: E402

RESULTS = []


def step(name):
    def deco(fn):
        def wrapper(*a, **kw):
            t0 = time.monotonic()
            try:
                fn(*a, **kw)
                ok, msg = True, ""
            except Exception as e:  # noqa: BLE001 - report every failure
                ok = False
                msg = "%s: %s" % (type(e).__name__, e)
                traceback.print_exc()
            dt = time.monotonic() - t0
            RESULTS.append((name, ok, dt))
            print("%s %-28s %6.2fs %s" % ("PASS" if ok else "FAIL", name, dt,
                                          msg), flush=True)
            return ok
        return wrapper
    return deco


def write(path, text, mode=0o755):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return path


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def starts(text):
    return sum(1 for l in text.splitlines() if l.startswith("start "))


def wait_file(path, pred, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred(read(path)):
            return True
        time.sleep(0.2)
    return False


def main():
    if os.geteuid() != 0:
        print("SKIP: the private Slurm cluster needs root")
        return 77
    missing = SlurmCluster.missing()
    if missing:   # scripts/setup installs them: not a reason to skip
        print("FAIL: Slurm is not installed: missing " + " ".join(missing))
        print("0 passed, 1 failed")
        return 1
    t_all = time.monotonic()
    work = tempfile.mkdtemp(prefix="slurm-smoke-")
    try:
        with SlurmCluster() as c:
            print("cluster up in %.2fs (munged %.2fs, slurmctld %.2fs, "
                  "slurmd->idle %.2fs); node %s CPUs=%d conf %s" % (
                      c.timings["start_total"], c.timings["munged"],
                      c.timings["slurmctld"], c.timings["slurmd_to_idle"],
                      c.node, c.cpus, c.conf), flush=True)
            run_tests(c, work)
            print("cluster stopped in", end=" ")
        print("%.2fs" % c.timings["stop_total"])
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        RESULTS.append(("cluster", False, 0.0))
    finally:
        import shutil
        shutil.rmtree(work, ignore_errors=True)
    passed = sum(1 for r in RESULTS if r[1])
    failed = len(RESULTS) - passed
    print("total %.1fs" % (time.monotonic() - t_all))
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 and passed > 0 else 1


def run_tests(c, work):
    # The signal job takes longest (~30 s): it is submitted after the 2-CPU
    # pmix job (which would otherwise wait for a free CPU) and runs
    # concurrently with the requeue test; it is checked last.
    sig_script = write(os.path.join(work, "sig.sh"), """#!/bin/bash
#SBATCH --time=1
child=
on_usr1() {
    echo "USR1 after ${SECONDS}s"
    kill "$child" 2>/dev/null
    exit 0
}
trap on_usr1 USR1
echo "start"
sleep 300 &
child=$!
wait "$child"
echo "no signal after ${SECONDS}s"
exit 3
""")
    sig = {}

    @step("submit signal job")
    def submit_signal():
        sig["t0"] = time.monotonic()
        sig["id"] = c.sbatch(sig_script, "--signal=B:USR1@50", "-J", "sig",
                             "-o", "sig.out", cwd=work)

    @step("hello batch job")
    def hello():
        script = write(os.path.join(work, "hello.sh"),
                       "#!/bin/bash\n#SBATCH --time=1\necho hello\n")
        jid = c.sbatch(script, "-J", "hello", cwd=work)   # slurm-%j.out
        st = c.wait_for(jid, {"COMPLETED"}, timeout=30)
        assert st == "COMPLETED", "state %s: %s" % (st, c.job_info(jid))
        out = read(os.path.join(work, "slurm-%d.out" % jid))
        assert out.strip() == "hello", "output %r" % out
        info = c.job_info(jid)
        assert info and info.get("ExitCode") == "0:0", info

    @step("srun --mpi=pmix -n 2")
    def pmix():
        script = write(os.path.join(work, "pmix.sh"), """#!/bin/bash
#SBATCH --time=1
#SBATCH -n 2
srun --mpi=pmix -n 2 bash -c 'echo "rank=$PMIX_RANK host=$(hostname)"'
""")
        jid = c.sbatch(script, "-J", "pmix", "-o", "pmix.out", cwd=work)
        st = c.wait_for(jid, {"COMPLETED"}, timeout=40)
        out = read(os.path.join(work, "pmix.out"))
        assert st == "COMPLETED", "state %s; output %r" % (st, out)
        ranks = sorted(l.split()[0] for l in out.splitlines()
                       if l.startswith("rank="))
        assert ranks == ["rank=0", "rank=1"], "output %r" % out

    @step("requeue + release")
    def requeue():
        script = write(os.path.join(work, "req.sh"), """#!/bin/bash
#SBATCH --time=2
echo "start restart=${SLURM_RESTART_COUNT:-0}"
sleep 60 &
wait $!
echo done
""")
        out_path = os.path.join(work, "req.out")
        jid = c.sbatch(script, "-J", "req", "-o", "req.out",
                       "--open-mode=append", cwd=work)
        st = c.wait_for(jid, {"RUNNING"}, timeout=20)
        assert st == "RUNNING", st
        assert wait_file(out_path, lambda s: starts(s) >= 1, 10), \
            read(out_path)
        t0 = time.monotonic()
        c.requeue(jid)
        t_rel = time.monotonic() - t0
        assert wait_file(out_path, lambda s: starts(s) >= 2, 30), \
            "output %r; info %s" % (read(out_path), c.job_info(jid))
        t_run = time.monotonic() - t0
        info = c.job_info(jid)
        assert info["JobState"] == "RUNNING", info
        assert info.get("Restarts") == "1", info
        out = read(out_path)
        assert "start restart=0" in out and "start restart=1" in out, out
        print("     requeue: released after %.2fs, running again after %.2fs"
              % (t_rel, t_run))
        c.cancel(jid)
        st = c.wait_for(jid, {"CANCELLED"}, timeout=20)
        assert st == "CANCELLED", st

    @step("signal B:USR1@50 trap")
    def signal_check():
        jid = sig["id"]
        st = c.wait_for(jid, {"COMPLETED"}, timeout=75)
        dt = time.monotonic() - sig["t0"]
        out = read(os.path.join(work, "sig.out"))
        assert st == "COMPLETED", "state %s, output %r" % (st, out)
        assert "USR1 after" in out, out
        secs = int(out.split("USR1 after")[1].split("s")[0])
        assert secs < 55, "trap fired too late: %r" % out
        print("     trap fired %ds into the job (limit 60s); job done %.1fs "
              "after submit" % (secs, dt))

    hello()
    pmix()
    if submit_signal():
        requeue()
        signal_check()


if __name__ == "__main__":
    sys.exit(main())
