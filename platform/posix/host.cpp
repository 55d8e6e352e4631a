#include "platform/host.hpp"

#include "platform/arguments.hpp"

#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

extern char** environ;

namespace ddp::platform {

Os this_os() { return Os::Posix; }

pid_t current_pid() { return ::getpid(); }

std::string host_name() {
  char name[256] = {};
  return ::gethostname(name, sizeof name - 1) == 0 ? std::string(name) : std::string();
}

std::map<std::string, std::string> environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

std::filesystem::path executable_path() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : p;
}

bool stdin_is_terminal() { return ::isatty(STDIN_FILENO) == 1; }

std::string random_bytes(std::size_t n) {
  std::string bytes(n, '\0');
  std::size_t got = 0;
  while (got < bytes.size()) {
    auto r = ::getrandom(bytes.data() + got, bytes.size() - got, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw std::system_error(errno, std::generic_category(), "getrandom");
    got += static_cast<std::size_t>(r);
  }
  return bytes;
}
std::vector<std::string> utf8_arguments(int argc, char** argv) { return {argv, argv + argc}; }

void use_utf8_console() {}

}  // namespace ddp::platform
