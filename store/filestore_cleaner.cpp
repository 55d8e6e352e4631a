#include "store/filestore_cleaner.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

#include "common/error.hpp"
#include "platform/file_lock.hpp"
#include "platform/host.hpp"

namespace ddp::store {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Far above any FileStore a job leaves (a 30-minute barrier of two ranks is ~20 MB), low enough
// that pointing clean at a disk image fails fast instead of reading it.
constexpr std::uint64_t kMaxFileBytes = std::uint64_t{1} << 30;

bool contains(const std::vector<pid_t>& list, pid_t pid) {
  return std::find(list.begin(), list.end(), pid) != list.end();
}

using platform::FileIdentity;

}  // namespace

PathStyle native_path_style() {
  return platform::this_os() == platform::Os::Windows ? PathStyle::Windows : PathStyle::Posix;
}

FileStoreCleaner::FileStoreCleaner(CleanOptions options) : options_(std::move(options)) {
  not_users_ = options_.ignore_pids;
  not_users_.push_back(platform::current_pid());
  not_referencers_ = not_users_;
  auto parent_of = [](pid_t p) -> pid_t {
    auto st = proc::read_proc_stat(p);
    return st ? st->ppid : 0;
  };
  for (pid_t p = parent_of(platform::current_pid()); p > 0 && !contains(not_referencers_, p); p = parent_of(p)) {
    not_referencers_.push_back(p);
  }
}

namespace {

struct Scan {
  const std::vector<pid_t>& not_users;
  const std::vector<pid_t>& not_referencers;
  const std::vector<proc::ProcessInfo>& dead_run_workers;

  // flock holders (Linux: /proc/locks); none where the OS cannot tell (Windows).
  std::vector<LockHolder> lock_holders(const FileIdentity& id) const {
    std::vector<LockHolder> holders;
    auto text = proc::lock_table();
    if (!text) return holders;
    for (const auto& e : parse_proc_locks(*text)) {
      if (e.waiting || !flock_entry_is(e, id.device, id.index)) continue;
      if (contains(not_users, e.pid)) continue;
      holders.push_back({{e.pid, proc::cmdline(e.pid)}, e.exclusive});
    }
    return holders;
  }

  // Every user of the file that belongs to a dead run, and why.
  static void note_orphans(FileStoreEvidence& ev) {
    auto note = [&](pid_t pid) {
      if (ev.orphaned.count(pid)) return;
      if (auto why = proc::orphaned(pid)) ev.orphaned[pid] = *why;
    };
    for (const auto& h : ev.lock_holders) note(h.process.pid);
    for (const auto* list : {&ev.open_by, &ev.named_in_argv, &ev.named_in_env}) {
      for (const auto& p : *list) note(p.pid);
    }
    for (const auto& w : ev.dead_run_workers) ev.orphaned[w.pid] = "its run's supervisor is gone (its run record)";
  }

