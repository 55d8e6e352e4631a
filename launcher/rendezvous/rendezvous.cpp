#include "launcher/rendezvous/rendezvous.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "common/error.hpp"
#include "launcher/rendezvous/rendezvous_client.hpp"
#include "platform/host.hpp"
#include "store/server.hpp"

namespace asio = boost::asio;
using json = nlohmann::json;
using namespace std::chrono_literals;

namespace ddp::launcher {

std::string default_node_name() {
  auto host = platform::host_name();
  return host.empty() ? "localhost" : host;
}

std::string make_rdzv_token(const std::string& name) {
  std::random_device rd;
  return fmt::format("{}:{}:{:08x}", name, platform::current_pid(), rd());
}

std::string rdzv_prefix(const RendezvousConfig& c) { return fmt::format("rdzv/{}/", c.run_id); }

namespace {

// ---------------------------------------------------------------------------------------------
// The host: the rendezvous store on the endpoint, the machine, a timer for its deadlines.
class RendezvousHost : public Rendezvous {
 public:
  RendezvousHost(asio::io_context& io, RendezvousConfig config, RendezvousCallbacks cb,
                 std::unique_ptr<store::StoreServer> server)
      : io_(io),
        config_(std::move(config)),
        cb_(std::move(cb)),
        server_(std::move(server)),
        machine_(config_.policy),
        timer_(io),
        barrier_timer_(io),
        started_(std::chrono::steady_clock::now()),
        p_(rdzv_prefix(config_)) {
    self_.token = make_rdzv_token(config_.local_addr);
    self_.host = config_.local_addr;
    self_.nproc = config_.nproc;
    self_.rank_hint = config_.rank_hint;
    server_->set_key_observer([this](std::string_view key, std::string_view value) {
      if (key.substr(0, p_.size()) != p_) return;
      // Decide outside the store's request handling: it may be iterating its own tables.
      asio::post(io_, [this, k = std::string(key.substr(p_.size())), v = std::string(value)] { on_key(k, v); });
    });
    watch_connections();
    // Who hosts: the other nodes name this supervisor when the store goes, and tell a restarted
    // one (a new token) from this one when they reconnect.
    server_->set_local(
        p_ + "host",
        json{{"token", self_.token}, {"host", self_.host}, {"pid", static_cast<int>(platform::current_pid())}}.dump());
    server_->start();
    spdlog::info("rendezvous store (c10d, run id {}) hosted here on {}:{}", config_.run_id, config_.endpoint_host,
                 server_->port());
  }
  ~RendezvousHost() override {
    server_->set_key_observer(nullptr);
    server_->set_connection_observer({});
    server_->stop();
  }

  bool is_host() const override { return true; }
  std::string endpoint() const override { return fmt::format("{}:{}", config_.endpoint_host, server_->port()); }

  void set_worker_store(std::string addr, std::uint16_t port, std::function<void()> reset) override {
    worker_addr_ = std::move(addr);
    worker_port_ = port;
    reset_workers_ = std::move(reset);
  }

  void join(const RdzvAttemptReport& last) override {
    ++self_.seq;
    self_.last = last;
    feed(rdzv_event::Join{self_, now()});
  }

