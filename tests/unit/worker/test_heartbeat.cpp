// The SDK's heartbeat: it opens $DDP_HEARTBEAT_FILE for writing (creating it), and is a quiet no-op
// without the variable or with a path it cannot open.
#include <doctest/doctest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "tests/unit/temp_dir.hpp"
#include "worker/heartbeat.hpp"

using namespace ddp::worker;

TEST_CASE("heartbeat(): creates the file named by DDP_HEARTBEAT_FILE; keeps what is in it") {
  ddp::test::TempDir tmp("heartbeat_test");
  auto file = tmp.path / "local_rank_0";
  ::setenv("DDP_HEARTBEAT_FILE", file.c_str(), 1);
  CHECK(heartbeat());
  CHECK(std::filesystem::exists(file));
  std::ofstream(file) << "kept";
  CHECK(heartbeat());
  CHECK(std::filesystem::file_size(file) == 4);  // no truncation: only the open and close count
  ::unsetenv("DDP_HEARTBEAT_FILE");
  CHECK_FALSE(heartbeat());
  CHECK_FALSE(heartbeat(""));
  CHECK_FALSE(heartbeat((tmp.path / "missing" / "dir").string()));
}
