#include <doctest/doctest.h>

#include "common/error.hpp"
#include "launcher/rendezvous/rendezvous_client_machine.hpp"
#include "launcher/workers/rank_plan.hpp"
#include "launcher/workers/worker_env.hpp"

using namespace ddp::launcher;

TEST_CASE("one node: ranks 0..n-1, rank 0 present") {
  auto plan = plan_ranks({1, 0, 4, "default"});
  REQUIRE(plan.size() == 4);
  for (int i = 0; i < 4; ++i) {
    CHECK(plan[static_cast<std::size_t>(i)].rank == i);
    CHECK(plan[static_cast<std::size_t>(i)].local_rank == i);
    CHECK(plan[static_cast<std::size_t>(i)].world_size == 4);
    CHECK(plan[static_cast<std::size_t>(i)].group_world_size == 1);
  }
}

TEST_CASE("two nodes: node 1 holds the upper half") {
  auto plan = plan_ranks({2, 1, 2, "trainer"});
  REQUIRE(plan.size() == 2);
  CHECK(plan[0].rank == 2);
  CHECK(plan[1].rank == 3);
  CHECK(plan[1].local_rank == 1);
  CHECK(plan[1].world_size == 4);
  CHECK(plan[1].local_world_size == 2);
  CHECK(plan[1].group_rank == 1);
  CHECK(plan[1].group_world_size == 2);
  CHECK(plan[1].role == "trainer");
}

TEST_CASE("bad shapes are usage errors that name the range") {
  CHECK_THROWS_AS(plan_ranks({0, 0, 1, "default"}), ddp::UsageError);
  CHECK_THROWS_AS(plan_ranks({1, 0, 0, "default"}), ddp::UsageError);
  try {
    plan_ranks({2, 2, 1, "default"});
    FAIL("expected an error");
  } catch (const ddp::UsageError& e) {
    CHECK(std::string(e.what()).find("0..1") != std::string::npos);
  }
}

TEST_CASE("worker env carries torchrun's variables") {
  WorkerEnvInput in;
  in.ranks = plan_ranks({1, 0, 2, "default"})[1];
  in.master_port = 29555;
  in.restart_count = 1;
  in.max_restarts = 3;
  in.run_id = "job7";
  in.error_file = "/tmp/run/attempt_1/1/error.json";
  in.base_env = {{"PATH", "/usr/bin"}, {"NCCL_ASYNC_ERROR_HANDLING", "0"}};
  auto w = make_worker_launch(in, {"/usr/bin/python3", "-u", "train.py"});
  CHECK(w.env.at("RANK") == "1");
  CHECK(w.env.at("LOCAL_RANK") == "1");
  CHECK(w.env.at("WORLD_SIZE") == "2");
  CHECK(w.env.at("LOCAL_WORLD_SIZE") == "2");
  CHECK(w.env.at("GROUP_RANK") == "0");
  CHECK(w.env.at("GROUP_WORLD_SIZE") == "1");
  CHECK(w.env.at("ROLE_RANK") == "1");
  CHECK(w.env.at("ROLE_WORLD_SIZE") == "2");
  CHECK(w.env.at("ROLE_NAME") == "default");
  CHECK(w.env.at("MASTER_ADDR") == "127.0.0.1");
  CHECK(w.env.at("MASTER_PORT") == "29555");
  CHECK(w.env.at("TORCHELASTIC_RESTART_COUNT") == "1");
  CHECK(w.env.at("TORCHELASTIC_MAX_RESTARTS") == "3");
  CHECK(w.env.at("TORCHELASTIC_RUN_ID") == "job7");
  CHECK(w.env.at("TORCHELASTIC_USE_AGENT_STORE") == "True");
  CHECK(w.env.at("TORCHELASTIC_ERROR_FILE") == "/tmp/run/attempt_1/1/error.json");
  CHECK(w.env.at("NCCL_ASYNC_ERROR_HANDLING") == "0");  // the user's choice stands
  CHECK(w.env.at("TORCH_NCCL_ASYNC_ERROR_HANDLING") == "1");
  CHECK(w.env.at("OMP_NUM_THREADS") == "1");
  CHECK(w.env.at("PATH") == "/usr/bin");
  CHECK(w.argv == std::vector<std::string>{"/usr/bin/python3", "-u", "train.py"});
}

