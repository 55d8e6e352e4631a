#pragma once
// RendezvousClientMachine: the joining side of the dynamic (c10d) rendezvous as a pure machine,
// beside RendezvousMachine (the host's). A node that does not host the rendezvous store talks to
// it through one synchronous store client on a helper thread (launcher/rendezvous/rendezvous_client.cpp);
// this machine decides what that thread does next, one store call at a time, and what it tells
// the supervisor. No sockets, no clocks, no threads: every outcome comes in with its time
// (milliseconds on any steady clock).
//
//   CONNECTING: connect in short tries → reached (reads who hosts the store) → IDLE
//               the join timeout passes first → Closed, OVER
//   every step starts by taking the supervisor's next command (IDLE, OVER: waiting up to a
//   heartbeat interval for one), then sends it:
//     Join       → SET join/<token>/<seq> → ASSIGN
//     Done/Leave → SET done|leave/<token> → OVER (no heartbeats; later commands just finish)
//   then, every heartbeat interval (not OVER), ADD hb/<token>: its reply proves the store is there
//   ASSIGN:  WAIT assign/<token>/<seq> in chunks → an assignment → Assigned, RUNNING
//            {closed: why} → Closed, OVER;  the join timeout passes → Closed, OVER
//   RUNNING: WAIT wake/<token>/<round> in chunks → {closed: false} → RoundEnded, IDLE (the
//            supervisor joins again);  {closed: true} → Closed, OVER
//   a store call fails: drop the connection, warn once per outage, reconnect (short tries, a
//   pause between) until the store-lost window since its last answer runs out → Closed naming
//   who hosted it, OVER. Reconnected: a heartbeat at once (the host learns the new connection is
//   this node's, within its connection grace). RUNNING past the heartbeat timeout meanwhile (a longer window): the host
//   counts this node dead → RoundEnded, IDLE, and rejoin when the store answers. The store answers
//   again as a new process (another host token) → Closed, OVER. A Done/Leave the store could not
//   take: nobody is left to tell, so it finishes at once → OVER.
//
// The shell runs a step's notices in order, then the request, and feeds its outcome back:
//   Connect → Connected | Failed;  Set, Add → Ok | Failed;  Wait → Ok | Failed (timed_out: the
//   chunk passed);  Get → Value | Failed;  TakeCommand → Command | Tick;  Pause → Tick.
//   Any other exception from a store call → Broken.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "launcher/rendezvous/rendezvous_machine.hpp"

