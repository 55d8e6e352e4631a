// Open-loop load generator for the job daemon's HTTP API on its unix socket: R requests per
// second spread over C keep-alive connections (one thread each), alternating GET /v1/jobs (list)
// and GET /v1/jobs/<random id> (status). Latency is measured from each request's *scheduled*
// send time, so a stall delays the requests behind it and shows in the percentiles (no
// coordinated omission). Prints one JSON line: count, errors, achieved rate, p50/p90/p99/max ms.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>
#include <random>
#include <thread>
#include <vector>

#include "jobs/api_client.hpp"

int main(int argc, char** argv) {
  CLI::App app{"daemon_loadgen: API latency of ddp-launch daemon at a fixed request rate"};
  std::string socket;
  double rate = 1000;
  double seconds = 10;
  int connections = 8;
  long long max_id = 1000;
  std::string mix = "list,status";
  app.add_option("--socket", socket, "The daemon's unix socket")->required();
  app.add_option("--rate", rate, "Requests per second, all connections together")->capture_default_str();
  app.add_option("--seconds", seconds, "Duration")->capture_default_str();
  app.add_option("--connections", connections, "Keep-alive connections (one thread each)")->capture_default_str();
  app.add_option("--max-id", max_id, "status asks for ids 1..N")->capture_default_str();
  app.add_option("--mix", mix, "list, status or list,status (alternating)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  using clock = std::chrono::steady_clock;
  auto start = clock::now() + std::chrono::milliseconds(200);
  auto interval = std::chrono::duration<double>(connections / rate);
  long long per_conn = static_cast<long long>(rate * seconds / connections);
  std::vector<std::vector<double>> latencies(static_cast<std::size_t>(connections));
  std::atomic<long long> errors{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < connections; ++c) {
    threads.emplace_back([&, c] {
      ddp::jobs::ApiClient client(socket);
      std::mt19937_64 rng(static_cast<unsigned long>(c) + 1);
      auto& lat = latencies[static_cast<std::size_t>(c)];
      lat.reserve(static_cast<std::size_t>(per_conn));
      // Connections are offset within one interval so the load is even, not bursts of C.
      auto offset = std::chrono::duration<double>(interval.count() * c / connections);
      for (long long i = 0; i < per_conn; ++i) {
        auto scheduled =
            start + std::chrono::duration_cast<clock::duration>(offset + interval * static_cast<double>(i));
        std::this_thread::sleep_until(scheduled);
        bool list = mix == "list" || (mix != "status" && (i + c) % 2 == 0);
        auto target = list ? std::string("/v1/jobs")
                           : fmt::format("/v1/jobs/{}",
                                         1 + static_cast<long long>(rng() % static_cast<unsigned long long>(max_id)));
        try {
          auto r = client.request("GET", target);
          if (r.status != 200) ++errors;
        } catch (const std::exception&) {
          ++errors;
          return;
        }
        lat.push_back(std::chrono::duration<double, std::milli>(clock::now() - scheduled).count());
      }
    });
  }
  for (auto& t : threads) t.join();
  auto elapsed = std::chrono::duration<double>(clock::now() - start).count();
  std::vector<double> all;
  for (auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  std::sort(all.begin(), all.end());
  auto pct = [&](double p) {
    if (all.empty()) return 0.0;
    return all[std::min(all.size() - 1, static_cast<std::size_t>(p * static_cast<double>(all.size())))];
  };
  std::cout << fmt::format(
                   "{{\"mix\": \"{}\", \"count\": {}, \"errors\": {}, \"rate\": {:.1f}, \"p50_ms\": {:.3f}, "
                   "\"p90_ms\": {:.3f}, \"p99_ms\": {:.3f}, \"max_ms\": {:.3f}}}",
                   mix, all.size(), errors.load(), static_cast<double>(all.size()) / elapsed, pct(0.5), pct(0.9),
                   pct(0.99), all.empty() ? 0.0 : all.back())
            << std::endl;
  return errors.load() == 0 ? 0 : 1;
}
