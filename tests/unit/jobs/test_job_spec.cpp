#include <doctest/doctest.h>

#include <algorithm>

#include "jobs/job_spec.hpp"
#include "jobs/run_outcome.hpp"

using namespace ddp::jobs;

namespace {
// The parse error's message, or "" when the text parses.
std::string error_of(const std::string& yaml) {
  try {
    parse_job_spec(yaml, "job.yaml");
  } catch (const JobSpecError& e) {
    return e.what();
  }
  return "";
}
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A valid name and command (lines 1-2) plus `fields` from line 3, and a part of the error it must give.
struct FieldProblem {
  const char* fields;
  const char* message;
};
void check_problems(std::initializer_list<FieldProblem> cases) {
  for (const auto& c : cases) {
    CAPTURE(c.fields);
    const auto error = error_of(std::string("name: a\ncommand: [x]\n") + c.fields);
    CAPTURE(error);
    CHECK(contains(error, c.message));
  }
}
}  // namespace

TEST_CASE("the smallest job: name and command, defaults everywhere else") {
  auto s = parse_job_spec("name: tiny\ncommand: [/usr/bin/python3, train.py]\n", "job.yaml");
  CHECK(s.name == "tiny");
  CHECK(s.command == std::vector<std::string>{"/usr/bin/python3", "train.py"});
  CHECK(s.resources.nproc_per_node == 1);
  CHECK(s.resources.gpus_per_node == 0);
  CHECK(s.resources.nodes == 1);
  CHECK(s.priority == 0);
  CHECK(s.restart.policy == RestartPolicy::Never);
  CHECK(s.executor == "local");
  CHECK_FALSE(s.timeout_s.has_value());
}

TEST_CASE("every documented field is read") {
  auto s = parse_job_spec(R"(
apiVersion: ddp/v1
name: resnet-ddp
command: [/usr/bin/python3, train.py]
args: [--epochs, 10]
workdir: /data/proj
env: {NCCL_DEBUG: WARN, SEED: 7, FLAG: true}
resources: {nproc_per_node: 2, gpus_per_node: 2, nodes: 1}
distributed:
  backend: nccl
  store: file
  max_restarts: 3
  shutdown_grace: 5s
  batch_policy: global_batch
  batch_size: 256
restart:
  policy: exit-code
  max_retries: 2
  backoff: {initial: 1s, max: 1m, factor: 3}
  retryable_exit_codes: [1, 128-255]
  no_retry_log_patterns: ["CUDA out of memory"]
limits: {timeout: 1.5h}
priority: 10
metrics: {loss: 'loss=([0-9.]+)'}
executor: local
)",
                          "job.yaml");
  CHECK(s.args == std::vector<std::string>{"--epochs", "10"});
  CHECK(s.workdir == "/data/proj");
  CHECK(s.env.at("SEED") == "7");
  CHECK(s.env.at("FLAG") == "true");
  CHECK(s.resources.gpus_per_node == 2);
  CHECK(s.distributed.backend == "nccl");
  CHECK(s.distributed.store == "file");
  CHECK(s.distributed.max_restarts == 3);
  CHECK(s.distributed.shutdown_grace_s == 5);
  CHECK(s.distributed.batch_policy == BatchPolicy::GlobalBatch);
  CHECK(s.distributed.batch_size == 256);
  CHECK(s.restart.policy == RestartPolicy::ExitCode);
  CHECK(s.restart.backoff_max_s == 60);
  CHECK(s.restart.backoff_factor == 3);
  REQUIRE(s.restart.retryable_exit_codes.size() == 2);
  CHECK(s.restart.retryable_exit_codes[1].first == 128);
  CHECK(s.restart.retryable_exit_codes[1].last == 255);
  CHECK(s.restart.no_retry_log_patterns.at(0) == "CUDA out of memory");
  CHECK(*s.timeout_s == 5400);
  CHECK(s.priority == 10);
  CHECK(s.metrics.at("loss") == "loss=([0-9.]+)");
}

TEST_CASE("unknown keys are errors at their line and column, naming the known keys") {
  check_problems({
      {"resources:\n  gpus: 2\n", "job.yaml:4:3: unknown key 'gpus' in resources"},
      {"resources:\n  gpus: 2\n", "gpus_per_node"},
      {"retries: 3\n", "job.yaml:3:1: unknown key 'retries' in the job"},
  });
}

