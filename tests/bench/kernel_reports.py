"""What the kernel reports of every task on this machine while one listens, without stopping any of
them (strace, which stops each traced task at every event, doubled a bring-up's time on two cores):

- `ProcessEvents`: each fork, exec and exit as it happens, on the process events connector
  (linux/cn_proc.h), with the kernel's monotonic clock in nanoseconds;
- `TaskCpu`: each task's CPU time and command name at its exit, from taskstats over generic netlink
  (linux/taskstats.h, the interface behind `getdelays -m`): `cpu_run_virtual_total` is the task's
  scheduler runtime in nanoseconds, where process accounting and /proc round to 10 ms or to a tick.

Both name tasks by the host's ids, also those in a pod's PID namespace. Both need root (CAP_NET_ADMIN).
For tests.bench.process_trace.
"""

from __future__ import annotations

import os
import socket
import struct
import threading
from dataclasses import dataclass

NETLINK_HEADER = struct.Struct("IHHII")
NLMSG_DONE = 3
NLM_F_REQUEST = 1
ATTRIBUTE = struct.Struct("HH")

NETLINK_CONNECTOR, CN_IDX_PROC, CN_VAL_PROC, PROC_CN_MCAST_LISTEN = 11, 1, 1, 1
CONNECTOR_HEADER = struct.Struct("IIIIHH")
"""struct cn_msg: idx, val, seq, ack, len, flags."""
PROC_EVENT = struct.Struct("IIQ")
"""struct proc_event's head: what, cpu, timestamp_ns; then the event's own fields."""
FORK, EXEC, EXIT = 0x1, 0x2, 0x80000000

NETLINK_GENERIC = 16
GENL_ID_CTRL, CTRL_CMD_GETFAMILY, CTRL_ATTR_FAMILY_ID, CTRL_ATTR_FAMILY_NAME = 0x10, 3, 1, 2
TASKSTATS_CMD_GET, TASKSTATS_CMD_ATTR_REGISTER_CPUMASK = 1, 3
TASKSTATS_TYPE_PID, TASKSTATS_TYPE_STATS, TASKSTATS_TYPE_AGGR_PID = 1, 3, 4
COMM = slice(80, 112)
"""struct taskstats' ac_comm."""
RUNTIME_OFFSET = 72
"""struct taskstats' cpu_run_virtual_total (the task's sum_exec_runtime, in ns)."""


@dataclass(frozen=True)
class Event:
    kind: int
    at: float
    """The kernel's monotonic clock, in seconds (time.monotonic's)."""
    pid: int
    tgid: int
    child_pid: int = 0
    child_tgid: int = 0


class _Listener:
    """A netlink socket read by a thread of its own from `with` to the end of the block."""

    def __init__(self, protocol: int, kind: int, group: int = 0) -> None:
        self.sock = socket.socket(socket.AF_NETLINK, kind, protocol)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 20)
        self.sock.bind((0, group))
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._listen, daemon=True)

    def _send(self, family: int, flags: int, body: bytes) -> None:
        self.sock.send(NETLINK_HEADER.pack(NETLINK_HEADER.size + len(body), family, flags, 0, os.getpid()) + body)

    def _start(self) -> None:
        self.sock.settimeout(0.2)
        self.thread.start()

    def _listen(self) -> None:
        while not self.done.is_set():
            try:
                data = self.sock.recv(1 << 16)
            except TimeoutError:
                continue
            offset = 0
            while offset + NETLINK_HEADER.size <= len(data):
                length = NETLINK_HEADER.unpack_from(data, offset)[0]
                self.received(data[offset + NETLINK_HEADER.size : offset + length])
                offset += (length + 3) & ~3

    def received(self, payload: bytes) -> None:
        raise NotImplementedError

    def __exit__(self, *_exception: object) -> None:
        self.done.set()
        self.thread.join()
        self.sock.close()


class ProcessEvents(_Listener):
    def __init__(self) -> None:
        super().__init__(NETLINK_CONNECTOR, socket.SOCK_DGRAM, CN_IDX_PROC)
        self.events: list[Event] = []

    def __enter__(self) -> ProcessEvents:
        listen = struct.pack("I", PROC_CN_MCAST_LISTEN)
        self._send(NLMSG_DONE, 0, CONNECTOR_HEADER.pack(CN_IDX_PROC, CN_VAL_PROC, 0, 0, len(listen), 0) + listen)
        self._start()
        return self

    def received(self, payload: bytes) -> None:
        kind, _cpu, nanoseconds = PROC_EVENT.unpack_from(payload, CONNECTOR_HEADER.size)
        fields = struct.unpack_from("IIII", payload, CONNECTOR_HEADER.size + PROC_EVENT.size)
        at = nanoseconds / 1e9
        if kind == FORK:  # parent pid and tgid, child pid and tgid
            self.events.append(Event(kind, at, fields[0], fields[1], fields[2], fields[3]))
        elif kind in (EXEC, EXIT):
            self.events.append(Event(kind, at, fields[0], fields[1]))


def _attribute(kind: int, payload: bytes) -> bytes:
    length = ATTRIBUTE.size + len(payload)
    return ATTRIBUTE.pack(length, kind) + payload + b"\0" * (-length % 4)


def _attributes(data: bytes) -> dict[int, list[bytes]]:
    found: dict[int, list[bytes]] = {}
    while len(data) >= ATTRIBUTE.size:
        length, kind = ATTRIBUTE.unpack_from(data)
        found.setdefault(kind & 0x3FFF, []).append(data[ATTRIBUTE.size : length])
        data = data[(length + 3) & ~3 :]
    return found


class TaskCpu(_Listener):
    def __init__(self) -> None:
        super().__init__(NETLINK_GENERIC, socket.SOCK_RAW)
        self.seconds: dict[int, float] = {}
        self.names: dict[int, str] = {}

    def _request(self, family: int, command: int, attributes: bytes) -> None:
        self._send(family, NLM_F_REQUEST, struct.pack("BBH", command, 1, 0) + attributes)

    def __enter__(self) -> TaskCpu:
        self._request(GENL_ID_CTRL, CTRL_CMD_GETFAMILY, _attribute(CTRL_ATTR_FAMILY_NAME, b"TASKSTATS\0"))
        reply = self.sock.recv(65536)[NETLINK_HEADER.size + 4 :]
        family = struct.unpack("H", _attributes(reply)[CTRL_ATTR_FAMILY_ID][0][:2])[0]
        cpus = f"0-{(os.cpu_count() or 1) - 1}\0".encode()
        self._request(family, TASKSTATS_CMD_GET, _attribute(TASKSTATS_CMD_ATTR_REGISTER_CPUMASK, cpus))
        self._start()
        return self

    def received(self, payload: bytes) -> None:
        for task in _attributes(payload[4:]).get(TASKSTATS_TYPE_AGGR_PID, []):  # after the genl header
            found = _attributes(task)
            if TASKSTATS_TYPE_PID in found and TASKSTATS_TYPE_STATS in found:
                tid = struct.unpack_from("I", found[TASKSTATS_TYPE_PID][0])[0]
                stats = found[TASKSTATS_TYPE_STATS][0]
                self.seconds[tid] = struct.unpack_from("Q", stats, RUNTIME_OFFSET)[0] / 1e9
                self.names[tid] = stats[COMM].split(b"\0")[0].decode(errors="replace")
