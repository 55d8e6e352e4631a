#include "launcher/run/rdzv_conf.hpp"

#include <fmt/format.h>

#include <map>
#include <string_view>

#include "common/duration.hpp"
#include "common/error.hpp"

namespace ddp::launcher {
namespace {

double conf_seconds(const std::string& key, const std::string& value) {
  try {
    std::size_t used = 0;
    double v = std::stod(value, &used);
    // stod reads "inf", "nan" and 1e300 too; a timer cannot wait that long.
    if (used == value.size() && v > 0 && v <= kMaxDurationS) return v;
  } catch (const std::exception&) {
  }
  throw UsageError(fmt::format("--rdzv-conf {}={}: give a positive number of seconds, at most {}", key, value,
                               format_duration(kMaxDurationS)));
}

bool conf_bool(const std::string& key, const std::string& value) {
  if (value == "1" || value == "true" || value == "True") return true;
  if (value == "0" || value == "false" || value == "False") return false;
  throw UsageError(fmt::format("--rdzv-conf {}={}: give true or false", key, value));
}

// Keys torch's rendezvous code reads (1.13 and 2.x: dynamic_rendezvous, c10d/etcd backends, static
// TCP) that mean nothing to ddp-launch, with why.
const std::map<std::string_view, std::string_view>& keys_without_effect() {
  static const std::map<std::string_view, std::string_view> keys{
      {"close_timeout",
       "ddp-launch never closes a rendezvous early: a finished node leaves through the exit "
       "barrier (exit_barrier_timeout)"},
      {"timeout", "the etcd and static-TCP backends' timeout; ddp-launch's c10d backend uses join_timeout"},
      {"read_timeout", "torch's TCPStore client read timeout; ddp-launch's store client has its own"},
      {"store_type", "ddp-launch's rendezvous always runs on its own TCP store"},
      {"use_libuv", "a torch TCPStore server option; ddp-launch serves the store itself"},
      {"rank", "the static-TCP backend's node rank; use --node-rank"},
      {"local_addr", "use --local-addr"},
      {"protocol", "an etcd backend key"},
      {"ssl_cert", "an etcd backend key"},
      {"ssl_cert_key", "an etcd backend key"},
      {"ca_cert", "an etcd backend key"},
      {"cert", "an etcd backend key"},
      {"key", "an etcd backend key"},
      {"cacert", "an etcd backend key"},
      {"etcd_prefix", "an etcd backend key"},
  };
  return keys;
}

std::chrono::milliseconds ms(double s) { return std::chrono::milliseconds(static_cast<long>(s * 1000)); }

}  // namespace

std::vector<std::string> apply_rdzv_conf(const std::string& conf, RendezvousConfig& rc) {
  double keep_alive = -1, attempts = 3, heartbeat = -1;
  std::vector<std::string> warnings;
  std::map<std::string, bool> seen;
  std::size_t start = 0;
  while (start < conf.size()) {
    auto comma = conf.find(',', start);
    auto item = conf.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? conf.size() : comma + 1;
    if (item.empty()) continue;
    auto eq = item.find('=');
    if (eq == std::string::npos) throw UsageError(fmt::format("--rdzv-conf: '{}' is not key=value", item));
    auto key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "join_timeout") {
      rc.policy.join_timeout = ms(conf_seconds(key, value));
    } else if (key == "last_call_timeout") {
      rc.policy.last_call = ms(conf_seconds(key, value));
    } else if (key == "heartbeat_timeout") {
      heartbeat = conf_seconds(key, value);
    } else if (key == "keep_alive_interval") {
      keep_alive = conf_seconds(key, value);
    } else if (key == "keep_alive_max_attempt") {
      attempts = conf_seconds(key, value);
    } else if (key == "exit_barrier_timeout") {
      rc.exit_barrier = ms(conf_seconds(key, value));
    } else if (key == "store_lost_timeout") {
      rc.store_lost_timeout = ms(conf_seconds(key, value));
    } else if (key == "connection_grace") {
      rc.policy.connection_grace = ms(conf_seconds(key, value));
    } else if (key == "is_host") {
      rc.is_host = conf_bool(key, value);
    } else if (auto it = keys_without_effect().find(key); it != keys_without_effect().end()) {
      if (!seen[key])
        warnings.push_back(
            fmt::format("--rdzv-conf {}: accepted for torchrun compatibility, no effect here ({})", key, it->second));
      seen[key] = true;
    } else {
      throw UsageError(fmt::format(
          "--rdzv-conf: unknown key '{}' (ddp-launch uses join_timeout, last_call_timeout, "
          "heartbeat_timeout, keep_alive_interval, keep_alive_max_attempt, is_host, "
          "exit_barrier_timeout, store_lost_timeout, connection_grace; torch's other keys are accepted and ignored)",
          key));
    }
  }
  if (heartbeat > 0) {
    rc.policy.heartbeat_timeout = ms(heartbeat);
  } else if (keep_alive > 0) {
    rc.policy.heartbeat_timeout = ms(keep_alive * attempts);
  }
  return warnings;
}

}  // namespace ddp::launcher