TEST_CASE("wrong types name the expected form") {
  check_problems({
      {"resources: {nproc_per_node: two}\n",
       "job.yaml:3:29: resources.nproc_per_node must be an integer from 1 to 4096, not 'two'"},
      {"limits: {timeout: soon}\n", "a duration such as 30s"},
      {"limits: {timeout: [1]}\n", "limits.timeout must be a duration such as 30s"},
      {"restart: {backoff: {factor: x}}\n", "must be a number ≥"},
      {"env: [A, B]\n", "env must be a mapping"},
      // The run option table's choices for run --backend (tests/unit/jobs/test_job_run_options.cpp).
      {"distributed: {backend: tcp}\n", "distributed.backend must be one of gloo | nccl | mpi | ucc, not 'tcp'"},
      {"priority: high\n", "priority (higher runs first)"},
      {"resources: {nodes: 2}\n",
       "job.yaml:3:20: resources.nodes 2: a local job runs on this host alone (nodes: 1); several nodes "
       "need executor: slurm"},
  });
}

TEST_CASE("env: and metrics: are mappings of names to values, each name checked, every bad one reported") {
  check_problems({
      {"env: [A, B]\n", "job.yaml:3:6: env must be a mapping NAME: value, not a list"},
      {"env: {1A: x}\n", "job.yaml:3:7: env: '1A' is not a variable name ([A-Za-z_][A-Za-z0-9_]*)"},
      {"env: {A-B: x}\n", "env: 'A-B' is not a variable name"},
      {"env: {A: [x]}\n", "job.yaml:3:10: env.A must be a string, number or boolean, not a list"},
      {"metrics: x\n", "job.yaml:3:10: metrics must be a mapping name: 'regex with one (group)', not a scalar"},
      {"metrics: {2loss: 'l=([0-9]+)'}\n",
       "job.yaml:3:11: metrics: '2loss' is not a metric name ([A-Za-z_][A-Za-z0-9_]*)"},
      {"metrics: {loss: [x]}\n", "metrics.loss must be a regular expression (RE2 syntax), not a list"},
  });
  auto e =
      error_of("name: a\ncommand: [x]\nenv: {1A: x, B.C: y, D: z}\nmetrics: {-m: 'x=([0-9]+)', ok: 'y=([0-9]+)'}\n");
  CHECK(contains(e, "env: '1A'"));
  CHECK(contains(e, "env: 'B.C'"));
  CHECK(contains(e, "metrics: '-m'"));
  CHECK_FALSE(contains(e, "'D'"));
  CHECK_FALSE(contains(e, "'ok'"));
  auto s = parse_job_spec("name: a\ncommand: [x]\nenv: {_A1: 1}\nmetrics: {_m: 'x=([0-9]+)'}\n", "j");
  CHECK(s.env.at("_A1") == "1");
  CHECK(s.metrics.at("_m") == "x=([0-9]+)");
}

TEST_CASE("restart: lists of exit codes and log patterns name each bad item") {
  check_problems({
      {"restart: {retryable_exit_codes: 1}\n",
       "restart.retryable_exit_codes must be a list of codes or ranges, e.g. [1, 128-255], not a scalar"},
      {"restart: {retryable_exit_codes: [1, 300, 9-3, [2]]}\n",
       "job.yaml:3:37: restart.retryable_exit_codes: '300' is not a code 0..255 or a range such as 128-255"},
      {"restart: {retryable_exit_codes: [1, 300, 9-3, [2]]}\n", "restart.retryable_exit_codes: '9-3' is not"},
      {"restart: {retryable_exit_codes: [1, 300, 9-3, [2]]}\n", "restart.retryable_exit_codes: 'a list' is not"},
      {"restart: {no_retry_log_patterns: oom}\n",
       "restart.no_retry_log_patterns must be a list of regexes, e.g. ['CUDA out of memory'], not a scalar"},
      {"restart: {no_retry_log_patterns: ['(']}\n", "restart.no_retry_log_patterns item is not a valid regular"},
      {"restart: {backoff: {initial: 2s, max: 1s}}\n", "restart.backoff.max must be at least restart.backoff.initial"},
      {"restart: {backoff: {step: 1s}}\n",
       "unknown key 'step' in restart.backoff; expected one of: factor, initial, max"},
  });
  auto s =
      parse_job_spec("name: a\ncommand: [x]\nrestart: {retryable_exit_codes: [0, 3-4], backoff: {factor: 3}}\n", "j");
  REQUIRE(s.restart.retryable_exit_codes.size() == 2);
  CHECK(s.restart.retryable_exit_codes[1].first == 3);
  CHECK(s.restart.backoff_factor == 3);
}