TEST_CASE("OMP_NUM_THREADS: only when unset and ranks share the node") {
  CHECK(omp_threads_default({}, 2) == "1");
  CHECK_FALSE(omp_threads_default({}, 1));
  CHECK_FALSE(omp_threads_default({{"OMP_NUM_THREADS", "4"}}, 8));
}

TEST_CASE("argv placeholders for ImageNet-style scripts") {
  WorkerEnvInput in;
  in.ranks = plan_ranks({2, 1, 2, "default"})[0];
  in.master_addr = "10.1.2.3";
  in.master_port = 23456;
  auto w = make_worker_launch(
      in, {"main.py", "--dist-url", "{dist_url}", "--dist-backend", "{backend}", "--world-size", "{world_size}",
           "--rank", "{rank}", "--gpu={local_rank}", "{{literal}}", "{\"json\": 1}"});
  CHECK(w.argv == std::vector<std::string>{"main.py", "--dist-url", "tcp://10.1.2.3:23456", "--dist-backend", "gloo",
                                           "--world-size", "4", "--rank", "2", "--gpu=0", "{literal}",
                                           "{\"json\": 1}"});
}

TEST_CASE("an unknown placeholder is an error listing the known ones") {
  try {
    expand_placeholders("--x={nodes}", {{"rank", "0"}});
    FAIL("expected an error");
  } catch (const ddp::UsageError& e) {
    std::string msg = e.what();
    CHECK(msg.find("{nodes}") != std::string::npos);
    CHECK(msg.find("{rank}") != std::string::npos);
  }
}

TEST_CASE("--store file: {filestore_url} and DDP_FILESTORE_PATH only when there is a FileStore") {
  WorkerEnvInput in;
  in.ranks = plan_ranks({1, 0, 2, "default"})[1];
  CHECK_FALSE(placeholder_values(in).count("filestore_url"));
  CHECK_FALSE(make_worker_launch(in, {"x"}).env.count("DDP_FILESTORE_PATH"));
  in.filestore_path = "/tmp/run/filestore";
  auto w = make_worker_launch(in, {"main.py", "--dist-url", "{filestore_url}"});
  CHECK(w.argv == std::vector<std::string>{"main.py", "--dist-url", "file:///tmp/run/filestore"});
  CHECK(w.env.at("DDP_FILESTORE_PATH") == "/tmp/run/filestore");
}

TEST_CASE("the torch elastic timer's FIFO is exported when served; otherwise the inherited value stays") {
  WorkerEnvInput in;
  in.ranks = plan_ranks({1, 0, 2, "default"})[0];
  CHECK_FALSE(make_worker_launch(in, {"x"}).env.count("TORCHELASTIC_TIMER_FILE"));
  in.base_env["TORCHELASTIC_TIMER_FILE"] = "/inherited";  // not served: left as torch's agent leaves it
  CHECK(make_worker_launch(in, {"x"}).env.at("TORCHELASTIC_TIMER_FILE") == "/inherited");
  in.timer_file = "/run/torchelastic_timer.fifo";
  CHECK(make_worker_launch(in, {"x"}).env.at("TORCHELASTIC_TIMER_FILE") == "/run/torchelastic_timer.fifo");
}

TEST_CASE("DDP_HEARTBEAT_FILE: the rank's heartbeat file when the supervisor watches one") {
  WorkerEnvInput in;
  in.ranks = plan_ranks({1, 0, 2, "default"})[1];
  CHECK_FALSE(make_worker_launch(in, {"x"}).env.count("DDP_HEARTBEAT_FILE"));
  in.heartbeat_file = "/tmp/run/heartbeats/local_rank_1";
  CHECK(make_worker_launch(in, {"x"}).env.at("DDP_HEARTBEAT_FILE") == "/tmp/run/heartbeats/local_rank_1");
}

