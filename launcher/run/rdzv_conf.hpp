#pragma once
// torchrun's --rdzv-conf "key=value,key=value" for the c10d backend. Pure.
#include <string>
#include <vector>

#include "launcher/rendezvous/rendezvous.hpp"

namespace ddp::launcher {

// Applies the keys ddp-launch uses to `rc` (join_timeout, last_call_timeout, heartbeat_timeout or
// keep_alive_interval × keep_alive_max_attempt, exit_barrier_timeout, store_lost_timeout,
// connection_grace, is_host)
// and returns one warning per key torch accepts that has no effect here (close_timeout, timeout,
// read_timeout, store_type, use_libuv, the etcd keys, ...). A key torch does not know either, or a
// bad value, is a UsageError naming it.
std::vector<std::string> apply_rdzv_conf(const std::string& conf, RendezvousConfig& rc);

}  // namespace ddp::launcher