TEST_CASE("slurm.sbatch_args: every spelling of an option the daemon sets is refused, others pass") {
  const std::string head = "name: a\ncommand: [x]\nexecutor: slurm\nslurm: {sbatch_args: [";
  for (const char* arg : {"--time", "--time=5", "-t5", "-t", "-D/tmp", "--wrap=x", "-J", "--ntasks-per-node=2"}) {
    CAPTURE(arg);
    CHECK(contains(error_of(head + arg + "]}\n"), "is set by the daemon; use "));
  }
  for (const char* arg : {"--exclusive", "--mem=8G", "--timeX", "-G2", "--tmp=1G"}) {
    CAPTURE(arg);
    CHECK(error_of(head + arg + "]}\n").empty());
  }
  CHECK(
      contains(error_of(head + "-t5]}\n"), "slurm.sbatch_args: -t is set by the daemon; use slurm.time_limit instead"));
  CHECK(contains(error_of(head + "--chdir=/x]}\n"), "--chdir is set by the daemon; use workdir instead"));
  CHECK(contains(error_of(head + "--exclusive, '']}\n"), "slurm.sbatch_args: '' is not one sbatch option"));
}

TEST_CASE("every problem is reported, in file order") {
  auto e = error_of("name: a\ncommand: [x]\npriority: x\nresources: {gpus: 1}\n");
  CHECK(contains(e, "job.yaml:3:"));
  CHECK(contains(e, "job.yaml:4:"));
  CHECK(e.find("job.yaml:3:") < e.find("job.yaml:4:"));
}

TEST_CASE("command is an argv list; a shell line only when asked with shell:") {
  CHECK(contains(error_of("name: a\ncommand: python train.py\n"), "command must be an argv list"));
  CHECK(contains(error_of("name: a\ncommand: python train.py\n"), "shell:"));
  auto s = parse_job_spec("name: a\nshell: 'echo hi | tr a-z A-Z'\n", "job.yaml");
  CHECK(s.worker_argv() == std::vector<std::string>{"/bin/sh", "-c", "echo hi | tr a-z A-Z"});
  CHECK(contains(error_of("name: a\ncommand: [x]\nshell: y\n"), "not both"));
  CHECK(contains(error_of("name: a\n"), "missing command:"));
  CHECK(contains(error_of("name: a\ncommand: [--help]\n"), "must start with the program"));
  CHECK(contains(error_of("command: [x]\n"), "missing name:"));
}

TEST_CASE("malformed YAML is an error with its position") {
  auto e = error_of("name: a\ncommand: [x\n");
  CHECK(contains(e, "job.yaml:"));
  CHECK(contains(e, "not valid YAML"));
  CHECK(contains(error_of("- just\n- a list\n"), "a job file is a YAML mapping"));
}

TEST_CASE("bad regexes and executors") {
  check_problems({
      {"metrics: {loss: 'loss=[0-9'}\n", "not a valid regular expression"},
      {"metrics: {loss: 'loss=.*'}\n", "capture group"},
      {"executor: k8s\n", "executor must be one of local | slurm, not 'k8s'"},
  });
  CHECK(error_of("name: a\ncommand: [x]\nexecutor: slurm\n").empty());
}

