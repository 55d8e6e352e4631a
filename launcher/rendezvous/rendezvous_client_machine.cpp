#include "launcher/rendezvous/rendezvous_client_machine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace ddp::launcher {

using json = nlohmann::json;
using namespace std::chrono_literals;
namespace req = rdzv_client_request;
namespace ev = rdzv_client_event;
namespace note = rdzv_client_notice;

namespace {

// An optional value as JSON: the value, or null.
template <class T>
json or_null(const std::optional<T>& v) {
  return v ? json(*v) : json();
}

// `key` of `j` when it is there and not null.
template <class T>
std::optional<T> optional_at(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return it->get<T>();
}

json decision_json(const RestartDecision& d) {
  return json{{"verdict", restart_verdict_name(d.verdict)},
              {"progressed", d.progressed},
              {"charged", d.charged},
              {"no_progress_in_a_row", d.no_progress_in_a_row},
              {"restarts_left", d.restarts_left},
              {"checkpoint", or_null(d.checkpoint)},
              {"step", or_null(d.step)}};
}

std::optional<RestartDecision> parse_decision(const json& j) {
  if (!j.is_object()) return std::nullopt;
  RestartDecision d;
  auto verdict = restart_verdict_named(j.at("verdict").get<std::string>());
  if (!verdict) throw std::invalid_argument("unknown restart verdict " + j.at("verdict").dump());
  d.verdict = *verdict;
  d.progressed = j.at("progressed").get<bool>();
  d.charged = j.at("charged").get<bool>();
  d.no_progress_in_a_row = j.at("no_progress_in_a_row").get<int>();
  d.restarts_left = j.at("restarts_left").get<int>();
  d.checkpoint = optional_at<std::int64_t>(j, "checkpoint");
  d.step = optional_at<double>(j, "step");
  return d;
}

RoundAssignment parse_assignment(const json& j) {
  RoundAssignment a;
  a.round = j.at("round").get<int>();
  a.node_rank = j.at("node_rank").get<int>();
  a.nnodes = j.at("nnodes").get<int>();
  a.world_size = j.at("world_size").get<int>();
  a.rank_base = j.at("rank_base").get<int>();
  a.nproc = j.at("nproc").get<int>();
  a.master_addr = j.at("master_addr").get<std::string>();
  a.master_port = j.at("master_port").get<std::uint16_t>();
  a.membership_changed = j.value("changed", false);
  if (j.contains("restart")) a.restart = parse_decision(j["restart"]);
  return a;
}

double seconds(RdzvMillis d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

std::string rdzv_join_value(const RdzvNodeInfo& n) {
  const auto& m = n.last.mark;
  json last{{"round", n.last.round},
            {"failed", n.last.failed},
            {"checkpoint", or_null(m.checkpoint)},
            {"step", or_null(m.step)}};
  return json{{"token", n.token},    {"host", n.host}, {"nproc", n.nproc},
              {"hint", n.rank_hint}, {"seq", n.seq},   {"last", std::move(last)}}
      .dump();
}

RdzvNodeInfo rdzv_join_info(const std::string& value) {
  auto j = json::parse(value);
  RdzvNodeInfo n;
  n.token = j.at("token").get<std::string>();
  n.host = j.at("host").get<std::string>();
  n.nproc = j.at("nproc").get<int>();
  n.rank_hint = j.at("hint").get<int>();
  n.seq = j.at("seq").get<int>();
  if (const auto it = j.find("last"); it != j.end() && it->is_object()) {
    n.last.round = it->value("round", -1);
    n.last.failed = it->value("failed", false);
    n.last.mark.checkpoint = optional_at<std::int64_t>(*it, "checkpoint");
    n.last.mark.step = optional_at<double>(*it, "step");
  }
  return n;
}

std::string rdzv_assign_value(const RoundAssignment& a, int store_node_rank) {
  json j{{"round", a.round},
         {"node_rank", a.node_rank},
         {"nnodes", a.nnodes},
         {"world_size", a.world_size},
         {"rank_base", a.rank_base},
         {"nproc", a.nproc},
         {"master_addr", a.master_addr},
         {"master_port", a.master_port},
         {"changed", a.membership_changed},
         {"store_node_rank", store_node_rank}};
  if (a.restart) j["restart"] = decision_json(*a.restart);
  return j.dump();
}

std::string rdzv_wake_value(const std::string& reason, bool closed, const std::optional<RestartDecision>& restart) {
  json j{{"reason", reason}, {"closed", closed}};
  if (restart) j["restart"] = decision_json(*restart);
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

RdzvClientTiming RdzvClientTiming::of(const RdzvPolicy& p) {
  RdzvClientTiming t{};
  t.heartbeat_every = std::clamp<RdzvMillis>(p.heartbeat_timeout / 3, 50ms, 5000ms);
  t.wait_chunk = std::min<RdzvMillis>(200ms, t.heartbeat_every);
  // The first connection may wait for the host to come up, for the join timeout; it is made in
  // short tries, because a link that goes dark must be noticed within the heartbeat timeout.
  t.connect_try = std::max<RdzvMillis>(p.heartbeat_timeout / 2, 1000ms);
  t.pause = std::min<RdzvMillis>(200ms, t.heartbeat_every);
  return t;
}

RendezvousClientMachine::RendezvousClientMachine(RdzvClientSettings settings)
    : s_(std::move(settings)), timing_(RdzvClientTiming::of(s_.policy)) {}

RdzvClientStep RendezvousClientMachine::start(RdzvMillis now) {
  out_ = {};
  give_up_ = now + s_.policy.join_timeout;
  last_hb_ = now - timing_.heartbeat_every;  // the first heartbeat is due at once
  last_contact_ = now;
  first_connect(now);
  return std::exchange(out_, {});
}

RdzvClientStep RendezvousClientMachine::on(const RdzvClientEvent& e) {
  out_ = {};
  std::visit([this](const auto& x) { on_event(x); }, e);
  return std::exchange(out_, {});
}

namespace {
[[noreturn]] void mismatch(const char* event) {
  throw std::logic_error(fmt::format("rendezvous client machine: {} does not answer the last request", event));
}
}  // namespace

void RendezvousClientMachine::on_event(const ev::Connected& e) {
  if (awaiting_ == Awaiting::Reconnect) return reconnected(e);
  if (awaiting_ != Awaiting::FirstConnect) mismatch("Connected");
  if (auto h = parse_host(e.host_key)) store_host_ = *h;
  last_contact_ = e.now;
  has_client_ = true;
  mode_ = RdzvClientMode::Idle;
  notice(note::FirstContact{});
  iterate(e.now);
}

void RendezvousClientMachine::on_event(const ev::Ok& e) {
  switch (awaiting_) {
    case Awaiting::SetCommand:
      if (held_->kind == Kind::Join) {
        key_ = fmt::format("{}assign/{}/{}", s_.prefix, s_.node.token, s_.node.seq);
        mode_ = RdzvClientMode::Assign;
        join_started_ = e.now;
      } else {
        mode_ = RdzvClientMode::Over;
      }
      finish_held();
      return heartbeat(e.now);
    case Awaiting::Heartbeat: last_contact_ = e.now; return after_heartbeat(e.now);
    case Awaiting::Wait: last_contact_ = e.now; return request(req::Get{key_}, Awaiting::Get);
    default: mismatch("Ok");
  }
}

void RendezvousClientMachine::on_event(const ev::Value& e) {
  if (awaiting_ != Awaiting::Get) mismatch("Value");
  answer(e.now, e.value);
}

void RendezvousClientMachine::on_event(const ev::Failed& e) {
  switch (awaiting_) {
    case Awaiting::FirstConnect:
      if (e.now < give_up_) return first_connect(e.now);
      close(fmt::format(
          "cannot reach the rendezvous store at {} within the join timeout ({} s): {}. Check --rdzv-endpoint (the host "
          "that runs the first supervisor, and its port) and that this node can reach it",
          s_.endpoint, s_.policy.join_timeout.count() / 1000, e.what));
      mode_ = RdzvClientMode::Over;
      return iterate(e.now);
    case Awaiting::Wait:
      if (e.timed_out) return chunk_passed(e);
      return store_error(e.now, e.what);
    case Awaiting::Reconnect:
    case Awaiting::SetCommand:
    case Awaiting::Heartbeat:
    case Awaiting::Get: return store_error(e.now, e.what);
    default: mismatch("Failed");
  }
}

void RendezvousClientMachine::on_event(const ev::Broken& e) {
  switch (awaiting_) {
    case Awaiting::FirstConnect:
    case Awaiting::Reconnect:
    case Awaiting::SetCommand:
    case Awaiting::Heartbeat:
    case Awaiting::Wait:
    case Awaiting::Get: return broken(e.now, e.what);
    default: mismatch("Broken");
  }
}

void RendezvousClientMachine::on_event(const ev::Command& e) {
  if (awaiting_ != Awaiting::Command) mismatch("Command");
  held_ = Held{e.kind, e.why, e.last};
  with_command(e.now);
}

void RendezvousClientMachine::on_event(const ev::Tick& e) {
  if (awaiting_ == Awaiting::Command) return with_command(e.now);
  if (awaiting_ == Awaiting::Pause) return iterate(e.now);
  mismatch("Tick");
}

void RendezvousClientMachine::first_connect(RdzvMillis now) {
  request(req::Connect{std::clamp<RdzvMillis>(give_up_ - now, 1ms, timing_.connect_try)}, Awaiting::FirstConnect);
}

// The top of the loop: the command kept from before, else the supervisor's next one.
void RendezvousClientMachine::iterate(RdzvMillis now) {
  if (held_) return with_command(now);
  const bool waiting = mode_ == RdzvClientMode::Idle || mode_ == RdzvClientMode::Over;
  request(req::TakeCommand{waiting ? timing_.heartbeat_every : 0ms}, Awaiting::Command);
}

void RendezvousClientMachine::with_command(RdzvMillis now) {
  if (mode_ == RdzvClientMode::Over) {
    finish_held();
    return iterate(now);
  }
  if (!has_client_) {
    ++reconnects_;
    auto left = last_contact_ + s_.store_lost_window - now;
    return request(req::Connect{std::clamp<RdzvMillis>(left, 1ms, timing_.connect_try)}, Awaiting::Reconnect);
  }
  send_command(now);
}

void RendezvousClientMachine::reconnected(const ev::Connected& e) {
  has_client_ = true;
  auto h = parse_host(e.host_key);
  if (h && !store_host_.token.empty() && h->token != store_host_.token) {
    // Someone restarted the host's supervisor: the rounds, the members and the workers' store of
    // this job died with the old one, so there is nothing to rejoin.
    mode_ = RdzvClientMode::Over;
    close(fmt::format(
        "the rendezvous store at {} came back as a new process (host {}, pid {}) after {} ms: this job's rendezvous "
        "state died with {}, so this node cannot go on: stopping its workers. Restart the job on every node",
        s_.endpoint, h->host, h->pid, (e.now - last_contact_).count(), store_host_words()));
    return iterate(e.now);  // over: a Done/Leave taken meanwhile finishes there (the supervisor waits for it)
  }
  notice(note::Log{note::Log::Info, fmt::format("rendezvous store {} reachable again after {} ms ({} reconnect "
                                                "attempt(s))",
                                                s_.endpoint, (e.now - last_contact_).count(), reconnects_)});
  last_contact_ = e.now;
  reconnects_ = 0;
  // A heartbeat at once: the host ties this new connection to this node by the token its requests
  // name, and drops a node whose connection closed unless it has a new one within a short grace.
  last_hb_ = e.now - timing_.heartbeat_every;
  send_command(e.now);
}

void RendezvousClientMachine::send_command(RdzvMillis now) {
  if (!held_) return heartbeat(now);
  if (held_->kind != Kind::Join) {
    auto key = fmt::format("{}{}/{}", s_.prefix, held_->kind == Kind::Done ? "done" : "leave", s_.node.token);
    return request(req::Set{std::move(key), held_->why}, Awaiting::SetCommand);
  }
  ++s_.node.seq;
  s_.node.last = held_->last;
  std::string value;
  try {
    value = rdzv_join_value(s_.node);
  } catch (const json::exception& e) {  // a host name that is not UTF-8
    return broken(now, e.what());
  }
  request(req::Set{fmt::format("{}join/{}/{}", s_.prefix, s_.node.token, s_.node.seq), std::move(value)},
          Awaiting::SetCommand);
}

void RendezvousClientMachine::heartbeat(RdzvMillis now) {
  if (now - last_hb_ >= timing_.heartbeat_every && mode_ != RdzvClientMode::Over) {
    // ADD, not SET: its reply is the proof that the store is still there.
    last_hb_ = now;
    return request(req::Add{fmt::format("{}hb/{}", s_.prefix, s_.node.token)}, Awaiting::Heartbeat);
  }
  after_heartbeat(now);
}

void RendezvousClientMachine::after_heartbeat(RdzvMillis now) {
  unreachable_warned_ = false;
  if (mode_ == RdzvClientMode::Assign || mode_ == RdzvClientMode::Running) {
    return request(req::Wait{key_, timing_.wait_chunk}, Awaiting::Wait);
  }
  iterate(now);
}

// A chunk passed (or, on a dark link, the wait's cancel got no answer: then no heartbeat gets one
// either, and the store-lost window runs out).
void RendezvousClientMachine::chunk_passed(const ev::Failed& e) {
  if (e.now - last_contact_ >= s_.store_lost_window) return store_error(e.now, e.what);
  if (mode_ == RdzvClientMode::Assign && e.now - join_started_ > s_.policy.join_timeout) {
    close(fmt::format("no rendezvous round admitted this node within the join timeout ({} s)",
                      s_.policy.join_timeout.count() / 1000));
    mode_ = RdzvClientMode::Over;
  }
  iterate(e.now);
}

// The key this node waited for: its assignment, a wake-up, or why the job is over.
void RendezvousClientMachine::answer(RdzvMillis now, const std::string& value) {
  try {
    auto j = json::parse(value);
    if (j.contains("closed")) {
      bool closed = j.value("closed", false);
      std::string reason = j.value("reason", std::string("?"));
      if (closed) {
        mode_ = RdzvClientMode::Over;
        close(reason, j.contains("restart") ? parse_decision(j["restart"]) : std::nullopt);
      } else {
        mode_ = RdzvClientMode::Idle;
        notice(note::RoundEnded{reason});
      }
    } else {
      auto a = parse_assignment(j);
      round_ = a.round;
      store_host_.node_rank = j.value("store_node_rank", -1);
      key_ = fmt::format("{}wake/{}/{}", s_.prefix, s_.node.token, round_);
      mode_ = RdzvClientMode::Running;
      notice(note::Assigned{a});
    }
  } catch (const std::exception& e) {
    return broken(now, e.what());
  }
  iterate(now);
}

// The store does not answer: reconnect (with backoff, in the client) until the window since its
// last answer runs out; then its host is gone, and nobody can go on.
void RendezvousClientMachine::store_error(RdzvMillis now, const std::string& what) {
  notice(note::DropConnection{});
  has_client_ = false;
  last_error_ = what;
  if (held_ && held_->kind != Kind::Join) {
    // Done or Leave: the store is gone; nobody is left to tell.
    finish_held();
    mode_ = RdzvClientMode::Over;
    return iterate(now);
  }
  const auto lost = s_.store_lost_window;
  if (!unreachable_warned_) {
    unreachable_warned_ = true;
    notice(note::Log{note::Log::Warn,
                     fmt::format("rendezvous store {} not answering ({}); reconnecting for up to {} ms since its last "
                                 "answer",
                                 s_.endpoint, what, lost.count())});
  }
  if (now - last_contact_ >= lost) {
    mode_ = RdzvClientMode::Over;
    close(fmt::format(
        "the rendezvous store at {} is gone: no answer for {:.1f} s, reconnecting with backoff (last error: {}). It "
        "lived in {}, which was killed, or whose host is down or cut off from this node; the job's rendezvous state "
        "died with it, so no node can go on: stopping this node's workers. Restart the job on every node "
        "(--rdzv-conf store_lost_timeout=SECONDS waits longer for a flaky link; now {} s)",
        s_.endpoint, seconds(now - last_contact_), last_error_, store_host_words(), seconds(lost)));
    return iterate(now);
  }
  if (mode_ == RdzvClientMode::Running && now - last_contact_ >= s_.policy.heartbeat_timeout) {
    // A longer store_lost_timeout: the host (if it lives) counts this node dead by now and the
    // others go on without it; stop the workers and rejoin when the store answers again.
    mode_ = RdzvClientMode::Idle;
    notice(note::RoundEnded{fmt::format("lost the rendezvous store {} for {} ms; rejoining when it answers again",
                                        s_.endpoint, s_.policy.heartbeat_timeout.count())});
  }
  request(req::Pause{timing_.pause}, Awaiting::Pause);
}

void RendezvousClientMachine::broken(RdzvMillis now, const std::string& what) {
  mode_ = RdzvClientMode::Over;
  close(fmt::format("rendezvous: unexpected answer from {}: {}", s_.endpoint, what));
  iterate(now);  // over: a Done/Leave taken meanwhile finishes there (the supervisor waits for it)
}

void RendezvousClientMachine::finish_held() {
  if (held_ && held_->kind != Kind::Join) notice(note::RunThen{});
  held_.reset();
}

void RendezvousClientMachine::close(std::string reason, std::optional<RestartDecision> restart) {
  notice(note::Closed{std::move(reason), std::move(restart)});
}

std::optional<RendezvousClientMachine::StoreHost> RendezvousClientMachine::parse_host(
    const std::optional<std::string>& value) {
  if (!value) return std::nullopt;
  try {
    auto j = json::parse(*value);
    return StoreHost{j.at("token").get<std::string>(), j.at("host").get<std::string>(), j.value("pid", 0), -1};
  } catch (const json::exception& e) {
    notice(note::Log{note::Log::Warn, fmt::format("rendezvous: ignoring a malformed host key ({}): {}", e.what(),
                                                  value->substr(0, 200))});
    return std::nullopt;
  }
}

std::string RendezvousClientMachine::store_host_words() const {
  if (store_host_.token.empty()) return fmt::format("the supervisor that hosts {}", s_.endpoint);
  if (store_host_.node_rank >= 0) {
    return fmt::format("the supervisor of node {} (host {}, pid {})", store_host_.node_rank, store_host_.host,
                       store_host_.pid);
  }
  return fmt::format("the supervisor on host {} (pid {})", store_host_.host, store_host_.pid);
}

}  // namespace ddp::launcher
