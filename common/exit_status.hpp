#pragma once
// How a process ended, encoded once: its exit code or the signal that killed it, as the event
// file's fields (`"exit_code": 3, "signal": null` / `"exit_code": null, "signal": "SIGKILL"`) and
// as the words every summary uses ("exited with code 3", "killed by SIGKILL", "killed by the OOM
// killer (memory.max=64 MiB, SIGKILL)").
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace ddp {

struct ExitStatus {
  int exit_code = 0;  // meaningful when signal == 0
  int signal = 0;     // the signal that killed it; 0: it exited

  static ExitStatus exited(int code) { return {code, 0}; }
  static ExitStatus killed(int signo) { return {0, signo}; }
  // A reaped process's pair: the signal when there is one (its exit code means nothing then).
  static ExitStatus of(int exit_code, int signo) { return signo ? killed(signo) : exited(exit_code); }
  static ExitStatus from_wait_status(int wait_status);  // waitpid's status

  bool succeeded() const { return signal == 0 && exit_code == 0; }
  // The shell's convention: the exit code, or 128 + N for signal N.
  int shell_code() const { return signal ? 128 + signal : exit_code; }
  bool operator==(const ExitStatus&) const = default;
};

// "exited with code 3", "killed by SIGKILL"; with OOM evidence (a SIGKILL the OOM killer sent):
// "killed by the OOM killer (EVIDENCE, SIGKILL)". A Windows NTSTATUS code (negative as an int)
// reads in hex: "exited with code 0xC0000005".
std::string describe_exit(const ExitStatus& status, const std::optional<std::string>& oom_evidence = std::nullopt);
// The same words after a subject ("rank 1 ...", "python3 ..."): "exited with code 3", "was killed by SIGKILL".
std::string exit_predicate(const ExitStatus& status);

// Into / out of an event: sets `exit_code` and `signal` (one of them null) in `fields`.
void put_exit_fields(nlohmann::json& fields, const ExitStatus& status);
// Reads them back; nullopt when neither says how the process ended (both missing or null, or a
// signal name no one knows). Accepts "SIGKILL", "KILL", "9" and "signal 99" (an unnamed signal).
std::optional<ExitStatus> exit_from_fields(const nlohmann::json& fields);

}  // namespace ddp