TEST_CASE("every duration is range-checked: no overflow into 'expired at once', no 1e-12") {
  check_problems({
      {"limits: {timeout: 10000000000}\n", "job.yaml:3:19: limits.timeout must be at most 365d, not '10000000000'"},
      {"limits: {timeout: 9.3e9s}\n", "limits.timeout must be at most 365d"},
      {"limits: {timeout: 1e-12}\n", "limits.timeout must be at least 1ms, not '1e-12'"},
      {"limits: {timeout: 0}\n", "limits.timeout must be at least 1ms"},
      {"limits: {timeout: 1e400}\n", "limits.timeout must be a duration"},
      {"distributed: {shutdown_grace: 1e-12}\n", "distributed.shutdown_grace must be 0 or at least 1ms"},
      {"distributed: {shutdown_grace: 2d}\n", "distributed.shutdown_grace must be at most 1d"},
      {"restart: {backoff: {initial: 1e-9}}\n", "restart.backoff.initial must be 0 or at least 1ms"},
      {"restart: {backoff: {initial: 1s, max: 1e12}}\n", "restart.backoff.max must be at most 30d"},
  });
  CHECK(contains(error_of("name: a\ncommand: [x]\nexecutor: slurm\nslurm: {time_limit: 10000000000d}\n"),
                 "slurm.time_limit must be at most 365d"));
  auto s = parse_job_spec("name: a\ncommand: [x]\nlimits: {timeout: 365d}\ndistributed: {shutdown_grace: 0}\n", "j");
  CHECK(*s.timeout_s == 365 * 86400.0);
  CHECK(s.distributed.shutdown_grace_s == 0);
  CHECK(*parse_job_spec("name: a\ncommand: [x]\nlimits: {timeout: 1ms}\n", "j").timeout_s == 0.001);
}

TEST_CASE("distributed.hang_timeout and on_hang: run's flags as given, run's defaults otherwise") {
  LaunchContext ctx{"/bin/ddp-launch", "1", "/l", "/e.jsonl", {}};
  auto plain = launch_argv(parse_job_spec("name: a\ncommand: [x]\n", "j"), ctx);
  CHECK(*(std::find(plain.begin(), plain.end(), "--hang-timeout") + 1) == "auto");
  CHECK(*(std::find(plain.begin(), plain.end(), "--on-hang") + 1) == "restart");
  auto s = parse_job_spec("name: a\ncommand: [x]\ndistributed: {hang_timeout: 90s, on_hang: fail}\n", "j");
  auto argv = launch_argv(s, ctx);
  auto at = std::find(argv.begin(), argv.end(), "--hang-timeout");
  REQUIRE(at != argv.end());
  CHECK(*(at + 1) == "90s");  // as written: run reads the same durations
  auto on = std::find(argv.begin(), argv.end(), "--on-hang");
  REQUIRE(on != argv.end());
  CHECK(*(on + 1) == "fail");
  CHECK(parse_job_spec("name: a\ncommand: [x]\ndistributed: {hang_timeout: off}\n", "j").distributed.hang_timeout ==
        "off");
  CHECK(parse_job_spec("name: a\ncommand: [x]\ndistributed: {hang_timeout: auto}\n", "j").distributed.hang_timeout ==
        "auto");
  check_problems({
      {"distributed: {hang_timeout: soon}\n",
       "job.yaml:3:29: distributed.hang_timeout must be auto | off or a duration"},
      {"distributed: {hang_timeout: 0}\n", "distributed.hang_timeout must be at least 1ms, not '0'"},
      {"distributed: {on_hang: retry}\n", "distributed.on_hang must be one of restart | fail"},
  });
}

TEST_CASE("a key given twice is an error at the second one, naming the first") {
  check_problems({
      {"priority: 1\npriority: 2\n", "job.yaml:4:1: duplicate key 'priority' (first given at line 3, column 1)"},
      {"env: {A: x, A: y}\n", "job.yaml:3:13: duplicate key 'A'"},
      {"resources:\n  nproc_per_node: 1\n  nproc_per_node: 4\n", "job.yaml:5:3: duplicate key 'nproc_per_node'"},
  });
  CHECK(contains(error_of("name: a\ncommand: [x]\nname: b\n"), "job.yaml:3:1: duplicate key 'name'"));
}

TEST_CASE("a NUL byte is an error, never a value cut short or a document ended early") {
  // Raw NUL: yaml-cpp would stop reading there and ignore the rest.
  CHECK(contains(error_of(std::string("name: a\ncommand: [x]\npriority: 1") + '\0' + "\nlimits: {timeout: x}\n"),
                 "job.yaml:3:12: a NUL byte"));
  // An escaped one would cut the argv item or variable where the job runs.
  check_problems({
      {"args: [\"a\\0b\"]\n", "job.yaml:3:8: this value holds a NUL character"},
      {"env: {A: \"x\\0y\"}\n", "job.yaml:3:10: this value holds a NUL character"},
  });
}

