// The supervisor's event contract (common/events.hpp): every type round-trips, and the lines the
// supervisor wrote before the contract (no "v") still read.
#include <doctest/doctest.h>

#include <csignal>
#include <fstream>
#include <set>

#include "common/events.hpp"

namespace ev = ddp::events;
using ddp::ExitStatus;
using json = nlohmann::json;

namespace {

// One value of every type, every optional both set and (where it can be) empty.
std::vector<ev::Payload> samples() {
  return {
      ev::Started{"job7", 4, 2, 1, "agent", "", "10.0.0.1", 29500, 4242, "/tmp/r", std::nullopt,
                  std::string("/sys/fs/cgroup/x"), true},
      ev::Started{"none", 1, 1, 0, "file", "/tmp/fs", "127.0.0.1", 0, 1, "/tmp/r", std::string("/tmp/r"), std::nullopt,
                  false},
      ev::SweptPredecessor{77, {101, 102}},
      ev::RoundEnded{3, "node b left"},
      ev::RendezvousClosed{4, "the job ended"},
      ev::NodeLost{"nodeb", 12000, "no heartbeat for 12000 ms"},
      ev::RendezvousComplete{0, std::nullopt, std::nullopt, 2, 1},  // static: attempt
      ev::RendezvousComplete{std::nullopt, 2, 1, 4, 2},             // dynamic: round, node_rank
      ev::FilestoreCleaned{"/tmp/shared"},
      ev::FilestoreFound{0, "/tmp/job/sharedfile", "stale", 185.5, true, "FileStore /tmp/job/sharedfile … is stale"},
      ev::FilestoreFound{1, "/tmp/s", "unsure", std::nullopt, false, "not proven"},
      ev::RankStarted{1, 3, 1, 555},
      ev::RankExited{0, 1, 1, 556, ExitStatus::exited(3), false},
      ev::RankExited{0, 0, 0, 557, ExitStatus::killed(SIGKILL), true},
      ev::GroupStopping{0, "SIGTERM"},
      ev::Restarting{1, 0, true, 120, std::nullopt, 0, 3, 0.5},
      ev::Finished{3, "FAILED", 2, 1, "no_progress"},
      ev::RendezvousTimeout{0, 1, 2, {1}},
      ev::RendezvousTimeout{0, std::nullopt, 2, {}},
      ev::RootCause{0, 1, 1, 556, ExitStatus::exited(3), "original failure", std::string("ValueError: boom")},
      ev::RootCause{0, 1, 1, 556, ExitStatus::killed(SIGTERM), "lost a peer", std::nullopt},
      ev::GpuSample{0, 0, "GPU-abc", 87, 1024.5, 81920},
      ev::GpuLowUtil{1, 1, "0", 12.5, 61.0, "rank 1: GPU 0 under 50% for 61 s"},
      ev::Straggler{0, 1, 0.41, 0.21, 0.52},
      ev::TimerExpired{0, 1, 4242, "/w/train.py#12", 1796318085.25, std::string("SIGKILL")},
      ev::TimerExpired{1, 0, 4243, "step", 1796318086.5, std::nullopt},
      ev::HangDetected{0, 1, {1, 0}, {5.25, 5.0}, {2}, 0.25, "5s", 5.0, std::nullopt},
      ev::HangDetected{2, 3, {3}, {150.5}, {}, std::nullopt, "auto", 150.0, std::string("/tmp/r/attempt_2/stacks.txt")},
      ev::WriteFailed{0, 1, "/tmp/r/attempt_0/1/stderr.log", "No space left on device"},
      ev::WriteFailed{std::nullopt, std::nullopt, "/tmp/r/metrics.csv", "Disk quota exceeded"},
      ev::RestartTimeline{1, 0, 100.0, 100.02, std::nullopt, 100.5, 100.51, 100.7, 100.75, 101.0, 1.0,
                          "back to training in 1.00 s: stop 0.02, wait 0.48, spawn 0.01, interpreter 0.19, "
                          "rendezvous 0.05, first step 0.25"},
      ev::Unknown{"from_the_future", json{{"x", 1}}},
  };
}

}  // namespace

