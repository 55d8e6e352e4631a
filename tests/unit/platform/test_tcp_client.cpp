// platform/tcp_client.hpp against a loopback Asio server, on both builds (Windows: under Wine).
#include <doctest/doctest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <string>
#include <thread>

#include "platform/tcp_client.hpp"

using ddp::platform::TcpClient;
using namespace std::chrono_literals;
namespace asio = boost::asio;

namespace {

TcpClient::Clock::time_point in(std::chrono::milliseconds d) { return TcpClient::Clock::now() + d; }

}  // namespace

TEST_CASE("TcpClient: connect, send, receive exactly, time out, see the peer close") {
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
  const auto port = acceptor.local_endpoint().port();
  std::string why;
  auto addresses = ddp::platform::resolve_tcp("127.0.0.1", port, why);
  REQUIRE(addresses.size() == 1);

  // The server: reads 5 bytes, answers "hello" + them, waits for "bye", closes.
  std::thread server([&] {
    asio::ip::tcp::socket s(io);
    acceptor.accept(s);
    std::string got(5, '\0');
    asio::read(s, asio::buffer(got));
    asio::write(s, asio::buffer("hello" + got));
    std::string bye(3, '\0');
    asio::read(s, asio::buffer(bye));
    s.close();
  });

  TcpClient c;
  REQUIRE(c.connect(addresses[0], in(5000ms), why));
  CHECK(static_cast<bool>(c));
  CHECK(c.idle_and_open());
  CHECK(c.send_all("world", in(5000ms)) == TcpClient::Io::Ok);
  char buf[10];
  CHECK(c.recv_exact(buf, 10, in(5000ms)) == TcpClient::Io::Ok);
  CHECK(std::string(buf, 10) == "helloworld");
  // Nothing more comes: a bounded wait.
  auto start = TcpClient::Clock::now();
  CHECK(c.recv_exact(buf, 1, in(150ms)) == TcpClient::Io::Timeout);
  CHECK(TcpClient::Clock::now() - start >= 140ms);
  CHECK(c.send_all("bye", in(5000ms)) == TcpClient::Io::Ok);
  server.join();
  // The peer closed: seen between calls, and as Closed by a read.
  auto deadline = in(5000ms);
  while (c.idle_and_open() && TcpClient::Clock::now() < deadline) std::this_thread::sleep_for(10ms);
  CHECK_FALSE(c.idle_and_open());
  CHECK(c.recv_exact(buf, 1, in(5000ms)) == TcpClient::Io::Closed);
  c.close();
  CHECK_FALSE(static_cast<bool>(c));
}

TEST_CASE("TcpClient: a refused connect is false with a reason, nothing left open") {
  asio::io_context io;
  std::uint16_t port = 0;
  {
    asio::ip::tcp::acceptor a(io, {asio::ip::make_address("127.0.0.1"), 0});
    port = a.local_endpoint().port();
  }  // closed: nobody listens there now
  std::string why;
  auto addresses = ddp::platform::resolve_tcp("127.0.0.1", port, why);
  REQUIRE_FALSE(addresses.empty());
  TcpClient c;
  CHECK_FALSE(c.connect(addresses[0], in(5000ms), why));
  CHECK_FALSE(why.empty());
  CHECK_FALSE(static_cast<bool>(c));
}

TEST_CASE("resolve_tcp: a name that does not resolve says so") {
  std::string why;
  CHECK(ddp::platform::resolve_tcp("no-such-host.invalid", 1, why).empty());
  CHECK(why.find("no-such-host.invalid") != std::string::npos);
}
