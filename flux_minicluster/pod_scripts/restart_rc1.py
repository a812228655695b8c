"""Rank 0's own step in Flux's rc1 when it restarts a saved instance (stateVolume) after a crash: jobs
whose allocation was recorded only halfway get it from the scheduler anew.

A job's allocation is recorded in two commits: the scheduler writes the job's R to the KVS, then the
job manager appends the `alloc` event to the job's eventlog. A checkpoint taken between the two,
followed by a crash of rank 0 (killed, or its node gone) before the next checkpoint, restarts the
instance with a job that has an R but, by its eventlog, still waits for the scheduler. Flux's job
manager (0.88) loads that R, asks the scheduler again, takes the answer as a second allocation and
stops scheduling for good ("sched.alloc-response: id=... already allocated", then "Scheduler is
offline"): every job after it waits. So before the job manager loads, such an R is removed, and the
scheduler allocates the job as if the first commit had not happened. Jobs that ended keep theirs.

Flux's modprobe runs it: the entrypoint puts this file in the rc1.d folder of a FLUX_MODPROBE_PATH_APPEND
entry for a rank 0 that restarts a saved instance (saved_instance.sh). A clean stop saves both commits
of every allocation, so after one this step does nothing. Whatever fails here is logged and skipped:
the instance starts as Flux alone would start it. Flux's own Python, which may be older than the
project's: annotations are strings.
"""

import json
import os
from collections.abc import Iterator
from typing import Any

from flux.constants import FLUX_KVS_READDIR  # type: ignore[import-not-found]
from flux.core.inner import ffi, raw  # type: ignore[import-not-found]
from flux.job import JobID  # type: ignore[import-not-found]
from flux.kvs import KVSTxn  # type: ignore[import-not-found]
from flux.modprobe import task  # type: ignore[import-not-found]

JOBS = "job"
"""The KVS directory of every job: job.<16 bits>.<16 bits>.<16 bits>.<16 bits>.<what the job has>."""
STARTLOG = "admin.eventlog"
"""Flux's startlog: a `start` event at each start of the instance, a `finish` at each clean stop."""
IN_FLIGHT = 512
"""KVS lookups sent before their answers are read: one round trip per batch, not per key."""


def say(line: str) -> None:
    prefix = os.environ.get("MC_LOG_PREFIX", "minicluster")
    print(f"{prefix}[rank 0]: {line}", flush=True)


def lookups(handle: Any, keys: "list[str]", flags: int) -> "Iterator[tuple[str, Any]]":
    """Each key with the KVS's answer to come (a future, which the caller reads and destroys), the
    lookups sent IN_FLIGHT at a time."""
    for start in range(0, len(keys), IN_FLIGHT):
        batch = keys[start : start + IN_FLIGHT]
        yield from [(key, raw.flux_kvs_lookup(handle, ffi.NULL, flags, key.encode())) for key in batch]


def entries(future: Any) -> "list[tuple[str, bool]]":
    """A directory's entries, each with whether it is a directory itself."""
    directory = ffi.new("flux_kvsdir_t *[1]")
    try:
        raw.flux_kvs_lookup_get_dir(future, directory)
        cursor = raw.flux_kvsitr_create(directory[0])
        found = []
        name = raw.flux_kvsitr_next(cursor)
        while name:
            found.append((name.decode(), bool(raw.flux_kvsdir_isdir(directory[0], name))))
            name = raw.flux_kvsitr_next(cursor)
        raw.flux_kvsitr_destroy(cursor)
        return found
    finally:
        raw.flux_future_destroy(future)


def value(future: Any) -> str:
    text = ffi.new("char *[1]")
    try:
        raw.flux_kvs_lookup_get(future, text)
        return str(ffi.string(text[0]).decode())
    finally:
        raw.flux_future_destroy(future)


def jobs_with_r(handle: Any) -> "list[str]":
    """Every job directory that holds an R, found level by level (a job's directory holds its eventlog)."""
    try:
        level = [JOBS]
        with_r = []
        while level:
            below: list[str] = []
            for key, future in lookups(handle, level, FLUX_KVS_READDIR):
                listed = dict(entries(future))
                if "eventlog" in listed and not listed["eventlog"]:
                    if "R" in listed and not listed["R"]:
                        with_r.append(key)
                    continue
                below.extend(f"{key}.{name}" for name, is_directory in listed.items() if is_directory)
            level = below
        return with_r
    except FileNotFoundError:  # no job was ever submitted
        return []


def half_allocated(handle: Any, jobs: "list[str]") -> "list[str]":
    """The jobs whose eventlog neither says `alloc` nor that the job ended (`clean`)."""
    found = []
    for key, future in lookups(handle, [f"{job}.eventlog" for job in jobs], 0):
        names = {json.loads(line)["name"] for line in value(future).splitlines() if line.strip()}
        if not names & {"alloc", "clean"}:
            found.append(key[: -len(".eventlog")])
    return found


def crashed(handle: Any) -> bool:
    """Whether the instance's previous run ended without its clean stop: its last event in Flux's
    startlog (the KVS's admin.eventlog, flux-startlog(1)) before this broker started is a `start`, with
    no `finish` after it. Flux's own rc1 appends this run's `start` at about this time, before or
    after this step: so the events are told apart by the broker's start time, not by their order."""
    this_run = float(handle.attr_get("broker.starttime"))
    try:
        startlog = value(raw.flux_kvs_lookup(handle, ffi.NULL, 0, STARTLOG.encode()))
        events = [json.loads(line) for line in startlog.splitlines() if line.strip()]
    except FileNotFoundError:  # a new instance
        return False
    before = [event["name"] for event in events if float(event["timestamp"]) < this_run]
    return bool(before) and before[-1] == "start"


@task(  # type: ignore[untyped-decorator]
    "minicluster-half-allocated",
    ranks="0",
    after=["kvs"],
    before=["job-manager"],
)
def reallocate_half_allocated(context: Any) -> None:
    try:
        handle = context.handle
        if not crashed(handle):
            return
        jobs = half_allocated(handle, jobs_with_r(handle))
        if not jobs:
            return
        with KVSTxn(handle) as transaction:
            for job in jobs:
                transaction.unlink(f"{job}.R")
        for job in jobs:
            say(
                f"job {JobID(job).f58}: its allocation was recorded only halfway when the instance stopped (its "
                "R, not its alloc event): R removed, so that the scheduler allocates it again"
            )
    except Exception as error:  # never keep the instance from starting: Flux alone would start it
        say(f"could not look for jobs allocated only halfway before the restart: {error!r}")
