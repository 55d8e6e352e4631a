#include <doctest/doctest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>

#include "common/error.hpp"
#include "jobs/job_db.hpp"

using namespace ddp::jobs;
namespace fs = std::filesystem;

namespace {
struct TempDir {
  fs::path path = fs::temp_directory_path() / ("ddp-jobdb-test-" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};
}  // namespace

TEST_CASE("jobs, transitions and events survive closing and reopening the database") {
  TempDir dir;
  auto file = dir.path / "jobs.db";
  JobId id = 0;
  {
    JobDb db(file);
    CHECK(db.schema_version() == kJobDbSchemaVersion);
    JobRecord r;
    r.name = "a";
    r.spec_yaml = "name: a\ncommand: [x]\n";
    r.priority = 3;
    r.submitted_at = 100;
    id = db.insert_job(r);
    CHECK(id == 1);
    r.id = id;
    db.transaction([&] {
      r.state = JobState::Running;
      r.pid = 4242;
      r.pid_start_time = 99;
      r.gpus = {0, 1};
      r.slots = 2;
      r.runs = 1;
      r.exit_code = 3;
      r.events_offset = 512;
      r.run_dir = "/x/run-0";
      r.retry_at = 1234.5;
      r.external_id = "4711";
      db.update_job(r);
      db.add_transition(id, {101, "PENDING", "RUNNING", "started", 0});
    });
    db.add_event(id, {102, 0, "rank_started", R"({"pid":5})"});
    db.add_event(id, {103, 0, "finished", R"({"exit_code":0})"});
  }
  JobDb db(file);
  auto jobs = db.load_jobs();
  REQUIRE(jobs.size() == 1);
  const auto& r = jobs[0];
  CHECK(r.name == "a");
  CHECK(r.state == JobState::Running);
  CHECK(r.pid == 4242);
  CHECK(r.pid_start_time == 99);
  CHECK(r.gpus == std::vector<int>{0, 1});
  CHECK(*r.exit_code == 3);
  CHECK(r.events_offset == 512);
  CHECK(r.run_dir == "/x/run-0");
  CHECK(r.retry_at == 1234.5);
  CHECK(r.external_id == "4711");
  CHECK(db.transitions(id).at(0).to == "RUNNING");
  CHECK(db.events(id).size() == 2);
  CHECK(db.events(id, std::string("finished")).at(0).data_json == R"({"exit_code":0})");
}

TEST_CASE("a failed transaction leaves nothing behind") {
  TempDir dir;
  JobDb db(dir.path / "jobs.db");
  JobRecord r;
  r.name = "a";
  r.spec_yaml = "x";
  CHECK_THROWS(db.transaction([&] {
    db.insert_job(r);
    throw std::runtime_error("boom");
  }));
  CHECK(db.load_jobs().empty());
}

TEST_CASE("a database from a newer ddp-launch is refused, naming the versions") {
  TempDir dir;
  auto file = dir.path / "jobs.db";
  { JobDb db(file); }
  sqlite3* raw = nullptr;
  sqlite3_open(file.c_str(), &raw);
  sqlite3_exec(raw, "PRAGMA user_version = 99", nullptr, nullptr, nullptr);
  sqlite3_close(raw);
  CHECK_THROWS_WITH_AS(JobDb{file}, doctest::Contains("schema version 99"), ddp::Error);
}

TEST_CASE("a version 1 database gains retry_at and keeps its jobs") {
  TempDir dir;
  auto file = dir.path / "jobs.db";
  sqlite3* raw = nullptr;
  sqlite3_open(file.c_str(), &raw);
  // The version 1 jobs table, as earlier daemons made it, with one job.
  sqlite3_exec(
      raw,
      "CREATE TABLE jobs (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, spec_yaml TEXT NOT NULL, "
      "priority INTEGER NOT NULL, state TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '', runs INTEGER NOT NULL "
      "DEFAULT 0, restarts INTEGER NOT NULL DEFAULT 0, submitted_at REAL NOT NULL, started_at REAL NOT NULL "
      "DEFAULT 0, finished_at REAL NOT NULL DEFAULT 0, exit_code INTEGER, pid INTEGER NOT NULL DEFAULT 0, "
      "pid_start_time INTEGER NOT NULL DEFAULT 0, run_dir TEXT NOT NULL DEFAULT '', gpus TEXT NOT NULL "
      "DEFAULT '', slots INTEGER NOT NULL DEFAULT 0, events_offset INTEGER NOT NULL DEFAULT 0);"
      "CREATE TABLE transitions (id INTEGER PRIMARY KEY AUTOINCREMENT, job_id INTEGER NOT NULL, time REAL "
      "NOT NULL, from_state TEXT NOT NULL, to_state TEXT NOT NULL, reason TEXT NOT NULL, run INTEGER NOT NULL);"
      "CREATE TABLE events (id INTEGER PRIMARY KEY AUTOINCREMENT, job_id INTEGER NOT NULL, time REAL NOT NULL, "
      "run INTEGER NOT NULL, type TEXT NOT NULL, data TEXT NOT NULL);"
      "INSERT INTO jobs (name, spec_yaml, priority, state, submitted_at) VALUES ('old', 'x', 0, 'RESTARTING', 1);"
      "PRAGMA user_version = 1;",
      nullptr, nullptr, nullptr);
  sqlite3_close(raw);
  JobDb db(file);
  CHECK(db.schema_version() == kJobDbSchemaVersion);
  auto jobs = db.load_jobs();
  REQUIRE(jobs.size() == 1);
  CHECK(jobs[0].name == "old");
  CHECK(jobs[0].retry_at == 0);
  CHECK(jobs[0].external_id.empty());
}

TEST_CASE("a version 2 database (before executor: slurm) gains external_id and keeps its jobs") {
  TempDir dir;
  auto file = dir.path / "jobs.db";
  {
    JobDb db(file);
    JobRecord r;
    r.name = "old";
    r.spec_yaml = "x";
    db.insert_job(r);
  }
  sqlite3* raw = nullptr;
  sqlite3_open(file.c_str(), &raw);
  REQUIRE(sqlite3_exec(raw,
                       "ALTER TABLE jobs DROP COLUMN cancel_final; ALTER TABLE jobs DROP COLUMN external_id; "
                       "PRAGMA user_version = 2",
                       nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(raw);
  JobDb db(file);
  CHECK(db.schema_version() == kJobDbSchemaVersion);
  auto jobs = db.load_jobs();
  REQUIRE(jobs.size() == 1);
  CHECK(jobs[0].name == "old");
  CHECK(jobs[0].external_id.empty());
  jobs[0].external_id = "12";
  db.update_job(jobs[0]);
  CHECK(db.load_jobs().at(0).external_id == "12");
}

TEST_CASE("a stop's final state is stored as data; a version 3 database gains it, empty") {
  TempDir dir;
  auto file = dir.path / "jobs.db";
  {
    JobDb db(file);
    JobRecord r;
    r.name = "timed";
    r.spec_yaml = "x";
    r.id = db.insert_job(r);
    r.state = JobState::Cancelling;
    r.reason = "cancelled by the user";  // the reason no longer decides: the column does
    r.cancel_final = JobState::Failed;
    db.update_job(r);
    auto back = db.load_jobs().at(0);
    REQUIRE(back.cancel_final);
    CHECK(*back.cancel_final == JobState::Failed);
  }
  sqlite3* raw = nullptr;
  sqlite3_open(file.c_str(), &raw);
  REQUIRE(sqlite3_exec(raw, "ALTER TABLE jobs DROP COLUMN cancel_final; PRAGMA user_version = 3", nullptr, nullptr,
                       nullptr) == SQLITE_OK);
  sqlite3_close(raw);
  JobDb db(file);
  CHECK(db.schema_version() == 4);
  auto jobs = db.load_jobs();
  REQUIRE(jobs.size() == 1);
  CHECK(jobs[0].state == JobState::Cancelling);
  CHECK_FALSE(jobs[0].cancel_final);  // the daemon falls back to the reason for such rows
  jobs[0].cancel_final = JobState::Cancelled;
  db.update_job(jobs[0]);
  CHECK(*db.load_jobs().at(0).cancel_final == JobState::Cancelled);
}
