"""Worker nodes on a network of their own, whose links the tests cut and heal.

A bridge on the host with an address on a private /24 (one no interface here uses), and for each
node a network namespace joined to the bridge by a veth pair. A node runs in its namespace
(`nsenter --net`, which changes nothing else: the node's sandbox keeps its cgroups and mounts) and
reaches Redis at the bridge's address. Cutting a link takes the host end of its veth down: packets
are dropped both ways without a reset, as when a cable or a switch fails, so connections hang
rather than fail. Healing takes it up again, and the connections carry on.

Needs root and iproute2; `Network.available()` says why not where either is missing.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import shutil
import subprocess
from collections.abc import Iterator


def _ip(*args: str) -> str:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=10)
    if done.returncode != 0:
        raise OSError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


class Network:
    """A bridge and one namespace per node; `close` removes everything it made."""

    def __init__(self) -> None:
        self.tag = f"ef{os.getpid() % 100000}"  # names stay under the kernel's 15 characters
        self.bridge = f"{self.tag}br"
        self.subnet = _free_subnet()
        self.host = str(self.subnet.network_address + 1)  # the bridge's address: Redis listens here
        self.spaces: list[str] = []

    @staticmethod
    def available() -> str | None:
        """Why this machine cannot run these tests, or None when it can."""
        if os.geteuid() != 0:
            return "network namespaces and veth pairs need root"
        for tool in ("ip", "nsenter"):
            if shutil.which(tool) is None:
                return f"no {tool} here (iproute2, util-linux)"
        probe = f"ef{os.getpid() % 100000}probe"
        try:  # root in a container may still lack CAP_NET_ADMIN, or namespaces
            _ip("netns", "add", probe)
            _ip("netns", "del", probe)
        except OSError as error:
            return f"cannot make a network namespace here: {error}"
        return None

    def open(self) -> Network:
        _ip("link", "add", self.bridge, "type", "bridge")
        _ip("addr", "add", f"{self.host}/{self.subnet.prefixlen}", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        return self

    def add_space(self) -> str:
        """A new namespace joined to the bridge; its name (for `enter`, `cut`, `heal`)."""
        index = len(self.spaces)
        space, outside = f"{self.tag}-{index}", f"{self.tag}h{index}"
        address = self.subnet.network_address + 10 + index
        _ip("netns", "add", space)
        self.spaces.append(space)
        _ip("link", "add", outside, "type", "veth", "peer", "name", "eth0", "netns", space)
        _ip("link", "set", outside, "master", self.bridge)
        _ip("link", "set", outside, "up")
        _ip("-n", space, "addr", "add", f"{address}/{self.subnet.prefixlen}", "dev", "eth0")
        _ip("-n", space, "link", "set", "eth0", "up")
        _ip("-n", space, "link", "set", "lo", "up")
        return space

    def enter(self, space: str) -> list[str]:
        """The command prefix that runs a program in `space`'s network, and nothing else changed."""
        return ["nsenter", f"--net=/run/netns/{space}", "--"]

    def cut(self, space: str) -> None:
        """Drop every packet between `space` and the rest, both ways, without a reset."""
        _ip("link", "set", self._outside(space), "down")

    def heal(self, space: str) -> None:
        _ip("link", "set", self._outside(space), "up")

    def _outside(self, space: str) -> str:
        return f"{self.tag}h{self.spaces.index(space)}"

    def close(self) -> None:
        for space in self.spaces:
            with contextlib.suppress(OSError):
                _ip("link", "del", self._outside(space))  # its peer in the namespace goes with it
            with contextlib.suppress(OSError):
                _ip("netns", "del", space)
        with contextlib.suppress(OSError):
            _ip("link", "del", self.bridge)


def _free_subnet() -> ipaddress.IPv4Network:
    """A /24 in 10.231.0.0/16 that no address on this machine falls in."""
    used = [ipaddress.ip_interface(word) for word in _ip("-4", "-o", "addr").split() if "/" in word]
    for third in range(os.getpid() % 200, os.getpid() % 200 + 256):
        subnet = ipaddress.ip_network(f"10.231.{third % 256}.0/24")
        if not any(interface.network.overlaps(subnet) for interface in used):
            return subnet
    raise OSError("no free /24 in 10.231.0.0/16")


@contextlib.contextmanager
def network() -> Iterator[Network]:
    made = Network()
    try:
        yield made.open()
    finally:
        made.close()
