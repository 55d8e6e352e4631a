#pragma once
// Which interpreter runs the workers when neither --python nor $PYTHON_EXEC names one: the first
// that can import torch of an active virtualenv, an active conda environment, python3 on PATH and
// /usr/bin/python3 (torchrun always uses its own interpreter, which has torch by definition).
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "launcher/workers/worker_env.hpp"

namespace ddp::launcher {

struct InterpreterCandidate {
  std::string program;  // a path, or a name searched on PATH
  std::string source;   // where it came from, for the log line
};

// Pure: the interpreter the user named: --python, else $PYTHON_EXEC when set and not empty; ""
// when neither names one (then probe_interpreter chooses). `run` and `doctor` both ask this.
std::string named_interpreter(const std::string& python_flag, const EnvMap& env);

// Pure: the candidates in order, from the environment. Windows lays them out its own way: a
// virtualenv's Scripts\python.exe, a conda environment's python.exe, python on PATH (no python3,
// no /usr/bin there).
std::vector<InterpreterCandidate> interpreter_candidates(const EnvMap& env, bool windows = false);

struct InterpreterChoice {
  std::string program;
  std::string reason;  // one log line: which was chosen and why
  bool has_torch = false;
};

// Pure: the first candidate `can_import_torch` accepts; when none does, the first that exists
// (`exists`), with a reason that says torch was not found and how to choose (--python).
InterpreterChoice choose_interpreter(const std::vector<InterpreterCandidate>& candidates,
                                     const std::function<bool(const InterpreterCandidate&)>& exists,
                                     const std::function<bool(const InterpreterCandidate&)>& can_import_torch);

// Shell: probes each candidate with `-c "find_spec('torch')"` (no import: cheap), each bounded by
// `timeout`.
InterpreterChoice probe_interpreter(const EnvMap& env, std::chrono::milliseconds timeout);

}  // namespace ddp::launcher
