#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "launcher/workers/rank_log_lines.hpp"

using namespace ddp::launcher;
using Strings = std::vector<std::string>;

namespace {

RankAssignment rank(int global, int local, std::string role = "trainer") {
  RankAssignment r;
  r.rank = global;
  r.local_rank = local;
  r.role = std::move(role);
  return r;
}

}  // namespace

TEST_CASE("the prefix template is expanded per rank like torch's Template.safe_substitute") {
  CHECK(expand_line_prefix("[${role_name}${rank}|${local_rank}]:", rank(5, 1)) == "[trainer5|1]:");
  CHECK(expand_line_prefix("[rank${rank}]: ", rank(3, 3)) == "[rank3]: ");  // torch's own test template
  CHECK(expand_line_prefix("$rank/$local_rank $role_name", rank(7, 2, "default")) == "7/2 default");
  CHECK(expand_line_prefix("cost $$5 $$rank", rank(1, 1)) == "cost $5 $rank");  // $$ is a literal $
  CHECK(expand_line_prefix("no names", rank(1, 1)) == "no names");
  CHECK(expand_line_prefix("", rank(1, 1)) == "");
}

TEST_CASE("unknown names and malformed references stay as written, and are named once") {
  CHECK(expand_line_prefix("[${host}:${rank}] $attempt", rank(2, 0)) == "[${host}:2] $attempt");
  CHECK(expand_line_prefix("$ranks ${rank", rank(2, 0)) == "$ranks ${rank");  // greedy name; no closing brace
  CHECK(expand_line_prefix("${ rank} $1 $", rank(2, 0)) == "${ rank} $1 $");
  CHECK(expand_line_prefix("${RANK}", rank(2, 0)) == "${RANK}");  // names are case-sensitive
  CHECK(unknown_line_prefix_names("[${host}:${rank}] $attempt ${host} $$x") == Strings{"host", "attempt"});
  CHECK(unknown_line_prefix_names("[${role_name}${rank}|${local_rank}]: $$") == Strings{});
}

TEST_CASE("without a template the prefix is [rank N]: on one node and [host:rank]: on several") {
  CHECK(rank_line_prefix("", rank(4, 0), false, "h1") == "[rank 4]: ");
  CHECK(rank_line_prefix("", rank(4, 0), true, "h1") == "[h1:4]: ");
  CHECK(rank_line_prefix("<$rank>", rank(4, 0), true, "h1") == "<4>");  // torch adds no separator
}

TEST_CASE("filters split at commas, ',,' is a comma, empty items are dropped and reported") {
  bool dropped = true;
  CHECK(split_duplicate_filters("apple,orange", &dropped) == Strings{"apple", "orange"});
  CHECK_FALSE(dropped);
  CHECK(split_duplicate_filters("a,,b,c", &dropped) == Strings{"a,b", "c"});
  CHECK_FALSE(dropped);
  CHECK(split_duplicate_filters("loss", &dropped) == Strings{"loss"});
  CHECK(split_duplicate_filters("", &dropped).empty());
  CHECK_FALSE(dropped);  // not given
  CHECK(split_duplicate_filters("a,,,b", &dropped) == Strings{"a,", "b"});
  CHECK(split_duplicate_filters("x,", &dropped) == Strings{"x"});
  CHECK(dropped);
  CHECK(split_duplicate_filters(",", &dropped).empty());
  CHECK(dropped);
}

TEST_CASE("a line matches when it contains any filter of its own stream") {
  DuplicateFilters f{{"loss", "acc"}, {"Error"}};
  CHECK(f.any());
  CHECK(f.matches("step 3 loss=0.5", false));
  CHECK(f.matches("acc 0.9", false));
  CHECK_FALSE(f.matches("step 3", false));
  CHECK_FALSE(f.matches("loss on stderr", true));
  CHECK(f.matches("ValueError: x", true));
  CHECK_FALSE(DuplicateFilters{}.any());
  CHECK_FALSE(DuplicateFilters{}.matches("anything", false));
  CHECK(f.matches(std::string("nul\0loss", 8), false));  // bytes after a NUL are searched too
}

TEST_CASE("the filtered logs sit in the attempt's directory, as torch's DefaultLogsSpecs puts them") {
  CHECK(filtered_log_name(0, false) == "attempt_0/filtered_stdout.log");
  CHECK(filtered_log_name(3, true) == "attempt_3/filtered_stderr.log");
}
