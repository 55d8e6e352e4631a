// Shell of launcher/python_choice.hpp: runs the candidates.
#include <unistd.h>

#include <boost/process/search_path.hpp>

#include "launcher/python_choice.hpp"
#include "platform/subprocess.hpp"

namespace ddp::launcher {

InterpreterChoice probe_interpreter(const EnvMap& env, std::chrono::milliseconds timeout) {
  auto path_of = [](const InterpreterCandidate& c) {
    if (c.program.find('/') != std::string::npos)
      return ::access(c.program.c_str(), X_OK) == 0 ? c.program : std::string();
    return boost::process::search_path(c.program).string();
  };
  return choose_interpreter(
      interpreter_candidates(env), [&](const InterpreterCandidate& c) { return !path_of(c).empty(); },
      [&](const InterpreterCandidate& c) {
        auto run = run_command(
            {path_of(c), "-c", "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('torch') else 3)"},
            timeout);
        return run.ok();
      });
}

}  // namespace ddp::launcher
