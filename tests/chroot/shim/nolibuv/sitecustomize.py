"""Makes torch.distributed.TCPStore default to use_libuv=False. Opt in with PYTHONPATH=<this dir>.

Debian builds python3-torch (2.6, 2.14) without libuv, yet torch >= 2.4 defaults TCPStore to
use_libuv=True and some call sites never pass it: the agent-store path of env:// rendezvous
(TORCHELASTIC_USE_AGENT_STORE=True) and torchrun's static rendezvous. Those raise "use_libuv was
requested but PyTorch was built without libuv support" even with USE_LIBUV=0. A client's wire
bytes do not depend on use_libuv, so defaulting it off changes nothing a store sees.

The swap happens right after torch.distributed finishes importing; modules it imported on the
way that already hold the original class by name get the replacement too. An explicit
use_libuv=True still reaches torch (and still fails).
"""
import importlib.abc
import importlib.util
import sys


def _install(dist):
    original = getattr(dist, "TCPStore", None)
    if original is None or getattr(original, "_ddp_nolibuv", False):
        return

    class TCPStore(original):
        _ddp_nolibuv = True

        def __init__(self, *args, **kwargs):
            # use_libuv is the 9th positional parameter; only fill it when nobody passed it.
            if len(args) < 9:
                kwargs.setdefault("use_libuv", False)
            super().__init__(*args, **kwargs)

    TCPStore.__name__ = TCPStore.__qualname__ = "TCPStore"
    TCPStore.__module__ = original.__module__
    for name, module in list(sys.modules.items()):
        if name.startswith("torch.distributed") and getattr(module, "TCPStore", None) is original:
            module.TCPStore = TCPStore


class _AfterImport(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "torch.distributed":
            return None
        sys.meta_path.remove(self)  # let the normal finders locate the real module
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        run_module = spec.loader.exec_module

        def exec_module(module):
            run_module(module)
            _install(module)

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _AfterImport())
