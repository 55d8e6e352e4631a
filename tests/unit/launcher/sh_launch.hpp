#pragma once
// A worker launch that runs a /bin/sh script with a minimal PATH: the ranks of the tests that start
// real processes (test_spawner.cpp, test_worker_group.cpp).
#include <string>

#include "launcher/workers/worker_env.hpp"

namespace ddp::test {

inline launcher::WorkerLaunch sh(const std::string& script) {
  launcher::WorkerLaunch l;
  l.argv = {"/bin/sh", "-c", script};
  l.env = {{"PATH", "/usr/bin:/bin"}};
  return l;
}

}  // namespace ddp::test
