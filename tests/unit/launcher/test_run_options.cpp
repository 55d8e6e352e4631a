// `ddp-launch run`'s option rules (launcher/run/run_options.hpp) on made-up hosts: argv is parsed by
// run's own CLI11 registration, then plan_run turns it into the supervisor's config.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <stdlib.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "launcher/run/run_options.hpp"
#include "launcher/supervisor/supervisor_machine.hpp"
#include "slurm/slurm.hpp"

using namespace ddp::launcher;
namespace slurm = ddp::slurm;
using Argv = std::vector<std::string>;

namespace {

HostFacts test_host() {
  HostFacts f;
  f.env = {{"PATH", "/usr/bin"}, {"OMP_NUM_THREADS", "4"}};
  f.cpu_count = 8;
  f.hostname = "box";
  f.temp_dir = "/tmp";
  f.pid = 42;
  f.random_id = "abcdef01";
  f.count_gpus = [] { return std::pair{std::optional<int>(), std::string("libnvidia-ml.so.1 not found")}; };
  f.hostname_is_loopback = [] { return false; };
  f.interface_towards = [](const std::string&, std::uint16_t) { return std::optional<std::string>("eth7"); };
  f.resolve_slurm_node = [](const std::string& node) { return "10.0.0." + std::string(node == "n1" ? "1" : "9"); };
  return f;
}

// Parses `argv` (run's options then the script) as `ddp-launch run` does.
RunArgs parse(const Argv& argv) {
  CLI::App app;
  auto a = add_run_options(app);
  app.prefix_command();
  std::vector<std::string> reversed(argv.rbegin(), argv.rend());
  app.parse(reversed);
  collect_run_args(app, *a);
  return *a;
}

RunPlan plan(const Argv& argv, const HostFacts& facts = test_host()) { return plan_run(parse(argv), facts); }

std::string usage_error(const Argv& argv, const HostFacts& facts = test_host()) {
  try {
    plan(argv, facts);
  } catch (const ddp::UsageError& e) {
    return e.what();
  } catch (const CLI::ParseError& e) {  // the option table's ranges and choices, checked as CLI11 parses
    return e.what();
  }
  return "(accepted)";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

bool any_contains(const std::vector<std::string>& lines, const std::string& part) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return contains(l, part); });
}

// Sets an environment variable for one test (CLI11 reads PET_* from the process environment).
struct ScopedEnv {
  std::string name;
  ScopedEnv(std::string n, const std::string& value) : name(std::move(n)) { ::setenv(name.c_str(), value.c_str(), 1); }
  ~ScopedEnv() { ::unsetenv(name.c_str()); }
};

}  // namespace

TEST_CASE("defaults: one node, one rank, agent store on loopback, the interpreter left to choose") {
  auto p = plan({"train.py", "--lr", "0.1"});
  const auto& c = p.config;
  CHECK(c.plan.nnodes == 1);
  CHECK(c.plan.node_rank == 0);
  CHECK(c.plan.nproc_per_node == 1);
  CHECK(c.master_addr == "127.0.0.1");
  CHECK(c.master_port == 0);
  CHECK(c.store_mode == StoreMode::Agent);
  CHECK_FALSE(c.dynamic);
  CHECK(c.run_id == "none");
  CHECK(c.run_dir == "/tmp/ddp-launch-none-42");
  CHECK(c.remove_run_dir);
  CHECK(p.python_script);
  CHECK(c.worker_argv == Argv{"", "-u", "train.py", "--lr", "0.1"});
  CHECK(c.base_env.at("PATH") == "/usr/bin");
  CHECK(p.warnings.empty());
}

TEST_CASE("the script and its options: missing script, a mistyped launcher option, --no-python with --module") {
  CHECK(contains(usage_error({}), "no training script given"));
  CHECK(contains(usage_error({"--nproc-per-node", "2", "--bogus", "train.py"}), "unknown option '--bogus'"));
  CHECK(contains(usage_error({"--no-python", "-m", "pkg"}), "--no-python and --module cannot be combined"));
  CHECK(plan({"--no-python", "/bin/echo", "hi"}).config.worker_argv == Argv{"/bin/echo", "hi"});
  CHECK(plan({"-m", "pkg.train", "x"}).config.worker_argv == Argv{"", "-u", "-m", "pkg.train", "x"});
  CHECK(plan({"--python", "/opt/py", "t.py"}).config.worker_argv.front() == "/opt/py");
  auto facts = test_host();
  facts.env["PYTHON_EXEC"] = "/env/python";
  CHECK(plan({"t.py"}, facts).config.worker_argv.front() == "/env/python");
  CHECK(plan({"--python", "/flag/python", "t.py"}, facts).config.worker_argv.front() == "/flag/python");
}

TEST_CASE("--run-path runs the script with runpy.run_path, like torchrun, and wins over --no-python") {
  for (const Argv& argv : {Argv{"--run-path", "/abs/t.py", "a"}, Argv{"--run_path", "/abs/t.py", "a"},
                           Argv{"--run-path", "--no-python", "/abs/t.py", "a"}}) {
    auto p = plan(argv);
    REQUIRE(p.config.worker_argv.size() == 6);
    CHECK(p.python_script);
    CHECK(p.config.worker_argv[1] == "-u");
    CHECK(p.config.worker_argv[2] == "-c");
    CHECK(contains(p.config.worker_argv[3], "runpy.run_path(sys.argv[0], run_name='__main__')"));
    CHECK(p.config.worker_argv[4] == "/abs/t.py");
    CHECK(p.config.worker_argv[5] == "a");
  }
  CHECK(any_contains(plan({"--run-path", "--no-python", "/abs/t.py"}).warnings, "--run-path wins"));
  ScopedEnv env("PET_RUN_PATH", "1");
  CHECK(plan({"/abs/t.py"}).config.worker_argv[2] == "-c");
}

