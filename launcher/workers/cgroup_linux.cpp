// The shell half of launcher/workers/cgroup.hpp: directories, cgroup.kill, cgroup.events, /dev/kmsg.
#include "launcher/workers/cgroup.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/error.hpp"

namespace fs = std::filesystem;

namespace ddp::launcher {
namespace {

std::optional<std::string> read_text(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Cgroup files take one value per write(2); an error is the kernel's answer, returned as text.
std::optional<std::string> write_value(const fs::path& path, std::string_view value) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return std::string(std::strerror(errno));
  ssize_t n = ::write(fd, value.data(), value.size());
  int err = errno;
  ::close(fd);
  if (n < 0) return std::string(std::strerror(err));
  return std::nullopt;
}

bool make_dir(const fs::path& path, std::string& why) {
  if (::mkdir(path.c_str(), 0755) == 0 || errno == EEXIST) return true;
  why = fmt::format("mkdir {}: {}", path.string(), std::strerror(errno));
  return false;
}

bool has_word(std::string_view text, std::string_view word) {
  std::istringstream in{std::string(text)};
  for (std::string w; in >> w;) {
    if (w == word) return true;
  }
  return false;
}

// Waits (poll on cgroup.events, which the kernel signals with POLLPRI) until no process is left in
// `dir` or the deadline passes.
bool wait_unpopulated(const fs::path& dir, std::chrono::steady_clock::time_point deadline) {
  int fd = ::open((dir / "cgroup.events").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return true;  // gone already
  bool empty = false;
  for (;;) {
    char buf[256];
    ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0) break;
    buf[n] = '\0';
    if (std::strstr(buf, "populated 0")) {
      empty = true;
      break;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, POLLPRI, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) < 0 && errno != EINTR) break;
  }
  ::close(fd);
  return empty;
}

// rmdir, children first (a cgroup directory holds no regular files that need removing).
void remove_tree(const fs::path& dir) {
  std::error_code ec;
  std::vector<fs::path> subdirs;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.is_directory(ec)) subdirs.push_back(e.path());
  }
  for (const auto& d : subdirs) remove_tree(d);
  if (::rmdir(dir.c_str()) != 0 && errno != ENOENT) {
    spdlog::debug("cgroup {} not removed: {}", dir.string(), std::strerror(errno));
  }
}

std::string sanitize(std::string_view run_id) {
  std::string out(run_id);
  for (char& c : out) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  }
  return out.empty() ? "none" : out;
}

}  // namespace

WorkerCgroups::WorkerCgroups(std::string_view run_id, std::optional<std::uint64_t> memory_limit_per_rank)
    : limit_(memory_limit_per_rank) {
  auto own = parse_proc_cgroup(read_text("/proc/self/cgroup").value_or(""));
  auto mounts = parse_mountinfo(read_text("/proc/self/mountinfo").value_or(""));
  auto name = fmt::format("ddp-launch-{}-{}", sanitize(run_id), ::getpid());
  std::string why_not_v2 = "no cgroup2 hierarchy is mounted";
  if (own.v2 && mounts.v2) {
    if (auto dir = mounts.v2->dir_of(*own.v2)) {
      auto base = *dir / name;
      if (!make_dir(base, why_not_v2)) {
      } else if (!fs::exists(base / "cgroup.kill")) {
        why_not_v2 = "this kernel has no cgroup.kill (Linux < 5.14)";
        ::rmdir(base.c_str());
      } else {
        v2_ = base;
        auto controllers = read_text(base / "cgroup.controllers").value_or("");
        if (has_word(controllers, "memory") && !write_value(base / "cgroup.subtree_control", "+memory")) {
          memory_ = Memory::V2;
        }
      }
    } else {
      why_not_v2 = fmt::format("our cgroup {} is outside the mounted cgroup2 tree", *own.v2);
    }
  }
  std::string why_not_memory = "no memory controller in the cgroup2 tree and no v1 memory hierarchy";
  if (memory_ == Memory::None && own.v1_memory && mounts.v1_memory) {
    if (auto dir = mounts.v1_memory->dir_of(*own.v1_memory)) {
      auto base = *dir / name;
      if (make_dir(base, why_not_memory)) {
        v1_memory_ = base;
        memory_ = Memory::V1;
      }
    }
  }
  if (v2_.empty()) {
    spdlog::debug("worker cgroups: off ({}); process groups alone contain the workers", why_not_v2);
  } else {
    spdlog::debug("worker cgroups: {} (cgroup.kill at teardown)", v2_.string());
  }
  if (memory_ == Memory::None) {
    spdlog::debug("worker memory cgroups: off ({}); OOM kills are recognised from the kernel log only", why_not_memory);
    if (limit_) {
      throw UsageError(
          fmt::format("--memory-limit-per-rank needs a memory cgroup this process can create, and "
                      "there is none here ({}). Run as root on a host with cgroups, or delegate "
                      "the memory controller; or leave the option out.",
                      why_not_memory));
    }
  } else {
    spdlog::debug("worker memory cgroups: {}", memory_ == Memory::V2 ? v2_.string() : v1_memory_.string());
  }
}

WorkerCgroups::~WorkerCgroups() {
  kill_all();
  remove_attempts(std::chrono::milliseconds(1000));
  for (const auto& base : {v2_, v1_memory_}) {
    if (!base.empty()) remove_tree(base);
  }
}

fs::path WorkerCgroups::rank_dir(const fs::path& base, int attempt, int local_rank) const {
  return base / fmt::format("attempt_{}", attempt) / fmt::format("rank_{}", local_rank);
}

