#include "launcher/run/python_choice.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/env_contract.hpp"

namespace ddp::launcher {

std::string named_interpreter(const std::string& python_flag, const EnvMap& env) {
  if (!python_flag.empty()) return python_flag;
  auto it = env.find(std::string(env::kPythonExec));
  return it != env.end() ? it->second : std::string();
}

std::vector<InterpreterCandidate> interpreter_candidates(const EnvMap& env, bool windows) {
  std::vector<InterpreterCandidate> out;
  auto from_prefix = [&](std::string_view var, const char* what, const char* posix, const char* win) {
    auto it = env.find(std::string(var));
    if (it != env.end() && !it->second.empty()) {
      out.push_back(
          {it->second + (windows ? win : posix), fmt::format("the active {} (${}={})", what, var, it->second)});
    }
  };
  from_prefix(env::kVirtualEnv, "virtualenv", "/bin/python", "\\Scripts\\python.exe");
  from_prefix(env::kCondaPrefix, "conda environment", "/bin/python", "\\python.exe");
  if (windows) {
    out.push_back({"python", "python on PATH"});
    return out;
  }
  out.push_back({"python3", "python3 on PATH"});
  out.push_back({"/usr/bin/python3", "the system's /usr/bin/python3"});
  return out;
}

InterpreterChoice choose_interpreter(const std::vector<InterpreterCandidate>& candidates,
                                     const std::function<bool(const InterpreterCandidate&)>& exists,
                                     const std::function<bool(const InterpreterCandidate&)>& can_import_torch) {
  const InterpreterCandidate* first = nullptr;
  std::vector<std::string> without;
  for (const auto& c : candidates) {
    if (!exists(c)) continue;
    if (!first) first = &c;
    if (can_import_torch(c)) {
      std::string skipped = without.empty() ? "" : fmt::format(" ({} cannot import torch)", fmt::join(without, ", "));
      return {c.program,
              fmt::format("workers run {}, {}, which can import torch{}; --python or ${} chooses another", c.program,
                          c.source, skipped, env::kPythonExec),
              true};
    }
    without.push_back(c.program);
  }
  if (!first) {
    return {candidates.empty() ? std::string("python3") : candidates.back().program,
            fmt::format("no Python interpreter found (tried {}): give one with --python or ${}",
                        candidates.empty() ? std::string("none") : candidates.back().program, env::kPythonExec),
            false};
  }
  return {first->program,
          fmt::format("no interpreter that can import torch was found ({}): workers run {}, {}. If the script "
                      "needs torch, give an interpreter that has it with --python or ${}",
                      fmt::join(without, ", "), first->program, first->source, env::kPythonExec),
          false};
}

}  // namespace ddp::launcher
