"""What the real node changes on the machine, each change undone by `restore`: the addresses it adds to
the loopback (the node's, the `kubernetes` Service's), the kernel settings the kubelet sets and cannot be
told not to, the paths programs write outside any folder they are given, the cgroups the kubelet makes,
the pods' network namespaces and the shared mount point they live in; and the relay that carries the
`kubernetes` Service's address to the API server (this machine has no kube-proxy, iptables or
nftables); and the end of what a killed node left running. Standard library only.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import socket
import subprocess
import threading
from pathlib import Path

from tests.engines.versions import NODE_BIN

SYSCTLS = ("vm/overcommit_memory", "kernel/panic", "kernel/panic_on_oops")
"""What the kubelet sets (its defaults for a node), saved before it starts and restored after."""
FIXED_PATHS = (
    Path("/run/containerd"), Path("/var/lib/kubelet"), Path("/var/log/containers"), Path("/var/log/pods"),
    Path("/var/lib/cni"), Path("/etc/cni"), Path("/opt/cni"),
)  # fmt: skip
"""Paths containerd, the shims, the kubelet and the CNI plugins write whatever they are told: removed
at the end if the node made them (one that was there before is left as it was)."""
POD_NETNS = Path("/var/run/netns")
"""Where containerd keeps the pods' network namespaces (cni-*), beside those of `ip netns` (the test
kubelet's): the node removes its own only."""
CGROUP_ROOT = Path("/sys/fs/cgroup")
CLAIMS = Path("/run/minicluster-node.claims")
"""The fixed paths the node made, one a line, so that a node killed before its stop is known by the
next one: what it made counts as made by the next, which removes it at its own stop. A file of its own
rather than a mark in each path: the kubelet removes what it does not know from /var/log/pods."""


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=10)


class HostChanges:
    """The machine's state as the node found it, and the changes the node made to it."""

    def __init__(self) -> None:
        self.sysctls = {name: (Path("/proc/sys") / name).read_text() for name in SYSCTLS}
        claimed = CLAIMS.read_text().splitlines() if CLAIMS.exists() else []
        self.absent = [path for path in FIXED_PATHS if not path.exists() or str(path) in claimed]
        self.addresses: list[str] = []
        self.relays: list[Relay] = []
        self.netns_dir_mounted = False

    def add_address(self, address: str) -> None:
        """`address` on the loopback; one a node killed before its stop left there is taken over."""
        if address not in loopback_addresses():
            ip("address", "add", f"{address}/32", "dev", "lo")
        self.addresses.append(address)

    def claim(self) -> None:
        """Record the fixed paths that were not there (CLAIMS), before any program writes them: a node
        killed later still leaves them known as the node's."""
        CLAIMS.write_text("".join(f"{path}\n" for path in self.absent))

    def share_netns_dir(self) -> None:
        """Make POD_NETNS the shared mount point that `ip netns add` makes of it on its first use (a bind
        of the folder onto itself, recursive, then shared), before containerd mounts the pods' network
        namespaces in it. Made later, by the test kubelet's `ip netns` on a fresh machine, that bind
        covers the namespaces containerd mounted before: their mounts stay beneath it, where no path
        reaches them, and the node could neither unmount nor remove them."""
        POD_NETNS.mkdir(parents=True, exist_ok=True)
        if _mount_point(POD_NETNS):
            return
        subprocess.run(["mount", "--rbind", str(POD_NETNS), str(POD_NETNS)], check=True, capture_output=True)
        subprocess.run(["mount", "--make-shared", str(POD_NETNS)], check=True, capture_output=True)
        self.netns_dir_mounted = True

    def relay(self, address: str, port: int, target: tuple[str, int]) -> None:
        self.relays.append(Relay((address, port), target))

    def restore(self) -> None:
        """Undo every change, whatever state the node stopped in."""
        for relay in self.relays:
            relay.close()
        for address in self.addresses:
            subprocess.run(["ip", "address", "del", f"{address}/32", "dev", "lo"], capture_output=True)
        for name, value in self.sysctls.items():
            with contextlib.suppress(OSError):
                (Path("/proc/sys") / name).write_text(value)
        for path in self.absent:
            unmount_under(path)
            shutil.rmtree(path, ignore_errors=True)
        if remaining := [path for path in self.absent if path.exists()]:  # still the node's, for the next
            CLAIMS.write_text("".join(f"{path}\n" for path in remaining))
        else:
            CLAIMS.unlink(missing_ok=True)
        for cgroup in pod_cgroups():
            _remove_cgroup(cgroup)
        remove_pod_netns()
        if self.netns_dir_mounted and not any(POD_NETNS.iterdir()):  # `ip netns` may have come to use it since
            subprocess.run(["umount", str(POD_NETNS)], capture_output=True)

    def left_behind(self) -> list[str]:
        """What of the node's changes is still there after `restore`: nothing, when all went well."""
        left = [f"{address} on lo" for address in self.addresses if address in loopback_addresses()]
        now = {name: (Path("/proc/sys") / name).read_text() for name in self.sysctls}
        left += [f"{name} is {now[name].strip()}, not {value.strip()}" for name, value in self.sysctls.items()
                 if now[name] != value]  # fmt: skip
        left += [str(path) for path in self.absent if path.exists()]
        left += [str(netns) for netns in POD_NETNS.glob("cni-*")]
        if self.netns_dir_mounted and _mount_point(POD_NETNS) and not any(POD_NETNS.iterdir()):
            left.append(f"{POD_NETNS} bound onto itself")
        return left + [str(cgroup) for cgroup in pod_cgroups()]


