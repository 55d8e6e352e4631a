#include <doctest/doctest.h>

#include "common/error.hpp"
#include "slurm/sbatch_script.hpp"

using namespace ddp::slurm;

namespace {
SbatchScript two_nodes() {
  SbatchScript s;
  s.nodes = "2";
  s.launcher = "/opt/ddp/bin/ddp-launch";
  s.run_options = {"--nproc-per-node", "2", "--python", "/usr/bin/python3"};
  s.command = {"examples/train.py", "--lr", "0.1"};
  return s;
}
bool has_line(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}
}  // namespace

TEST_CASE("sbatch script: one supervisor per node, the run options and the script passed on") {
  auto text = render_sbatch_script(two_nodes());
  INFO(text);
  CHECK(text.rfind("#!/bin/bash\n", 0) == 0);
  CHECK(has_line(text, "#SBATCH --job-name=train"));
  CHECK(has_line(text, "#SBATCH --nodes=2"));
  CHECK(has_line(text, "#SBATCH --ntasks-per-node=1"));
  CHECK(has_line(text, "#SBATCH --output=%x-%j.out"));
  CHECK(text.find("#SBATCH --time") == std::string::npos);  // not given: the partition's default
  CHECK(has_line(text,
                 "exec srun --ntasks-per-node=1 --kill-on-bad-exit=1 /opt/ddp/bin/ddp-launch run --nproc-per-node 2 "
                 "--python /usr/bin/python3 examples/train.py --lr 0.1"));
}

TEST_CASE("sbatch script: time, partition, account, qos, chdir, output and raw options pass through") {
  auto s = two_nodes();
  s.job_name = "resnet";
  s.time = "01:30:00";
  s.partition = "gpu";
  s.account = "vision";
  s.qos = "high";
  s.chdir = "/scratch/run1";
  s.output = "logs/%x-%j.log";
  s.extra = {"--exclusive", "--mem=8G"};
  auto text = render_sbatch_script(s);
  INFO(text);
  for (const char* line : {"#SBATCH --job-name=resnet", "#SBATCH --time=01:30:00", "#SBATCH --partition=gpu",
                           "#SBATCH --account=vision", "#SBATCH --qos=high", "#SBATCH --chdir=/scratch/run1",
                           "#SBATCH --output=logs/%x-%j.log", "#SBATCH --exclusive", "#SBATCH --mem=8G"}) {
    CHECK(has_line(text, line));
  }
  // Directives come before the first command: sbatch stops reading them there.
  CHECK(text.find("#SBATCH --mem=8G") < text.find("exec srun"));
}

TEST_CASE("sbatch script: arguments with spaces and quotes survive the shell") {
  auto s = two_nodes();
  s.command = {"my train.py", "--note", "it's \"fine\"", "$HOME", ""};
  auto text = render_sbatch_script(s);
  CHECK(text.find(" 'my train.py' --note 'it'\\''s \"fine\"' '$HOME' ''\n") != std::string::npos);
  CHECK(shell_quote("plain-1.0/x=y") == "plain-1.0/x=y");
  CHECK(shell_quote("a b") == "'a b'");
  CHECK(shell_quote("*") == "'*'");
}

TEST_CASE("sbatch script: bad values are usage errors naming the option") {
  auto s = two_nodes();
  s.time = "1:00\n#SBATCH --partition=evil";
  CHECK_THROWS_WITH_AS(render_sbatch_script(s), doctest::Contains("--time"), ddp::UsageError);
  s = two_nodes();
  s.job_name = "two words";
  CHECK_THROWS_WITH_AS(render_sbatch_script(s), doctest::Contains("--job-name"), ddp::UsageError);
  s = two_nodes();
  s.extra = {"exclusive"};
  CHECK_THROWS_WITH_AS(render_sbatch_script(s), doctest::Contains("--sbatch-arg"), ddp::UsageError);
  s = two_nodes();
  s.launcher = "ddp-launch";
  CHECK_THROWS_WITH_AS(render_sbatch_script(s), doctest::Contains("absolute path"), ddp::UsageError);
  s = two_nodes();
  s.command.clear();
  CHECK_THROWS_WITH_AS(render_sbatch_script(s), doctest::Contains("no training script"), ddp::UsageError);
}

TEST_CASE("sbatch helpers: nodes, job names, job ids") {
  CHECK(sbatch_nodes("2") == "2");
  CHECK(sbatch_nodes("3:3") == "3");
  CHECK(sbatch_nodes("2:4") == "2-4");
  CHECK(sbatch_nodes("2:10") == "2-10");
  CHECK_THROWS_AS(sbatch_nodes("4:2"), ddp::UsageError);
  CHECK_THROWS_AS(sbatch_nodes("0"), ddp::UsageError);
  CHECK_THROWS_AS(sbatch_nodes("x"), ddp::UsageError);
  CHECK(job_name_from_script("examples/train.py") == "train");
  CHECK(job_name_from_script("my job.sh") == "my_job");
  CHECK(job_name_from_script("torch.distributed.run") == "torch.distributed");
  CHECK(job_name_from_script("") == "ddp");
  CHECK(job_id_from_parsable("42\n") == "42");
  CHECK(job_id_from_parsable("sbatch: warning: something\n42;cluster\n") == "42");
  CHECK_THROWS_AS(job_id_from_parsable("sbatch: error: Batch job submission failed\n"), ddp::Error);
}

TEST_CASE("sbatch script: env is exported before srun, quoted; a bad name is refused") {
  auto s = two_nodes();
  s.env = {{"DDP_JOB_ID", "7"}, {"NCCL_DEBUG", "it's WARN"}};
  auto text = render_sbatch_script(s);
  INFO(text);
  CHECK(has_line(text, "export DDP_JOB_ID=7"));
  CHECK(has_line(text, "export NCCL_DEBUG='it'\\''s WARN'"));
  CHECK(text.find("export NCCL_DEBUG") < text.find("exec srun"));
  s.env = {{"1BAD", "x"}};
  CHECK_THROWS_AS(render_sbatch_script(s), ddp::UsageError);
}

TEST_CASE("sbatch run options: passed on in order, flags without a value; --nnodes becomes #SBATCH --nodes") {
  SbatchScript s;
  s.run_options = {"--left-over"};
  set_run_options(s, {{"--nproc-per-node", false, "2"},
                      {"--nnodes", false, "2:4"},
                      {"--standalone", true, ""},
                      {"--max-restarts", false, "3"}});
  CHECK(s.nodes == "2-4");
  CHECK(s.run_options == std::vector<std::string>{"--nproc-per-node", "2", "--standalone", "--max-restarts", "3"});

  SbatchScript none;
  set_run_options(none, {});
  CHECK(none.nodes == "1");
  CHECK(none.run_options.empty());
}

TEST_CASE("sbatch run options: --node-rank and a bad --nnodes are usage errors naming the option") {
  SbatchScript s;
  CHECK_THROWS_WITH_AS(set_run_options(s, {{"--node-rank", false, "1"}}),
                       doctest::Contains("--node-rank: under sbatch every node takes its rank from Slurm"),
                       ddp::UsageError);
  CHECK_THROWS_WITH_AS(set_run_options(s, {{"--nnodes", false, "4:2"}}), doctest::Contains("--nnodes '4:2'"),
                       ddp::UsageError);
}
