#include "launcher/rendezvous/rendezvous_machine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <tuple>

// GCC 12 at -O2 reports the decision variant's move (vector growth) as reading RdzvRound members
// "maybe uninitialized": a known false positive with std::variant of aggregates.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace ddp::launcher {

std::vector<int> assign_node_ranks(const std::vector<RankCandidate>& c) {
  const int n = static_cast<int>(c.size());
  std::vector<int> rank(c.size(), -1);
  std::vector<bool> taken(c.size(), false);
  std::vector<std::size_t> order(c.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::tie(c[a].host, c[a].token) < std::tie(c[b].host, c[b].token);
  });
  auto claim = [&](std::size_t i, int r) {
    if (rank[i] >= 0 || r < 0 || r >= n || taken[static_cast<std::size_t>(r)]) return;
    rank[i] = r;
    taken[static_cast<std::size_t>(r)] = true;
  };
  // Hints first, smallest hint first, so that a clash is settled the same way everywhere.
  std::vector<std::size_t> hinted = order;
  std::stable_sort(hinted.begin(), hinted.end(), [&](std::size_t a, std::size_t b) { return c[a].hint < c[b].hint; });
  for (auto i : hinted) claim(i, c[i].hint);
  for (auto i : order) claim(i, c[i].previous);
  for (auto i : order) claim(i, c[i].host_previous);
  int next = 0;
  for (auto i : order) {
    if (rank[i] >= 0) continue;
    while (taken[static_cast<std::size_t>(next)]) ++next;
    claim(i, next);
  }
  return rank;
}

RendezvousMachine::RendezvousMachine(RdzvPolicy policy) : policy_(policy) {
  policy_.min_nodes = std::max(1, policy_.min_nodes);
  policy_.max_nodes = std::max(policy_.min_nodes, policy_.max_nodes);
  if (policy_.budget) budget_.emplace(*policy_.budget);
}

std::vector<RdzvDecision> RendezvousMachine::on(const RdzvEvent& e) {
  std::vector<RdzvDecision> out;
  if (const auto* j = std::get_if<rdzv_event::Join>(&e)) return join(*j);
  if (const auto* h = std::get_if<rdzv_event::Heartbeat>(&e)) {
    if (auto it = last_seen_.find(h->token); it != last_seen_.end()) it->second = std::max(it->second, h->now);
    return tick(h->now);
  }
  if (const auto* d = std::get_if<rdzv_event::Done>(&e)) {
    if ((phase_ == RdzvPhase::Running || phase_ == RdzvPhase::Finishing) && is_member(d->token)) {
      last_seen_[d->token] = d->now;
      suspected_.erase(d->token);
      done_.insert(d->token);
      phase_ = RdzvPhase::Finishing;
      check_all_done(out);
    }
    return out;
  }
  if (const auto* l = std::get_if<rdzv_event::Leave>(&e)) return leave(*l);
  if (const auto* c = std::get_if<rdzv_event::ConnectionClosed>(&e)) return connection_closed(*c);
  if (const auto* r = std::get_if<rdzv_event::Reconnected>(&e)) return reconnected(*r);
  return tick(std::get<rdzv_event::Tick>(e).now);
}

std::vector<RdzvDecision> RendezvousMachine::leave(const rdzv_event::Leave& l) {
  std::vector<RdzvDecision> out;
  if (phase_ == RdzvPhase::Closed || phase_ == RdzvPhase::Finished || done_.count(l.token)) return out;
  const auto host = host_of_.count(l.token) ? host_of_[l.token] : l.token;
  if (l.hosts_store) {
    close(fmt::format("the rendezvous host {} left ({}); its store goes with it", host, l.why), out);
    return out;
  }
  const bool member = is_member(l.token) && phase_ != RdzvPhase::Gathering;
  forget(l.token);
  if (phase_ == RdzvPhase::Running && member) {
    // Like a death, without waiting for the heartbeat timeout; below MIN nobody can go on.
    int remaining = static_cast<int>(joined_.size());
    for (const auto& s : current_.nodes) remaining += alive(s.token) ? 1 : 0;
    if (remaining >= policy_.min_nodes) {
      end_round(l.now, fmt::format("node {} left: {}", host, l.why), out);
    } else {
      close(fmt::format("node {} left ({}); {} node(s) remain, fewer than the minimum {}", host, l.why, remaining,
                        policy_.min_nodes),
            out);
    }
  } else if (phase_ == RdzvPhase::Finishing) {
    check_all_done(out);
  } else if (phase_ == RdzvPhase::Gathering) {
    try_close(l.now, out);
  }
  return out;
}

