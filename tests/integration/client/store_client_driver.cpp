// store-client-driver: drives StoreClient against a live server for the integration tests in this
// folder (the Python side starts the servers; this side makes the calls and checks the answers).
//
//   ops     --port P --dialect c|a   every operation, with the answers checked (ours or torch's server)
//   connect --port P --dialect c|a --connect-timeout-ms N   connect (retrying), then SET+GET;
//           prints "connected ms=<n>" or "error ms=<n> <message>" (exit 1)
//   restart --port P   SET, print "ready", wait for a line on stdin (the test restarts the server
//           meanwhile), then SET and GET on the same client: prints "after-restart <value>"
//   get --port P --key K   GET of a key as written (no "/" added, unlike torch's client): prints its
//           value; exit 1 with "error <message>" when it is not there within 10 s
//
// Each check prints "ok <name>"; the first failure prints "FAIL <name>: <why>" and exits 1.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/log.hpp"
#include "store/client.hpp"

namespace {

using ddp::store::ClientOptions;
using ddp::store::Dialect;
using ddp::store::StoreClient;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void expect(bool cond, const std::string& what) {
  if (!cond) throw Failure(what);
}

template <typename T>
void expect_eq(const T& got, const T& want, const std::string& what) {
  if (!(got == want)) throw Failure(what + ": got " + fmt::format("{}", got) + ", expected " + fmt::format("{}", want));
}

long long ms_since(Clock::time_point t) {
  return static_cast<long long>(std::chrono::duration_cast<milliseconds>(Clock::now() - t).count());
}

// Runs `fn`, which must throw E; returns the message.
template <typename E>
std::string expect_throw(const std::function<void()>& fn, const std::string& what) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    throw Failure(what + ": threw the wrong error: " + e.what());
  }
  throw Failure(what + ": did not throw");
}

void contains(const std::string& text, const std::string& part, const std::string& what) {
  expect(text.find(part) != std::string::npos, what + ": '" + part + "' not in: " + text);
}

struct Ops {
  ClientOptions options;
  std::string endpoint;

  StoreClient client() const { return StoreClient(options); }