namespace ddp::launcher {

// What this node learns when a round closes. Identical round/nnodes/world_size on every node.
struct RoundAssignment {
  int round = 0;
  int node_rank = 0;
  int nnodes = 1;
  int world_size = 1;
  int rank_base = 0;
  int nproc = 1;
  std::string master_addr;  // the workers' store
  std::uint16_t master_port = 0;
  std::vector<std::string> hosts;          // by node rank (empty on nodes that do not host, to keep O(1))
  bool membership_changed = false;         // other nodes than in the round before
  std::optional<RestartDecision> restart;  // the job's restart budget on the failed round before
};

// The values of the rendezvous keys (rendezvous.hpp), written and read here only.
// join/<token>/<seq>: what the host's RendezvousMachine needs of a node (read: throws on a bad one).
std::string rdzv_join_value(const RdzvNodeInfo& node);
RdzvNodeInfo rdzv_join_info(const std::string& value);
// assign/<token>/<seq>: a node's place in a round (store_node_rank: the host's, named if it goes).
std::string rdzv_assign_value(const RoundAssignment& a, int store_node_rank);
// wake/<token>/<round>, or assign/… when no round admits the node: the round is over (closed:
// false) or the job is (closed: true; `restart`: the job's restart budget ended it). A reason may
// quote what a node sent (its leave message): bytes that are not UTF-8 are replaced.
std::string rdzv_wake_value(const std::string& reason, bool closed, const std::optional<RestartDecision>& restart = {});

// The client's clock rates, all from the heartbeat timeout.
struct RdzvClientTiming {
  RdzvMillis heartbeat_every;  // heartbeat_timeout / 3, within 50 ms .. 5 s
  RdzvMillis wait_chunk;       // one WAIT on a key: at most 200 ms, so commands are taken promptly
  RdzvMillis connect_try;      // one connect try, and each store call's timeout: heartbeat_timeout / 2, at least 1 s
  RdzvMillis pause;            // between reconnects: min(200 ms, heartbeat_every)
  static RdzvClientTiming of(const RdzvPolicy& policy);
};

struct RdzvClientSettings {
  std::string prefix;    // "rdzv/<run id>/"
  std::string endpoint;  // HOST:PORT, for messages
  RdzvNodeInfo node;     // this node; seq counts its joins (starts at 0, the first join is 1)
  RdzvPolicy policy;
  // Once connected, the store must answer within this long (RendezvousConfig::store_lost_window).
  RdzvMillis store_lost_window{15000};
};

namespace rdzv_client_request {
// Connect (one try of at most `within`), then read "<prefix>host" (CHECK, then GET if it exists).
struct Connect {
  RdzvMillis within;
};
struct Set {
  std::string key;
  std::string value;
};
struct Add {
  std::string key;  // by 1
};
struct Wait {
  std::string key;
  RdzvMillis chunk;
};
struct Get {
  std::string key;
};
// Take the supervisor's next command; when none is queued, wait up to `wait` for one (0: don't).
struct TakeCommand {
  RdzvMillis wait{0};
};
// Sleep this long (a stop ends it early).
struct Pause {
  RdzvMillis duration;
};
}  // namespace rdzv_client_request
using RdzvClientRequest = std::variant<rdzv_client_request::Connect, rdzv_client_request::Set, rdzv_client_request::Add,
                                       rdzv_client_request::Wait, rdzv_client_request::Get,
                                       rdzv_client_request::TakeCommand, rdzv_client_request::Pause>;

namespace rdzv_client_event {
struct Connected {
  RdzvMillis now;
  std::optional<std::string> host_key;  // the value of "<prefix>host", when set
};
struct Ok {
  RdzvMillis now;
};
struct Value {
  RdzvMillis now;
  std::string value;
};
// A store error (store::StoreError); timed_out: a store::StoreTimeout.
struct Failed {
  RdzvMillis now;
  std::string what;
  bool timed_out = false;
};
// Any other exception from a store call.
struct Broken {
  RdzvMillis now;
  std::string what;
};
enum class CommandKind { Join, Done, Leave };
// The supervisor's command (Rendezvous::join, or finish: Done on success, Leave with why).
struct Command {
  RdzvMillis now;
  CommandKind kind = CommandKind::Join;
  std::string why;
  RdzvAttemptReport last;  // Join: how this node's last attempt ended
};
// Nothing came (TakeCommand), or the pause is over.
struct Tick {
  RdzvMillis now;
};
}  // namespace rdzv_client_event
using RdzvClientEvent = std::variant<rdzv_client_event::Connected, rdzv_client_event::Ok, rdzv_client_event::Value,
                                     rdzv_client_event::Failed, rdzv_client_event::Broken, rdzv_client_event::Command,
                                     rdzv_client_event::Tick>;

namespace rdzv_client_notice {
// The first connection succeeded: from now on a finish() has someone to tell.
struct FirstContact {};
// Close the store connection (the next Connect makes a new one).
struct DropConnection {};
struct Log {
  enum Level { Info, Warn } level = Info;
  std::string text;
};
struct Assigned {
  RoundAssignment assignment;
};
// Stop the workers; the supervisor joins again.
struct RoundEnded {
  std::string reason;
};
// The job is over for this node.
struct Closed {
  std::string reason;
  std::optional<RestartDecision> restart;  // the job's restart budget ended it
};
// The command taken last (a Done or Leave) is finished: run its continuation.
struct RunThen {};
}  // namespace rdzv_client_notice
using RdzvClientNotice =
    std::variant<rdzv_client_notice::FirstContact, rdzv_client_notice::DropConnection, rdzv_client_notice::Log,
                 rdzv_client_notice::Assigned, rdzv_client_notice::RoundEnded, rdzv_client_notice::Closed,
                 rdzv_client_notice::RunThen>;

struct RdzvClientStep {
  std::vector<RdzvClientNotice> notices;
  RdzvClientRequest next;
};

enum class RdzvClientMode { Connecting, Idle, Assign, Running, Over };

class RendezvousClientMachine {
 public:
  explicit RendezvousClientMachine(RdzvClientSettings settings);

