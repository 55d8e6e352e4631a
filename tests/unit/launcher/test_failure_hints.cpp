#include <doctest/doctest.h>

#include "launcher/supervisor/failure_hints.hpp"

using namespace ddp::launcher;

TEST_CASE("a rank that cannot import torch: the hint names its interpreter, --python and PYTHON_EXEC") {
  std::vector<std::string> tail{"Traceback (most recent call last):", "  File \"train.py\", line 1, in <module>",
                                "    import torch", "ModuleNotFoundError: No module named 'torch'"};
  auto hint = missing_torch_hint(tail, {"/opt/pyenv/shims/python3", "-u", "train.py"});
  REQUIRE(hint);
  CHECK(hint->find("/opt/pyenv/shims/python3") != std::string::npos);
  CHECK(hint->find("--python PATH") != std::string::npos);
  CHECK(hint->find("PYTHON_EXEC") != std::string::npos);
  CHECK(hint->find("No module named 'torch'") != std::string::npos);
}

TEST_CASE("torch submodules and torch's libraries count; other modules do not") {
  std::vector<std::string> argv{"/usr/bin/python3.11", "-u", "x.py"};
  CHECK(missing_torch_hint({"ModuleNotFoundError: No module named 'torch.distributed'"}, argv));
  CHECK(missing_torch_hint({"ImportError: libtorch_cpu.so: cannot open shared object file"}, argv));
  CHECK(!missing_torch_hint({"ModuleNotFoundError: No module named 'torchvision'"}, argv));
  CHECK(!missing_torch_hint({"ModuleNotFoundError: No module named 'numpy'"}, argv));
  CHECK(!missing_torch_hint({"RuntimeError: torch is fine"}, argv));
}

TEST_CASE("--no-python: the program is named, and how to get --python back") {
  auto hint = missing_torch_hint({"ModuleNotFoundError: No module named 'torch'"}, {"/work/train.sh"});
  REQUIRE(hint);
  CHECK(hint->find("/work/train.sh") != std::string::npos);
  CHECK(hint->find("--no-python") != std::string::npos);
  CHECK(hint->find("--python PATH") != std::string::npos);
}
