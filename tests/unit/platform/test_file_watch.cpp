// platform/file_watch.hpp and host.hpp's random bytes: the same on Linux (inotify) and Windows
// (polling).
#include <doctest/doctest.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "platform/file_watch.hpp"
#include "platform/files.hpp"
#include "platform/host.hpp"

using namespace ddp;
namespace fs = std::filesystem;

namespace {

struct Dir {
  Dir() : path(platform::make_unique_directory(fs::temp_directory_path(), "ddp_file_watch_")) {}
  ~Dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  fs::path path;
};

// Runs the loop until `done` or 10 s.
template <class Done>
bool run_until(boost::asio::io_context& io, Done done) {
  for (int i = 0; i < 1000 && !done(); ++i) io.run_for(std::chrono::milliseconds(10));
  return done();
}

}  // namespace

TEST_CASE("a watched file: each write is told, on the loop, until it is unwatched") {
  Dir dir;
  auto file = dir.path / "events.jsonl";
  std::ofstream(file).flush();
  boost::asio::io_context io;
  platform::FileWatch watch(io);
  int calls = 0;
  auto token = watch.watch(file, [&] { ++calls; });
  REQUIRE(token);
  std::ofstream(file, std::ios::app) << "one line\n";
  CHECK(run_until(io, [&] { return calls > 0; }));
  watch.unwatch(*token);
  const int seen = calls;
  std::ofstream(file, std::ios::app) << "another line, longer than the first\n";
  io.run_for(std::chrono::milliseconds(300));
  CHECK(calls == seen);
  CHECK_FALSE(watch.watch(dir.path / "missing", [] {}));
}

TEST_CASE("a watched directory: a new entry and a write to an entry are told by name") {
  Dir dir;
  boost::asio::io_context io;
  platform::FileWatch watch(io);
  std::set<std::string> names;
  auto token = watch.watch_directory(dir.path, [&](const std::string& name) { names.insert(name); });
  REQUIRE(token);
  std::ofstream(dir.path / "rank-0.beat") << "1";
  CHECK(run_until(io, [&] { return names.count("rank-0.beat") > 0; }));
  names.clear();
  std::ofstream(dir.path / "rank-0.beat", std::ios::app) << "22";
  CHECK(run_until(io, [&] { return names.count("rank-0.beat") > 0; }));
}

TEST_CASE("a callback may destroy the watch") {
  Dir dir;
  auto file = dir.path / "f";
  std::ofstream(file).flush();
  boost::asio::io_context io;
  auto watch = std::make_unique<platform::FileWatch>(io);
  bool called = false;
  watch->watch(file, [&] {
    called = true;
    watch.reset();
  });
  std::ofstream(file, std::ios::app) << "x\n";
  CHECK(run_until(io, [&] { return called; }));
  io.run_for(std::chrono::milliseconds(200));  // nothing of it runs after
}

TEST_CASE("random bytes: as many as asked, not the same twice") {
  auto a = platform::random_bytes(16), b = platform::random_bytes(16);
  CHECK(a.size() == 16);
  CHECK(a != b);
}
