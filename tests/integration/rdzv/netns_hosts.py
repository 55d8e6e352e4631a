"""Network namespaces as hosts, for the rendezvous tests: the logic of
shared/reference/netns/netns.sh with names and a subnet of our own (several runs and other users
share the machine). Host i lives in namespace <prefix>-n<i> with <subnet>.<i> on eth0, all joined by
a bridge in <prefix>-sw; the root namespace gets no interface, address or route. Needs root and
iproute2; `available()` says why not otherwise."""
import os
import shutil
import subprocess


def _run(*args):
    r = subprocess.run(list(args), capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {r.stderr.strip()}")
    return r.stdout


def available():
    """None when namespaces can be made here, else why not."""
    if os.geteuid() != 0:
        return "not root"
    if not shutil.which("ip"):
        return "no iproute2 (ip)"
    try:
        name = f"ddpchk{os.getpid()}"
        _run("ip", "netns", "add", name)
        _run("ip", "netns", "del", name)
    except Exception as e:  # noqa: BLE001 - any failure means: skip
        return f"cannot create a network namespace: {e}"
    return None


class Hosts:
    def __init__(self, count):
        tag = os.getpid() % 100000
        self.prefix = f"dr{tag}"
        self.subnet = f"10.{216 + tag % 30}.{tag % 250}"
        self.count = count
        self.switch = f"{self.prefix}-sw"
        self.up()

    def ns(self, i):
        return f"{self.prefix}-n{i}"

    def addr(self, i):
        return f"{self.subnet}.{i}"

    def exec_prefix(self, i):
        return ["ip", "netns", "exec", self.ns(i)]

    def up(self):
        self.down()
        _run("ip", "netns", "add", self.switch)
        _run("ip", "-n", self.switch, "link", "set", "lo", "up")
        _run("ip", "-n", self.switch, "link", "add", "br0", "type", "bridge")
        _run("ip", "-n", self.switch, "link", "set", "br0", "up")
        for i in range(1, self.count + 1):
            ns = self.ns(i)
            _run("ip", "netns", "add", ns)
            _run("ip", "-n", ns, "link", "set", "lo", "up")
            _run("ip", "-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", f"p{i}", "netns", self.switch)
            _run("ip", "-n", self.switch, "link", "set", f"p{i}", "master", "br0", "up")
            _run("ip", "-n", ns, "addr", "add", f"{self.addr(i)}/24", "dev", "eth0")
            _run("ip", "-n", ns, "link", "set", "eth0", "up")

    def cut(self, i):
        """Partition host i: its switch port goes down (both directions)."""
        _run("ip", "-n", self.switch, "link", "set", f"p{i}", "down")

    def heal(self, i):
        _run("ip", "-n", self.switch, "link", "set", f"p{i}", "up")

    def down(self):
        """SIGKILL what lives in our namespaces (by pid), then delete them."""
        listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
        ours = [n for n in listed if n.startswith(self.prefix + "-")]
        for ns in ours:
            pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), 9)
                except (ProcessLookupError, ValueError):
                    pass
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.down()