std::vector<platform::NativeHandle> WorkerCgroups::prepare_rank(int attempt, int local_rank) {
  std::vector<int> fds;
  if (std::find(attempts_.begin(), attempts_.end(), attempt) == attempts_.end()) attempts_.push_back(attempt);
  auto join = [&](const fs::path& base, bool v2) {
    std::string why;
    auto dir = rank_dir(base, attempt, local_rank);
    if (!make_dir(dir.parent_path(), why)) return spdlog::warn("worker cgroup: {}", why);
    if (v2 && memory_ == Memory::V2) write_value(dir.parent_path() / "cgroup.subtree_control", "+memory");
    if (!make_dir(dir, why)) return spdlog::warn("worker cgroup: {}", why);
    if (limit_ && (v2 ? memory_ == Memory::V2 : memory_ == Memory::V1)) {
      auto bytes = std::to_string(*limit_);
      // RAM and swap together: a rank over its limit is OOM-killed, not swapped out.
      auto err = v2 ? write_value(dir / "memory.max", bytes) : write_value(dir / "memory.limit_in_bytes", bytes);
      if (err) throw Error(fmt::format("cannot set the memory limit of {}: {}", dir.string(), *err));
      if (v2) {
        write_value(dir / "memory.swap.max", "0");
      } else {
        write_value(dir / "memory.memsw.limit_in_bytes", bytes);
      }
    }
    int fd = ::open((dir / "cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0)
      return spdlog::warn("worker cgroup: cannot open {}/cgroup.procs: {}", dir.string(), std::strerror(errno));
    fds.push_back(fd);
  };
  if (!v2_.empty()) join(v2_, true);
  if (memory_ == Memory::V1) join(v1_memory_, false);
  return fds;
}

void WorkerCgroups::kill_all() {
  if (v2_.empty()) return;
  if (auto err = write_value(v2_ / "cgroup.kill", "1")) {
    spdlog::debug("cgroup.kill on {}: {}", v2_.string(), *err);
  }
}

void WorkerCgroups::remove_attempts(std::chrono::milliseconds wait) {
  auto deadline = std::chrono::steady_clock::now() + wait;
  std::vector<int> kept;
  for (int attempt : attempts_) {
    auto v2_attempt = v2_.empty() ? fs::path() : v2_ / fmt::format("attempt_{}", attempt);
    bool empty = v2_attempt.empty() ||
                 wait_unpopulated(v2_attempt, wait.count() > 0 ? deadline : std::chrono::steady_clock::now());
    if (!empty) {
      kept.push_back(attempt);
      continue;
    }
    if (!v2_attempt.empty()) remove_tree(v2_attempt);
    if (memory_ == Memory::V1) remove_tree(v1_memory_ / fmt::format("attempt_{}", attempt));
  }
  attempts_ = kept;
}

std::optional<std::string> WorkerCgroups::oom_evidence(int attempt, int local_rank) const {
  std::optional<std::string> text;
  if (memory_ == Memory::V2) text = read_text(rank_dir(v2_, attempt, local_rank) / "memory.events");
  if (memory_ == Memory::V1) text = read_text(rank_dir(v1_memory_, attempt, local_rank) / "memory.oom_control");
  auto count = text ? parse_oom_kill_count(*text) : std::nullopt;
  if (!count || *count == 0) return std::nullopt;
  if (!limit_) return std::string("no per-rank limit: the machine or its container ran out of memory");
  return fmt::format("{}={}", memory_ == Memory::V2 ? "memory.max" : "memory.limit_in_bytes",
                     format_memory_size(*limit_));
}

bool kill_and_remove_run_cgroups(const std::vector<fs::path>& dirs, std::chrono::milliseconds wait) {
  auto deadline = std::chrono::steady_clock::now() + wait;
  bool any = false;
  auto ours = [](const fs::path& dir) {
    return dir.filename().string().rfind("ddp-launch-", 0) == 0 && fs::exists(dir / "cgroup.procs");
  };
  for (const auto& dir : dirs) {
    if (ours(dir) && fs::exists(dir / "cgroup.kill")) {
      write_value(dir / "cgroup.kill", "1");
      wait_unpopulated(dir, deadline);
    }
  }
  for (const auto& dir : dirs) {
    if (!ours(dir)) continue;
    any = true;
    remove_tree(dir);
  }
  return any;
}

std::vector<fs::path> WorkerCgroups::dirs() const {
  std::vector<fs::path> out;
  for (const auto& d : {v2_, v1_memory_}) {
    if (!d.empty()) out.push_back(d);
  }
  return out;
}

bool kernel_log_oom_kill(pid_t pid) {
  int fd = ::open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  bool found = false;
  char buf[8192];  // /dev/kmsg returns one record per read
  for (int records = 0; records < 100000 && !found; ++records) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EPIPE) continue;  // overwritten while we read: skip ahead
    if (n <= 0) break;                      // EAGAIN: the end of the log
    found = kernel_log_names_oom_kill(std::string_view(buf, static_cast<std::size_t>(n)), pid);
  }
  ::close(fd);
  return found;
}

std::optional<std::string> oom_kill_evidence(const WorkerCgroups& cgroups, int attempt, int local_rank, pid_t pid,
                                             int signal) {
  if (signal != SIGKILL) return std::nullopt;
  if (cgroups.memory_accounting()) return cgroups.oom_evidence(attempt, local_rank);
  if (kernel_log_oom_kill(pid)) return "per the kernel log";
  return std::nullopt;
}

}  // namespace ddp::launcher