TEST_CASE("every event type round-trips: struct -> JSON line -> struct") {
  std::set<std::size_t> kinds;
  for (const auto& payload : samples()) {
    ev::Event e{payload, 1796318085.25};
    auto line = ev::to_line(e);
    CAPTURE(line);
    CHECK(line.back() == '\n');
    auto back = ev::parse_line(line.substr(0, line.size() - 1));
    CHECK(back == e);
    auto j = json::parse(line);
    CHECK(j["event"] == ev::type_name(payload));
    CHECK(j["v"] == ev::kSchemaVersion);
    CHECK(j["time"] == 1796318085.25);
    kinds.insert(payload.index());
  }
  CHECK(kinds.size() == std::variant_size_v<ev::Payload>);  // no type left untested
}

TEST_CASE("lines the supervisor wrote before the contract (no \"v\") read as version 1") {
  // Verbatim from `ddp-launch run --events` of the commit before the contract.
  auto e = ev::parse_line(
      R"({"attempt":0,"event":"rank_exited","exit_code":null,"local_rank":1,"oom":false,"pid":25850,"rank":1,)"
      R"("signal":"SIGKILL","time":1796318085.4185674})");
  CHECK(e.version == 1);
  CHECK(e.time == doctest::Approx(1796318085.4185674));
  REQUIRE(e.as<ev::RankExited>());
  CHECK(*e.as<ev::RankExited>() == ev::RankExited{0, 1, 1, 25850, ExitStatus::killed(SIGKILL), false});

  auto rc = ev::parse_line(
      R"({"attempt":0,"error":null,"event":"root_cause","exit_code":3,"local_rank":1,"pid":25832,"rank":1,)"
      R"("role":"original failure","signal":null,"time":1796318085.3274155})");
  REQUIRE(rc.as<ev::RootCause>());
  CHECK(rc.as<ev::RootCause>()->status == ExitStatus::exited(3));
  CHECK_FALSE(rc.as<ev::RootCause>()->error);

  auto st = ev::parse_line(
      R"({"cgroup":"/sys/fs/cgroup/unified/ddp-launch-none-25828","event":"started","filestore":"","log_dir":null,)"
      R"("master_addr":"127.0.0.1","master_port":42933,"memory_cgroup":true,"node_rank":0,"nproc":2,)"
      R"("run_dir":"/tmp/ddp-launch-none-25828","run_id":"none","store":"agent","supervisor_pid":25828,)"
      R"("time":1796318085.3027353,"world_size":2})");
  REQUIRE(st.as<ev::Started>());
  CHECK(st.as<ev::Started>()->cgroup == "/sys/fs/cgroup/unified/ddp-launch-none-25828");
  CHECK_FALSE(st.as<ev::Started>()->log_dir);

  auto fin = ev::parse_line(
      R"({"attempts":2,"event":"finished","exit_code":1,"restarts":1,"state":"FAILED","time":1796318085.337848})");
  CHECK(*fin.as<ev::Finished>() == ev::Finished{1, "FAILED", 2, 1});

  auto rdzv = ev::parse_line(R"({"attempt":0,"event":"rendezvous_complete","nodes":1,"time":1.0,"world_size":2})");
  CHECK(*rdzv.as<ev::RendezvousComplete>() == ev::RendezvousComplete{0, std::nullopt, std::nullopt, 2, 1});
}

TEST_CASE("fields added after an event was first written read with their defaults from older lines") {
  // rank_exited before OOM evidence, restarting and finished before their counts, started before cgroups.
  auto exited = ev::parse_line(R"({"attempt":0,"event":"rank_exited","exit_code":3,"local_rank":1,"pid":9,)"
                               R"("rank":1,"signal":null,"time":1.0})");
  CHECK(*exited.as<ev::RankExited>() == ev::RankExited{0, 1, 1, 9, ExitStatus::exited(3), false});
  CHECK(*ev::parse_line(R"({"event":"restarting","attempt":1,"time":1.0})").as<ev::Restarting>() ==
        ev::Restarting{1, 0});
  CHECK(*ev::parse_line(R"({"event":"finished","exit_code":0,"state":"SUCCEEDED","time":1.0})").as<ev::Finished>() ==
        ev::Finished{0, "SUCCEEDED", 0, 0});
  auto started = ev::parse_line(R"({"event":"started","run_id":"none","world_size":2,"nproc":2,"node_rank":0,)"
                                R"("store":"agent","master_addr":"127.0.0.1","master_port":1,"supervisor_pid":2,)"
                                R"("time":1.0})");
  REQUIRE(started.as<ev::Started>());
  CHECK(started.as<ev::Started>()->run_dir.empty());
  CHECK_FALSE(started.as<ev::Started>()->cgroup);
  // A field there from the start stays required.
  CHECK_THROWS_AS(ev::parse_line(R"({"event":"restarting","failed_attempt":0,"time":1.0})"), ev::ParseError);
}