  void gather(const fs::path& file, const std::vector<fs::path>& names, const FileIdentity& id,
              FileStoreEvidence& ev) const {
    for (auto& p : proc::processes_with_open(file)) {
      if (!contains(not_users, p.pid)) ev.open_by.push_back(std::move(p));
    }
    ev.lock_holders = lock_holders(id);
    ev.lock_holders_visible = platform::lock_holders_visible();
    for (const auto& p : proc::process_texts()) {
      if (contains(not_referencers, p.pid)) continue;
      if (p.env_denied) ++ev.uninspectable;
      auto names_it = [&](const std::vector<std::string>& items) {
        for (const auto& item : items) {
          for (const auto& n : names) {
            if (mentions_path(item, n, p.cwd, native_path_style())) return true;
          }
        }
        return false;
      };
      if (names_it(p.argv)) ev.named_in_argv.push_back({p.pid, proc::cmdline(p.pid)});
      if (names_it(p.env)) ev.named_in_env.push_back({p.pid, proc::cmdline(p.pid)});
    }
    for (const auto& w : dead_run_workers) {
      if (!contains(not_users, w.pid) && proc::read_proc_stat(w.pid)) ev.dead_run_workers.push_back(w);
    }
    note_orphans(ev);
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
                                  const FileIdentity& id) {
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
bool confirm_under_lock(platform::LockableFile& file, const FileIdentity& id, const std::string& first_bytes,
                        const Scan& scan, const CleanOptions& options, FileStoreEvidence& ev, CleanReport& report) {
  if (!file.lock_exclusive_within(options.lock_timeout, options.lock_retry)) {
    ev.lock_holders = scan.lock_holders(id);
    ev.lock_refused = ev.lock_holders.empty();
    ev.lock_deadline = options.lock_timeout;
    report.diagnosis = diagnose(*report.log, ev);
    return false;
  }
  auto now = platform::file_identity(report.file);
  if (!now || !(*now == id)) {
    ev.changed_while_checking = true;
  } else {
    std::string second, error;
    if (!file.read_all(second, error, kMaxFileBytes)) {
      refuse(report, fmt::format("cannot read it under the lock: {}", error));
      return false;
    }
    if (second != first_bytes) {
      ev.changed_while_checking = true;
      report.log = FileStoreLog::parse(second);
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
  auto removed = platform::remove_file(report.file);
  if (!removed.removed) {
    report.problem =
        removed.in_use ? fmt::format(
                             "could not remove it: {}; a process has it open (Windows allows no delete then): stop it, "
                             "and run clean again",
                             removed.error)
                       : fmt::format("could not remove it: {}; it needs write permission on {}", removed.error,
                                     report.file.parent_path().string());
    return report;
  }
  report.outcome = CleanOutcome::Removed;
  return report;
}

}  // namespace

namespace {

// Ends each process (only while it is the same one: its start time is checked) and waits up to 5 s
// for them to be gone; returns those it ended.
std::vector<pid_t> end_processes(const std::vector<pid_t>& pids) {
  std::vector<std::pair<pid_t, std::uint64_t>> ended;
  for (pid_t pid : pids) {
    auto st = proc::read_proc_stat(pid);
    if (st && proc::terminate_process(pid, st->start_time)) ended.emplace_back(pid, st->start_time);
  }
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  auto running = [](const std::pair<pid_t, std::uint64_t>& e) {
    auto st = proc::read_proc_stat(e.first);
    return st && st->start_time == e.second;
  };
  while (Clock::now() < deadline && std::any_of(ended.begin(), ended.end(), running)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::vector<pid_t> out;
  for (const auto& e : ended) out.push_back(e.first);
  return out;
}

}  // namespace

CleanReport FileStoreCleaner::clean(const fs::path& path) const {
  auto report = clean_once(path);
  const auto& d = report.diagnosis;
  if (!options_.end_orphans || options_.dry_run || report.outcome != CleanOutcome::Kept || !d || d->orphans.empty()) {
    return report;
  }
  auto ended = end_processes(d->orphans);
  spdlog::info("{}: ended pid {} of a dead run, which kept it in use", path.string(), fmt::join(ended, ", pid "));
  CleanOptions again = options_;
  again.end_orphans = false;  // once: what still uses it now is no orphan of ours to end
  auto second = FileStoreCleaner(again).clean(path);
  second.ended = std::move(ended);
  return second;
}

CleanReport FileStoreCleaner::clean_once(const fs::path& path) const {
  CleanReport report;
  report.path = path;
  fs::path absolute;
  if (!locate(report, absolute)) return report;

  std::string error;
  auto file = platform::LockableFile::open(report.file, error);  // closing it drops our lock
  if (!file) return refuse(report, fmt::format("cannot open it: {}; run as its owner or as root", error));
  const FileIdentity id = file->identity();
  std::string first;
  if (!file->read_all(first, error, kMaxFileBytes)) return refuse(report, fmt::format("cannot read it: {}", error));
  if (!read_as_filestore(report, first, options_.empty_is_filestore)) return report;

  const Scan scan{not_users_, not_referencers_, options_.dead_run_workers};
  FileStoreEvidence ev = gather_evidence(scan, report, absolute, id);
  report.diagnosis = diagnose(*report.log, ev);
  report.outcome = CleanOutcome::Kept;
  if (!report.diagnosis->removable()) return report;
  if (!confirm_under_lock(*file, id, first, scan, options_, ev, report)) return report;
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
