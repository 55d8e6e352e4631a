#include <doctest/doctest.h>

#include <string>

#include "store/filestore.hpp"

using namespace ddp::store;
using namespace std::chrono_literals;

namespace {

std::string u32le(std::uint32_t v) {
  std::string s(4, '\0');
  for (int i = 0; i < 4; ++i) s[static_cast<std::size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

// One FileStore record as torch writes it (spec §11.1).
std::string rec(std::string_view key, std::string_view value) {
  return u32le(static_cast<std::uint32_t>(key.size())) + std::string(key) +
         u32le(static_cast<std::uint32_t>(value.size())) + std::string(value);
}

// The §11.1 example: set(key1,value1), add(cnt,3), add(cnt,4), set(empty,''), compare_set(cs,'',v1),
// delete_key(key1); then one of two instances destroyed (cleanup/ = 1).
const std::string kLayoutBeforeDestroy = rec("/key1", "value1") + rec("/cnt", "3") + rec("/cnt", "7") +
                                         rec("/empty", "") + rec("/cs", "v1") + rec("-/key1", "");
const std::string kLayoutAfterDestroy = kLayoutBeforeDestroy + rec("cleanup/", "1");

// What init_process_group("gloo", "file://...") on 2 ranks leaves when both are SIGKILLed (§11.4).
std::string killed_rendezvous() {
  std::string gloo_addr(136, '\0');
  for (std::size_t i = 0; i < gloo_addr.size(); ++i) gloo_addr[i] = static_cast<char>(i * 7);
  std::string out = rec("/default_pg/0/0/rank_1", "vm") + rec("/default_pg/0/0/rank_0", "vm") +
                    rec("/default_pg/0/0/0", gloo_addr) + rec("/default_pg/0/0/1", gloo_addr);
  for (auto v : {"1", "1", "2", "2", "2"}) out += rec("/default_pg/store_based_barrier_key:1", v);
  return out + rec("/default_pg/0/SEQ_NUM_STORE_KEY", std::string("hE\x8bk\0\0\0\0", 8));
}

// spec §11.4's hang reproducer: "/a" = "1", then a record whose key length says 10 but 6 bytes follow.
const std::string kTornReader = rec("/a", "1") + u32le(10) + "/abcde";

bool has_reason(const FileStoreDiagnosis& d, std::string_view text) {
  for (const auto& r : d.reasons) {
    if (r.find(text) != std::string::npos) return true;
  }
  return false;
}

ddp::proc::ProcessInfo process(pid_t pid, std::string cmd) { return {pid, std::move(cmd)}; }

}  // namespace

TEST_CASE("FileStoreLog replays the spec's layout: last write wins, tombstones erase, counters") {
  auto before = FileStoreLog::parse(kLayoutBeforeDestroy);
  REQUIRE(before.is_filestore());
  CHECK(before.size() == 0x56);
  CHECK(before.records().size() == 6);
  CHECK(before.tombstones() == 1);
  CHECK(before.num_keys() == 3);  // torch's num_keys() said 3: /cnt, /empty, /cs
  CHECK(before.get("/cnt") == "7");
  CHECK(before.get("/empty") == "");
  CHECK(before.get("/cs") == "v1");
  CHECK_FALSE(before.get("/key1"));
  CHECK_FALSE(before.cleanup().present);
  CHECK_FALSE(before.torn_tail());

  auto after = FileStoreLog::parse(kLayoutAfterDestroy);
  CHECK(after.size() == 0x67);
  CHECK(after.num_keys() == 4);  // cleanup/ counts, as in torch
  CHECK(after.user_keys().size() == 3);
  CHECK(after.cleanup().present);
  CHECK(after.cleanup().value == 1);
  CHECK_FALSE(after.refcount().present);
  CHECK(after.records().back().offset == 0x56);
}

TEST_CASE("FileStoreLog of a killed 2-rank rendezvous: barrier counter, binary values, no cleanup/") {
  auto log = FileStoreLog::parse(killed_rendezvous());
  REQUIRE(log.is_filestore());
  CHECK(log.records().size() == 10);
  CHECK(log.get("/default_pg/store_based_barrier_key:1") == "2");
  CHECK(log.get("/default_pg/0/0/0")->size() == 136);
  CHECK_FALSE(log.cleanup().present);
  CHECK_FALSE(log.torn_tail());
  auto lines = summarize(log);
  auto text = [&] {
    std::string all;
    for (const auto& l : lines) all += l + "\n";
    return all;
  }();
  CHECK(text.find("/default_pg/0/0/0 = <136 bytes>") != std::string::npos);
  CHECK(text.find("/default_pg/0/0/rank_0 = \"vm\"") != std::string::npos);
  CHECK(text.find("cleanup/ absent") != std::string::npos);
  CHECK(text.find("torn tail: none") != std::string::npos);
}

TEST_CASE("summarize lists at most max_keys keys") {
  std::string bytes;
  for (int i = 0; i < 30; ++i) bytes += rec("/k" + std::to_string(i), "v");
  auto lines = summarize(FileStoreLog::parse(bytes), 5);
  bool more = false;
  for (const auto& l : lines) more = more || l.find("... and 25 more") != std::string::npos;
  CHECK(more);
}

TEST_CASE("refcount/ (torch 2.x) and a non-numeric counter") {
  auto log = FileStoreLog::parse(rec("refcount/", "1") + rec("/k", "v") + rec("refcount/", "2") + rec("cleanup/", "x"));
  CHECK(log.refcount().value == 2);
  CHECK(log.cleanup().present);
  CHECK_FALSE(log.cleanup().value);
  CHECK(log.num_keys() == 3);
}

TEST_CASE("torn tail: each part of the record cut short is found, with its offset") {
  const auto good = rec("/a", "1");  // 11 bytes
  const auto next = rec("/key", "value");
  SUBCASE("the spec's reproducer: key length 10, 6 key bytes") {
    auto log = FileStoreLog::parse(kTornReader);
    REQUIRE(log.is_filestore());
    REQUIRE(log.torn_tail());
    CHECK(log.torn_tail()->offset == 11);
    CHECK(log.torn_tail()->missing == RecordPart::Key);
    CHECK(log.torn_tail()->needed == 10);
    CHECK(log.torn_tail()->present == 6);
    CHECK(log.torn_tail()->describe() == "at offset 11: the key needs 10 bytes, 6 are present (key \"/abcde\")");
    CHECK(log.get("/a") == "1");  // the records before it still replay
  }
  SUBCASE("key length") {
    auto log = FileStoreLog::parse(good + next.substr(0, 2));
    REQUIRE(log.torn_tail());
    CHECK(log.torn_tail()->missing == RecordPart::KeyLength);
    CHECK(log.torn_tail()->present == 2);
  }
  SUBCASE("value length: killed between the key and the value length") {
    auto log = FileStoreLog::parse(good + next.substr(0, 8));
    REQUIRE(log.torn_tail());
    CHECK(log.torn_tail()->missing == RecordPart::ValueLength);
    CHECK(log.torn_tail()->partial_key == "/key");
  }
  SUBCASE("value") {
    auto log = FileStoreLog::parse(good + next.substr(0, next.size() - 2));
    REQUIRE(log.torn_tail());
    CHECK(log.torn_tail()->offset == 11);
    CHECK(log.torn_tail()->missing == RecordPart::Value);
    CHECK(log.torn_tail()->needed == 5);
    CHECK(log.torn_tail()->present == 3);
  }
  SUBCASE("a first record torn in its key is still a FileStore") {
    auto log = FileStoreLog::parse(u32le(17) + "/default_");
    CHECK(log.is_filestore());
    CHECK(log.torn_tail());
  }
}

TEST_CASE("not a FileStore: text, odd keys, too short, an implausible first key") {
  CHECK_FALSE(FileStoreLog::parse("hello world, this is a text file\n").is_filestore());
  CHECK_FALSE(FileStoreLog::parse(rec("key-without-slash", "v")).is_filestore());
  CHECK_FALSE(FileStoreLog::parse(rec("/ok", "v") + rec("junk", "v")).is_filestore());
  CHECK_FALSE(FileStoreLog::parse(std::string("\x01\x02", 2)).is_filestore());
  CHECK_FALSE(FileStoreLog::parse(u32le(0x7fffffff)).is_filestore());
  auto odd = FileStoreLog::parse(rec("/ok", "v") + rec("junk", "v"));
  CHECK(odd.foreign_reason().find("offset 12") != std::string::npos);
  CHECK(odd.foreign_reason().find("\"junk\"") != std::string::npos);
  CHECK(FileStoreLog::parse("").is_filestore());  // empty: nothing written yet
  CHECK(is_filestore_key("cleanup/"));
  CHECK(is_filestore_key("clea", true));
  CHECK_FALSE(is_filestore_key("clea"));
  CHECK(is_filestore_key("-/gone"));
  CHECK_FALSE(is_filestore_key(""));
}

TEST_CASE("path_from_file_url matches torch's urlparse(url).path") {
  CHECK(path_from_file_url("file:///tmp/rdzv?rank=0&world_size=2") == "/tmp/rdzv");
  CHECK(path_from_file_url("file:///tmp/rdzv") == "/tmp/rdzv");
  CHECK(path_from_file_url("file://host/tmp/rdzv") == "/tmp/rdzv");
  CHECK_FALSE(path_from_file_url("file://"));
  CHECK_FALSE(path_from_file_url("/tmp/rdzv"));
  CHECK_FALSE(path_from_file_url("env://"));
}

TEST_CASE("path_from_file_url on Windows matches torch's url2pathname(netloc + path)") {
  constexpr auto win = PathStyle::Windows;
  CHECK(path_from_file_url("file:///C:/tmp/rdzv?rank=0", win) == "C:\\tmp\\rdzv");
  CHECK(path_from_file_url("file://C:/tmp/rdzv", win) == "C:\\tmp\\rdzv");
  CHECK(path_from_file_url("file:///c|/tmp/rdzv", win) == "C:\\tmp\\rdzv");
  CHECK(path_from_file_url("file:///D:/", win) == "D:\\");
  CHECK(path_from_file_url("file:////server/share/rdzv", win) == "\\\\server\\share\\rdzv");
  CHECK(path_from_file_url("file:///tmp/rdzv", win) == "\\tmp\\rdzv");  // no drive: the current one's root
  CHECK_FALSE(path_from_file_url("file://", win));
  CHECK_FALSE(path_from_file_url("file:///C:/a:b", win));  // two colons: url2pathname raises
  CHECK_FALSE(path_from_file_url("C:\\tmp\\rdzv", win));
}

TEST_CASE("file_url_from_path: a Windows drive path gets file:///, forward slashes") {
  CHECK(file_url_from_path("/tmp/run/filestore") == "file:///tmp/run/filestore");
  CHECK(file_url_from_path("C:\\run\\filestore") == "file:///C:/run/filestore");
  CHECK(path_from_file_url(file_url_from_path("C:\\run\\filestore"), PathStyle::Windows) == "C:\\run\\filestore");
}

TEST_CASE("mentions_path on Windows: drive paths, URLs, any case, ';' lists, relative to cwd") {
  constexpr auto win = PathStyle::Windows;
  const std::filesystem::path target = "C:\\Jobs\\rdzv";
  CHECK(mentions_path("--dist-url=file:///C:/Jobs/rdzv", target, "", win));
  CHECK(mentions_path("c:\\jobs\\RDZV", target, "", win));
  CHECK(mentions_path("C:/Jobs/rdzv", target, "", win));
  CHECK(mentions_path("D:\\bin;C:\\Jobs\\rdzv", target, "", win));
  CHECK(mentions_path("rdzv", target, "C:\\Jobs", win));
  CHECK(mentions_path("C:\\Jobs\\sub\\..\\rdzv", target, "", win));
  CHECK_FALSE(mentions_path("C:\\Jobs\\rdzv2", target, "", win));
  CHECK_FALSE(mentions_path("D:\\Jobs\\rdzv", target, "", win));
  CHECK_FALSE(mentions_path("rdzv", target, "", win));  // relative, working directory unknown
  CHECK_FALSE(mentions_path("http://host/rdzv", target, "", win));
}

TEST_CASE("flock_entry_is: /proc/locks' major:minor against stat's st_dev, as glibc encodes it") {
  FlockEntry e;
  e.dev_major = 259;
  e.dev_minor = 3;
  e.inode = 42;
  const std::uint64_t dev = (259u << 8) | 3u;  // gnu_dev_makedev(259, 3) for numbers this small
  CHECK(flock_entry_is(e, dev, 42));
  CHECK_FALSE(flock_entry_is(e, dev, 43));
  CHECK_FALSE(flock_entry_is(e, (8u << 8) | 1u, 42));
  e.dev_minor = 0x12345;  // a minor above 255: its upper bits sit at 20 .. 43
  const std::uint64_t big = (259u << 8) | 0x45u | (std::uint64_t{0x123} << 20);
  CHECK(flock_entry_is(e, big, 42));
}

TEST_CASE("mentions_path: paths, URLs, NAME=value, relative to cwd; not longer names") {
  const std::filesystem::path target = "/tmp/job/rdzv";
  CHECK(mentions_path("/tmp/job/rdzv", target, "/"));
  CHECK(mentions_path("--init_method=file:///tmp/job/rdzv?world_size=2", target, "/"));
  CHECK(mentions_path("INIT_METHOD=file:///tmp/job/rdzv", target, "/"));
  CHECK(mentions_path("rdzv", target, "/tmp/job"));
  CHECK(mentions_path("./job/../job/rdzv", target, "/tmp"));
  CHECK(mentions_path("STORE_PATHS=/x:/tmp/job/rdzv", target, "/"));
  CHECK(mentions_path("python -c 'open(\"/tmp/job/rdzv\")'", target, "/"));
  CHECK_FALSE(mentions_path("/tmp/job/rdzv2", target, "/"));
  CHECK_FALSE(mentions_path("/other/tmp/job/rdzv", target, "/"));
  CHECK_FALSE(mentions_path("rdzv", target, "/elsewhere"));
  CHECK_FALSE(mentions_path("rdzv", target, ""));
  CHECK_FALSE(mentions_path("http://host/tmp/job/rdzv", target, "/"));
  CHECK_FALSE(mentions_path("/tmp/job/rdzv/inner", target, "/"));
}

TEST_CASE("parse_proc_locks keeps FLOCK holders and waiters, with device and inode") {
  const std::string text =
      "1: POSIX  ADVISORY  WRITE 812 00:19:1001 0 EOF\n"
      "2: FLOCK  ADVISORY  READ  4242 08:01:1234567 0 EOF\n"
      "2: -> FLOCK  ADVISORY  WRITE 4243 08:01:1234567 0 EOF\n"
      "3: FLOCK  ADVISORY  WRITE 77 fd:0a:42 0 EOF\n"
      "garbage\n";
  auto locks = parse_proc_locks(text);
  REQUIRE(locks.size() == 3);
  CHECK(locks[0].pid == 4242);
  CHECK_FALSE(locks[0].exclusive);
  CHECK_FALSE(locks[0].waiting);
  CHECK(locks[0].dev_major == 8);
  CHECK(locks[0].dev_minor == 1);
  CHECK(locks[0].inode == 1234567);
  CHECK(locks[1].waiting);
  CHECK(locks[1].exclusive);
  CHECK(locks[2].dev_major == 0xfd);
  CHECK(locks[2].dev_minor == 0x0a);
}

TEST_CASE("diagnose: a killed run's file with no one around is stale, and says why") {
  FileStoreEvidence ev;
  ev.since_last_write = 2500ms;
  auto d = diagnose(FileStoreLog::parse(killed_rendezvous()), ev);
  CHECK(d.verdict == FileStoreVerdict::Stale);
  CHECK(d.removable());
  CHECK(has_reason(d, "no process has it open"));
  CHECK(has_reason(d, "no cleanup/ record"));
  CHECK(has_reason(d, "store-based barrier"));
  CHECK(has_reason(d, "last written 2.5 s ago"));

  auto half = diagnose(FileStoreLog::parse(killed_rendezvous() + rec("cleanup/", "1")), {});
  CHECK(half.verdict == FileStoreVerdict::Stale);
  CHECK(has_reason(half, "cleanup/ = 1: 1 instance ran its destructor"));

  auto empty = diagnose(FileStoreLog::parse(""), {});
  CHECK(empty.verdict == FileStoreVerdict::Stale);
  CHECK(has_reason(empty, "empty"));
}

TEST_CASE("diagnose: torn and unused is torn (removable), named with its offset") {
  auto d = diagnose(FileStoreLog::parse(kTornReader), {});
  CHECK(d.verdict == FileStoreVerdict::Torn);
  CHECK(d.removable());
  CHECK(has_reason(d, "torn tail at offset 11"));
  CHECK(has_reason(d, "spins at 100% CPU"));
}

TEST_CASE("diagnose: users that all belong to a dead run are orphans clean --force may end; one live user keeps all") {
  auto log = FileStoreLog::parse(killed_rendezvous());
  FileStoreEvidence ev;
  ev.named_in_argv.push_back(process(7, "python t.py --dist-url file:///C:/x"));
  ev.dead_run_workers.push_back(process(8, "python t.py"));
  ev.orphaned[7] = "its parent, pid 3, is gone";
  ev.orphaned[8] = "its run's supervisor is gone (its run record)";
  auto d = diagnose(log, ev);
  CHECK(d.verdict == FileStoreVerdict::InUse);
  CHECK(d.orphans == std::vector<pid_t>{7, 8});
  CHECK(has_reason(d, "pid 8 (python t.py) still runs as a worker of a dead run whose record names this file"));
  CHECK(has_reason(d, "pid 7 belongs to a dead run: its parent, pid 3, is gone"));
  CHECK(d.advice.find("clean --force") != std::string::npos);
  ev.open_by.push_back(process(9, "python live.py"));
  auto kept = diagnose(log, ev);
  CHECK(kept.verdict == FileStoreVerdict::InUse);
  CHECK(kept.orphans.empty());
  CHECK(kept.advice.find("clean --force") == std::string::npos);
}

TEST_CASE("diagnose: any live evidence keeps the file, naming the process") {
  auto log = FileStoreLog::parse(killed_rendezvous());
  SUBCASE("open") {
    FileStoreEvidence ev;
    ev.open_by.push_back(process(101, "python3 train.py"));
    auto d = diagnose(log, ev);
    CHECK(d.verdict == FileStoreVerdict::InUse);
    CHECK(has_reason(d, "pid 101 (python3 train.py) has it open"));
    CHECK(d.advice.find("kill 101") != std::string::npos);
  }
  SUBCASE("argv and environment") {
    FileStoreEvidence ev;
    ev.named_in_argv.push_back(process(7, "python3 t.py --init file:///tmp/x"));
    ev.named_in_env.push_back(process(8, "python3 u.py"));
    auto d = diagnose(log, ev);
    CHECK(d.verdict == FileStoreVerdict::InUse);
    CHECK(has_reason(d, "pid 7 (python3 t.py --init file:///tmp/x) names it in its command line"));
    CHECK(has_reason(d, "pid 8 (python3 u.py) names it in its environment"));
    CHECK(d.advice.find("kill 7 8") != std::string::npos);
  }
  SUBCASE("an exclusive lock on a clean log: a write in progress") {
    FileStoreEvidence ev;
    ev.lock_holders.push_back({process(9, "w"), true});
    auto d = diagnose(log, ev);
    CHECK(d.verdict == FileStoreVerdict::InUse);
    CHECK(has_reason(d, "holds LOCK_EX"));
  }
  SUBCASE("lock refused with no visible holder") {
    FileStoreEvidence ev;
    ev.lock_refused = true;
    ev.lock_deadline = 2000ms;
    auto d = diagnose(log, ev);
    CHECK(d.verdict == FileStoreVerdict::InUse);
    CHECK(has_reason(d, "refused after 2000 ms"));
  }
  SUBCASE("changed while checking") {
    FileStoreEvidence ev;
    ev.changed_while_checking = true;
    CHECK(diagnose(log, ev).verdict == FileStoreVerdict::InUse);
  }
  SUBCASE("unreadable processes are reported but do not decide") {
    FileStoreEvidence ev;
    ev.uninspectable = 3;
    auto d = diagnose(log, ev);
    CHECK(d.verdict == FileStoreVerdict::Stale);
    CHECK(has_reason(d, "environment of 3 processes could not be read"));
  }
}

TEST_CASE("diagnose: LOCK_SH on a torn file is a stuck reader, and the advice is to stop it") {
  FileStoreEvidence ev;
  ev.lock_holders.push_back({process(555, "python3 reader.py /tmp/x"), false});
  ev.open_by.push_back(process(555, "python3 reader.py /tmp/x"));
  auto d = diagnose(FileStoreLog::parse(kTornReader), ev);
  CHECK(d.verdict == FileStoreVerdict::StuckReader);
  CHECK_FALSE(d.removable());
  CHECK(has_reason(d, "pid 555 (python3 reader.py /tmp/x) holds LOCK_SH"));
  CHECK(has_reason(d, "spinning at 100% CPU"));
  CHECK(d.advice.find("kill 555") != std::string::npos);
  CHECK(d.advice.find("run clean again") != std::string::npos);
}

TEST_CASE("diagnose: not a FileStore is never removable") {
  auto d = diagnose(FileStoreLog::parse("#!/bin/sh\necho hi\n"), {});
  CHECK(d.verdict == FileStoreVerdict::NotFileStore);
  CHECK_FALSE(d.removable());
}
