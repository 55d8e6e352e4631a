// How a process ended, one encoding (common/exit_status.hpp).
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <csignal>

#include "common/exit_status.hpp"

using ddp::ExitStatus;
using json = nlohmann::json;

TEST_CASE("describe_exit: the supervisor summary's words") {
  CHECK(describe_exit(ExitStatus::exited(3)) == "exited with code 3");
  CHECK(describe_exit(ExitStatus::exited(0)) == "exited with code 0");
  CHECK(describe_exit(ExitStatus::killed(SIGKILL)) == "killed by SIGKILL");
  CHECK(describe_exit(ExitStatus::killed(99)) == "killed by signal 99");
  CHECK(describe_exit(ExitStatus::killed(SIGKILL), std::string("memory.max=64 MiB")) ==
        "killed by the OOM killer (memory.max=64 MiB, SIGKILL)");
  CHECK(describe_exit(ExitStatus::exited(1), std::string("ignored: it exited")) == "exited with code 1");
  CHECK(exit_predicate(ExitStatus::exited(3)) == "exited with code 3");
  CHECK(exit_predicate(ExitStatus::killed(SIGTERM)) == "was killed by SIGTERM");
}

TEST_CASE("shell_code and from_wait_status: 128 + N for signal N") {
  CHECK(ExitStatus::exited(3).shell_code() == 3);
  CHECK(ExitStatus::killed(SIGTERM).shell_code() == 128 + SIGTERM);
  CHECK(ExitStatus::exited(0).succeeded());
  CHECK_FALSE(ExitStatus::killed(SIGTERM).succeeded());
  CHECK(ExitStatus::from_wait_status(3 << 8) == ExitStatus::exited(3));  // W_EXITCODE(3, 0)
  CHECK(ExitStatus::from_wait_status(SIGKILL) == ExitStatus::killed(SIGKILL));
}

TEST_CASE("the event fields: one of exit_code and signal is null, and they read back") {
  json j = json::object();
  put_exit_fields(j, ExitStatus::exited(3));
  CHECK(j == json{{"exit_code", 3}, {"signal", nullptr}});
  CHECK(ddp::exit_from_fields(j) == ExitStatus::exited(3));
  put_exit_fields(j, ExitStatus::killed(SIGKILL));
  CHECK(j == json{{"exit_code", nullptr}, {"signal", "SIGKILL"}});
  CHECK(ddp::exit_from_fields(j) == ExitStatus::killed(SIGKILL));
  put_exit_fields(j, ExitStatus::killed(99));
  CHECK(j["signal"] == "signal 99");
  CHECK(ddp::exit_from_fields(j) == ExitStatus::killed(99));
  CHECK(ddp::exit_from_fields(json{{"signal", "KILL"}}) == ExitStatus::killed(SIGKILL));
  CHECK_FALSE(ddp::exit_from_fields(json{{"signal", "SIGNOPE"}}));
  CHECK_FALSE(ddp::exit_from_fields(json{{"exit_code", nullptr}, {"signal", nullptr}}));
  CHECK_FALSE(ddp::exit_from_fields(json{{"exit_code", "3"}}));
  CHECK_FALSE(ddp::exit_from_fields(json::object()));
}

TEST_CASE("describe_exit: a Windows NTSTATUS code reads in hex") {
  CHECK(describe_exit(ExitStatus::exited(static_cast<int>(0xC0000005u))) == "exited with code 0xC0000005");
  CHECK(describe_exit(ExitStatus::exited(static_cast<int>(0xE0DD0001u))) ==
        "exited with code 0xE0DD0001 (the stack dump a hang asked for)");
  CHECK(describe_exit(ExitStatus::exited(-1)) == "exited with code -1");
}
