#pragma once
// A fork server's channel: a process we start (launcher/supervisor/warm_start.hpp) that forks
// children on our behalf. We talk to it over a socket pair of messages (one request, one reply),
// pass it descriptors with a request (the child's output pipes, cgroup.procs files), and adopt the
// children it forks: while adopting, this process is the subreaper of its descendants, so a
// grandchild whose parent exits becomes our child — we reap it and see its real exit status.
// POSIX: socketpair(AF_UNIX, SOCK_SEQPACKET), SCM_RIGHTS, PR_SET_CHILD_SUBREAPER (Linux).
// Windows: no fork: make_fork_channel says so, and nothing else is called.
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "platform/native_handle.hpp"

namespace ddp::platform {

struct ForkChannel {
  NativeHandle ours = kNoHandle;    // not inherited by children
  NativeHandle theirs = kNoHandle;  // inherited by the next child started: close it once it has it
};

// nullopt, with `error` saying why, when there is no channel (Windows: always).
std::optional<ForkChannel> make_fork_channel(std::string& error);

// How the fork server names its end on its command line (POSIX: the descriptor's number).
std::string channel_argument(NativeHandle theirs);

// Sends one message with `fds` attached (they stay open here). False, with `error`, when it fails.
bool send_message(NativeHandle channel, const std::string& message, const std::vector<NativeHandle>& fds,
                  std::string& error);

// The next message, waiting at most `timeout` (zero: only one already there). nullopt with an empty
// `error` when none came in time; with `error` set when the other end is gone or reading failed.
std::optional<std::string> receive_message(NativeHandle channel, std::chrono::milliseconds timeout, std::string& error);

// While on, orphaned descendants become our children instead of init's (Linux: the child
// subreaper); false when the OS refuses.
bool adopt_orphans(bool on);

}  // namespace ddp::platform