  void run() {
    endpoint = fmt::format("{}:{}", options.host, options.port);
    bool has_append = options.dialect != Dialect::A;  // APPEND arrived with torch 2.1 (B)
    bool has_ping = options.dialect == Dialect::C;
    auto c = client();
    auto other = client();  // a second connection, like a second rank

    section("set_get", [&] {
      c.set("/k", "v");
      expect_eq(c.get("/k"), std::string("v"), "get after set");
      c.set("/k", "v2");
      expect_eq(c.get("/k"), std::string("v2"), "get after overwrite");
      expect_eq(other.get("/k"), std::string("v2"), "get from a second connection");
      c.set("/empty", "");
      expect_eq(c.get("/empty"), std::string(), "empty value");
      std::string binary("a\0b\xff", 4);
      c.set(binary, binary);
      expect_eq(c.get(binary), binary, "binary key and value");
      std::string big(1 << 20, 'x');
      big[12345] = 'y';
      c.set("/big", big);
      expect(c.get("/big") == big, "1 MiB value round trip");
    });

    section("add", [&] {
      expect_eq<std::int64_t>(c.add("/c", 5), 5, "add 5 to an absent key");
      expect_eq<std::int64_t>(c.add("/c", -2), 3, "add -2");
      expect_eq<std::int64_t>(other.add("/c", 0), 3, "add 0 reads the counter");
      expect_eq(c.get("/c"), std::string("3"), "counter stored as decimal text");
    });

    section("compare_set", [&] {
      expect_eq(c.compare_set("/cs", "", "first"), std::string("first"), "create with empty expected");
      expect_eq(c.compare_set("/cs", "first", "second"), std::string("second"), "matching swap");
      expect_eq(c.compare_set("/cs", "wrong", "third"), std::string("second"), "mismatch returns current");
      expect_eq(c.compare_set("/nocs", "exp", "new"), std::string("exp"), "absent key echoes expected");
      expect(!c.check({"/nocs"}), "absent-key compare_set stored nothing");
    });

    section("check", [&] {
      expect(c.check({"/k"}), "check of a present key");
      expect(!c.check({"/k", "/zz"}), "check with one absent key");
      expect(c.check({}), "check of no keys");
    });

    section("wait", [&] {
      c.wait({"/k", "/c"}, milliseconds(2000));
      auto start = Clock::now();
      std::thread setter([&] {
        std::this_thread::sleep_for(milliseconds(300));
        other.set("/late", "1");
      });
      c.wait({"/late"}, milliseconds(20000));
      setter.join();
      expect(ms_since(start) >= 250, "wait returned before the key was set");
    });

    section("wait_timeout_then_connection_works", [&] {
      const auto made_before = c.connections_made();
      auto start = Clock::now();
      auto msg = expect_throw<ddp::store::StoreTimeout>([&] { c.wait({"/never"}, milliseconds(400)); },
                                                        "wait for a key nobody sets");
      auto took = ms_since(start);
      expect(took >= 380, fmt::format("wait gave up early, after {} ms", took));
      expect(took < 400 + 5000, fmt::format("wait gave up late, after {} ms", took));
      contains(msg, endpoint, "timeout message names the endpoint");
      contains(msg, "/never", "timeout message names the key");
      contains(msg, "ms", "timeout message says how long");
      expect_eq<std::int64_t>(c.add("/c", 0), 3, "the next call after a timed-out wait");
      // B and C cancel the wait cleanly: the same connection goes on. A cannot: it reconnects.
      expect_eq<std::uint64_t>(c.connections_made(), has_append ? made_before : made_before + 1,
                               "connections made across a timed-out wait");
      // The key appears after the timeout: the server's late wake-up must not reach this client
      // as the answer to a later request (dialect A closes the connection; C cancels the wait).
      other.set("/never", "now");
      std::this_thread::sleep_for(milliseconds(200));
      expect_eq<std::int64_t>(c.add("/c", 0), 3, "a later call after the key appeared");
      expect_eq(c.get("/never"), std::string("now"), "get after the late key");
    });

    section("get_timeout", [&] {
      auto saved = c.options().timeout;
      c.set_timeout(milliseconds(300));
      auto msg = expect_throw<ddp::store::StoreTimeout>([&] { (void)c.get("/absent"); }, "get of an absent key");
      c.set_timeout(saved);
      contains(msg, "/absent", "get timeout names the key");
      contains(msg, endpoint, "get timeout names the endpoint");
      expect_eq(c.get("/k"), std::string("v2"), "get after a timed-out get");
    });

    section("num_keys_delete", [&] {
      auto n = c.num_keys();
      c.set("/del", "x");
      expect_eq<std::int64_t>(c.num_keys(), n + 1, "num_keys after a set");
      expect(c.delete_key("/del"), "delete of a present key");
      expect(!c.delete_key("/del"), "delete of an absent key");
      expect_eq<std::int64_t>(other.num_keys(), n, "num_keys after the delete");
    });

    section("multi", [&] {
      c.multi_set({"/m1", "/m2", "/m3"}, {"x", "", "zz"});
      auto values = other.multi_get({"/m3", "/m1", "/m2"});
      expect(values == std::vector<std::string>{"zz", "x", ""}, "multi_get answers in request order");
      expect(c.multi_get({}).empty(), "multi_get of no keys");
    });

    section("append", [&] {
      if (has_append) {
        c.append("/ap", "ab");
        c.append("/ap", "cd");
        expect_eq(other.get("/ap"), std::string("abcd"), "append creates then concatenates");
      } else {
        auto msg = expect_throw<ddp::store::StoreUnsupported>([&] { c.append("/ap", "ab"); }, "append in dialect A");
        contains(msg, "APPEND", "unsupported message names the operation");
        contains(msg, "the torch 1.13/2.0 protocol", "unsupported message names the protocol");
        expect_eq(c.get("/k"), std::string("v2"), "connection usable after an unsupported call");
      }
    });

    section("ping", [&] {
      if (has_ping) {
        auto rtt = c.ping();
        expect(rtt.count() >= 0, "ping round trip");
      } else {
        auto msg = expect_throw<ddp::store::StoreUnsupported>([&] { (void)c.ping(); }, "ping without dialect C");
        contains(msg, "PING", "unsupported message names the operation");
        expect_eq<std::int64_t>(c.add("/c", 0), 3, "connection usable after an unsupported call");
      }
    });
  }

