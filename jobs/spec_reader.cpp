#include "jobs/spec_reader.hpp"

namespace ddp::jobs {

const char* kind_name(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null: return "null";
    case YAML::NodeType::Scalar: return "a scalar";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a mapping";
    default: return "nothing";
  }
}

SpecProblem problem_at(std::string_view text, std::size_t offset, std::string message) {
  auto before = text.substr(0, offset);
  int line = 1 + static_cast<int>(std::count(before.begin(), before.end(), '\n'));
  auto nl = before.rfind('\n');
  int column = static_cast<int>(nl == std::string_view::npos ? offset + 1 : offset - nl);
  return {line, column, std::move(message)};
}

void check_keys_and_scalars(const YAML::Node& node, std::vector<SpecProblem>& problems) {
  auto at = [&](const YAML::Node& n, std::string message) {
    auto m = n.Mark();
    problems.push_back({m.is_null() ? 0 : m.line + 1, m.is_null() ? 0 : m.column + 1, std::move(message)});
  };
  if (node.IsScalar() && node.Scalar().find('\0') != std::string::npos) {
    at(node, "this value holds a NUL character (\\0), which no argument, variable or name can carry");
  } else if (node.IsSequence()) {
    for (const auto& item : node) check_keys_and_scalars(item, problems);
  } else if (node.IsMap()) {
    std::map<std::string, YAML::Mark> seen;
    for (auto it = node.begin(); it != node.end(); ++it) {
      check_keys_and_scalars(it->first, problems);
      check_keys_and_scalars(it->second, problems);
      if (!it->first.IsScalar()) continue;
      auto [first, fresh] = seen.emplace(it->first.Scalar(), it->first.Mark());
      if (!fresh) {
        at(it->first, fmt::format("duplicate key '{}' (first given at line {}, column {}); keep one of them",
                                  it->first.Scalar(), first->second.line + 1, first->second.column + 1));
      }
    }
  }
}

}  // namespace ddp::jobs
