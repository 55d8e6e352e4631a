#include <doctest/doctest.h>

#include "launcher/workers/cgroup.hpp"

using namespace ddp::launcher;

TEST_CASE("/proc/self/cgroup: the v2 line and the v1 memory line") {
  auto own = parse_proc_cgroup(
      "9:name=systemd:/\n4:memory:/process_api/7ad7\n3:cpuset:/\n1:cpu,cpuacct:/x\n0::/user.slice/job\n");
  REQUIRE(own.v2);
  CHECK(*own.v2 == "/user.slice/job");
  REQUIRE(own.v1_memory);
  CHECK(*own.v1_memory == "/process_api/7ad7");
  auto pure_v2 = parse_proc_cgroup("0::/\n");
  CHECK(*pure_v2.v2 == "/");
  CHECK_FALSE(pure_v2.v1_memory);
  CHECK_FALSE(parse_proc_cgroup("garbage\n").v2);
}

TEST_CASE("mountinfo: a hybrid host's cgroup2 and v1 memory mounts") {
  auto m = parse_mountinfo(
      "30 25 0:26 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
      "34 30 0:30 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory\n"
      "35 30 0:31 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
      "40 30 0:36 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n");
  REQUIRE(m.v2);
  CHECK(m.v2->mountpoint == "/sys/fs/cgroup/unified");
  REQUIRE(m.v1_memory);
  CHECK(m.v1_memory->mountpoint == "/sys/fs/cgroup/memory");
  CHECK(*m.v2->dir_of("/") == "/sys/fs/cgroup/unified");
  CHECK(*m.v1_memory->dir_of("/process_api/7ad7") == "/sys/fs/cgroup/memory/process_api/7ad7");
}

TEST_CASE("a container's bind-mounted sub-tree: paths outside it have no directory") {
  auto m = parse_mountinfo("50 40 0:36 /docker/abc /sys/fs/cgroup ro,nosuid - cgroup2 cgroup2 rw\n");
  REQUIRE(m.v2);
  CHECK(*m.v2->dir_of("/docker/abc/job") == "/sys/fs/cgroup/job");
  CHECK(*m.v2->dir_of("/docker/abc") == "/sys/fs/cgroup");
  CHECK_FALSE(m.v2->dir_of("/docker/abcdef"));
  CHECK_FALSE(m.v2->dir_of("/other"));
}

TEST_CASE("oom_kill count from memory.events (v2) and memory.oom_control (v1)") {
  CHECK(parse_oom_kill_count("low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 0\n") == 1u);
  CHECK(parse_oom_kill_count("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n") == 3u);
  CHECK_FALSE(parse_oom_kill_count("oom_kill_disable 0\nunder_oom 0\n"));
}

TEST_CASE("kernel log records that name an OOM-killer victim") {
  CHECK(kernel_log_names_oom_kill(
      "3,1234,5678,-;Out of memory: Killed process 4242 (python3) total-vm:1000kB, anon-rss:900kB", 4242));
  CHECK(kernel_log_names_oom_kill("3,1,2,-;Memory cgroup out of memory: Killed process 77 (python3) total-vm:1kB",
                                  77));
  CHECK(kernel_log_names_oom_kill("6,1,2,-;oom-kill:constraint=CONSTRAINT_MEMCG,task=python3,pid=77,uid=0", 77));
  CHECK_FALSE(kernel_log_names_oom_kill("3,1,2,-;Out of memory: Killed process 42420 (python3)", 4242));
  CHECK_FALSE(kernel_log_names_oom_kill("6,1,2,-;audit: something pid=77,uid=0", 77));
}

TEST_CASE("memory sizes: suffixes are powers of 1024; bad values are refused") {
  CHECK(parse_memory_size("1048576") == 1048576u);
  CHECK(parse_memory_size("64M") == 64u << 20);
  CHECK(parse_memory_size("64MiB") == 64u << 20);
  CHECK(parse_memory_size("1.5G") == 3u << 29);
  CHECK(parse_memory_size("2k") == 2048u);
  CHECK_FALSE(parse_memory_size(""));
  CHECK_FALSE(parse_memory_size("M"));
  CHECK_FALSE(parse_memory_size("-5M"));
  CHECK_FALSE(parse_memory_size("ten"));
  CHECK(format_memory_size(64u << 20) == "64 MiB");
  CHECK(format_memory_size(3u << 29) == "1.5 GiB");
  CHECK(format_memory_size(100) == "100 bytes");
}
