// platform/stack_dump.hpp with real processes (Linux and Wine): a hung child asked for its stacks
// writes them on its stderr and dies as the request makes it. ddp-test-child's `dump` mode stands in
// for Python's faulthandler (the Wine tests have no Windows Python): a SIGABRT handler on Linux, a
// vectored exception handler on Windows, each writing faulthandler's text. On Windows this proves
// the remote thread, the exception and its reaching a vectored handler of the target; faulthandler's
// own handler is CPython's (docs/windows.md, "Hang stacks").
#include <doctest/doctest.h>

#include <filesystem>
#include <thread>

#include "platform/files.hpp"
#include "platform/signal_numbers.hpp"
#include "platform/stack_dump.hpp"
#include "test_child.hpp"

using namespace ddp;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

bool wait_for_file(const fs::path& file, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!fs::exists(file)) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

}  // namespace

TEST_CASE("a hung process asked for its stacks writes them on its stderr and dies of the request") {
  const fs::path dir = platform::make_unique_directory(fs::temp_directory_path(), "ddp-stack-dump-");
  const fs::path ready = dir / "ready";
  std::string error;
  auto err = platform::make_output_pipe(error);
  REQUIRE_MESSAGE(err, error);
  auto request = test::child_request({"dump", ready.string(), "60000"});
  request.stderr_fd = err->write;
  auto started = spawn_process(request);
  platform::close_handle(err->write);
  REQUIRE_MESSAGE(started.ok(), started.what << ": " << started.error);
  REQUIRE(wait_for_file(ready, 20s));
  CHECK_FALSE(platform::runs_python(started.child.pid()));

  const auto asked = std::chrono::steady_clock::now();
  CHECK(platform::request_stack_dump(started.child.pid()) == "");
  auto exit = test::wait_exit(started.child, 20s);
  const auto took = std::chrono::steady_clock::now() - asked;
  REQUIRE(exit);
  const auto text = test::read_to_end(err->read, 5s);
  MESSAGE("request to exit: " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms");
  CHECK(text.find("(most recent call first):") != std::string::npos);
  CHECK(text.find("line 7 in wait_for_peers") != std::string::npos);
#ifdef _WIN32
  CHECK(text.find("Windows fatal exception: code 0xe0dd0001") != std::string::npos);
  CHECK(static_cast<std::uint32_t>(exit->exit_code) == platform::kStackDumpCode);
#else
  CHECK(exit->signal == sig::kAbrt);
#endif
  std::error_code ec;
  fs::remove_all(dir, ec);
}

#ifdef _WIN32
TEST_CASE("a rank started through a venv's python.exe launcher is asked through its interpreter child") {
  // The launcher (ddp-test-child's `launcher` mode, as python.exe) has no handler: asked itself, it
  // would die with no dump. Its python.exe child has one and shares its stderr.
  const fs::path dir = platform::make_unique_directory(fs::temp_directory_path(), "ddp-venv-");
  const fs::path python = dir / "python.exe";
  fs::copy_file(test::child_program(), python);
  const fs::path ready = dir / "ready";
  std::string error;
  auto err = platform::make_output_pipe(error);
  REQUIRE_MESSAGE(err, error);
  auto request = test::child_request({"launcher", "dump", ready.string(), "60000"});
  request.program = python.string();
  request.argv[0] = python.string();
  request.stderr_fd = err->write;
  auto started = spawn_process(request);
  platform::close_handle(err->write);
  REQUIRE_MESSAGE(started.ok(), started.what << ": " << started.error);
  REQUIRE(wait_for_file(ready, 20s));
  CHECK(platform::runs_python(started.child.pid()));
  CHECK(platform::request_stack_dump(started.child.pid()) == "");
  auto exit = test::wait_exit(started.child, 20s);
  REQUIRE(exit);
  const auto text = test::read_to_end(err->read, 5s);
  CHECK(text.find("line 7 in wait_for_peers") != std::string::npos);
  CHECK(static_cast<std::uint32_t>(exit->exit_code) == platform::kStackDumpCode);  // the child's, passed on
  std::error_code ec;
  fs::remove_all(dir, ec);
}
#endif

TEST_CASE("a process that is gone cannot be asked, and the error says by what") {
  auto started = spawn_process(test::child_request({"exit", "0"}));
  REQUIRE(started.ok());
  REQUIRE(test::wait_exit(started.child, 20s));
  const auto why = platform::request_stack_dump(started.child.pid());
  CHECK(!why.empty());
  CHECK(why.find("could not") != std::string::npos);
}

TEST_CASE("runs_python: a program whose file is named python*") {
  const fs::path dir = platform::make_unique_directory(fs::temp_directory_path(), "ddp-runs-python-");
  const fs::path self(test::child_program());
  const fs::path python = dir / ("python3-test" + self.extension().string());
  fs::copy_file(self, python);
  auto request = test::child_request({"sleep", "30000"});
  request.program = python.string();
  request.argv[0] = python.string();
  auto started = spawn_process(request);
  REQUIRE_MESSAGE(started.ok(), started.what << ": " << started.error);
  bool python_seen = false;
  for (int i = 0; i < 100 && !python_seen; ++i) {  // its image is named once it runs
    python_seen = platform::runs_python(started.child.pid());
    if (!python_seen) std::this_thread::sleep_for(20ms);
  }
  CHECK(python_seen);
  CHECK(started.child.signal_group(sig::kKill));
  CHECK(test::wait_exit(started.child, 20s));
  std::error_code ec;
  fs::remove_all(dir, ec);
}
