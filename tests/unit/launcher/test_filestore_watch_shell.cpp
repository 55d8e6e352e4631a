// FileStoreWatch's shell on real files: what it reads of the paths a script names.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "launcher/supervisor/filestore_watch.hpp"
#include "platform/host.hpp"

namespace fs = std::filesystem;
using namespace ddp::launcher;

namespace {
// Bytes this process has read so far (/proc/self/io's rchar); nullopt where there is no such file.
std::optional<long long> bytes_read() {
  std::ifstream io("/proc/self/io");
  std::string key;
  long long value = 0;
  while (io >> key >> value) {
    if (key == "rchar:") return value;
  }
  return std::nullopt;
}
}  // namespace

TEST_CASE("the paths a script names are judged by their first bytes: a 32 MiB data file is not read whole") {
  // Before: every candidate up to 64 MiB was read whole at each launch (a data set, the CA bundle,
  // /bin/bash from the environment): ~30 ms of a trivial job's start here, and a data set's size.
  const fs::path dir = fs::temp_directory_path() / ("ddp-fsw-shell-" + std::to_string(ddp::platform::current_pid()));
  fs::create_directories(dir);
  const fs::path data = dir / "train.bin";
  {
    std::ofstream out(data, std::ios::binary);
    const std::string block(1 << 20, 'x');
    for (int i = 0; i < 32; ++i) out << block;
  }
  auto before = bytes_read();
  if (!before) {
    fs::remove_all(dir);
    return;  // no /proc/self/io: nothing to measure with
  }
  FileStoreWatch watch;
  watch.snapshot({"train.py", data.string()}, {{"DATA", data.string()}}, false, 0.0, {});
  auto after = bytes_read();
  REQUIRE(after);
  CHECK(*after - *before < (1 << 20));
  CHECK(watch.used().empty());
  fs::remove_all(dir);
}
