#include "app/cli_tree.hpp"

namespace ddp::cli {

std::vector<std::string> choices_in_type_name(const std::string& type_name) {
  std::vector<std::string> out;
  auto open = type_name.find(":{");
  if (open == std::string::npos) return out;
  auto close = type_name.find('}', open);
  if (close == std::string::npos) return out;
  std::string item;
  for (auto i = open + 2; i < close; ++i) {
    if (type_name[i] == ',') {
      if (!item.empty()) out.push_back(item);
      item.clear();
    } else if (type_name[i] != ' ') {
      item += type_name[i];
    }
  }
  if (!item.empty()) out.push_back(item);
  return out;
}

CliCommand describe_cli(const CLI::App& app) {
  CliCommand command;
  command.name = app.get_name();
  command.rest_is_command = app.get_prefix_command();
  for (const CLI::Option* opt : app.get_options()) {
    if (!opt->nonpositional() || opt->get_group().empty()) continue;
    CliOption option;
    for (const auto& s : opt->get_snames()) option.names.push_back("-" + s);
    for (const auto& l : opt->get_lnames()) option.names.push_back("--" + l);
    option.takes_value = opt->get_items_expected_max() > 0;  // a flag expects 0 items
    if (option.takes_value) option.choices = choices_in_type_name(opt->get_type_name());
    command.options.push_back(std::move(option));
  }
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App* s) { return !s->get_group().empty(); })) {
    command.subcommands.push_back(describe_cli(*sub));
  }
  return command;
}

}  // namespace ddp::cli
