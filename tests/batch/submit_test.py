#!/usr/bin/env python3
"""`cumulus submit --dry-run` for Slurm, PBS and Kubernetes: the expected directives and command;
the scripts are valid bash and pass the job path through intact (a fake srun records its argv);
values that land in scripts are validated (a job name like `x; rm -rf ~` cannot run anything);
errors (unknown scheduler, missing sbatch, a time limit shorter than the checkpoint margin, a
Kubernetes job without an image) exit 2 and leave nothing behind."""
import os
import shutil
import subprocess
import sys
import tempfile

import yaml

BINARY = os.path.abspath(sys.argv[1])
JOB = """solver = "heat"
[run]
end_step = 10
[heat]
cells = [16, 16]
[job]
time = "00:30:00"
"""
passed = failed = 0


def check(ok, what, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok    {what}")
    else:
        failed += 1
        print(f"FAIL  {what}\n{detail}")


def submit(args, cwd, job="job.toml", path=None):
    env = dict(os.environ)
    if path is not None:
        env["PATH"] = path
    p = subprocess.run([BINARY, "submit", job] + args, cwd=cwd, capture_output=True, text=True, timeout=60, env=env)
    return p.returncode, p.stdout + p.stderr


work = tempfile.mkdtemp(prefix="cumulus-submit-")
with open(os.path.join(work, "job.toml"), "w") as f:
    f.write(JOB)

# Slurm
rc, out = submit(["--dry-run", "--nodes", "2", "--gpus-per-node", "4", "--time", "02:00:00", "--partition", "gpu",
                  "--account", "proj1", "--extra=--constraint=h100", "--module", "cuda/13"], work)
script = os.path.join(work, "job", "submit.slurm")
text = open(script).read() if os.path.exists(script) else ""
for directive in ["#SBATCH --job-name=job", "#SBATCH --nodes=2", "#SBATCH --ntasks-per-node=4",
                  "#SBATCH --gpus-per-task=1", "#SBATCH --time=02:00:00", "#SBATCH --partition=gpu",
                  "#SBATCH --account=proj1", "#SBATCH --requeue", "#SBATCH --open-mode=append",
                  "#SBATCH --signal=B:USR1@120", "#SBATCH --constraint=h100", "module load 'cuda/13'",
                  "srun --mpi=pmix", "--restart auto", 'scontrol requeue "$SLURM_JOB_ID"']:
    check(rc == 0 and directive in text, f"slurm script has {directive}", out)
check(subprocess.run(["bash", "-n", script]).returncode == 0, "slurm script is valid bash")

# A checkpoint time measured earlier sets the margin: 3 x 50 s + 30 s.
with open(os.path.join(work, "job", "status.json"), "w") as f:
    f.write('{"state": "preempted", "newest_checkpoint": {"step": 5, "path": "x", "unix_time": 1, "seconds": 50}}')
rc, out = submit(["--dry-run"], work)
check(rc == 0 and "#SBATCH --signal=B:USR1@180" in out, "the margin comes from the measured checkpoint time", out)
rc, out = submit(["--dry-run", "--time", "00:03:05"], work)
check(rc == 2 and "job.time" in out and "--time 00:03:05" in out, "a time limit within the margin is refused", out)

# PBS
rc, out = submit(["--dry-run", "--scheduler", "pbs", "--nodes", "3", "--gpus-per-node", "2", "--partition", "workq"],
                 work)
text = open(os.path.join(work, "job", "submit.pbs")).read() if rc == 0 else ""
for directive in ["#PBS -N job", "#PBS -l select=3:ncpus=2:mpiprocs=2:ngpus=2", "#PBS -l walltime=00:30:00",
                  "#PBS -q workq", "#PBS -r y", "mpirun '", "--restart auto", 'qrerun "$PBS_JOBID"']:
    check(directive in text, f"pbs script has {directive}", out)

# Kubernetes: the manifest's structure
rc, out = submit(["--dry-run", "--scheduler", "kubernetes", "--gpus-per-node", "2", "--image",
                  "registry.example/cumulus:1"], work)
try:
    doc = yaml.safe_load(open(os.path.join(work, "job", "job.yaml")))
    spec = doc["spec"]["template"]["spec"]
    c = spec["containers"][0]
    ok = (doc["apiVersion"] == "batch/v1" and doc["kind"] == "Job" and doc["spec"]["completionMode"] == "Indexed"
          and doc["spec"]["backoffLimit"] > 0 and spec["restartPolicy"] == "OnFailure"
          and c["image"] == "registry.example/cumulus:1" and c["resources"]["limits"]["nvidia.com/gpu"] == 2
          and c["command"][:4] == ["mpirun", "--allow-run-as-root", "-np", "2"]
          and c["command"][4:9] == ["cumulus", "run", "/work/job.toml", "--restart", "auto"]
          and spec["volumes"][0]["persistentVolumeClaim"]["claimName"] == "job-run"
          and c["volumeMounts"][0]["mountPath"] == "/work")
    check(rc == 0 and ok, "kubernetes manifest: indexed Job, GPUs, retry policy, volume, command", yaml.dump(doc))
except Exception as e:  # noqa: BLE001 - report any parse/shape problem as a failure
    check(False, "kubernetes manifest parses", f"{e}\n{out}")
rc, out = submit(["--dry-run", "--scheduler", "kubernetes"], work)
check(rc == 2 and "job.image" in out, "kubernetes without an image: exit 2", out)

# Values that land in scripts cannot inject anything.
for args, key in [(["--set", "run.name=x; rm -rf ~"], "run.name"), (["--partition", "gpu;reboot"], "--partition"),
                  (["--account", "a b"], "--account"), (["--extra=--foo;touch /tmp/pwned"], "--extra"),
                  (["--module", "cuda$(id)"], "--module")]:
    d = tempfile.mkdtemp(prefix="cumulus-submit-inj-")
    shutil.copy(os.path.join(work, "job.toml"), d)
    rc, out = submit(["--dry-run"] + args, d)
    check(rc == 2 and key in out and not os.path.exists(os.path.join(d, "job")),
          f"refused with exit 2, nothing written: {' '.join(args)}", out)
    shutil.rmtree(d)

# Paths: a job file whose name has a space and a quote reaches the run intact.
odd = "my job's file.toml"
shutil.copy(os.path.join(work, "job.toml"), os.path.join(work, odd))
rc, out = submit(["--dry-run", "--set", "run.directory=plain"], work, job=odd)
script = os.path.join(work, "plain", "submit.slurm")
check(rc == 0 and os.path.exists(script), "odd job file name accepted with a plain run directory", out)
fake = os.path.join(work, "fakebin")
os.makedirs(fake)
with open(os.path.join(fake, "srun"), "w") as f:
    f.write('#!/bin/bash\nfor a in "$@"; do printf "%s\\n" "$a"; done > "$ARGV_FILE"\n')
os.chmod(os.path.join(fake, "srun"), 0o755)
argv_file = os.path.join(work, "argv.txt")
env = dict(os.environ, PATH=fake + ":" + os.environ["PATH"], ARGV_FILE=argv_file, SLURM_JOB_ID="7")
p = subprocess.run(["bash", script], cwd="/", env=env, capture_output=True, text=True, timeout=60)
args = open(argv_file).read().splitlines() if os.path.exists(argv_file) else []
check(p.returncode == 0 and args[:7] == ["--mpi=pmix", BINARY, "run", os.path.join(work, odd), "--restart", "auto",
                                         "--set"] and args[7] == 'run.directory="plain"',
      "the script passes the job path through srun intact", f"{p.returncode} {args}\n{p.stdout}{p.stderr}")
# A run directory with a space cannot be carried by #SBATCH lines: refused.
rc, out = submit(["--dry-run", "--set", "run.directory=a b"], work)
check(rc == 2 and "cannot carry" in out, "a run directory with a space is refused for Slurm", out)

# Submitting for real needs the scheduler's command.
rc, out = submit(["--scheduler", "pbs"], work)
check(rc == 2 and "'qsub' is not on PATH" in out, "missing qsub: exit 2", out)
rc, out = submit(["--dry-run", "--scheduler", "lsf"], work)
check(rc == 2 and "job.scheduler" in out, "unknown scheduler: exit 2", out)

shutil.rmtree(work)
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed or not passed else 0)