TEST_CASE("--nproc-per-node: N, cpu, gpu, auto") {
  CHECK(plan({"--nproc-per-node", "3", "t.py"}).config.plan.nproc_per_node == 3);
  CHECK(plan({"--nproc_per_node", "cpu", "t.py"}).config.plan.nproc_per_node == 8);
  auto p = plan({"--nproc-per-node", "auto", "t.py"});
  CHECK(p.config.plan.nproc_per_node == 8);
  CHECK(any_contains(p.info, "no GPUs (libnvidia-ml.so.1 not found), using one rank per CPU"));
  CHECK(contains(usage_error({"--nproc-per-node", "gpu", "t.py"}), "--nproc-per-node gpu: no GPU found"));
  auto gpus = test_host();
  gpus.count_gpus = [] { return std::pair{std::optional<int>(4), std::string()}; };
  CHECK(plan({"--nproc-per-node", "gpu", "t.py"}, gpus).config.plan.nproc_per_node == 4);
  CHECK(plan({"--nproc-per-node", "auto", "t.py"}, gpus).config.plan.nproc_per_node == 4);
  auto zero = test_host();
  zero.count_gpus = [] { return std::pair{std::optional<int>(0), std::string()}; };
  CHECK(contains(usage_error({"--nproc-per-node", "gpu", "t.py"}, zero), "NVML reports 0 devices"));
  for (const char* bad : {"0", "-1", "2x", "many"}) {
    CHECK(contains(usage_error({"--nproc-per-node", bad, "t.py"}), "is not a positive number, 'cpu', 'gpu' or 'auto'"));
  }
}

TEST_CASE("--nnodes N, --node-rank, --master-addr/--master-port (static)") {
  auto p = plan({"--nnodes", "2", "--node-rank", "1", "--master-addr", "10.1.1.1", "--master-port", "29500", "t.py"});
  CHECK(p.config.plan.nnodes == 2);
  CHECK(p.config.plan.node_rank == 1);
  CHECK(p.config.master_addr == "10.1.1.1");
  CHECK(p.config.master_port == 29500);
  CHECK(
      contains(usage_error({"--nnodes", "2", "t.py"}), "several nodes need an agreed store port: pass --master-port"));
  CHECK(contains(usage_error({"--nnodes", "0", "t.py"}), "--nnodes '0' is not a positive number"));
  CHECK(contains(usage_error({"--nnodes", "two", "t.py"}), "--nnodes 'two' is not a positive number"));
  CHECK(contains(usage_error({"--master-port", "70000", "t.py"}), "--master-port 70000 is outside 0..65535"));
  CHECK(contains(usage_error({"--nnodes", "2", "--node-rank", "2", "--master-port", "1", "t.py"}),
                 "--node-rank 2 is outside 0..1"));
  // N:N is N; MIN:MAX needs c10d.
  CHECK(plan({"--nnodes", "1:1", "t.py"}).config.plan.nnodes == 1);
  CHECK(contains(usage_error({"--nnodes", "1:2", "t.py"}), "elastic MIN:MAX membership needs --rdzv-backend c10d"));
  CHECK(contains(usage_error({"--nnodes", "3:2", "t.py"}), "MIN is larger than MAX"));
}

TEST_CASE("--rdzv-endpoint is parsed once: the static store address, or the c10d endpoint") {
  auto s = plan({"--rdzv-endpoint", "h1:1234", "t.py"});
  CHECK(s.config.master_addr == "h1");
  CHECK(s.config.master_port == 1234);
  CHECK(plan({"--rdzv_endpoint", "h2", "--master-port", "77", "t.py"}).config.master_port == 77);
  auto d = plan({"--rdzv-backend", "c10d", "--rdzv-endpoint", "h3:4000", "--nnodes", "1:3", "t.py"});
  REQUIRE(d.config.dynamic);
  CHECK(d.config.dynamic->endpoint_host == "h3");
  CHECK(d.config.dynamic->endpoint_port == 4000);
  CHECK(d.config.dynamic->policy.min_nodes == 1);
  CHECK(d.config.dynamic->policy.max_nodes == 3);
  CHECK(plan({"--rdzv-backend", "c10d", "--rdzv-endpoint", "h3", "t.py"}).config.dynamic->endpoint_port == 29400);
  // The same checks for both backends.
  for (const char* backend : {"static", "c10d"}) {
    CHECK(contains(usage_error({"--rdzv-backend", backend, "--rdzv-endpoint", "h:99999", "t.py"}),
                   "'99999' is not a port number"));
    CHECK(contains(usage_error({"--rdzv-backend", backend, "--rdzv-endpoint", "h:0", "t.py"}),
                   "'0' is not a port number"));
    CHECK(contains(usage_error({"--rdzv-backend", backend, "--rdzv-endpoint", "h:", "t.py"}), "is not a port number"));
    CHECK(contains(usage_error({"--rdzv-backend", backend, "--rdzv-endpoint", ":80", "t.py"}), "no host"));
    CHECK(contains(usage_error({"--rdzv-backend", backend, "--rdzv-endpoint", "::1:80", "t.py"}),
                   "--rdzv-endpoint '::1:80': write an IPv6 host as [ADDR]"));
  }
  // IPv6 in brackets, with or without a port (common/net.hpp parse_host_port).
  CHECK(plan({"--rdzv-endpoint", "[::1]:1234", "t.py"}).config.master_addr == "::1");
  auto v6 = plan({"--rdzv-backend", "c10d", "--rdzv-endpoint", "[::1]", "t.py"});
  REQUIRE(v6.config.dynamic);
  CHECK(v6.config.dynamic->endpoint_host == "::1");
  CHECK(v6.config.dynamic->endpoint_port == 29400);
  CHECK(contains(usage_error({"--rdzv-backend", "c10d", "t.py"}), "--rdzv-backend c10d needs --rdzv-endpoint"));
  CHECK(contains(usage_error({"--rdzv-backend", "etcd", "t.py"}),
                 "--rdzv-backend: must be one of static | c10d, not 'etcd'"));
}

