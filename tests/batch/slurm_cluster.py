"""Private one-node Slurm 22.05 cluster for tests (stdlib only).

Usage::

    from slurm_cluster import SlurmCluster

    with SlurmCluster() as c:
        jid = c.sbatch("job.sh", "--time=1", cwd=workdir)
        state = c.wait_for(jid, {"COMPLETED"}, timeout=30)

Everything lives in a private scratch directory (tempfile.mkdtemp): munge key,
munge socket, slurm.conf, state/spool dirs, logs and PID files.  Ports are
chosen dynamically on 127.0.0.1.  The system's /etc/slurm and /etc/munge are
never read or written: daemons get -f / --key-file / --socket options and
client commands get SLURM_CONF (the munge socket is in slurm.conf via
AuthInfo=socket=...).  No systemd is needed.  On exit only the processes this
object started (by PID) are stopped, and the scratch dir is removed
(set SLURM_CLUSTER_KEEP=1 to keep it for debugging).

Requires root and the Debian packages: slurmctld slurmd slurm-client munge
(these pull in slurm-wlm-basic-plugins, which holds mpi_pmix) and, for
srun --mpi=pmix, libpmix-dev (mpi_pmix loads libpmix.so); scripts/setup
installs them.
"""

import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid

__all__ = ["SlurmCluster", "SlurmError", "TERMINAL_STATES"]

# Job states after which a job will not change state again by itself.
TERMINAL_STATES = frozenset({
    "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
    "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE", "REVOKED", "SPECIAL_EXIT",
})

REQUIRED_BINARIES = ("munged", "slurmctld", "slurmd", "sbatch", "squeue",
                     "scontrol", "sinfo", "scancel", "srun")
DEBIAN_PACKAGES = ("slurmctld", "slurmd", "slurm-client", "munge", "libpmix-dev")


class SlurmError(RuntimeError):
    pass


def _free_ports(n):
    """n distinct currently-free TCP ports on 127.0.0.1."""
    socks, ports = [], []
    try:
        while len(ports) < n:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports


def _which(name):
    """Absolute path of a Slurm/munge binary (sbin dirs included)."""
    path = os.environ.get("PATH", "/usr/bin:/bin") + ":/usr/sbin:/sbin"
    return shutil.which(name, path=path) or name


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of ours counts as dead.
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _tail(path, n=30):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return "(no %s)" % path


def parse_scontrol_line(line):
    """Parse one `scontrol show ... -o` line into a dict.

    Values may contain '=' (TRES=cpu=1,mem=1G) and occasionally spaces;
    a whitespace-separated token starts a new key only if it looks like Key=.
    """
    out = {}
    key = None
    for tok in line.strip().split(" "):
        m = re.match(r"^([A-Za-z][A-Za-z0-9_:/.]*)=(.*)$", tok)
        if m:
            key = m.group(1)
            out[key] = m.group(2)
        elif key is not None:
            out[key] += " " + tok
    return out


