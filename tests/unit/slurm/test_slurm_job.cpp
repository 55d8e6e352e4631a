#include <doctest/doctest.h>

#include "common/error.hpp"
#include "slurm/slurm_job.hpp"

using namespace ddp::slurm;

// Real `scontrol -o show job` lines from Slurm 22.05.8 (the test cluster), shortened.
static const char* kFailed =
    "JobId=564993 JobName=my job UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901759 Nice=0 "
    "Account=(null) QOS=(null) JobState=FAILED Reason=NonZeroExitCode Dependency=(null) Requeue=1 Restarts=0 "
    "BatchFlag=1 Reboot=0 ExitCode=3:0 RunTime=00:00:00 NodeList=n[1-2] BatchHost=n1 NumNodes=2 "
    "TRES=cpu=2,node=2,billing=2 Command=(null) WorkDir=/tmp/x/jobs StdErr=/tmp/x/jobs/my job-564993.out "
    "StdIn=/dev/null StdOut=/tmp/x/jobs/my job-564993.out Power= \n";
static const char* kPending =
    "JobId=7 JobName=wrap JobState=PENDING Reason=Resources ExitCode=0:0 NodeList= NumNodes=2-2 "
    "StdOut=/tmp/x/slurm-7.out";

TEST_CASE("scontrol -o show job: fields, values with spaces, empty values") {
  auto j = parse_scontrol_job(kFailed);
  CHECK(j.job_id == "564993");
  CHECK(j.name == "my job");
  CHECK(j.state == "FAILED");
  CHECK(j.reason == "NonZeroExitCode");
  CHECK(j.exit_code == "3:0");
  CHECK(j.node_list == "n[1-2]");
  CHECK(j.std_out == "/tmp/x/jobs/my job-564993.out");
  CHECK(j.std_err == "/tmp/x/jobs/my job-564993.out");
  auto p = parse_scontrol_job(kPending);
  CHECK(p.state == "PENDING");
  CHECK(p.reason == "Resources");
  CHECK(p.node_list.empty());
  CHECK_THROWS_AS(parse_scontrol_job("slurm_load_jobs error: Invalid job id specified"), ddp::Error);
}

TEST_CASE("Slurm states map onto phases; exit status as a shell reports it") {
  CHECK(phase_of("PENDING") == JobPhase::Pending);
  CHECK(phase_of("REQUEUED") == JobPhase::Pending);
  CHECK(phase_of("RUNNING") == JobPhase::Running);
  CHECK(phase_of("COMPLETING") == JobPhase::Running);
  CHECK(phase_of("COMPLETED") == JobPhase::Succeeded);
  CHECK(phase_of("CANCELLED") == JobPhase::Cancelled);
  for (const char* s : {"FAILED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "PREEMPTED"}) {
    CHECK(phase_of(s) == JobPhase::Failed);
  }
  CHECK_FALSE(is_final(JobPhase::Running));
  CHECK(is_final(JobPhase::Cancelled));
  SlurmJobInfo j;
  j.state = "FAILED";
  j.exit_code = "3:0";
  CHECK(exit_status_of(j) == 3);
  j.state = "CANCELLED";
  j.exit_code = "0:15";
  CHECK(exit_status_of(j) == 143);
  j.state = "TIMEOUT";
  j.exit_code = "0:0";
  CHECK(exit_status_of(j) == 1);
  j.state = "COMPLETED";
  CHECK(exit_status_of(j) == 0);
}