// A finished node's supervisor exits and its connection closes: nothing to suspect.
std::vector<RdzvDecision> RendezvousMachine::connection_closed(const rdzv_event::ConnectionClosed& c) {
  if (alive(c.token) && !done_.count(c.token) && !suspected_.count(c.token)) suspected_[c.token] = c.now;
  return tick(c.now);
}

std::vector<RdzvDecision> RendezvousMachine::reconnected(const rdzv_event::Reconnected& r) {
  suspected_.erase(r.token);
  if (auto it = last_seen_.find(r.token); it != last_seen_.end()) it->second = std::max(it->second, r.now);
  return tick(r.now);
}

std::optional<std::string> RendezvousMachine::death(const std::string& token, RdzvMillis now) const {
  if (done_.count(token)) return std::nullopt;
  if (auto it = suspected_.find(token); it != suspected_.end() && now - it->second >= policy_.connection_grace) {
    return fmt::format("its store connection closed {} ms ago and it did not reconnect within the {} ms grace",
                       (now - it->second).count(), policy_.connection_grace.count());
  }
  if (auto it = last_seen_.find(token); it != last_seen_.end() && now - it->second >= policy_.heartbeat_timeout) {
    return fmt::format("no heartbeat for {} ms", (now - it->second).count());
  }
  return std::nullopt;
}

void RendezvousMachine::forget(const std::string& token) {
  last_seen_.erase(token);
  suspected_.erase(token);
  joined_.erase(token);
  expected_.erase(token);
}

bool RendezvousMachine::is_member(const std::string& token) const {
  if (round_ < 0) return false;
  return std::any_of(current_.nodes.begin(), current_.nodes.end(), [&](const RdzvSlot& s) { return s.token == token; });
}

std::size_t RendezvousMachine::waiting() const { return phase_ == RdzvPhase::Gathering ? 0 : joined_.size(); }

std::vector<RdzvDecision> RendezvousMachine::join(const rdzv_event::Join& e) {
  std::vector<RdzvDecision> out;
  const auto& info = e.node;
  if (!gather_started_) gather_started_ = e.now;
  if (phase_ == RdzvPhase::Closed || phase_ == RdzvPhase::Finished || phase_ == RdzvPhase::Finishing) {
    out.push_back(rdzv_decision::Reject{
        {info.token, info.seq},
        phase_ == RdzvPhase::Closed ? "the rendezvous is closed (the job failed)" : "the job is finishing"});
    return out;
  }
  last_seen_[info.token] = e.now;
  host_of_[info.token] = info.host;
  joined_[info.token] = Joined{info, join_counter_++};
  note_report(info);
  if (phase_ == RdzvPhase::Running) {
    if (is_member(info.token)) {
      // A member rejoins: its workers stopped (they failed); everyone starts a new round.
      end_round(e.now, fmt::format("node {} restarts its workers", info.host), out);
      return out;
    }
    if (static_cast<int>(current_.nodes.size()) < policy_.max_nodes) {
      end_round(e.now, fmt::format("node {} joins (scale up to at most {} nodes)", info.host, policy_.max_nodes), out);
    }
    return out;  // at MAX: it waits for a place
  }
  try_close(e.now, out);
  return out;
}

// A first join brings the node's checkpoint before any attempt (the budget's baseline); a rejoin
// after the round it ran in, how that round ended for it (weighed when the next round closes).
void RendezvousMachine::note_report(const RdzvNodeInfo& info) {
  if (info.last.round < 0) {
    if (budget_) budget_->raise_baseline(info.last.mark.checkpoint);
  } else if (info.last.round == round_ && is_member(info.token)) {
    reports_[info.token] = info.last;
  }
}