TEST_CASE("--rdzv-conf: ddp-launch's keys applied, torch's other keys warned about once, unknown keys refused") {
  auto p = plan({"--rdzv-backend", "c10d", "--rdzv-endpoint", "h", "--rdzv-conf",
                 "join_timeout=5,last_call_timeout=2,keep_alive_interval=4,keep_alive_max_attempt=2,is_host=false,"
                 "exit_barrier_timeout=9,store_lost_timeout=7,connection_grace=0.5",
                 "t.py"});
  const auto& rc = *p.config.dynamic;
  CHECK(rc.policy.join_timeout == std::chrono::seconds(5));
  CHECK(rc.policy.last_call == std::chrono::seconds(2));
  CHECK(rc.policy.heartbeat_timeout == std::chrono::seconds(8));
  CHECK(rc.is_host == false);
  CHECK(rc.exit_barrier == std::chrono::seconds(9));
  CHECK(rc.store_lost_timeout == std::chrono::seconds(7));
  CHECK(rc.policy.connection_grace == std::chrono::milliseconds(500));
  CHECK(plan({"--rdzv-backend", "c10d", "--rdzv-endpoint", "h", "t.py"}).config.dynamic->policy.connection_grace ==
        std::chrono::seconds(1));
  CHECK(plan({"--rdzv-backend", "c10d", "--rdzv-endpoint", "h", "--rdzv-conf", "heartbeat_timeout=3", "t.py"})
            .config.dynamic->policy.heartbeat_timeout == std::chrono::seconds(3));
  // TorchX's dist.ddp: join_timeout=600,close_timeout=600,timeout=600.
  auto torchx = plan({"--rdzv-backend", "c10d", "--rdzv-endpoint", "h", "--rdzv-conf",
                      "join_timeout=600,close_timeout=600,timeout=600,close_timeout=1,read_timeout=60,use_libuv=1,"
                      "store_type=tcp",
                      "t.py"});
  CHECK(torchx.config.dynamic->policy.join_timeout == std::chrono::seconds(600));
  for (const char* key : {"close_timeout", "timeout", "read_timeout", "use_libuv", "store_type"}) {
    auto named = std::count_if(torchx.warnings.begin(), torchx.warnings.end(),
                               [&](const std::string& w) { return contains(w, fmt::format("--rdzv-conf {}:", key)); });
    CHECK_MESSAGE(named == 1, key);
  }
  CHECK(
      contains(usage_error({"--rdzv-backend", "c10d", "--rdzv-endpoint", "h", "--rdzv-conf", "join_timeuot=5", "t.py"}),
               "unknown key 'join_timeuot'"));
  CHECK(contains(
      usage_error({"--rdzv-backend", "c10d", "--rdzv-endpoint", "h", "--rdzv-conf", "join_timeout=-5", "t.py"}),
      "join_timeout=-5: give a positive number"));
  CHECK(
      contains(usage_error({"--rdzv-backend", "c10d", "--rdzv-endpoint", "h", "--rdzv-conf", "is_host=maybe", "t.py"}),
               "is_host=maybe: give true or false"));
  CHECK(contains(usage_error({"--rdzv-backend", "c10d", "--rdzv-endpoint", "h", "--rdzv-conf", "oops", "t.py"}),
                 "'oops' is not key=value"));
  CHECK(contains(usage_error({"--rdzv-conf", "join_timeout=5", "t.py"}), "--rdzv-conf is for --rdzv-backend c10d"));
}

TEST_CASE("--standalone: a random run id; --rdzv-id kept; --node-rank is a hint with c10d") {
  CHECK(plan({"--standalone", "t.py"}).config.run_id == "abcdef01");
  CHECK(plan({"--standalone", "--rdzv-id", "job7", "t.py"}).config.run_id == "job7");
  auto p = plan({"--rdzv-id", "a/b", "t.py"});
  CHECK(p.config.processes_file == "/tmp/ddp-launch-a_b-node0.processes.json");
  CHECK(
      plan({"--rdzv-backend", "c10d", "--rdzv-endpoint", "h", "--node-rank", "3", "t.py"}).config.dynamic->rank_hint ==
      3);
  CHECK(plan({"--rdzv-backend", "c10d", "--rdzv-endpoint", "h", "t.py"}).config.dynamic->rank_hint == -1);
}

TEST_CASE("PET_* variables are the flags' environment forms; a flag wins over its variable") {
  ScopedEnv nproc("PET_NPROC_PER_NODE", "3");
  ScopedEnv restarts("PET_MAX_RESTARTS", "2");
  ScopedEnv store("PET_STORE", "rank0");
  ScopedEnv run_dir("PET_RUN_DIR", "/tmp/keep-here");
  ScopedEnv batch("PET_GLOBAL_BATCH", "96");
  auto p = plan({"t.py"});
  CHECK(p.config.plan.nproc_per_node == 3);
  CHECK(p.config.max_restarts == 2);
  CHECK(p.config.store_mode == StoreMode::Rank0);
  CHECK(p.config.run_dir == "/tmp/keep-here");
  CHECK(p.config.base_env.at("DDP_GLOBAL_BATCH") == "96");
  CHECK(p.config.base_env.at("DDP_PER_RANK_BATCH") == "32");
  CHECK(plan({"--nproc-per-node", "2", "--store", "agent", "t.py"}).config.plan.nproc_per_node == 2);
  CHECK(plan({"--nproc-per-node", "2", "--store", "agent", "t.py"}).config.store_mode == StoreMode::Agent);
}

