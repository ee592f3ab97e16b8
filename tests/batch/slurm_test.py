#!/usr/bin/env python3
"""cumulus under a real Slurm (a private one-machine cluster, tests/batch/slurm_cluster.py):
 1. `cumulus submit` of the heat job on 2 ranks (srun --mpi=pmix) completes, and its final state equals
    a direct run's, bit for bit;
 2. a job requeued mid-run (`scontrol requeue`) resumes from its checkpoint and ends on the same state;
 3. a job whose time limit nears gets USR1, checkpoints, exits 75, requeues itself and finishes on the
    same state; status.json and the log tell the story;
 4. a job SIGKILLed in the middle of writing a checkpoint (the writer paused in each phase: data,
    verify, rename, prune) fails without requeueing itself; its script, resubmitted with plain
    `sbatch` from another directory, resumes from the previous good checkpoint and ends on the same
    state, bit for bit.
Case 4 runs while the direct reference of cases 2 and 3 computes; 2 and 3 run side by side (one rank
each). The whole takes about two and a half minutes on 2 cores.
Exit 77 (skip) only where Slurm cannot run at all (not root); missing packages are a failure
(scripts/setup installs them)."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from slurm_cluster import TERMINAL_STATES, SlurmCluster  # noqa: E402

BINARY = os.path.abspath(sys.argv[1])
T0 = time.monotonic()
# Work of the long jobs (cases 2 and 3), in seconds of one core. Slurm checks time limits every 30 s
# and sends the --signal warning at the first check within margin + 30 s of the limit: a one-minute
# job with a 20 s margin gets USR1 10-40 s after it starts (never in its first seconds, before
# cumulus has its handler: USR1 would kill it), so the run must last well beyond 40 s.
LONG_SECONDS = 60
PHASES = (("data", 1), ("verify", 1), ("rename", 1), ("prune", 1), ("data", 2))

if os.geteuid() != 0:
    print("SKIP: the private Slurm cluster needs root (its daemons run as root)")
    sys.exit(77)
missing = SlurmCluster.missing()
if missing:
    print(f"FAIL  Slurm is not installed: missing {' '.join(missing)} (scripts/setup installs it)")
    print("0 passed, 1 failed")
    sys.exit(1)

import h5py  # noqa: E402

passed = failed = 0
lock = threading.Lock()


def stamp():
    return f"[{time.monotonic() - T0:5.0f} s]"


def check(ok, what, detail=""):
    global passed, failed
    with lock:
        if ok:
            passed += 1
            print(f"ok    {stamp()} {what}", flush=True)
        else:
            failed += 1
            print(f"FAIL  {stamp()} {what}\n{detail}", flush=True)
    return ok


def note(text):
    with lock:
        print(f"      {stamp()} {text}", flush=True)


def final_state(run_dir):
    d = os.path.join(run_dir, "checkpoints")
    files = sorted(f for f in os.listdir(d) if f.endswith(".h5"))
    with h5py.File(os.path.join(d, files[-1]), "r") as f:
        return int(f.attrs["step"]), f["arrays/temperature"][...].tobytes()


def job_text(end_step):
    return f"""solver = "heat"
