#include <doctest/doctest.h>

#include "jobs/slurm_update.hpp"

using namespace ddp::jobs;
using ddp::slurm::parse_scontrol_job;

namespace {
RunUpdate of(const std::string& line) { return run_update_of(parse_scontrol_job(line)); }
}  // namespace

TEST_CASE("Slurm states become the run's phases, with Slurm's reason and nodes") {
  auto u = of("JobId=12 JobName=ddp-1-a JobState=PENDING Reason=Resources ExitCode=0:0 NodeList=(null)");
  CHECK(u.phase == RunUpdate::Phase::Queued);
  CHECK(u.reason == "Slurm job 12 PENDING (Resources)");
  u = of("JobId=12 JobState=RUNNING Reason=None ExitCode=0:0 NodeList=n[1-2]");
  CHECK(u.phase == RunUpdate::Phase::Running);
  CHECK(u.reason == "Slurm job 12 RUNNING on n[1-2]");
  CHECK(of("JobId=12 JobState=COMPLETING Reason=None ExitCode=0:0 NodeList=n1").phase == RunUpdate::Phase::Running);
  CHECK(of("JobId=12 JobState=REQUEUED Reason=None ExitCode=0:0").phase == RunUpdate::Phase::Queued);
}

TEST_CASE("final Slurm states end the run with its exit status") {
  auto u = of("JobId=12 JobState=COMPLETED Reason=None ExitCode=0:0 NodeList=n[1-2]");
  CHECK(u.phase == RunUpdate::Phase::Ended);
  CHECK(u.succeeded);
  CHECK(*u.exit_code == 0);
  CHECK(u.reason == "Slurm job 12 COMPLETED (ExitCode=0:0, on n[1-2])");
  u = of("JobId=12 JobState=FAILED Reason=NonZeroExitCode ExitCode=3:0 NodeList=n1");
  CHECK(!u.succeeded);
  CHECK(*u.exit_code == 3);
  CHECK(u.reason == "Slurm job 12 FAILED, NonZeroExitCode (ExitCode=3:0, on n1)");
  u = of("JobId=12 JobState=CANCELLED Reason=None ExitCode=0:15 NodeList=n1");
  CHECK(u.phase == RunUpdate::Phase::Ended);
  CHECK(*u.exit_code == 143);
  for (const char* state : {"TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "PREEMPTED"}) {
    u = of(std::string("JobId=12 JobState=") + state + " Reason=None ExitCode=0:0");
    INFO(state);
    CHECK(u.phase == RunUpdate::Phase::Ended);
    CHECK(!u.succeeded);
    CHECK(*u.exit_code == 1);  // ended badly without a code of its own
  }
}
