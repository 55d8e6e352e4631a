#include <doctest/doctest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "launcher/outputs/run_record.hpp"
#include "tests/unit/temp_dir.hpp"

using namespace ddp::launcher;
namespace fs = std::filesystem;

namespace {

using TempDir = ddp::test::TempDir;

void touch(const fs::path& p) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << "{}\n";
}

// A fake /proc: pid → stat.
ProcStatLookup procs(std::map<pid_t, ddp::proc::ProcStat> table) {
  return [table = std::move(table)](pid_t pid) -> std::optional<ddp::proc::ProcStat> {
    auto it = table.find(pid);
    return it == table.end() ? std::nullopt : std::optional(it->second);
  };
}

// A process of this user (same_user: false, another user's).
ddp::proc::ProcStat stat_of(pid_t pgid, std::uint64_t start, bool same_user = true) {
  ddp::proc::ProcStat st;
  st.pgid = pgid;
  st.start_time = start;
  st.same_user = same_user;
  return st;
}

RecordedProcess worker(pid_t pid, pid_t pgid, std::uint64_t start, int rank) {
  RecordedProcess p{pid, pgid, start, rank, rank};
  return p;
}

}  // namespace

TEST_CASE("run record: the text round-trips, workers keep their ranks") {
  RunRecordContent r;
  r.supervisor = {100, 100, 5000};
  r.guardian = {101, 101, 5001};
  r.attempt = 2;
  r.cgroups = {"/sys/fs/cgroup/x/ddp-launch-a-100"};
  r.workers = {worker(200, 200, 6000, 0), worker(201, 201, 6001, 1)};
  auto back = parse_run_record(run_record_text(r));
  CHECK(back.supervisor.pid == 100);
  CHECK(back.supervisor.start_time == 5000);
  CHECK(back.guardian.pid == 101);
  CHECK(back.attempt == 2);
  CHECK(back.cgroups == r.cgroups);
  REQUIRE(back.workers.size() == 2);
  CHECK(back.workers[1].pid == 201);
  CHECK(back.workers[1].pgid == 201);
  CHECK(back.workers[1].start_time == 6001);
  CHECK(back.workers[1].rank == 1);
  CHECK(back.workers[1].local_rank == 1);
  // The file's field names, as successors (and older versions) read them.
  CHECK(run_record_text(r).find("\"workers\":[{\"local_rank\":0,\"pgid\":200,\"pid\":200,\"rank\":0,") !=
        std::string::npos);
}

TEST_CASE("run record: an older record without some fields reads as zeros; garbage throws") {
  auto r = parse_run_record(R"({"supervisor": {"pid": 7}, "workers": [{"pid": 9}]})");
  CHECK(r.supervisor.pid == 7);
  CHECK(r.supervisor.start_time == 0);
  CHECK(r.cgroups.empty());
  REQUIRE(r.workers.size() == 1);
  CHECK(r.workers[0].pgid == 0);
  CHECK_THROWS(parse_run_record("{\"supervisor\": "));
  CHECK_THROWS(parse_run_record("not json"));
}

TEST_CASE("predecessor records: own run_dir, the run id's file, or every sibling under --log-dir") {
  TempDir tmp;
  const fs::path base = tmp.path;
  RunRecordPaths own{base / "run", "", ""};
  CHECK(predecessor_records(own) == std::vector<fs::path>{base / "run" / "processes.json"});
  RunRecordPaths by_id{base / "run", base / "ids" / "job7.json", base};
  CHECK(predecessor_records(by_id) == std::vector<fs::path>{base / "ids" / "job7.json"});

  touch(base / "a_1" / "processes.json");
  touch(base / "b_2" / "processes.json");
  fs::create_directories(base / "c_3");       // no record: nothing to sweep there
  touch(base / "mine_4" / "processes.json");  // ours: never a predecessor
  std::ofstream(base / "file_not_dir") << "x";
  RunRecordPaths shared{base / "mine_4", "", base};
  auto found = predecessor_records(shared);
  CHECK(found.front() == base / "processes.json");  // where versions before torchrun's layout kept it
  std::sort(found.begin() + 1, found.end());
  CHECK(found == std::vector<fs::path>{base / "processes.json", base / "a_1" / "processes.json",
                                       base / "b_2" / "processes.json"});
}

TEST_CASE("record owner: only a live supervisor with the recorded start time owns it") {
  RunRecordContent r;
  r.supervisor = {100, 100, 5000};
  RunRecordPaths own{"/tmp/run", "", ""};
  CHECK(record_owner(r, 1, own, procs({})) == RecordOwner::Gone);                             // dead
  CHECK(record_owner(r, 1, own, procs({{100, stat_of(100, 4999)}})) == RecordOwner::Gone);    // pid reused
  CHECK(record_owner(r, 100, own, procs({{100, stat_of(100, 5000)}})) == RecordOwner::Gone);  // ourselves
  CHECK(record_owner(r, 1, own, procs({{100, stat_of(100, 5000)}})) == RecordOwner::Conflict);
  RunRecordPaths by_id{"/tmp/run", "/tmp/ids/x.json", ""};
  CHECK(record_owner(r, 1, by_id, procs({{100, stat_of(100, 5000)}})) == RecordOwner::SharedRunId);
  RunRecordPaths log_dir{"/tmp/logs/run_1", "", "/tmp/logs"};
  CHECK(record_owner(r, 1, log_dir, procs({{100, stat_of(100, 5000)}})) == RecordOwner::SiblingRun);
}

