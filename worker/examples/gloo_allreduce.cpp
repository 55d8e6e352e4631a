// gloo-allreduce: a C++ worker that meets its peers through our store (not Redis, not a shared
// file) and allreduces a rank-dependent vector over gloo's TCP transport. It proves that the
// store, the client and the env contract carry a real collective without Python or libtorch.
//
// Rank r contributes (r + 1) * (i + 1) at element i, so every element of the sum is
// (i + 1) * W * (W + 1) / 2 for world size W. Exit codes: 0 right sum, 1 error, 2 usage,
// 3 wrong sum.
#include <gloo/allreduce.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "common/env_contract.hpp"
#include "common/error.hpp"
#include "common/log.hpp"
#include "store/client.hpp"
#include "worker/gloo_store.hpp"

namespace {

struct Args {
  int rank = -1;
  int world_size = 0;
  std::string master_addr = "127.0.0.1";
  std::uint16_t master_port = 0;
  std::string dialect = "c";
  std::string prefix = "gloo-allreduce";
  std::string bind = "127.0.0.1";
  std::size_t elements = 1024;
  int timeout_s = 60;
  int connect_timeout_s = 30;
  std::string log_level;
};

ddp::store::Dialect parse_dialect(const std::string& d) {
  if (d == "a") return ddp::store::Dialect::A;
  if (d == "b") return ddp::store::Dialect::B;
  return ddp::store::Dialect::C;
}

std::int64_t expected_sum(std::size_t i, int world_size) {
  auto w = static_cast<std::int64_t>(world_size);
  return static_cast<std::int64_t>(i + 1) * w * (w + 1) / 2;
}

int run(const Args& a) {
  if (a.rank < 0 || a.rank >= a.world_size) {
    throw ddp::UsageError(
        fmt::format("rank {} is outside 0..{} (world size {})", a.rank, a.world_size - 1, a.world_size));
  }
  ddp::store::ClientOptions options;
  options.host = a.master_addr;
  options.port = a.master_port;
  options.dialect = parse_dialect(a.dialect);
  options.connect_timeout = std::chrono::seconds(a.connect_timeout_s);
  options.timeout = std::chrono::seconds(a.timeout_s);
  ddp::store::StoreClient client(options);
  ddp::worker::GlooStore store(client);
  // Scoped keys, so several groups (or a rerun on a reset store) can share one store.
  gloo::rendezvous::PrefixStore prefixed(a.prefix, store);

  gloo::transport::tcp::attr attr;
  attr.hostname = a.bind;
  auto device = gloo::transport::tcp::CreateDevice(attr);
  auto context = std::make_shared<gloo::rendezvous::Context>(a.rank, a.world_size);
  context->setTimeout(std::chrono::seconds(a.timeout_s));
  auto start = std::chrono::steady_clock::now();
  context->connectFullMesh(prefixed, device);
  auto met = std::chrono::steady_clock::now();
  spdlog::info("rank {}/{}: connected through store {} in {} ms", a.rank, a.world_size, client.endpoint(),
               std::chrono::duration_cast<std::chrono::milliseconds>(met - start).count());

  std::vector<std::int64_t> data(a.elements);
  for (std::size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<std::int64_t>(a.rank + 1) * static_cast<std::int64_t>(i + 1);
  gloo::AllreduceOptions opts(context);
  opts.setOutput(data.data(), data.size());
  void (*sum)(void*, const void*, const void*, std::size_t) = &gloo::sum<std::int64_t>;
  opts.setReduceFunction(sum);
  opts.setTimeout(std::chrono::seconds(a.timeout_s));
  gloo::allreduce(opts);

  for (std::size_t i = 0; i < data.size(); ++i) {
    if (data[i] != expected_sum(i, a.world_size)) {
      std::printf("allreduce WRONG rank=%d world_size=%d element=%zu got=%lld expected=%lld\n", a.rank, a.world_size, i,
                  static_cast<long long>(data[i]), static_cast<long long>(expected_sum(i, a.world_size)));
      return 3;
    }
  }
  std::printf("allreduce ok rank=%d world_size=%d elements=%zu last=%lld\n", a.rank, a.world_size, data.size(),
              static_cast<long long>(data.empty() ? 0 : data.back()));
  std::fflush(stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Allreduce over gloo (TCP) after meeting through a c10d TCPStore-compatible store"};
  Args a;
  namespace env = ddp::env;
  app.add_option("--rank", a.rank, "This process's rank")->envname(std::string(env::kRank))->required();
  app.add_option("--world-size", a.world_size, "Number of ranks")
      ->envname(std::string(env::kWorldSize))
      ->required()
      ->check(CLI::PositiveNumber);
  app.add_option("--master-addr", a.master_addr, "Host of the store")
      ->envname(std::string(env::kMasterAddr))
      ->capture_default_str();
  app.add_option("--master-port", a.master_port, "Port of the store")
      ->envname(std::string(env::kMasterPort))
      ->required();
  app.add_option("--dialect", a.dialect, "Store dialect: c = ours / torch >= 2.2, a = torch 1.13, b = torch 2.1")
      ->check(CLI::IsMember({"a", "b", "c"}))
      ->capture_default_str();
  app.add_option("--prefix", a.prefix, "Key prefix for this group in the store")->capture_default_str();
  app.add_option("--bind", a.bind, "Address gloo's TCP device listens on (loopback by default)")->capture_default_str();
  app.add_option("--elements", a.elements, "Vector length")->capture_default_str();
  app.add_option("--timeout", a.timeout_s, "Seconds to wait for peers (store waits and the collective)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--connect-timeout", a.connect_timeout_s, "Seconds to keep retrying the store connection")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--log-level", a.log_level, "trace, debug, info, warn or error");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  ddp::init_logging(a.log_level);
  try {
    return run(a);
  } catch (const ddp::UsageError& e) {
    spdlog::error("{}", e.what());
    return 2;
  } catch (const std::exception& e) {
    spdlog::error("rank {}: {}", a.rank, e.what());
    return 1;
  }
}