TEST_CASE("Slurm: node count, node rank, store host and port, run id from SLURM_*, flags win") {
  auto facts = test_host();
  facts.env.insert({{"SLURM_JOB_ID", "77"},
                    {"SLURM_STEP_ID", "0"},
                    {"SLURM_NNODES", "2"},
                    {"SLURM_NODEID", "1"},
                    {"SLURM_JOB_NODELIST", "n[1-2]"},
                    {"SLURM_NTASKS", "2"}});
  auto p = plan({"t.py"}, facts);
  CHECK(p.config.plan.nnodes == 2);
  CHECK(p.config.plan.node_rank == 1);
  CHECK(p.config.master_addr == "10.0.0.1");
  CHECK(p.config.master_port == slurm::port_for_job("77", "0"));
  CHECK(p.config.run_id == "77");
  CHECK(any_contains(p.info, "Slurm job 77 step 0"));
  auto kept = plan({"--master-port", "29999", "--rdzv-id", "mine", "t.py"}, facts);
  CHECK(kept.config.master_port == 29999);
  CHECK(kept.config.run_id == "mine");
  // An endpoint without a port leaves the port to Slurm, an IPv6 one in brackets too.
  for (const char* endpoint : {"h9", "[::1]"}) {
    CAPTURE(endpoint);
    CHECK(plan({"--rdzv-endpoint", endpoint, "t.py"}, facts).config.master_port == slurm::port_for_job("77", "0"));
  }
  CHECK(plan({"--rdzv-endpoint", "[::1]:29999", "t.py"}, facts).config.master_port == 29999);
  auto outside = plan({"--no-slurm", "t.py"}, facts);
  CHECK(outside.config.plan.nnodes == 1);
  // c10d under srun: the endpoint every node joins at comes from Slurm too.
  auto d = plan({"--rdzv-backend", "c10d", "t.py"}, facts);
  CHECK(d.config.dynamic->endpoint_host == "10.0.0.1");
  CHECK(d.config.dynamic->rank_hint == 1);
  facts.env["SLURM_NTASKS"] = "4";
  CHECK(contains(usage_error({"t.py"}, facts), "srun --ntasks-per-node=1"));
}

TEST_CASE("--redirects / --tee masks and --local-ranks-filter") {
  auto p = plan({"--nproc-per-node", "2", "--redirects", "0:3,1:0", "--tee", "2", "--local-ranks-filter", "1", "t.py"});
  CHECK(p.config.redirects == std::vector<int>{3, 0});
  CHECK(p.config.tee == std::vector<int>{2, 2});
  CHECK(p.config.console_ranks == std::vector<bool>{false, true});
  CHECK(p.config.writes_log_files());
  CHECK_FALSE(p.config.remove_run_dir);
  CHECK(any_contains(p.info, "no --log-dir: log files go under /tmp/ddp-launch-none-42"));
  CHECK(contains(usage_error({"--nproc-per-node", "2", "--redirects", "2:1", "t.py"}), "--redirects"));
  CHECK(contains(usage_error({"--tee", "9", "t.py"}), "--tee"));
  CHECK_THROWS_AS(plan({"--nproc-per-node", "2", "--local-ranks-filter", "5", "t.py"}), ddp::UsageError);
}

TEST_CASE("--log-dir, --run-dir: the run directory rules") {
  auto l = plan({"--log-dir", "/logs", "t.py"});
  CHECK(l.config.log_base_dir == "/logs");
  CHECK_FALSE(l.config.writes_log_files());  // torchrun's rule: only redirected or teed streams get files
  CHECK(plan({"--log-dir", "/logs", "--tee", "3", "t.py"}).config.writes_log_files());
  CHECK(l.config.run_dir.empty());  // made by the shell, after every rule passed
  auto r = plan({"--run-dir", "/keep", "t.py"});
  CHECK(r.config.run_dir == "/keep");
  CHECK_FALSE(r.config.writes_log_files());
  CHECK(plan({"--run-dir", "/keep", "--log-dir", "/keep", "t.py"}).config.run_dir == "/keep");
  CHECK(contains(usage_error({"--run-dir", "/a", "--log-dir", "/b", "t.py"}), "--run-dir /a and --log-dir /b differ"));
}

TEST_CASE("--store / --filestore") {
  CHECK(plan({"--store", "file", "t.py"}).config.store_mode == StoreMode::File);
  auto f = plan({"--filestore", "file:///tmp/fs", "t.py"});
  CHECK(f.config.store_mode == StoreMode::File);
  CHECK(f.config.filestore_path == "/tmp/fs");
  CHECK(contains(usage_error({"--store", "rank0", "--filestore", "/x", "t.py"}), "--filestore needs --store file"));
  CHECK(contains(usage_error({"--filestore", "file://", "t.py"}), "--filestore: give a path"));
  CHECK(contains(usage_error({"--rdzv-backend", "c10d", "--rdzv-endpoint", "h", "--store", "rank0", "t.py"}),
                 "--store agent only"));
  CHECK(contains(usage_error({"--store", "file", "--nnodes", "2", "--master-port", "5", "t.py"}),
                 "--store file is for one node"));
}

TEST_CASE("--max-restarts, --signals-to-handle, --memory-limit-per-rank, durations, --metric") {
  CHECK(plan({"--max-restarts", "3", "t.py"}).config.max_restarts == 3);
  CHECK(contains(usage_error({"--max-restarts", "-1", "t.py"}),
                 "--max-restarts: must be an integer from 0 to 1000, not '-1'"));
  CHECK(plan({"--signals-to-handle", "SIGUSR1,TERM", "t.py"}).config.handled_signals ==
        std::vector<int>{SIGUSR1, SIGTERM});
  CHECK(contains(usage_error({"--signals-to-handle", "SIGKILL", "t.py"}),
                 "'SIGKILL' is not a signal that can be handled"));
  // Numbers as kill(1) takes them, the same checks (common/signals.hpp).
  CHECK(plan({"--signals-to-handle", "15", "t.py"}).config.handled_signals == std::vector<int>{SIGTERM});
  CHECK(contains(usage_error({"--signals-to-handle", "9", "t.py"}), "'9' is not a signal that can be handled"));
  CHECK(
      contains(usage_error({"--signals-to-handle", "SIGFOO", "t.py"}), "'SIGFOO' is not a signal that can be handled"));
  CHECK(plan({"--memory-limit-per-rank", "4G", "t.py"}).config.memory_limit_per_rank == 4ull << 30);
  CHECK(
      contains(usage_error({"--memory-limit-per-rank", "abc", "t.py"}), "--memory-limit-per-rank 'abc' is not a size"));
  CHECK(plan({"--gpu-watch-interval", "500ms", "t.py"}).config.gpu_watch.interval == std::chrono::milliseconds(500));
  CHECK(plan({"--gpu-low-window", "2m", "t.py"}).config.gpu_watch.low_window == std::chrono::minutes(2));
  // One duration syntax with job files (common/duration.hpp): hours and days work here too.
  CHECK(plan({"--gpu-low-window", "2h", "t.py"}).config.gpu_watch.low_window == std::chrono::hours(2));
  CHECK(contains(usage_error({"--gpu-low-window", "soon", "t.py"}), "--gpu-low-window: must be a duration"));
  CHECK(contains(usage_error({"--gpu-low-window", "1e-12", "t.py"}), "--gpu-low-window"));
  CHECK(contains(usage_error({"--gpu-watch-interval", "1e10", "t.py"}), "--gpu-watch-interval: must be at most"));
  CHECK(plan({"--metric", "loss=loss=([0-9.]+)", "t.py"}).config.metric_patterns.size() == 1);
}

