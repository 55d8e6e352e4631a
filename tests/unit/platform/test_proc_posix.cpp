#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "platform/proc.hpp"

using namespace ddp;

TEST_CASE("listeners_on_port finds this process listening") {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::listen(fd, 4) == 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  auto port = ntohs(addr.sin_port);

  auto holders = proc::listeners_on_port(port);
  REQUIRE(holders.size() == 1);
  CHECK(holders[0].pid == ::getpid());
  CHECK(holders[0].cmdline.find("unit_platform") != std::string::npos);
  CHECK(proc::describe(holders).find(std::to_string(::getpid())) != std::string::npos);
  ::close(fd);
  CHECK(proc::listeners_on_port(port).empty());
}

TEST_CASE("processes_with_open sees an open file and forgets a closed one") {
  auto path = std::filesystem::temp_directory_path() / ("ddp_proc_test_" + std::to_string(::getpid()));
  {
    std::ofstream f(path);
    f << "x";
    f.flush();
    auto holders = proc::processes_with_open(path);
    REQUIRE(holders.size() == 1);
    CHECK(holders[0].pid == ::getpid());
  }
  CHECK(proc::processes_with_open(path).empty());
  std::filesystem::remove(path);
}

TEST_CASE("processes_with_open sees a file opened through a hard link") {
  auto dir = std::filesystem::temp_directory_path();
  auto path = dir / ("ddp_proc_orig_" + std::to_string(::getpid()));
  auto link = dir / ("ddp_proc_link_" + std::to_string(::getpid()));
  { std::ofstream(path) << "x"; }
  std::filesystem::create_hard_link(path, link);
  {
    std::ifstream held(link);
    auto holders = proc::processes_with_open(path);
    REQUIRE(holders.size() == 1);
    CHECK(holders[0].pid == ::getpid());
  }
  std::filesystem::remove(link);
  std::filesystem::remove(path);
}

TEST_CASE("describe says something useful for nobody and for the invisible") {
  CHECK(proc::describe({}) == "an unknown process");
  CHECK(proc::describe({{0, ""}}) == "a process this user cannot see");
}
