// What a run writes at its end: a temporary run_dir goes unless worker metrics keep it; a
// directory the user named stays.
#include <doctest/doctest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "launcher/supervisor/run_outputs.hpp"

using namespace ddp::launcher;
namespace fs = std::filesystem;

namespace {

fs::path make_run_dir() {
  std::string tmpl = (fs::temp_directory_path() / "run_outputs_test.XXXXXX").string();
  REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
  return tmpl;
}

RunOutputsConfig config_for(const fs::path& run_dir, bool temporary) {
  RunOutputsConfig c;
  c.run_dir = run_dir;
  c.remove_run_dir = temporary;
  return c;
}

}  // namespace

TEST_CASE("a temporary run_dir without metrics is removed at the end") {
  auto dir = make_run_dir();
  auto config = config_for(dir, true);
  RunOutputs out(config, nlohmann::json::object());
  out.flush();
  out.finish(0, 1);
  CHECK_FALSE(fs::exists(dir));
}

TEST_CASE("worker metrics keep a temporary run_dir, with metrics.csv and run.json written") {
  auto dir = make_run_dir();
  auto config = config_for(dir, true);
  RunOutputs out(config, nlohmann::json::object());
  out.metrics.on_line(0, 0, "@ddp-metric step=1 loss=0.5");
  out.finish(3, 2);
  REQUIRE(fs::exists(dir / "metrics.csv"));
  std::ifstream run_json(dir / "run.json");
  auto j = nlohmann::json::parse(run_json);
  CHECK(j.at("exit_code") == 3);
  CHECK(j.at("attempts") == 2);
  fs::remove_all(dir);
}

TEST_CASE("a run_dir the user named stays, even empty") {
  auto dir = make_run_dir();
  auto config = config_for(dir, false);
  RunOutputs out(config, nlohmann::json::object());
  out.finish(1, 1);
  CHECK(fs::is_directory(dir));
  fs::remove_all(dir);
}

TEST_CASE("an attempt starts in an empty directory; a rank's directory exists without an old error.json") {
  auto dir = make_run_dir();
  auto config = config_for(dir, false);
  RunOutputs out(config, nlohmann::json::object());
  fs::create_directories(dir / "attempt_1" / "0");
  std::ofstream(dir / "attempt_1" / "0" / "stdout.log") << "a previous run's line\n";
  std::ofstream(dir / "attempt_1" / "0" / "error.json") << "{}";
  fs::create_directories(dir / "attempt_0");
  std::ofstream(dir / "attempt_0" / "kept") << "another attempt's\n";
  out.begin_attempt(1);
  CHECK_FALSE(fs::exists(dir / "attempt_1"));
  CHECK(fs::exists(dir / "attempt_0" / "kept"));
  fs::create_directories(dir / "attempt_1" / "1");
  std::ofstream(dir / "attempt_1" / "1" / "error.json") << "{}";
  CHECK(out.rank_dir(1, 1) == dir / "attempt_1" / "1");
  CHECK(fs::is_directory(dir / "attempt_1" / "1"));
  CHECK_FALSE(fs::exists(dir / "attempt_1" / "1" / "error.json"));
  CHECK(out.rank_dir(1, 2) == dir / "attempt_1" / "2");
  CHECK(fs::is_directory(dir / "attempt_1" / "2"));
  out.finish(0, 1);
  fs::remove_all(dir);
}
