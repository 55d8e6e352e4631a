#include "jobs/spec_reader.hpp"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include <sstream>

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

namespace {

// Stops at the first anchor, alias or over-deep collection (StructureFound).
class StructureCheck : public YAML::EventHandler {
 public:
  struct StructureFound {
    SpecProblem problem;
  };

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { anchored(mark, anchor); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override {
    found(mark,
          "an alias (*name): a job file takes no anchors or aliases (they can loop or expand without end); "
          "write the value out where it is used");
  }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor, const std::string&) override {
    anchored(mark, anchor);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    open(mark, anchor);
  }
  void OnSequenceEnd() override { --depth_; }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    open(mark, anchor);
  }
  void OnMapEnd() override { --depth_; }

 private:
  [[noreturn]] static void found(const YAML::Mark& mark, std::string message) {
    throw StructureFound{
        {mark.is_null() ? 0 : mark.line + 1, mark.is_null() ? 0 : mark.column + 1, std::move(message)}};
  }
  static void anchored(const YAML::Mark& mark, YAML::anchor_t anchor) {
    if (anchor != YAML::NullAnchor) {
      found(mark,
            "an anchor (&name): a job file takes no anchors or aliases (they can loop or expand without end); "
            "write the value out where it is used");
    }
  }
  void open(const YAML::Mark& mark, YAML::anchor_t anchor) {
    anchored(mark, anchor);
    if (++depth_ > kMaxJobNesting) {
      found(mark, fmt::format("lists and mappings nested more than {} deep: no job file needs that; is this the "
                              "right file?",
                              kMaxJobNesting));
    }
  }

  int depth_ = 0;
};

}  // namespace

std::optional<SpecProblem> structure_problem(const std::string& yaml) {
  std::istringstream in(yaml);
  YAML::Parser parser(in);
  StructureCheck check;
  try {
    parser.HandleNextDocument(check);
  } catch (const StructureCheck::StructureFound& f) {
    return f.problem;
  }
  return std::nullopt;
}

}  // namespace ddp::jobs