TEST_CASE("--hang-timeout SECONDS|auto|off and --on-hang restart|fail: defaults, values, clear errors") {
  auto d = plan({"train.py"}).config;
  CHECK(d.hang_timeout.mode == HangTimeout::Mode::Auto);
  CHECK(d.restart_on_hang);
  CHECK(supervisor_policy(d).restart_on_hang);
  auto c = plan({"--hang-timeout", "5", "--on-hang", "fail", "train.py"}).config;
  CHECK(c.hang_timeout.mode == HangTimeout::Mode::Fixed);
  CHECK(c.hang_timeout.fixed == std::chrono::milliseconds(5000));
  CHECK_FALSE(c.restart_on_hang);
  CHECK_FALSE(supervisor_policy(c).restart_on_hang);
  CHECK(plan({"--hang_timeout", "off", "train.py"}).config.hang_timeout.mode == HangTimeout::Mode::Off);
  CHECK(plan({"--hang-timeout", "2m", "train.py"}).config.hang_timeout.fixed == std::chrono::milliseconds(120000));
  auto bad = usage_error({"--hang-timeout", "0", "train.py"});
  CHECK(contains(bad, "--hang-timeout: must be at least 1ms, not '0'"));
  CHECK(contains(usage_error({"--hang-timeout", "never", "train.py"}),
                 "--hang-timeout: must be auto | off or a duration such as 30s"));
  CHECK(contains(usage_error({"--on-hang", "retry", "train.py"}),
                 "--on-hang: must be one of restart | fail, not 'retry'"));
}

TEST_CASE("--shutdown-grace, torchrun's --shutdown-timeout and TORCH_ELASTIC_SHUTDOWN_TIMEOUT") {
  CHECK(plan({"t.py"}).config.shutdown_grace == std::chrono::seconds(30));
  CHECK(plan({"--shutdown-grace", "5", "t.py"}).config.shutdown_grace == std::chrono::seconds(5));
  CHECK(plan({"--shutdown-timeout", "7", "t.py"}).config.shutdown_grace == std::chrono::seconds(7));
  CHECK(plan({"--shutdown_timeout", "0.5", "t.py"}).config.shutdown_grace == std::chrono::milliseconds(500));
  // A duration, as a job file's distributed.shutdown_grace (one row of the option table), at most 1d.
  CHECK(plan({"--shutdown-grace", "2m", "t.py"}).config.shutdown_grace == std::chrono::minutes(2));
  CHECK(contains(usage_error({"--shutdown-grace", "2d", "t.py"}), "--shutdown-grace: must be at most 1d"));
  auto facts = test_host();
  facts.env["TORCH_ELASTIC_SHUTDOWN_TIMEOUT"] = "12";
  CHECK(plan({"t.py"}, facts).config.shutdown_grace == std::chrono::seconds(12));
  CHECK(plan({"--shutdown-grace", "3", "t.py"}, facts).config.shutdown_grace == std::chrono::seconds(3));
  facts.env["PET_SHUTDOWN_TIMEOUT"] = "4";
  CHECK(plan({"t.py"}, facts).config.shutdown_grace == std::chrono::seconds(4));
  facts.env["PET_SHUTDOWN_TIMEOUT"] = "soon";
  CHECK(contains(usage_error({"t.py"}, facts), "PET_SHUTDOWN_TIMEOUT=soon is not a number of seconds"));
}

TEST_CASE("timeouts in seconds: infinite, NaN and far values are refused, never wrapped into a negative timer") {
  // Regression: 1e300 or "inf" overflowed the milliseconds cast (undefined behaviour: a negative or
  // zero timeout in practice).
  for (const char* far : {"1e300", "9.3e9", "inf", "nan"}) {
    CAPTURE(far);
    // (CLI11's own range check on the flags refuses inf before this.)
    if (std::string(far) != "inf") {
      CHECK(contains(usage_error({"--shutdown-grace", far, "t.py"}), "--shutdown-grace"));
      CHECK(contains(usage_error({"--rdzv-timeout", far, "t.py"}), "--rdzv-timeout"));
    }
    auto facts = test_host();
    facts.env["TORCH_ELASTIC_SHUTDOWN_TIMEOUT"] = far;
    CHECK(contains(usage_error({"t.py"}, facts), "TORCH_ELASTIC_SHUTDOWN_TIMEOUT"));
    CHECK(contains(usage_error({"--rdzv-backend", "c10d", "--rdzv-endpoint", "h", "--rdzv-conf",
                                std::string("join_timeout=") + far, "t.py"}),
                   "give a positive number of seconds, at most 365d"));
  }
  CHECK(contains(usage_error({"--rdzv-timeout", "1e300", "t.py"}), "--rdzv-timeout: must be at most 365d, not '1e300'"));
  CHECK(plan({"--rdzv-timeout", "31536000", "t.py"}).config.rendezvous_timeout == std::chrono::hours(24 * 365));
}