  void finish(bool success, std::string why, std::function<void()> then) override {
    if (!success) {
      feed(rdzv_event::Leave{self_.token, std::move(why), now(), true});
      // The others read their wake keys from this store: give them a moment before it goes.
      linger(std::move(then), 300ms);
      return;
    }
    feed(rdzv_event::Done{self_.token, now()});
    if (machine_.phase() == RdzvPhase::Finished || machine_.phase() == RdzvPhase::Closed) {
      linger(std::move(then), 100ms);
      return;
    }
    all_done_ = std::move(then);
    spdlog::info("workers done; keeping the rendezvous store up until every node has finished (at most {} s)",
                 std::chrono::duration_cast<std::chrono::seconds>(config_.exit_barrier).count());
    barrier_timer_.expires_after(config_.exit_barrier);
    barrier_timer_.async_wait([this](boost::system::error_code ec) {
      if (ec || !all_done_) return;
      std::string missing;
      for (const auto& s : machine_.current().nodes) missing += (missing.empty() ? "" : ", ") + s.host;
      spdlog::warn(
          "exit barrier: not every node reported its end within {} s (nodes of round {}: {}); closing "
          "the rendezvous store",
          std::chrono::duration_cast<std::chrono::seconds>(config_.exit_barrier).count(), machine_.round(), missing);
      // Those still running learn why the store goes (rather than finding it gone); the ones done
      // read nothing more.
      auto reason = fmt::format(
          "the rendezvous host {} finished and closed its store after waiting exit_barrier_timeout ({} s) for the "
          "other nodes to finish",
          self_.host, std::chrono::duration_cast<std::chrono::seconds>(config_.exit_barrier).count());
      auto msg = rdzv_wake_value(reason, true);
      for (const auto& s : machine_.current().nodes) {
        if (s.token != self_.token) server_->set_local(fmt::format("{}wake/{}/{}", p_, s.token, machine_.round()), msg);
      }
      linger(std::exchange(all_done_, nullptr), 300ms);
    });
  }

 private:
  std::chrono::milliseconds now() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started_);
  }

  void linger(std::function<void()> then, std::chrono::milliseconds d) {
    barrier_timer_.expires_after(d);
    barrier_timer_.async_wait([then = std::move(then)](boost::system::error_code) { then(); });
  }

  // Which store connections are whose: a node's requests name its token (join, hb, assign, wake,
  // done, leave keys). When a node's last connection closes (its supervisor killed: the kernel
  // closes its sockets at once) the machine suspects it; a new one names it again within the grace.
  void watch_connections() {
    store::StoreState::ConnectionObserver o;
    o.named = [this](store::ConnId conn, std::string_view key) {
      if (conn == 0 || key.substr(0, p_.size()) != p_) return;
      auto token = token_in(key.substr(p_.size()));
      if (token.empty()) return;
      auto [it, fresh] = conn_token_.try_emplace(conn, token);
      if (!fresh) return;  // one node per connection: its first key says which
      if (conns_of_[token]++ == 0) {
        asio::post(io_, [this, token] { feed(rdzv_event::Reconnected{token, now()}); });
      }
    };
    o.closed = [this](store::ConnId conn) {
      auto it = conn_token_.find(conn);
      if (it == conn_token_.end()) return;
      auto token = std::move(it->second);
      conn_token_.erase(it);
      if (--conns_of_[token] > 0) return;
      conns_of_.erase(token);
      asio::post(io_, [this, token] {
        spdlog::info(
            "rendezvous: the store connection of node {} closed; it is dropped unless it reconnects within "
            "{} ms",
            token, config_.policy.connection_grace.count());
        feed(rdzv_event::ConnectionClosed{token, now()});
      });
    };
    server_->set_connection_observer(std::move(o));
  }

  // The node token a rendezvous key names: hb/T, done/T, leave/T, join/T/seq, assign/T/seq,
  // wake/T/round; "" for the others (host, round/N).
  static std::string token_in(std::string_view rest) {
    auto slash = rest.find('/');
    if (slash == std::string_view::npos) return {};
    auto kind = rest.substr(0, slash);
    auto tail = rest.substr(slash + 1);
    if (kind == "hb" || kind == "done" || kind == "leave") return std::string(tail);
    if (kind == "join" || kind == "assign" || kind == "wake") {
      auto last = tail.rfind('/');
      return last == std::string_view::npos ? std::string() : std::string(tail.substr(0, last));
    }
    return {};
  }

