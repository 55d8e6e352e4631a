// The command line as data: what shell completion is generated from.
#include <doctest/doctest.h>

#include <algorithm>

#include "app/bash_completion.hpp"
#include "app/cli_tree.hpp"

using namespace ddp::cli;

namespace {

const CliOption* find_option(const CliCommand& c, const std::string& name) {
  for (const auto& o : c.options) {
    if (std::find(o.names.begin(), o.names.end(), name) != o.names.end()) return &o;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("choices_in_type_name reads an IsMember set and nothing else") {
  CHECK(choices_in_type_name("TEXT:{trace,debug,info}") == std::vector<std::string>{"trace", "debug", "info"});
  CHECK(choices_in_type_name("TEXT:{a, b}") == std::vector<std::string>{"a", "b"});
  CHECK(choices_in_type_name("INT:INT in [1 - 100]").empty());
  CHECK(choices_in_type_name("TEXT").empty());
  CHECK(choices_in_type_name("TEXT:{unclosed").empty());
}

TEST_CASE("describe_cli: flags, valued options, choices, subcommands, prefix commands; hidden ones left out") {
  CLI::App app{"prog"};
  std::string level;
  app.add_option("--log-level", level, "level")->check(CLI::IsMember({"info", "warn"}));
  auto* run = app.add_subcommand("run", "run it");
  int n = 0;
  bool follow = false;
  std::string secret, script;
  run->add_option("--nproc-per-node,--nproc_per_node", n, "ranks");
  run->add_flag("-f,--follow", follow, "follow");
  run->add_option("--secret", secret, "hidden")->group("");
  run->add_option("SCRIPT", script, "positional");
  run->prefix_command();
  app.add_subcommand("internal", "hidden")->group("");

  auto tree = describe_cli(app);
  CHECK(tree.name.empty());
  REQUIRE(find_option(tree, "--log-level"));
  CHECK(find_option(tree, "--log-level")->takes_value);
  CHECK(find_option(tree, "--log-level")->choices == std::vector<std::string>{"info", "warn"});
  REQUIRE(find_option(tree, "--help"));
  CHECK_FALSE(find_option(tree, "--help")->takes_value);

  REQUIRE(tree.subcommands.size() == 1);
  const auto& r = tree.subcommands[0];
  CHECK(r.name == "run");
  CHECK(r.rest_is_command);
  REQUIRE(find_option(r, "--nproc_per_node"));
  CHECK(find_option(r, "--nproc-per-node")->takes_value);
  CHECK(find_option(r, "--nproc-per-node")->choices.empty());
  REQUIRE(find_option(r, "-f"));
  CHECK_FALSE(find_option(r, "--follow")->takes_value);
  CHECK_FALSE(find_option(r, "--secret"));
  CHECK_FALSE(find_option(r, "SCRIPT"));
}

TEST_CASE("bash_completion_script names every command, option and choice, and registers the function") {
  CliCommand root;
  root.options.push_back({{"--log-level"}, true, {"info", "warn"}});
  CliCommand run{"run", {{{"--nproc-per-node"}, true, {}}, {{"-f", "--follow"}, false, {}}}, {}, true};
  root.subcommands.push_back(run);
  auto script = bash_completion_script(root, "ddp-launch", "1.2.3");
  CHECK(script.find("# bash completion for ddp-launch 1.2.3") == 0);
  CHECK(script.find("\"\") echo \"run\" ;;") != std::string::npos);
  CHECK(script.find("\"run\") echo \"--nproc-per-node -f --follow\" ;;") != std::string::npos);
  CHECK(script.find("\"run|--nproc-per-node\") return 0 ;;") != std::string::npos);
  CHECK(script.find("\"run|--follow\") return 0") == std::string::npos);
  CHECK(script.find("\"|--log-level\") echo \"info warn\" ;;") != std::string::npos);
  CHECK(script.find("complete -F _ddp_launch ddp-launch") != std::string::npos);
}
