#include "io/run_status.hpp"

#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>

#include "core/strings.hpp"
#include "io/run_directory.hpp"

namespace cumulus {

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

RunStatus::RunStatus(std::string run_dir, bool is_root) : dir_(std::move(run_dir)), root_(is_root) {
  started_unix_time = unix_seconds();
}

namespace {
std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
std::string json_string(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      o += strprintf("\\u%04x", c);
      continue;
    }
    o += c;
  }
  return o + "\"";
}
}  // namespace

long RunStatus::previous_restarts(const std::string& run_dir) {
  std::smatch m;
  const std::string text = read_file(run_dir + "/status.json");
  static const std::regex re("\"restarts\"\\s*:\\s*(\\d+)");
  return std::regex_search(text, m, re) ? std::stol(m[1]) : 0;
}

std::string RunStatus::previous_state(const std::string& run_dir) {
  std::smatch m;
  const std::string text = read_file(run_dir + "/status.json");
  static const std::regex re("\"state\"\\s*:\\s*\"([a-z]+)\"");
  return std::regex_search(text, m, re) ? std::string(m[1]) : std::string();
}

void RunStatus::write() const {
  if (!root_) return;
  const double now = unix_seconds();
  std::string j = "{\n";
  j += "  \"state\": " + json_string(state) + ",\n";
  j += "  \"reason\": " + json_string(reason) + ",\n";
  j += strprintf("  \"step\": %ld,\n  \"time\": %.17g,\n", step, time);
  j += strprintf("  \"throughput_per_second\": %.6g,\n  \"work_unit\": %s,\n", throughput, json_string(work_unit).c_str());
  j += strprintf("  \"eta_seconds\": %.6g,\n  \"ranks\": %d,\n  \"backend\": %s,\n", eta_seconds, ranks,
                 json_string(backend).c_str());
  j += strprintf("  \"restarts\": %ld,\n", restarts);
  j += "  \"newest_checkpoint\": " +
       (checkpoint_step >= 0 ? strprintf("{\"step\": %ld, \"path\": %s, \"unix_time\": %.3f, \"seconds\": %.6g}",
                                         checkpoint_step, json_string(checkpoint_path).c_str(), checkpoint_unix_time,
                                         checkpoint_seconds)
                             : std::string("null")) +
       ",\n";
  j += strprintf("  \"started_unix_time\": %.3f,\n  \"updated_unix_time\": %.3f\n}\n", started_unix_time, now);
  write_file_atomic(dir_ + "/status.json", j);

  // Prometheus text format 0.0.4: HELP and TYPE for every metric, counters end in _total.
  std::string p;
  auto gauge = [&](const char* name, const char* help, double v, const std::string& labels = "") {
    p += strprintf("# HELP %s %s\n# TYPE %s gauge\n%s%s %.17g\n", name, help, name, name, labels.c_str(), v);
  };
  const std::string run = "{run_dir=" + json_string(dir_) + "}";
  gauge("cumulus_step", "Time steps completed.", static_cast<double>(step), run);
  gauge("cumulus_simulated_time", "Simulated time reached, in the solver's unit.", time, run);
  gauge("cumulus_throughput", "Work per wall second, in the unit named by the unit label.", throughput,
        "{run_dir=" + json_string(dir_) + ",unit=" + json_string(work_unit) + "}");
  gauge("cumulus_eta_seconds", "Estimated wall seconds to the end of the run (-1: unknown).", eta_seconds, run);
  gauge("cumulus_ranks", "MPI ranks of the run.", ranks, run);
  gauge("cumulus_device_memory_used_bytes", "GPU memory in use on rank 0's device (0 on the host backend).",
        device_memory_bytes, run);
  gauge("cumulus_last_checkpoint_step", "Step of the newest verified checkpoint (-1: none yet).",
        static_cast<double>(checkpoint_step), run);
  gauge("cumulus_last_checkpoint_age_seconds", "Wall seconds since the newest checkpoint was completed (-1: none).",
        checkpoint_step >= 0 ? now - checkpoint_unix_time : -1.0, run);
  gauge("cumulus_last_checkpoint_duration_seconds", "Wall seconds the newest checkpoint took to write and verify.",
        checkpoint_seconds, run);
  gauge("cumulus_running", "1 while the run is running, 0 once it has ended.", state == "running" ? 1 : 0, run);
  p += strprintf("# HELP cumulus_restarts_total Restarts of this run from a checkpoint.\n"
                 "# TYPE cumulus_restarts_total counter\ncumulus_restarts_total%s %ld\n",
                 run.c_str(), restarts);
  write_file_atomic(dir_ + "/metrics.prom", p);
}

}  // namespace cumulus
