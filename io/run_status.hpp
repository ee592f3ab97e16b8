#pragma once
// What a batch system (and a person) can read about a run while it runs, kept up to date by rank 0:
//  status.json  — state (queued, running, completed, failed, preempted), step, time, newest
//                 checkpoint, restarts so far;
//  metrics.prom — the same and more as Prometheus text (node_exporter textfile-collector
//                 convention): step, time, throughput, ETA, ranks, device memory, checkpoint
//                 step/age/duration, restarts.
// Both are written atomically (temporary name + rename), so a reader never sees half a file.
#include <cstdint>
#include <string>

namespace cumulus {

class RunStatus {
 public:
  RunStatus(std::string run_dir, bool is_root);

  // Reads the restart count of an earlier status.json in the run directory (0 when none).
  static long previous_restarts(const std::string& run_dir);
  // The state recorded in an earlier status.json ("" when none).
  static std::string previous_state(const std::string& run_dir);

  std::string state = "running";
  std::string reason;  // for failed/preempted
  long step = 0;
  double time = 0;
  double throughput = 0;  // work units per second
  std::string work_unit = "cell-updates";
  double eta_seconds = -1;
  int ranks = 1;
  std::string backend = "host";
  double device_memory_bytes = 0;
  long restarts = 0;
  long checkpoint_step = -1;
  std::string checkpoint_path;
  double checkpoint_unix_time = 0;  // when the newest checkpoint was completed
  double checkpoint_seconds = 0;    // how long writing it took
  double started_unix_time = 0;

  void write() const;  // both files; rank 0 only, others return

 private:
  std::string dir_;
  bool root_;
};

double unix_seconds();

}  // namespace cumulus
