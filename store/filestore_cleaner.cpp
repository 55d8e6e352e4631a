#include "store/filestore_cleaner.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <thread>

#include "common/error.hpp"

namespace ddp::store {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Far above any FileStore a job leaves (a 30-minute barrier of two ranks is ~20 MB), low enough
// that pointing clean at a disk image fails fast instead of reading it.
constexpr off_t kMaxFileBytes = off_t{1} << 30;

bool contains(const std::vector<pid_t>& list, pid_t pid) {
  return std::find(list.begin(), list.end(), pid) != list.end();
}

bool parse_pid(const std::string& s, pid_t& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

// The whole of a /proc file, or nullopt when it cannot be opened (gone, or another user's).
std::optional<std::string> read_proc_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return std::nullopt;
  return raw;
}

std::vector<std::string_view> split_nul(std::string_view raw) {
  std::vector<std::string_view> parts;
  while (!raw.empty()) {
    auto z = raw.find('\0');
    parts.push_back(raw.substr(0, z));
    if (z == std::string_view::npos) break;
    raw.remove_prefix(z + 1);
  }
  return parts;
}

pid_t parent_of(pid_t pid) {
  auto stat = read_proc_file(fmt::format("/proc/{}/stat", pid));
  if (!stat) return 0;
  // "pid (comm) S ppid ...": comm may itself contain ") ", so parse after the last ')'.
  auto close = stat->rfind(')');
  if (close == std::string::npos || close + 4 >= stat->size()) return 0;
  std::string_view rest(*stat);
  rest.remove_prefix(close + 4);  // ") S "
  pid_t ppid = 0;
  std::from_chars(rest.data(), rest.data() + rest.size(), ppid);
  return ppid;
}

struct FileRead {
  std::string bytes;
  std::string error;  // empty on success
};

FileRead read_all(int fd) {
  FileRead r;
  char buf[64 * 1024];
  off_t at = 0;
  for (;;) {
    ssize_t n = ::pread(fd, buf, sizeof buf, at);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      r.error = std::strerror(errno);
      return r;
    }
    if (n == 0) return r;
    r.bytes.append(buf, static_cast<std::size_t>(n));
    at += n;
    if (at > kMaxFileBytes) {
      r.error = fmt::format("larger than {} bytes, far more than a FileStore holds", kMaxFileBytes);
      return r;
    }
  }
}

// LOCK_EX|LOCK_NB, retried until the deadline: a blocking flock would hang forever behind a
// reader spinning on a torn tail.
bool lock_exclusive_within(int fd, std::chrono::milliseconds timeout, std::chrono::milliseconds retry) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return true;
    if (errno != EWOULDBLOCK && errno != EINTR) return false;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(retry);
  }
}

struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  bool operator==(const FileId&) const = default;
};

}  // namespace

FileStoreCleaner::FileStoreCleaner(CleanOptions options) : options_(std::move(options)) {
  not_users_ = options_.ignore_pids;
  not_users_.push_back(::getpid());
  not_referencers_ = not_users_;
  for (pid_t p = ::getppid(); p > 0 && !contains(not_referencers_, p); p = parent_of(p)) not_referencers_.push_back(p);
}

namespace {

struct Scan {
  const std::vector<pid_t>& not_users;
  const std::vector<pid_t>& not_referencers;

  std::vector<LockHolder> lock_holders(const FileId& id) const {
    std::vector<LockHolder> holders;
    auto text = read_proc_file("/proc/locks");
    if (!text) return holders;
    for (const auto& e : parse_proc_locks(*text)) {
      if (e.waiting || e.inode != id.ino || makedev(e.dev_major, e.dev_minor) != id.dev) continue;
      if (contains(not_users, e.pid)) continue;
      holders.push_back({{e.pid, proc::cmdline(e.pid)}, e.exclusive});
    }
    return holders;
  }

