#pragma once
// Regular expressions written by users (--metric, YAML `metrics:`, `no_retry_log_patterns`) and
// applied to what workers print. RE2 underneath: matching takes time linear in the text and never
// recurses, so a 300 KB output line with `loss=(.*)` cannot overflow the stack the way
// std::regex's backtracking does (it did: exit 139 in `run`, a segfaulting daemon). The price is
// RE2's syntax: no backreferences and no lookaround; everything else users write for numbers in
// logs (`\s`, `\d`, classes, groups, `(?i)`) works.
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace re2 {
class RE2;
}

namespace ddp {

class UserRegex {
 public:
  // Compiles `pattern`; a pattern that does not compile leaves ok() false and error() set.
  explicit UserRegex(std::string_view pattern);

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  const std::string& pattern() const { return pattern_; }
  int groups() const;  // capture groups in the pattern

  // The first match in `text`: its first capture group when the pattern has one and it took part
  // in the match, the whole match otherwise; nullopt when nothing matches (or !ok()).
  std::optional<std::string_view> find(std::string_view text) const;

  // Whether the pattern matches anywhere in `text`.
  bool search(std::string_view text) const;

  // Calls `f(value)` for every non-overlapping match in `text`, value as in find().
  template <class F>
  void for_each(std::string_view text, F&& f) const {
    std::size_t pos = 0;
    while (pos <= text.size()) {
      auto m = match_at(text, pos);
      if (!m) return;
      f(m->value);
      pos = m->end > pos ? m->end : pos + 1;  // an empty match moves on by one byte
    }
  }

 private:
  struct Match {
    std::string_view value;
    std::size_t end = 0;  // offset just past the whole match
  };
  std::optional<Match> match_at(std::string_view text, std::size_t pos) const;

  std::string pattern_;
  std::string error_;
  std::shared_ptr<const re2::RE2> re_;  // shared: RE2 is immutable and thread-safe once built
};

}  // namespace ddp
