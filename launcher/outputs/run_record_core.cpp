// The run record's pure part: the file's JSON, where predecessors' records are, what to sweep.
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/json_bytes.hpp"
#include "launcher/outputs/run_record.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace ddp::launcher {
namespace {

json entry_json(const RecordedProcess& p) {
  return json{{"pid", p.pid}, {"pgid", p.pgid}, {"start_time", p.start_time}};
}

RecordedProcess entry_of(const json& e) {
  RecordedProcess p;
  p.pid = e.value("pid", 0);
  p.pgid = e.value("pgid", 0);
  p.start_time = e.value("start_time", std::uint64_t{0});
  p.rank = e.value("rank", -1);
  p.local_rank = e.value("local_rank", -1);
  return p;
}

}  // namespace

std::string run_record_text(const RunRecordContent& record) {
  // Paths are bytes (json_bytes.hpp): a FileStore named by a non-UTF-8 argv item round-trips.
  json cgroup_dirs = json::array();
  for (const auto& d : record.cgroups) cgroup_dirs.push_back(bytes_to_json(d.string()));
  json j{{"supervisor", entry_json(record.supervisor)},
         {"guardian", entry_json(record.guardian)},
         {"attempt", record.attempt},
         {"cgroups", cgroup_dirs},
         {"filestores", bytes_to_json(record.filestores)},
         {"workers", json::array()}};
  for (const auto& w : record.workers) {
    auto e = entry_json(w);
    e["rank"] = w.rank;
    e["local_rank"] = w.local_rank;
    j["workers"].push_back(e);
  }
  return j.dump();
}

RunRecordContent parse_run_record(std::string_view text) {
  auto j = json::parse(text);
  RunRecordContent r;
  r.supervisor = entry_of(j.value("supervisor", json::object()));
  r.guardian = entry_of(j.value("guardian", json::object()));
  r.attempt = j.value("attempt", 0);
  for (const auto& c : j.value("cgroups", json::array())) r.cgroups.emplace_back(bytes_from_json(c));
  for (const auto& f : j.value("filestores", json::array())) r.filestores.push_back(bytes_from_json(f));
  for (const auto& w : j.value("workers", json::array())) r.workers.push_back(entry_of(w));
  return r;
}

std::vector<RecordedProcess> dead_run_workers_of(const RunRecordContent& record, const ProcStatLookup& lookup,
                                                 const std::function<bool(const std::string&)>& names_filestore) {
  std::vector<RecordedProcess> out;
  if (std::none_of(record.filestores.begin(), record.filestores.end(), names_filestore)) return out;
  auto sup = lookup(record.supervisor.pid);
  if (record.supervisor.pid <= 0 || (sup && sup->start_time == record.supervisor.start_time)) return out;  // alive
  for (const auto& w : record.workers) {
    auto st = w.pid > 0 ? lookup(w.pid) : std::nullopt;
    if (st && st->start_time == w.start_time && w.start_time != 0 && st->same_user) out.push_back(w);
  }
  return out;
}

fs::path run_id_record(const fs::path& temp_dir, std::string_view id, int node_rank) {
  return temp_dir / fmt::format("{}{}-node{}{}", kRunDirPrefix, id, node_rank, kRunIdRecordSuffix);
}

fs::path RunRecordPaths::record() const { return processes_file.empty() ? run_dir / "processes.json" : processes_file; }

std::vector<fs::path> predecessor_records(const RunRecordPaths& paths) {
  if (!paths.processes_file.empty() || paths.log_base_dir.empty()) return {paths.record()};
  std::vector<fs::path> out{paths.log_base_dir / "processes.json"};
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(paths.log_base_dir, ec)) {
    std::error_code dec;
    if (!e.is_directory(dec) || e.path() == paths.run_dir) continue;
    if (fs::exists(e.path() / "processes.json", dec)) out.push_back(e.path() / "processes.json");
  }
  return out;
}

RecordOwner record_owner(const RunRecordContent& record, pid_t self, const RunRecordPaths& paths,
                         const ProcStatLookup& lookup) {
  const auto& sup = record.supervisor;
  auto st = sup.pid > 0 ? lookup(sup.pid) : std::nullopt;
  if (sup.pid == self || !st || st->start_time != sup.start_time) return RecordOwner::Gone;
  if (!paths.log_base_dir.empty()) return RecordOwner::SiblingRun;
  if (!paths.processes_file.empty()) return RecordOwner::SharedRunId;
  return RecordOwner::Conflict;
}

std::vector<SweepStep> plan_sweep(const RunRecordContent& record, const ProcStatLookup& lookup,
                                  std::vector<pid_t>* spared) {
  std::vector<SweepStep> steps;
  for (const auto& w : record.workers) {
    if (w.pid <= 1 || w.pgid != w.pid || w.start_time == 0) continue;  // our workers lead their own groups
    SweepStep step{w.pgid, w.start_time, false};
    if (auto st = lookup(w.pid)) {
      // The pid was reused, or it is another user's process: not this run's.
      if (st->start_time != w.start_time || st->pgid != w.pgid || !st->same_user) {
        if (spared) spared->push_back(w.pid);
        continue;
      }
      step.leader_alive = true;
    }
    steps.push_back(step);
  }
  return steps;
}

std::vector<RecordedProcess> workers_to_end(const RunRecordContent& record, const ProcStatLookup& lookup,
                                            std::vector<pid_t>* spared) {
  std::vector<RecordedProcess> out;
  for (const auto& w : record.workers) {
    if (w.pid <= 0 || w.start_time == 0) continue;
    auto st = lookup(w.pid);
    if (!st) continue;  // gone
    if (st->start_time != w.start_time || !st->same_user) {
      if (spared) spared->push_back(w.pid);
      continue;
    }
    out.push_back(w);
  }
  return out;
}

std::vector<pid_t> members_to_sweep(const SweepStep& step,
                                    const std::vector<std::pair<pid_t, proc::ProcStat>>& processes) {
  std::vector<pid_t> out;
  for (const auto& [pid, st] : processes) {
    if (st.pgid == step.pgid && st.start_time >= step.start_time && st.same_user) out.push_back(pid);
  }
  return out;
}

}  // namespace ddp::launcher
