#include <doctest/doctest.h>

#include "launcher/supervisor/filestore_guard.hpp"

using namespace ddp::launcher;

namespace {
std::vector<std::string> paths(const std::vector<NamedFileStore>& named) {
  std::vector<std::string> out;
  for (const auto& n : named) out.push_back(n.path);
  return out;
}
}  // namespace

TEST_CASE("file:// in the worker's argv: separate, after =, inside a longer value; query and host dropped") {
  auto named = filestores_named_by(
      {"/usr/bin/python3", "-u", "main.py", "--dist-url", "file:///tmp/a", "--init_method=file:///tmp/b?world_size=2",
       "--cfg", "url='file:///tmp/c' x", "file://localhost/tmp/d#frag"},
      {}, false);
  CHECK(paths(named) == std::vector<std::string>{"/tmp/a", "/tmp/b", "/tmp/c", "/tmp/d"});
  CHECK(named[0].where == "argument 'file:///tmp/a'");
}

TEST_CASE("file:// in any environment variable, and $DDP_FILESTORE_PATH unless the run sets it") {
  EnvMap env{{"INIT_METHOD", "file:///shared/init"}, {"DDP_FILESTORE_PATH", "/tmp/fs"}, {"HOME", "/root"}};
  auto named = filestores_named_by({"train.py"}, env, false);
  CHECK(paths(named) == std::vector<std::string>{"/shared/init", "/tmp/fs"});
  CHECK(named[0].where == "$INIT_METHOD");
  CHECK(paths(filestores_named_by({"train.py"}, env, true)) == std::vector<std::string>{"/shared/init"});
}

TEST_CASE("no FileStore named: placeholders, other schemes, a bare file:// and duplicates") {
  CHECK(filestores_named_by({"main.py", "--dist-url", "{filestore_url}", "tcp://{master_addr}:1", "file://", "file:///",
                             "file:///tmp/run_{rank}", "env://"},
                            {{"PATH", "/usr/bin"}}, false)
            .empty());
  CHECK(paths(filestores_named_by({"file:///tmp/x", "--again=file:///tmp/x"}, {{"U", "file:///tmp/x"}}, false)) ==
        std::vector<std::string>{"/tmp/x"});
}

TEST_CASE("on Windows, file:// URLs read as torch reads them there: drive paths") {
  auto named = filestores_named_by({"python.exe", "main.py", "--dist-url", "file:///C:/tmp/ddp-init",
                                    "--init_method=file://D:/shared/init?world_size=2"},
                                   {{"INIT", "file:///C:/tmp/ddp-init"}}, false, ddp::store::PathStyle::Windows);
  CHECK(paths(named) == std::vector<std::string>{"C:\\tmp\\ddp-init", "D:\\shared\\init"});
}
