// Which interpreter runs the workers without --python/$PYTHON_EXEC (launcher/run/python_choice.hpp).
#include <doctest/doctest.h>

#include <set>

#include "launcher/run/python_choice.hpp"

using namespace ddp::launcher;

namespace {

std::vector<std::string> programs(const std::vector<InterpreterCandidate>& cs) {
  std::vector<std::string> out;
  for (const auto& c : cs) out.push_back(c.program);
  return out;
}

InterpreterChoice choose(const EnvMap& env, std::set<std::string> existing, std::set<std::string> with_torch) {
  return choose_interpreter(
      interpreter_candidates(env), [&](const InterpreterCandidate& c) { return existing.count(c.program) > 0; },
      [&](const InterpreterCandidate& c) { return with_torch.count(c.program) > 0; });
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("candidates: the active virtualenv, the conda environment, python3 on PATH, /usr/bin/python3") {
  CHECK(programs(interpreter_candidates({})) == std::vector<std::string>{"python3", "/usr/bin/python3"});
  CHECK(programs(interpreter_candidates({{"VIRTUAL_ENV", "/v"}, {"CONDA_PREFIX", "/c"}})) ==
        std::vector<std::string>{"/v/bin/python", "/c/bin/python", "python3", "/usr/bin/python3"});
  CHECK(programs(interpreter_candidates({{"VIRTUAL_ENV", ""}})).size() == 2);
}

TEST_CASE("the first candidate that can import torch is chosen, and the log line says which and why") {
  auto c = choose({}, {"python3", "/usr/bin/python3"}, {"/usr/bin/python3"});
  CHECK(c.program == "/usr/bin/python3");
  CHECK(c.has_torch);
  CHECK(contains(c.reason, "the system's /usr/bin/python3, which can import torch (python3 cannot import torch)"));
  auto venv = choose({{"VIRTUAL_ENV", "/v"}}, {"/v/bin/python", "python3", "/usr/bin/python3"},
                     {"/v/bin/python", "/usr/bin/python3"});
  CHECK(venv.program == "/v/bin/python");
  CHECK(contains(venv.reason, "$VIRTUAL_ENV=/v"));
  // A venv whose interpreter is gone is skipped.
  CHECK(choose({{"VIRTUAL_ENV", "/gone"}}, {"python3"}, {"python3"}).program == "python3");
}

TEST_CASE("without torch anywhere: the first interpreter that exists, and a reason naming --python") {
  auto c = choose({}, {"python3", "/usr/bin/python3"}, {});
  CHECK(c.program == "python3");
  CHECK_FALSE(c.has_torch);
  CHECK(contains(c.reason, "--python or $PYTHON_EXEC"));
  auto none = choose({}, {}, {});
  CHECK_FALSE(none.has_torch);
  CHECK(contains(none.reason, "no Python interpreter found"));
}

TEST_CASE("the named interpreter: --python, else $PYTHON_EXEC, else none (run and doctor then probe)") {
  CHECK(named_interpreter("/opt/py", {{"PYTHON_EXEC", "/env/python"}}) == "/opt/py");
  CHECK(named_interpreter("", {{"PYTHON_EXEC", "/env/python"}, {"VIRTUAL_ENV", "/venv"}}) == "/env/python");
  CHECK(named_interpreter("", {{"PYTHON_EXEC", ""}}).empty());
  CHECK(named_interpreter("", {{"VIRTUAL_ENV", "/venv"}}).empty());
}

TEST_CASE("interpreter candidates on Windows: Scripts\\python.exe, the conda prefix's python.exe, python on PATH") {
  CHECK(programs(interpreter_candidates({}, true)) == std::vector<std::string>{"python"});
  CHECK(programs(interpreter_candidates({{"VIRTUAL_ENV", "C:\\v"}, {"CONDA_PREFIX", "C:\\c"}}, true)) ==
        std::vector<std::string>{"C:\\v\\Scripts\\python.exe", "C:\\c\\python.exe", "python"});
}