TEST_CASE("--global-batch / --per-rank-batch need a fixed world size") {
  auto p = plan({"--nproc-per-node", "2", "--global-batch", "256", "t.py"});
  CHECK(p.config.base_env.at("DDP_PER_RANK_BATCH") == "128");
  CHECK(any_contains(p.info, "256"));
  CHECK(contains(
      usage_error({"--rdzv-backend", "c10d", "--rdzv-endpoint", "h", "--nnodes", "1:2", "--global-batch", "8", "t.py"}),
      "need a fixed world size"));
}

TEST_CASE("--local-addr names this node; gloo's interface with several nodes when the host name is loopback") {
  CHECK(plan({"--local-addr", "10.9.9.9", "t.py"}).config.node_name == "10.9.9.9");
  auto facts = test_host();
  facts.hostname_is_loopback = [] { return true; };
  auto p = plan({"--nnodes", "2", "--master-addr", "10.1.1.1", "--master-port", "5000", "t.py"}, facts);
  CHECK(p.config.base_env.at("GLOO_SOCKET_IFNAME") == "eth7");
  CHECK(plan({"t.py"}, facts).config.base_env.count("GLOO_SOCKET_IFNAME") == 0);  // one node
  facts.env["GLOO_SOCKET_IFNAME"] = "mine";
  CHECK(plan({"--nnodes", "2", "--master-port", "5000", "t.py"}, facts).config.base_env.at("GLOO_SOCKET_IFNAME") ==
        "mine");
}

TEST_CASE("--local-addr ADDRESS with several nodes: gloo advertises it (the interface holding it)") {
  auto facts = test_host();
  facts.interface_towards = [](const std::string& host, std::uint16_t) -> std::optional<std::string> {
    if (host == "10.5.5.5") return "ib0";
    if (host == "127.0.0.1") return "lo";
    return std::nullopt;
  };
  auto p = plan({"--nnodes", "2", "--master-port", "5000", "--local-addr", "10.5.5.5", "t.py"}, facts);
  CHECK(p.config.base_env.at("GLOO_SOCKET_IFNAME") == "ib0");
  CHECK(p.config.node_name == "10.5.5.5");
  CHECK(any_contains(p.info, "--local-addr 10.5.5.5: the workers' gloo advertises it (GLOO_SOCKET_IFNAME=ib0"));
  auto d = plan({"--rdzv-backend", "c10d", "--rdzv-endpoint", "h", "--local-addr", "10.5.5.5", "t.py"}, facts);
  CHECK(d.config.base_env.at("GLOO_SOCKET_IFNAME") == "ib0");
  // One node, a loopback address, a name that is no local address: left alone.
  CHECK(plan({"--local-addr", "10.5.5.5", "t.py"}, facts).config.base_env.count("GLOO_SOCKET_IFNAME") == 0);
  CHECK(plan({"--nnodes", "2", "--master-port", "5", "--local-addr", "127.0.0.1", "t.py"}, facts)
            .config.base_env.count("GLOO_SOCKET_IFNAME") == 0);
  CHECK(plan({"--nnodes", "2", "--master-port", "5", "--local-addr", "name", "t.py"}, facts)
            .config.base_env.count("GLOO_SOCKET_IFNAME") == 0);
}

TEST_CASE("OMP_NUM_THREADS=1 is the default with several ranks on a node, unless set") {
  auto facts = test_host();
  facts.env.erase("OMP_NUM_THREADS");
  auto p = plan({"--nproc-per-node", "2", "t.py"}, facts);
  CHECK(any_contains(p.info, "OMP_NUM_THREADS is unset"));
  CHECK(plan({"--nproc-per-node", "2", "t.py"}).info.empty());
}

TEST_CASE("--logs-specs is accepted with a warning") {
  CHECK(any_contains(plan({"--logs-specs", "my_specs", "t.py"}).warnings, "own layout"));
}

TEST_CASE("--duplicate-*-filters: torchrun's comma rules, the run directory kept for the filtered logs") {
  auto p = plan({"--duplicate-stdout-filters", "loss,acc,,top1", "--duplicate_stderr_filters", "Error", "t.py"});
  CHECK(p.config.duplicate_filters.stdout_filters == std::vector<std::string>{"loss", "acc,top1"});
  CHECK(p.config.duplicate_filters.stderr_filters == std::vector<std::string>{"Error"});
  CHECK(p.warnings.empty());
  // Without --log-dir the files live in the temporary run directory, which is then kept and named.
  CHECK_FALSE(p.config.remove_run_dir);
  CHECK(p.config.writes_log_files());
  CHECK(any_contains(p.info, "no --log-dir: log files go under /tmp/ddp-launch-none-42"));
  CHECK(plan({"t.py"}).config.remove_run_dir);
  CHECK_FALSE(plan({"t.py"}).config.duplicate_filters.any());
  // An empty item would copy every line in torchrun: dropped, with a warning naming the flag.
  auto e = plan({"--duplicate-stderr-filters", "Error,", "t.py"});
  CHECK(e.config.duplicate_filters.stderr_filters == std::vector<std::string>{"Error"});
  CHECK(any_contains(e.warnings, "--duplicate-stderr-filters 'Error,': empty filters are ignored"));
  // Given twice: the last one wins, as with torchrun's argparse.
  CHECK(plan({"--duplicate-stdout-filters", "a", "--duplicate-stdout-filters", "b", "t.py"})
            .config.duplicate_filters.stdout_filters == std::vector<std::string>{"b"});
  ScopedEnv env("PET_DUPLICATE_STDOUT_FILTERS", "step");
  CHECK(plan({"t.py"}).config.duplicate_filters.stdout_filters == std::vector<std::string>{"step"});
}

TEST_CASE("TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE becomes the console prefix; unknown names are warned about") {
  auto facts = test_host();
  facts.env["TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE"] = "[${role_name}${rank}|${local_rank}]:";
  auto p = plan({"t.py"}, facts);
  CHECK(p.config.line_prefix_template == "[${role_name}${rank}|${local_rank}]:");
  CHECK(p.warnings.empty());
  facts.env["TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE"] = "[${host}:$rank $attempt]";
  auto u = plan({"t.py"}, facts);
  CHECK(u.config.line_prefix_template == "[${host}:$rank $attempt]");
  CHECK(any_contains(u.warnings, "unknown name(s) ${host}, ${attempt}, printed as written"));
  CHECK(plan({"t.py"}).config.line_prefix_template.empty());
}

