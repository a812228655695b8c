"""The pod network of the test kubelet: a bridge in a network namespace of its own (the "switch"), and
for each pod a network namespace with `eth0` on that bridge and an address that exists only there.
Nothing is routed off the machine, and nothing outside these namespaces is ever addressed.

Names are resolved as the headless Service's DNS records resolve them (`publishNotReadyAddresses`:
a pod's name resolves once the pod has its address, ready or not): every pod mounts one hosts file,
to which a pod's line is added when its sandbox is made, before its containers start. A pod replaced
under the same hostname keeps its address here (Kubernetes would give it a new one, and update the
record).
"""

from __future__ import annotations

import contextlib
import ipaddress
import itertools
import os
import subprocess
from pathlib import Path

PREFIX = "mck"
"""Every namespace this harness makes is named mck<kind>-<pid of the test process>-<n>."""
SUBNET = ipaddress.ip_network("10.244.0.0/16")
_serial = itertools.count()


def ip(*args: str, namespace: str | None = None) -> None:
    command = ["ip", *(["-n", namespace] if namespace else []), *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=10)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)}: {done.stderr.strip()}")


def remove_stale_namespaces() -> None:
    """Namespaces left by a test process that died before it could remove them (SIGKILL, a crash)."""
    listing = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    for line in listing.splitlines():
        name = line.split()[0] if line.split() else ""
        parts = name.split("-")
        if not name.startswith(PREFIX) or len(parts) < 3 or not parts[1].isdigit():
            continue
        if not Path(f"/proc/{parts[1]}").exists():
            subprocess.run(["ip", "netns", "delete", name], capture_output=True)


class PodNetwork:
    """One cluster's network. `add(host, fqdn)` gives a pod its namespace and address."""

    def __init__(self, hosts_file: Path) -> None:
        remove_stale_namespaces()
        self.tag = f"{os.getpid()}-{next(_serial)}"
        self.switch = f"{PREFIX}sw-{self.tag}"
        self.hosts_file = hosts_file
        hosts_file.write_text("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
        hosts_file.chmod(0o644)
        self.namespaces: dict[str, str] = {}  # hostname -> its pod's network namespace
        self.addresses: dict[str, str] = {}
        self._hosts = SUBNET.hosts()
        next(self._hosts)  # .1: the bridge's own, were it given one
        ip("netns", "add", self.switch)
        ip("link", "add", "br0", "type", "bridge", namespace=self.switch)
        ip("link", "set", "br0", "up", namespace=self.switch)

    def add(self, host: str, fqdn: str) -> str:
        """The network namespace of pod `host`: made with its address on first use, kept for the pod that
        replaces it."""
        if host in self.namespaces:
            return self.namespaces[host]
        index = len(self.namespaces)
        namespace = f"{PREFIX}pod-{self.tag}-{index}"
        address = str(next(self._hosts))
        ip("netns", "add", namespace)
        self.namespaces[host] = namespace
        veth = f"v{index}"  # its end on the bridge; the pod's end is eth0
        ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", namespace, namespace=self.switch)
        ip("link", "set", veth, "master", "br0", "up", namespace=self.switch)
        ip("addr", "add", f"{address}/{SUBNET.prefixlen}", "dev", "eth0", namespace=namespace)
        ip("link", "set", "eth0", "up", namespace=namespace)
        ip("link", "set", "lo", "up", namespace=namespace)
        self.addresses[host] = address
        with self.hosts_file.open("a") as hosts:  # appended: a pod reading it never sees it half-written
            hosts.write(f"{address}\t{fqdn}\t{host}\n")
        return namespace

    def close(self) -> None:
        for namespace in [*self.namespaces.values(), self.switch]:
            with contextlib.suppress(subprocess.SubprocessError):
                subprocess.run(["ip", "netns", "delete", namespace], capture_output=True, timeout=10)
        self.namespaces.clear()
