#include "jobs/job_db.hpp"

#include <fmt/format.h>
#include <sqlite3.h>

#include "common/error.hpp"

namespace ddp::jobs {

namespace {

// One prepared statement; binds by position (1-based), steps, reads columns.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK) {
      throw Error(fmt::format("SQLite: cannot prepare '{}': {}", sql, sqlite3_errmsg(db)));
    }
  }
  ~Stmt() { sqlite3_finalize(stmt_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& bind(int i, std::int64_t v) {
    sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  Stmt& bind(int i, int v) { return bind(i, static_cast<std::int64_t>(v)); }
  Stmt& bind(int i, double v) {
    sqlite3_bind_double(stmt_, i, v);
    return *this;
  }
  Stmt& bind(int i, const std::string& v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& bind_null(int i) {
    sqlite3_bind_null(stmt_, i);
    return *this;
  }
  // true while a row is available
  bool step() {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw Error(fmt::format("SQLite: {}", sqlite3_errmsg(db_)));
  }
  std::int64_t i64(int col) { return sqlite3_column_int64(stmt_, col); }
  int i32(int col) { return sqlite3_column_int(stmt_, col); }
  double f64(int col) { return sqlite3_column_double(stmt_, col); }
  bool is_null(int col) { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::string text(int col) {
    auto* p = sqlite3_column_text(stmt_, col);
    return p ? std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col)))
             : std::string();
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

std::string join_ints(const std::vector<int>& v) {
  std::string out;
  for (int x : v) out += (out.empty() ? "" : ",") + std::to_string(x);
  return out;
}

std::vector<int> split_ints(const std::string& s) {
  std::vector<int> out;
  std::size_t start = 0;
  while (start < s.size()) {
    auto comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    out.push_back(std::stoi(s.substr(start, comma - start)));
    start = comma + 1;
  }
  return out;
}

const char* kSchemaV1 = R"(
CREATE TABLE jobs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  spec_yaml TEXT NOT NULL,
  priority INTEGER NOT NULL,
  state TEXT NOT NULL,
  reason TEXT NOT NULL DEFAULT '',
  runs INTEGER NOT NULL DEFAULT 0,
  restarts INTEGER NOT NULL DEFAULT 0,
  submitted_at REAL NOT NULL,
  started_at REAL NOT NULL DEFAULT 0,
  finished_at REAL NOT NULL DEFAULT 0,
  exit_code INTEGER,
  pid INTEGER NOT NULL DEFAULT 0,
  pid_start_time INTEGER NOT NULL DEFAULT 0,
  run_dir TEXT NOT NULL DEFAULT '',
  gpus TEXT NOT NULL DEFAULT '',
  slots INTEGER NOT NULL DEFAULT 0,
  events_offset INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE transitions (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id INTEGER NOT NULL REFERENCES jobs(id),
  time REAL NOT NULL,
  from_state TEXT NOT NULL,
  to_state TEXT NOT NULL,
  reason TEXT NOT NULL,
  run INTEGER NOT NULL
);
CREATE INDEX transitions_job ON transitions(job_id);
CREATE TABLE events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id INTEGER NOT NULL REFERENCES jobs(id),
  time REAL NOT NULL,
  run INTEGER NOT NULL,
  type TEXT NOT NULL,
  data TEXT NOT NULL
);
CREATE INDEX events_job ON events(job_id);
PRAGMA user_version = 1;
)";

// v2: a daemon retry's back-off deadline, so a restarted daemon does not retry early.
const char* kMigrateV2 = R"(
ALTER TABLE jobs ADD COLUMN retry_at REAL NOT NULL DEFAULT 0;
PRAGMA user_version = 2;
)";

// v3: executor: slurm runs are found again by their Slurm job id.
const char* kMigrateV3 = R"(
ALTER TABLE jobs ADD COLUMN external_id TEXT NOT NULL DEFAULT '';
PRAGMA user_version = 3;
)";

// v4: the final state of a stop in progress (CANCELLING), as data rather than read from its reason.
const char* kMigrateV4 = R"(
ALTER TABLE jobs ADD COLUMN cancel_final TEXT NOT NULL DEFAULT '';
PRAGMA user_version = 4;
)";

}  // namespace