TEST_CASE("a literal --rank in the script's arguments is the same for every rank: a warning with the placeholder") {
  auto p = plan({"--nproc-per-node", "2", "t.py", "--rank", "0", "--world-size", "2"});
  REQUIRE(p.warnings.size() == 1);
  CHECK(p.failure_hint == p.warnings[0]);
  CHECK(contains(p.warnings[0], "--rank 0"));
  CHECK(contains(p.warnings[0], "--rank {rank}"));
  CHECK_FALSE(contains(p.warnings[0], "--world-size 2"));  // the job's own size is right
  auto w = plan({"--nproc-per-node", "2", "t.py", "--local_rank=1", "--world_size=4"}).warnings;
  REQUIRE(w.size() == 1);
  CHECK(contains(w[0], "--local_rank={local_rank}"));
  CHECK(contains(w[0], "--world_size={world_size}"));
  CHECK(plan({"--nproc-per-node", "2", "t.py", "--rank", "{rank}", "--world-size", "{world_size}"}).warnings.empty());
  CHECK(plan({"t.py", "--rank", "0", "--world-size", "1"}).warnings.empty());  // one rank: right
  CHECK(plan({"--nproc-per-node", "2", "t.py", "--ranking", "0"}).warnings.empty());
  CHECK(plan({"--nproc-per-node", "2", "t.py", "--ranking", "0"}).failure_hint.empty());
}

TEST_CASE("--virtual-local-rank: one listed device per local rank when CUDA_VISIBLE_DEVICES is set") {
  CHECK_FALSE(plan({"t.py"}).config.virtual_local_rank);
  CHECK(plan({"--virtual-local-rank", "--nproc-per-node", "2", "t.py"}).config.virtual_local_rank);
  auto facts = test_host();
  facts.env["CUDA_VISIBLE_DEVICES"] = "3,5";
  CHECK(plan({"--virtual_local_rank", "--nproc-per-node", "2", "t.py"}, facts).config.virtual_local_rank);
  CHECK(contains(usage_error({"--virtual-local-rank", "--nproc-per-node", "3", "t.py"}, facts),
                 "CUDA_VISIBLE_DEVICES=3,5, which lists 2: give --nproc-per-node 2"));
  CHECK(plan({"--nproc-per-node", "3", "t.py"}, facts).config.plan.nproc_per_node == 3);  // only with the flag
}

TEST_CASE("--virtual-local-rank's device: the local rank's entry of CUDA_VISIBLE_DEVICES, else the local rank") {
  CHECK(visible_device_of({}, 1) == "1");
  CHECK(visible_device_of({{"CUDA_VISIBLE_DEVICES", "3, 5"}}, 0) == "3");
  CHECK(visible_device_of({{"CUDA_VISIBLE_DEVICES", "3, 5"}}, 1) == "5");
  CHECK(visible_device_of({{"CUDA_VISIBLE_DEVICES", "GPU-aa,GPU-bb"}}, 1) == "GPU-bb");
  WorkerEnvInput in;
  in.ranks.local_rank = 1;
  in.ranks.rank = 3;
  in.virtual_local_rank = true;
  in.base_env = {{"CUDA_VISIBLE_DEVICES", "4,6"}};
  auto launch = make_worker_launch(in, {"x", "{local_rank}"});
  CHECK(launch.env.at("LOCAL_RANK") == "0");
  CHECK(launch.env.at("CUDA_VISIBLE_DEVICES") == "6");
  CHECK(launch.env.at("RANK") == "3");
}

TEST_CASE("--numa-binding: CPU sets per local rank from the host's NUMA nodes") {
  auto facts = test_host();
  facts.numa_nodes = [] { return std::vector<NumaNode>{{0, {0, 1}}, {1, {2, 3}}}; };
  auto p = plan({"--nproc-per-node", "2", "--numa-binding", "node", "t.py"}, facts);
  CHECK(p.config.cpu_affinity == std::vector<std::vector<int>>{{0, 1}, {2, 3}});
  CHECK(any_contains(p.info, "--numa-binding node: local rank 0: 2 CPU(s) from 0; local rank 1: 2 CPU(s) from 2"));
  CHECK(plan({"t.py"}, facts).config.cpu_affinity.empty());
  CHECK(contains(usage_error({"--numa_binding", "core-complex", "t.py"}, facts), "--numa-binding core-complex"));
  facts.numa_nodes = [] { return std::vector<NumaNode>{}; };
  CHECK(contains(usage_error({"--numa-binding", "node", "t.py"}, facts), "no NUMA nodes"));
}

TEST_CASE("worker_env_input: one rank's input from the config, the store and the attempt (or round)") {
  ddp::launcher::SupervisorConfig c;
  c.run_id = "job7";
  c.max_restarts = 3;
  c.backend = "nccl";
  c.base_env = {{"HOME", "/root"}};
  c.virtual_local_rank = true;
  ddp::launcher::RankAssignment r;
  r.rank = 5;
  r.local_rank = 1;
  auto in = ddp::launcher::worker_env_input(c, r, "10.0.0.1", 29500, 2, "/run/attempt_2/1/error.json", "/tmp/fs");
  CHECK(in.ranks.rank == 5);
  CHECK(in.master_addr == "10.0.0.1");
  CHECK(in.master_port == 29500);
  CHECK(in.restart_count == 2);
  CHECK(in.max_restarts == 3);
  CHECK(in.run_id == "job7");
  CHECK(in.use_agent_store);
  CHECK(in.error_file == "/run/attempt_2/1/error.json");
  CHECK(in.backend == "nccl");
  CHECK(in.filestore_path.empty());  // only with --store file
  CHECK(in.base_env.at("HOME") == "/root");
  CHECK(in.virtual_local_rank);
  CHECK(in.nccl_trace_prefix == "/run/attempt_2/nccl_trace_rank_");  // beside the ranks' dirs
  c.store_mode = ddp::launcher::StoreMode::File;
  auto file = ddp::launcher::worker_env_input(c, r, "10.0.0.1", 29500, 0, "e", "/tmp/fs");
  CHECK_FALSE(file.use_agent_store);
  CHECK(file.filestore_path == "/tmp/fs");
}

