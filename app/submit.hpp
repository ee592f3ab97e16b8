#pragma once
// `cumulus submit`: writes a batch script (Slurm, PBS) or a Job manifest (Kubernetes) into the run
// directory and submits it. The job runs `cumulus run JOB --restart auto`, checkpoints and stops
// (exit 75) when warned of its time limit or preemption, and requeues itself.
#include <string>

#include "core/config.hpp"

namespace cumulus {

struct SubmitRequest {
  std::string job_file;  // as given
  std::string binary;    // the cumulus executable to run
  bool dry_run = false;
};

int submit_command(const Config& cfg, const SubmitRequest& req);

// Shell single-quoting: the result is one word whatever `s` holds.
std::string shell_quote(const std::string& s);

}  // namespace cumulus
