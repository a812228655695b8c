"""The stand-in `flux`'s broker and keygen, for the test kubelet's image where flux-core is not installed.

Standard library only: it runs on the machine's own Python as any pod user. What it does is what the
engine tier needs of a broker, each as flux-core 0.88 does it (../shared/reference/flux-bootstrap.md),
and no easier to please:
  keygen [--name=NAME] PATH  writes a CURVE certificate in zcert's layout, its key pair a real X25519
                             pair (RFC 7748), so the project's own parser accepts it as it accepts Flux's;
  start OPTIONS [PROGRAM]    a broker of the instance that broker.toml's [bootstrap] describes: its rank
                             is its hostname's place in `hosts`; it refuses a certificate others may
                             read or one without a name; rank 0 listens on `default_bind` (the named
                             interface's address) and each worker connects to rank 0 at
                             `default_connect` (its DNS name, through the pod network), retrying until it
                             is there. A worker whose public key is not rank 0's is never answered, so
                             it hangs as a real one does. Once `broker.quorum` ranks (else every host)
                             are online, every broker's log says `quorum->run` as Flux's does; rank 0 then runs the
                             initial program and exits with its status, telling the workers the instance
                             shut down (they exit 0). Without a program (`broker.rc2_none`) it runs until
                             SIGTERM. A worker whose rank 0 goes away unannounced exits 1;
  dmesg                      that broker's log (FLUX_URI=local://RUNDIR/local), as the readiness probe
                             reads it.
Nothing of Flux's jobs, resources or KVS is modelled: the tests that need them are marked realflux.
"""

import contextlib
import fcntl
import os
import re
import secrets
import signal
import socket
import stat
import struct
import subprocess
import sys
import threading
import time
import tomllib
from typing import Any

Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
DMESG = "standin-dmesg"
"""The broker's log, in its rundir."""
JOIN, RUN, SHUTDOWN = "join", "run", "shutdown"
"""The stand-in overlay's messages, one a line: a worker's `join RANK PUBLIC-KEY`, and rank 0's answers."""


# -- keygen ------------------------------------------------------------------------------------------


def x25519_public(secret: bytes) -> bytes:
    """The public half of a Curve25519 secret key: the scalar multiple of the base point (RFC 7748, the
    Montgomery ladder), with the secret clamped as libsodium's crypto_scalarmult_base clamps it."""
    p, a24 = 2**255 - 19, 121665
    clamped = bytearray(secret)
    clamped[0] &= 248
    clamped[31] = (clamped[31] & 127) | 64
    k = int.from_bytes(clamped, "little")
    x1, x2, z2, x3, z3, swap = 9, 1, 0, 9, 1, 0
    for t in reversed(range(255)):
        bit = (k >> t) & 1
        if swap ^ bit:
            x2, x3, z2, z3 = x3, x2, z3, z2
        swap = bit
        a, b, c, d = x2 + z2, x2 - z2, x3 + z3, x3 - z3
        aa, bb, da, cb = a * a % p, b * b % p, d * a % p, c * b % p
        e = aa - bb
        x3, z3 = (da + cb) ** 2 % p, x1 * (da - cb) ** 2 % p
        x2, z2 = aa * bb % p, e * (aa + a24 * e) % p
    if swap:
        x2, z2 = x3, z3
    return (x2 * pow(z2, p - 2, p) % p).to_bytes(32, "little")


def z85(data: bytes) -> str:
    """ZeroMQ's Z85 encoding (RFC 32), as zcert files hold keys."""
    out: list[str] = []
    for i in range(0, len(data), 4):
        value, chunk = int.from_bytes(data[i : i + 4], "big"), list[str]()
        for _ in range(5):
            value, digit = divmod(value, 85)
            chunk.append(Z85[digit])
        out.extend(reversed(chunk))
    return "".join(out)


