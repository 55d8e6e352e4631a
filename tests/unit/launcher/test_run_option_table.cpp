// The option table (launcher/run/run_option_table.hpp) against what is derived from it: CLI11's
// registration of `run`, RunArgs' defaults, the range and choice checks, docs/run-options.md. A flag
// registered by hand next to the table, or a row without its job-file key or the reason it has none,
// fails here (the job-file side: tests/unit/jobs/test_job_run_options.cpp).
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "launcher/run/run_option_table.hpp"
#include "launcher/run/run_options.hpp"

using namespace ddp::launcher;
using Argv = std::vector<std::string>;

namespace {

std::vector<std::string> spellings(std::string_view names) {
  std::vector<std::string> out;
  std::string item;
  std::stringstream in{std::string(names)};
  while (std::getline(in, item, ',')) out.push_back(item);
  return out;
}

// "" when `run FLAG VALUE x` parses and plans on a batch node, else the message.
std::string refusal(const std::string& flag, const std::string& value) {
  try {
    plan_run(parse_run_argv({flag, value, "--no-python", "x"}), batch_node_facts(1));
    return "";
  } catch (const ddp::UsageError& e) {
    return e.what();
  }
}

}  // namespace

TEST_CASE("every option registered on `run` is a row of the table, with the same spellings and variable") {
  CLI::App app;
  auto args = add_run_options(app);
  std::set<std::string> registered;
  for (const CLI::Option* opt : app.get_options()) {
    if (opt == app.get_help_ptr()) continue;
    REQUIRE_MESSAGE(!opt->get_lnames().empty(), opt->get_name(), ": a run option without a long name");
    const std::string flag = "--" + opt->get_lnames().front();
    const RunOption* row = find_run_option(flag);
    REQUIRE_MESSAGE(row != nullptr, flag, " is registered on `run` but is no row of launcher/run/run_option_table.cpp");
    std::vector<std::string> names;
    for (const auto& s : opt->get_snames()) names.push_back("-" + s);
    for (const auto& l : opt->get_lnames()) names.push_back("--" + l);
    auto expected = spellings(row->names);
    std::sort(names.begin(), names.end());
    std::sort(expected.begin(), expected.end());
    CHECK_MESSAGE(names == expected, flag);
    CHECK_MESSAGE(opt->get_envname() == std::string(row->env), flag);
    registered.insert(row->flag());
  }
  for (const auto& row : run_option_table()) {
    CHECK_MESSAGE(registered.count(row.flag()) == 1, row.flag(), " is in the table but not registered on `run`");
  }
  CHECK(registered.size() == run_option_table().size());
}

TEST_CASE("every row has a job-file key or says why a job file has none, and a help text") {
  std::set<std::string> flags, keys;
  for (const auto& o : run_option_table()) {
    CHECK_MESSAGE(flags.insert(o.flag()).second, o.flag(), " is in the table twice");
    CHECK_MESSAGE(!o.help.empty(), o.flag());
    if (o.job_form == JobForm::None) {
      CHECK_MESSAGE(!o.not_in_jobs.empty(), o.flag(), ": give it a job_key, or not_in_jobs saying why");
      CHECK_MESSAGE(o.job_key.empty(), o.flag());
    } else {
      CHECK_MESSAGE(!o.job_key.empty(), o.flag());
      CHECK_MESSAGE(o.not_in_jobs.empty(), o.flag());
      CHECK_MESSAGE(keys.insert(std::string(o.job_key)).second, o.job_key, " is the key of two options");
    }
    if (o.type == OptionType::Choice) CHECK_MESSAGE(!o.choices.empty(), o.flag());
    if (o.type == OptionType::Duration) CHECK_MESSAGE(o.range.has_value(), o.flag());
    for (const auto& name : spellings(o.names)) CHECK_MESSAGE(find_run_option(name) == &o, name);
  }
}

