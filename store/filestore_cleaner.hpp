#pragma once
// FileStoreCleaner: the shell around FileStoreLog and diagnose(). It reads the file, gathers the
// evidence (platform/proc.hpp: who has it open, who names it in argv/environment, who holds a flock
// on it, whether they belong to a dead run), and removes a stale file the only way that is safe
// against a live torch user: take its exclusive lock (non-blocking, retried until a deadline,
// because a reader spinning on a torn tail never lets go), re-read it under the lock, and remove it
// while still holding the lock (platform/file_lock.hpp). On Windows the evidence is thinner — the
// Restart Manager's holders (none under Wine), command lines, no environments or lock holders —
// and the removal itself fails while a torch user has the file open.
//
// Liveness cannot be read from the file itself: a torch FileStore user holds no fd and no lock
// between operations. A live process that names the path nowhere in its argv or environment
// (it builds the path in code) and is not inside a store operation is invisible here.
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "store/filestore.hpp"

namespace ddp::store {

struct CleanOptions {
  // Decide and report, remove nothing. The exclusive lock is still taken for a moment, so that
  // a dry run reaches the same verdict a real one would.
  bool dry_run = false;
  std::chrono::milliseconds lock_timeout{2000};  // how long to retry LOCK_EX|LOCK_NB
  std::chrono::milliseconds lock_retry{10};      // torch's own poll interval
  // Processes whose use of the file does not count (besides this process; this process's
  // ancestors are not counted for naming the path, since a wrapper such as `timeout` or the
  // shell that started us repeats our arguments).
  std::vector<pid_t> ignore_pids;
  // An empty file is no evidence of a FileStore (torch writes its first record as soon as it opens
  // one; anything else may leave an empty file). Only a caller that knows the path was a FileStore's
  // (`run --store file`, `clean --force`) lets one be removed.
  bool empty_is_filestore = false;
  // End the processes that keep it in use when every one of them belongs to a dead run
  // (FileStoreDiagnosis::orphans; their start times are checked again), then decide again.
  bool end_orphans = false;
  // Live workers of dead runs whose records name the file (launcher/outputs/run_record.hpp's fallback where
  // the OS cannot say who has a file open).
  std::vector<proc::ProcessInfo> dead_run_workers;
};

enum class CleanOutcome {
  Absent,       // nothing at the path
  Removed,      // stale or torn, and now unlinked
  WouldRemove,  // stale or torn; dry run
  Kept,         // in use, a stuck reader, or the unlink failed: left in place
  Refused,      // not something clean may touch: a directory, unreadable, not a FileStore file
};

struct CleanReport {
  std::filesystem::path path;  // as given
  std::filesystem::path file;  // the file examined: absolute, symlinks resolved
  CleanOutcome outcome = CleanOutcome::Absent;
  std::optional<FileStoreLog> log;
  std::optional<FileStoreDiagnosis> diagnosis;
  std::string problem;          // Refused, or a failed unlink: what is wrong and how to fix it
  bool empty_unproven = false;  // Refused because the file is empty and nothing says it is a FileStore
  std::vector<pid_t> ended;     // orphans ended first (CleanOptions::end_orphans)
};

// How file:// URLs and paths read on this OS (platform/host.hpp's this_os).
PathStyle native_path_style();

class FileStoreCleaner {
 public:
  explicit FileStoreCleaner(CleanOptions options = {});

  // Inspects `path` and removes it when it is stale or torn (unless dry_run). Never blocks past
  // options.lock_timeout on a lock; never throws for what it finds, only reports it.
  CleanReport clean(const std::filesystem::path& path) const;

 private:
  CleanReport clean_once(const std::filesystem::path& path) const;
  CleanOptions options_;
  std::vector<pid_t> not_users_;        // their fds and locks do not count: us, ignore_pids
  std::vector<pid_t> not_referencers_;  // their argv/environment does not count: also our ancestors
};

// The supervisor's entry point, called before every launch whose init_method is file://PATH:
// afterwards PATH is absent (never existed, or was stale and is now removed). Throws ddp::Error
// naming the processes that use it and what to do when it is in use, and when PATH is not a
// FileStore file or cannot be removed. Returns the report for the event stream / logs. An empty
// file counts as a FileStore here (the path is the run's by its --store file flag).
CleanReport prepare_filestore_path(const std::filesystem::path& path, const CleanOptions& options = {});

}  // namespace ddp::store
