// Shell of launcher/run/python_choice.hpp: runs the candidates.
#include "launcher/run/python_choice.hpp"
#include "platform/host.hpp"
#include "platform/programs.hpp"
#include "platform/subprocess.hpp"

namespace ddp::launcher {

InterpreterChoice probe_interpreter(const EnvMap& env, std::chrono::milliseconds timeout) {
  auto path_of = [](const InterpreterCandidate& c) { return platform::find_program(c.program).value_or(""); };
  return choose_interpreter(
      interpreter_candidates(env, platform::this_os() == platform::Os::Windows),
      [&](const InterpreterCandidate& c) { return !path_of(c).empty(); },
      [&](const InterpreterCandidate& c) {
        auto run = run_command(
            {path_of(c), "-c", "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('torch') else 3)"},
            timeout);
        return run.ok();
      });
}

}  // namespace ddp::launcher
