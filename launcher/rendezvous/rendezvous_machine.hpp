#pragma once
// RendezvousMachine: the dynamic (c10d-style) rendezvous as a pure state machine, run by the
// supervisor that hosts the rendezvous store. Nodes join a round; it closes at MAX nodes, or at
// MIN plus a last-call window, or at once when every node expected back after a membership change
// has rejoined. Node ranks are deterministic and stable while membership is unchanged (a
// --node-rank hint first, then the node's previous rank, then its host's); global ranks follow
// from each node's local world size. A node silent past the heartbeat timeout is dead: the round
// ends and the rest rejoin (no restart budget is spent). The job's restart budget is kept here, one
// for the whole job (RdzvPolicy::budget, restart_budget.hpp): every restart goes through a new round,
// each node's join says how its last attempt ended (RdzvAttemptReport), and a round that ended with
// a failure on any node is charged once when the next one closes with the same nodes, weighing the
// best progress any node reported; when the budget says stop, the round is not published but the
// rendezvous closes with that decision, so every node ends with the same exit code and reason. A node
// that joins a running round waits and is admitted at the next one, which starts at once while
// the round is below MAX. A node whose store connection closed (its supervisor killed: the kernel
// closes its sockets at once) is suspected at once and dead unless it is connected again within
// the connection grace; a silent one (a cut link: no close arrives) still waits out the heartbeat
// timeout. Times come in with the events (milliseconds on any steady clock); no sockets, no
// clocks, no threads.
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "launcher/rendezvous/restart_budget.hpp"

namespace ddp::launcher {

using RdzvMillis = std::chrono::milliseconds;

// What a node says of its last attempt when it joins: the round it ran in (-1: none yet, and
// `mark.checkpoint` is the checkpoint file's iteration before its first attempt), whether its group
// failed by itself (not stopped because the round ended), and the progress that attempt reached.
struct RdzvAttemptReport {
  int round = -1;
  bool failed = false;
  ProgressMark mark;
  bool operator==(const RdzvAttemptReport&) const = default;
};

struct RdzvNodeInfo {
  std::string token;       // unique per supervisor process (host:pid:random)
  std::string host;        // --local-addr, or the host name: logs, and rank stability across supervisor restarts
  int nproc = 1;           // its local world size
  int rank_hint = -1;      // --node-rank when given, else -1
  int seq = 0;             // the node's join number: its assignment is published under it
  RdzvAttemptReport last;  // how its last attempt ended
};

struct RdzvPolicy {
  int min_nodes = 1;
  int max_nodes = 1;
  RdzvMillis last_call{30000};
  RdzvMillis join_timeout{600000};
  RdzvMillis heartbeat_timeout{15000};
  // A node whose connection to the store closed is dead unless it has one again within this long.
  // 1 s: a client that lost its connection (a store call that failed) reconnects at once and says
  // who it is in its first request, a few round trips and at most one 200 ms pause between tries;
  // and 1 s leaves room in a 3 s budget from a kill to the survivors' next round.
  RdzvMillis connection_grace{1000};
  // The job's restart budget (the host's --max-restarts, --max-no-progress-restarts, --restart-budget,
  // --checkpoint-file); none: rounds are never charged (a failure only starts a new one).
  std::optional<RestartBudgetPolicy> budget;
};

struct RdzvSlot {
  std::string token;
  std::string host;
  int seq = 0;
  int node_rank = 0;
  int nproc = 1;
  int rank_base = 0;  // its global ranks are rank_base .. rank_base+nproc-1
};

struct RdzvRound {
  int round = 0;
  int world_size = 0;
  std::vector<RdzvSlot> nodes;      // by node rank
  bool membership_changed = false;  // not the same nodes as the round before
  // The budget's decision on the round before, when it failed with the same nodes (it was charged,
  // or excused by its progress): the same on every node.
  std::optional<RestartDecision> restart;
};

namespace rdzv_event {
struct Join {
  RdzvNodeInfo node;
  RdzvMillis now;
};
struct Heartbeat {
  std::string token;
  RdzvMillis now;
};
// Every worker of the node exited 0.
struct Done {
  std::string token;
  RdzvMillis now;
};
// The node gives up (restart budget spent, stopped by a signal): the job is over for everyone.
struct Leave {
  std::string token;
  std::string why;
  RdzvMillis now;
  bool hosts_store = false;  // the rendezvous host itself: its store goes with it, nobody can go on
};
struct Tick {
  RdzvMillis now;
};
// The node's last connection to the store closed (the shell knows which connections are whose:
// those whose requests name its token).
struct ConnectionClosed {
  std::string token;
  RdzvMillis now;
};
// A connection of the node is open again (its first request named its token).
struct Reconnected {
  std::string token;
  RdzvMillis now;
};
}  // namespace rdzv_event
using RdzvEvent = std::variant<rdzv_event::Join, rdzv_event::Heartbeat, rdzv_event::Done, rdzv_event::Leave,
                               rdzv_event::Tick, rdzv_event::ConnectionClosed, rdzv_event::Reconnected>;

// A node waiting for an assignment: its token and join number.
struct RdzvPending {
  std::string token;
  int seq = 0;
};

namespace rdzv_decision {
// The round closed: give the workers a fresh store, then tell every node its place.
struct Publish {
  RdzvRound round;
};
// The running round is over: its members (the dead ones too, in case they come back) stop their
// workers and rejoin.
struct EndRound {
  int round = 0;
  std::string reason;
  std::vector<std::string> members;
};
// The job is over for everyone: members of the running round and nodes waiting to join learn why.
struct Close {
  std::string reason;
  int round = -1;                          // the round whose members are told (-1: none)
  std::vector<std::string> members;        // of that round
  std::vector<RdzvPending> pending;        // joined, not admitted
  std::optional<RestartDecision> restart;  // the job's restart budget ended it (its exit code, gave_up)
};
// A node cannot join (the job is finishing or over); the others go on.
struct Reject {
  RdzvPending node;
  std::string reason;
};
// Every member of the last round finished (or died after others finished): the store may go.
struct AllDone {};
// A node was declared dead (for the log and the event stream).
struct NodeLost {
  std::string token;
  std::string host;
  RdzvMillis silent;   // since its last heartbeat
  std::string reason;  // "no heartbeat for 15000 ms", "its store connection closed 1000 ms ago, not reopened"
};
}  // namespace rdzv_decision
using RdzvDecision = std::variant<rdzv_decision::Publish, rdzv_decision::EndRound, rdzv_decision::Close,
                                  rdzv_decision::Reject, rdzv_decision::AllDone, rdzv_decision::NodeLost>;

enum class RdzvPhase { Gathering, Running, Finishing, Finished, Closed };

// Node ranks 0..n-1 for n candidates (index-aligned): a hint in range first (ties: host, token),
// then the candidate's previous rank, then its host's previous rank, then the free ranks in
// (host, token) order. Deterministic for the same input in any order.
struct RankCandidate {
  std::string token;
  std::string host;
  int hint = -1;
  int previous = -1;       // its own rank in the last round it was in
  int host_previous = -1;  // its host's rank in the last round (only when the host name is unique)
};
std::vector<int> assign_node_ranks(const std::vector<RankCandidate>& candidates);

class RendezvousMachine {
 public:
  explicit RendezvousMachine(RdzvPolicy policy);

