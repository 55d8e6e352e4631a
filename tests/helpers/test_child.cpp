// ddp-test-child: a small program the platform and Windows tests start, built for Linux and for
// Windows alike, so one test means the same on both (no /bin/sh or cmd.exe quirks in between).
//   exit N                 exit with code N
//   print TEXT...          each TEXT on its own stdout line, then exit 0
//   stderr TEXT            TEXT on stderr, then exit 0
//   sleep MS               sleep, then exit 0
//   env NAME               the variable's value on stdout ("<unset>" when it is not set)
//   cwd                    the working directory on stdout
//   tree MS FILE           start a grandchild (`sleep MS`, in our group and job), write
//                          "<our pid>:<start> <its pid>:<start>" to FILE, then sleep MS
//   hold FILE MS           open FILE for reading and writing (as torch's FileStore does; Windows:
//                          no delete sharing) and keep it open for MS ms
//   hold-env NAME MS       the same for the file named by variable NAME (not in our command line)
//   hold-in DIR NAME MS    the same for DIR/NAME, a path joined here (no argument names the file);
//                          as rank 0 (RANK=0) it exits 1 after 1 s instead: a rank failing in init
//   ctrl MS                on Ctrl-C or Ctrl-Break (console events; POSIX: SIGINT, SIGTERM) print
//                          "got ctrl <signal number>" and exit 42; else sleep MS and exit 0
//   orphan MODE ARGS...    start `ddp-test-child MODE ARGS...` on its own (no job, group or parent
//                          death tie), print "orphan <its pid>", and exit at once: it is orphaned
//   alive PID[:START]...   "PID alive" or "PID gone" for each: gone also when the pid now belongs
//                          to a process started at another time (Wine's tasklist lists nothing)
//   dump FILE MS           what Python's faulthandler does with PYTHONFAULTHANDLER=1, for a process
//                          that platform/stack_dump.hpp asks for its stacks: a handler (POSIX: SIGABRT;
//                          Windows: a vectored exception handler, for error exceptions of any thread)
//                          that writes faulthandler's text for two frames to stderr and lets the
//                          process die as it would. Writes "ready" to FILE once the handler is in,
//                          then sleeps MS ("hangs")
//   launcher ARGS...       Windows: what a venv's python.exe is (Python's venv redirector): start
//                          this program again with ARGS as a plain child (same job, same stdio),
//                          wait for it and exit with its code. POSIX: not offered (a venv's python
//                          is a symlink there)
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#ifdef _WIN32
#include <windows.h>
#else
#include <unistd.h>
#endif

#include "platform/host.hpp"
#include "platform/proc.hpp"
#include "platform/spawn.hpp"
#include "platform/stop_signals.hpp"