def keygen(args: list[str]) -> int:
    names = [arg.split("=", 1)[1] for arg in args if arg.startswith(("--name=", "-n="))]
    paths = [arg for arg in args if not arg.startswith("-")]
    secret = secrets.token_bytes(32)
    text = "\n".join([
        "#  ZeroMQ CURVE **Secret** Certificate",
        "#  DO NOT DISTRIBUTE",
        "",
        "metadata",
        f'    name = "{names[-1] if names else socket.gethostname()}"',
        '    keygen.flux-core-version = "stand-in"',
        "curve",
        f'    public-key = "{z85(x25519_public(secret))}"',
        f'    secret-key = "{z85(secret)}"',
        "",
    ])  # fmt: skip
    if paths:  # as flux keygen: with no PATH it saves nothing
        descriptor = os.open(paths[-1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as cert:
            cert.write(text)
    return 0


# -- the broker --------------------------------------------------------------------------------------


def hostlist(text: str) -> list[str]:
    """An RFC 29 hostlist with one bracket (`dev-[0-3,7]`, `dev-0`), expanded."""
    match = re.fullmatch(r"(?P<prefix>[^\[]*)\[(?P<ranges>[^\]]+)\](?P<suffix>.*)", text)
    if match is None:
        return [text]
    hosts: list[str] = []
    for part in match["ranges"].split(","):
        first, _, last = part.partition("-")
        width = len(first) if first.startswith("0") else 0
        hosts += [f"{match['prefix']}{n:0{width}d}{match['suffix']}" for n in range(int(first), int(last or first) + 1)]
    return hosts


def interface_address(name: str) -> str:
    """The IPv4 address of a network interface (SIOCGIFADDR), as the broker binds `tcp://IFACE:PORT`."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        request = struct.pack("256s", name.encode()[:15])
        return socket.inet_ntoa(fcntl.ioctl(probe.fileno(), 0x8915, request)[20:24])


def fail(message: str) -> int:
    print(f"flux-broker: {message}", file=sys.stderr)
    return 1


class Broker:
    def __init__(self, options: list[str]) -> None:
        self.attributes = dict(option[2:].split("=", 1) for option in options if option.startswith("-S"))
        config_dirs = [option.split("=", 1)[1] for option in options if option.startswith("-o,--config-path=")]
        self.config: dict[str, Any] = {}
        for name in sorted(os.listdir(config_dirs[-1])) if config_dirs else []:
            if name.endswith(".toml"):
                with open(os.path.join(config_dirs[-1], name), "rb") as toml:
                    self.config.update(tomllib.load(toml))
        self.bootstrap = self.config.get("bootstrap", {})
        self.hosts = [host for entry in self.bootstrap.get("hosts", []) for host in hostlist(entry["host"])]
        self.rundir = self.attributes.get("rundir", ".")
        quorum = self.attributes.get("broker.quorum", "")
        self.quorum = int(quorum) if quorum.isdigit() else len(self.hosts)
        self.online: set[int] = {0}
        self.workers: list[socket.socket] = []
        self.lock = threading.Lock()
        self.rank, self.key = 0, ""
        self.running = threading.Event()
        self.started = time.monotonic()

    def entered_run(self) -> None:
        """Into the broker's log, as Flux's own broker logs its run state (what the readiness probe reads)."""
        line = f"quorum-full: quorum->run {time.monotonic() - self.started:.6f}s"
        with open(os.path.join(self.rundir, DMESG), "a", encoding="utf-8") as dmesg:
            dmesg.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} broker.info[{self.rank}]: {line}\n")

    def endpoint(self, uri: str, host: str) -> tuple[str, int]:
        address = uri.replace("%h", host).replace("%p", str(self.bootstrap.get("default_port", 8050)))
        match = re.fullmatch(r"tcp://(?P<host>[^:]+):(?P<port>\d+)", address)
        if match is None:
            raise ValueError(f"cannot use the address {address!r}")
        return match["host"], int(match["port"])

    def public_key(self) -> str:
        """The certificate's public key, after the broker's own checks of the file."""
        path = self.bootstrap.get("curve_cert", "")
        if stat.S_IMODE(os.stat(path).st_mode) & 0o077:
            raise ValueError(f"{path}: readable by group or other")
        with open(path, encoding="utf-8") as cert:
            text = cert.read()
        if not re.search(r'^\s+name = "[^"]+"$', text, re.MULTILINE):
            raise ValueError("overlay_authorize: Invalid argument")
        key = re.search(r'public-key = "([^"]+)"', text)
        if key is None:
            raise ValueError("no public-key")
        return key.group(1)

    def start(self, program: list[str]) -> int:
        hostname = self.attributes.get("hostname", socket.gethostname())
        if hostname not in self.hosts:
            return fail(f"{hostname} not found in bootstrap hosts")
        self.rank = self.hosts.index(hostname)
        os.makedirs(self.rundir, exist_ok=True)
        try:
            self.key = self.public_key()
        except (OSError, ValueError) as error:
            return fail(f"curve_cert: {error}")
        return self.leader(program) if self.rank == 0 else self.worker()

    # rank 0

    def leader(self, program: list[str]) -> int:
        host, port = self.endpoint(self.bootstrap.get("default_bind", "tcp://*:%p"), "")
        bind = "" if host == "*" else interface_address(host)
        server = socket.create_server((bind, port), backlog=1024)
        threading.Thread(target=self.accept, args=(server,), daemon=True).start()
        initial: list[subprocess.Popen[bytes]] = []

        def stop(*_: object) -> None:  # SIGTERM: the instance shuts down, its program with it
            self.shut_down()
            for process in initial:
                process.terminate()
            sys.exit(0)

        signal.signal(signal.SIGTERM, stop)
        self.reached()
        self.running.wait()  # a SIGTERM meanwhile interrupts it (stop)
        if program:
            env = {**os.environ, "FLUX_URI": self.attributes.get("local-uri", "")}
            initial.append(subprocess.Popen(program, env=env))
            status = initial[0].wait()
        else:  # broker.rc2_none: no initial program, up until it is stopped
            while True:
                signal.pause()
        self.shut_down()
        return status

    def accept(self, server: socket.socket) -> None:
        while True:
            peer, _ = server.accept()
            threading.Thread(target=self.welcome, args=(peer,), daemon=True).start()

    def welcome(self, peer: socket.socket) -> None:
        words = peer.makefile("r").readline().split()
        if len(words) != 3 or words[0] != JOIN or words[2] != self.key:
            return  # a stranger's key: never answered, so its broker hangs at connecting, as in Flux
        with self.lock:
            self.online.add(int(words[1]))
            self.workers.append(peer)
            if self.running.is_set():  # a rank joining a running instance (a replacement, a resize)
                self.send(peer, RUN)
        self.reached()

    def reached(self) -> None:
        """At quorum: every rank online is told, before rank 0's program starts (under the lock that the
        shutdown takes too, so that no worker hears of the end before the start)."""
        with self.lock:
            if len(self.online) >= self.quorum and not self.running.is_set():
                self.entered_run()
                for peer in self.workers:
                    self.send(peer, RUN)
                self.running.set()

    def shut_down(self) -> None:
        with self.lock:
            for peer in self.workers:
                self.send(peer, SHUTDOWN)

    @staticmethod
    def send(peer: socket.socket, message: str) -> None:
        with contextlib.suppress(OSError):  # that worker is gone
            peer.sendall(f"{message}\n".encode())

    # workers

    def worker(self) -> int:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        address = self.endpoint(self.bootstrap.get("default_connect", "tcp://%h:%p"), self.hosts[0])
        while True:
            try:
                parent = socket.create_connection(address, timeout=5)
                break
            except OSError:
                time.sleep(0.2)  # rank 0 is not there yet, or its name does not resolve yet
        parent.settimeout(None)
        parent.sendall(f"{JOIN} {self.rank} {self.key}\n".encode())
        for line in parent.makefile("r"):
            if line.strip() == RUN:
                self.entered_run()
            elif line.strip() == SHUTDOWN:
                return 0
        return fail("lost connection to the parent broker")


def start(args: list[str]) -> int:
    options: list[str] = []
    while args and args[0].startswith("-"):
        options.append(args.pop(0))
    return Broker(options).start(args)


def dmesg() -> int:
    uri = os.environ.get("FLUX_URI", "")
    if not uri.startswith("local://"):
        return fail("dmesg: no FLUX_URI")
    try:
        with open(os.path.join(os.path.dirname(uri[len("local://") :]), DMESG), encoding="utf-8") as log:
            sys.stdout.write(log.read())
    except OSError:
        return fail(f"{uri}: Connection refused")
    return 0
