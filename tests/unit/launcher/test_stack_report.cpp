#include <doctest/doctest.h>

#include <random>

#include "launcher/hang/stack_report.hpp"

using namespace ddp::launcher;

namespace {

// What torch 1.13's gloo ranks printed on SIGABRT with PYTHONFAULTHANDLER=1 (Python 3.11): rank 0
// blocked in dist.all_reduce, rank 1 in time.sleep inside load_batch.
constexpr std::string_view kRank0 = R"(Fatal Python error: Aborted

Current thread 0x00007efd81c57040 (most recent call first):
  File "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", line 1541 in all_reduce
  File "/w/train.py", line 88 in main
  File "/w/train.py", line 99 in <module>

Extension modules: torch._C, torch._C._fft, numpy.core._multiarray_umath (total: 3))";

constexpr std::string_view kRank1 = R"(step 4 done
Fatal Python error: Aborted

Thread 0x00007f3340000700 (most recent call first):
  File "/usr/lib/python3.11/threading.py", line 324 in wait
  File "/usr/lib/python3.11/threading.py", line 622 in wait
  File "/usr/lib/python3.11/threading.py", line 1045 in _bootstrap

Current thread 0x00007f3343ad8040 (most recent call first):
  File "/w/train.py", line 41 in load_batch
  File "/w/train.py", line 85 in main
  File "/w/train.py", line 99 in <module>

Extension modules: torch._C (total: 1)
)";

// gdb 13's `thread apply all bt` of a C++ program (two threads).
constexpr std::string_view kGdb = R"([Thread debugging using libthread_db enabled]
Using host libthread_db library "/lib/x86_64-linux-gnu/libthread_db.so.1".
0x00007f2 in __futex_abstimed_wait_common () from /lib/x86_64-linux-gnu/libc.so.6

Thread 2 (Thread 0x7f37 (LWP 16395) "hang-native"):
#0  0x00007f3798d8f719 in __futex_abstimed_wait_common () from /lib/x86_64-linux-gnu/libc.so.6
#1  0x00007f3798d91e9f in pthread_cond_wait@@GLIBC_2.3.2 () from /lib/x86_64-linux-gnu/libc.so.6
#2  0x0000558c9509b2a0 in helper_loop (q=...) at /w/hang_native.cpp:20
#3  0x00007f3798f7f253 in ?? () from /lib/x86_64-linux-gnu/libstdc++.so.6

Thread 1 (Thread 0x7f3798d1b740 (LWP 16394) "hang-native"):
#0  __GI___clock_nanosleep (clock_id=clock_id@entry=0, flags=flags@entry=0, req=0x7ffe) at ../sysdeps/unix/sysv/linux/clock_nanosleep.c:71
#1  0x00007f3798d91e9f in std::condition_variable::wait(std::unique_lock<std::mutex>&) () from /lib/x86_64-linux-gnu/libstdc++.so.6
#2  0x0000558c9509b147 in wait_for_peer (cv=..., lock=...) at /w/hang_native.cpp:12
#3  0x0000558c9509b180 in main () at /w/hang_native.cpp:30
[Inferior 1 (process 16394) detached]
)";

constexpr std::string_view kSdk = R"(ddp-worker: SIGABRT backtrace (pid 77, thread 77):
/w/build/bin/hang-native(_ZN3ddp6worker12_GLOBAL__N_18on_abortEi+0x2c)[0x55d1]
/lib/x86_64-linux-gnu/libc.so.6(+0x3bfd0)[0x7f1]
/lib/x86_64-linux-gnu/libc.so.6(pthread_cond_wait+0x1f)[0x7f2]
/w/build/bin/hang-native(_Z13wait_for_peerv+0x2c)[0x55d2]
/w/build/bin/hang-native(main+0x10)[0x55d3]
ddp-worker: end of backtrace
)";

