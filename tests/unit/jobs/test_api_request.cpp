#include <doctest/doctest.h>

#include <string>

#include "jobs/api_request.hpp"
#include "jobs/daemon_metrics.hpp"

using namespace ddp::jobs;

TEST_CASE("the manager's domain errors map to HTTP statuses in the API layer") {
  CHECK(http_status_of(JobErrorKind::NotFound) == 404);
  CHECK(http_status_of(JobErrorKind::Conflict) == 409);
  CHECK(http_status_of(JobErrorKind::DoesNotFit) == 422);
  CHECK(http_status_of(JobErrorKind::Unavailable) == 503);
  std::string with_nul("job 3 already finished (state RUN\0NING)", 39);
  auto e = api_error_of(JobError(JobErrorKind::Conflict, with_nul));
  CHECK(e.status == 409);
  CHECK(e.message == with_nul);  // whole, past the NUL
}

TEST_CASE("a job file's problems become a 400 with each problem's line and column") {
  try {
    parse_job_spec("name: a\ncommand: [x]\npriority: high\n", "job.yaml");
    FAIL("the spec parsed");
  } catch (const JobSpecError& spec_error) {
    auto e = api_error_of(spec_error);
    CHECK(e.status == 400);
    CHECK(e.message.find("job.yaml:3:11: priority") == 0);
    REQUIRE(e.detail["problems"].size() == 1);
    CHECK(e.detail["problems"][0]["line"] == 3);
    CHECK(e.detail["problems"][0]["column"] == 11);
  }
}

TEST_CASE("request targets: segments and query, percent-decoded, empty pieces skipped") {
  auto t = parse_target("/v1//jobs/3/logs?rank=1&stream=std%6Fut&&follow&x=a+b");
  CHECK(t.segments == std::vector<std::string>{"v1", "jobs", "3", "logs"});
  CHECK(t.query.at("rank") == "1");
  CHECK(t.query.at("stream") == "stdout");
  CHECK(t.query.at("follow").empty());
  CHECK(t.query.at("x") == "a b");
  CHECK(t.query.size() == 4);
  CHECK(parse_target("/").segments.empty());
  CHECK(percent_decode("%zz%4") == "%zz%4");
}

TEST_CASE("job ids: digits only, 400 otherwise") {
  CHECK(parse_id("42") == 42);
  for (const char* bad : {"", "-1", "4x", "1234567890123456789"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(parse_id(bad), ApiError);
  }
}

TEST_CASE("Transfer-Encoding: chunked last, nothing before it") {
  CHECK_FALSE(transfer_coding_problem(""));
  CHECK_FALSE(transfer_coding_problem("Chunked"));
  CHECK(transfer_coding_problem("gzip")->first == 400);
  CHECK(transfer_coding_problem("chunked, gzip")->first == 400);
  CHECK(transfer_coding_problem("gzip, chunked")->first == 501);
}

TEST_CASE("Prometheus text: every series with its HELP and TYPE") {
  JobCounts c;
  c.by_state[2] = 3;  // RUNNING
  c.queue_length = 4;
  c.slots_total = 8;
  c.slots_in_use = 6;
  c.gpus_total = 2;
  c.gpus_in_use = 1;
  c.restarts_total = 5;
  c.submitted_total = 9;
  auto text = prometheus_text(c, 77);
  CHECK(text.find("# TYPE ddpd_jobs gauge\n") != std::string::npos);
  CHECK(text.find("ddpd_jobs{state=\"RUNNING\"} 3\n") != std::string::npos);
  CHECK(text.find("ddpd_jobs{state=\"CANCELLED\"} 0\n") != std::string::npos);
  for (const char* line :
       {"ddpd_queue_length 4\n", "ddpd_slots_total 8\n", "ddpd_slots_in_use 6\n", "ddpd_gpus_total 2\n",
        "ddpd_gpus_in_use 1\n", "ddpd_job_restarts_total 5\n", "ddpd_jobs_submitted_total 9\n",
        "ddpd_http_requests_total 77\n", "# TYPE ddpd_http_requests_total counter\n",
        "# HELP ddpd_queue_length Jobs waiting for slots or GPUs.\n"}) {
    CAPTURE(line);
    CHECK(text.find(line) != std::string::npos);
  }
  CHECK(text.find("# TYPE ddpd_job_straggler_ratio gauge\n") != std::string::npos);
  CHECK(text.find("ddpd_job_straggler_ratio{") == std::string::npos);  // none straggling
}

TEST_CASE("Prometheus text: a straggling rank's ratio, labelled with its job and rank") {
  JobCounts c;
  c.stragglers = {{3, 1, 0.4123456}, {12, 0, 0.5}};
  auto text = prometheus_text(c, 0);
  CHECK(text.find("ddpd_job_straggler_ratio{job=\"3\",rank=\"1\"} 0.4123\n") != std::string::npos);
  CHECK(text.find("ddpd_job_straggler_ratio{job=\"12\",rank=\"0\"} 0.5\n") != std::string::npos);
}
