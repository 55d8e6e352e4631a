#include <doctest/doctest.h>

#include <set>

#include "common/error.hpp"
#include "slurm/slurm.hpp"

using namespace ddp::slurm;
using Names = std::vector<std::string>;

TEST_CASE("node list: plain names and single brackets") {
  CHECK(expand_nodelist("vm") == Names{"vm"});
  CHECK(expand_nodelist("a1,b2") == Names{"a1", "b2"});
  CHECK(expand_nodelist("n[1-3]") == Names{"n1", "n2", "n3"});
  CHECK(expand_nodelist("n[01-03,7]") == Names{"n01", "n02", "n03", "n7"});
  CHECK(expand_nodelist("a1,b[2-3]") == Names{"a1", "b2", "b3"});
  CHECK(expand_nodelist("n[5]") == Names{"n5"});
  CHECK(expand_nodelist("[1-2]") == Names{"1", "2"});
}

TEST_CASE("node list: zero padding is kept, widths follow the lower bound") {
  CHECK(expand_nodelist("n[08-11]") == Names{"n08", "n09", "n10", "n11"});
  CHECK(expand_nodelist("n[098-101]") == Names{"n098", "n099", "n100", "n101"});
  CHECK(expand_nodelist("n[9-10]") == Names{"n9", "n10"});
  CHECK(expand_nodelist("gpu[001,010]") == Names{"gpu001", "gpu010"});
}

TEST_CASE("node list: several bracket groups, the leftmost varies slowest; suffixes and commas between items") {
  CHECK(expand_nodelist("rack[1-2]-n[01-02]") == Names{"rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"});
  CHECK(expand_nodelist("n[1-2]-ib,login1,c[3,5-6]") == Names{"n1-ib", "n2-ib", "login1", "c3", "c5", "c6"});
  CHECK(expand_nodelist("a[1-2]b[3]c") == Names{"a1b3c", "a2b3c"});
}

TEST_CASE("node list: a large range expands in order") {
  auto names = expand_nodelist("node[0001-1024]");
  REQUIRE(names.size() == 1024);
  CHECK(names.front() == "node0001");
  CHECK(names[999] == "node1000");
  CHECK(names.back() == "node1024");
}

TEST_CASE("node list: malformed input is a clear error naming the problem and the position") {
  auto fails_with = [](const char* list, const char* needle) {
    try {
      expand_nodelist(list);
    } catch (const ddp::UsageError& e) {
      std::string what = e.what();
      INFO(what);
      CHECK(what.find(needle) != std::string::npos);
      CHECK(what.find(list) != std::string::npos);
      return;
    }
    FAIL("no error for '" << list << "'");
  };
  fails_with("n[1-3", "never closed");
  fails_with("n1-3]", "']' without '['");
  fails_with("n[1-[2]]", "nested");
  fails_with("n[]", "empty []");
  fails_with("n[1,]", "empty range");
  fails_with("n[1-]", "not a number");
  fails_with("n[a-c]", "not a number");
  fails_with("n[3-1]", "backwards");
  fails_with("a,,b", "empty name");
  fails_with("a,", "empty name");
  fails_with("n[1-2] ", "whitespace");
  fails_with("n[0-99999999]x[0-99999999]", "more than");
  fails_with("n[1-1234567890]", "too many digits");
  CHECK_THROWS_WITH_AS(expand_nodelist(""), doctest::Contains("empty"), ddp::UsageError);
  // The position counts from the start of the whole list, not of the item.
  CHECK_THROWS_WITH_AS(expand_nodelist("n[1-3],m[4-2]"), doctest::Contains("position 10"), ddp::UsageError);
}

namespace {
EnvMap srun_env(int nodes, int node_id, const std::string& list) {
  return {{"SLURM_JOB_ID", "4711"},
          {"SLURM_STEP_ID", "0"},
          {"SLURM_NNODES", std::to_string(nodes)},
          {"SLURM_STEP_NUM_NODES", std::to_string(nodes)},
          {"SLURM_NODEID", std::to_string(node_id)},
          {"SLURM_STEP_NODELIST", list},
          {"SLURM_JOB_NODELIST", list},
          {"SLURM_STEP_NUM_TASKS", std::to_string(nodes)},
          {"SLURM_NTASKS", std::to_string(nodes)},
          {"SLURM_LOCALID", "0"},
          {"SLURM_PROCID", std::to_string(node_id)}};
}
}  // namespace

TEST_CASE("SLURM_* of an srun task: absent, complete, the step's node list first") {
  CHECK_FALSE(read_slurm_env({{"PATH", "/bin"}}).has_value());
  auto t = read_slurm_env(srun_env(3, 2, "n[01-03]"));
  REQUIRE(t.has_value());
  CHECK(t->job_id == "4711");
  CHECK(t->step_id == "0");
  CHECK(t->nnodes == 3);
  CHECK(t->node_id == 2);
  CHECK(t->nodes == Names{"n01", "n02", "n03"});

  // srun -N1 inside a two-node job: the job list names both nodes, the step runs on n2 only.
  auto env = srun_env(1, 0, "n2");
  env["SLURM_JOB_NODELIST"] = "n[1-2]";
  env["SLURM_NNODES"] = "1";
  t = read_slurm_env(env);
  REQUIRE(t.has_value());
  CHECK(t->nodes == Names{"n2"});

  // A batch script: no step variables, the job's.
  t = read_slurm_env({{"SLURM_JOB_ID", "9"}, {"SLURM_NNODES", "2"}, {"SLURM_JOB_NODELIST", "c[1-2]"}});
  REQUIRE(t.has_value());
  CHECK_FALSE(t->step_id.has_value());
  CHECK(t->nnodes == 2);
}