  void gather(const fs::path& file, const std::vector<fs::path>& names, const FileId& id, FileStoreEvidence& ev) const {
    for (auto& p : proc::processes_with_open(file)) {
      if (!contains(not_users, p.pid)) ev.open_by.push_back(std::move(p));
    }
    ev.lock_holders = lock_holders(id);
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator("/proc", ec)) {
      pid_t pid = 0;
      if (!parse_pid(entry.path().filename().string(), pid) || contains(not_referencers, pid)) continue;
      auto argv = read_proc_file(entry.path() / "cmdline");
      auto env = read_proc_file(entry.path() / "environ");
      // Gone while we looked, a kernel thread or a zombie: none of them can use a FileStore.
      if (!argv || argv->empty()) continue;
      if (!env) ++ev.uninspectable;
      std::error_code cwd_ec;
      auto cwd = fs::read_symlink(entry.path() / "cwd", cwd_ec);
      auto names_it = [&](const std::optional<std::string>& raw) {
        if (!raw) return false;
        for (auto item : split_nul(*raw)) {
          for (const auto& n : names) {
            if (mentions_path(item, n, cwd_ec ? fs::path() : cwd)) return true;
          }
        }
        return false;
      };
      if (names_it(argv)) ev.named_in_argv.push_back({pid, proc::cmdline(pid)});
      if (names_it(env)) ev.named_in_env.push_back({pid, proc::cmdline(pid)});
    }
  }
};

// Marks the report Refused with `problem` (what is wrong and how to fix it).
CleanReport& refuse(CleanReport& report, std::string problem) {
  report.outcome = CleanOutcome::Refused;
  report.problem = std::move(problem);
  return report;
}

// Resolves report.path to report.file (absolute, symlinks resolved) and `absolute` (as given, made
// absolute). False when the report is already final: nothing there, or not something clean may touch.
bool locate(CleanReport& report, fs::path& absolute) {
  std::error_code ec;
  absolute = fs::absolute(report.path, ec).lexically_normal();
  auto status = fs::symlink_status(absolute, ec);
  if (ec || status.type() == fs::file_type::not_found) {
    if (ec && ec != std::errc::no_such_file_or_directory) {
      refuse(report, fmt::format("cannot look at it: {}; check the path and its directory permissions", ec.message()));
      return false;
    }
    report.outcome = CleanOutcome::Absent;
    return false;
  }
  report.file = fs::canonical(absolute, ec);
  if (ec) {
    // A dangling symlink: torch would create the target on its first write; nothing to clean.
    report.outcome = CleanOutcome::Absent;
    return false;
  }
  if (fs::is_directory(report.file)) {
    refuse(report, "it is a directory; give the FileStore file itself (the path after file:// in init_method)");
    return false;
  }
  if (!fs::is_regular_file(report.file)) {
    refuse(report, "it is not a regular file, so torch's FileStore did not write it; check the path");
    return false;
  }
  return true;
}

// Parses `bytes` into report.log; false (Refused, with the diagnosis where there is one) when they
// are no evidence of a c10d FileStore.
bool read_as_filestore(CleanReport& report, const std::string& bytes, bool empty_is_filestore) {
  report.log = FileStoreLog::parse(bytes);
  if (bytes.empty() && !empty_is_filestore) {
    report.empty_unproven = true;
    refuse(report,
           "it is empty, and an empty file is no evidence of a c10d FileStore (torch writes a record as soon as it "
           "opens one); left untouched");
    return false;
  }
  if (!report.log->is_filestore()) {
    report.diagnosis = diagnose(*report.log, {});
    refuse(report, fmt::format("it is not a c10d FileStore file ({}); left untouched — check the path",
                               report.log->foreign_reason()));
    return false;
  }
  return true;
}

// Who uses the file, seen from outside it: under the path as given and as resolved (symlinks),
// since processes may name either; and how long ago it was last written.
FileStoreEvidence gather_evidence(const Scan& scan, const CleanReport& report, const fs::path& absolute,
                                  const FileId& id) {
  std::vector<fs::path> names{report.file};
  if (absolute != report.file) names.push_back(absolute);
  FileStoreEvidence ev;
  scan.gather(report.file, names, id, ev);
  std::error_code ec;
  auto mtime = fs::last_write_time(report.file, ec);
  if (!ec) {
    auto age = fs::file_time_type::clock::now() - mtime;
    ev.since_last_write = std::chrono::duration_cast<std::chrono::milliseconds>(age);
  }
  return ev;
}

