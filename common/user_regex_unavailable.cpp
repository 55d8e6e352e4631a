// common/user_regex.hpp in a build without RE2 (the Windows build: Debian has no RE2 for
// mingw-w64). A backtracking engine is no substitute (user_regex.hpp says why), so every pattern is
// refused with the alternative; whoever takes patterns (--metric, --duplicate-*-filters) reports it.
#include "common/user_regex.hpp"

namespace ddp {

UserRegex::UserRegex(std::string_view pattern) : pattern_(pattern) {
  error_ =
      "regular expressions over worker output are not in this build (it has no RE2: the Windows build); "
      "print @ddp-metric lines from the script instead";
}

int UserRegex::groups() const { return 0; }

std::optional<UserRegex::Match> UserRegex::match_at(std::string_view, std::size_t) const { return std::nullopt; }

std::optional<std::string_view> UserRegex::find(std::string_view) const { return std::nullopt; }

bool UserRegex::search(std::string_view) const { return false; }

}  // namespace ddp
