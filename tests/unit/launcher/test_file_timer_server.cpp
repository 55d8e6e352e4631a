// The torch elastic timer's FIFO and timer on a real io_context, with real processes: the request's
// pid is signalled at its deadline when it is a known worker, never otherwise; a release cancels;
// garbage is skipped; the FIFO is made, refused or replaced as the header says.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "common/clock.hpp"
#include "common/error.hpp"
#include "launcher/hang/file_timer_server.hpp"
#include "tests/unit/temp_dir.hpp"

using namespace ddp::launcher;
using namespace std::chrono_literals;

namespace {

// A child that waits to be killed; reaped (and killed if still alive) at the end of the test.
struct Child {
  pid_t pid = 0;
  int status = 0;
  bool reaped = false;
  Child() {
    pid = ::fork();
    if (pid == 0) {
      for (;;) ::pause();
    }
    REQUIRE(pid > 0);
  }
  bool dead() {
    if (!reaped && ::waitpid(pid, &status, WNOHANG) == pid) reaped = true;
    return reaped;
  }
  ~Child() {
    if (!dead()) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
    }
  }
};

void write_fifo(const std::string& path, const std::string& bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK);  // as torch's client opens it
  REQUIRE(fd >= 0);
  CHECK(::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
  ::close(fd);
}

std::string request(pid_t pid, const std::string& scope, double when, int signal = SIGKILL) {
  return fmt::format(R"({{"version": 1, "pid": {}, "scope_id": "{}", "expiration_time": {}, "signal": {}}})", pid,
                     scope, when, signal) +
         "\n";
}

FileTimerSetup on(const std::filesystem::path& dir) {
  return file_timer_setup({{"TORCHELASTIC_ENABLE_FILE_TIMER", "1"}}, dir.string());
}

struct Fixture {
  ddp::test::TempDir dir{"ddp_file_timer"};
  boost::asio::io_context io;
  std::map<pid_t, int> workers;
  std::vector<TimerExpiry> expired;
  std::vector<int> requests;
  FileTimerServer server{io,
                         on(dir.path),
                         {.rank_of = [this](pid_t p) -> std::optional<int> {
                            auto it = workers.find(p);
                            if (it == workers.end()) return std::nullopt;
                            return it->second;
                          },
                          .expired = [this](const TimerExpiry& e, double) { expired.push_back(e); },
                          .on_request = [this](int rank) { requests.push_back(rank); }}};

  // Runs the loop until `done` or `limit`; returns how long it took.
  template <class Done>
  double run_until(Done done, std::chrono::milliseconds limit = 5s) {
    auto start = std::chrono::steady_clock::now();
    while (!done() && std::chrono::steady_clock::now() - start < limit) io.run_one_for(20ms);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
};

}  // namespace