// Decided "stale" from outside; confirm under the exclusive lock, which waits out any store
// operation in progress, so a half-written record of a live writer is not mistaken for a torn tail.
// True when the file is still removable; the lock stays held (it drops with `fd`).
bool confirm_under_lock(int fd, const FileId& id, const std::string& first_bytes, const Scan& scan,
                        const CleanOptions& options, FileStoreEvidence& ev, CleanReport& report) {
  if (!lock_exclusive_within(fd, options.lock_timeout, options.lock_retry)) {
    ev.lock_holders = scan.lock_holders(id);
    ev.lock_refused = ev.lock_holders.empty();
    ev.lock_deadline = options.lock_timeout;
    report.diagnosis = diagnose(*report.log, ev);
    return false;
  }
  struct stat now {};
  if (::stat(report.file.c_str(), &now) != 0 || !(FileId{now.st_dev, now.st_ino} == id)) {
    ev.changed_while_checking = true;
  } else {
    auto second = read_all(fd);
    if (!second.error.empty()) {
      refuse(report, fmt::format("cannot read it under the lock: {}", second.error));
      return false;
    }
    if (second.bytes != first_bytes) {
      ev.changed_while_checking = true;
      report.log = FileStoreLog::parse(second.bytes);
    }
  }
  report.diagnosis = diagnose(*report.log, ev);
  return report.diagnosis->removable();
}

// The last step, under the lock: unlinked while it is held, anyone who opens the path afterwards
// gets a fresh file.
CleanReport& remove_confirmed(CleanReport& report, bool dry_run) {
  if (dry_run) {
    report.outcome = CleanOutcome::WouldRemove;
    return report;
  }
  if (::unlink(report.file.c_str()) != 0) {
    report.problem = fmt::format("could not remove it: {}; it needs write permission on {}", std::strerror(errno),
                                 report.file.parent_path().string());
    return report;
  }
  report.outcome = CleanOutcome::Removed;
  return report;
}

}  // namespace

CleanReport FileStoreCleaner::clean(const fs::path& path) const {
  CleanReport report;
  report.path = path;
  fs::path absolute;
  if (!locate(report, absolute)) return report;

  const int fd = ::open(report.file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return refuse(report, fmt::format("cannot open it: {}; run as its owner or as root", std::strerror(errno)));
  }
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }  // also drops our flock
  } closer{fd};

  struct stat st {};
  ::fstat(fd, &st);
  const FileId id{st.st_dev, st.st_ino};
  auto first = read_all(fd);
  if (!first.error.empty()) return refuse(report, fmt::format("cannot read it: {}", first.error));
  if (!read_as_filestore(report, first.bytes, options_.empty_is_filestore)) return report;

  const Scan scan{not_users_, not_referencers_};
  FileStoreEvidence ev = gather_evidence(scan, report, absolute, id);
  report.diagnosis = diagnose(*report.log, ev);
  report.outcome = CleanOutcome::Kept;
  if (!report.diagnosis->removable()) return report;
  if (!confirm_under_lock(fd, id, first.bytes, scan, options_, ev, report)) return report;
  return remove_confirmed(report, options_.dry_run);
}

CleanReport prepare_filestore_path(const fs::path& path, const CleanOptions& given) {
  CleanOptions options = given;
  options.empty_is_filestore = true;  // the path is the run's FileStore by its own flag
  auto report = FileStoreCleaner(options).clean(path);
  auto because = [&] {
    std::string text;
    if (report.diagnosis) {
      for (const auto& r : report.diagnosis->reasons) text += "; " + r;
    }
    return text;
  };
  switch (report.outcome) {
    case CleanOutcome::Absent: return report;
    case CleanOutcome::Removed:
    case CleanOutcome::WouldRemove:
      spdlog::info("FileStore {}: {}, {}", path.string(), to_string(report.diagnosis->verdict),
                   options.dry_run ? "would remove it" : "removed it before the launch");
      return report;
    case CleanOutcome::Refused: throw Error(fmt::format("FileStore path {}: {}", path.string(), report.problem));
    case CleanOutcome::Kept: break;
  }
  if (!report.problem.empty()) throw Error(fmt::format("FileStore path {}: {}", path.string(), report.problem));
  throw Error(fmt::format("FileStore path {} is {}{}; {}", path.string(), to_string(report.diagnosis->verdict),
                          because(), report.diagnosis->advice));
}

}  // namespace ddp::store
