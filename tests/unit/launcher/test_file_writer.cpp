// The supervisor's one writer thread: exact bytes, its bound, backpressure, failures.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "launcher/outputs/file_writer.hpp"
#include "tests/unit/temp_dir.hpp"

using namespace ddp::launcher;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

using TempDir = ddp::test::TempDir;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

template <typename Pred>
bool eventually(Pred pred) {
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// A FIFO nobody reads yet, standing in for a disk that does not keep up: a writer blocks once its
// buffer (capacity bytes) is full. full() says the writer is stuck there.
struct SlowDisk {
  explicit SlowDisk(const fs::path& dir) : path(dir / "slow") {
    REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
    fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK);
    REQUIRE(fd >= 0);
    capacity = ::fcntl(fd, F_GETPIPE_SZ);
    REQUIRE(capacity > 0);
  }
  ~SlowDisk() { ::close(fd); }
  bool full() const {
    int queued = 0;
    return ::ioctl(fd, FIONREAD, &queued) == 0 && queued >= capacity;
  }
  std::size_t more_than_fits() const { return static_cast<std::size_t>(capacity) * 2; }
  fs::path path;
  int fd = -1;
  int capacity = 0;
};

}  // namespace

TEST_CASE("file writer: a file gets the bytes exactly, in order; flush makes them visible; directories made") {
  TempDir tmp;
  FileWriter w;
  auto path = tmp.path / "attempt_0" / "1" / "stdout.log";
  auto id = w.open(path, FileWriter::Mode::Truncate);
  std::string expected;
  for (int i = 0; i < 1000; ++i) {
    std::string chunk = "line " + std::to_string(i) + (i % 7 ? "\n" : "");
    chunk.push_back('\0');
    expected += chunk;
    CHECK(w.write(id, chunk, false));
  }
  CHECK(w.write(id, "no newline at the end", false));
  expected += "no newline at the end";
  REQUIRE(w.flush(10s));
  CHECK(slurp(path) == expected);
  w.close(id);
  w.finish();
  CHECK(slurp(path) == expected);
  CHECK(w.failed_writes(id) == 0);
  CHECK_FALSE(w.write(id, "after finish", false));
}

TEST_CASE("file writer: truncate starts afresh, append continues") {
  TempDir tmp;
  std::ofstream(tmp.path / "a") << "old\n";
  std::ofstream(tmp.path / "b") << "old\n";
  FileWriter w;
  w.write(w.open(tmp.path / "a", FileWriter::Mode::Truncate), "new\n", false);
  w.write(w.open(tmp.path / "b", FileWriter::Mode::Append), "new\n", false);
  w.finish();
  CHECK(slurp(tmp.path / "a") == "new\n");
  CHECK(slurp(tmp.path / "b") == "old\nnew\n");
}

TEST_CASE("file writer: a slow disk: droppable bytes are refused past the bound, kept ones wait, readers resume") {
  // A FIFO nobody reads: the writer thread blocks once its buffer is full, as on a disk that does
  // not keep up. It is known to be stuck (holding its batch) when the FIFO is full.
  TempDir tmp;
  SlowDisk disk(tmp.path);
  const int fd = disk.fd;
  FileWriter w(16);
  auto id = w.open(disk.path, FileWriter::Mode::Truncate);
  std::string expected(disk.more_than_fits(), 'a');
  CHECK(w.write(id, expected, false));  // kept: always queued, whatever the bound
  REQUIRE(eventually([&] { return disk.full(); }));
  CHECK_FALSE(w.backlogged());  // the stuck writer holds its batch; the queue is empty
  CHECK(w.write(id, "0123456789", false));
  CHECK_FALSE(w.backlogged());
  CHECK(w.write(id, "abcdefghij", false));  // kept: queued past the bound
  CHECK(w.backlogged());
  expected += "0123456789abcdefghij";
  CHECK_FALSE(w.write(id, "x", true));  // droppable: refused, the caller counts it
  std::atomic<bool> resumed{false};
  w.when_below_bound([&] { resumed = true; });
  CHECK_FALSE(resumed.load());
  CHECK_FALSE(w.flush(20ms));

  std::string got;  // the disk catches up
  CHECK(eventually([&] {
    char buf[65536];
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) got.append(buf, static_cast<std::size_t>(n));
    return got.size() >= expected.size();
  }));
  CHECK(resumed.load());
  CHECK(got == expected);
  CHECK(w.flush(10s));
  CHECK_FALSE(w.backlogged());
  bool at_once = false;
  w.when_below_bound([&] { at_once = true; });
  CHECK(at_once);
  w.finish();
}