TEST_CASE("file timer server: the worker whose deadline passed gets its signal; released and foreign ones do not") {
  Fixture f;
  Child late, released, foreign;
  f.workers = {{late.pid, 0}, {released.pid, 1}};
  f.server.start();
  const std::string fifo = f.server.path();
  REQUIRE(fifo == (f.dir.path / "torchelastic_timer.fifo").string());
  struct stat st {};
  REQUIRE(::stat(fifo.c_str(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));
  CHECK((st.st_mode & 0777) == 0600);

  double deadline = ddp::now_seconds() + 0.3;
  write_fifo(fifo, request(late.pid, "train.py#12", deadline));
  write_fifo(fifo, request(released.pid, "train.py#30", deadline));
  write_fifo(fifo, request(foreign.pid, "evil", deadline - 10));  // long due: still never signalled
  write_fifo(fifo, "garbage\n{\"pid\": 1}\n" + std::string(10000, 'x') + "\n");
  write_fifo(fifo, request(released.pid, "train.py#30", -1, 0));  // torch 1.13's release

  double took = f.run_until([&] { return late.dead(); });
  REQUIRE(late.dead());
  CHECK(WIFSIGNALED(late.status));
  CHECK(WTERMSIG(late.status) == SIGKILL);
  CHECK(ddp::now_seconds() >= deadline);
  CHECK(took < 3.0);
  REQUIRE(f.expired.size() == 1);
  CHECK(f.expired[0].pid == late.pid);
  CHECK(f.expired[0].rank == 0);
  CHECK(f.expired[0].scope_id == "train.py#12");
  CHECK(f.expired[0].signal == SIGKILL);
  CHECK(f.requests == std::vector<int>{0, 1, 1});  // the workers' valid requests: progress
  CHECK(f.server.timers() == 0);

  f.run_until([] { return false; }, 700ms);  // ...and nothing more happens
  CHECK_FALSE(released.dead());
  CHECK_FALSE(foreign.dead());
  CHECK(f.expired.size() == 1);

  // The next attempt forgets the last one's deadlines.
  write_fifo(fifo, request(released.pid, "next", ddp::now_seconds() + 0.2));
  f.run_until([&] { return f.server.timers() == 1; });
  f.server.new_attempt();
  CHECK(f.server.timers() == 0);
  f.run_until([] { return false; }, 500ms);
  CHECK_FALSE(released.dead());

  f.server.stop();
  CHECK_FALSE(std::filesystem::exists(fifo));
  CHECK(f.server.path().empty());
}

TEST_CASE("file timer server: a far-off deadline (past 2262, 1e300, a huge integer) costs no wake-ups and no CPU") {
  // Regression: a deadline further from now than int64 nanoseconds hold (2e10, 1e300) overflowed the
  // timer's wait into a negative one that fired at once, every time it was re-armed: the supervisor
  // spun at 100 % CPU.
  Fixture f;
  Child far;
  f.workers = {{far.pid, 0}};
  f.server.start();
  const std::string fifo = f.server.path();
  auto cpu = [] {
    rusage r{};
    ::getrusage(RUSAGE_SELF, &r);
    return static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
           static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
  };
  // Each alone, so that it is the deadline the timer is armed for: the boundary of int64
  // nanoseconds after now (9.22e9 s + now), and beyond.
  for (const char* when : {"9223372036.854775807", "9300000000", "1e10", "11023372036.9", "2e10", "1e300",
                           "1.7976931348623157e308", "18446744073709551615", "99999999999999999999999"}) {
    CAPTURE(when);
    f.server.new_attempt();
    write_fifo(fifo, fmt::format(R"({{"version": 1, "pid": {}, "scope_id": "far", "expiration_time": {}, )"
                                 R"("signal": 9}})",
                                 far.pid, when) +
                         "\n");
    f.run_until([&] { return f.server.timers() == 1; });
    REQUIRE(f.server.timers() == 1);
    const double before = cpu();
    f.run_until([] { return false; }, 300ms);
    const double used = cpu() - before;
    MESSAGE("CPU in 0.3 s with a deadline at ", when, ": ", used, " s; timer wake-ups: ", f.server.wakeups());
    CHECK(f.server.wakeups() == 0);  // a spinning timer wakes thousands of times (CPU time says little on a loaded host)
    CHECK_FALSE(far.dead());
  }
  // Not JSON numbers (NaN, Infinity) and an overflowing literal (1e400: inf) are refused.
  f.server.new_attempt();
  write_fifo(fifo, fmt::format(R"({{"pid": {}, "scope_id": "nan", "expiration_time": NaN, "signal": 9}})", far.pid) +
                       "\n");
  write_fifo(fifo,
             fmt::format(R"({{"pid": {}, "scope_id": "inf", "expiration_time": 1e400, "signal": 9}})", far.pid) +
                 "\n");
  write_fifo(fifo, request(far.pid, "far0", 1e300));
  f.run_until([&] { return f.server.timers() == 1; });
  f.run_until([] { return false; }, 200ms);
  CHECK(f.server.timers() == 1);  // only the valid one
  CHECK(f.expired.empty());

  // A release and a near deadline among the far ones still work: the near one fires once.
  write_fifo(fifo, request(far.pid, "far0", -1e300, 0));
  write_fifo(fifo, request(far.pid, "near", ddp::now_seconds() + 0.2));
  f.run_until([&] { return far.dead(); });
  CHECK(far.dead());
  REQUIRE(f.expired.size() == 1);
  CHECK(f.expired[0].scope_id == "near");
}

TEST_CASE("file timer server: a request asking for no signal expires without killing") {
  Fixture f;
  Child quiet;
  f.workers = {{quiet.pid, 3}};
  f.server.start();
  write_fifo(f.server.path(), request(quiet.pid, "q", ddp::now_seconds() + 0.1, 0));
  f.run_until([&] { return !f.expired.empty(); });
  REQUIRE(f.expired.size() == 1);
  CHECK(f.expired[0].signal == 0);
  CHECK_FALSE(quiet.dead());
}

TEST_CASE("file timer server: off unless enabled; refuses a path that is not its own FIFO; replaces a stale one") {
  ddp::test::TempDir dir{"ddp_file_timer"};
  boost::asio::io_context io;
  FileTimerServer::Hooks hooks{.rank_of = [](pid_t) { return std::optional<int>(); },
                               .expired = [](const TimerExpiry&, double) {},
                               .on_request = {}};
  {
    FileTimerServer off(io, file_timer_setup({}, dir.path.string()), hooks);
    off.start();
    CHECK(off.path().empty());
    CHECK(std::filesystem::is_empty(dir.path));
  }
  auto named = [&](const std::filesystem::path& p) {
    return file_timer_setup({{"TORCHELASTIC_ENABLE_FILE_TIMER", "1"}, {"TORCHELASTIC_TIMER_FILE", p.string()}}, "/x");
  };
  // A regular file is the user's: left alone, the error names the variable.
  auto file = dir.path / "notes.txt";
  std::ofstream(file) << "mine";
  try {
    FileTimerServer s(io, named(file), hooks);
    s.start();
    FAIL("expected an error");
  } catch (const ddp::Error& e) {
    CHECK(std::string(e.what()).find("TORCHELASTIC_TIMER_FILE=" + file.string() + " exists and is not a FIFO") !=
          std::string::npos);
  }
  CHECK(std::filesystem::file_size(file) == 4);
  // A directory that does not exist: the error says what to do.
  try {
    FileTimerServer s(io, named(dir.path / "no" / "fifo"), hooks);
    s.start();
    FAIL("expected an error");
  } catch (const ddp::Error& e) {
    CHECK(std::string(e.what()).find("cannot create the FIFO") != std::string::npos);
    CHECK(std::string(e.what()).find("point TORCHELASTIC_TIMER_FILE at another path") != std::string::npos);
  }
  // A FIFO a live process holds open (another run's) is refused; a stale one is replaced.
  auto fifo = dir.path / "timer.fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  int held = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK);
  try {
    FileTimerServer s(io, named(fifo), hooks);
    s.start();
    FAIL("expected an error");
  } catch (const ddp::Error& e) {
    CHECK(std::string(e.what()).find("is in use by pid " + std::to_string(::getpid())) != std::string::npos);
  }
  ::close(held);
  FileTimerServer s(io, named(fifo), hooks);
  s.start();
  CHECK(s.path() == fifo.string());
  s.stop();
  CHECK_FALSE(std::filesystem::exists(fifo));
}