  std::vector<RdzvDecision> on(const RdzvEvent& e);

  RdzvPhase phase() const { return phase_; }
  int round() const { return round_; }  // the last published round, -1 before the first
  const RdzvRound& current() const { return current_; }
  std::size_t waiting() const;  // joined, not in the running round
  // When the shell must Tick next (heartbeat, last call, join timeout), if anything is pending.
  std::optional<RdzvMillis> next_deadline() const;
  const RdzvPolicy& policy() const { return policy_; }
  const std::optional<RestartBudget>& budget() const { return budget_; }

 private:
  struct Joined {
    RdzvNodeInfo info;
    std::uint64_t order = 0;  // join order: who is admitted first when more than MAX wait
  };
  std::vector<RdzvDecision> join(const rdzv_event::Join& e);
  std::vector<RdzvDecision> tick(RdzvMillis now);
  std::vector<RdzvDecision> leave(const rdzv_event::Leave& l);
  std::vector<RdzvDecision> connection_closed(const rdzv_event::ConnectionClosed& c);
  std::vector<RdzvDecision> reconnected(const rdzv_event::Reconnected& r);
  std::optional<std::string> death(const std::string& token, RdzvMillis now) const;  // why it is dead, if it is
  void forget(const std::string& token);
  void try_close(RdzvMillis now, std::vector<RdzvDecision>& out);
  void publish(RdzvMillis now, std::vector<RdzvDecision>& out);
  void end_round(RdzvMillis now, std::string reason, std::vector<RdzvDecision>& out);
  void close(std::string reason, std::vector<RdzvDecision>& out, std::optional<RestartDecision> restart = {});
  void note_report(const RdzvNodeInfo& info);
  // The budget's decision on the round that ended, if it failed and `changed` is false.
  std::optional<RestartDecision> judge_failed_round(bool changed, std::string& failed_hosts);
  void check_all_done(std::vector<RdzvDecision>& out);
  bool is_member(const std::string& token) const;
  bool alive(const std::string& token) const { return last_seen_.count(token) != 0; }

  RdzvPolicy policy_;
  RdzvPhase phase_ = RdzvPhase::Gathering;
  int round_ = -1;
  RdzvRound current_;
  std::map<std::string, Joined> joined_;  // the gathering round's candidates; while running, the wait list
  std::set<std::string> expected_;        // after a change: who must rejoin before the round closes at once
  std::map<std::string, RdzvMillis> last_seen_;
  std::map<std::string, RdzvMillis> suspected_;  // its store connection closed then, none open since
  std::map<std::string, std::string> host_of_;
  std::map<std::string, int> previous_rank_;       // token → rank in the last round it was in
  std::map<std::string, int> host_previous_rank_;  // host → rank in the last round
  std::set<std::string> done_;
  std::optional<RdzvMillis> gather_started_;
  std::optional<RdzvMillis> last_call_at_;
  std::uint64_t join_counter_ = 0;
  std::optional<RestartBudget> budget_;
  std::map<std::string, RdzvAttemptReport> reports_;  // members of the running/ended round: how it ended for them
};

}  // namespace ddp::launcher
