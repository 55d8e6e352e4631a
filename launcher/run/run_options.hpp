#pragma once
// `ddp-launch run`'s options: the flags of the option table (launcher/run/run_option_table.hpp) are
// registered on a CLI11 app, and ONE pure function, plan_run, turns what was parsed
// plus a HostFacts value into the supervisor's config, or a UsageError naming the flag and the
// fix. `run` and `sbatch` both go through it, so sbatch rejects what run would reject.
// Side effects (the run directory in --log-dir, resolving the interpreter on PATH) happen after.
#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "launcher/run/host_facts.hpp"
#include "launcher/supervisor/supervisor_config.hpp"
#include "launcher/run/run_args.hpp"

namespace ddp::launcher {

// Registers run's options on `sub`, bound to the returned RunArgs; collect_run_args fills
// `command` and `given` once `sub` has parsed.
std::shared_ptr<RunArgs> add_run_options(CLI::App& sub);
void collect_run_args(const CLI::App& sub, RunArgs& args);

// run's options, then the script and its arguments, parsed as `ddp-launch run` parses them (the
// process's PET_* variables included); a UsageError with CLI11's message for an unknown flag or a
// value outside the option table's range or choices.
RunArgs parse_run_argv(const std::vector<std::string>& argv);

struct RunPlan {
  SupervisorConfig config;        // worker_argv[0] not resolved on PATH yet
  std::vector<std::string> info;  // lines for the log, in order
  std::vector<std::string> warnings;
  // The interpreter runs the script (no --no-python): worker_argv[0] is --python or $PYTHON_EXEC,
  // or empty when neither was given (the shell then picks one that can import torch).
  bool python_script = false;
  // Said again when the job fails: a likely cause seen before launch (a literal --rank in argv).
  std::string failure_hint;
};

// The pure core: parsed arguments + facts about the host → the supervisor's config.
RunPlan plan_run(const RunArgs& args, const HostFacts& facts);

// A --no-python command that is a Python interpreter running a script or a module ([python3, train.py,
// ...], [/venv/bin/python, -u, -m, pkg.train, ...]: no other interpreter option) as the argv a warm start
// forks (launcher/supervisor/warm_start.hpp: [python, -u, SCRIPT|-m MODULE, ...]); nullopt for any other
// command. `--warm-start on` forks such a command's restarts warm (the daemon's jobs, whose command is
// the whole argv, say so with distributed.warm_start: on); -u is what the daemon's PYTHONUNBUFFERED=1 is.
std::optional<std::vector<std::string>> warm_python_command(const std::vector<std::string>& command);

// "60s", "500ms", "2m" or a plain number of seconds; a UsageError naming `flag` otherwise.
std::chrono::milliseconds parse_duration(const std::string& value, const char* flag);

}  // namespace ddp::launcher
