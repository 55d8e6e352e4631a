// The FileStore watch's shell (launcher/supervisor/filestore_watch.hpp): stat, /proc, the cleaner.
#include "launcher/supervisor/filestore_watch.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <fstream>

#include "platform/files.hpp"
#include "platform/proc.hpp"
#include "store/filestore_cleaner.hpp"

namespace fs = std::filesystem;

namespace ddp::launcher {
namespace {

// Far above what a job's rendezvous leaves; a bigger file is not read (a data set).
constexpr std::uintmax_t kMaxFileStoreBytes = std::uintmax_t{64} << 20;

std::optional<double> mtime_of(const fs::path& p) {
  std::error_code ec;
  auto t = fs::last_write_time(p, ec);
  if (ec) return std::nullopt;
  auto sys = std::chrono::file_clock::to_sys(t);
  return std::chrono::duration<double>(sys.time_since_epoch()).count();
}

double now_s() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

// Every path in the script's arguments and environment is a candidate (a data set, /bin/bash, a CA
// bundle): its first bytes decide, as a FileStore's prefix parses as one (a torn tail). Only a file
// that starts like one is read whole.
constexpr std::size_t kPrefixBytes = 4096;

// Whether the file's bytes are a non-empty c10d FileStore log.
bool holds_a_filestore(const fs::path& p) {
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) return false;
  auto size = fs::file_size(p, ec);
  if (ec || size == 0 || size > kMaxFileStoreBytes) return false;
  std::ifstream in(p, std::ios::binary);
  std::string bytes(static_cast<std::size_t>(std::min<std::uintmax_t>(size, kPrefixBytes)), '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  bytes.resize(static_cast<std::size_t>(in.gcount()));
  if (bytes.empty() || !store::FileStoreLog::parse(bytes).is_filestore()) return false;
  if (size <= kPrefixBytes) return true;
  bytes.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return store::FileStoreLog::parse(bytes).is_filestore();
}

// The cleaner's dry run: who uses the file now, this run's processes aside.
void judge_now(const std::string& path, const std::vector<pid_t>& ignore,
               std::optional<store::FileStoreDiagnosis>& diagnosis, std::string& problem) {
  store::CleanOptions options;
  options.dry_run = true;
  options.ignore_pids = ignore;
  const auto report = store::FileStoreCleaner(options).clean(path);
  if (report.diagnosis && report.outcome != store::CleanOutcome::Refused) {
    diagnosis = report.diagnosis;
  } else {
    problem = report.problem.empty() ? std::string("it vanished while it was checked") : report.problem;
  }
}

}  // namespace

void FileStoreWatch::snapshot(const std::vector<std::string>& argv, const EnvMap& env, bool several_nodes,
                              double run_started, const std::vector<pid_t>& ignore) {
  several_nodes_ = several_nodes;
  run_started_ = run_started;
  std::error_code ec;
  const auto cwd = fs::current_path(ec);
  for (auto& named : filestore_candidates(argv, env, cwd, store::native_path_style())) {
    const auto& path = named.path;
    Before b;
    b.path = path;
    b.named_as = named.where;
    std::error_code st_ec;
    auto status = fs::status(path, st_ec);
    if (fs::is_directory(status)) continue;  // a data directory, the output dir: never a FileStore
    if (fs::is_regular_file(status)) {
      b.identity = platform::file_identity(path);
      b.size = fs::file_size(path, st_ec);
      b.mtime = mtime_of(path);
      // Already a FileStore: who uses it before any rank of ours runs (rare, and the evidence that
      // is lost once the ranks' torch removes the file as they exit).
      b.filestore = holds_a_filestore(path);
      if (b.filestore) judge_now(path, ignore, b.diagnosis, b.problem);
    } else if (status.type() != fs::file_type::not_found) {
      continue;  // a device, a socket
    } else if (!fs::is_directory(fs::path(path).parent_path(), st_ec)) {
      continue;  // no directory to create it in: not a path this job writes
    }
    before_.push_back(std::move(b));
  }
}

void FileStoreWatch::note_open_files(const std::vector<pid_t>& pids) {
  for (pid_t pid : pids) {
    for (auto& f : proc::open_files(pid)) {
      if (std::find(seen_open_.begin(), seen_open_.end(), f) == seen_open_.end()) seen_open_.push_back(std::move(f));
    }
  }
}

std::optional<FoundFileStoreFacts> FileStoreWatch::facts_of(const std::string& path, const Before* before,
                                                            bool seen_open, const std::vector<pid_t>& ignore) const {
  const auto now_id = platform::file_identity(path);
  FoundFileStoreFacts f;
  f.path = path;
  f.several_nodes = several_nodes_;
  if (before) {
    if (!before->identity) {
      // Absent before the run: whatever is there now is this run's own.
      if (!now_id || !holds_a_filestore(path)) return std::nullopt;
      f.created_by_this_run = true;
      f.how_found = fmt::format("the workers' {} names it", before->named_as);
      return f;
    }
    if (!before->filestore) return std::nullopt;  // not a FileStore before the run: nothing an earlier run left
    const bool same = now_id && *now_id == *before->identity;
    std::error_code ec;
    const bool changed = !same || fs::file_size(path, ec) != before->size || mtime_of(path) != before->mtime;
    if (!changed && !seen_open) return std::nullopt;  // the ranks did not use it
    f.existed_before_run = true;
    f.gone_now = !same;
    if (before->mtime) f.age_s = run_started_ - *before->mtime;
    f.how_found = fmt::format("the workers' {} names it, and {}", before->named_as,
                              seen_open    ? "a rank had it open"
                              : f.gone_now ? "it vanished while they ran"
                                           : "it changed while they ran");
    if (f.gone_now) {
      f.diagnosis = before->diagnosis;
      f.problem = before->problem;
    } else {
      judge_now(path, ignore, f.diagnosis, f.problem);
    }
    return f;
  }
  // A file a rank had open that no argument names: its birth time is the only proof of its age.
  if (!now_id || !holds_a_filestore(path)) return std::nullopt;
  f.how_found = "a rank had it open";
  if (auto born = platform::file_birth_time(path)) {
    f.existed_before_run = *born < run_started_;
    f.created_by_this_run = !f.existed_before_run;
    if (f.existed_before_run) f.age_s = run_started_ - *born;
  }
  if (!f.created_by_this_run) judge_now(path, ignore, f.diagnosis, f.problem);
  return f;
}

std::vector<FoundFileStore> FileStoreWatch::check(const std::vector<pid_t>& ignore) {
  std::vector<FoundFileStore> out;
  std::vector<std::string> judged;
  auto open_now = [&](const fs::path& p) {
    return std::any_of(seen_open_.begin(), seen_open_.end(), [&](const fs::path& o) {
      std::error_code ec;
      return o == p || fs::equivalent(o, p, ec);
    });
  };
  auto judge = [&](const std::string& path, const Before* before, bool seen_open) {
    if (std::find(judged.begin(), judged.end(), path) != judged.end()) return;
    judged.push_back(path);
    auto facts = facts_of(path, before, seen_open, ignore);
    if (!facts) return;
    if (!facts->gone_now && std::find(used_.begin(), used_.end(), path) == used_.end()) used_.push_back(path);
    auto found = judge_found_filestore(*facts);
    if (found.verdict != FoundFileStoreVerdict::Ours) out.push_back(std::move(found));
  };
  for (const auto& b : before_) judge(b.path, &b, open_now(b.path));
  for (const auto& o : seen_open_) {
    auto named = std::find_if(before_.begin(), before_.end(), [&](const Before& b) {
      std::error_code ec;
      return fs::equivalent(b.path, o, ec);
    });
    if (named == before_.end()) judge(o.string(), nullptr, true);
  }
  seen_open_.clear();  // the next attempt's ranks are other processes
  // A file that is gone is settled: what a later attempt finds at its path is that attempt's own.
  // One still there is watched on from how it is now.
  for (auto& b : before_) {
    auto f = std::find_if(out.begin(), out.end(), [&](const FoundFileStore& x) { return x.path == b.path; });
    if (f == out.end()) continue;
    if (f->gone_now) {
      forget(b);
    } else {
      std::error_code ec;
      b.size = fs::file_size(b.path, ec);
      b.mtime = mtime_of(b.path);
    }
  }
  return out;
}

void FileStoreWatch::forget(Before& b) {
  // As if absent before the run: whatever the next attempt finds there is this run's.
  b = Before{b.path, b.named_as, std::nullopt, 0, std::nullopt, false, std::nullopt, {}};
}

bool FileStoreWatch::look_for_used(int attempt) {
  if (attempt != looking_attempt_) {
    looking_attempt_ = attempt;
    looks_ = 0;
    last_look_ = 0;
  }
  constexpr int kMaxLooks = 120;
  const double now = now_s();
  if (looks_ < 0 || looks_ >= kMaxLooks || now - last_look_ < 1.0) return false;
  ++looks_;
  last_look_ = now;
  bool grew = false;
  for (const auto& b : before_) {
    if (std::find(used_.begin(), used_.end(), b.path) != used_.end()) continue;
    const auto id = platform::file_identity(b.path);
    if (!id) continue;
    std::error_code ec;
    const bool changed =
        !b.identity || !(*b.identity == *id) || fs::file_size(b.path, ec) != b.size || mtime_of(b.path) != b.mtime;
    if (changed && holds_a_filestore(b.path)) {
      used_.push_back(b.path);
      grew = true;
    }
  }
  if (grew) looks_ = -1;  // found: no more looking this attempt
  return grew;
}

bool FileStoreWatch::remove(const FoundFileStore& found, const std::vector<pid_t>& ignore, std::string& why) {
  store::CleanOptions options;
  options.ignore_pids = ignore;
  const auto report = store::FileStoreCleaner(options).clean(found.path);
  if (report.outcome == store::CleanOutcome::Removed || report.outcome == store::CleanOutcome::Absent) {
    for (auto& b : before_) {
      if (b.path == found.path) forget(b);
    }
    return true;
  }
  why = !report.problem.empty() ? report.problem
        : report.diagnosis      ? fmt::format("it is {} now", store::to_string(report.diagnosis->verdict))
                                : std::string("the cleaner kept it");
  return false;
}

}  // namespace ddp::launcher