TEST_CASE("anchors and aliases are refused at their place: no cycle, no exponential expansion") {
  // An alias inside its own anchor's list: a cycle every walk of the node tree followed until the
  // stack ran out (the daemon died of SIGSEGV on these 26 bytes).
  CHECK(contains(error_of("name: bomb\ncommand: &a [*a]\n"), "job.yaml:2:10: an anchor (&name)"));
  // "Billion laughs": nine levels of ten aliases each, 10^9 strings once expanded.
  std::string laughs = "name: lol\ncommand: [x]\nl0: &l0 lol\n";
  for (int i = 1; i <= 9; ++i) {
    laughs += "l" + std::to_string(i) + ": &l" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) laughs += (k ? ",*l" : "*l") + std::to_string(i - 1);
    laughs += "]\n";
  }
  CHECK(contains(error_of(laughs), "job.yaml:3:5: an anchor (&name)"));
  // An alias alone (its anchor in a second document yaml-cpp does not read), and a merge key.
  CHECK(contains(error_of("name: a\ncommand: [x]\nargs: *nowhere\n"), "not valid YAML"));
  CHECK(contains(error_of("name: a\ncommand: [x]\nenv: &e {A: b}\nlimits: {<<: *e}\n"), "job.yaml:3:6: an anchor"));
  // Nesting deeper than any job file needs is refused before any walk of it.
  const std::string deep = std::string(5000, '[') + std::string(5000, ']');
  CHECK(contains(error_of("name: a\ncommand: [x]\nargs: " + deep + "\n"), "nested more than"));
  // Anchors named in plain text are fine.
  CHECK(error_of("name: a\ncommand: [x, '&a', '*a']\n").empty());
}

TEST_CASE("the whole message survives a NUL in a value (what() is a C string)") {
  try {
    parse_job_spec("name: a\ncommand: [x]\npriority: \"1\\0\"\nlimits: {timeout: soon}\n", "job.yaml");
    FAIL("a NUL in priority was accepted");
  } catch (const JobSpecError& e) {
    CHECK(contains(e.message(), std::string("not '1\0'", 8)));
    CHECK(contains(e.message(), "job.yaml:4:19: limits.timeout"));  // the problems after it too
  }
}

TEST_CASE("a global batch the job's ranks cannot split is refused at submit") {
  CHECK(contains(error_of("name: a\ncommand: [x]\nresources: {nproc_per_node: 3}\n"
                          "distributed: {batch_policy: global_batch, batch_size: 256}\n"),
                 "distributed.batch_size 256 cannot be split evenly across 3 ranks"));
  CHECK(error_of("name: a\ncommand: [x]\nresources: {nproc_per_node: 4}\n"
                 "distributed: {batch_policy: global_batch, batch_size: 256}\n")
            .empty());
}