[run]
end_step = {end_step}
progress_seconds = 1
[heat]
cells = [96, 96, 64]
boundary = ["periodic", "fixed", "periodic"]
[checkpoint]
every_seconds = 2
[output]
format = "none"
"""


# Case 4: small and quick; a checkpoint every 10 steps, the writer paused in the one at step 20.
KILL_JOB = """solver = "heat"
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
[checkpoint]
every_steps = 10
keep = 3
[output]
format = "none"
"""

work = tempfile.mkdtemp(prefix="cumulus-slurm-")
base_env = dict(os.environ, OMP_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
base_env.pop("CUMULUS_TEST_PAUSE_CHECKPOINT", None)


def write(name, text):
    with open(os.path.join(work, name), "w") as f:
        f.write(text)


def direct(args, log):
    """A direct run (no scheduler) in the background, its output in `log`."""
    with open(os.path.join(work, log), "w") as out:
        return subprocess.Popen([BINARY, "run"] + args, cwd=work, env=base_env, stdout=out, stderr=subprocess.STDOUT)


def finish(p, log, timeout):
    """Waits for a direct run; (exit status, output)."""
    try:
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    with open(os.path.join(work, log), errors="replace") as f:
        return p.returncode, f.read()


# Calibrate the long jobs on this machine: the loop's own time, start-up excluded; the fastest of
# three runs (one slowed by other work would make the jobs too short).
write("calib.toml", job_text(2000))
per_step = 1.0
for _ in range(3):
    out = finish(direct(["calib.toml", "--set=checkpoint.at_exit=false"], "calib.log"), "calib.log", 120)[1]
    m = re.search(r"total run \(wall\)\s+([0-9.]+)", out) or re.search(r"done: \d+ steps, time \S+, ([0-9.]+) s", out)
    per_step = min(per_step, max(float(m.group(1)), 0.2) / 2000)
long_steps = max(2000, int(LONG_SECONDS / per_step))
note(f"calibration: {per_step * 1e3:.2f} ms per step; the long jobs take {long_steps} steps")
write("short.toml", job_text(40))
write("long.toml", job_text(long_steps))
write("kill.toml", KILL_JOB)

# The references: direct runs, no scheduler. The long one computes on one core while cases 1 and 4
# (short jobs) run under Slurm.
refs = {name: direct([f"{name}.toml", f"--set=run.directory=ref_{name}"], f"ref_{name}.log")
        for name in ("short", "kill", "long")}
ref = {}


def reference(name):
    """The final state of a direct run (main thread only)."""
    if name not in ref:
        rc, out = finish(refs[name], f"ref_{name}.log", 300)
        check(rc == 0, f"direct reference run '{name}'", out[-3000:])
        ref[name] = final_state(os.path.join(work, f"ref_{name}")) if rc == 0 else None
    return ref[name]


cluster = SlurmCluster(kill_wait=10)
with cluster:
    note(f"cluster up in {cluster.timings['start_total']:.1f} s ({cluster.dir})")
    env = cluster.env(base_env)
    reference("short"), reference("kill")  # quick; case 4's threads only read them

    def submit(job, run_dir, *args, extra_env=None):
        p = subprocess.run([BINARY, "submit", job, "--gpus-per-node", "0", f"--set=run.directory={run_dir}"] + list(args),
                           cwd=work, env=dict(env, **(extra_env or {})), capture_output=True, text=True, timeout=60)
        m = re.search(r"submitted: slurm job (\d+)", p.stdout)
        check(p.returncode == 0 and m, f"cumulus submit {job} ({run_dir})", p.stdout + p.stderr)
        return int(m.group(1)) if m else None

    def follow(jobs, timeout, when_requeued=None):
        """Waits until every job ends; {id: (state, info)}. A requeued job waits in PENDING
        (Reason=BeginTime) for the cluster's cred_expire + 1 s, then Slurm starts it again by itself;
        when_requeued(id) is called while it waits."""
        jobs = [j for j in jobs if j]
        result = {j: ("none", {}) for j in jobs}
        left = set(jobs)
        deadline = time.monotonic() + timeout
        while left and time.monotonic() < deadline:
            for j in sorted(left):
                info = cluster.job_info(j) or {}
                state = info.get("JobState", "")
                result[j] = (state, info)
                if state in TERMINAL_STATES:
                    left.discard(j)
                elif state == "PENDING" and info.get("Reason") == "BeginTime" and when_requeued:
                    when_requeued(j)
            time.sleep(0.5)
        for j in left:
            result[j] = (f"still {result[j][0]} after {timeout} s (test timeout)", result[j][1])
        return result

    def slurm_log(run_dir):
        text = ""
        d = os.path.join(work, run_dir)
        for f in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            if f.startswith("slurm-") and f.endswith(".out") or f == "status.json":
                with open(os.path.join(d, f)) as fh:
                    text += f"===== {f}\n" + fh.read()
        return text

    def job_log(run_dir, job_id):
        try:
            with open(os.path.join(work, run_dir, f"slurm-{job_id}.out")) as f:
                return f.read()
        except OSError:
            return ""

    # 1. A plain submission, two ranks through srun --mpi=pmix.
    jid = submit("short.toml", "s1", "--ranks-per-node", "2", "--time", "00:10:00")
    state, info = follow([jid], 120).get(jid, ("none", {}))
    check(state == "COMPLETED", "submitted heat job completes", f"{state} {info}\n{slurm_log('s1')}")
    if state == "COMPLETED":
        check(final_state(os.path.join(work, "s1")) == reference("short"),
              "its final state equals a direct run's, bit for bit")
        with open(os.path.join(work, "s1", "status.json")) as f:
            st = json.load(f)
        check(st["state"] == "completed" and st["ranks"] == 2, "status.json: completed on 2 ranks", str(st))

    # 4. SIGKILL in the middle of a checkpoint write, in each phase, then a resubmission.
    def kill_case(phase, ranks):
        name = f"k_{phase}_{ranks}"
        label = f"killed in '{phase}' ({ranks} rank{'s' if ranks > 1 else ''})"
        # A first good checkpoint (step 10), then the job: the writer pauses in the one at step 20.
        rc, out = finish(direct(["kill.toml", f"--set=run.directory={name}", "--set=run.end_step=10"], f"{name}.log"),
                         f"{name}.log", 60)
        if not check(rc == 0, f"{label}: first checkpoint written", out[-3000:]):
            return
        jid = submit("kill.toml", name, "--ranks-per-node", str(ranks), "--time", "00:05:00",
                     extra_env={"CUMULUS_TEST_PAUSE_CHECKPOINT": phase})
        if not jid:
            return
        marker = os.path.join(work, name, "checkpoints", f"checkpoint_{20:012d}.h5.tmp.paused-{phase}")
        exe = os.path.realpath(BINARY)
        deadline = time.monotonic() + 120
        ranks_seen = []
        while time.monotonic() < deadline:
            if os.path.exists(marker):
                ranks_seen = [p for p in cluster.job_pids(jid) if os.path.realpath(f"/proc/{p}/exe") == exe]
                if len(ranks_seen) == ranks:
                    break
            elif cluster.job_state(jid) in TERMINAL_STATES:
                break
            time.sleep(0.2)
        for p in ranks_seen:  # every rank at once, as a node failure or the OOM killer would
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        state, info = follow([jid], 60)[jid]
        log = job_log(name, jid)
        if not check(len(ranks_seen) == ranks and state == "FAILED" and "requeueing" not in log,
                     f"{label}: the writer paused there was SIGKILLed; the job failed and did not requeue",
                     f"ranks killed {ranks_seen}, marker {os.path.exists(marker)}, {state} {info}\n{slurm_log(name)}"):
            return
        # The user's way back: resubmit the written script, from any directory.
        r = cluster.run(["sbatch", os.path.join(work, name, "submit.slurm")], cwd="/", env=base_env, check=False)
        m = re.search(r"Submitted batch job (\d+)", r.stdout)
        jid2 = int(m.group(1)) if m else None
        state, info = follow([jid2], 120).get(jid2, ("sbatch failed", r.stdout + r.stderr))
        log = job_log(name, jid2)
        # Before the rename the new checkpoint does not exist; after it, it is complete and verified.
        step = 20 if phase == "prune" else 10
        resumed = f"restarted from {name}/checkpoints/checkpoint_{step:012d}.h5" in log
        check(state == "COMPLETED" and resumed,
              f"{label}: the resubmitted job resumed from step {step} and completed", f"{state} {info}\n{slurm_log(name)}")
        if state == "COMPLETED":
            check(final_state(os.path.join(work, name)) == ref["kill"],
                  f"{label}: the final state equals a direct run's, bit for bit")

    def guarded(phase, ranks):
        try:
            kill_case(phase, ranks)
        except Exception as e:  # noqa: BLE001 - a thread's error must count as a failure
            check(False, f"killed in '{phase}' ({ranks} ranks): the test itself failed", repr(e))

    threads = [threading.Thread(target=guarded, args=pr) for pr in PHASES]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    # 2 and 3 side by side, one rank each, once the long reference is done (it would share a core).
    ref_long = reference("long")
    j2 = submit("long.toml", "s2", "--time", "00:10:00")
    j3 = submit("long.toml", "s3", "--time", "00:01:00", "--set=job.signal_margin=20")
    # 2: requeued by the scheduler once it has a checkpoint.
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with open(os.path.join(work, "s2", "status.json")) as f:
                st = json.load(f)
            if st["state"] == "running" and st["newest_checkpoint"]:
                break
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.3)
    cluster.requeue(j2, release=False)

    # 3: each allocation of a one-minute job would get USR1 10-40 s in; after the first requeue its
    # limit is lengthened so that the resumed run completes in its second allocation.
    requeued = set()

    def lengthen(j):
        if j not in requeued:
            requeued.add(j)
            note(f"job {j} ({'s2' if j == j2 else 's3'}) requeued; Slurm holds it {cluster.cred_expire + 1} s")
            if j == j3:
                cluster.run(["scontrol", "update", f"jobid={j}", "TimeLimit=00:10:00"], check=False)

    res = follow([j2, j3], 240, when_requeued=lengthen)
    (state2, info2), (state3, info3) = res.get(j2, ("none", {})), res.get(j3, ("none", {}))
    log2, log3 = slurm_log("s2"), slurm_log("s3")
    check(state2 == "COMPLETED", "requeued job completes", f"{state2} {info2}\n{log2[-3000:]}")
    if state2 == "COMPLETED":
        with open(os.path.join(work, "s2", "status.json")) as f:
            st = json.load(f)
        check("restarted from" in log2 and st["restarts"] >= 1 and st["state"] == "completed",
              "requeued job resumed from its checkpoint (log and status.json)", f"{st}\n{log2[-3000:]}")
        check(final_state(os.path.join(work, "s2")) == ref_long, "requeued job ends on the same state, bit for bit")
    check(state3 == "COMPLETED", "time-limited job completes", f"{state3} {info3}\n{log3[-3000:]}")
    if state3 == "COMPLETED":
        with open(os.path.join(work, "s3", "status.json")) as f:
            st = json.load(f)
        story = ("USR1 received" in log3 and "stopped after a checkpoint; requeueing" in log3 and "restarted from" in log3
                 and st["restarts"] >= 1)
        check(story, "time-limited job: USR1, checkpoint, exit 75, requeue, resume (log and status.json)",
              f"{st}\n{log3[-3000:]}")
        check(final_state(os.path.join(work, "s3")) == ref_long, "time-limited job ends on the same state, bit for bit")
    if failed:
        cluster.keep = True  # the daemons' logs, for the report below
        print(cluster.log_tails(40))

for p in refs.values():
    if p.poll() is None:
        p.kill()
if failed or cluster.keep:  # SLURM_CLUSTER_KEEP=1 keeps them too
    print(f"kept for inspection: {work} (jobs' logs in each run directory) and {cluster.dir} (Slurm's logs)")
else:
    shutil.rmtree(work, ignore_errors=True)
print(f"total {time.monotonic() - T0:.0f} s")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed or not passed else 0)