  void on_key(const std::string& key, const std::string& value) {
    auto slash = key.find('/');
    if (slash == std::string::npos) return;
    auto kind = key.substr(0, slash);
    auto rest = key.substr(slash + 1);
    if (kind == "hb") return feed(rdzv_event::Heartbeat{rest, now()});
    if (kind == "done") return feed(rdzv_event::Done{rest, now()});
    if (kind == "leave") return feed(rdzv_event::Leave{rest, value, now()});
    if (kind != "join") return;
    try {
      feed(rdzv_event::Join{rdzv_join_info(value), now()});
    } catch (const std::exception& e) {
      spdlog::warn("rendezvous: ignoring a malformed join ({}): {}", e.what(), value.substr(0, 200));
    }
  }

  void feed(const RdzvEvent& e) {
    auto t = now();
    auto decisions = machine_.on(rdzv_event::Heartbeat{self_.token, t});
    auto more = machine_.on(e);
    decisions.insert(decisions.end(), more.begin(), more.end());
    for (const auto& d : decisions) std::visit([this](const auto& x) { perform(x); }, d);
    arm_timer();
  }

  void arm_timer() {
    auto at = machine_.next_deadline();
    if (!at) {
      timer_.cancel();
      return;
    }
    timer_.expires_at(started_ + *at + 1ms);
    timer_.async_wait([this](boost::system::error_code ec) {
      if (!ec) feed(rdzv_event::Tick{now()});
    });
  }

  // The job's budget for whoever reads the store (the machine's is the one that decides).
  void note_budget(int round) {
    const auto& b = machine_.budget();
    if (!b) return;
    server_->set_local(p_ + "budget", json{{"used", b->charged()},
                                           {"max_restarts", b->policy().max_restarts},
                                           {"restarts_left", b->restarts_left()},
                                           {"round", round}}
                                          .dump());
  }

  void perform(const rdzv_decision::Publish& p) {
    if (reset_workers_) reset_workers_();
    const auto& r = p.round;
    if (r.restart) note_budget(r.round - 1);  // every node logs the decision (Supervisor::on_round)
    json members = json::array();
    for (const auto& s : r.nodes) members.push_back({{"host", s.host}, {"nproc", s.nproc}, {"token", s.token}});
    server_->set_local(fmt::format("{}round/{}", p_, r.round),
                       json{{"round", r.round}, {"world_size", r.world_size}, {"nodes", members}}.dump());
    std::optional<RoundAssignment> mine;
    std::string hosts;
    int store_node_rank = -1;  // this node's rank in the round: the others name it if the store goes
    for (const auto& s : r.nodes) {
      if (s.token == self_.token) store_node_rank = s.node_rank;
    }
    for (const auto& s : r.nodes) {
      RoundAssignment a{r.round,
                        s.node_rank,
                        static_cast<int>(r.nodes.size()),
                        r.world_size,
                        s.rank_base,
                        s.nproc,
                        worker_addr_,
                        worker_port_,
                        {},
                        r.membership_changed,
                        r.restart};
      hosts += fmt::format("{}{}={}", hosts.empty() ? "" : " ", s.node_rank, s.host);
      if (s.token == self_.token) {
        mine = a;
        continue;
      }
      server_->set_local(fmt::format("{}assign/{}/{}", p_, s.token, s.seq), rdzv_assign_value(a, store_node_rank));
    }
    spdlog::info("rendezvous round {} closed: {} node(s), world size {} [{}]", r.round, r.nodes.size(), r.world_size,
                 hosts);
    if (mine) {
      for (const auto& s : r.nodes) mine->hosts.push_back(s.host);
      if (cb_.assigned) cb_.assigned(*mine);
    }
  }

  void perform(const rdzv_decision::EndRound& e) {
    spdlog::warn("rendezvous round {} ends: {}", e.round, e.reason);
    auto msg = rdzv_wake_value(e.reason, false);
    bool self = false;
    for (const auto& t : e.members) {
      if (t == self_.token) {
        self = true;
      } else {
        server_->set_local(fmt::format("{}wake/{}/{}", p_, t, e.round), msg);
      }
    }
    if (self && cb_.round_ended) cb_.round_ended(e.reason);
  }

