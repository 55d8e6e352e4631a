// ddp-test-service: platform/service.hpp's test program, a Windows service that does nothing but
// say where it is (tests/integration/windows/test_service.py runs it under Wine's service manager).
//   ddp-test-service NAME FILE [EXIT]   as the service NAME: writes "running" to FILE, waits for the
//                                       manager's stop, appends "stopped", ends with exit code EXIT
// Started other than by the service manager: the NotAService message on stderr, exit 3.
#include <condition_variable>
#include <fstream>
#include <iostream>
#include <mutex>
#include <string>

#include "platform/service.hpp"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: ddp-test-service NAME FILE [EXIT]\n";
    return 2;
  }
  const std::string name = argv[1], file = argv[2];
  const int exit_code = argc > 3 ? std::stoi(argv[3]) : 0;
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  try {
    return ddp::platform::run_as_service(
        name,
        [&] {
          std::ofstream(file) << "running\n";
          std::unique_lock lock(mu);
          cv.wait(lock, [&] { return stop; });
          std::ofstream(file, std::ios::app) << "stopped\n";
          return exit_code;
        },
        [&] {
          std::lock_guard lock(mu);
          stop = true;
          cv.notify_all();
        });
  } catch (const ddp::platform::NotAService& e) {
    std::cerr << e.what() << "\n";
    return 3;
  }
}