TEST_CASE("the JSON keeps the field names the readers know, and no empty optional of rendezvous_complete") {
  auto j = ev::to_json({ev::RankExited{2, 5, 1, 9, ExitStatus::exited(3), false}, 1.5});
  CHECK(j == json::parse(R"({"attempt":2,"event":"rank_exited","exit_code":3,"local_rank":1,"oom":false,"pid":9,)"
                         R"("rank":5,"signal":null,"time":1.5,"v":1})"));
  auto r = ev::to_json({ev::RendezvousComplete{std::nullopt, 2, 1, 4, 2}, 1.5});
  CHECK_FALSE(r.contains("attempt"));
  CHECK(r["round"] == 2);
}

TEST_CASE("an unknown type is kept whole; a newer major version reads as unknown") {
  auto e = ev::parse_line(R"({"event":"hang_suspected","time":2.0,"v":1,"rank":3})");
  REQUIRE(e.as<ev::Unknown>());
  CHECK(e.as<ev::Unknown>()->type == "hang_suspected");
  CHECK(e.as<ev::Unknown>()->fields == json{{"rank", 3}});
  CHECK(ev::to_json(e) == json::parse(R"({"event":"hang_suspected","time":2.0,"v":1,"rank":3})"));

  auto future = ev::parse_line(R"({"event":"finished","time":2.0,"v":2,"exit_code":"zero"})");
  REQUIRE(future.as<ev::Unknown>());
  CHECK(future.version == 2);
  CHECK(future.as<ev::Unknown>()->type == "finished");
}

TEST_CASE("a known type with a missing or mistyped field is a clear error") {
  auto error_of = [](std::string_view line) {
    try {
      ev::parse_line(line);
    } catch (const ev::ParseError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  CHECK(error_of(R"({"event":"finished","time":1,"state":"FAILED","attempts":1,"restarts":0})") ==
        "finished event: field \"exit_code\" is missing");
  CHECK(error_of(R"({"event":"restarting","attempt":"1","failed_attempt":0})")
            .find("restarting event: field \"attempt\" is not an integer") == 0);
  CHECK(error_of(R"({"event":"rank_exited","attempt":0,"rank":0,"local_rank":0,"pid":1,"oom":false})")
            .find("rank_exited event: field \"exit_code\"") == 0);
  CHECK(error_of(R"({"time":1})").find("an event names its type") == 0);
  CHECK(error_of("[1,2]").find("an event is a JSON object") == 0);
  CHECK(error_of("{not json").find("not a JSON line") == 0);
}

TEST_CASE("a worker's bytes that are not UTF-8 are replaced, never a throw") {
  ev::RootCause rc{0, 0, 0, 1, ExitStatus::exited(1), "original failure", std::string("bad \xff byte\0x", 11)};
  auto line = ev::to_line({rc, 1});
  CHECK(line.find("\\u0000") != std::string::npos);
  CHECK(ev::parse_line(line).as<ev::RootCause>()->error->find("bad ") == 0);
}

TEST_CASE("docs/events.schema.json describes every type and every field the structs write") {
  std::ifstream in(DDP_EVENTS_SCHEMA);
  REQUIRE(in);
  const auto schema = json::parse(in);
  const auto& defs = schema.at("$defs");
  std::set<std::string> written;
  for (const auto& payload : samples()) {
    if (std::holds_alternative<ev::Unknown>(payload)) continue;
    auto j = ev::to_json({payload, 1});
    const auto type = j["event"].get<std::string>();
    written.insert(type);
    CAPTURE(j.dump());
    REQUIRE(defs.contains(type));
    const auto& def = defs[type];
    CHECK(def["properties"]["event"]["const"] == type);
    for (const auto& [key, value] : j.items()) CHECK_MESSAGE(def["properties"].contains(key), key);
    for (const auto& key : def["required"]) CHECK_MESSAGE(j.contains(key.get<std::string>()), key);
  }
  std::set<std::string> described;
  for (const auto& [type, def] : defs.items()) described.insert(type);
  CHECK(written == described);
  CHECK(schema["oneOf"].size() == defs.size());
}
