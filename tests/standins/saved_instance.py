"""The stand-in `flux`'s model of one instance that keeps its state in its statedir (imported by `flux`).

It models what ../shared/reference/flux-bootstrap.md says flux-core 0.88 does, and no easier thing:
- The broker holds `<statedir>/content.sqlite` (an fcntl lock, as sqlite's) for its whole life. A second
  broker on the same statedir fails at once in rc1 with "database is locked", exit 1; the kernel
  releases the lock when the holder dies, SIGKILL included.
- The state (here JSON in content.sqlite) holds the queue (started or stopped, with its reason, saved
  with the state) and the jobs. A file that is not that JSON is a state the broker cannot start from.
- The scheduler starts queued jobs (FIFO, `nodes` each) on free nodes whenever the queue is started
  and something changes: a cancel frees nodes, and the next queued job starts at once.
- A clean stop (SIGTERM) runs rc3's cleanup, which cancels the running jobs, then saves the state.
- A restart finds jobs that were running when the broker was killed: they end with an exception
  (flux-core forces them inactive: it cannot reattach to them), and the queue stays as it was saved.
Clients (`queue`, `cancel`, `submit`, `uptime`) reach the instance through FLUX_URI=local://RUNDIR/local,
as the real commands do: the running broker leaves the statedir's path in RUNDIR.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from typing import Any

INSTANCE_LINK = "standin-statedir"
TRANSACTIONS = ".standin-transactions"
"""Beside content.sqlite: every read and write of the state takes this lock, as sqlite's transactions
keep a reader from seeing a write half-done."""


@contextlib.contextmanager
def transaction(statedir: str) -> Iterator[None]:
    with open(os.path.join(statedir, TRANSACTIONS), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


NOTE = "minicluster stand-in"


def option(args: list[str], name: str) -> str | None:
    prefix = f"-S{name}="
    return next((arg[len(prefix) :] for arg in args if arg.startswith(prefix)), None)


def schedule(state: dict[str, Any]) -> None:
    if not state["queue"]["started"]:
        return
    busy = sum(job["nodes"] for job in state["jobs"] if job["state"] == "RUN")
    for job in state["jobs"]:
        if job["state"] == "SCHED" and busy + job["nodes"] <= state["nodes"]:
            job["state"], busy = "RUN", busy + job["nodes"]


def end_running(state: dict[str, Any], result: str, note: str) -> None:
    for job in state["jobs"]:
        if job["state"] == "RUN":
            job.update(state="INACTIVE", result=result, note=note)


class Broker:
    """`flux start` as a broker that runs until SIGTERM (or until it is killed)."""

    def __init__(self, args: list[str], record: Any, calls: int) -> None:
        self.calls = calls
        statedir, rundir = option(args, "statedir"), option(args, "rundir")
        assert statedir and rundir, "the stand-in broker needs -Sstatedir and -Srundir"
        self.statedir, self.rundir, self.record = statedir, rundir, record
        os.makedirs(self.rundir, exist_ok=True)
        self.file = open(os.path.join(self.statedir, "content.sqlite"), "a+")  # noqa: SIM115 (held for life)

    def run(self) -> None:
        if self.calls < int(os.environ.get("STANDIN_FAIL_STARTS", "0")):  # a transient failure in rc1
            print("flux-broker: rc1-fail (stand-in: STANDIN_FAIL_STARTS)", file=sys.stderr)
            sys.exit(1)
        try:
            fcntl.lockf(self.file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            print("content-sqlite.err[0]: setting sqlite 'journal_mode' pragma: database is locked(5)", file=sys.stderr)
            print("flux-broker: rc1-fail", file=sys.stderr)
            sys.exit(1)
        with transaction(self.statedir):
            self.file.seek(0)
            text = self.file.read()
        try:
            state = json.loads(text) if text else None
        except ValueError:
            print("content-sqlite.err[0]: file is not a database(26)", file=sys.stderr)
            sys.exit(1)
        if state is None:
            state = {"queue": {"started": True, "reason": ""}, "jobs": [], "nodes": int(os.environ.get("MC_SIZE", 1))}
        else:
            print(f"job-manager.info[0]: restart: {len(state['jobs'])} jobs", file=sys.stderr)
            end_running(state, "exception", "job-manager: the instance restarted")
        schedule(state)
        self.save(state)
        signal.signal(signal.SIGTERM, self.stop)
        with open(os.path.join(self.rundir, INSTANCE_LINK), "w") as link:
            link.write(self.statedir)
        self.record({"instance": "up", "queue": state["queue"]})
        while True:
            time.sleep(0.01)

    def stop(self, _signum: int, _frame: Any) -> None:
        self.record({"signal": "TERM", "pid": os.getpid()})
        time.sleep(float(os.environ.get("STANDIN_STOP_SECONDS", "0")))  # a broker takes a while to stop
        os.remove(os.path.join(self.rundir, INSTANCE_LINK))
        with transaction(self.statedir):
            self.file.seek(0)
            state = json.loads(self.file.read())
            end_running(state, "canceled", "rc3 cleanup: flux cancel --states RUN")
            self._write(state)
        sys.exit(int(os.environ.get("STANDIN_TERM_EXIT", "0")))

    def save(self, state: dict[str, Any]) -> None:
        """Through the locked file: closing any other descriptor of it would drop this process's lock."""
        with transaction(self.statedir):
            self._write(state)

    def _write(self, state: dict[str, Any]) -> None:
        self.file.seek(0)
        self.file.truncate(0)
        self.file.write(json.dumps(state))
        self.file.flush()