class SlurmCluster:
    """One-node private Slurm cluster (munged + slurmctld + slurmd).

    Parameters
    ----------
    start_timeout: seconds to wait until sinfo reports the node idle.
    stop_timeout:  seconds between SIGTERM and SIGKILL per daemon.
    extra_conf:    extra slurm.conf lines (str or list), appended.
    def_mem_per_cpu: MB per CPU for jobs without --mem (default: derived
                   from the node's memory so that several jobs can run).
    kill_wait:     KillWait: seconds between SIGTERM and SIGKILL when Slurm
                   ends a job (time limit, requeue, scancel).
    cred_expire:   job credential lifetime (AuthInfo=cred_expire, at least
                   5): a requeued job is held cred_expire + 1 s before it may
                   start again (Slurm's default, 120 s, is too long for tests).
    keep:          keep the scratch dir (also env SLURM_CLUSTER_KEEP=1).
    """

    def __init__(self, start_timeout=30.0, stop_timeout=10.0, extra_conf=None,
                 def_mem_per_cpu=None, kill_wait=5, cred_expire=10, keep=None):
        self.start_timeout = start_timeout
        self.kill_wait = kill_wait
        self.cred_expire = max(5, int(cred_expire))
        self.stop_timeout = stop_timeout
        self.extra_conf = extra_conf
        self.def_mem_per_cpu = def_mem_per_cpu
        self.keep = (os.environ.get("SLURM_CLUSTER_KEEP") == "1"
                     if keep is None else keep)
        self.dir = None
        self.conf = None
        self.munge_socket = None
        self.node = None
        self.cpus = None
        self.real_memory = None
        self.ctld_port = self.slurmd_port = None
        self.cluster_name = None
        self.timings = {}
        self._procs = {}   # name -> Popen (daemons run in the foreground)
        self._pidfiles = {}

    # ------------------------------------------------------------------ setup
    @staticmethod
    def available():
        """(ok, reason): whether this machine can run the cluster."""
        if os.geteuid() != 0:
            return False, "must run as root"
        missing = SlurmCluster.missing()
        if missing:
            return False, ("missing %s (apt-get install %s)"
                           % (" ".join(missing), " ".join(DEBIAN_PACKAGES)))
        return True, ""

    @staticmethod
    def missing():
        """The Slurm/munge programs that are not installed."""
        return [b for b in REQUIRED_BINARIES if not os.path.isabs(_which(b))]

    def __enter__(self):
        ok, why = self.available()
        if not ok:
            raise SlurmError("cannot start Slurm cluster: " + why)
        t0 = time.monotonic()
        self.dir = tempfile.mkdtemp(prefix="slurm-cluster-")
        # munged requires o+x on every directory above its socket.
        os.chmod(self.dir, 0o711)
        try:
            self._probe_node()
            self._write_munge()
            self._start_munged()
            last = None
            for attempt in range(3):   # retry if a port got taken meanwhile
                try:
                    self._write_conf()
                    self._start_slurm()
                    last = None
                    break
                except SlurmError as e:
                    last = e
                    self._stop_daemon("slurmd")
                    self._stop_daemon("slurmctld")
                    for sub in ("state", "spool"):
                        shutil.rmtree(os.path.join(self.dir, sub),
                                      ignore_errors=True)
            if last is not None:
                raise last
        except BaseException:
            self.__exit__(None, None, None)
            raise
        self.timings["start_total"] = time.monotonic() - t0
        return self

    def __exit__(self, exc_type, exc, tb):
        t0 = time.monotonic()
        try:
            if "slurmctld" in self._procs and "slurmd" in self._procs:
                self._drain_jobs()
        finally:
            for name in ("slurmd", "slurmctld", "munged"):
                self._stop_daemon(name)
            self.timings["stop_total"] = time.monotonic() - t0
            if self.dir and not self.keep:
                shutil.rmtree(self.dir, ignore_errors=True)
        return False

    def _path(self, *parts):
        return os.path.join(self.dir, *parts)

    def _probe_node(self):
        out = subprocess.run([_which("slurmd"), "-C"], capture_output=True,
                             text=True, timeout=30).stdout
        line = next((l for l in out.splitlines()
                     if l.startswith("NodeName=")), None)
        if line is None:
            raise SlurmError("`slurmd -C` printed no NodeName line:\n" + out)
        kv = dict(t.split("=", 1) for t in line.split() if "=" in t)
        self.node = kv["NodeName"]
        self.cpus = int(kv.get("CPUs", os.cpu_count() or 1))
        self.node_line_hw = {k: kv[k] for k in (
            "CPUs", "Boards", "SocketsPerBoard", "CoresPerSocket",
            "ThreadsPerCore") if k in kv}
        # Leave some headroom below what slurmd measures (it checks >=).
        self.real_memory = max(256, int(int(kv.get("RealMemory", 1024)) * 0.9))

    def _write_munge(self):
        os.makedirs(self._path("munge"), mode=0o700)
        os.chmod(self._path("munge"), 0o755)   # munged wants 755 socket dir
        key = self._path("munge", "munge.key")
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o600)
        self.munge_socket = self._path("munge", "munge.socket.2")
        for sub in ("log", "tmp"):
            os.makedirs(self._path(sub), exist_ok=True)

    def _write_conf(self):
        self.ctld_port, self.slurmd_port = _free_ports(2)
        self.cluster_name = "t" + uuid.uuid4().hex[:10]
        for sub in ("state", "spool"):
            os.makedirs(self._path(sub), exist_ok=True)
        mem = self.def_mem_per_cpu
        if mem is None:
            # Room for ~2 jobs' worth per CPU; capped so jobs stay small.
            mem = max(64, min(2000, self.real_memory // (2 * self.cpus)))
        hw = " ".join("%s=%s" % kv for kv in self.node_line_hw.items())
        # Random first job id: job ids (also used in pmix/tmp paths) differ
        # between concurrent private clusters.
        # (MaxJobId defaults to 67043328.)
        first_job = 10000 + int.from_bytes(os.urandom(4), "big") % 50000000
        S = self.dir
        lines = [
            "ClusterName=%s" % self.cluster_name,
            "SlurmctldHost=%s(127.0.0.1)" % self.node,
            "SlurmctldPort=%d" % self.ctld_port,
            "SlurmdPort=%d" % self.slurmd_port,
            "AuthType=auth/munge",
            "AuthInfo=socket=%s,cred_expire=%d" % (self.munge_socket,
                                                   self.cred_expire),
            "CredType=cred/munge",
            "SlurmUser=root",
            "SlurmdUser=root",
            "StateSaveLocation=%s/state" % S,
            "SlurmdSpoolDir=%s/spool" % S,
            "SlurmctldPidFile=%s/slurmctld.pid" % S,
            "SlurmdPidFile=%s/slurmd.pid" % S,
            "SlurmctldLogFile=%s/log/slurmctld.log" % S,
            "SlurmdLogFile=%s/log/slurmd.log" % S,
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            "TmpFS=%s/tmp" % S,
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core_Memory",
            "DefMemPerCPU=%d" % mem,
            "MailProg=/bin/true",
            "SchedulerType=sched/backfill",
            # Frequent scheduling passes: released/requeued jobs start fast.
            "SchedulerParameters=sched_interval=2,bf_interval=1",
            "MpiDefault=none",
            "ReturnToService=2",
            "JobCompType=jobcomp/filetxt",
            "JobCompLoc=%s/log/jobcomp.txt" % S,
            "JobRequeue=1",
            "KillWait=%d" % self.kill_wait,
            "MinJobAge=600",
            "InactiveLimit=0",
            "FirstJobId=%d" % first_job,
            "NodeName=%s NodeAddr=127.0.0.1 %s RealMemory=%d State=UNKNOWN"
            % (self.node, hw, self.real_memory),
            "PartitionName=debug Nodes=%s Default=YES MaxTime=INFINITE "
            "State=UP" % self.node,
        ]
        extra = self.extra_conf
        if isinstance(extra, str):
            extra = [extra]
        lines += list(extra or [])
        self.conf = self._path("slurm.conf")
        with open(self.conf, "w") as f:
            f.write("# generated by tests/batch/slurm_cluster.py\n")
            f.write("\n".join(lines) + "\n")
        # Empty plugstack.conf next to slurm.conf (it is looked up there), so
        # nothing is read from /etc/slurm.
        open(self._path("plugstack.conf"), "w").close()

    def _spawn(self, name, argv, pidfile):
        out = open(self._path("log", name + ".stdout"), "ab")
        try:
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                 stderr=subprocess.STDOUT,
                                 start_new_session=True, env=self.env(),
                                 cwd=self.dir)
        finally:
            out.close()
        self._procs[name] = p
        self._pidfiles[name] = pidfile
        return p

    def _wait_until(self, what, cond, timeout, watch=()):
        deadline = time.monotonic() + timeout
        delay = 0.02
        while True:
            if cond():
                return
            for name in watch:
                p = self._procs.get(name)
                if p is not None and p.poll() is not None:
                    raise SlurmError("%s exited (rc=%s) while waiting for %s;"
                                     " log tail:\n%s" % (
                                         name, p.returncode, what,
                                         self._daemon_log_tail(name)))
            if time.monotonic() > deadline:
                raise SlurmError("timed out after %.0fs waiting for %s; "
                                 "logs:\n%s" % (timeout, what,
                                                self.log_tails()))
            time.sleep(delay)
            delay = min(delay * 1.5, 0.25)

    def _start_munged(self):
        t0 = time.monotonic()
        self._spawn("munged", [
            _which("munged"), "--foreground",
            "--socket=" + self.munge_socket,
            "--key-file=" + self._path("munge", "munge.key"),
            "--log-file=" + self._path("log", "munged.log"),
            "--pid-file=" + self._path("munged.pid"),
            "--seed-file=" + self._path("munge", "munged.seed"),
        ], self._path("munged.pid"))
        self._wait_until("munge socket", lambda: os.path.exists(
            self.munge_socket), 15, watch=("munged",))
        self.timings["munged"] = time.monotonic() - t0

    def _start_slurm(self):
        t0 = time.monotonic()
        self._spawn("slurmctld",
                    [_which("slurmctld"), "-D", "-i", "-f", self.conf],
                    self._path("slurmctld.pid"))
        self._wait_until("slurmctld to answer",
                         lambda: self.run(["scontrol", "ping"],
                                          check=False, timeout=10)
                         .stdout.find("UP") >= 0,
                         self.start_timeout, watch=("slurmctld",))
        t1 = time.monotonic()
        self.timings["slurmctld"] = t1 - t0
        self._spawn("slurmd", [_which("slurmd"), "-D", "-f", self.conf],
                    self._path("slurmd.pid"))
        self._wait_until("node idle in sinfo", self._node_idle,
                         self.start_timeout, watch=("slurmctld", "slurmd"))
        self.timings["slurmd_to_idle"] = time.monotonic() - t1

    def _node_idle(self):
        r = self.run(["sinfo", "-h", "-N", "-o", "%T"], check=False,
                     timeout=10)
        return r.returncode == 0 and r.stdout.strip() == "idle"

    # --------------------------------------------------------------- teardown
    def _read_pidfile(self, name):
        try:
            with open(self._pidfiles[name]) as f:
                return int(f.read().split()[0])
        except (OSError, ValueError, IndexError, KeyError):
            return None

    def _stop_daemon(self, name):
        p = self._procs.pop(name, None)
        if p is None:
            return
        pids = []
        pf = self._read_pidfile(name)
        # Only trust the PID file if it names the process we started.
        if pf is not None and pf == p.pid:
            pids.append(pf)
        elif p.pid not in pids:
            pids.append(p.pid)
        for sig, wait in ((signal.SIGTERM, self.stop_timeout),
                          (signal.SIGKILL, 5.0)):
            alive = [pid for pid in pids if _pid_alive(pid)]
            if not alive:
                break
            for pid in alive:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline:
                p.poll()
                if not any(_pid_alive(pid) for pid in pids):
                    break
                time.sleep(0.05)
        try:
            p.wait(timeout=1)
        except subprocess.TimeoutExpired:
            pass

    def _drain_jobs(self):
        """Cancel all jobs of this private cluster and wait until their
        processes are gone (slurmstepd outlives slurmd otherwise)."""
        try:
            r = self.run(["squeue", "-h", "-o", "%i"], check=False, timeout=10)
            if r.returncode != 0 or not r.stdout.strip():
                return
            step_pids = self._step_pids()
            self.run(["scancel", "--full"] + r.stdout.split(), check=False,
                     timeout=10)
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                q = self.run(["squeue", "-h", "-t", "R,CG,S,SO,ST,CF,RS",
                              "-o", "%i"], check=False, timeout=10)
                if q.returncode != 0 or not q.stdout.strip():
                    break
                time.sleep(0.2)
            # Last resort: processes that belong to our job steps.
            for pid in step_pids:
                if _pid_alive(pid):
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
        except (subprocess.SubprocessError, OSError):
            pass

    def _step_pids(self, job_id=None):
        argv = ["scontrol", "listpids"] + ([str(job_id)] if job_id else [])
        r = self.run(argv, check=False, timeout=10)
        pids = []
        for line in r.stdout.splitlines()[1:]:
            f = line.split()
            if f and f[0].isdigit():
                pids.append(int(f[0]))
        return pids

    def job_pids(self, job_id):
        """PIDs of the job's processes on the node (batch script, srun,
        tasks), from slurmd (`scontrol listpids JOBID`); [] when none."""
        return [p for p in self._step_pids(job_id) if _pid_alive(p)]

    def allocation_ended(self, job_id):
        """True once nothing of the job runs on the node any more: Slurm
        does not show it COMPLETING and slurmd lists no process of it."""
        r = self.run(["squeue", "-h", "-j", str(job_id), "-o", "%T"],
                     check=False, timeout=10)
        if "COMPLETING" in r.stdout:
            return False
        return not self.job_pids(job_id)

    # ----------------------------------------------------------------- client
    def env(self, extra=None):
        """Environment for client commands (sbatch, squeue, srun, ...)."""
        e = {k: v for k, v in os.environ.items()
             if not k.startswith(("SLURM_", "SBATCH_", "SRUN_", "SALLOC_",
                                  "SQUEUE_", "SINFO_", "SCONTROL_"))}
        e["SLURM_CONF"] = self.conf or ""
        path = e.get("PATH", "/usr/bin:/bin")
        for d in ("/usr/sbin", "/sbin"):
            if d not in path.split(":"):
                path += ":" + d
        e["PATH"] = path
        if extra:
            e.update(extra)
        return e

    def run(self, argv, check=True, timeout=60, cwd=None, env=None):
        """Run a client command against this cluster; CompletedProcess."""
        r = subprocess.run(argv, capture_output=True, text=True,
                           timeout=timeout, cwd=cwd, env=self.env(env),
                           stdin=subprocess.DEVNULL)
        if check and r.returncode != 0:
            raise SlurmError("%s failed (rc=%d): %s%s" % (
                " ".join(argv), r.returncode, r.stdout, r.stderr))
        return r

    def sbatch(self, script_path, *args, cwd=None, script_args=(), env=None):
        """Submit `script_path` with sbatch options `args`; returns job id.

        `cwd` is the submit (and default working/output) directory;
        `script_args` are passed to the script; `env` adds variables.
        """
        r = self.run(["sbatch"] + [str(a) for a in args] + [str(script_path)]
                     + [str(a) for a in script_args], cwd=cwd, env=env)
        m = re.search(r"Submitted batch job (\d+)", r.stdout)
        if not m:
            raise SlurmError("unexpected sbatch output: %r %r"
                             % (r.stdout, r.stderr))
        return int(m.group(1))

    def job_info(self, job_id):
        """dict from `scontrol show job -o JOBID`, or None if unknown."""
        r = self.run(["scontrol", "show", "job", "-o", str(job_id)],
                     check=False, timeout=30)
        if r.returncode != 0:
            return None
        for line in r.stdout.splitlines():
            if line.startswith("JobId="):
                return parse_scontrol_line(line)
        return None

    def _jobcomp_state(self, job_id):
        """Final state from the jobcomp/filetxt log (job left the queue)."""
        state = None
        try:
            with open(self._path("log", "jobcomp.txt")) as f:
                for line in f:
                    d = parse_scontrol_line(line)
                    if d.get("JobId") == str(job_id):
                        state = d.get("JobState")
        except OSError:
            pass
        return state

    def job_state(self, job_id):
        """Current JobState (base state, e.g. RUNNING, COMPLETED) or None."""
        info = self.job_info(job_id)
        if info is not None:
            return info.get("JobState")
        return self._jobcomp_state(job_id)

    def wait_for(self, job_id, states=("COMPLETED",), timeout=60.0,
                 poll=0.25, stop_on_terminal=True):
        """Poll until the job's state is in `states`; return that state.

        With stop_on_terminal (default), also returns as soon as the job
        reaches any terminal state (COMPLETED, FAILED, TIMEOUT, ...), so the
        caller must compare the result.  Raises TimeoutError otherwise.
        """
        if isinstance(states, str):
            states = (states,)
        states = set(states)
        deadline = time.monotonic() + timeout
        state = None
        while True:
            state = self.job_state(job_id)
            if state in states or (stop_on_terminal and
                                   state in TERMINAL_STATES):
                return state
            if time.monotonic() > deadline:
                raise TimeoutError("job %s: state %s not in %s after %.0fs; "
                                   "info: %s" % (job_id, state, sorted(states),
                                                 timeout,
                                                 self.job_info(job_id)))
            time.sleep(poll)

    def requeue(self, job_id, release=True, timeout=30.0):
        """`scontrol requeue JOBID`.  Slurm then holds the job (PENDING,
        Reason=BeginTime) for cred_expire + 1 s; with release, the hold is
        cleared (`scontrol update jobid=N StartTime=now`) as soon as that is
        safe: the old allocation has ended (Slurm no longer shows the job
        COMPLETING, slurmd lists none of its processes) and the clock is 2 s
        past the requeue.  slurmd revokes the killed allocation's credential
        with a timestamp in whole seconds and refuses a launch whose
        credential is not newer ("Job N already killed, do not launch batch
        job"); Slurm then ends the job FAILED with exit code 1."""
        self.run(["scontrol", "requeue", str(job_id)])
        requeued = int(time.time())
        if not release:
            return
        deadline = time.monotonic() + timeout
        while True:
            info = self.job_info(job_id) or {}
            if info.get("JobState") != "PENDING":
                if info.get("JobState") in TERMINAL_STATES | {"RUNNING"} \
                        and time.time() > requeued + 2:
                    return   # started again (or ended) by itself
            elif (info.get("Reason") == "BeginTime"
                  and time.time() >= requeued + 2
                  and self.allocation_ended(job_id)):
                r = self.run(["scontrol", "update", "jobid=%s" % job_id,
                              "StartTime=now"], check=False)
                if r.returncode == 0:
                    return
            if time.monotonic() > deadline:
                raise SlurmError("could not release requeued job %s: %s"
                                 % (job_id, info))
            time.sleep(0.2)

    def cancel(self, job_id, signal_name=None, batch_only=False):
        """scancel JOBID (optionally --signal=NAME, --batch)."""
        argv = ["scancel"]
        if signal_name:
            argv.append("--signal=%s" % signal_name)
        if batch_only:
            argv.append("--batch")
        self.run(argv + [str(job_id)])

    # ------------------------------------------------------------- debugging
    def _daemon_log_tail(self, name, n=30):
        return "".join("--- %s ---\n%s\n" % (os.path.basename(p), _tail(p, n))
                       for p in (self._path("log", name + ".log"),
                                 self._path("log", name + ".stdout")))

    def log_tails(self, n=20):
        return "\n".join(self._daemon_log_tail(x, n)
                         for x in ("munged", "slurmctld", "slurmd"))