  RdzvClientStep start(RdzvMillis now);
  // The outcome of the last step's request.
  RdzvClientStep on(const RdzvClientEvent& e);

  RdzvClientMode mode() const { return mode_; }
  const RdzvClientTiming& timing() const { return timing_; }
  int round() const { return round_; }  // the last assigned round, -1 before the first

 private:
  enum class Awaiting { FirstConnect, Reconnect, SetCommand, Heartbeat, Wait, Get, Command, Pause };
  struct StoreHost {
    std::string token;
    std::string host;
    int pid = 0;
    int node_rank = -1;  // in the last round this node was assigned
  };
  using Kind = rdzv_client_event::CommandKind;

  void on_event(const rdzv_client_event::Connected& e);
  void on_event(const rdzv_client_event::Ok& e);
  void on_event(const rdzv_client_event::Value& e);
  void on_event(const rdzv_client_event::Failed& e);
  void on_event(const rdzv_client_event::Broken& e);
  void on_event(const rdzv_client_event::Command& e);
  void on_event(const rdzv_client_event::Tick& e);

  void first_connect(RdzvMillis now);
  void iterate(RdzvMillis now);
  void with_command(RdzvMillis now);
  void reconnected(const rdzv_client_event::Connected& e);
  void send_command(RdzvMillis now);
  void heartbeat(RdzvMillis now);
  void after_heartbeat(RdzvMillis now);
  void chunk_passed(const rdzv_client_event::Failed& e);
  void answer(RdzvMillis now, const std::string& value);
  void store_error(RdzvMillis now, const std::string& what);
  void broken(RdzvMillis now, const std::string& what);
  void finish_held();
  void close(std::string reason, std::optional<RestartDecision> restart = {});
  std::optional<StoreHost> parse_host(const std::optional<std::string>& value);
  std::string store_host_words() const;

  void notice(RdzvClientNotice n) { out_.notices.push_back(std::move(n)); }
  void request(RdzvClientRequest r, Awaiting a) {
    out_.next = std::move(r);
    awaiting_ = a;
  }

  RdzvClientSettings s_;
  RdzvClientTiming timing_;
  RdzvClientMode mode_ = RdzvClientMode::Connecting;
  Awaiting awaiting_ = Awaiting::FirstConnect;
  RdzvClientStep out_;

  struct Held {
    Kind kind = Kind::Join;
    std::string why;
    RdzvAttemptReport last;
  };
  std::optional<Held> held_;  // taken, not yet sent (a Join is kept while the store is away)
  bool has_client_ = false;
  std::string key_;  // the key this node waits for
  int round_ = -1;
  RdzvMillis give_up_{0};       // the first connection's deadline
  RdzvMillis join_started_{0};  // the last join was sent
  RdzvMillis last_hb_{0};
  RdzvMillis last_contact_{0};       // the store last answered
  bool unreachable_warned_ = false;  // one warning per outage
  int reconnects_ = 0;               // attempts since the store last answered
  std::string last_error_;
  StoreHost store_host_;
};

}  // namespace ddp::launcher
