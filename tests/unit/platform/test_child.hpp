#pragma once
// The platform tests' child program (tests/helpers/test_child.cpp), beside the test binary in both
// builds: bin/ddp-test-child, bin/ddp-test-child.exe.
#include <array>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "platform/child_exits.hpp"
#include "platform/host.hpp"
#include "platform/pipe.hpp"
#include "platform/spawn.hpp"

namespace ddp::test {

inline std::string child_program() {
  const auto self = platform::executable_path();
  return (self.parent_path() / ("ddp-test-child" + self.extension().string())).string();
}

inline SpawnRequest child_request(const std::vector<std::string>& args) {
  SpawnRequest r;
  r.program = child_program();
  r.argv = {r.program};
  r.argv.insert(r.argv.end(), args.begin(), args.end());
  for (const auto& [k, v] : platform::environment()) r.env.push_back(k + "=" + v);
  return r;
}

// Everything the read end of a pipe delivers until its writers are gone (at most `limit`), with
// Windows' \r\n turned into \n.
inline std::string read_to_end(platform::NativeHandle read_end, std::chrono::milliseconds limit) {
  boost::asio::io_context io;
  platform::PipeStream stream(io, read_end);
  std::string text;
  std::array<char, 4096> buf{};
  std::function<void()> next = [&] {
    stream.async_read_some(boost::asio::buffer(buf), [&](const boost::system::error_code& ec, std::size_t n) {
      text.append(buf.data(), n);
      if (!ec) next();
    });
  };
  next();
  io.run_for(limit);
  std::string out;
  for (char c : text) {
    if (c != '\r') out.push_back(c);
  }
  return out;
}

// The pids `ddp-test-child tree` writes to `file` ("PID:START PID:START": itself, its grandchild),
// once it has (10 s at most); {0, 0} when it never did.
inline std::pair<pid_t, pid_t> read_tree(const std::filesystem::path& file) {
  for (int i = 0; i < 500; ++i) {
    std::ifstream in(file);
    std::string a, b;
    if (in >> a >> b) return {std::stoi(a.substr(0, a.find(':'))), std::stoi(b.substr(0, b.find(':')))};
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return {0, 0};
}

// Waits (at most `limit`) for the child to end, and reaps it (POSIX: no zombie is left for the
// tests that count children).
inline std::optional<platform::ChildExit> wait_exit(const Child& child, std::chrono::milliseconds limit) {
  boost::asio::io_context io;
  std::optional<platform::ChildExit> exit;
  platform::ChildExits exits(io, [&](const platform::ChildExit& x) { exit = x; });
  exits.watch(child, 0);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!exit && std::chrono::steady_clock::now() < deadline) io.run_for(std::chrono::milliseconds(50));
  return exit;
}

}  // namespace ddp::test