TEST_CASE("JobSpec → the ddp-launch run argv and environment it implies") {
  auto s = parse_job_spec(R"(
name: a
command: [/usr/bin/python3, train.py]
args: [--lr, '0.1']
env: {A: b}
resources: {nproc_per_node: 2, gpus_per_node: 2}
distributed: {max_restarts: 1, shutdown_grace: 2.5s, store: rank0, batch_policy: per_rank_batch, batch_size: 32}
metrics: {loss: 'loss=([0-9.]+)', acc: 'acc ([0-9.]+)'}
)",
                          "job.yaml");
  LaunchContext ctx{"/bin/ddp-launch", "17", "/state/jobs/17/run-0/logs", "/state/jobs/17/run-0/events.jsonl", {2, 3}};
  auto argv = launch_argv(s, ctx);
  // The job file's run options in the option table's order (defaults included), then the daemon's.
  std::vector<std::string> expected = {"/bin/ddp-launch",
                                       "run",
                                       "--nproc-per-node",
                                       "2",
                                       "--nnodes",
                                       "1",
                                       "--max-restarts",
                                       "1",
                                       "--store",
                                       "rank0",
                                       "--shutdown-grace",
                                       "2.5s",
                                       "--hang-timeout",
                                       "auto",
                                       "--on-hang",
                                       "restart",
                                       "--max-no-progress-restarts",
                                       "3",
                                       "--restart-budget",
                                       "count",
                                       "--min-restart-interval",
                                       "0",
                                       "--gpu-release-timeout",
                                       "30s",
                                       "--backend",
                                       "gloo",
                                       "--per-rank-batch",
                                       "32",
                                       "--metric",
                                       "acc=acc ([0-9.]+)",
                                       "--metric",
                                       "loss=loss=([0-9.]+)",
                                       "--gpu-watch-interval",
                                       "5s",
                                       "--gpu-low-util",
                                       "50",
                                       "--gpu-low-window",
                                       "60s",
                                       "--warm-start",
                                       "auto",
                                       "--rdzv-id",
                                       "job-17",
                                       "--log-dir",
                                       "/state/jobs/17/run-0/logs",
                                       "--redirects",
                                       "3",
                                       "--events",
                                       "/state/jobs/17/run-0/events.jsonl",
                                       "--no-python",
                                       "/usr/bin/python3",
                                       "train.py",
                                       "--lr",
                                       "0.1"};
  CHECK(argv == expected);
  auto env = launch_env(s, ctx);
  CHECK(env.at("CUDA_VISIBLE_DEVICES") == "2,3");
  CHECK(env.at("CUDA_DEVICE_ORDER") == "PCI_BUS_ID");
  // The batch is `run`'s flag (one code path: DDP_GLOBAL_BATCH, DDP_PER_RANK_BATCH, DDP_LR_SCALE), not a variable.
  CHECK_FALSE(env.count("DDP_PER_RANK_BATCH"));
  CHECK_FALSE(env.count("DDP_GLOBAL_BATCH"));
  CHECK(env.at("A") == "b");
  CHECK(env.at("PYTHONUNBUFFERED") == "1");
  CHECK(env.at("DDP_JOB_ID") == "17");
  ctx.gpu_indices.clear();
  CHECK(launch_env(s, ctx).at("CUDA_VISIBLE_DEVICES").empty());
}

TEST_CASE("retry decisions: policy, budget, exit-code classes, no-retry log patterns, backoff") {
  auto s = parse_job_spec(
      "name: a\ncommand: [x]\nrestart: {policy: exit-code, max_retries: 2, backoff: {initial: 2s, "
      "max: 5s, factor: 3}}\n",
      "job.yaml");
  auto d = decide_retry(s, 1, 137, std::nullopt);
  CHECK(d.retry);
  CHECK(d.delay_s == 2);
  d = decide_retry(s, 2, 137, std::nullopt);
  CHECK(d.retry);
  CHECK(d.delay_s == 5);  // 6 capped at max
  CHECK_FALSE(decide_retry(s, 3, 137, std::nullopt).retry);
  CHECK(contains(decide_retry(s, 3, 137, std::nullopt).reason, "exhausted"));
  CHECK_FALSE(decide_retry(s, 1, 1, std::nullopt).retry);  // 1..127: permanent
  CHECK_FALSE(decide_retry(s, 1, 137, std::string("CUDA out of memory")).retry);
  s.restart.policy = RestartPolicy::OnFailure;
  CHECK(decide_retry(s, 1, 1, std::nullopt).retry);
  s.restart.policy = RestartPolicy::Never;
  CHECK_FALSE(decide_retry(s, 1, 137, std::nullopt).retry);
}

