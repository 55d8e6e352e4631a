// Metric lines and the @record error file: the two formats the supervisor reads from a worker.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <typeinfo>

#include "common/env_contract.hpp"
#include "worker/error_file.hpp"
#include "worker/metrics.hpp"

using namespace ddp::worker;

TEST_CASE("metric line: prefix, key=value pairs, integers without a point") {
  auto line = format_metric_line({{"step", std::int64_t{12}}, {"loss", 0.5312}, {"samples_per_s", 812.4}});
  CHECK(line == "@ddp-metric step=12 loss=0.5312 samples_per_s=812.4");
  CHECK(line.rfind(std::string(ddp::env::kMetricLinePrefix), 0) == 0);
  CHECK(format_metric_line({{"lr", 1e-5}}) == "@ddp-metric lr=1e-05");
  CHECK(format_metric_line({{"gpu.util_pct", 35.0}}) == "@ddp-metric gpu.util_pct=35");
}

TEST_CASE("metric line: non-finite values are left out; bad keys are refused") {
  auto nan = std::numeric_limits<double>::quiet_NaN();
  CHECK(format_metric_line({{"step", std::int64_t{3}}, {"loss", nan}, {"x", 1.5}}) == "@ddp-metric step=3 x=1.5");
  CHECK_THROWS_AS(format_metric_line({{"bad key", 1.0}}), std::invalid_argument);
  CHECK_THROWS_AS(format_metric_line({{"1st", 1.0}}), std::invalid_argument);
  CHECK_THROWS_AS(format_metric_line({{"a=b", 1.0}}), std::invalid_argument);
  CHECK(valid_metric_key("_x.y9"));
  CHECK_FALSE(valid_metric_key(""));
}

TEST_CASE("error file: torchrun's @record layout") {
  ErrorRecord r{"std::runtime_error: boom", std::nullopt, 1700000000, std::nullopt};
  auto j = nlohmann::json::parse(error_file_json(r));
  CHECK(j["message"]["message"] == "std::runtime_error: boom");
  CHECK(j["message"]["extraInfo"]["timestamp"] == "1700000000");
  CHECK_FALSE(j["message"]["extraInfo"].contains("py_callstack"));
  r.callstack = "frame #0";
  j = nlohmann::json::parse(error_file_json(r));
  CHECK(j["message"]["extraInfo"]["py_callstack"] == "frame #0");
  // Bytes that are not UTF-8 do not make the report throw.
  r.message = std::string("bad \xff byte");
  CHECK_NOTHROW(nlohmann::json::parse(error_file_json(r)));
}

TEST_CASE("error file: a rank that only lost its peer says so (peer_failure), others say not") {
  ErrorRecord own{"std::runtime_error: injected failure after step 3", std::nullopt, 1, std::nullopt};
  CHECK(nlohmann::json::parse(error_file_json(own))["message"]["extraInfo"]["peer_failure"] == false);
  ErrorRecord lost{
      "c10::Error: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer "
      "[127.0.0.1]:40113",
      std::nullopt, 1, std::nullopt};
  CHECK(nlohmann::json::parse(error_file_json(lost))["message"]["extraInfo"]["peer_failure"] == true);
  lost.peer_failure = false;  // the program knows better than the text
  CHECK(nlohmann::json::parse(error_file_json(lost))["message"]["extraInfo"]["peer_failure"] == false);
}

TEST_CASE("error file: written whole, into missing folders, the first error wins") {
  namespace fs = std::filesystem;
  auto dir = fs::temp_directory_path() / ("ddp_unit_errfile_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto path = (dir / "attempt_0" / "1" / "error.json").string();
  CHECK(write_error_file(path, {"First: one", std::nullopt, 1, std::nullopt}));
  CHECK_FALSE(write_error_file(path, {"Second: two", std::nullopt, 2, std::nullopt}));
  std::ifstream in(path);
  auto j = nlohmann::json::parse(in);
  CHECK(j["message"]["message"] == "First: one");
  CHECK(std::distance(fs::directory_iterator(dir / "attempt_0" / "1"), fs::directory_iterator()) == 1);
  fs::remove_all(dir);
  CHECK(demangle(typeid(std::runtime_error).name()) == "std::runtime_error");
}