namespace {

void sleep_ms(const char* ms) { std::this_thread::sleep_for(std::chrono::milliseconds(std::atol(ms))); }

// Another run of this program with `args`, in our environment.
ddp::SpawnRequest self_request(const std::vector<std::string>& args) {
  ddp::SpawnRequest req;
  req.program = ddp::platform::executable_path().string();
  req.argv = {req.program};
  req.argv.insert(req.argv.end(), args.begin(), args.end());
  for (const auto& [k, v] : ddp::platform::environment()) req.env.push_back(k + "=" + v);
  return req;
}

int tree(const char* ms, const char* file) {
  auto req = self_request({"sleep", ms});
  req.new_session = false;      // in our group (POSIX) ...
  req.die_with_parent = false;  // ... and in our job (Windows: a child is in its parent's job)
  auto started = ddp::spawn_process(req);
  if (!started.ok()) {
    std::fprintf(stderr, "cannot start the grandchild: %s: %s\n", started.what.c_str(), started.error.c_str());
    return 3;
  }
  {
    auto start_of = [](pid_t pid) {
      auto st = ddp::proc::read_proc_stat(pid);
      return st ? st->start_time : 0;
    };
    const pid_t self = ddp::platform::current_pid();
    const pid_t grandchild = started.child.pid();
    std::ofstream out(file);
    out << self << ':' << start_of(self) << ' ' << grandchild << ':' << start_of(grandchild) << '\n';
  }
  std::printf("tree started\n");
  std::fflush(stdout);
  sleep_ms(ms);
  return 0;
}

int orphan(int argc, char** argv) {
  auto req = self_request({argv + 2, argv + argc});
  req.die_with_parent = false;
  auto started = ddp::spawn_process(req);
  if (!started.ok()) {
    std::fprintf(stderr, "cannot start it: %s: %s\n", started.what.c_str(), started.error.c_str());
    return 3;
  }
  std::printf("orphan %d\n", static_cast<int>(started.child.pid()));
  std::fflush(stdout);
  return 0;
}

int ctrl(const char* ms) {
  boost::asio::io_context io;
  ddp::platform::StopSignals signals(io);
  signals.add(2);   // SIGINT: Ctrl-C
  signals.add(15);  // SIGTERM: Ctrl-Break
  int got = 0;
  signals.async_wait([&](const boost::system::error_code& ec, int signo) {
    if (!ec) got = signo;
    io.stop();
  });
  // Windows' StopSignals keeps no work on the loop: without this run_for would return at once.
  auto busy = boost::asio::make_work_guard(io);
  std::printf("ctrl ready\n");
  std::fflush(stdout);
  io.run_for(std::chrono::milliseconds(std::atol(ms)));
  if (!got) return 0;
  std::printf("got ctrl %d\n", got);
  std::fflush(stdout);
  return 42;
}

// faulthandler's all-threads dump of a rank hung in a collective (its format: Python/traceback.c).
#ifdef _WIN32
constexpr char kDumpText[] =
    "Windows fatal exception: code 0xe0dd0001\n\n"
    "Thread 0x00000e10 (most recent call first):\n"
    "  File \"C:\\ddp\\train.py\", line 7 in wait_for_peers\n"
    "  File \"C:\\ddp\\train.py\", line 12 in <module>\n";

LONG WINAPI on_exception(EXCEPTION_POINTERS* e) {
  const DWORD code = e->ExceptionRecord->ExceptionCode;
  if ((code & 0x80000000u) == 0 || code == 0xE06D7363u) return EXCEPTION_CONTINUE_SEARCH;  // as faulthandler
  DWORD written = 0;
  WriteFile(GetStdHandle(STD_ERROR_HANDLE), kDumpText, sizeof(kDumpText) - 1, &written, nullptr);
  return EXCEPTION_CONTINUE_SEARCH;
}

void install_dump_handler() { AddVectoredExceptionHandler(1, on_exception); }

int launcher(int argc, char** argv) {
  wchar_t self[MAX_PATH * 4];
  const DWORD n = GetModuleFileNameW(nullptr, self, MAX_PATH * 4);
  std::wstring line = L"\"" + std::wstring(self, n) + L"\"";
  for (int i = 2; i < argc; ++i) {  // ASCII arguments (the tests' paths and numbers)
    const std::string a = argv[i];
    line += L" \"" + std::wstring(a.begin(), a.end()) + L"\"";
  }
  STARTUPINFOW si{};
  si.cb = sizeof(si);
  PROCESS_INFORMATION pi{};
  if (!CreateProcessW(nullptr, line.data(), nullptr, nullptr, TRUE, 0, nullptr, nullptr, &si, &pi)) {
    std::fprintf(stderr, "launcher: CreateProcess failed: %lu\n", GetLastError());
    return 3;
  }
  WaitForSingleObject(pi.hProcess, INFINITE);
  DWORD code = 0;
  GetExitCodeProcess(pi.hProcess, &code);
  CloseHandle(pi.hThread);
  CloseHandle(pi.hProcess);
  return static_cast<int>(code);
}
#else
constexpr char kDumpText[] =
    "Fatal Python error: Aborted\n\n"
    "Thread 0x00007f0000000e10 (most recent call first):\n"
    "  File \"/ddp/train.py\", line 7 in wait_for_peers\n"
    "  File \"/ddp/train.py\", line 12 in <module>\n";

void on_abort(int) {
  [[maybe_unused]] auto n = ::write(2, kDumpText, sizeof(kDumpText) - 1);
  std::signal(SIGABRT, SIG_DFL);
  std::raise(SIGABRT);
}

void install_dump_handler() { std::signal(SIGABRT, on_abort); }
#endif

int dump(const char* ready_file, const char* ms) {
  install_dump_handler();
  std::ofstream(ready_file) << "ready\n";
  sleep_ms(ms);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "exit" && argc > 2) return std::atoi(argv[2]);
  if (mode == "print") {
    for (int i = 2; i < argc; ++i) std::printf("%s\n", argv[i]);
    return 0;
  }
  if (mode == "stderr" && argc > 2) {
    std::fprintf(stderr, "%s\n", argv[2]);
    return 0;
  }
  if (mode == "sleep" && argc > 2) {
    sleep_ms(argv[2]);
    return 0;
  }
  if (mode == "env" && argc > 2) {
    const char* v = std::getenv(argv[2]);
    std::printf("%s\n", v ? v : "<unset>");
    return 0;
  }
  if (mode == "cwd") {
    std::printf("%s\n", std::filesystem::current_path().string().c_str());
    return 0;
  }
  if (mode == "tree" && argc > 3) return tree(argv[2], argv[3]);
  if ((mode == "hold" || mode == "hold-env") && argc > 3) {
    const char* file = mode == "hold" ? argv[2] : std::getenv(argv[2]);
    std::fstream f(file ? file : "", std::ios::in | std::ios::out | std::ios::binary);
    if (!f) {
      std::fprintf(stderr, "cannot open %s\n", file ? file : "(unset)");
      return 3;
    }
    std::printf("holding %s\n", file);
    std::fflush(stdout);
    sleep_ms(argv[3]);
    return 0;
  }
  if (mode == "hold-in" && argc > 4) {
    const auto file = std::filesystem::path(argv[2]) / argv[3];
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    if (!f) {
      std::fprintf(stderr, "cannot open %s\n", file.string().c_str());
      return 3;
    }
    const char* rank = std::getenv("RANK");
    const bool fails = rank && std::string(rank) == "0";
    std::printf("holding %s\n", fails ? "it, failing in 1 s" : "it");
    std::fflush(stdout);
    sleep_ms(fails ? "1000" : argv[4]);
    return fails ? 1 : 0;
  }
  if (mode == "ctrl" && argc > 2) return ctrl(argv[2]);
  if (mode == "dump" && argc > 3) return dump(argv[2], argv[3]);
#ifdef _WIN32
  if (mode == "launcher" && argc > 2) return launcher(argc, argv);
#endif
  if (mode == "orphan" && argc > 2) return orphan(argc, argv);
  if (mode == "alive") {
    for (int i = 2; i < argc; ++i) {
      const std::string arg = argv[i];
      const auto colon = arg.find(':');
      const pid_t pid = std::atoi(arg.substr(0, colon).c_str());
      auto st = ddp::proc::read_proc_stat(pid);
      const bool same = st && (colon == std::string::npos || std::to_string(st->start_time) == arg.substr(colon + 1));
      std::printf("%d %s\n", static_cast<int>(pid), same ? "alive" : "gone");
    }
    return 0;
  }
  std::fprintf(stderr,
               "usage: ddp-test-child exit N | print TEXT... | stderr TEXT | sleep MS | env NAME | cwd | "
               "tree MS FILE | hold FILE MS | hold-env NAME MS | hold-in DIR NAME MS | ctrl MS | orphan MODE ARGS... | "
               "alive PID... | dump FILE MS | launcher ARGS... (Windows)\n");
  return 2;
}
