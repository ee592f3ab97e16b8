#include "app/submit.hpp"

#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>

#include "core/error.hpp"
#include "core/strings.hpp"
#include "io/run_directory.hpp"
#include "io/run_status.hpp"

namespace cumulus {

namespace fs = std::filesystem;

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') q += "'\\''";
    else q += c;
  }
  return q + "'";
}

namespace {

// Values that land in scheduler directives, which no shell quoting protects: a closed alphabet.
void check_word(const Config& cfg, const std::string& key, const std::string& v, const std::string& extra_chars,
                const std::string& what) {
  const std::regex ok("[A-Za-z0-9._" + extra_chars + "-]+");
  if (!std::regex_match(v, ok))
    cfg.fail(key, "\"" + v + "\" is not a valid " + what + ": use letters, digits and ._" + extra_chars + "-");
}

long parse_hms(const Config& cfg, const std::string& key, const std::string& v) {
  static const std::regex re("(?:(\\d+)-)?(\\d{1,3}):(\\d{2}):(\\d{2})");
  std::smatch m;
  if (!std::regex_match(v, m, re)) cfg.fail(key, "\"" + v + "\" is not a time limit: expected HH:MM:SS (or D-HH:MM:SS)");
  const long d = m[1].matched ? std::stol(m[1]) : 0;
  const long mm = std::stol(m[3]), ss = std::stol(m[4]);
  if (mm > 59 || ss > 59) cfg.fail(key, "\"" + v + "\": minutes and seconds must be below 60");
  return ((d * 24 + std::stol(m[2])) * 60 + mm) * 60 + ss;
}

std::string hms(long s) { return strprintf("%02ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60); }

bool on_path(const std::string& tool) {
  const char* path = std::getenv("PATH");
  if (!path) return false;
  std::string p = path;
  std::size_t start = 0;
  while (start <= p.size()) {
    const std::size_t end = p.find(':', start);
    const std::string dir = p.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!dir.empty() && ::access((dir + "/" + tool).c_str(), X_OK) == 0) return true;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return false;
}

// Runs a command, returning its exit status and its combined output.
int capture(const std::string& cmd, std::string& out) {
  out.clear();
  std::FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  const int st = ::pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

struct Plan {
  std::string scheduler, name, time, partition, account, launcher, image, run_dir, job_abs, binary_abs, workdir;
  long nodes, gpus, ranks, time_s, margin;
  std::vector<std::string> extra, modules;
};

// The part every batch script shares: modules, the run in the background, signals forwarded to
// it (bash runs traps only between commands, hence `wait` on a background child), and the exit
// status; `requeue` is the scheduler's own command for the job to requeue itself after exit 75.
// `requeue_if` is the shell condition under which the job requeues itself after exit 75.
std::string script_body(const Plan& p, const std::string& launch, const std::string& job_id_var,
                        const std::string& requeue, const std::string& requeue_if) {
  std::string s = "set -u\n";
  for (const auto& m : p.modules) s += "module load " + shell_quote(m) + "\n";
  s += "cd " + shell_quote(p.workdir) + " || exit 1\n";
  s += "export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}\n";
  s += "echo \"cumulus: job ${" + job_id_var + ":-?} starts on $(hostname) at $(date -u +%FT%TZ)\"\n";
  s += "child=\nwarned=\n";
  s += "forward() {\n  echo \"cumulus: $1 received at $(date -u +%FT%TZ): checkpoint and stop\"\n  warned=$1\n"
       "  if [ -n \"$child\" ]; then kill -USR1 \"$child\" 2>/dev/null; fi\n}\n";
  s += "trap 'forward USR1' USR1\ntrap 'forward TERM' TERM\n";
  s += launch + " " + shell_quote(p.binary_abs) + " run " + shell_quote(p.job_abs) + " --restart auto --set " +
       shell_quote("run.directory=\"" + p.run_dir + "\"") + " &\n";
  s += "child=$!\n";
  s += "# wait returns early when a trap runs; wait again until the run has really ended\n";
  s += "while :; do wait \"$child\"; rc=$?; kill -0 \"$child\" 2>/dev/null || break; done\n";
  s += "echo \"cumulus: run ended with status $rc at $(date -u +%FT%TZ)\"\n";
  s += "if [ \"$rc\" -eq 75 ] && " + requeue_if + "; then\n  echo \"cumulus: stopped after a checkpoint; requeueing\"\n  " +
       requeue + "\nfi\nexit \"$rc\"\n";
  return s;
}

std::string slurm_script(const Plan& p) {
  std::string s = "#!/bin/bash\n# Written by `cumulus submit`; resubmit with `sbatch` from any directory.\n";
  s += "#SBATCH --job-name=" + p.name + "\n";
  s += strprintf("#SBATCH --nodes=%ld\n#SBATCH --ntasks-per-node=%ld\n", p.nodes, p.ranks);
  if (p.gpus > 0) s += "#SBATCH --gpus-per-task=1\n";
  s += "#SBATCH --time=" + p.time + "\n";
  if (!p.partition.empty()) s += "#SBATCH --partition=" + p.partition + "\n";
  if (!p.account.empty()) s += "#SBATCH --account=" + p.account + "\n";
  s += "#SBATCH --requeue\n#SBATCH --open-mode=append\n";
  s += strprintf("#SBATCH --signal=B:USR1@%ld\n", p.margin);
  s += "#SBATCH --chdir=" + p.workdir + "\n";
  s += "#SBATCH --output=" + p.run_dir + "/slurm-%j.out\n";
  for (const auto& e : p.extra) s += "#SBATCH " + e + "\n";
  const std::string launch = p.launcher == "srun" ? "srun --mpi=pmix" : "mpirun";
  // Only after the time-limit warning (USR1): a TERM comes from the scheduler itself (a requeue or
  // preemption it carries out, or scancel), and requeueing then could hit the job's next start.
  // After `scontrol requeue` the script waits to be ended by Slurm: if it exited first, the job's
  // exit status could race the requeue and the job be recorded FAILED instead of requeued.
  return s + script_body(p, launch, "SLURM_JOB_ID",
                         "if scontrol requeue \"$SLURM_JOB_ID\"; then trap - TERM; sleep 300; fi",
                         "[ \"$warned\" = USR1 ]");
}

std::string pbs_script(const Plan& p) {
  std::string s = "#!/bin/bash\n# Written by `cumulus submit`; resubmit with `qsub`.\n";
  s += "#PBS -N " + p.name + "\n";
  s += strprintf("#PBS -l select=%ld:ncpus=%ld:mpiprocs=%ld", p.nodes, p.ranks, p.ranks);
  if (p.gpus > 0) s += strprintf(":ngpus=%ld", p.gpus);
  s += "\n#PBS -l walltime=" + p.time + "\n";
  if (!p.partition.empty()) s += "#PBS -q " + p.partition + "\n";
  if (!p.account.empty()) s += "#PBS -A " + p.account + "\n";
  s += "#PBS -r y\n#PBS -j oe\n#PBS -o " + p.workdir + "/" + p.run_dir + "/pbs.out\n";
  for (const auto& e : p.extra) s += "#PBS " + e + "\n";
  // PBS sends SIGTERM at the limit (then SIGKILL after kill_delay): the trap checkpoints on TERM.
  return s + script_body(p, "mpirun", "PBS_JOBID", "qrerun \"$PBS_JOBID\"", "true");
}

std::string k8s_name(const std::string& s) {
  std::string o;
  for (char c : s) o += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(c)) : '-';
  while (!o.empty() && o.front() == '-') o.erase(o.begin());
  while (!o.empty() && o.back() == '-') o.pop_back();
  return o.empty() ? "cumulus" : o.substr(0, 52);
}

std::string yaml_str(const std::string& s) { return double_quoted(s); }

std::string kubernetes_manifest(const Plan& p) {
  const std::string name = k8s_name(p.name);
  const long ranks = p.ranks;
  std::string cmd = "[";
  std::vector<std::string> argv;
  if (ranks > 1)
    argv = {"mpirun", "--allow-run-as-root", "-np", std::to_string(ranks)};
  argv.insert(argv.end(), {"cumulus", "run", "/work/job.toml", "--restart", "auto", "--set",
                           "run.directory=\"/work/" + p.run_dir + "\""});
  for (std::size_t i = 0; i < argv.size(); ++i) cmd += (i ? ", " : "") + yaml_str(argv[i]);
  cmd += "]";
  std::string y = "# Written by `cumulus submit`: kubectl apply -f this file. The run directory lives on the\n"
                  "# PersistentVolumeClaim " + name + "-run; copy the job file there as job.toml.\n";
  y += "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: " + name + "\n  labels:\n    app: cumulus\n";
  y += "spec:\n  completionMode: Indexed\n  completions: 1\n  parallelism: 1\n";
  y += "  # A pod that stops with exit 75 (checkpointed after SIGTERM/preemption) or fails is retried;\n"
       "  # the retry resumes from the newest checkpoint.\n  backoffLimit: 20\n";
  y += "  template:\n    metadata:\n      labels:\n        app: cumulus\n    spec:\n      restartPolicy: OnFailure\n";
  y += strprintf("      terminationGracePeriodSeconds: %ld\n", p.margin);
  y += "      containers:\n      - name: cumulus\n        image: " + yaml_str(p.image) + "\n";
  y += "        command: " + cmd + "\n        workingDir: /work\n";
  y += "        env:\n        - name: OMP_NUM_THREADS\n          value: \"1\"\n";
  y += "        resources:\n          limits:\n";
  if (p.gpus > 0) y += strprintf("            nvidia.com/gpu: %ld\n", p.gpus);
  else y += strprintf("            cpu: %ld\n", ranks);
  y += "        volumeMounts:\n        - name: run\n          mountPath: /work\n";
  y += "      volumes:\n      - name: run\n        persistentVolumeClaim:\n          claimName: " + name + "-run\n";
  return y;
}

}  // namespace

int submit_command(const Config& cfg, const SubmitRequest& req) {
  Plan p;
  p.scheduler = cfg.get<std::string>("job.scheduler");
  p.nodes = cfg.get<long>("job.nodes");
  p.gpus = cfg.get<long>("job.gpus_per_node");
  const long rpn = cfg.get<long>("job.ranks_per_node");
  p.ranks = p.gpus > 0 ? p.gpus : (rpn > 0 ? rpn : 1);
  if (p.gpus > 0 && rpn > 0 && rpn != p.gpus)
    cfg.fail("job.ranks_per_node", strprintf("%ld ranks per node with %ld GPUs per node: cumulus runs one rank per GPU",
                                             rpn, p.gpus));
  p.time = cfg.get<std::string>("job.time");
  p.time_s = parse_hms(cfg, "job.time", p.time);
  p.time = hms(p.time_s);
  p.partition = cfg.get<std::string>("job.partition");
  p.account = cfg.get<std::string>("job.account");
  p.launcher = cfg.get<std::string>("job.launcher");
  p.image = cfg.get<std::string>("job.image");
  p.extra = cfg.get<std::vector<std::string>>("job.extra");
  p.modules = cfg.get<std::vector<std::string>>("job.modules");
  p.run_dir = run_directory_for(req.job_file, cfg.get<std::string>("run.directory"));
  p.name = cfg.get<std::string>("run.name");
  if (!p.name.empty()) {
    check_word(cfg, "run.name", p.name, "", "job name");
  } else {  // from the job file's name: made safe rather than refused
    p.name = run_directory_for(req.job_file, "");
    for (char& c : p.name)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  }
  if (!p.partition.empty()) check_word(cfg, "job.partition", p.partition, "", "partition or queue name");
  if (!p.account.empty()) check_word(cfg, "job.account", p.account, "", "account name");
  for (const auto& m : p.modules) check_word(cfg, "job.modules", m, "/+", "module name");
  static const std::regex extra_ok("-[-A-Za-z0-9._=:,/@+]*");
  for (const auto& e : p.extra)
    if (!std::regex_match(e, extra_ok))
      cfg.fail("job.extra", "\"" + e + "\" is not a scheduler option: expected one like --constraint=h100 "
                            "(letters, digits and -._=:,/@+ only)");
  if (p.scheduler == "kubernetes") {
    if (p.image.empty()) cfg.fail("job.image", "Kubernetes needs a container image with cumulus in it");
    if (p.nodes > 1)
      cfg.fail("job.nodes", "multi-node Kubernetes jobs need an MPI launcher across pods (e.g. the MPI operator), "
                            "which cumulus submit does not write yet: use one node");
  }
  // The directives carry paths without shell quoting: they must be plain.
  std::error_code ec;
  p.workdir = fs::absolute(".", ec).lexically_normal().string();
  if (p.workdir.size() > 1 && p.workdir.back() == '/') p.workdir.pop_back();
  p.job_abs = fs::absolute(req.job_file, ec).lexically_normal().string();
  p.binary_abs = req.binary;
  static const std::regex plain_path("[A-Za-z0-9._/+@-]+");
  if (p.scheduler != "kubernetes" && (!std::regex_match(p.workdir, plain_path) || !std::regex_match(p.run_dir, plain_path)))
    throw InputError("the working directory '" + p.workdir + "' or run directory '" + p.run_dir +
                     "' has characters a scheduler directive cannot carry (spaces, quotes, ...): submit from a "
                     "plain path");

  // Warned this long before the limit, the job checkpoints and requeues: three times the
  // measured checkpoint time plus a step's worth, at least 60 s.
  double margin = cfg.get<double>("job.signal_margin");
  std::string margin_why = "job.signal_margin";
  if (margin == 0) {
    margin = 120;
    margin_why = "default (no checkpoint measured yet)";
    std::ifstream st(p.run_dir + "/status.json");
    std::string text((std::istreambuf_iterator<char>(st)), std::istreambuf_iterator<char>());
    std::smatch m;
    static const std::regex secs("\"seconds\"\\s*:\\s*([0-9.eE+-]+)");
    if (std::regex_search(text, m, secs)) {
      margin = std::max(60.0, std::ceil(3 * std::stod(m[1]) + 30));
      margin_why = "3 x the last measured checkpoint (" + std::string(m[1]) + " s) + 30 s";
    }
  }
  p.margin = static_cast<long>(margin);
  if (p.time_s < p.margin + 10)
    cfg.fail("job.time", strprintf("%s leaves no time to compute: the job is warned %ld s before its limit to "
                                   "checkpoint (%s); ask for at least %ld s",
                                   p.time.c_str(), p.margin, margin_why.c_str(), p.margin + 10));
  if (p.time_s < p.margin + 60)
    std::cout << "warning: the job computes for less than a minute per allocation before it is told to stop\n";

  const char* tool = p.scheduler == "slurm" ? "sbatch" : p.scheduler == "pbs" ? "qsub" : "kubectl";
  const std::string file =
      p.run_dir + "/" + (p.scheduler == "slurm" ? "submit.slurm" : p.scheduler == "pbs" ? "submit.pbs" : "job.yaml");
  const std::string text =
      p.scheduler == "slurm" ? slurm_script(p) : p.scheduler == "pbs" ? pbs_script(p) : kubernetes_manifest(p);
  if (!req.dry_run && !on_path(tool))
    throw InputError(std::string("'") + tool + "' is not on PATH: is this a " + p.scheduler +
                     " login node? (--dry-run writes the script without submitting)");
  if (!req.dry_run && p.scheduler == "slurm" && p.gpus > 0) {
    // More GPUs per node than the partition's nodes have: refuse before submitting.
    std::string out;
    const std::string cmd = "sinfo -h -o %G" + (p.partition.empty() ? std::string() : " -p " + p.partition);
    if (capture(cmd, out) == 0) {
      long most = 0;
      static const std::regex gres("gpu(?::[A-Za-z0-9_.-]+)?:(\\d+)");
      for (std::sregex_iterator it(out.begin(), out.end(), gres), end; it != end; ++it)
        most = std::max(most, std::stol((*it)[1]));
      if (most < p.gpus)
        cfg.fail("job.gpus_per_node", strprintf("%ld GPUs per node asked for, but the nodes offer at most %ld (sinfo: "
                                                "%s); use --gpus-per-node 0 for a CPU job",
                                                p.gpus, most, out.empty() ? "nothing" : out.substr(0, 60).c_str()));
    }
  }

  create_run_directory(p.run_dir);
  write_file_atomic(file, text);
  if (p.scheduler != "kubernetes") fs::permissions(file, fs::perms::owner_exec, fs::perm_options::add, ec);
  std::cout << "wrote " << file << " (" << p.scheduler << "; warned " << p.margin << " s before the limit: "
            << margin_why << ")\n";
  if (req.dry_run) {
    std::cout << text;
    return 0;
  }
  const std::string cmd = p.scheduler == "slurm"        ? "sbatch --parsable " + shell_quote(file)
                          : p.scheduler == "pbs"        ? "qsub " + shell_quote(file)
                                                        : "kubectl apply -f " + shell_quote(file);
  std::string out;
  const int rc = capture(cmd, out);
  if (rc != 0) throw Error(std::string(tool) + " refused the job (exit " + std::to_string(rc) + "): " + out);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  const std::string id = out.substr(0, out.find(';'));
  RunStatus status(p.run_dir, true);
  status.state = "queued";
  status.reason = p.scheduler + " job " + id;
  status.restarts = RunStatus::previous_restarts(p.run_dir);
  status.write();
  std::cout << "submitted: " << p.scheduler << " job " << id << "\n";
  return 0;
}

}  // namespace cumulus