JobDb::JobDb(const std::filesystem::path& path) : path_(path) {
  const auto u8 = path.u8string();  // SQLite takes UTF-8 names (Windows' paths are UTF-16)
  const std::string name(reinterpret_cast<const char*>(u8.data()), u8.size());
  if (sqlite3_open_v2(name.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr) !=
      SQLITE_OK) {
    std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    throw Error(fmt::format("cannot open the job database {}: {}", path.string(), why));
  }
  sqlite3_busy_timeout(db_, 5000);
  exec("PRAGMA journal_mode = WAL");
  // WAL + NORMAL: a committed transaction survives the daemon being killed (only an OS crash
  // may lose the last ones), at a fraction of FULL's fsync cost per state change.
  exec("PRAGMA synchronous = NORMAL");
  exec("PRAGMA foreign_keys = ON");
  int version = schema_version();
  if (version > kJobDbSchemaVersion) {
    throw Error(
        fmt::format("the job database {} has schema version {}, newer than this ddp-launch understands ({}); "
                    "use a newer ddp-launch or another --state-dir",
                    path.string(), version, kJobDbSchemaVersion));
  }
  if (version == 0) transaction([&] { exec(kSchemaV1); });
  if (version < 2) transaction([&] { exec(kMigrateV2); });
  if (version < 3) transaction([&] { exec(kMigrateV3); });
  if (version < 4) transaction([&] { exec(kMigrateV4); });
}

JobDb::~JobDb() { sqlite3_close(db_); }

void JobDb::exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string why = err ? err : "unknown error";
    sqlite3_free(err);
    throw Error(fmt::format("job database {}: {}", path_.string(), why));
  }
}

int JobDb::schema_version() {
  Stmt s(db_, "PRAGMA user_version");
  s.step();
  return s.i32(0);
}

