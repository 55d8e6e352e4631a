#include "platform/stack_dump.hpp"

#include <fmt/format.h>
#include <sys/resource.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace ddp::platform {

bool runs_python(pid_t pid) {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink(fmt::format("/proc/{}/exe", pid), ec);
  return !ec && exe.filename().string().starts_with("python");
}

std::string request_stack_dump(pid_t pid) {
  rlimit no_core{0, 0};
  ::prlimit(pid, RLIMIT_CORE, &no_core, nullptr);  // best effort: it may be gone
  if (::kill(pid, SIGABRT) == 0) return "";
  return fmt::format("SIGABRT could not be sent: {}", std::strerror(errno));
}

std::string_view stack_dump_name() { return "SIGABRT"; }

std::string_view native_stack_dump_hint() { return "link the worker SDK for its SIGABRT handler"; }

void continue_process(pid_t pid) { ::kill(pid, SIGCONT); }

}  // namespace ddp::platform
