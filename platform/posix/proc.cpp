#include "platform/proc.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <system_error>

#include "platform/file_lock.hpp"

namespace fs = std::filesystem;

namespace ddp::proc {

namespace {

// The real uid of `pid` (the first of /proc/<pid>/status's Uid: line), or nullopt.
std::optional<uid_t> real_uid_of(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/status", pid));
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with("Uid:")) continue;
    std::istringstream fields(line.substr(4));
    unsigned long uid = 0;
    if (fields >> uid) return static_cast<uid_t>(uid);
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

std::optional<ProcStat> read_proc_stat(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string text;
  if (!std::getline(in, text)) return std::nullopt;
  auto close = text.rfind(')');  // the command name may hold spaces and parentheses
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(text.substr(close + 1));
  std::vector<std::string> f;  // f[0] is field 3 (state)
  for (std::string field; rest >> field;) f.push_back(field);
  if (f.size() < 20 || f[0] == "Z" || f[0] == "X") return std::nullopt;
  try {
    ProcStat st;
    st.ppid = static_cast<pid_t>(std::stol(f[1]));
    st.pgid = static_cast<pid_t>(std::stol(f[2]));
    st.sid = static_cast<pid_t>(std::stol(f[3]));
    st.start_time = std::stoull(f[19]);
    st.same_user = real_uid_of(pid) == ::getuid();
    return st;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}
std::optional<StoppedProcess> stopped(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string text;
  if (!std::getline(in, text)) return std::nullopt;
  auto close = text.rfind(')');
  if (close == std::string::npos || close + 2 >= text.size()) return std::nullopt;
  const char state = text[close + 2];  // field 3
  if (state != 'T' && state != 't') return std::nullopt;
  StoppedProcess out;
  out.traced = state == 't';
  std::ifstream status(fmt::format("/proc/{}/status", pid));
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("TracerPid:", 0) != 0) continue;
    try {
      out.tracer = static_cast<pid_t>(std::stol(line.substr(10)));
    } catch (const std::exception&) {
      out.tracer = 0;
    }
    break;
  }
  if (out.tracer > 0) {
    out.traced = true;
    out.tracer_cmdline = cmdline(out.tracer);
  }
  return out;
}

namespace {

bool parse_pid(const std::string& name, pid_t& out) {
  if (name.empty()) return false;
  auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), out);
  return ec == std::errc() && p == name.data() + name.size();
}

// Calls fn(pid, fd_path, link_target) for every fd of every visible process.
template <typename Fn>
void for_each_fd(Fn&& fn) {
  std::error_code ec;
  for (const auto& proc_entry : fs::directory_iterator("/proc", ec)) {
    pid_t pid = 0;
    if (!parse_pid(proc_entry.path().filename().string(), pid)) continue;
    std::error_code fd_ec;
    for (const auto& fd : fs::directory_iterator(proc_entry.path() / "fd", fd_ec)) {
      std::error_code link_ec;
      auto target = fs::read_symlink(fd.path(), link_ec);
      if (!link_ec) fn(pid, fd.path(), target.string());
    }
  }
}

// One row of /proc/net/tcp{,6}: state (0A = LISTEN), local and remote ports, socket inode.
struct TcpSocket {
  std::string state;
  unsigned local_port = 0;
  unsigned remote_port = 0;
  std::string inode;
};

unsigned hex_port(const std::string& address) {  // "0100007F:7530" -> 30000
  auto colon = address.rfind(':');
  unsigned value = 0;
  if (colon == std::string::npos) return 0;
  std::from_chars(address.data() + colon + 1, address.data() + address.size(), value, 16);
  return value;
}

template <typename Fn>
void for_each_tcp_socket(Fn&& fn) {
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string sl, local, remote, queues, tr, retrnsmt, uid, timeout;
      TcpSocket sock;
      fields >> sl >> local >> remote >> sock.state >> queues >> tr >> retrnsmt >> uid >> timeout >> sock.inode;
      sock.local_port = hex_port(local);
      sock.remote_port = hex_port(remote);
      fn(sock);
    }
  }
}

// Socket inodes in LISTEN state bound to `port`.
std::set<std::string> listening_inodes(std::uint16_t port) {
  std::set<std::string> inodes;
  for_each_tcp_socket([&](const TcpSocket& sock) {
    if (sock.state == "0A" && sock.local_port == port) inodes.insert(sock.inode);
  });
  return inodes;
}

}  // namespace

std::string cmdline(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/cmdline", pid), std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!raw.empty() && raw.back() == '\0') raw.pop_back();
  for (char& c : raw) {
    if (c == '\0') c = ' ';
  }
  return raw;
}

std::vector<ProcessInfo> listeners_on_port(std::uint16_t port) {
  auto inodes = listening_inodes(port);
  std::vector<ProcessInfo> found;
  if (inodes.empty()) return found;
  std::set<pid_t> seen;
  for_each_fd([&](pid_t pid, const fs::path&, const std::string& target) {
    // target looks like "socket:[12345]"
    if (target.rfind("socket:[", 0) != 0) return;
    auto inode = target.substr(8, target.size() - 9);
    if (inodes.count(inode) && seen.insert(pid).second) found.push_back({pid, cmdline(pid)});
  });
  if (found.empty()) found.push_back({0, ""});
  return found;
}