TEST_CASE("executor: slurm: its fields, and clear errors for bad values") {
  auto s = parse_job_spec(R"(name: big
command: [/usr/bin/python3, train.py]
executor: slurm
resources: {nodes: 4, nproc_per_node: 8, gpus_per_node: 8}
slurm:
  partition: gpu
  account: proj-1
  qos: high
  time_limit: 1.5h
  sbatch_args: [--exclusive, --mem=8G]
)",
                          "job.yaml");
  CHECK(s.executor == "slurm");
  CHECK(s.resources.nodes == 4);
  CHECK(s.slurm.partition == "gpu");
  CHECK(s.slurm.account == "proj-1");
  CHECK(s.slurm.qos == "high");
  CHECK(*s.slurm.time_limit_s == 5400);
  CHECK(s.slurm.sbatch_args == std::vector<std::string>{"--exclusive", "--mem=8G"});

  CHECK(contains(error_of("name: a\ncommand: [x]\nslurm: {partition: gpu}\n"),
                 "job.yaml:3:8: slurm: applies to executor: slurm only; add executor: slurm"));
  CHECK(contains(error_of("name: a\ncommand: [x]\nexecutor: slurm\nslurm: {partition: 'g p'}\n"),
                 "slurm.partition 'g p' must be a Slurm name"));
  CHECK(contains(error_of("name: a\ncommand: [x]\nexecutor: slurm\nslurm: {time_limit: forever}\n"),
                 "slurm.time_limit must be a duration such as 30s"));
  CHECK(contains(error_of("name: a\ncommand: [x]\nexecutor: slurm\nslurm: {time_limit: 0.2s}\n"),
                 "slurm.time_limit must be at least 1s"));
  CHECK(contains(error_of("name: a\ncommand: [x]\nexecutor: slurm\nslurm: {sbatch_args: [--output=x.out]}\n"),
                 "slurm.sbatch_args: --output is set by the daemon"));
  CHECK(contains(error_of("name: a\ncommand: [x]\nexecutor: slurm\nslurm: {sbatch_args: [-N3]}\n"),
                 "slurm.sbatch_args: -N is set by the daemon; use resources.nodes instead"));
  CHECK(contains(error_of("name: a\ncommand: [x]\nexecutor: slurm\nslurm: {sbatch_args: [exclusive]}\n"),
                 "'exclusive' is not one sbatch option"));
  CHECK(contains(error_of("name: a\ncommand: [x]\nexecutor: slurm\nslurm: {nodes: 2}\n"),
                 "unknown key 'nodes' in slurm"));
  CHECK(contains(error_of("name: a\ncommand: [x]\nexecutor: slurm\nresources: {nodes: 0}\n"),
                 "resources.nodes must be an integer from 1 to 4096"));
}

TEST_CASE("executor: slurm: the sbatch script runs one supervisor per node with the job's options") {
  auto s = parse_job_spec(R"(name: big
command: [/usr/bin/python3, train.py]
args: [--lr, '0.1']
executor: slurm
workdir: /data/w
env: {A: b}
resources: {nodes: 2, nproc_per_node: 4, gpus_per_node: 2}
distributed: {max_restarts: 1, shutdown_grace: 5s}
slurm: {partition: gpu, time_limit: 90m, sbatch_args: [--exclusive]}
)",
                          "job.yaml");
  LaunchContext ctx{"/bin/ddp-launch", "17", "/s/jobs/17/run-0/logs", "/s/jobs/17/run-0/events.jsonl", {}};
  auto b = slurm_batch_script(s, ctx, "/s/jobs/17/run-0/slurm-%j.out");
  CHECK(b.job_name == "ddp-17-big");
  CHECK(b.nodes == "2");
  CHECK(b.output == "/s/jobs/17/run-0/slurm-%j.out");
  CHECK(b.time == "0-01:30:00");
  CHECK(b.partition == "gpu");
  CHECK(b.chdir == "/data/w");
  CHECK(b.extra == std::vector<std::string>{"--gpus-per-node=2", "--exclusive"});
  CHECK(b.launcher == "/bin/ddp-launch");
  CHECK(b.run_options == std::vector<std::string>{"--nproc-per-node", "4", "--max-restarts", "1", "--store", "agent",
                                                  "--shutdown-grace", "5s", "--hang-timeout", "auto", "--on-hang",
                                                  "restart", "--max-no-progress-restarts", "3", "--restart-budget",
                                                  "count", "--min-restart-interval", "0", "--gpu-release-timeout",
                                                  "30s", "--backend", "gloo", "--gpu-watch-interval", "5s",
                                                  "--gpu-low-util", "50", "--gpu-low-window", "60s", "--warm-start",
                                                  "auto", "--no-python"});
  CHECK(b.command == std::vector<std::string>{"/usr/bin/python3", "train.py", "--lr", "0.1"});
  CHECK(b.env.at("A") == "b");
  CHECK(b.env.at("DDP_JOB_ID") == "17");
  CHECK(b.env.count("CUDA_VISIBLE_DEVICES") == 0);  // Slurm's gres decides
  auto text = ddp::slurm::render_sbatch_script(b);
  CHECK(contains(text, "exec srun --ntasks-per-node=1 --kill-on-bad-exit=1 /bin/ddp-launch run --nproc-per-node 4"));
  CHECK(slurm_time(1) == "0-00:00:01");
  CHECK(slurm_time(86400 * 2 + 61.2) == "2-00:01:02");
}