// One charge per failed round, not one per node that failed in it: the progress is the best any
// node reached. A round that ended for a membership change is free (a lost node's peers fail too).
std::optional<RestartDecision> RendezvousMachine::judge_failed_round(bool changed, std::string& failed_hosts) {
  if (!budget_ || round_ < 0 || changed) return std::nullopt;
  ProgressMark best;
  for (const auto& [token, r] : reports_) {
    if (r.failed) failed_hosts += fmt::format("{}{}", failed_hosts.empty() ? "" : ", ", host_of_[token]);
    if (r.mark.checkpoint && (!best.checkpoint || *r.mark.checkpoint > *best.checkpoint))
      best.checkpoint = r.mark.checkpoint;
    if (r.mark.step && (!best.step || *r.mark.step > *best.step)) best.step = r.mark.step;
  }
  if (failed_hosts.empty()) return std::nullopt;
  return budget_->on_failure(best);
}

std::vector<RdzvDecision> RendezvousMachine::tick(RdzvMillis now) {
  std::vector<RdzvDecision> out;
  if (phase_ == RdzvPhase::Closed || phase_ == RdzvPhase::Finished) return out;
  std::vector<std::pair<std::string, std::string>> dead;  // token, why
  for (const auto& [token, seen] : last_seen_) {
    if (auto why = death(token, now)) dead.emplace_back(token, std::move(*why));
  }
  std::string lost;
  for (const auto& [token, why] : dead) {
    out.push_back(rdzv_decision::NodeLost{token, host_of_[token], now - last_seen_[token], why});
    if (is_member(token)) lost += fmt::format("{}{} ({})", lost.empty() ? "" : ", ", host_of_[token], why);
    forget(token);
  }
  if (phase_ == RdzvPhase::Running && !lost.empty()) {
    end_round(now, fmt::format("lost node(s) {}", lost), out);
  } else if (phase_ == RdzvPhase::Finishing) {
    check_all_done(out);
  } else if (phase_ == RdzvPhase::Gathering) {
    try_close(now, out);
  }
  return out;
}

void RendezvousMachine::try_close(RdzvMillis now, std::vector<RdzvDecision>& out) {
  const int n = static_cast<int>(joined_.size());
  if (n >= policy_.max_nodes) return publish(now, out);
  if (n >= policy_.min_nodes) {
    bool all_back = !expected_.empty() && std::all_of(expected_.begin(), expected_.end(),
                                                      [&](const auto& t) { return joined_.count(t) != 0; });
    if (all_back) return publish(now, out);
    if (!last_call_at_) last_call_at_ = now + policy_.last_call;
    if (now >= *last_call_at_) return publish(now, out);
    return;
  }
  last_call_at_.reset();
  if (gather_started_ && now - *gather_started_ >= policy_.join_timeout) {
    close(fmt::format("only {} of at least {} nodes joined round {} within the join timeout ({} ms)", n,
                      policy_.min_nodes, round_ + 1, policy_.join_timeout.count()),
          out);
  }
}