TEST_CASE("file writer: a file that cannot be opened reports errno and counts its writes as failed") {
  TempDir tmp;
  std::ofstream(tmp.path / "not_a_dir") << "x";
  FileWriter w;
  std::atomic<int> error{0};
  auto id = w.open(tmp.path / "not_a_dir" / "metrics.csv", FileWriter::Mode::Truncate, [&](int e) { error = e; });
  CHECK(w.write(id, "row\n", true));
  CHECK(w.write(id, "row\n", true));
  w.finish();
  CHECK(error.load() == ENOTDIR);
  CHECK(w.failed_writes(id) == 2);
}

TEST_CASE("file writer: no thread, no file without an open; finish twice is harmless") {
  FileWriter w;
  CHECK(w.flush(1ms));
  w.finish();
  w.finish();
}

TEST_CASE("file writer: open creates the file before it returns, even while the writer is stuck") {
  // A reader who learns of a rank (its rank_started event, the daemon's `logs -f`) must find its
  // log file: it was once created on the writer thread, behind whatever the disk was still doing.
  TempDir tmp;
  SlowDisk disk(tmp.path);
  FileWriter w;
  auto stuck = w.open(disk.path, FileWriter::Mode::Truncate);
  CHECK(w.write(stuck, std::string(disk.more_than_fits(), 'a'), false));
  REQUIRE(eventually([&] { return disk.full(); }));
  auto log = tmp.path / "attempt_0" / "1" / "stdout.log";
  auto id = w.open(log, FileWriter::Mode::Truncate);
  CHECK(fs::exists(log));  // at once: not queued behind the stuck write
  CHECK(w.write(id, "rank 1 up\n", false));
  // The disk catches up; the bytes follow.
  CHECK(eventually([&] {
    char buf[65536];
    while (::read(disk.fd, buf, sizeof buf) > 0) {
    }
    return w.flush(1ms);
  }));
  CHECK(slurp(log) == "rank 1 up\n");
  w.finish();
}

TEST_CASE("file writer: a full disk is reported at the first failed write, with the bytes lost; nothing blocks") {
  // Regression: stdio's buffer took the bytes, the failed flush was ignored, and a rank's log on a
  // full disk was cut short without a word (/dev/full: every write fails with ENOSPC).
  FileWriter w;
  std::mutex mu;
  std::vector<FileWriter::Failure> reported;
  w.on_failure([&](const FileWriter::Failure& f) {
    std::lock_guard lock(mu);
    reported.push_back(f);
  });
  auto full = w.open("/dev/full", FileWriter::Mode::Append);
  TempDir tmp;
  auto fine = w.open(tmp.path / "ok.log", FileWriter::Mode::Truncate);
  CHECK(w.write(full, "first line\n", false));
  CHECK(w.write(full, std::string(100000, 'x'), false));
  CHECK(w.write(fine, "kept\n", false));
  CHECK(w.write(full, "row\n", true));
  REQUIRE(w.flush(10s));
  {
    std::lock_guard lock(mu);
    REQUIRE(reported.size() == 1);  // once per file
    CHECK(reported[0].file == full);
    CHECK(reported[0].path == "/dev/full");
    CHECK(reported[0].error == ENOSPC);
  }
  auto losses = w.losses();
  REQUIRE(losses.size() == 1);
  CHECK(losses[0].failure.file == full);
  CHECK(losses[0].lost_bytes == 11u + 100000u + 4u);
  CHECK(losses[0].written_bytes == 0u);
  CHECK(w.failed_writes(full) == 3);
  CHECK(w.failed_writes(fine) == 0);
  w.finish();
  CHECK(slurp(tmp.path / "ok.log") == "kept\n");
}

TEST_CASE("file writer: a file that cannot be opened is reported once, as a loss") {
  TempDir tmp;
  std::ofstream(tmp.path / "not_a_dir") << "x";
  FileWriter w;
  std::vector<FileWriter::Failure> reported;
  w.on_failure([&](const FileWriter::Failure& f) { reported.push_back(f); });
  auto id = w.open(tmp.path / "not_a_dir" / "stderr.log", FileWriter::Mode::Truncate);
  REQUIRE(reported.size() == 1);  // at open(), on this thread
  CHECK(reported[0].error == ENOTDIR);
  CHECK(w.write(id, "lost\n", false));
  w.finish();
  CHECK(reported.size() == 1);
  REQUIRE(w.losses().size() == 1);
  CHECK(w.losses()[0].lost_bytes == 5u);
}