TEST_CASE("-r/--redirects and -t/--tee: one mask for all, or per local rank") {
  CHECK(parse_std_streams("0", 2, "--tee") == std::vector<int>{0, 0});
  CHECK(parse_std_streams("3", 3, "--tee") == std::vector<int>{3, 3, 3});
  CHECK(parse_std_streams("0:1,2:3", 4, "--redirects") == std::vector<int>{1, 0, 3, 0});
  CHECK(parse_std_streams("1:2", 2, "--redirects") == std::vector<int>{0, 2});
  for (const char* bad : {"", "4", "-1", "x", "0:4", "2:1", "0:1,", "a:1", "1:", "0:1,1", "01234567"}) {
    CAPTURE(bad);
    try {
      parse_std_streams(bad, 2, "--redirects");
      FAIL("expected a usage error");
    } catch (const ddp::UsageError& e) {
      CHECK(std::string(e.what()).find("--redirects") != std::string::npos);
    }
  }
}

TEST_CASE("--local-ranks-filter: empty shows all; listed ranks only; bad entries are errors") {
  CHECK(parse_local_ranks_filter("", 3) == std::vector<bool>{true, true, true});
  CHECK(parse_local_ranks_filter("0,2", 3) == std::vector<bool>{true, false, true});
  CHECK(parse_local_ranks_filter("1", 2) == std::vector<bool>{false, true});
  CHECK_THROWS_AS(parse_local_ranks_filter("2", 2), ddp::UsageError);
  CHECK_THROWS_AS(parse_local_ranks_filter("0,", 2), ddp::UsageError);
  CHECK_THROWS_AS(parse_local_ranks_filter("a", 2), ddp::UsageError);
}

TEST_CASE("batch placeholders: {per_rank_batch} {global_batch} {lr_scale} from the batch policy's variables") {
  WorkerEnvInput in;
  in.ranks = plan_ranks({1, 0, 2, "default"})[1];
  in.base_env = {{"DDP_PER_RANK_BATCH", "128"}, {"DDP_GLOBAL_BATCH", "256"}, {"DDP_LR_SCALE", "2"}};
  auto w =
      make_worker_launch(in, {"main.py", "-b", "{per_rank_batch}", "--global={global_batch}", "--lr-x", "{lr_scale}"});
  CHECK(w.argv == std::vector<std::string>{"main.py", "-b", "128", "--global=256", "--lr-x", "2"});
}

TEST_CASE("a batch placeholder without a batch policy names the flags that give it a value") {
  WorkerEnvInput in;
  in.ranks = plan_ranks({1, 0, 2, "default"})[0];
  for (const char* arg : {"{per_rank_batch}", "-b={global_batch}", "{lr_scale}"}) {
    try {
      make_worker_launch(in, {"main.py", arg});
      FAIL("expected a UsageError for " << arg);
    } catch (const ddp::UsageError& e) {
      std::string msg = e.what();
      CHECK(msg.find("--global-batch") != std::string::npos);
      CHECK(msg.find("--per-rank-batch") != std::string::npos);
      CHECK(msg.find(arg) != std::string::npos);
    }
  }
}

TEST_CASE("a dynamic rendezvous round: the round's node rank, nodes, first rank and world; our processes") {
  RankPlanInput configured{1, 0, 2, "trainer"};  // --nnodes 1:3 starts as node 0 of 1
  RoundAssignment round;
  round.round = 4;
  round.node_rank = 1;
  round.nnodes = 3;
  round.rank_base = 3;   // node 0 runs 3 processes in this round
  round.world_size = 7;  // 3 + 2 + 2
  round.nproc = 2;
  auto plan = plan_for_round(configured, round);
  REQUIRE(plan.size() == 2);
  CHECK(plan[0].rank == 3);
  CHECK(plan[1].rank == 4);
  CHECK(plan[1].local_rank == 1);
  CHECK(plan[1].world_size == 7);
  CHECK(plan[1].local_world_size == 2);
  CHECK(plan[1].group_rank == 1);
  CHECK(plan[1].group_world_size == 3);
  CHECK(plan[1].role == "trainer");
  CHECK(plan[1].role_world_size == 7);

  round.world_size = 4;  // a round whose ranks do not fit: the plan's own check names them
  CHECK_THROWS_AS(plan_for_round(configured, round), ddp::UsageError);
}
