// The FileStore watch's pure part (launcher/supervisor/filestore_watch.hpp): which paths the workers may name,
// and the verdict on a FileStore the ranks used — never "stale" without proof.
#include <doctest/doctest.h>

#include "launcher/supervisor/filestore_watch.hpp"

using namespace ddp::launcher;
namespace store = ddp::store;

namespace {

std::vector<std::string> paths(const std::vector<NamedFileStore>& named) {
  std::vector<std::string> out;
  for (const auto& n : named) out.push_back(n.path);
  return out;
}

store::FileStoreDiagnosis diagnosis(store::FileStoreVerdict v, std::string reason) {
  store::FileStoreDiagnosis d;
  d.verdict = v;
  d.reasons = {std::move(reason)};
  return d;
}

// The seed's rerun: the file was there before the run, nothing outside the run uses it.
FoundFileStoreFacts stale_facts() {
  FoundFileStoreFacts f;
  f.path = "/tmp/job/sharedfile";
  f.how_found = "the workers' argument '/tmp/job/sharedfile' names it, and it changed while they ran";
  f.existed_before_run = true;
  f.age_s = 185;
  f.diagnosis = diagnosis(store::FileStoreVerdict::Stale,
                          "no process has it open, holds a lock on it, or names it in its command line or environment");
  return f;
}

}  // namespace

TEST_CASE("candidates: plain paths in the script's arguments, absolute or relative, and --flag=PATH") {
  auto named = filestore_candidates({"/usr/bin/python3", "-u", "train.py", "/tmp/job/sharedfile", "--dist-file",
                                     "rdzv/store", "--init=/tmp/x", "--flag", "-v"},
                                    {}, "/work/run");
  CHECK(paths(named) ==
        std::vector<std::string>{"/work/run/train.py", "/tmp/job/sharedfile", "/work/run/rdzv/store", "/tmp/x"});
  CHECK(named[1].where == "argument '/tmp/job/sharedfile'");
  CHECK(named[3].where == "argument '--init=/tmp/x'");
}

TEST_CASE("candidates: file:// URLs, environment values that are one absolute path, no placeholders or duplicates") {
  auto named = filestore_candidates(
      {"python", "file:///tmp/a", "/tmp/run_{rank}", "/tmp/a", "--x=/tmp/a"},
      {{"STORE_FILE", "/shared/s"}, {"PATH", "/usr/bin:/bin"}, {"REL", "rel/path"}, {"INIT", "file:///tmp/b"}}, "/w");
  CHECK(paths(named) == std::vector<std::string>{"/tmp/a", "/tmp/b", "/shared/s"});
  CHECK(named[2].where == "$STORE_FILE");
}

TEST_CASE("candidates: Windows drive paths are absolute there") {
  auto named =
      filestore_candidates({"python.exe", "C:\\jobs\\store", "file:///D:/x/y"}, {}, "C:\\w", store::PathStyle::Windows);
  REQUIRE(named.size() == 2);
  CHECK(named[0].where == "argument 'C:\\jobs\\store'");
}

TEST_CASE("stale only with proof: there before the run, and no user outside it") {
  auto found = judge_found_filestore(stale_facts());
  CHECK(found.verdict == FoundFileStoreVerdict::Stale);
  CHECK(found.removable());
  CHECK(found.age_s == 185);
  CHECK(found.text.find("/tmp/job/sharedfile") != std::string::npos);
  CHECK(found.text.find("last written 3 min before this run started") != std::string::npos);
  CHECK(found.text.find("`ddp-launch clean /tmp/job/sharedfile`") != std::string::npos);
}

TEST_CASE("a torn file left before the run is stale too") {
  auto f = stale_facts();
  f.diagnosis->verdict = store::FileStoreVerdict::Torn;
  CHECK(judge_found_filestore(f).verdict == FoundFileStoreVerdict::Stale);
}

TEST_CASE("a user outside the run: in use, never removed, named") {
  for (auto v : {store::FileStoreVerdict::InUse, store::FileStoreVerdict::StuckReader}) {
    auto f = stale_facts();
    f.diagnosis = diagnosis(v, "pid 4242 (python3 other.py) has it open");
    auto found = judge_found_filestore(f);
    CHECK(found.verdict == FoundFileStoreVerdict::InUse);
    CHECK_FALSE(found.removable());
    CHECK(found.text.find("in use") != std::string::npos);
    CHECK(found.text.find("pid 4242") != std::string::npos);
    CHECK(found.text.find("`ddp-launch clean /tmp/job/sharedfile`") != std::string::npos);
  }
}

TEST_CASE("not proven before the run: unsure, never removed") {
  auto f = stale_facts();
  f.existed_before_run = false;
  f.age_s.reset();
  auto found = judge_found_filestore(f);
  CHECK(found.verdict == FoundFileStoreVerdict::Unsure);
  CHECK_FALSE(found.removable());
  CHECK(found.text.find("not proven") != std::string::npos);
  CHECK(found.text.find("its age unknown") != std::string::npos);
}

TEST_CASE("several nodes: users elsewhere are invisible, so unsure") {
  auto f = stale_facts();
  f.several_nodes = true;
  auto found = judge_found_filestore(f);
  CHECK(found.verdict == FoundFileStoreVerdict::Unsure);
  CHECK(found.text.find("other nodes") != std::string::npos);
}

TEST_CASE("the cleaner could not decide: unsure, with its problem") {
  auto f = stale_facts();
  f.diagnosis.reset();
  f.problem = "cannot open it: Permission denied";
  auto found = judge_found_filestore(f);
  CHECK(found.verdict == FoundFileStoreVerdict::Unsure);
  CHECK(found.text.find("Permission denied") != std::string::npos);
}

TEST_CASE("created by this run: its own file, nothing to report") {
  auto f = stale_facts();
  f.existed_before_run = false;
  f.created_by_this_run = true;
  CHECK(judge_found_filestore(f).verdict == FoundFileStoreVerdict::Ours);
}

TEST_CASE("ages read as people say them") {
  CHECK(ddp::describe_age(42) == "42 s");
  CHECK(ddp::describe_age(185) == "3 min");
  CHECK(ddp::describe_age(3 * 3600 + 5) == "3 h");
  CHECK(ddp::describe_age(5 * 86400) == "5 days");
  CHECK(ddp::describe_age(-3) == "0 s");
}
