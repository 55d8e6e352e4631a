#include "launcher/rendezvous.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "common/error.hpp"
#include "store/client.hpp"
#include "store/server.hpp"

namespace asio = boost::asio;
using json = nlohmann::json;
using namespace std::chrono_literals;

namespace ddp::launcher {

std::string default_node_name() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || !host[0]) return "localhost";
  return host;
}

namespace {

std::string make_token(const std::string& name) {
  std::random_device rd;
  return fmt::format("{}:{}:{:08x}", name, ::getpid(), rd());
}

std::string prefix(const RendezvousConfig& c) { return fmt::format("rdzv/{}/", c.run_id); }

// A reason may quote what a node sent (its leave message): any bytes. Replaced where not UTF-8,
// never a throw that would take the host (and every node's rendezvous) down.
std::string reason_json(const std::string& reason, bool closed) {
  return json{{"reason", reason}, {"closed", closed}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

json node_json(const RdzvNodeInfo& n) {
  return {{"token", n.token}, {"host", n.host}, {"nproc", n.nproc}, {"hint", n.rank_hint}, {"seq", n.seq}};
}

RoundAssignment parse_assignment(const json& j) {
  RoundAssignment a;
  a.round = j.at("round").get<int>();
  a.node_rank = j.at("node_rank").get<int>();
  a.nnodes = j.at("nnodes").get<int>();
  a.world_size = j.at("world_size").get<int>();
  a.rank_base = j.at("rank_base").get<int>();
  a.nproc = j.at("nproc").get<int>();
  a.master_addr = j.at("master_addr").get<std::string>();
  a.master_port = j.at("master_port").get<std::uint16_t>();
  a.membership_changed = j.value("changed", false);
  return a;
}

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
        p_(prefix(config_)) {
    self_.token = make_token(config_.local_addr);
    self_.host = config_.local_addr;
    self_.nproc = config_.nproc;
    self_.rank_hint = config_.rank_hint;
    server_->set_key_observer([this](std::string_view key, std::string_view value) {
      if (key.substr(0, p_.size()) != p_) return;
      // Decide outside the store's request handling: it may be iterating its own tables.
      asio::post(io_, [this, k = std::string(key.substr(p_.size())), v = std::string(value)] { on_key(k, v); });
    });
    // Who hosts: the other nodes name this supervisor when the store goes, and tell a restarted
    // one (a new token) from this one when they reconnect.
    server_->set_local(
        p_ + "host", json{{"token", self_.token}, {"host", self_.host}, {"pid", static_cast<int>(::getpid())}}.dump());
    server_->start();
    spdlog::info("rendezvous store (c10d, run id {}) hosted here on {}:{}", config_.run_id, config_.endpoint_host,
                 server_->port());
  }
  ~RendezvousHost() override {
    server_->set_key_observer(nullptr);
    server_->stop();
  }

  bool is_host() const override { return true; }
  std::string endpoint() const override { return fmt::format("{}:{}", config_.endpoint_host, server_->port()); }

  void set_worker_store(std::string addr, std::uint16_t port, std::function<void()> reset) override {
    worker_addr_ = std::move(addr);
    worker_port_ = port;
    reset_workers_ = std::move(reset);
  }

  void join() override {
    ++self_.seq;
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
      auto msg = reason_json(reason, true);
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
      auto j = json::parse(value);
      RdzvNodeInfo n;
      n.token = j.at("token").get<std::string>();
      n.host = j.at("host").get<std::string>();
      n.nproc = j.at("nproc").get<int>();
      n.rank_hint = j.at("hint").get<int>();
      n.seq = j.at("seq").get<int>();
      feed(rdzv_event::Join{n, now()});
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

  void perform(const rdzv_decision::Publish& p) {
    if (reset_workers_) reset_workers_();
    const auto& r = p.round;
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
      RoundAssignment a{r.round,      s.node_rank,  static_cast<int>(r.nodes.size()),
                        r.world_size, s.rank_base,  s.nproc,
                        worker_addr_, worker_port_, {}, r.membership_changed};
      hosts += fmt::format("{}{}={}", hosts.empty() ? "" : " ", s.node_rank, s.host);
      if (s.token == self_.token) {
        mine = a;
        continue;
      }
      json j{{"round", a.round},
             {"node_rank", a.node_rank},
             {"nnodes", a.nnodes},
             {"world_size", a.world_size},
             {"rank_base", a.rank_base},
             {"nproc", a.nproc},
             {"master_addr", a.master_addr},
             {"master_port", a.master_port},
             {"changed", a.membership_changed},
             {"store_node_rank", store_node_rank}};
      server_->set_local(fmt::format("{}assign/{}/{}", p_, s.token, s.seq), j.dump());
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
    auto msg = reason_json(e.reason, false);
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
    auto msg = reason_json(c.reason, true);
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
    if (self && cb_.closed) cb_.closed(c.reason);
  }

  void perform(const rdzv_decision::Reject& r) {
    auto msg = reason_json(r.reason, true);
    if (r.node.token == self_.token) {
      if (cb_.closed) cb_.closed(r.reason);
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
    spdlog::warn("rendezvous: node {} is dead (no heartbeat for {} ms)", l.host, l.silent.count());
    if (cb_.node_lost) cb_.node_lost(l.host, l.silent);
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
};

// ---------------------------------------------------------------------------------------------
// A joining node: one helper thread, one store connection; results are posted to the event loop.
// Everything the thread touches lives in Core, which it co-owns: the thread may sit in a store
// call (a connect retried up to the join timeout) when the supervisor is done, so it is detached,
// and it never posts to the event loop once `stop` is set.
class RendezvousClient : public Rendezvous {
 public:
  RendezvousClient(asio::io_context& io, RendezvousConfig config, RendezvousCallbacks cb)
      : core_(std::make_shared<Core>(io, std::move(config), std::move(cb))) {
    std::thread([core = core_] { core->run(); }).detach();
  }
  ~RendezvousClient() override {
    {
      std::lock_guard lock(core_->mu);
      core_->stop = true;
    }
    core_->cv.notify_all();
  }

  bool is_host() const override { return false; }
  std::string endpoint() const override { return core_->endpoint(); }
  void set_worker_store(std::string, std::uint16_t, std::function<void()>) override {}

  void join() override { core_->push(Command{Command::Join, {}, nullptr}); }
  void finish(bool success, std::string why, std::function<void()> then) override {
    {
      std::unique_lock lock(core_->mu);
      if (!core_->connected) {  // still looking for the store: nobody to tell
        lock.unlock();
        asio::post(core_->io, std::move(then));
        return;
      }
    }
    core_->push(Command{success ? Command::Done : Command::Leave, std::move(why), std::move(then)});
  }

 private:
  struct Command {
    enum Kind { Join, Done, Leave } kind;
    std::string why;
    std::function<void()> then;
  };

  struct Core : std::enable_shared_from_this<Core> {
    Core(asio::io_context& io_, RendezvousConfig config_, RendezvousCallbacks cb_)
        : io(io_), config(std::move(config_)), cb(std::move(cb_)) {
      info.token = make_token(config.local_addr);
      info.host = config.local_addr;
      info.nproc = config.nproc;
      info.rank_hint = config.rank_hint;
    }
    asio::io_context& io;
    RendezvousConfig config;
    RendezvousCallbacks cb;
    RdzvNodeInfo info;
    std::mutex mu;
    std::condition_variable cv;
    std::deque<Command> commands;
    bool stop = false;

    bool connected = false;  // the first connection succeeded (until then, nobody to tell anything)

    std::string endpoint() const { return fmt::format("{}:{}", config.endpoint_host, config.endpoint_port); }

    bool stopping() {
      std::lock_guard lock(mu);
      return stop;
    }

    void push(Command c) {
      {
        std::lock_guard lock(mu);
        commands.push_back(std::move(c));
      }
      cv.notify_all();
    }

    // Runs `f` on the event loop unless the client is gone.
    void post(std::function<void()> f) {
      std::lock_guard lock(mu);
      if (stop) return;
      asio::post(io, [self = shared_from_this(), f = std::move(f)] { f(); });
    }

    std::unique_ptr<store::StoreClient> connect(std::chrono::milliseconds within) {
      store::ClientOptions o;
      o.host = config.endpoint_host;
      o.port = config.endpoint_port;
      o.connect_timeout = within;
      o.timeout = std::max<std::chrono::milliseconds>(config.policy.heartbeat_timeout / 2, 1000ms);
      return std::make_unique<store::StoreClient>(o);
    }

    // Who hosts the store (its `host` key): named when the store goes; a new token after a
    // reconnect means the store is a new one, without this job's state.
    struct StoreHost {
      std::string token;
      std::string host;
      int pid = 0;
      int node_rank = -1;  // in the last round this node was assigned
    };
    StoreHost store_host;

    static std::optional<StoreHost> read_store_host(store::StoreClient& c, const std::string& p) {
      if (!c.check({p + "host"})) return std::nullopt;
      auto value = c.get(p + "host");
      try {
        auto j = json::parse(value);
        return StoreHost{j.at("token").get<std::string>(), j.at("host").get<std::string>(), j.value("pid", 0), -1};
      } catch (const json::exception& e) {
        spdlog::warn("rendezvous: ignoring a malformed host key ({}): {}", e.what(), value.substr(0, 200));
        return std::nullopt;
      }
    }

    std::string store_host_words() const {
      if (store_host.token.empty()) return fmt::format("the supervisor that hosts {}", endpoint());
      if (store_host.node_rank >= 0) {
        return fmt::format("the supervisor of node {} (host {}, pid {})", store_host.node_rank, store_host.host,
                           store_host.pid);
      }
      return fmt::format("the supervisor on host {} (pid {})", store_host.host, store_host.pid);
    }

    void close_with(std::string why) {
      post([this, why = std::move(why)] {
        if (cb.closed) cb.closed(why);
      });
    }

    void run() {
      using Clock = std::chrono::steady_clock;
      const auto p = prefix(config);
      const auto hb_interval = std::clamp<std::chrono::milliseconds>(config.policy.heartbeat_timeout / 3, 50ms, 5000ms);
      const auto chunk = std::min<std::chrono::milliseconds>(200ms, hb_interval);
      // Once joined, the store must answer within this window (a heartbeat's reply, a wait's):
      // meanwhile the client reconnects with backoff; past it, the store's host is gone.
      const auto lost_window = config.store_lost_window();
      enum class Mode { Idle, Assign, Running, Over } mode = Mode::Idle;
      std::string key;  // the key we wait for
      int round = -1;
      auto join_started = Clock::now();
      auto last_hb = Clock::now() - hb_interval;
      bool unreachable_warned = false;  // one warning per outage; its time is last_contact's
      auto last_contact = Clock::now();  // the store last answered
      int reconnects = 0;                // attempts since it last answered
      std::string last_error;
      std::unique_ptr<store::StoreClient> client;
      // The first connection may wait for the host to come up, for the join timeout; it is made in
      // short tries, because the client reconnects with its own connect timeout later, and a link
      // that goes dark must be noticed within the heartbeat timeout.
      const auto retry_connect = std::max<std::chrono::milliseconds>(config.policy.heartbeat_timeout / 2, 1000ms);
      const auto give_up = Clock::now() + config.policy.join_timeout;
      while (!client && !stopping()) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(give_up - Clock::now());
        try {
          client = connect(std::clamp<std::chrono::milliseconds>(left, 1ms, retry_connect));
          if (auto h = read_store_host(*client, p)) store_host = *h;
          last_contact = Clock::now();
          std::lock_guard lock(mu);
          connected = true;
        } catch (const store::StoreError& e) {
          client.reset();
          if (Clock::now() < give_up) continue;
          close_with(
              fmt::format("cannot reach the rendezvous store at {} within the join timeout ({} s): {}. "
                          "Check --rdzv-endpoint (the host that runs the first supervisor, and its "
                          "port) and that this node can reach it",
                          endpoint(), config.policy.join_timeout.count() / 1000, e.what()));
          mode = Mode::Over;
          break;
        }
      }
      while (!stopping()) {
        std::optional<Command> cmd;
        {
          std::unique_lock lock(mu);
          if (commands.empty() && (mode == Mode::Idle || mode == Mode::Over)) {
            cv.wait_for(lock, hb_interval, [&] { return stop || !commands.empty(); });
          }
          if (stop) break;
          if (!commands.empty()) {
            cmd = std::move(commands.front());
            commands.pop_front();
          }
        }
        if (mode == Mode::Over) {
          if (cmd && cmd->then) post(cmd->then);
          continue;
        }
        try {
          if (!client) {
            ++reconnects;
            auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(last_contact + lost_window - Clock::now());
            client = connect(std::clamp<std::chrono::milliseconds>(left, 1ms, retry_connect));
            auto h = read_store_host(*client, p);
            if (h && !store_host.token.empty() && h->token != store_host.token) {
              // Someone restarted the host's supervisor: the rounds, the members and the workers'
              // store of this job died with the old one, so there is nothing to rejoin.
              mode = Mode::Over;
              close_with(fmt::format(
                  "the rendezvous store at {} came back as a new process (host {}, pid {}) after {} ms: this job's "
                  "rendezvous state died with {}, so this node cannot go on: stopping its workers. Restart the "
                  "job on every node",
                  endpoint(), h->host, h->pid,
                  std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - last_contact).count(),
                  store_host_words()));
              continue;
            }
            spdlog::info("rendezvous store {} reachable again after {} ms ({} reconnect attempt(s))", endpoint(),
                         std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - last_contact).count(),
                         reconnects);
            last_contact = Clock::now();
            reconnects = 0;
          }
          if (cmd) {
            switch (cmd->kind) {
              case Command::Join:
                ++info.seq;
                client->set(fmt::format("{}join/{}/{}", p, info.token, info.seq), node_json(info).dump());
                key = fmt::format("{}assign/{}/{}", p, info.token, info.seq);
                mode = Mode::Assign;
                join_started = Clock::now();
                break;
              case Command::Done:
              case Command::Leave:
                client->set(fmt::format("{}{}/{}", p, cmd->kind == Command::Done ? "done" : "leave", info.token),
                            cmd->why);
                mode = Mode::Over;
                break;
            }
            if (cmd->then) post(cmd->then);
            cmd.reset();
          }
          auto now = Clock::now();
          if (now - last_hb >= hb_interval && mode != Mode::Over) {
            // ADD, not SET: its reply is the proof that the store is still there.
            client->add(fmt::format("{}hb/{}", p, info.token), 1);
            last_hb = now;
            last_contact = Clock::now();
          }
          unreachable_warned = false;
          if (mode == Mode::Assign || mode == Mode::Running) {
            try {
              client->wait({key}, chunk);
              last_contact = Clock::now();
            } catch (const store::StoreTimeout& e) {
              // A chunk passed (or, on a dark link, the wait's cancel got no answer: then no
              // heartbeat gets one either, and the window below runs out).
              if (Clock::now() - last_contact >= lost_window) throw;
              if (mode == Mode::Assign && Clock::now() - join_started > config.policy.join_timeout) {
                close_with(fmt::format("no rendezvous round admitted this node within the join timeout ({} s)",
                                       config.policy.join_timeout.count() / 1000));
                mode = Mode::Over;
              }
              continue;
            }
            auto j = json::parse(client->get(key));
            if (j.contains("closed")) {
              bool closed = j.value("closed", false);
              std::string reason = j.value("reason", std::string("?"));
              if (closed) {
                mode = Mode::Over;
                close_with(reason);
              } else {
                mode = Mode::Idle;
                post([this, reason] {
                  if (cb.round_ended) cb.round_ended(reason);
                });
              }
            } else {
              auto a = parse_assignment(j);
              round = a.round;
              store_host.node_rank = j.value("store_node_rank", -1);
              key = fmt::format("{}wake/{}/{}", p, info.token, round);
              mode = Mode::Running;
              post([this, a] {
                if (cb.assigned) cb.assigned(a);
              });
            }
          }
        } catch (const store::StoreError& e) {
          // The store does not answer: reconnect (with backoff, in the client) until the window
          // since its last answer runs out; then its host is gone, and nobody can go on.
          client.reset();
          last_error = e.what();
          if (cmd && cmd->kind != Command::Join) {
            // Done or Leave: the store is gone; nobody is left to tell.
            if (cmd->then) post(cmd->then);
            mode = Mode::Over;
            continue;
          }
          if (cmd) {
            std::lock_guard lock(mu);
            commands.push_front(std::move(*cmd));
          }
          auto now = Clock::now();
          if (!unreachable_warned) {
            unreachable_warned = true;
            spdlog::warn("rendezvous store {} not answering ({}); reconnecting for up to {} ms since its last answer",
                         endpoint(), e.what(), lost_window.count());
          }
          if (now - last_contact >= lost_window) {
            mode = Mode::Over;
            close_with(fmt::format(
                "the rendezvous store at {} is gone: no answer for {:.1f} s, reconnecting with backoff (last "
                "error: {}). "
                "It lived in {}, which was killed, or whose host is down or cut off from this node; the job's "
                "rendezvous state died with it, so no node can go on: stopping this node's workers. Restart the "
                "job on every node (--rdzv-conf store_lost_timeout=SECONDS waits longer for a flaky link; now {} s)",
                endpoint(), std::chrono::duration<double>(now - last_contact).count(), last_error, store_host_words(),
                std::chrono::duration<double>(lost_window).count()));
            continue;
          }
          if (mode == Mode::Running && now - last_contact >= config.policy.heartbeat_timeout) {
            // A longer store_lost_timeout: the host (if it lives) counts this node dead by now and
            // the others go on without it; stop the workers and rejoin when the store answers again.
            mode = Mode::Idle;
            post([this, why = fmt::format("lost the rendezvous store {} for {} ms; rejoining when it answers again",
                                          endpoint(), config.policy.heartbeat_timeout.count())] {
              if (cb.round_ended) cb.round_ended(why);
            });
          }
          std::unique_lock lock(mu);
          cv.wait_for(lock, std::min<std::chrono::milliseconds>(200ms, hb_interval), [&] { return stop; });
        } catch (const std::exception& e) {
          mode = Mode::Over;
          close_with(fmt::format("rendezvous: unexpected answer from {}: {}", endpoint(), e.what()));
        }
      }
    }
  };

  std::shared_ptr<Core> core_;
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
  return std::make_unique<RendezvousClient>(io, std::move(config), std::move(callbacks));
}

}  // namespace ddp::launcher
