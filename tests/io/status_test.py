#!/usr/bin/env python3
"""status.json and metrics.prom tell the story of a run: running, preempted by a signal (exit 75)
with its newest checkpoint, restarted (the restart counted), completed; a restart of a completed
run does nothing; a blow-up is 'failed' with the reason. metrics.prom passes `promtool check
metrics` (Debian package prometheus) at every stage."""
import json
import os
import shutil
import signal
import subprocess
import time

from common import Results, command, env, run, scratch

PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
r = Results()
d = scratch()
rd = os.path.join(d, "a")


def status():
    with open(os.path.join(rd, "status.json")) as f:
        return json.load(f)


def promtool_ok(label):
    with open(os.path.join(rd, "metrics.prom")) as f:
        p = subprocess.run([PROMTOOL, "check", "metrics"], stdin=f, capture_output=True, text=True, timeout=60)
    r.check(p.returncode == 0, f"{label}: promtool check metrics passes", p.stdout + p.stderr)


# A long run on 2 ranks, stopped by SIGUSR1 once it is stepping.
args = ["run", "job.toml", "--set=run.directory=a", "--set=run.end_step=200000", "--set=heat.cells=[64, 64]",
        "--set=run.progress_seconds=0.05", "--set=checkpoint.every_steps=500"]
p = subprocess.Popen(command(args, 2), cwd=d, env=env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                     start_new_session=True)
deadline = time.time() + 60
seen_running = False
while time.time() < deadline and p.poll() is None:
    try:
        s = status()
        if s["state"] == "running" and s["step"] > 0 and s["newest_checkpoint"]:
            seen_running = True
            break
    except (OSError, ValueError):
        pass
    time.sleep(0.05)
r.check(seen_running, "status.json says running, with a step and a checkpoint, while it runs")
if seen_running:
    promtool_ok("running")
os.killpg(p.pid, signal.SIGUSR1)
out = p.communicate(timeout=60)[0].decode(errors="replace")
s = status()
r.check(p.returncode == 75 and s["state"] == "preempted" and s["newest_checkpoint"]["step"] == s["step"],
        "SIGUSR1: exit 75, state preempted, a checkpoint at the stop step", f"{p.returncode} {s}\n{out[-1500:]}")
promtool_ok("preempted")

# Restart and finish: the restart is counted, the run completes.
rc, out = run(args[:3] + ["--set=run.end_step=" + str(s["step"] + 300)] + args[4:] + ["--restart", "auto"], d, ranks=2)
s = status()
r.check(rc == 0 and s["state"] == "completed" and s["restarts"] == 1, "restart: completed, restarts = 1",
        f"{rc} {s}\n{out[-1500:]}")
promtool_ok("completed")
with open(os.path.join(rd, "metrics.prom")) as f:
    r.check("cumulus_restarts_total{" in f.read(), "metrics.prom counts restarts")

# Once more: nothing to do, nothing changed, exit 0.
before = s["step"]
rc, out = run(args[:3] + ["--set=run.end_step=" + str(before)] + args[4:] + ["--restart", "auto"], d, ranks=2)
s = status()
r.check(rc == 0 and "nothing to do" in out and s["state"] == "completed" and s["step"] == before and s["restarts"] == 1,
        "a completed run is not run again", f"{rc} {s}\n{out[-1500:]}")

# A blow-up: failed, with the reason.
rc, out = run(["run", "job.toml", "--set=run.directory=b", "--set=heat.amplitude=1e308", "--set=heat.modes=[2, 1]",
               "--set=heat.cells=[16, 16]", "--set=heat.initial=sine", "--set=run.health_every=1"], d)
with open(os.path.join(d, "b", "status.json")) as f:
    s = json.load(f)
r.check(rc == 3 and s["state"] == "failed" and "blow-up" in s["reason"], "blow-up: exit 3, state failed with the reason",
        f"{rc} {s}")

shutil.rmtree(d)
r.finish()
