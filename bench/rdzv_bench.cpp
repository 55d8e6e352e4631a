// Dynamic-rendezvous benchmark: K nodes joining one round at once, on loopback. The host is the
// real thing (launcher::Rendezvous hosting the store and running the machine on its own event
// loop); the other K-1 nodes are simulated by threads, one StoreClient connection each, doing
// exactly what a joining supervisor does: SET join/<token>/1 with its info, then WAIT + GET
// assign/<token>/1. Time: from the release of all joiners until the last one holds its assignment.
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <barrier>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "launcher/rendezvous/rendezvous.hpp"
#include "store/client.hpp"

using namespace std::chrono;
using json = nlohmann::json;

namespace {

double cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
  return s(u.ru_utime) + s(u.ru_stime);
}

struct Result {
  double seconds = 0;
  double cpu = 0;  // the whole process (host and joiners) during the round
  int assigned = 0;
  int world = 0;
  std::string error;
};

Result run_once(int k) {
  boost::asio::io_context io;
  ddp::launcher::RendezvousConfig rc;
  rc.endpoint_host = "127.0.0.1";
  rc.endpoint_port = 0;
  rc.run_id = "bench";
  rc.policy.min_nodes = k;
  rc.policy.max_nodes = k;
  rc.policy.last_call = seconds(30);
  rc.policy.join_timeout = seconds(60);
  rc.policy.heartbeat_timeout = seconds(60);
  rc.local_addr = "host";
  rc.nproc = 8;
  std::promise<int> host_world;
  ddp::launcher::RendezvousCallbacks cb;
  cb.assigned = [&](const ddp::launcher::RoundAssignment& a) { host_world.set_value(a.world_size); };
  auto rdzv = ddp::launcher::Rendezvous::create(io, rc, cb);
  auto ep = rdzv->endpoint();
  auto port = static_cast<std::uint16_t>(std::stoi(ep.substr(ep.rfind(':') + 1)));
  rdzv->join({});  // a first join: no attempt yet
  std::thread loop([&] { io.run(); });

  const int joiners = k - 1;
  std::vector<std::unique_ptr<ddp::store::StoreClient>> clients(static_cast<std::size_t>(joiners));
  {
    // Connect first (a node's connection is up before it joins); the timed part is the round.
    std::vector<std::thread> ts;
    const int per = 32;
    for (int t = 0; t * per < joiners; ++t) {
      ts.emplace_back([&, t] {
        for (int i = t * per; i < std::min(joiners, (t + 1) * per); ++i) {
          ddp::store::ClientOptions o;
          o.port = port;
          o.connect_timeout = seconds(30);
          o.timeout = seconds(60);
          clients[static_cast<std::size_t>(i)] = std::make_unique<ddp::store::StoreClient>(o);
        }
      });
    }
    for (auto& t : ts) t.join();
  }
  std::atomic<int> assigned{0};
  std::atomic<int> world{0};
  std::string error;
  std::mutex error_mu;
  // The clock starts when the last thread arrives, before any is released (the main thread may be
  // descheduled right after the barrier while the joiners already run).
  steady_clock::time_point t0;
  auto mark = [&t0]() noexcept { t0 = steady_clock::now(); };
  std::barrier start(joiners + 1, mark);
  std::vector<std::thread> nodes;
  nodes.reserve(static_cast<std::size_t>(joiners));
  for (int i = 0; i < joiners; ++i) {
    nodes.emplace_back([&, i] {
      auto& c = *clients[static_cast<std::size_t>(i)];
      auto token = fmt::format("sim{}:{}:0", i, 1000 + i);
      json info{{"token", token}, {"host", fmt::format("sim{:04}", i)}, {"nproc", 8}, {"hint", -1}, {"seq", 1}};
      start.arrive_and_wait();
      try {
        c.set(fmt::format("rdzv/bench/join/{}/1", token), info.dump());
        auto a = json::parse(c.get(fmt::format("rdzv/bench/assign/{}/1", token)));
        world = a.at("world_size").get<int>();
        ++assigned;
      } catch (const std::exception& e) {
        std::lock_guard lock(error_mu);
        error = e.what();
      }
    });
  }
  const double cpu0 = cpu_seconds();
  start.arrive_and_wait();
  for (auto& t : nodes) t.join();
  Result r;
  r.seconds = duration<double>(steady_clock::now() - t0).count();
  r.cpu = cpu_seconds() - cpu0;
  r.assigned = assigned + (host_world.get_future().wait_for(seconds(10)) == std::future_status::ready ? 1 : 0);
  r.world = world;
  r.error = error;
  clients.clear();
  io.stop();
  loop.join();
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Dynamic rendezvous benchmark: K nodes joining one round at once on loopback"};
  std::vector<int> ks{8, 64, 512};
  int reps = 3;
  bool as_json = false;
  app.add_option("--nodes", ks, "K values")->capture_default_str();
  app.add_option("--reps", reps, "runs per K (the median is reported)")->capture_default_str();
  app.add_flag("--json", as_json, "one JSON object per K");
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(spdlog::level::warn);
  int status = 0;
  if (!as_json)
    fmt::print(
        "| nodes K | ranks (8 per node) | median ms | min ms | max ms | goal | met |\n|---|---|---|---|---|---|---|\n");
  for (int k : ks) {
    std::vector<double> t;
    std::vector<double> cpu;
    std::string error;
    for (int i = 0; i < reps; ++i) {
      auto r = run_once(k);
      if (!r.error.empty() || r.assigned != k || r.world != 8 * k) {
        error = fmt::format("{} of {} assigned, world {} (want {}): {}", r.assigned, k, r.world, 8 * k, r.error);
        status = 1;
        break;
      }
      t.push_back(r.seconds);
      cpu.push_back(r.cpu);
    }
    if (!error.empty()) {
      fmt::print(stderr, "K={}: {}\n", k, error);
      continue;
    }
    std::sort(t.begin(), t.end());
    std::sort(cpu.begin(), cpu.end());
    double med = t[t.size() / 2];
    if (as_json) {
      fmt::print("{}\n", json{{"nodes", k},
                              {"median_s", med},
                              {"min_s", t.front()},
                              {"max_s", t.back()},
                              {"cpu_s", cpu[cpu.size() / 2]}}
                             .dump());
    } else {
      fmt::print("| {} | {} | {:.2f} | {:.2f} | {:.2f} | {} | {} |\n", k, 8 * k, med * 1e3, t.front() * 1e3, t.back() * 1e3,
                 k == 512 ? "< 1 s" : "", k == 512 ? (med < 1.0 ? "yes" : "no") : "");
    }
  }
  return status;
}
