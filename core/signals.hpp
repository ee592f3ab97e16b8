#pragma once
// SIGTERM, SIGUSR1 and SIGINT ask the run to stop after the current step (schedulers send them
// before preempting a node); the handler only records the signal.
namespace cumulus {
void install_stop_signal_handlers();
// The last stop signal received, or 0.
int stop_signal_received();
const char* signal_name(int sig);
}  // namespace cumulus