TEST_CASE("the Windows build refuses what it lacks, naming the flag; Slurm's variables are not read there") {
  auto win = test_host();
  win.windows = true;
  CHECK(contains(usage_error({"--memory-limit-per-rank", "1G", "t.py"}, win), "--memory-limit-per-rank needs Linux"));
  CHECK(contains(usage_error({"--numa-binding", "node", "t.py"}, win), "--numa-binding"));
  win.env["SLURM_JOB_ID"] = "7";
  win.env["SLURM_STEP_ID"] = "0";
  win.env["SLURM_NNODES"] = "2";
  win.env["SLURM_NODEID"] = "1";
  win.env["SLURM_JOB_NODELIST"] = "n[1-2]";
  auto p = plan({"--nproc-per-node", "2", "t.py"}, win);
  CHECK(p.config.plan.nnodes == 1);
  CHECK(p.config.plan.node_rank == 0);
}

TEST_CASE("the Windows build joins c10d rendezvous; its ranks get USE_LIBUV=0 unless set and a numeric MASTER_ADDR") {
  auto win = test_host();
  win.windows = true;
  auto c10d = plan({"--rdzv-backend", "c10d", "--rdzv-endpoint", "h:1", "--nnodes", "1:2", "t.py"}, win);
  REQUIRE(c10d.config.dynamic);
  CHECK(c10d.config.dynamic->endpoint_host == "h");
  CHECK(c10d.config.base_env.at("USE_LIBUV") == "0");
  CHECK(c10d.config.numeric_master_addr);
  win.env["USE_LIBUV"] = "1";  // the user's choice stands
  CHECK(plan({"t.py"}, win).config.base_env.at("USE_LIBUV") == "1");
  auto linux_plan = plan({"t.py"});
  CHECK_FALSE(linux_plan.config.base_env.count("USE_LIBUV"));
  CHECK_FALSE(linux_plan.config.numeric_master_addr);
}

TEST_CASE("--filestore file:///C:/… on Windows is torch's Windows path") {
  auto win = test_host();
  win.windows = true;
  CHECK(plan({"--filestore", "file:///C:/runs/fs", "t.py"}, win).config.filestore_path == "C:\\runs\\fs");
  CHECK(plan({"--filestore", "C:\\runs\\fs", "t.py"}, win).config.filestore_path == "C:\\runs\\fs");
}

TEST_CASE("--warm-start: Python scripts, modules on Linux; cold: --run-path, --no-python (on: python), Windows") {
  CHECK(plan({"t.py"}).config.warm_start);
  CHECK(plan({"-m", "pkg.train"}).config.warm_start);
  CHECK(plan({"--warm-start", "on", "t.py"}).config.warm_start);
  CHECK_FALSE(plan({"--warm-start", "off", "t.py"}).config.warm_start);
  CHECK_FALSE(plan({"--run-path", "t.py"}).config.warm_start);
  CHECK_FALSE(plan({"--no-python", "prog"}).config.warm_start);
  CHECK(any_contains(plan({"--warm-start", "on", "--no-python", "prog"}).warnings, "--no-python ranks start cold"));
  CHECK(contains(usage_error({"--warm-start", "maybe", "t.py"}), "--warm-start"));
  // A --no-python command that is python running a script or module (a daemon job's command) starts
  // cold under auto, and warm under on, as `python -u …` (warm_start.hpp's form).
  CHECK_FALSE(plan({"--no-python", "/usr/bin/python3", "t.py"}).config.warm_start);
  auto on = plan({"--warm-start", "on", "--no-python", "/usr/bin/python3", "t.py", "--lr", "1"});
  CHECK(on.config.warm_start);
  CHECK(on.config.worker_argv == std::vector<std::string>{"/usr/bin/python3", "-u", "t.py", "--lr", "1"});
  CHECK(on.warnings.empty());
  CHECK_FALSE(on.python_script);  // argv[0] is the job's own program, found on PATH as such
  CHECK(plan({"--warm-start", "on", "--no-python", "python3", "-u", "-m", "pkg.train"}).config.worker_argv ==
        std::vector<std::string>{"python3", "-u", "-m", "pkg.train"});
  for (const auto& cold : std::vector<std::vector<std::string>>{{"python3", "-c", "print(1)"},
                                                                {"python3", "-X", "dev", "t.py"},
                                                                {"python3", "-m"},
                                                                {"python3"},
                                                                {"/bin/sh", "-c", "python3 t.py"},
                                                                {"python3-config", "t.py"},
                                                                {"pythonw", "t.py"}}) {
    CAPTURE(cold.front());
    CHECK_FALSE(ddp::launcher::warm_python_command(cold));
    std::vector<std::string> argv = {"--warm-start", "on", "--no-python"};
    argv.insert(argv.end(), cold.begin(), cold.end());
    auto p = plan(argv);
    CHECK_FALSE(p.config.warm_start);
    CHECK(p.config.worker_argv == cold);
    CHECK(any_contains(p.warnings, "--no-python ranks start cold"));
  }
  CHECK(ddp::launcher::warm_python_command({"/opt/venv/bin/python3.11", "t.py"}));
  {
    ScopedEnv env("DDP_WARM_START", "off");  // the ci-cold test preset's switch
    CHECK_FALSE(plan({"t.py"}).config.warm_start);
  }
  auto win = test_host();
  win.windows = true;
  CHECK_FALSE(plan({"t.py"}, win).config.warm_start);
  CHECK_FALSE(plan({"--warm-start", "off", "t.py"}, win).config.warm_start);
  CHECK(contains(usage_error({"--warm-start", "on", "t.py"}, win), "--warm-start on is Linux only"));
}
