#pragma once
// FileStore watch: the FileStore the ranks meet through when only their script knows its path
// (init_method=f"file://{path}" with `path` from the script's own arguments, or built in code),
// so that neither `run`'s check before the launch (launcher/supervisor/filestore_guard.hpp) nor the run
// record sees it. The supervisor
//   1. before the first worker, notes what each path the workers' arguments and environment may
//      name is (absent, or which file: device, inode, size, mtime) and, for a file that already holds
//      a c10d FileStore log, the cleaner's verdict then (who used it before any rank of this run ran);
//   2. when a rank fails, notes the regular files the ranks still alive hold open
//      (platform/proc.hpp's open_files: /proc on Linux, the handle table on Windows);
//   3. after the failed attempt's workers are gone, takes each such file that parses as a c10d
//      FileStore (store/filestore.hpp) and that the ranks used (it changed while they ran, or a rank
//      had it open, or it vanished: torch's last rank removes the file as it exits), asks the cleaner
//      who else uses it now (a dry run: store/filestore_cleaner.hpp; the verdict of step 1 when the
//      file is gone), and judges it (judge_found_filestore, pure): provably stale only when it was
//      there before this run started and no process outside this run has it open, holds its lock or
//      names it.
// The summary names the file, its age and `ddp-launch clean PATH`; before a restart a provably
// stale file is removed (the cleaner decides again under the file's lock) and the restart is at once.
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/duration.hpp"  // describe_age
#include "launcher/supervisor/filestore_guard.hpp"
#include "launcher/workers/worker_env.hpp"
#include "platform/file_lock.hpp"
#include "store/filestore.hpp"

namespace ddp::launcher {

// --- pure ---

// The paths the worker's command line and environment may name (with where: "argument '/tmp/x'"), absolute (a relative
// one against `cwd`, the workers' working directory), each once: every argument (after argv[0]) as a whole, the value
// of --name=VALUE, the path of a file:// URL (as torch reads it in `style`), and every environment value that is an
// absolute path. Arguments holding a {placeholder} are skipped (they differ per rank). Whether each is a file, let
// alone a FileStore, the shell finds out.
std::vector<NamedFileStore> filestore_candidates(const std::vector<std::string>& argv, const EnvMap& env,
                                                 const std::filesystem::path& cwd,
                                                 store::PathStyle style = store::PathStyle::Posix);

// What the shell established about one FileStore file the failed attempt's ranks used.
struct FoundFileStoreFacts {
  std::string path;
  std::string how_found;  // "the workers' argument '/tmp/x' names it and it grew while they ran"
  // The same file (device and inode) was at `path` before this run's first worker started: seen
  // then (step 1), or its birth time is before the run's start.
  bool existed_before_run = false;
  // Not there before this run (absent when step 1 looked, or born after the run started): this
  // run's own file, nothing an earlier run left.
  bool created_by_this_run = false;
  std::optional<double> age_s;  // how long before the run started it was last written (else created)
  // The file is no longer there (torch's last rank removed it as it exited): the diagnosis is the
  // one from before the run.
  bool gone_now = false;
  bool several_nodes = false;  // other nodes' users cannot be seen from here
  // The cleaner's dry run with this run's processes ignored; nullopt with `problem` when it could
  // not decide (unreadable, vanished, not a FileStore after all).
  std::optional<store::FileStoreDiagnosis> diagnosis;
  std::string problem;
};

enum class FoundFileStoreVerdict {
  Stale,   // provably left by an earlier run: safe to remove
  InUse,   // a process outside this run uses it: never removed
  Unsure,  // not proven either way: said so, never removed
  Ours,    // created by this run: nothing to report
};
std::string_view to_string(FoundFileStoreVerdict v);  // "stale", "in_use", "unsure", "ours"

struct FoundFileStore {
  std::string path;
  FoundFileStoreVerdict verdict = FoundFileStoreVerdict::Unsure;
  std::optional<double> age_s;
  bool gone_now = false;
  // One paragraph for the failure summary: what the file is, why this verdict, what to do.
  std::string text;
  // Stale and still there: the supervisor may remove it before a restart.
  bool removable() const { return verdict == FoundFileStoreVerdict::Stale && !gone_now; }
  // Stale, removed or gone: what broke the attempt is gone, so a restart need not back off.
  bool cleared() const { return verdict == FoundFileStoreVerdict::Stale && gone_now; }
};

// The decision, from the facts alone: never "stale" without proof that the file predates this run
// and that nothing outside this run uses it.
FoundFileStore judge_found_filestore(const FoundFileStoreFacts& facts);

// --- the shell ---

class FileStoreWatch {
 public:
  // Step 1, before the first worker starts. `run_started`: seconds since the epoch.
  // `ignore`: this run's processes (its guardian, a fork with this process's command line).
  void snapshot(const std::vector<std::string>& argv, const EnvMap& env, bool several_nodes, double run_started,
                const std::vector<pid_t>& ignore);
  // Step 2: the regular files these live ranks have open now.
  void note_open_files(const std::vector<pid_t>& pids);
  // While attempt `attempt` runs: whether a file named in step 1 became a FileStore the ranks use
  // (it changed since, and holds a c10d FileStore log), for the run record. Looks at most once a
  // second, 120 times an attempt, and stops once it found one. True when used() grew.
  bool look_for_used(int attempt);
  // Step 3, once the failed attempt's workers are gone. `ignore`: this run's processes (its
  // guardian, workers that may still be reaped). Files not found to be FileStores the ranks used
  // are left out.
  std::vector<FoundFileStore> check(const std::vector<pid_t>& ignore);
  // Removes a file judged stale, under the cleaner's lock and after its own verdict from scratch;
  // false with `why` when it kept it.
  bool remove(const FoundFileStore& found, const std::vector<pid_t>& ignore, std::string& why);
  // Every FileStore file the ranks were found to use (for the run record).
  const std::vector<std::string>& used() const { return used_; }

 private:
  struct Before {
    std::string path;
    std::string named_as;  // the argument or variable as written
    std::optional<platform::FileIdentity> identity;
    std::uint64_t size = 0;
    std::optional<double> mtime;
    bool filestore = false;                              // it held a c10d FileStore log
    std::optional<store::FileStoreDiagnosis> diagnosis;  // the cleaner's verdict then
    std::string problem;                                 // why there is none
  };
  static void forget(Before& b);
  std::optional<FoundFileStoreFacts> facts_of(const std::string& path, const Before* before, bool seen_open,
                                              const std::vector<pid_t>& ignore) const;

  std::vector<Before> before_;
  std::vector<std::filesystem::path> seen_open_;
  std::vector<std::string> used_;
  int looking_attempt_ = -1;
  int looks_ = 0;
  double last_look_ = 0;
  bool several_nodes_ = false;
  double run_started_ = 0;
};

}  // namespace ddp::launcher