TEST_CASE("RunArgs starts at the table's defaults, which are what `run` parses with no flags") {
  const RunArgs fresh;
  const RunArgs parsed = parse_run_argv({"x"});
  for (const auto& o : run_option_table()) {
    CHECK_MESSAGE(run_option_values(fresh, o) == run_option_values(parsed, o), o.flag());
    if (!o.default_value.empty()) {
      CHECK_MESSAGE(run_option_values(fresh, o) == std::vector<std::string>{std::string(o.default_value)}, o.flag());
      CHECK_MESSAGE(refusal(o.flag(), std::string(o.default_value)) == "", o.flag(), " refuses its own default");
    }
  }
}

TEST_CASE("ranges and choices come from the table: the bounds are accepted, the values beyond them refused") {
  for (const auto& o : run_option_table()) {
    CAPTURE(o.flag());
    const std::string flag = o.flag();
    for (auto choice : o.choices) {
      if (flag == "--rdzv-backend" && choice == "c10d") continue;  // needs --rdzv-endpoint too
      CHECK(refusal(flag, std::string(choice)) == "");
    }
    if (o.type == OptionType::Choice) {
      CHECK(refusal(flag, "bogus").find(fmt::format("{}: must be one of {}, not 'bogus'", flag, choices_text(o))) !=
            std::string::npos);
    }
    if (o.type == OptionType::Integer && o.range) {
      const auto lo = static_cast<long long>(o.range->min), hi = static_cast<long long>(o.range->max);
      CHECK(refusal(flag, std::to_string(lo)) == "");
      CHECK(refusal(flag, std::to_string(hi)) == "");
      CHECK(refusal(flag, std::to_string(lo - 1)) != "");
      CHECK(refusal(flag, std::to_string(hi + 1)).find(fmt::format("must be an integer from {} to {}", lo, hi)) !=
            std::string::npos);
      CHECK(refusal(flag, "1.5") != "");
    }
    if (o.type == OptionType::Duration) {
      CHECK(refusal(flag, "soon").find("must be") != std::string::npos);
      CHECK(refusal(flag, fmt::format("{}s", o.range->max * 2)).find("must be at most") != std::string::npos);
      CHECK(refusal(flag, "2m") == "");
    }
  }
}

TEST_CASE("run's resolved disagreements: --max-restarts 0..1000, --shutdown-grace a duration up to 1d") {
  CHECK(parse_run_argv({"--max-restarts", "1000", "x"}).max_restarts == 1000);
  CHECK(refusal("--max-restarts", "5000").find("--max-restarts: must be an integer from 0 to 1000, not '5000'") !=
        std::string::npos);
  CHECK(plan_run(parse_run_argv({"--shutdown-grace", "2.5s", "--no-python", "x"}), batch_node_facts(1))
            .config.shutdown_grace == std::chrono::milliseconds(2500));
  CHECK(refusal("--shutdown-grace", "2d").find("must be at most 1d") != std::string::npos);
  CHECK(refusal("--backend", "nccl") == "");
  CHECK(refusal("--backend", "etcd") != "");
}

TEST_CASE("linux-only rows are refused by the Windows build, naming why") {
  for (const auto& o : run_option_table()) {
    if (o.linux_only.empty()) continue;
    auto facts = batch_node_facts(1);
    facts.env.clear();
    facts.windows = true;
    try {
      plan_run(parse_run_argv({o.flag(), "4G", "--no-python", "x"}), facts);
      FAIL(o.flag(), " was accepted by the Windows build");
    } catch (const ddp::UsageError& e) {
      CHECK(std::string(e.what()) == fmt::format("{} {}", o.flag(), o.linux_only));
    }
  }
}

TEST_CASE("docs/run-options.md is the table's reference (DDP_UPDATE_DOCS=1 rewrites it)") {
  const std::string path = std::string(DDP_SOURCE_DIR) + "/docs/run-options.md";
  const std::string generated = run_options_markdown();
  if (const char* update = std::getenv("DDP_UPDATE_DOCS"); update && std::string(update) == "1") {
    std::ofstream(path, std::ios::binary) << generated;
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  CHECK_MESSAGE(text.str() == generated,
                "docs/run-options.md differs from the option table: DDP_UPDATE_DOCS=1 build/bin/unit_launcher "
                "-tc='*docs*' rewrites it");
}