std::vector<ProcessInfo> processes_with_open(const fs::path& path) {
  std::error_code ec;
  auto wanted = fs::weakly_canonical(path, ec).string();
  if (ec) wanted = path.string();
  // Same device and inode, not just the same name: a hard link or a bind mount is the same file.
  const auto want = platform::file_identity(path);
  std::vector<ProcessInfo> found;
  std::set<pid_t> seen;
  for_each_fd([&](pid_t pid, const fs::path& fd_path, const std::string& target) {
    bool same = target == wanted;
    if (!same && want && target.front() == '/') same = platform::file_identity(fd_path) == want;
    if (same && seen.insert(pid).second) found.push_back({pid, cmdline(pid)});
  });
  return found;
}

std::vector<fs::path> open_files(pid_t pid) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& fd : fs::directory_iterator(fmt::format("/proc/{}/fd", pid), ec)) {
    std::error_code link_ec;
    auto target = fs::read_symlink(fd.path(), link_ec);
    // Sockets, pipes and anonymous inodes read "socket:[…]", "pipe:[…]", "anon_inode:…"; a removed
    // file "/path (deleted)": neither is a path to look at.
    if (link_ec || target.empty() || target.native().front() != '/' || target.native().ends_with(" (deleted)"))
      continue;
    std::error_code st_ec;
    if (!fs::is_regular_file(fd.path(), st_ec)) continue;  // follows the fd: a device, a directory
    if (std::find(out.begin(), out.end(), target) == out.end()) out.push_back(std::move(target));
  }
  return out;
}

}  // namespace ddp::proc

#include <sys/resource.h>

namespace ddp::proc {

bool connected_to_port(pid_t pid, std::uint16_t port) {
  std::set<std::string> mine;
  std::error_code ec;
  for (const auto& fd : fs::directory_iterator(fmt::format("/proc/{}/fd", pid), ec)) {
    std::error_code link_ec;
    auto target = fs::read_symlink(fd.path(), link_ec).string();
    if (!link_ec && target.rfind("socket:[", 0) == 0) mine.insert(target.substr(8, target.size() - 9));
  }
  if (mine.empty()) return false;
  bool connected = false;
  for_each_tcp_socket([&](const TcpSocket& sock) {
    if (sock.state != "0A" && sock.remote_port == port && mine.count(sock.inode)) connected = true;
  });
  return connected;
}

std::optional<OpenFileLimit> open_file_limit(std::string& why) {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) {
    why = std::string("getrlimit(RLIMIT_NOFILE) failed: ") + std::strerror(errno);
    return std::nullopt;
  }
  return OpenFileLimit{static_cast<std::uint64_t>(lim.rlim_cur), static_cast<std::uint64_t>(lim.rlim_max)};
}

std::uint64_t raise_open_file_limit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return 0;
  if (lim.rlim_cur < lim.rlim_max) {
    rlimit raised = lim;
    raised.rlim_cur = lim.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) lim = raised;
  }
  return static_cast<std::uint64_t>(lim.rlim_cur);
}

}  // namespace ddp::proc

#include <csignal>

namespace ddp::proc {

bool terminate_process(pid_t pid, std::uint64_t start_time) {
  auto st = read_proc_stat(pid);
  return pid > 1 && st && st->start_time == start_time && st->same_user && ::kill(pid, SIGKILL) == 0;
}

}  // namespace ddp::proc

namespace ddp::proc {
namespace {

std::optional<std::string> read_whole(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return std::nullopt;
  return raw;
}

std::vector<std::string> split_nul(std::string_view raw) {
  std::vector<std::string> parts;
  while (!raw.empty()) {
    auto z = raw.find('\0');
    parts.emplace_back(raw.substr(0, z));
    if (z == std::string_view::npos) break;
    raw.remove_prefix(z + 1);
  }
  return parts;
}

}  // namespace

std::vector<ProcessTexts> process_texts() {
  std::vector<ProcessTexts> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    pid_t pid = 0;
    if (!parse_pid(entry.path().filename().string(), pid)) continue;
    auto argv = read_whole(entry.path() / "cmdline");
    // Gone while we looked, a kernel thread or a zombie: none of them can use a file.
    if (!argv || argv->empty()) continue;
    ProcessTexts p;
    p.pid = pid;
    p.argv = split_nul(*argv);
    if (auto env = read_whole(entry.path() / "environ")) {
      p.env = split_nul(*env);
    } else {
      p.env_denied = true;
    }
    std::error_code cwd_ec;
    p.cwd = fs::read_symlink(entry.path() / "cwd", cwd_ec);
    out.push_back(std::move(p));
  }
  return out;
}

std::optional<std::string> lock_table() { return read_whole("/proc/locks"); }

}  // namespace ddp::proc

namespace ddp::proc {

std::optional<std::string> orphaned(pid_t pid) {
  auto st = read_proc_stat(pid);
  if (!st || st->ppid != 1 || pid == 1) return std::nullopt;
  return std::string("it was re-parented to init (pid 1): the process that started it is gone");
}

}  // namespace ddp::proc