  static void section(const std::string& name, const std::function<void()>& fn) {
    try {
      fn();
    } catch (const Failure& f) {
      throw Failure(name + ": " + f.what());
    } catch (const std::exception& e) {
      throw Failure(name + ": unexpected error: " + e.what());
    }
    std::printf("ok %s\n", name.c_str());
    std::fflush(stdout);
  }
};

Dialect parse_dialect(const std::string& d) { return d == "a" ? Dialect::A : d == "b" ? Dialect::B : Dialect::C; }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"StoreClient integration driver"};
  app.require_subcommand(1);
  std::string host = "127.0.0.1", dialect = "c";
  std::uint16_t port = 0;
  long long connect_timeout_ms = 10000;
  app.add_option("--host", host)->capture_default_str();
  app.add_option("--port", port)->required();
  app.add_option("--dialect", dialect)->check(CLI::IsMember({"a", "b", "c"}))->capture_default_str();
  app.add_option("--connect-timeout-ms", connect_timeout_ms)->capture_default_str();
  app.add_subcommand("ops", "Exercise every operation");
  auto* connect = app.add_subcommand("connect", "Connect (with retries), SET and GET, report the time");
  auto* restart = app.add_subcommand("restart", "Keep one client across a server restart");
  auto* get = app.add_subcommand("get", "Print one key's value");
  std::string key;
  get->add_option("--key", key)->required();
  CLI11_PARSE(app, argc, argv);
  ddp::init_logging();  // DDP_LOG_LEVEL=debug shows each connect retry

  ClientOptions options;
  options.host = host;
  options.port = port;
  options.dialect = parse_dialect(dialect);
  options.connect_timeout = milliseconds(connect_timeout_ms);
  options.timeout = milliseconds(30000);

  if (connect->parsed()) {
    auto start = Clock::now();
    try {
      StoreClient client(options);
      client.set("/hello", "world");
      if (client.get("/hello") != "world") throw Failure("get after set returned something else");
      std::printf("connected ms=%lld\n", ms_since(start));
      return 0;
    } catch (const std::exception& e) {
      std::printf("error ms=%lld %s\n", ms_since(start), e.what());
      return 1;
    }
  }

  if (get->parsed()) {
    try {
      options.timeout = milliseconds(10000);
      StoreClient client(options);
      std::printf("%s\n", client.get(key).c_str());
      return 0;
    } catch (const std::exception& e) {
      std::printf("error %s\n", e.what());
      return 1;
    }
  }

  if (restart->parsed()) {
    try {
      StoreClient client(options);
      client.set("/before", "1");
      std::printf("ready\n");
      std::fflush(stdout);
      char line[16];
      if (!std::fgets(line, sizeof(line), stdin)) throw Failure("stdin closed before the go-ahead");
      client.set("/after", "2");  // the first call after the restart: must not vanish
      std::printf("after-restart %s\n", client.get("/after").c_str());
      return 0;
    } catch (const std::exception& e) {
      std::printf("error %s\n", e.what());
      return 1;
    }
  }

  Ops run{options, {}};
  try {
    run.run();
  } catch (const std::exception& e) {
    std::printf("FAIL %s\n", e.what());
    return 1;
  }
  std::printf("all ok\n");
  return 0;
}