// The same hang on Windows (CPython's faulthandler, its vectored exception handler on
// platform/stack_dump.hpp's exception): backslashed paths, the standard library in <prefix>\Lib,
// \r\n line ends. No thread is current: the exception's thread is not a Python one.
constexpr std::string_view kWinRank0 =
    "Windows fatal exception: code 0xe0dd0001\r\n\r\n"
    "Thread 0x00001a2c (most recent call first):\r\n"
    "  File \"C:\\Python311\\Lib\\site-packages\\torch\\distributed\\distributed_c10d.py\", line 1541 in "
    "all_reduce\r\n"
    "  File \"C:\\w\\train.py\", line 88 in main\r\n"
    "  File \"C:\\w\\train.py\", line 99 in <module>\r\n";
constexpr std::string_view kWinRank1 =
    "Windows fatal exception: code 0xe0dd0001\r\n\r\n"
    "Thread 0x00000f00 (most recent call first):\r\n"
    "  File \"C:\\Users\\me\\AppData\\Local\\Programs\\Python\\Python311\\Lib\\threading.py\", line 324 in "
    "wait\r\n"
    "\r\n"
    "Thread 0x00001b3c (most recent call first):\r\n"
    "  File \"C:\\w\\train.py\", line 41 in load_batch\r\n"
    "  File \"C:\\w\\train.py\", line 85 in main\r\n"
    "  File \"C:\\w\\train.py\", line 99 in <module>\r\n";

RankStacks rank_of(int rank, StackSource source, std::string_view text) {
  RankStacks r;
  r.rank = r.local_rank = rank;
  r.pid = 1000 + rank;
  r.source = source;
  r.raw = std::string(text);
  r.threads = parse_stacks(source, text);
  return r;
}

std::optional<std::string> sources(const std::string& file, int line) {
  if (file == "/w/train.py" && line == 41) return std::string("time.sleep(3600)");
  return std::nullopt;
}

}  // namespace

TEST_CASE("faulthandler: every thread, frames innermost first, the current thread marked") {
  auto threads = parse_faulthandler(kRank1);
  REQUIRE(threads.size() == 2);
  CHECK(threads[0].id == "0x00007f3340000700");
  CHECK(!threads[0].current);
  CHECK(threads[0].frames.size() == 3);
  CHECK(threads[1].current);
  REQUIRE(threads[1].frames.size() == 3);
  CHECK(threads[1].frames[0] == StackFrame{"load_batch", "/w/train.py", 41});
  CHECK(threads[1].frames[2].function == "<module>");
}

TEST_CASE("gdb: threads with their LWP; frames with source lines, libraries and no address") {
  auto threads = parse_gdb(kGdb);
  REQUIRE(threads.size() == 2);
  CHECK(threads[0].id == "Thread 2 (LWP 16395)");
  CHECK(threads[1].id == "Thread 1 (LWP 16394)");
  REQUIRE(threads[1].frames.size() == 4);
  CHECK(threads[1].frames[0] ==
        StackFrame{"__GI___clock_nanosleep", "../sysdeps/unix/sysv/linux/clock_nanosleep.c", 71});
  CHECK(threads[1].frames[1] == StackFrame{"std::condition_variable::wait(std::unique_lock<std::mutex>&)",
                                           "/lib/x86_64-linux-gnu/libstdc++.so.6", 0});
  CHECK(threads[1].frames[2] == StackFrame{"wait_for_peer", "/w/hang_native.cpp", 12});
  CHECK(threads[0].frames[3] == StackFrame{"??", "/lib/x86_64-linux-gnu/libstdc++.so.6", 0});
}

TEST_CASE("the SDK's backtrace: demangled symbols between its markers") {
  auto threads = parse_sdk_backtrace(std::string("noise\n") + std::string(kSdk) + "more noise [0x1]\n");
  REQUIRE(threads.size() == 1);
  CHECK(threads[0].id == "pid 77, thread 77");
  REQUIRE(threads[0].frames.size() == 5);
  CHECK(threads[0].frames[0].function == "ddp::worker::(anonymous namespace)::on_abort(int)");
  CHECK(threads[0].frames[1].function.empty());
  CHECK(threads[0].frames[3] == StackFrame{"wait_for_peer()", "/w/build/bin/hang-native", 0});
}

