#include "launcher/rendezvous/rendezvous_client.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "launcher/rendezvous/rendezvous_client_machine.hpp"
#include "store/client.hpp"

namespace asio = boost::asio;

namespace ddp::launcher {

namespace {

// A joining node: one helper thread, one store connection; results are posted to the event loop.
// RendezvousClientMachine decides what the thread does next; the thread performs it with the
// synchronous store client and feeds back the outcome. Everything the thread touches lives in
// Core, which it co-owns: the thread may sit in a store call (a connect retried up to the join
// timeout) when the supervisor is done, so it is detached, and it never posts to the event loop
// once `stop` is set.
class RendezvousClient : public Rendezvous {
 public:
  RendezvousClient(asio::io_context& io, RendezvousConfig config, RendezvousCallbacks cb)
      : work_(asio::make_work_guard(io)), core_(std::make_shared<Core>(io, std::move(config), std::move(cb))) {
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

  void join(const RdzvAttemptReport& last) override { core_->push(Command{Kind::Join, {}, nullptr, last}); }
  void finish(bool success, std::string why, std::function<void()> then) override {
    {
      std::unique_lock lock(core_->mu);
      if (!core_->connected) {  // still looking for the store: nobody to tell
        lock.unlock();
        asio::post(core_->io, std::move(then));
        return;
      }
    }
    core_->push(Command{success ? Kind::Done : Kind::Leave, std::move(why), std::move(then), {}});
  }

 private:
  using Kind = rdzv_client_event::CommandKind;
  struct Command {
    Kind kind;
    std::string why;
    std::function<void()> then;
    RdzvAttemptReport last;  // Join: how this node's last attempt ended
  };

  struct Core : std::enable_shared_from_this<Core> {
    Core(asio::io_context& io_, RendezvousConfig config_, RendezvousCallbacks cb_)
        : io(io_), config(std::move(config_)), cb(std::move(cb_)), timing(RdzvClientTiming::of(config.policy)) {
      info.token = make_rdzv_token(config.local_addr);
      info.host = config.local_addr;
      info.nproc = config.nproc;
      info.rank_hint = config.rank_hint;
    }
    asio::io_context& io;
    RendezvousConfig config;
    RendezvousCallbacks cb;
    RdzvClientTiming timing;
    RdzvNodeInfo info;
    std::mutex mu;
    std::condition_variable cv;
    std::deque<Command> commands;
    bool stop = false;
    bool connected = false;  // the first connection succeeded (until then, nobody to tell anything)

    // The helper thread's own.
    std::unique_ptr<store::StoreClient> client;
    std::function<void()> then;  // of the Done/Leave the machine took last
    std::chrono::steady_clock::time_point started;

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

    RdzvMillis now() const {
      return std::chrono::duration_cast<RdzvMillis>(std::chrono::steady_clock::now() - started);
    }

    void run() {
      started = std::chrono::steady_clock::now();
      RendezvousClientMachine machine(
          RdzvClientSettings{rdzv_prefix(config), endpoint(), info, config.policy, config.store_lost_window()});
      auto step = machine.start(now());
      for (;;) {
        for (const auto& n : step.notices) std::visit([this](const auto& x) { tell(x); }, n);
        if (stopping()) return;
        step = machine.on(execute(step.next));
      }
    }

    RdzvClientEvent execute(const RdzvClientRequest& r) {
      try {
        return std::visit([this](const auto& x) { return perform(x); }, r);
      } catch (const store::StoreTimeout& e) {
        return rdzv_client_event::Failed{now(), e.what(), true};
      } catch (const store::StoreError& e) {
        return rdzv_client_event::Failed{now(), e.what(), false};
      } catch (const std::exception& e) {
        return rdzv_client_event::Broken{now(), e.what()};
      }
    }

    RdzvClientEvent perform(const rdzv_client_request::Connect& c) {
      client.reset();
      store::ClientOptions o;
      o.host = config.endpoint_host;
      o.port = config.endpoint_port;
      o.connect_timeout = c.within;
      o.timeout = timing.connect_try;
      auto fresh = std::make_unique<store::StoreClient>(o);
      // Who hosts the store: named when it goes; another token after a reconnect is a new store.
      std::optional<std::string> host;
      if (const auto key = rdzv_prefix(config) + "host"; fresh->check({key})) host = fresh->get(key);
      client = std::move(fresh);
      return rdzv_client_event::Connected{now(), std::move(host)};
    }
    RdzvClientEvent perform(const rdzv_client_request::Set& s) {
      client->set(s.key, s.value);
      return rdzv_client_event::Ok{now()};
    }
    RdzvClientEvent perform(const rdzv_client_request::Add& a) {
      client->add(a.key, 1);
      return rdzv_client_event::Ok{now()};
    }
    RdzvClientEvent perform(const rdzv_client_request::Wait& w) {
      client->wait({w.key}, w.chunk);
      return rdzv_client_event::Ok{now()};
    }
    RdzvClientEvent perform(const rdzv_client_request::Get& g) {
      return rdzv_client_event::Value{now(), client->get(g.key)};
    }
    RdzvClientEvent perform(const rdzv_client_request::TakeCommand& t) {
      std::unique_lock lock(mu);
      if (commands.empty() && t.wait.count() > 0) {
        cv.wait_for(lock, t.wait, [&] { return stop || !commands.empty(); });
      }
      if (stop || commands.empty()) return rdzv_client_event::Tick{now()};
      auto c = std::move(commands.front());
      commands.pop_front();
      then = std::move(c.then);
      return rdzv_client_event::Command{now(), c.kind, std::move(c.why), c.last};
    }
    RdzvClientEvent perform(const rdzv_client_request::Pause& p) {
      std::unique_lock lock(mu);
      cv.wait_for(lock, p.duration, [&] { return stop; });
      return rdzv_client_event::Tick{now()};
    }

    void tell(const rdzv_client_notice::FirstContact&) {
      std::lock_guard lock(mu);
      connected = true;
    }
    void tell(const rdzv_client_notice::DropConnection&) { client.reset(); }
    void tell(const rdzv_client_notice::Log& l) {
      if (l.level == rdzv_client_notice::Log::Warn) {
        spdlog::warn("{}", l.text);
      } else {
        spdlog::info("{}", l.text);
      }
    }
    void tell(const rdzv_client_notice::Assigned& a) {
      post([this, a = a.assignment] {
        if (cb.assigned) cb.assigned(a);
      });
    }
    void tell(const rdzv_client_notice::RoundEnded& r) {
      post([this, reason = r.reason] {
        if (cb.round_ended) cb.round_ended(reason);
      });
    }
    void tell(const rdzv_client_notice::Closed& c) {
      post([this, why = c.reason, restart = c.restart] {
        if (cb.closed) cb.closed(why, restart);
      });
    }
    void tell(const rdzv_client_notice::RunThen&) {
      if (then) post(std::exchange(then, nullptr));
    }
  };

  // The loop waits for what the thread will post: without it, a node whose loop has nothing else
  // to wait on yet (Windows: no signal_set, the console handler is not Asio work) ran out of work
  // as soon as it joined and exited 1 without a word. The supervisor ends the loop with stop().
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::shared_ptr<Core> core_;
};

}  // namespace

std::unique_ptr<Rendezvous> make_rendezvous_client(asio::io_context& io, RendezvousConfig config,
                                                   RendezvousCallbacks callbacks) {
  return std::make_unique<RendezvousClient>(io, std::move(config), std::move(callbacks));
}

}  // namespace ddp::launcher
