#include "launcher/supervisor/worker_store.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/ip/tcp.hpp>
#include <cstdlib>

#include "common/error.hpp"
#include "launcher/outputs/event_log.hpp"
#include "launcher/rendezvous/rendezvous.hpp"
#include "launcher/rendezvous/rendezvous_evidence.hpp"
#include "platform/listener.hpp"
#include "platform/proc.hpp"
#include "store/filestore_cleaner.hpp"
#include "store/server.hpp"

namespace asio = boost::asio;
namespace fs = std::filesystem;

namespace ddp::launcher {

WorkerStore::WorkerStore(asio::io_context& io, WorkerStoreConfig config, EventLog& events)
    : io_(io), config_(std::move(config)), events_(events) {}

WorkerStore::~WorkerStore() = default;

std::uint16_t WorkerStore::prepare(Rendezvous* rdzv, pid_t guardian, std::function<void(std::int64_t)> on_arrivals) {
  std::uint16_t port = config_.master_port;
  if (config_.mode == StoreMode::File) prepare_filestore(guardian);
  const bool hosts_workers = rdzv ? rdzv->is_host() : config_.node_rank == 0;
  if (config_.mode == StoreMode::Agent && hosts_workers) {
    port = host(rdzv, std::move(on_arrivals));
  } else if (config_.mode == StoreMode::Rank0 && port != 0 && config_.node_rank == 0) {
    check_rank0_port_free(port);
  } else if (config_.mode != StoreMode::Agent && port == 0) {
    // Rank 0 binds the port itself; pick one that is free now and do not hold it.
    asio::ip::tcp::acceptor probe(io_, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    port = probe.local_endpoint().port();
  }
  return port;
}

std::uint16_t WorkerStore::host(Rendezvous* rdzv, std::function<void(std::int64_t)> on_arrivals) {
  store::ServerConfig sc;
  sc.host = config_.nnodes > 1 ? "0.0.0.0" : config_.master_addr;
  sc.port = config_.master_port;
  sc.busy_port_advice = "leave --master-port out (a free port is picked) or give another one";
  sc.bad_host_advice = "--master-addr 127.0.0.1 for this node alone";
  sc.connection_limit_advice = " (the embedded store's fixed limit)";
  sc.pending_limit_advice = " (the embedded store's fixed limit)";
  if (rdzv) {
    sc.host = config_.dynamic_host;  // where every node reaches us
    sc.port = 0;
  }
  server_ = std::make_unique<store::StoreServer>(io_, sc);
  server_->start();
  // Every worker's store client adds 1 to `init/` when it connects (torch 1.13 and 2.x alike);
  // the store is fresh per attempt, so the count reaching the world size is the rendezvous.
  server_->set_key_observer([on_arrivals = std::move(on_arrivals)](std::string_view key, std::string_view value) {
    if (key == "init/") on_arrivals(std::atoll(std::string(value).c_str()));
  });
  const auto port = server_->port();
  spdlog::info("{} store (agent) listening on {}:{}", rdzv ? "workers'" : "rendezvous", sc.host, port);
  if (rdzv) rdzv->set_worker_store(sc.host, port, [this] { server_->reset_state(); });
  return port;
}

// --store file: the path is ours for the whole run. A file a killed run left there is removed
// first; one that live processes use is an error naming them (store::prepare_filestore_path).
void WorkerStore::prepare_filestore(pid_t guardian) {
  filestore_ = fs::absolute(config_.filestore);
  std::error_code ec;
  fs::create_directories(filestore_.parent_path(), ec);
  store::CleanOptions options;
  options.ignore_pids = {guardian};  // a fork of ours: it repeats our argv
  auto report = store::prepare_filestore_path(filestore_, options);
  if (report.outcome == store::CleanOutcome::Removed) {
    events_.emit(events::FilestoreCleaned{.path = filestore_.string()});
  }
  spdlog::info("rendezvous store (file): {}", filestore_.string());
}

// --store rank0 with a given --master-port: rank 0 will bind it, so a holder is named now (before
// any worker starts) instead of surfacing as rank 0's EADDRINUSE after its start-up.
void WorkerStore::check_rank0_port_free(std::uint16_t port) {
  asio::ip::tcp::acceptor probe(io_);
  asio::ip::tcp::endpoint ep(asio::ip::address_v4::any(), port);
  probe.open(ep.protocol());
  platform::prepare_listener(probe);  // as torch's TCPStore server claims its port
  boost::system::error_code ec;
  probe.bind(ep, ec);
  if (ec == asio::error::address_in_use) {
    throw Error(
        fmt::format("--master-port {} is already in use by {}: rank 0 could not host its store there. "
                    "Stop that process, or leave --master-port out (a free port is picked).",
                    port, proc::describe(proc::listeners_on_port(port))));
  }
}

void WorkerStore::reset_state() {
  if (server_) server_->reset_state();
}

void WorkerStore::remove_filestore(const char* why) {
  std::error_code ec;
  if (!filestore_.empty() && fs::remove(filestore_, ec))
    spdlog::info("removed the FileStore {} ({})", filestore_.string(), why);
}

void WorkerStore::stop() {
  if (server_) server_->stop();
}

RendezvousEvidence WorkerStore::evidence(const std::string& master_addr, std::uint16_t master_port,
                                         std::vector<WatchedRank> ranks) const {
  RendezvousEvidence ev;
  ev.own_store = server_ != nullptr;
  ev.file_store = config_.mode == StoreMode::File;
  ev.where = fmt::format("the store at {}:{}", master_addr, master_port);
  store::FileStoreLog log;
  std::vector<pid_t> holders;
  if (server_) {
    auto count = server_->state().value("init/");
    ev.arrived = count ? std::atoll(std::string(*count).c_str()) : 0;
  } else if (config_.mode == StoreMode::Rank0) {
    ev.arrived = rank0_store_arrivals(master_addr, master_port);
    ev.where = fmt::format("rank 0's store at {}:{}", master_addr, master_port);
  } else {
    log = read_filestore(filestore_);
    ev.arrived = filestore_barrier_count(log);
    ev.where = fmt::format("the FileStore {}", filestore_.string());
    for (const auto& p : proc::processes_with_open(filestore_)) holders.push_back(p.pid);
  }
  for (auto& r : ranks) {
    if (ev.file_store) {
      r.reached =
          filestore_names_rank(log, r.rank) || std::find(holders.begin(), holders.end(), r.pid) != holders.end();
    } else {
      r.reached = proc::connected_to_port(r.pid, master_port);
    }
  }
  ev.ranks = std::move(ranks);
  return ev;
}

}  // namespace ddp::launcher
