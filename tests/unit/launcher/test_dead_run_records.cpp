// `clean`'s fallback where the OS cannot say who holds a FileStore: the records of dead runs under
// a directory, read from the disk and checked against the real /proc. This test process plays a
// worker that outlived its supervisor (a pid no process has).
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "launcher/outputs/run_record.hpp"
#include "platform/files.hpp"
#include "platform/host.hpp"
#include "tests/unit/temp_dir.hpp"

using namespace ddp::launcher;
namespace fs = std::filesystem;

namespace {

// A record of a run whose supervisor is gone, naming `filestore` and this process as its worker.
std::string dead_run_naming(const fs::path& filestore) {
  RunRecordContent r;
  r.supervisor = {2147483000, 2147483000, 12345, -1, -1};  // above any pid_max: no such process
  r.filestores = {filestore.string()};
  RecordedProcess self = recorded_process(ddp::platform::current_pid());
  self.rank = 0;
  self.local_rank = 0;
  REQUIRE(self.start_time != 0);
  r.workers = {self};
  return run_record_text(r);
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

}  // namespace

TEST_CASE("dead_run_workers reads a temporary run directory's processes.json") {
  ddp::test::TempDir tmp;
  const auto store = tmp.path / "rdzv";
  write(tmp.path / "ddp-launch-none_abc-77" / "processes.json", dead_run_naming(store));
  auto found = dead_run_workers(store, {tmp.path});
  REQUIRE(found.size() == 1);
  CHECK(found[0].pid == ddp::platform::current_pid());
}

TEST_CASE("dead_run_workers reads a run id's record (--rdzv-id without --log-dir)") {
  ddp::test::TempDir tmp;
  const auto store = tmp.path / "rdzv";
  const auto record = run_id_record(tmp.path, "job7", 1);
  CHECK(record.filename() == "ddp-launch-job7-node1.processes.json");
  write(record, dead_run_naming(store));
  auto found = dead_run_workers(store, {tmp.path});
  REQUIRE(found.size() == 1);
  CHECK(found[0].pid == ddp::platform::current_pid());
  // A record naming another file is not evidence about this one.
  CHECK(dead_run_workers(tmp.path / "other", {tmp.path}).empty());
}

TEST_CASE("read_own_file: a link, a FIFO or another user's file is no record of ours") {
  ddp::test::TempDir tmp;
  const auto store = tmp.path / "rdzv";
  const auto real = tmp.path / "real.json";
  write(real, dead_run_naming(store));
  // A link planted where a run id's record goes is not followed.
  fs::create_symlink(real, run_id_record(tmp.path, "linked", 0));
  CHECK_THROWS_AS(ddp::platform::read_own_file(run_id_record(tmp.path, "linked", 0)), ddp::platform::ForeignFile);
  // A FIFO does not hang the reader.
  const auto fifo = run_id_record(tmp.path, "fifo", 0);
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THROWS_AS(ddp::platform::read_own_file(fifo), ddp::platform::ForeignFile);
  CHECK_FALSE(ddp::platform::read_own_file(tmp.path / "absent"));
  CHECK(ddp::platform::read_own_file(real) == dead_run_naming(store));
  if (::geteuid() == 0) {
    // Another user's record (as root: chown it to nobody) names no worker of a dead run.
    const auto planted = run_id_record(tmp.path, "planted", 0);
    write(planted, dead_run_naming(store));
    REQUIRE(::chown(planted.c_str(), 65534, 65534) == 0);
    CHECK_THROWS_AS(ddp::platform::read_own_file(planted), ddp::platform::ForeignFile);
    fs::remove(real);
    CHECK(dead_run_workers(store, {tmp.path}).empty());
    // And one of ours in a directory another user owns is not trusted either.
    const auto theirs = tmp.path / "theirs";
    write(theirs / "processes.json", dead_run_naming(store));
    REQUIRE(::chown(theirs.c_str(), 65534, 65534) == 0);
    CHECK_THROWS_AS(ddp::platform::read_own_file(theirs / "processes.json"), ddp::platform::ForeignFile);
  }
}