void JobDb::transaction(const std::function<void()>& f) {
  exec("BEGIN IMMEDIATE");
  try {
    f();
    exec("COMMIT");
  } catch (...) {
    // A statement or the COMMIT failed (a full disk: SQLITE_FULL). SQLite may have rolled back
    // already; if not, the transaction is still open and every later BEGIN would be refused.
    if (!sqlite3_get_autocommit(db_)) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

JobId JobDb::insert_job(const JobRecord& r) {
  Stmt s(db_, "INSERT INTO jobs (name, spec_yaml, priority, state, reason, submitted_at) VALUES (?,?,?,?,?,?)");
  s.bind(1, r.name).bind(2, r.spec_yaml).bind(3, r.priority).bind(4, std::string(state_name(r.state)));
  s.bind(5, r.reason).bind(6, r.submitted_at);
  s.step();
  return sqlite3_last_insert_rowid(db_);
}

void JobDb::update_job(const JobRecord& r) {
  Stmt s(db_,
         "UPDATE jobs SET state=?, reason=?, runs=?, restarts=?, started_at=?, finished_at=?, exit_code=?, pid=?, "
         "pid_start_time=?, run_dir=?, gpus=?, slots=?, events_offset=?, retry_at=?, external_id=?, cancel_final=? "
         "WHERE id=?");
  s.bind(1, std::string(state_name(r.state))).bind(2, r.reason).bind(3, r.runs).bind(4, r.restarts);
  s.bind(5, r.started_at).bind(6, r.finished_at);
  if (r.exit_code) {
    s.bind(7, *r.exit_code);
  } else {
    s.bind_null(7);
  }
  s.bind(8, static_cast<std::int64_t>(r.pid)).bind(9, static_cast<std::int64_t>(r.pid_start_time));
  s.bind(10, r.run_dir).bind(11, join_ints(r.gpus)).bind(12, r.slots).bind(13, r.events_offset);
  s.bind(14, r.retry_at).bind(15, r.external_id);
  s.bind(16, r.cancel_final ? std::string(state_name(*r.cancel_final)) : std::string()).bind(17, r.id);
  s.step();
}

void JobDb::add_transition(JobId id, const TransitionRow& t) {
  Stmt s(db_, "INSERT INTO transitions (job_id, time, from_state, to_state, reason, run) VALUES (?,?,?,?,?,?)");
  s.bind(1, id).bind(2, t.time).bind(3, t.from).bind(4, t.to).bind(5, t.reason).bind(6, t.run);
  s.step();
}

void JobDb::add_event(JobId id, const EventRow& e) {
  Stmt s(db_, "INSERT INTO events (job_id, time, run, type, data) VALUES (?,?,?,?,?)");
  s.bind(1, id).bind(2, e.time).bind(3, e.run).bind(4, e.type).bind(5, e.data_json);
  s.step();
}

std::vector<JobRecord> JobDb::load_jobs() {
  Stmt s(db_,
         "SELECT id, name, spec_yaml, priority, state, reason, runs, restarts, submitted_at, started_at, "
         "finished_at, exit_code, pid, pid_start_time, run_dir, gpus, slots, events_offset, retry_at, external_id, "
         "cancel_final FROM jobs "
         "ORDER BY id");
  std::vector<JobRecord> out;
  while (s.step()) {
    JobRecord r;
    r.id = s.i64(0);
    r.name = s.text(1);
    r.spec_yaml = s.text(2);
    r.priority = s.i32(3);
    auto state = parse_state(s.text(4));
    if (!state)
      throw Error(fmt::format("job database {}: job {} has unknown state '{}'", path_.string(), r.id, s.text(4)));
    r.state = *state;
    r.reason = s.text(5);
    r.runs = s.i32(6);
    r.restarts = s.i32(7);
    r.submitted_at = s.f64(8);
    r.started_at = s.f64(9);
    r.finished_at = s.f64(10);
    if (!s.is_null(11)) r.exit_code = s.i32(11);
    r.pid = static_cast<pid_t>(s.i64(12));
    r.pid_start_time = static_cast<std::uint64_t>(s.i64(13));
    r.run_dir = s.text(14);
    r.gpus = split_ints(s.text(15));
    r.slots = s.i32(16);
    r.events_offset = s.i64(17);
    r.retry_at = s.f64(18);
    r.external_id = s.text(19);
    if (auto final_state = s.text(20); !final_state.empty()) {
      r.cancel_final = parse_state(final_state);
      if (!r.cancel_final)
        throw Error(
            fmt::format("job database {}: job {} has unknown cancel_final '{}'", path_.string(), r.id, final_state));
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<TransitionRow> JobDb::transitions(JobId id) {
  Stmt s(db_, "SELECT time, from_state, to_state, reason, run FROM transitions WHERE job_id=? ORDER BY id");
  s.bind(1, id);
  std::vector<TransitionRow> out;
  while (s.step()) out.push_back({s.f64(0), s.text(1), s.text(2), s.text(3), s.i32(4)});
  return out;
}

std::vector<EventRow> JobDb::events(JobId id, std::optional<std::string> type) const {
  Stmt s(db_, type ? "SELECT time, run, type, data FROM events WHERE job_id=? AND type=? ORDER BY id"
                   : "SELECT time, run, type, data FROM events WHERE job_id=? ORDER BY id");
  s.bind(1, id);
  if (type) s.bind(2, *type);
  std::vector<EventRow> out;
  while (s.step()) out.push_back({s.f64(0), s.i32(1), s.text(2), s.text(3)});
  return out;
}

std::vector<TransitionRow> JobDb::transitions_after(JobId id, std::int64_t after_seq, std::size_t limit) const {
  Stmt s(db_,
         "SELECT time, from_state, to_state, reason, run, id FROM transitions WHERE job_id=? AND id>? ORDER BY id "
         "LIMIT ?");
  s.bind(1, id).bind(2, after_seq).bind(3, static_cast<std::int64_t>(limit));
  std::vector<TransitionRow> out;
  while (s.step()) out.push_back({s.f64(0), s.text(1), s.text(2), s.text(3), s.i32(4), s.i64(5)});
  return out;
}

std::vector<EventRow> JobDb::events_after(JobId id, std::int64_t after_seq, std::size_t limit) const {
  Stmt s(db_, "SELECT time, run, type, data, id FROM events WHERE job_id=? AND id>? ORDER BY id LIMIT ?");
  s.bind(1, id).bind(2, after_seq).bind(3, static_cast<std::int64_t>(limit));
  std::vector<EventRow> out;
  while (s.step()) out.push_back({s.f64(0), s.i32(1), s.text(2), s.text(3), s.i64(4)});
  return out;
}

}  // namespace ddp::jobs