void RendezvousMachine::publish(RdzvMillis now, std::vector<RdzvDecision>& out) {
  // Who is admitted when more than MAX joined: the last round's members, then first come.
  std::vector<const Joined*> cand;
  for (const auto& [token, j] : joined_) cand.push_back(&j);
  std::sort(cand.begin(), cand.end(), [&](const Joined* a, const Joined* b) {
    bool pa = previous_rank_.count(a->info.token) != 0, pb = previous_rank_.count(b->info.token) != 0;
    if (pa != pb) return pa;
    return a->order < b->order;
  });
  if (static_cast<int>(cand.size()) > policy_.max_nodes) cand.resize(static_cast<std::size_t>(policy_.max_nodes));
  bool changed = false;
  if (round_ >= 0) {
    std::set<std::string> before, now_in;
    for (const auto& s : current_.nodes) before.insert(s.token);
    for (const auto* j : cand) now_in.insert(j->info.token);
    changed = before != now_in;
  }
  std::string failed_hosts;
  auto restart = judge_failed_round(changed, failed_hosts);
  reports_.clear();
  if (restart && restart->verdict != RestartVerdict::Restart) {
    close(fmt::format("round {} failed on node(s) {}: {} (the job's one restart budget, kept by the rendezvous "
                      "host: a failed round costs one restart, whichever nodes failed in it)",
                      round_, failed_hosts, restart->text(*policy_.budget)),
          out, restart);
    return;
  }
  std::map<std::string, int> host_count;
  for (const auto* j : cand) ++host_count[j->info.host];
  std::vector<RankCandidate> rc;
  for (const auto* j : cand) {
    RankCandidate r{j->info.token, j->info.host, j->info.rank_hint, -1, -1};
    if (auto it = previous_rank_.find(j->info.token); it != previous_rank_.end()) r.previous = it->second;
    if (auto it = host_previous_rank_.find(j->info.host);
        it != host_previous_rank_.end() && host_count[j->info.host] == 1)
      r.host_previous = it->second;
    rc.push_back(r);
  }
  auto ranks = assign_node_ranks(rc);
  RdzvRound next;
  next.round = ++round_;
  next.nodes.resize(cand.size());
  for (std::size_t i = 0; i < cand.size(); ++i) {
    auto& s = next.nodes[static_cast<std::size_t>(ranks[i])];
    s.token = cand[i]->info.token;
    s.host = cand[i]->info.host;
    s.seq = cand[i]->info.seq;
    s.nproc = cand[i]->info.nproc;
    s.node_rank = ranks[i];
  }
  int base = 0;
  host_previous_rank_.clear();
  for (auto& s : next.nodes) {
    s.rank_base = base;
    base += s.nproc;
    previous_rank_[s.token] = s.node_rank;
    host_previous_rank_[s.host] = s.node_rank;
    joined_.erase(s.token);
  }
  next.world_size = base;
  next.membership_changed = changed;
  next.restart = restart;
  current_ = next;
  phase_ = RdzvPhase::Running;
  expected_.clear();
  last_call_at_.reset();
  gather_started_ = now;
  done_.clear();
  out.push_back(rdzv_decision::Publish{std::move(next)});
  // More waited than MAX admits: they wait for a place (a death frees one).
}

void RendezvousMachine::end_round(RdzvMillis now, std::string reason, std::vector<RdzvDecision>& out) {
  rdzv_decision::EndRound end{round_, std::move(reason), {}};
  expected_.clear();
  for (const auto& s : current_.nodes) {
    end.members.push_back(s.token);
    if (alive(s.token)) expected_.insert(s.token);
  }
  for (const auto& [token, j] : joined_) expected_.insert(token);
  out.push_back(std::move(end));
  phase_ = RdzvPhase::Gathering;
  gather_started_ = now;
  last_call_at_.reset();
  try_close(now, out);
}

void RendezvousMachine::close(std::string reason, std::vector<RdzvDecision>& out,
                              std::optional<RestartDecision> restart) {
  rdzv_decision::Close c{std::move(reason), -1, {}, {}, std::move(restart)};
  if (phase_ == RdzvPhase::Running || phase_ == RdzvPhase::Finishing) {
    c.round = round_;
    for (const auto& s : current_.nodes) c.members.push_back(s.token);
  }
  for (const auto& [token, j] : joined_) c.pending.push_back({token, j.info.seq});
  joined_.clear();
  phase_ = RdzvPhase::Closed;
  out.push_back(std::move(c));
}

void RendezvousMachine::check_all_done(std::vector<RdzvDecision>& out) {
  for (const auto& s : current_.nodes) {
    if (!done_.count(s.token) && alive(s.token)) return;
  }
  phase_ = RdzvPhase::Finished;
  // Nodes still waiting to join a finished job are told so.
  for (const auto& [token, j] : joined_) out.push_back(rdzv_decision::Reject{{token, j.info.seq}, "the job finished"});
  joined_.clear();
  out.push_back(rdzv_decision::AllDone{});
}

std::optional<RdzvMillis> RendezvousMachine::next_deadline() const {
  if (phase_ == RdzvPhase::Closed || phase_ == RdzvPhase::Finished) return std::nullopt;
  std::optional<RdzvMillis> at;
  auto consider = [&](RdzvMillis t) {
    if (!at || t < *at) at = t;
  };
  for (const auto& [token, seen] : last_seen_) {
    if (!done_.count(token)) consider(seen + policy_.heartbeat_timeout);
  }
  for (const auto& [token, since] : suspected_) {
    if (!done_.count(token)) consider(since + policy_.connection_grace);
  }
  if (phase_ == RdzvPhase::Gathering) {
    if (last_call_at_) consider(*last_call_at_);
    if (gather_started_) consider(*gather_started_ + policy_.join_timeout);
  }
  return at;
}

}  // namespace ddp::launcher