TEST_CASE("SLURM_* that are malformed or inconsistent name the variable") {
  auto env = srun_env(2, 0, "n[1-2]");
  env["SLURM_NODEID"] = "x";
  CHECK_THROWS_WITH_AS(read_slurm_env(env), doctest::Contains("SLURM_NODEID='x'"), ddp::UsageError);
  env = srun_env(2, 0, "n[1-3]");
  CHECK_THROWS_WITH_AS(read_slurm_env(env), doctest::Contains("names 3 nodes but the step has 2"), ddp::UsageError);
  env = srun_env(2, 0, "n[1-2");
  CHECK_THROWS_WITH_AS(read_slurm_env(env), doctest::Contains("SLURM_STEP_NODELIST"), ddp::UsageError);
  env = srun_env(2, 2, "n[1-2]");
  CHECK_THROWS_WITH_AS(read_slurm_env(env), doctest::Contains("outside 0..1"), ddp::UsageError);
  CHECK_THROWS_WITH_AS(read_slurm_env({{"SLURM_JOB_ID", "3"}}), doctest::Contains("SLURM_JOB_NODELIST"),
                       ddp::UsageError);
}

TEST_CASE("the store port follows from job and step, inside the range, the same on every node") {
  CHECK(port_for_job("4711", "0") == port_for_job("4711", "0"));
  CHECK(port_for_job("4711", "0") != port_for_job("4712", "0"));
  CHECK(port_for_job("4711", "0") != port_for_job("4711", "1"));
  std::set<int> seen;
  for (int job = 1; job <= 500; ++job) {
    int p = port_for_job(std::to_string(job), "0");
    CHECK(p >= kPortBase);
    CHECK(p < kPortBase + kPortSpan);
    seen.insert(p);
  }
  CHECK(seen.size() == 500);  // consecutive jobs never share a port
  int p = port_for_job("abc", "x");
  CHECK(p >= kPortBase);
  CHECK(p < kPortBase + kPortSpan);
}

TEST_CASE("topology from Slurm: everything taken when no flag is given") {
  auto t = *read_slurm_env(srun_env(2, 1, "n[1-2]"));
  auto topo = plan_from_slurm(t, {});
  CHECK(topo.nnodes == 2);
  CHECK(topo.node_rank == 1);
  CHECK(topo.master_node == "n1");
  CHECK(topo.master_port == port_for_job("4711", "0"));
  CHECK(topo.rdzv_id == "4711");
  CHECK_FALSE(topo.warning);
  CHECK(topo.summary.find("node rank 1") != std::string::npos);
  CHECK(topo.summary.find("first of n[1-2]") != std::string::npos);
}

TEST_CASE("topology from Slurm: explicit flags win and are named in the summary") {
  auto t = *read_slurm_env(srun_env(2, 1, "n[1-2]"));
  ExplicitFlags given;
  given.master_port = true;
  given.master_addr = true;
  auto topo = plan_from_slurm(t, given);
  CHECK_FALSE(topo.master_port.has_value());
  CHECK_FALSE(topo.master_node.has_value());
  CHECK(topo.nnodes == 2);
  CHECK(topo.summary.find("kept from flags: --master-addr --master-port") != std::string::npos);
  given = {};
  given.standalone = true;
  topo = plan_from_slurm(t, given);
  CHECK_FALSE(topo.nnodes.has_value());
  CHECK_FALSE(topo.node_rank.has_value());
}

TEST_CASE("topology from Slurm: several tasks per node is an error pointing at --ntasks-per-node=1") {
  auto env = srun_env(1, 0, "n1");
  env["SLURM_STEP_NUM_TASKS"] = "2";
  env["SLURM_LOCALID"] = "1";
  auto t = *read_slurm_env(env);
  CHECK_THROWS_WITH_AS(plan_from_slurm(t, {}), doctest::Contains("--ntasks-per-node=1"), ddp::UsageError);
  ExplicitFlags given;
  given.node_rank = true;  // the user placed the groups: their call
  CHECK_NOTHROW(plan_from_slurm(t, given));
}

TEST_CASE("topology from Slurm: a batch script of a multi-node job warns and runs alone") {
  auto t = *read_slurm_env({{"SLURM_JOB_ID", "9"}, {"SLURM_NNODES", "2"}, {"SLURM_JOB_NODELIST", "c[1-2]"}});
  auto topo = plan_from_slurm(t, {});
  CHECK(topo.warning);
  CHECK(topo.summary.find("srun --ntasks-per-node=1") != std::string::npos);
  CHECK_FALSE(topo.nnodes.has_value());
  t = *read_slurm_env({{"SLURM_JOB_ID", "9"}, {"SLURM_NNODES", "1"}, {"SLURM_JOB_NODELIST", "c1"}});
  CHECK_FALSE(plan_from_slurm(t, {}).warning);
}

TEST_CASE("NodeAddr from scontrol -o show node") {
  CHECK(node_addr_from_scontrol("NodeName=n1 Arch=x86_64 CoresPerSocket=2 NodeAddr=127.0.0.1 NodeHostName=vm\n") ==
        std::optional<std::string>("127.0.0.1"));
  CHECK(node_addr_from_scontrol("NodeName=n1 NodeAddr=ib-n1.cluster Port=7000") ==
        std::optional<std::string>("ib-n1.cluster"));
  CHECK_FALSE(node_addr_from_scontrol("Node n9 not found").has_value());
  CHECK_FALSE(node_addr_from_scontrol("NodeAddr= x").has_value());
}
