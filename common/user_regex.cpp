#include "common/user_regex.hpp"

#include <re2/re2.h>

#include <array>

namespace ddp {

UserRegex::UserRegex(std::string_view pattern) : pattern_(pattern) {
  RE2::Options opts;
  opts.set_log_errors(false);
  opts.set_max_mem(64 << 20);  // room for the DFA on long lines; RE2 falls back to the NFA past it
  auto re = std::make_shared<const RE2>(re2::StringPiece(pattern.data(), pattern.size()), opts);
  if (!re->ok()) {
    error_ = re->error().empty() ? "does not compile" : re->error();
    return;
  }
  re_ = std::move(re);
}

int UserRegex::groups() const { return re_ ? re_->NumberOfCapturingGroups() : 0; }

std::optional<UserRegex::Match> UserRegex::match_at(std::string_view text, std::size_t pos) const {
  if (!re_ || pos > text.size()) return std::nullopt;
  std::array<re2::StringPiece, 2> sub;
  const int n = re_->NumberOfCapturingGroups() > 0 ? 2 : 1;
  if (!re_->Match(re2::StringPiece(text.data(), text.size()), pos, text.size(), RE2::UNANCHORED, sub.data(), n)) {
    return std::nullopt;
  }
  Match m;
  m.end = static_cast<std::size_t>(sub[0].data() - text.data()) + sub[0].size();
  const auto& v = (n == 2 && sub[1].data() != nullptr) ? sub[1] : sub[0];
  m.value = std::string_view(v.data(), v.size());
  return m;
}

std::optional<std::string_view> UserRegex::find(std::string_view text) const {
  auto m = match_at(text, 0);
  if (!m) return std::nullopt;
  return m->value;
}

bool UserRegex::search(std::string_view text) const {
  return re_ && RE2::PartialMatch(re2::StringPiece(text.data(), text.size()), *re_);
}

}  // namespace ddp