TEST_CASE("the summary names the odd rank out and quotes its line; the others wait in the collective") {
  std::vector<RankStacks> ranks{rank_of(0, StackSource::Faulthandler, kRank0),
                                rank_of(1, StackSource::Faulthandler, kRank1),
                                rank_of(2, StackSource::Faulthandler, kRank0)};
  CHECK(summarize_stacks(ranks, sources) ==
        "ranks 0, 2 wait in all_reduce (train.py:88); rank 1 is in train.py:41 load_batch: time.sleep(3600)");
  // No source to quote: the frame alone.
  CHECK(summarize_stacks(ranks, nullptr) ==
        "ranks 0, 2 wait in all_reduce (train.py:88); rank 1 is in train.py:41 load_batch");
}

TEST_CASE("a Windows rank's faulthandler dump: backslashed paths, Lib\\ and torch\\distributed\\ known") {
  auto threads = parse_faulthandler(kWinRank1);
  REQUIRE(threads.size() == 2);
  CHECK(threads[1].frames[0] == StackFrame{"load_batch", "C:\\w\\train.py", 41});
  CHECK(!is_user_frame(threads[0].frames[0], StackSource::Faulthandler));  // <prefix>\Lib\threading.py
  CHECK(is_user_frame(threads[1].frames[0], StackSource::Faulthandler));
  std::vector<RankStacks> ranks{rank_of(0, StackSource::Faulthandler, kWinRank0),
                                rank_of(1, StackSource::Faulthandler, kWinRank1)};
  CHECK(summarize_stacks(ranks, nullptr) == "rank 0 waits in all_reduce (train.py:88); rank 1 is in train.py:41 load_batch");
}

TEST_CASE("ranks without stacks come last, with why") {
  std::vector<RankStacks> ranks{rank_of(0, StackSource::Faulthandler, kRank0)};
  RankStacks gone;
  gone.rank = 3;
  gone.missing = "it exited before the signal";
  ranks.push_back(gone);
  ranks.push_back(rank_of(4, StackSource::Faulthandler, "Fatal Python error: Aborted\n"));
  CHECK(summarize_stacks(ranks, sources) ==
        "rank 0 waits in all_reduce (train.py:88); rank 3 gave no stack (it exited before the signal); "
        "rank 4 gave no stack (no frames in what it printed)");
  auto file = stacks_file_text(ranks, "S");
  CHECK(file.starts_with("hang forensics: S\n"));
  CHECK(file.find("=== rank 0 (local 0), pid 1000: faulthandler ===\n") != std::string::npos);
  CHECK(file.find("=== rank 3 (local 0), pid 0: no stack: it exited before the signal ===") != std::string::npos);
  CHECK(file.find("line 1541 in all_reduce") != std::string::npos);
}

TEST_CASE("native stacks: the user frame of the main thread; the SDK's frames without lines") {
  auto gdb = rank_of(0, StackSource::Gdb, kGdb);
  auto pos = locate(gdb);
  REQUIRE(pos.user_frame);
  CHECK(*pos.user_frame == StackFrame{"wait_for_peer", "/w/hang_native.cpp", 12});
  CHECK(pos.collective.empty());
  auto sdk = rank_of(1, StackSource::SdkHandler, kSdk);
  CHECK(summarize_stacks({gdb, sdk}, nullptr) ==
        "rank 0 is in hang_native.cpp:12 wait_for_peer; rank 1 is in wait_for_peer() (hang-native)");
}

TEST_CASE("a native rank inside a gloo allreduce waits in it") {
  std::string text = R"(Thread 1 (Thread 0x1 (LWP 5) "t"):
#0  0x1 in __futex_abstimed_wait_common () from /lib/x86_64-linux-gnu/libc.so.6
#1  0x2 in gloo::transport::tcp::UnboundBuffer::waitRecv(int*, std::chrono::duration<long, std::ratio<1l, 1000l> >) () from /lib/x86_64-linux-gnu/libgloo.so.0
#2  0x3 in gloo::allreduce(gloo::AllreduceOptions&) () from /lib/x86_64-linux-gnu/libgloo.so.0
#3  0x4 in step (n=3) at /w/trainer.cpp:77
)";
  auto r = rank_of(2, StackSource::Gdb, text);
  CHECK(summarize_stacks({r}, nullptr) == "rank 2 waits in allreduce (trainer.cpp:77)");
}

