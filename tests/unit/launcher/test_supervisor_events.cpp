// launcher/supervisor/supervisor_events: the supervisor's values become the fields the event file has always
// had (the JSON below is what a reader — the daemon, tests, docs/events.schema.json — relies on).
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "launcher/supervisor/supervisor_events.hpp"

using namespace ddp;
using namespace ddp::launcher;
using nlohmann::json;

namespace {
json fields(events::Payload p) {
  auto j = events::to_json(events::Event{std::move(p), 12.5});
  j.erase("time");
  j.erase("v");
  return j;
}
}  // namespace

TEST_CASE("supervisor events: started says the config and what starting found") {
  SupervisorConfig c;
  c.run_id = "r1";
  c.plan.nproc_per_node = 2;
  c.plan.node_rank = 0;
  c.store_mode = StoreMode::File;
  c.master_addr = "127.0.0.1";
  c.run_dir = "/tmp/run";
  StartFacts f{.world_size = 2,
               .filestore = "/tmp/run/filestore",
               .master_port = 29500,
               .supervisor_pid = 42,
               .cgroup = std::nullopt,
               .memory_cgroup = false};
  auto j = fields(started_event(c, f));
  CHECK(j == json::parse(R"({"event":"started","run_id":"r1","world_size":2,"nproc":2,"node_rank":0,
      "store":"file","filestore":"/tmp/run/filestore","master_addr":"127.0.0.1","master_port":29500,
      "supervisor_pid":42,"run_dir":"/tmp/run","log_dir":null,"cgroup":null,"memory_cgroup":false})"));
  c.redirects = {3, 3};  // per-rank files: the run dir is also the log dir
  f.cgroup = "/sys/fs/cgroup/ddp";
  f.memory_cgroup = true;
  j = fields(started_event(c, f));
  CHECK(j["log_dir"] == "/tmp/run");
  CHECK(j["cgroup"] == "/sys/fs/cgroup/ddp");
  CHECK(j["memory_cgroup"] == true);
}

TEST_CASE("supervisor events: a static rendezvous names its attempt, a dynamic round its round and node") {
  CHECK(fields(rendezvous_complete_event(3, 8, 2)) ==
        json::parse(R"({"event":"rendezvous_complete","attempt":3,"world_size":8,"nodes":2})"));
  RoundAssignment a;
  a.round = 4;
  a.node_rank = 1;
  a.nnodes = 2;
  a.world_size = 4;
  CHECK(fields(rendezvous_complete_event(a)) ==
        json::parse(R"({"event":"rendezvous_complete","round":4,"node_rank":1,"world_size":4,"nodes":2})"));
}

TEST_CASE("supervisor events: root cause by exit code or by signal, with the error file's message") {
  RootCauseEvent rc{.attempt = 1,
                    .rank = 5,
                    .exit = RankExit{.local_rank = 1, .pid = 99, .exit_code = 3},
                    .role = "original failure",
                    .error = "ValueError: bad"};
  CHECK(fields(root_cause_event(rc)) == json::parse(R"({"event":"root_cause","attempt":1,"rank":5,"local_rank":1,
      "pid":99,"exit_code":3,"signal":null,"role":"original failure","error":"ValueError: bad"})"));
  rc.exit.signal = 9;
  rc.error.reset();
  auto j = fields(root_cause_event(rc));
  CHECK(j["exit_code"] == nullptr);
  CHECK(j["signal"] == "SIGKILL");
  CHECK(j["error"] == nullptr);
}

TEST_CASE("supervisor events: a hang names the suspect first, every silent rank's seconds, who progressed") {
  HangVerdict v;
  v.attempt = 2;
  v.silent = {{5, 1, 7.5}, {4, 0, 7.25}};
  v.progressing = {6};
  v.timeout_s = 5;
  v.setting = "5s";
  v.first_by_s = 0.25;
  auto e = hang_detected_event(v, std::nullopt);
  CHECK(e == events::HangDetected{2, 5, {5, 4}, {7.5, 7.25}, {6}, 0.25, "5s", 5.0, std::nullopt});
  CHECK(hang_detected_event(v, std::string("/r/stacks")).stacks_file == "/r/stacks");
}

TEST_CASE("supervisor events: GPU samples in MiB, a low-utilisation alert in seconds") {
  GpuSample s;
  s.local_rank = 1;
  s.rank = 3;
  s.device = "0";
  s.sample.util_percent = 40;
  s.sample.mem_used_bytes = 512ull << 20;
  s.sample.mem_total_bytes = 1024ull << 20;
  CHECK(fields(gpu_sample_event(s)) == json::parse(R"({"event":"gpu_sample","rank":3,"local_rank":1,"device":"0",
      "util":40,"mem_used_mib":512.0,"mem_total_mib":1024.0})"));
  auto j = fields(gpu_low_util_event(s, LowUtilAlert{.mean_util = 12.5, .lasted = std::chrono::milliseconds(1500)},
                                     "rank 3 is idle"));
  CHECK(j == json::parse(R"({"event":"gpu_low_util","rank":3,"local_rank":1,"device":"0","mean_util":12.5,
      "seconds":1.5,"message":"rank 3 is idle"})"));
}

TEST_CASE("straggler: the attempt and the verdict's rank, ratio and both step times") {
  auto j =
      fields(straggler_event(2, StragglerVerdict{.rank = 1, .ratio = 0.25, .median_step_s = 0.1, .rank_step_s = 0.4}));
  CHECK(j == json::parse(R"({"event":"straggler","attempt":2,"rank":1,"ratio":0.25,"median_step_s":0.1,
      "rank_step_s":0.4})"));
}

TEST_CASE("supervisor events: timer_expired names the pid, its rank, the scope, the deadline and the signal") {
  TimerExpiry e{.pid = 4242, .rank = 1, .scope_id = "/w/train.py#12", .expiration_time = 1796318085.25, .signal = 9};
  CHECK(fields(timer_expired_event(0, e)) == json::parse(R"({"event":"timer_expired","attempt":0,"rank":1,"pid":4242,
      "scope_id":"/w/train.py#12","deadline":1796318085.25,"signal":"SIGKILL"})"));
  e.signal = 0;
  CHECK(fields(timer_expired_event(2, e))["signal"].is_null());
}
