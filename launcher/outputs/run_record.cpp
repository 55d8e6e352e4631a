// The run record's shell: reading and writing processes.json, and the sweep of what a predecessor
// left (the killing itself is the platform's: run_record_kill_linux.cpp, run_record_kill_windows.cpp).
#include "launcher/outputs/run_record.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <fstream>
#include <sstream>

#include "common/error.hpp"
#include "platform/files.hpp"
#include "platform/host.hpp"

namespace fs = std::filesystem;

namespace ddp::launcher {
namespace {

// The record at `path`; nullopt when there is none. Throws platform::ForeignFile on one this user
// did not write (platform::read_own_file: another local user can plant a file in the temporary
// directory naming any process), std::exception on text that is no record.
std::optional<RunRecordContent> read_run_record(const fs::path& path) {
  auto text = platform::read_own_file(path);
  if (!text) return std::nullopt;
  return parse_run_record(*text);
}

}  // namespace

RecordedProcess recorded_process(pid_t pid) {
  auto st = proc::read_proc_stat(pid);
  RecordedProcess p;
  p.pid = pid;
  p.pgid = st ? st->pgid : 0;
  p.start_time = st ? st->start_time : 0;
  return p;
}

void RunRecord::sweep_predecessors(const std::function<void(const SweptPredecessor&)>& swept) {
  for (const auto& record : predecessor_records(paths_)) {
    if (auto s = sweep(record)) swept(*s);
  }
}

std::optional<SweptPredecessor> RunRecord::sweep(const fs::path& record) {
  RunRecordContent r;
  try {
    auto read = read_run_record(record);
    if (!read) return std::nullopt;
    r = std::move(*read);
  } catch (const platform::ForeignFile& e) {
    spdlog::warn("not acting on {} (no process it names is signalled; remove it if it is yours)", e.what());
    return std::nullopt;
  } catch (const std::exception& e) {
    spdlog::warn("ignoring unreadable {}: {}", record.string(), e.what());
    return std::nullopt;
  }
  const pid_t sup = r.supervisor.pid;
  switch (record_owner(r, platform::current_pid(), paths_, proc::read_proc_stat)) {
    case RecordOwner::Gone: break;
    case RecordOwner::SiblingRun: return std::nullopt;
    case RecordOwner::SharedRunId:
      spdlog::warn(
          "another supervisor (pid {}) runs with this run id; this one records its processes nowhere "
          "(a successor cannot sweep what a SIGKILL leaves)",
          sup);
      disabled_ = true;
      return std::nullopt;
    case RecordOwner::Conflict:
      throw Error(
          fmt::format("{} belongs to a running supervisor, pid {}: stop it, or give this run another "
                      "--run-dir (or --rdzv-id)",
                      record.string(), sup));
  }
  const std::vector<pid_t> killed = kill_recorded(r);
  std::error_code ec;
  fs::remove(record, ec);
  if (killed.empty()) return std::nullopt;
  std::string pids;
  for (pid_t p : killed) pids += (pids.empty() ? "" : " ") + std::to_string(p);
  spdlog::warn("swept {} process(es) a killed supervisor (pid {}) left behind (per {}): {}", killed.size(), sup,
               record.string(), pids);
  return SweptPredecessor{sup, killed};
}

std::vector<proc::ProcessInfo> dead_run_workers(const fs::path& file, const std::vector<fs::path>& dirs) {
  std::vector<fs::path> records;
  for (const auto& dir : dirs) {
    std::error_code ec;
    records.push_back(dir / "processes.json");
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const auto name = entry.path().filename().string();
      if (!name.starts_with(kRunDirPrefix)) continue;
      // A run id's record itself, or a temporary run directory holding its processes.json.
      records.push_back(name.ends_with(kRunIdRecordSuffix) ? entry.path() : entry.path() / "processes.json");
    }
  }
  auto same_file = [&](const std::string& named) {
    std::error_code ec;
    return fs::path(named) == file || fs::equivalent(named, file, ec);
  };
  std::vector<proc::ProcessInfo> out;
  for (const auto& path : records) {
    try {
      auto record = read_run_record(path);
      if (!record) continue;
      for (const auto& w : dead_run_workers_of(*record, proc::read_proc_stat, same_file)) {
        out.push_back({w.pid, proc::cmdline(w.pid)});
      }
    } catch (const platform::ForeignFile& e) {
      spdlog::warn("not reading {} (no process it names counts as a worker of a dead run)", e.what());
    } catch (const std::exception&) {
      // not a record of ours, or one being written: nothing to learn from it
    }
  }
  return out;
}

void RunRecord::write(const RunRecordContent& content) const {
  if (disabled_) return;
  const auto path = paths_.record();
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  auto tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out(tmp);
    out << run_record_text(content) << '\n';
    if (!out) {
      spdlog::warn("cannot write {}: a successor will not be able to sweep what a SIGKILL leaves", tmp.string());
      return;
    }
  }
  fs::rename(tmp, path, ec);
}

void RunRecord::remove() const {
  std::error_code ec;
  if (!disabled_) fs::remove(paths_.record(), ec);
}

}  // namespace ddp::launcher
