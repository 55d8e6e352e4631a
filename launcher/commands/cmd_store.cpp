// `ddp-launch store`: the rendezvous store on its own, for jobs started by hand or by other tools.
#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>
#include <cstdio>
#include <memory>

#include "common/signals.hpp"
#include "launcher/commands/commands.hpp"
#include "platform/proc.hpp"
#include "platform/stop_signals.hpp"
#include "store/server.hpp"

namespace ddp::cli {

Command add_store_command(CLI::App& app) {
  auto* sub = app.add_subcommand("store", "Run the PyTorch-compatible TCP rendezvous store (c10d TCPStore protocol)");
  auto config = std::make_shared<store::ServerConfig>();
  auto legacy = std::make_shared<std::string>("a");
  auto keep_stale_waits = std::make_shared<bool>(false);
  auto cas_no_wake = std::make_shared<bool>(false);
  sub->add_option("--host", config->host, "Address to listen on (default loopback; 0.0.0.0 or :: for all)")
      ->capture_default_str();
  sub->add_option("--port", config->port, "Port; 0 picks a free one and prints it as port=<n> on stdout")
      ->capture_default_str();
  sub->add_option("--legacy-dialect", *legacy,
                  "Protocol of clients that do not open with the torch >= 2.2 handshake: a = torch 1.13/2.0 (default), "
                  "b = torch 2.1")
      ->check(CLI::IsMember({"a", "b"}))
      ->capture_default_str();
  sub->add_flag("--keep-stale-waits", *keep_stale_waits,
                "Do not drop a torch 1.13 client's timed-out WAIT when its next request arrives "
                "(torch's own behaviour, which corrupts that client's next reply)");
  sub->add_flag("--compare-set-no-wake", *cas_no_wake,
                "Do not wake waiters when COMPARE_SET creates or changes a key (torch 1.13's behaviour)");
  auto& l = config->limits;
  sub->add_option("--max-key-bytes", l.max_key_bytes, "Largest key accepted")->capture_default_str();
  sub->add_option("--max-value-bytes", l.max_value_bytes, "Largest value accepted")->capture_default_str();
  sub->add_option("--max-keys-per-request", l.max_keys_per_request, "Most keys in one CHECK/WAIT/MULTI_*")
      ->capture_default_str();
  sub->add_option("--max-request-bytes", l.max_request_bytes, "Largest single request")->capture_default_str();
  sub->add_option("--max-total-bytes", l.max_total_bytes, "Most bytes of keys and values held")->capture_default_str();
  sub->add_option("--max-pending-bytes", l.max_pending_bytes,
                  "Most bytes of requests still arriving, all connections together (a connection that passes it is "
                  "closed)")
      ->capture_default_str();
  sub->add_option("--max-connections", l.max_connections, "Most connections open at once")->capture_default_str();

  auto run = [config, legacy, keep_stale_waits, cas_no_wake]() -> int {
    config->legacy_dialect = *legacy == "b" ? store::Dialect::B : store::Dialect::A;
    config->state.drop_stale_waits = !*keep_stale_waits;
    config->state.compare_set_wakes = !*cas_no_wake;
    auto limit = proc::raise_open_file_limit();
    boost::asio::io_context io(1);
    // Signals are caught before the port is announced: whoever reads port=<n> may stop us at once.
    // (Windows: Ctrl-C and Ctrl-Break; platform/stop_signals.hpp.)
    platform::StopSignals signals(io);
    for (int s : {sig::kInt, sig::kTerm}) signals.add(s);
    platform::ignore_broken_pipes();
    store::StoreServer server(io, *config);
    server.start();
    std::printf("port=%u\n", static_cast<unsigned>(server.port()));
    std::fflush(stdout);
    spdlog::info("store serving on {}:{} (open-file limit {})", config->host, server.port(), limit);
    signals.async_wait([&](const boost::system::error_code& ec, int signo) {
      if (ec) return;
      spdlog::info("store stopping on {}", sig::signal_name(signo));
      server.stop();
      io.stop();
    });
    io.run();
    return 0;
  };
  return {sub, run};
}

}  // namespace ddp::cli
