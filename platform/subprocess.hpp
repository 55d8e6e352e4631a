#pragma once
// Running a short helper program (an interpreter probe, scontrol, sbatch) to its end with a
// deadline: argv (searched on PATH), output captured, killed at the timeout. Not for workers:
// those belong to the supervisor's event loop.
#include <chrono>
#include <string>
#include <vector>

namespace ddp {

struct CommandRun {
  bool started = false;
  std::string start_error;  // why it could not be started
  bool timed_out = false;
  int exit_code = -1;  // when it exited
  int signal = 0;      // when a signal ended it
  std::string output;  // stdout, and stderr too unless separate_stderr
  std::string errors;  // stderr with separate_stderr
  bool ok() const { return started && !timed_out && exit_code == 0; }
};

// stdin is /dev/null. Output beyond 64 KiB per stream is dropped.
CommandRun run_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                       bool separate_stderr = false);

}  // namespace ddp