TEST_CASE("user frames: not torch, packages, the standard library, system headers or libraries") {
  CHECK(is_user_frame({"f", "/w/train.py", 1}, StackSource::Faulthandler));
  CHECK(is_user_frame({"<module>", "<string>", 1}, StackSource::Faulthandler));
  CHECK(!is_user_frame({"f", "<frozen runpy>", 1}, StackSource::Faulthandler));
  CHECK(!is_user_frame({"f", "/usr/lib/python3.11/threading.py", 1}, StackSource::Faulthandler));
  CHECK(!is_user_frame({"f", "/venv/lib/python3.11/site-packages/x.py", 1}, StackSource::Faulthandler));
  CHECK(!is_user_frame({"f", "/src/pytorch/torch/nn/modules/module.py", 1}, StackSource::Faulthandler));
  CHECK(is_user_frame({"f", "/w/a.cpp", 3}, StackSource::Gdb));
  CHECK(is_user_frame({"f", "../tests/a.cpp", 3}, StackSource::Gdb));  // Ninja's relative paths
  CHECK(!is_user_frame({"f", "../sysdeps/unix/sysv/linux/clock_nanosleep.c", 3}, StackSource::Gdb));
  CHECK(!is_user_frame({"f", "/usr/include/c++/12/bits/std_mutex.h", 3}, StackSource::Gdb));
  CHECK(!is_user_frame({"f", "./nptl/pthread_cond_wait.c", 3}, StackSource::Gdb));
  CHECK(!is_user_frame({"f", "/lib/x86_64-linux-gnu/libc.so.6", 0}, StackSource::Gdb));
}

TEST_CASE("truncated dumps, garbage and huge input never crash and keep the bounds") {
  for (auto sample : {kRank0, kRank1, kGdb, kSdk}) {
    for (std::size_t n = 0; n <= sample.size(); ++n) {
      auto cut = sample.substr(0, n);
      for (auto source : {StackSource::Faulthandler, StackSource::Gdb, StackSource::SdkHandler}) {
        auto r = rank_of(0, source, cut);
        (void)summarize_stacks({r}, sources);
      }
    }
  }
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> byte(0, 255);
  const std::string_view pieces[] = {"Thread 0x1 (most recent call first):\n", "  File \"", "\", line ", " in ",
                                     "#1  0x1 in ", " at ", " from ", "(", ")", ":", "\n", kSdkBacktraceBegin, "[0x1]"};
  for (int round = 0; round < 300; ++round) {
    std::string text;
    for (int i = 0; i < 60; ++i) {
      if (byte(rng) < 128) text += pieces[static_cast<std::size_t>(byte(rng)) % std::size(pieces)];
      else text += static_cast<char>(byte(rng));
    }
    for (auto source : {StackSource::Faulthandler, StackSource::Gdb, StackSource::SdkHandler}) {
      (void)summarize_stacks({rank_of(round, source, text)}, sources);
    }
  }
  std::string many;
  for (int i = 0; i < 3000; ++i) many += "Thread 0x1 (most recent call first):\n  File \"/w/a.py\", line 1 in f\n";
  CHECK(parse_faulthandler(many).size() == kMaxThreads);
  std::string deep = "Current thread 0x1 (most recent call first):\n";
  for (int i = 0; i < 2000; ++i) deep += "  File \"/w/a.py\", line 1 in f\n";
  CHECK(parse_faulthandler(deep).at(0).frames.size() == kMaxFrames);
  std::string long_line = "Current thread 0x1 (most recent call first):\n  File \"" + std::string(1 << 20, 'x') +
                          "\", line 1 in f\n  File \"/w/a.py\", line 2 in g\n";
  auto t = parse_faulthandler(long_line);
  REQUIRE(t.size() == 1);
  CHECK(t[0].frames.empty());  // the thread ends at the line too long to be a frame
}

TEST_CASE("read_source_line: the line trimmed, nothing for a missing file or line") {
  CHECK(!read_source_line("/nonexistent/x.py", 1));
  CHECK(!read_source_line("/etc/hostname", 0));
  CHECK(!read_source_line("/etc/hostname", 100000));
}