def statedir_of_client() -> str | None:
    uri = os.environ.get("FLUX_URI", "")
    link = os.path.join(os.path.dirname(uri.removeprefix("local://")), INSTANCE_LINK)
    return open(link).read() if uri.startswith("local://") and os.path.exists(link) else None


def load(statedir: str) -> dict[str, Any]:
    """The state as saved (call inside a transaction)."""
    with open(os.path.join(statedir, "content.sqlite")) as file:
        state: dict[str, Any] = json.load(file)
    return state


def save(statedir: str, state: dict[str, Any]) -> None:
    """In place (never a rename: the broker's lock is on this file)."""
    with open(os.path.join(statedir, "content.sqlite"), "r+") as file:
        file.truncate(0)
        file.write(json.dumps(state))


def client(args: list[str], statedir: str | None) -> int:
    """A command sent to the running instance; refused as the real one is when no broker listens."""
    if statedir is None:
        print(f"flux-{args[0]}: Unable to connect to Flux: Connection refused", file=sys.stderr)
        return 1
    with transaction(statedir):
        return _request(args, statedir, load(statedir))


def _request(args: list[str], statedir: str, state: dict[str, Any]) -> int:
    queue = state["queue"]
    if args == ["uptime"]:
        print(f" 00:00:01 run 1s,  owner {os.environ.get('USER', 'flux')},  depth 0,  size {state['nodes']}")
        return 0
    if args == ["queue", "status"]:
        print("Job submission is enabled")
        print("Scheduling is started" if queue["started"] else f"Scheduling is stopped: {queue['reason']}")
        return 0
    if args[:3] == ["queue", "stop", "--quiet"] and len(args) == 4 and args[3].startswith("--message="):
        queue.update(started=False, reason=args[3].removeprefix("--message="))
    elif args == ["queue", "start", "--quiet"]:
        queue.update(started=True, reason="")
    elif args[:3] == ["cancel", "--user=all", "--states=running"] and len(args) == 4:
        end_running(state, "canceled", args[3].removeprefix("--message="))
    elif args[:2] == ["submit", "-N"] and len(args) >= 4:
        job_id = f"f{len(state['jobs']) + 1}"
        state["jobs"].append({"id": job_id, "state": "SCHED", "nodes": int(args[2]), "command": args[3:]})
        print(job_id)
    else:
        print(f"stand-in flux: unexpected arguments for a saved instance {args}", file=sys.stderr)
        return 2
    schedule(state)
    save(statedir, state)
    return 0
