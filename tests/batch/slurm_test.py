#!/usr/bin/env python3
"""cumulus under a real Slurm (a private one-machine cluster, tests/batch/slurm_cluster.py):
 1. `cumulus submit` of the heat job completes, and its final state equals a direct run's, bit for bit;
 2. a job requeued mid-run (`scontrol requeue`) resumes from its checkpoint and ends on the same state;
 3. a job whose time limit nears gets USR1, checkpoints, exits 75, requeues itself and finishes on the
    same state; status.json and the log tell the story.
Cases 2 and 3 run side by side (one rank each) to keep the whole under a few minutes."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "io"))
from slurm_cluster import SlurmCluster  # noqa: E402

BINARY = os.path.abspath(sys.argv[1])
import h5py  # noqa: E402

passed = failed = 0


def check(ok, what, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok    {what}", flush=True)
    else:
        failed += 1
        print(f"FAIL  {what}\n{detail}", flush=True)
    return ok


def final_state(run_dir):
    files = sorted(f for f in os.listdir(os.path.join(run_dir, "checkpoints")) if f.endswith(".h5"))
    with h5py.File(os.path.join(run_dir, "checkpoints", files[-1]), "r") as f:
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


ok, why = SlurmCluster.available()
if not ok:
    print(f"SKIP: {why}")
    sys.exit(77)

work = tempfile.mkdtemp(prefix="cumulus-slurm-")
base_env = dict(os.environ, OMP_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")

# Calibrate: about 70 s of work for cases 2 and 3 (Slurm checks time limits every 30 s, so the
# USR1 for case 3 may come up to 40 s into its one-minute allocation).
with open(os.path.join(work, "calib.toml"), "w") as f:
    f.write(job_text(400))
out = subprocess.run([BINARY, "run", "calib.toml", "--set=checkpoint.at_exit=false"], cwd=work, env=base_env,
                     capture_output=True, text=True, timeout=120, check=True).stdout
# The loop's own time ("done: N steps, time T, S s"), start-up excluded.
per_step = max(float(re.search(r"done: \d+ steps, time \S+, ([0-9.]+) s", out).group(1)), 0.1) / 400
long_steps = max(200, int(70 / per_step))
print(f"calibration: {per_step * 1e3:.1f} ms per step; long jobs take {long_steps} steps", flush=True)
for name, steps in (("short", 40), ("long", long_steps)):
    with open(os.path.join(work, f"{name}.toml"), "w") as f:
        f.write(job_text(steps))

# The references: direct runs, no scheduler.
ref = {}
procs = {name: subprocess.Popen([BINARY, "run", f"{name}.toml", f"--set=run.directory=ref_{name}"], cwd=work,
                                env=base_env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
         for name in ("short", "long")}
for name, p in procs.items():
    p.wait(timeout=300)
    ref[name] = final_state(os.path.join(work, f"ref_{name}"))

with SlurmCluster(extra_conf=["KillWait=10"]) as cluster:
    env = cluster.env(base_env)

    def submit(job, run_dir, *args):
        p = subprocess.run([BINARY, "submit", job, "--gpus-per-node", "0", f"--set=run.directory={run_dir}"] + list(args),
                           cwd=work, env=env, capture_output=True, text=True, timeout=60)
        m = re.search(r"submitted: slurm job (\d+)", p.stdout)
        check(p.returncode == 0 and m, f"cumulus submit {job} ({run_dir})", p.stdout + p.stderr)
        return int(m.group(1)) if m else None

    def wait_releasing(job_id, timeout):
        # A requeued job waits ~120 s (BeginTime) before it may start again. Release it sooner, but
        # not at once: the old allocation must have ended first (it has up to KillWait = 10 s), or
        # the new start collides with it on the node and fails, as it never would with the real delay.
        deadline = time.monotonic() + timeout
        pending_since = None
        while time.monotonic() < deadline:
            info = cluster.job_info(job_id) or {}
            state = info.get("JobState", "")
            if state in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"):
                return state, info
            if state == "PENDING" and info.get("Reason") == "BeginTime":
                pending_since = pending_since or time.monotonic()
                if time.monotonic() - pending_since > 15:
                    cluster.run(["scontrol", "update", f"jobid={job_id}", "StartTime=now"], check=False)
            else:
                pending_since = None
            time.sleep(0.5)
        return "TIMEOUT(test)", cluster.job_info(job_id)

    def slurm_log(run_dir):
        text = ""
        d = os.path.join(work, run_dir)
        for f in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            if f.startswith("slurm-") and f.endswith(".out") or f == "status.json":
                text += f"===== {f}\n" + open(os.path.join(d, f)).read()
        return text

    # 1. A plain submission, two ranks through srun --mpi=pmix.
    jid = submit("short.toml", "s1", "--ranks-per-node", "2", "--time", "00:10:00")
    state, info = wait_releasing(jid, 120) if jid else ("none", {})
    check(state == "COMPLETED", "submitted heat job completes", f"{state} {info}\n{slurm_log('s1')}")
    if state == "COMPLETED":
        check(final_state(os.path.join(work, "s1")) == ref["short"], "its final state equals a direct run's, bit for bit")
        st = json.load(open(os.path.join(work, "s1", "status.json")))
        check(st["state"] == "completed" and st["ranks"] == 2, "status.json: completed on 2 ranks", str(st))

    # 2 and 3 side by side, one rank each.
    j2 = submit("long.toml", "s2", "--time", "00:10:00")
    j3 = submit("long.toml", "s3", "--time", "00:01:00", "--set=job.signal_margin=50")
    # 2: requeued by the scheduler once it has a checkpoint.
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            st = json.load(open(os.path.join(work, "s2", "status.json")))
            if st["state"] == "running" and st["newest_checkpoint"]:
                break
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.3)
    cluster.requeue(j2, release=False)
    state2, info2 = wait_releasing(j2, 240)
    state3, info3 = wait_releasing(j3, 240)
    log2, log3 = slurm_log("s2"), slurm_log("s3")
    check(state2 == "COMPLETED", "requeued job completes", f"{state2} {info2}\n{log2[-3000:]}")
    if state2 == "COMPLETED":
        st = json.load(open(os.path.join(work, "s2", "status.json")))
        check("restarted from" in log2 and st["restarts"] >= 1 and st["state"] == "completed",
              "requeued job resumed from its checkpoint (log and status.json)", f"{st}\n{log2[-3000:]}")
        check(final_state(os.path.join(work, "s2")) == ref["long"], "requeued job ends on the same state, bit for bit")
    check(state3 == "COMPLETED", "time-limited job completes", f"{state3} {info3}\n{log3[-3000:]}")
    if state3 == "COMPLETED":
        st = json.load(open(os.path.join(work, "s3", "status.json")))
        story = ("USR1 received" in log3 and "stopped after a checkpoint; requeueing" in log3 and "restarted from" in log3
                 and st["restarts"] >= 1)
        check(story, "time-limited job: USR1, checkpoint, exit 75, requeue, resume (log and status.json)",
              f"{st}\n{log3[-3000:]}")
        check(final_state(os.path.join(work, "s3")) == ref["long"], "time-limited job ends on the same state, bit for bit")

shutil.rmtree(work, ignore_errors=True)
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed or not passed else 0)
