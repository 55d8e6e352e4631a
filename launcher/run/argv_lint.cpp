#include "launcher/run/argv_lint.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <string_view>

namespace ddp::launcher {
namespace {

enum class Kind { Rank, LocalRank, WorldSize };

struct RankFlag {
  std::string_view spelling;
  std::string_view placeholder;
  Kind kind;
};

// Spellings scripts use, and the placeholder that gives each rank its own value.
constexpr std::array<RankFlag, 7> kRankFlags{{{"--rank", "{rank}", Kind::Rank},
                                              {"--global-rank", "{rank}", Kind::Rank},
                                              {"--global_rank", "{rank}", Kind::Rank},
                                              {"--local-rank", "{local_rank}", Kind::LocalRank},
                                              {"--local_rank", "{local_rank}", Kind::LocalRank},
                                              {"--world-size", "{world_size}", Kind::WorldSize},
                                              {"--world_size", "{world_size}", Kind::WorldSize}}};

// A literal value is wrong when the ranks need different ones, or (world size) when it is not the
// job's.
bool is_wrong(Kind kind, std::string_view value, int world_size, int nproc_per_node) {
  switch (kind) {
    case Kind::Rank: return world_size != 1;  // 0: MIN:MAX nodes, more than one rank in the end
    case Kind::LocalRank: return nproc_per_node > 1;
    case Kind::WorldSize: return world_size > 0 && value != std::to_string(world_size);
  }
  return false;
}

bool literal_number(std::string_view v) {
  return !v.empty() && std::all_of(v.begin(), v.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
}

}  // namespace

std::optional<std::string> literal_rank_warning(const std::vector<std::string>& command, int world_size,
                                                int nproc_per_node) {
  std::vector<std::string> found, fixes;
  for (std::size_t i = 1; i < command.size(); ++i) {
    std::string_view arg = command[i];
    for (const auto& f : kRankFlags) {
      std::string_view value;
      std::string sep = " ";
      if (arg == f.spelling && i + 1 < command.size()) {
        value = command[i + 1];
      } else if (arg.size() > f.spelling.size() && arg.substr(0, f.spelling.size()) == f.spelling &&
                 arg[f.spelling.size()] == '=') {
        value = arg.substr(f.spelling.size() + 1);
        sep = "=";
      } else {
        continue;
      }
      if (!literal_number(value) || !is_wrong(f.kind, value, world_size, nproc_per_node)) continue;
      found.push_back(fmt::format("{}{}{}", f.spelling, sep, value));
      fixes.push_back(fmt::format("{}{}{}", f.spelling, sep, f.placeholder));
    }
  }
  if (found.empty()) return std::nullopt;
  return fmt::format(
      "the script's arguments hold {}, the same for every rank of this {}-rank job: the ranks cannot meet "
      "(torch waits for the missing ones until its timeout). Give each rank its own value with a placeholder: {} "
      "(or read RANK, LOCAL_RANK and WORLD_SIZE from the environment)",
      fmt::join(found, " "), world_size > 0 ? std::to_string(world_size) : std::string("multi"), fmt::join(fixes, " "));
}

}  // namespace ddp::launcher