def loopback_addresses() -> list[str]:
    shown = subprocess.run(["ip", "-o", "-4", "address", "show", "dev", "lo"], capture_output=True, text=True).stdout
    return [line.split()[3].split("/")[0] for line in shown.splitlines()]


def _mount_points() -> list[str]:
    """Every mount point of this mount namespace, as the mount table names it (resolved: /var/run is /run)."""
    return [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]


def unmount_under(path: Path) -> None:
    """Unmount whatever is mounted at or under `path` (netns files, the kubelet's volumes), deepest first."""
    path = path.resolve()
    for point in sorted((m for m in _mount_points() if m == str(path) or m.startswith(f"{path}/")), reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True)


def _mount_point(path: Path) -> bool:
    return str(path.resolve()) in _mount_points()


def remove_pod_netns() -> None:
    """The pods' network namespaces containerd left (a killed node's, or a pod's its stop cut short)."""
    for netns in POD_NETNS.glob("cni-*"):
        unmount_under(netns)
        with contextlib.suppress(OSError):  # still in use: left_behind says so
            netns.unlink()


def pod_cgroups() -> list[Path]:
    """The kubelet's pod cgroups (kubepods), one in each hierarchy that has it."""
    hierarchies = CGROUP_ROOT.iterdir() if CGROUP_ROOT.exists() else iter(())
    return [hierarchy / "kubepods" for hierarchy in hierarchies if (hierarchy / "kubepods").is_dir()]


def end_pods() -> None:
    """SIGKILL every process in the kubelet's pod cgroups."""
    for procs in (found for cgroup in pod_cgroups() for found in cgroup.rglob("cgroup.procs")):
        for pid in procs.read_text().split():
            with contextlib.suppress(OSError):
                os.kill(int(pid), signal.SIGKILL)


def _remove_cgroup(path: Path) -> None:
    """A cgroup and its children, deepest first (a cgroup folder goes with rmdir, once it has no tasks)."""
    if not path.is_dir():
        return
    for child in path.iterdir():
        if child.is_dir():
            _remove_cgroup(child)
    with contextlib.suppress(OSError):
        path.rmdir()


class Relay:
    """TCP from `listen` to `target`, byte for byte, a thread per connection: the `kubernetes` Service's
    address carried to the API server, TLS and all (the pods verify the server's certificate, which
    names that address)."""

    def __init__(self, listen: tuple[str, int], target: tuple[str, int]) -> None:
        self.target = target
        self.server = socket.create_server(listen)
        self.closed = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed.is_set():
            try:
                incoming, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._relay, args=(incoming,), daemon=True).start()

    def _relay(self, incoming: socket.socket) -> None:
        try:
            outgoing = socket.create_connection(self.target, timeout=10)
        except OSError:
            incoming.close()
            return
        with incoming, outgoing:
            both_ways(incoming, outgoing, self.closed)

    def close(self) -> None:
        self.closed.set()
        self.server.close()


def both_ways(inside: socket.socket, outside: socket.socket, stopping: threading.Event) -> None:
    """Bytes both ways until either side closes or `stopping` is set: the TLS session is the client's
    with the server, as through a TCP proxy."""
    ends = [inside, outside]
    while not stopping.is_set():
        readable, _, _ = select.select(ends, [], [], 0.5)
        for end in readable:
            try:
                data = end.recv(65536)
                if data:
                    (outside if end is inside else inside).sendall(data)
            except OSError:  # reset by either side: the connection is over, as a proxy sees it
                data = b""
            if not data:
                return


def end_orphans() -> None:
    """The programs of a node whose node.py was killed before its stop (their parent is gone) are ended;
    a node whose node.py runs is one too many for this machine."""
    for pid, argv, parent in _node_processes():
        alive = False
        with contextlib.suppress(OSError):
            alive = b"tests/engines/node.py" in Path(f"/proc/{parent}/cmdline").read_bytes()
        if alive and parent != os.getpid():
            raise RuntimeError(
                f"another real node runs on this machine (pid {pid}, {argv[0].decode()}): one per machine"
            )
    for pid, _, _ in _node_processes():
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    end_pods()  # what its containers ran
    remove_pod_netns()


def _node_processes() -> list[tuple[int, list[bytes], int]]:
    """(pid, argv, parent pid) of every process running a program of NODE_BIN."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            parent = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if proc.name.isdigit() and argv and argv[0].startswith(str(NODE_BIN).encode()):
            found.append((int(proc.name), argv, parent))
    return found


def kill_shims(socket: Path) -> None:
    """The shims of this node's containerd outlive it (that is their job): end them and their pods."""
    for pid, argv, _ in _node_processes():
        if argv[0].endswith(b"containerd-shim-runc-v2") and str(socket).encode() in argv:
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                with contextlib.suppress(OSError):  # gone meanwhile
                    os.kill(pid, signal.SIGKILL)