TEST_CASE("sweep plan: a live leader that is provably ours, a leaderless group, never a reused pid") {
  RunRecordContent r;
  r.workers = {worker(200, 200, 6000, 0),  // alive, same start: kill the group
               worker(201, 201, 6001, 1),  // leader gone: its group's later members
               worker(202, 202, 6002, 2),  // pid reused by another process: not ours
               worker(203, 203, 6003, 3),  // same start, but moved to another group: not ours
               worker(204, 1, 6004, 4),    // not a group leader: skipped
               worker(1, 1, 6005, 5),      // init: never
               worker(206, 206, 0, 6)};    // no start time recorded: skipped
  auto lookup = procs({{200, stat_of(200, 6000)}, {202, stat_of(202, 9999)}, {203, stat_of(999, 6003)}});
  auto steps = plan_sweep(r, lookup);
  REQUIRE(steps.size() == 2);
  CHECK(steps[0].pgid == 200);
  CHECK(steps[0].leader_alive);
  CHECK(steps[1].pgid == 201);
  CHECK_FALSE(steps[1].leader_alive);
  CHECK(steps[1].start_time == 6001);

  // Of the leaderless group, the members that started at or after the leader (the pgid cannot have
  // been reused while the group exists, but an older process cannot be the leader's child).
  std::vector<std::pair<pid_t, ddp::proc::ProcStat>> all{
      {300, stat_of(201, 6100)}, {301, stat_of(201, 6001)}, {302, stat_of(201, 6000)}, {303, stat_of(555, 7000)}};
  CHECK(members_to_sweep(steps[1], all) == std::vector<pid_t>{300, 301});
}

TEST_CASE("another user's process is never swept, even with the recorded pid, start time and group") {
  RunRecordContent r;
  r.workers = {worker(200, 200, 6000, 0), worker(201, 201, 6001, 1)};
  std::vector<pid_t> spared;
  auto steps = plan_sweep(r, procs({{200, stat_of(200, 6000, false)}, {201, stat_of(201, 6002)}}), &spared);
  CHECK(steps.empty());
  CHECK(spared == std::vector<pid_t>{200, 201});  // reported, not signalled
  // A leaderless group: only this user's later members.
  SweepStep step{300, 7000, false};
  std::vector<std::pair<pid_t, ddp::proc::ProcStat>> all{{301, stat_of(300, 7001)}, {302, stat_of(300, 7002, false)}};
  CHECK(members_to_sweep(step, all) == std::vector<pid_t>{301});
  // `clean`: another user's process is no worker of a dead run.
  r.supervisor = {100, 100, 5000};
  r.filestores = {"/tmp/fs"};
  CHECK(dead_run_workers_of(r, procs({{200, stat_of(200, 6000, false)}}), [](const std::string&) {
          return true;
        }).empty());
}

TEST_CASE("Windows' sweep: only a recorded worker with its start time and this user's token is ended") {
  // Issue 25, 3.1 on Windows: a planted record naming a live process of another user, or a pid the
  // OS reused, must not end it, and says so (the old kill_recorded kept them silently).
  RunRecordContent r;
  r.supervisor = {100, 100, 5000};
  r.workers = {worker(200, 200, 6000, 0), worker(201, 201, 6001, 1), worker(202, 202, 6002, 2), worker(203, 203, 0, 3),
               worker(204, 204, 6004, 4)};
  std::vector<pid_t> spared;
  auto end = workers_to_end(r,
                            procs({{200, stat_of(0, 6000)},         // ours: ended
                                   {201, stat_of(0, 6001, false)},  // another user's: spared
                                   {202, stat_of(0, 9999)},         // a reused pid: spared
                                   {203, stat_of(0, 7000)}}),       // no start time recorded: skipped
                            &spared);                               // 204: gone
  REQUIRE(end.size() == 1);
  CHECK(end[0].pid == 200);
  CHECK(spared == std::vector<pid_t>{201, 202});
}

TEST_CASE("dead_run_workers_of: the live workers of a dead supervisor whose record names the file") {
  RunRecordContent r;
  r.supervisor = {100, 100, 5000, -1, -1};
  r.filestores = {"/tmp/fs"};
  r.workers = {worker(200, 200, 6000, 0), worker(201, 201, 6001, 1), worker(202, 202, 6002, 2)};
  auto names = [](const std::string& f) { return f == "/tmp/fs"; };
  // 200 lives on; 201 is gone; 202's pid now belongs to another process.
  auto lookup = procs({{200, stat_of(200, 6000)}, {202, stat_of(202, 9999)}});
  auto dead = dead_run_workers_of(r, lookup, names);
  REQUIRE(dead.size() == 1);
  CHECK(dead[0].pid == 200);
  // A live supervisor: its workers are its own business; a record naming another file: not ours.
  CHECK(dead_run_workers_of(r, procs({{100, stat_of(100, 5000)}, {200, stat_of(200, 6000)}}), names).empty());
  CHECK(dead_run_workers_of(r, lookup, [](const std::string&) { return false; }).empty());
  // A supervisor pid reused by another process counts as gone.
  CHECK(dead_run_workers_of(r, procs({{100, stat_of(100, 7777)}, {200, stat_of(200, 6000)}}), names).size() == 1);
}

TEST_CASE("run record: the FileStores round-trip") {
  RunRecordContent r;
  r.filestores = {"/tmp/a", "C:\\runs\\fs"};
  CHECK(parse_run_record(run_record_text(r)).filestores == r.filestores);
}