  void perform(const rdzv_decision::Close& c) {
    if (c.restart) note_budget(machine_.round());
    auto msg = rdzv_wake_value(c.reason, true, c.restart);
    bool self = false;
    for (const auto& t : c.members) {
      if (t == self_.token) {
        self = true;
      } else {
        server_->set_local(fmt::format("{}wake/{}/{}", p_, t, c.round), msg);
      }
    }
    for (const auto& pn : c.pending) {
      if (pn.token == self_.token) {
        self = true;
      } else {
        server_->set_local(fmt::format("{}assign/{}/{}", p_, pn.token, pn.seq), msg);
      }
    }
    spdlog::error("rendezvous closed: {}", c.reason);
    if (self && cb_.closed) cb_.closed(c.reason, c.restart);
  }

  void perform(const rdzv_decision::Reject& r) {
    auto msg = rdzv_wake_value(r.reason, true);
    if (r.node.token == self_.token) {
      if (cb_.closed) cb_.closed(r.reason, std::nullopt);
      return;
    }
    server_->set_local(fmt::format("{}assign/{}/{}", p_, r.node.token, r.node.seq), msg);
  }

  void perform(const rdzv_decision::AllDone&) {
    if (all_done_) {
      spdlog::info("every node finished: closing the rendezvous store");
      barrier_timer_.cancel();
      std::exchange(all_done_, nullptr)();
    }
  }

  void perform(const rdzv_decision::NodeLost& l) {
    spdlog::warn("rendezvous: node {} is dead ({})", l.host, l.reason);
    if (cb_.node_lost) cb_.node_lost(l.host, l.silent, l.reason);
  }

  asio::io_context& io_;
  RendezvousConfig config_;
  RendezvousCallbacks cb_;
  std::unique_ptr<store::StoreServer> server_;
  RendezvousMachine machine_;
  asio::steady_timer timer_;
  asio::steady_timer barrier_timer_;
  std::chrono::steady_clock::time_point started_;
  std::string p_;
  RdzvNodeInfo self_;
  std::string worker_addr_;
  std::uint16_t worker_port_ = 0;
  std::function<void()> reset_workers_;
  std::function<void()> all_done_;
  std::map<store::ConnId, std::string> conn_token_;  // a store connection → the node whose token it named
  std::map<std::string, int> conns_of_;              // a node → how many of its connections are open
};

}  // namespace

std::unique_ptr<Rendezvous> Rendezvous::create(asio::io_context& io, RendezvousConfig config,
                                               RendezvousCallbacks callbacks) {
  if (config.local_addr.empty()) config.local_addr = default_node_name();
  if (config.is_host.value_or(true)) {
    try {
      store::ServerConfig sc;
      sc.host = config.endpoint_host;
      sc.port = config.endpoint_port;
      sc.busy_port_advice = "give another port in --rdzv-endpoint HOST:PORT";
      sc.bad_host_advice = "--rdzv-endpoint HOST:PORT with this node's name or address";
      sc.connection_limit_advice = " (the embedded store's fixed limit)";
      sc.pending_limit_advice = " (the embedded store's fixed limit)";
      auto server = std::make_unique<store::StoreServer>(io, sc);
      return std::make_unique<RendezvousHost>(io, std::move(config), std::move(callbacks), std::move(server));
    } catch (const std::exception& e) {
      // Bound elsewhere (or not our address). Two supervisors starting together can both bind with
      // SO_REUSEADDR; the loser's listen() then fails (a boost system_error): it joins instead.
      if (config.is_host.value_or(false)) {
        throw Error(fmt::format("--rdzv-conf is_host=1 but this node cannot host the rendezvous store: {}", e.what()));
      }
      spdlog::debug("not hosting the rendezvous store ({}); joining {}:{}", e.what(), config.endpoint_host,
                    config.endpoint_port);
    }
  }
  return make_rendezvous_client(io, std::move(config), std::move(callbacks));
}

}  // namespace ddp::launcher
