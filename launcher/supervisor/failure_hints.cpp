#include "launcher/supervisor/failure_hints.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <string_view>

namespace ddp::launcher {
namespace {

bool names_torch(std::string_view line) {
  for (std::string_view mod : {"'torch'", "'torch.", "\"torch\"", "'torch._C'"}) {
    if (line.find(mod) != std::string_view::npos) return true;
  }
  return line.find("libtorch") != std::string_view::npos;
}

bool torch_import_failed(std::string_view line) {
  const bool import_error = line.find("ModuleNotFoundError:") != std::string_view::npos ||
                            line.find("ImportError:") != std::string_view::npos;
  return import_error && names_torch(line);
}

bool looks_like_python(const std::string& program) {
  return std::filesystem::path(program).filename().string().rfind("python", 0) == 0;
}

}  // namespace

std::optional<std::string> missing_torch_hint(const std::vector<std::string>& stderr_tail,
                                              const std::vector<std::string>& worker_argv) {
  auto it = std::find_if(stderr_tail.rbegin(), stderr_tail.rend(),
                         [](const std::string& l) { return torch_import_failed(l); });
  if (it == stderr_tail.rend()) return std::nullopt;
  const std::string program = worker_argv.empty() ? std::string("?") : worker_argv.front();
  if (looks_like_python(program)) {
    return fmt::format(
        "the rank ran under {}, which cannot import torch ({}). Pass --python PATH (or set PYTHON_EXEC) to an "
        "interpreter that has torch, e.g. the one `python -c 'import torch'` works with, or activate its venv",
        program, *it);
  }
  return fmt::format(
      "the program {} (started as given, --no-python) ran a python that cannot import torch ({}). Make it use an "
      "interpreter that has torch, or drop --no-python and pass --python PATH (or set PYTHON_EXEC)",
      program, *it);
}

}  // namespace ddp::launcher
