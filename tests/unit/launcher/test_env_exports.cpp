#include <doctest/doctest.h>

#include <map>

#include "common/error.hpp"
#include "launcher/workers/env_exports.hpp"

using namespace ddp::launcher;

namespace {
std::map<std::string, std::string> as_map(const std::vector<EnvExport>& v) {
  std::map<std::string, std::string> m;
  for (const auto& e : v) m[e.name] = e.value;
  return m;
}

std::string usage_error(EnvExportsInput in, std::string_view address = "127.0.0.1:29500") {
  try {
    set_store_address(in, address);
    env_exports(in);
  } catch (const ddp::UsageError& e) {
    return e.what();
  }
  FAIL("expected a UsageError");
  return {};
}
}  // namespace

TEST_CASE("env exports: torch's four, the local ones, and the two torch-internal variables") {
  EnvExportsInput in;
  set_store_address(in, "10.0.0.7:29511");
  in.rank = 1;
  in.world_size = 2;
  auto m = as_map(env_exports(in));
  CHECK(m == std::map<std::string, std::string>{{"MASTER_ADDR", "10.0.0.7"},
                                                {"MASTER_PORT", "29511"},
                                                {"WORLD_SIZE", "2"},
                                                {"RANK", "1"},
                                                {"LOCAL_RANK", "1"},
                                                {"LOCAL_WORLD_SIZE", "2"},
                                                {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                                                {"TORCHELASTIC_RESTART_COUNT", "0"}});
}

TEST_CASE("env exports for several machines: local rank and local world size as given") {
  EnvExportsInput in;
  set_store_address(in, "[::1]:29500");
  in.rank = 5;
  in.world_size = 8;
  in.local_rank = 1;
  in.local_world_size = 4;
  in.restart_count = 2;
  auto m = as_map(env_exports(in));
  CHECK(m.at("MASTER_ADDR") == "::1");
  CHECK(m.at("LOCAL_RANK") == "1");
  CHECK(m.at("LOCAL_WORLD_SIZE") == "4");
  CHECK(m.at("TORCHELASTIC_RESTART_COUNT") == "2");
}

TEST_CASE("env exports render as sh exports, quoted where needed, with a comment each") {
  auto text = render_sh_exports({{"MASTER_ADDR", "node-1.example", "host"}, {"X", "a b'c", "odd"}});
  CHECK(text.find("export MASTER_ADDR=node-1.example ") == 0);
  CHECK(text.find("export X='a b'\\''c'") != std::string::npos);
  CHECK(text.find("# host\n") != std::string::npos);
  CHECK(text.find("# odd\n") != std::string::npos);
}

TEST_CASE("env exports render for cmd.exe: a rem line, then set \"NAME=value\"; cmd syntax in a value is refused") {
  auto text = render_cmd_exports({{"MASTER_ADDR", "node-1.example", "host"}, {"X", "a b", "keys under /a/<n>/ | & x"}});
  CHECK(text == "rem host\nset \"MASTER_ADDR=node-1.example\"\nrem keys under /a/(n)/ / + x\nset \"X=a b\"\n");
  for (std::string bad : {"a\"b", "100%", "a^b", "a!b", "a\nb"}) {
    try {
      render_cmd_exports({{"X", bad, "odd"}});
      FAIL("no error for " << bad);
    } catch (const ddp::UsageError& e) {
      CHECK(std::string(e.what()).find("--shell powershell") != std::string::npos);
    }
  }
}

TEST_CASE("env exports render for PowerShell: $env:NAME = 'value', a ' doubled, with a comment each") {
  auto text = render_powershell_exports({{"MASTER_ADDR", "node-1.example", "host"}, {"X", "a b'c", "odd"}});
  CHECK(text.find("$env:MASTER_ADDR = 'node-1.example' ") == 0);
  CHECK(text.find("$env:X = 'a b''c'") != std::string::npos);
  CHECK(text.find("# host\n") != std::string::npos);
  CHECK(text.find("# odd\n") != std::string::npos);
}

TEST_CASE("bad env input names the flag to fix") {
  EnvExportsInput in;
  in.world_size = 2;
  CHECK(usage_error(in, "127.0.0.1").find("--store") != std::string::npos);
  CHECK(usage_error(in, "127.0.0.1:0").find("not a port") != std::string::npos);
  CHECK(usage_error(in, ":29500").find("no host") != std::string::npos);
  CHECK(usage_error(in, "::1:29500").find("[ADDR]") != std::string::npos);
  in.rank = 2;
  CHECK(usage_error(in).find("--rank 2 is outside 0..1") != std::string::npos);
  in.rank = 0;
  in.local_rank = 3;
  in.local_world_size = 2;
  CHECK(usage_error(in).find("--local-rank 3") != std::string::npos);
  in.local_rank = 0;
  in.local_world_size = 3;
  CHECK(usage_error(in).find("--local-world-size 3") != std::string::npos);
}
