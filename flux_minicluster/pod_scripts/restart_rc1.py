"""Rank 0's own step in Flux's rc1 when it restarts a saved instance (stateVolume) after a crash: it mends
two states a crash can leave in the last checkpoint, each of which Flux's job manager (0.88) mishandles.

A job whose allocation was recorded only halfway gets it from the scheduler anew. A job's allocation is
recorded in two commits: the scheduler writes the job's R to the KVS, then the job manager appends the
`alloc` event to the job's eventlog. A checkpoint taken between the two, followed by a crash of rank 0
(killed, or its node gone) before the next checkpoint, restarts the instance with a job that has an R
but, by its eventlog, still waits for the scheduler. Flux's job manager loads that R, asks the scheduler
again, takes the answer as a second allocation and stops scheduling for good ("sched.alloc-response:
id=... already allocated", then "Scheduler is offline"): every job after it waits. So before the job
manager loads, such an R is removed, and the scheduler allocates the job as if the first commit had not
happened. Jobs that ended keep theirs.

A job that had ended but was not yet inactive (its `finish`, or a fatal exception, without its `clean`)
gets the events the job manager would post for it at once: `free` where it still held its resources,
then `clean`. The job manager counts the jobs that run (or clean up) once it has loaded them all, but it
posts those events for such a job while it loads it, and takes one from the count for each: so the
count ends below zero, for good. `flux queue idle` then never returns, and Flux's own shutdown waits on
it: a rank 0 told to stop hung until its pod's grace period ended and it was killed, losing what was
submitted since the last checkpoint, and an instance at its end would never stop (found by the soak;
`restart: -1 running jobs` in the log). Left alone are a job whose prolog or epilog was running (the job
manager waits for it) and, where housekeeping is configured, one that still held resources (the job
manager hands them to housekeeping).

Flux's modprobe runs it: the entrypoint puts this file in the rc1.d folder of a FLUX_MODPROBE_PATH_APPEND
entry for a rank 0 that restarts a saved instance (saved_instance.sh). A clean stop leaves neither state,
so after one this step does nothing. Whatever fails here is logged and skipped: the instance starts as
Flux alone would start it. Flux's own Python, which may be older than the project's: annotations are
strings.
"""

import json
import os
import time
from collections.abc import Iterator
from typing import Any

from flux.constants import FLUX_KVS_APPEND, FLUX_KVS_READDIR  # type: ignore[import-not-found]
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


def job_directories(handle: Any) -> "list[tuple[str, bool]]":
    """Every job's directory, with whether it holds an R, found level by level (a job's directory holds
    its eventlog)."""
    try:
        level = [JOBS]
        found = []
        while level:
            below: list[str] = []
            for key, future in lookups(handle, level, FLUX_KVS_READDIR):
                listed = dict(entries(future))
                if "eventlog" in listed and not listed["eventlog"]:
                    found.append((key, "R" in listed and not listed["R"]))
                    continue
                below.extend(f"{key}.{name}" for name, is_directory in listed.items() if is_directory)
            level = below
        return found
    except FileNotFoundError:  # no job was ever submitted
        return []


def eventlogs(handle: Any, jobs: "list[str]") -> "dict[str, list[dict[str, Any]]]":
    """Each job's events, in order."""
    found = {}
    for key, future in lookups(handle, [f"{job}.eventlog" for job in jobs], 0):
        found[key[: -len(".eventlog")]] = [json.loads(line) for line in value(future).splitlines() if line.strip()]
    return found


def half_allocated(events: "dict[str, list[dict[str, Any]]]", with_r: "list[str]") -> "list[str]":
    """The jobs with an R whose eventlog neither says `alloc` nor that the job ended (`clean`)."""
    return [job for job in with_r if not {event["name"] for event in events[job]} & {"alloc", "clean"}]


def ended_not_cleaned(events: "dict[str, list[dict[str, Any]]]", housekeeping: bool) -> "dict[str, list[str]]":
    """The jobs that ended (`finish`, or a fatal exception once validated) without `clean`, each with the
    events the job manager would post for it as it loads it: `free` where it holds resources, then
    `clean`. None whose prolog or epilog runs (more `-start` events than `-finish`), nor, where
    housekeeping is configured, one that holds resources."""
    found = {}
    for job, eventlog in events.items():
        names = [event["name"] for event in eventlog]
        fatal = [event for event in eventlog if event["name"] == "exception" and event["context"]["severity"] == 0]
        if "clean" in names or "validate" not in names or not ("finish" in names or fatal):
            continue
        if sum(name.endswith("log-start") for name in names) != sum(name.endswith("log-finish") for name in names):
            continue
        holding = False  # the job manager's replay of whether the job holds resources
        for event in eventlog:
            if event["name"] == "alloc":
                holding = True
            elif event["name"] == "free" or (event in fatal and event["context"]["type"] == "scheduler-restart"):
                holding = False
        if holding and housekeeping:
            continue
        found[job] = ["free", "clean"] if holding else ["clean"]
    return found


def append_events(handle: Any, events: "dict[str, list[str]]") -> None:
    """Each job's events appended to its eventlog as the job manager appends them, in one commit."""
    with KVSTxn(handle) as transaction:
        for job, names in events.items():
            for name in names:
                line = json.dumps({"timestamp": time.time(), "name": name}, separators=(",", ":")) + "\n"
                data = line.encode()
                key = f"{job}.eventlog".encode()
                raw.flux_kvs_txn_put_raw(transaction.txn, FLUX_KVS_APPEND, key, data, len(data))


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
    "minicluster-mend-after-crash",
    ranks="0",
    after=["kvs"],
    before=["job-manager"],
)
def mend_after_crash(context: Any) -> None:
    # Never keep the instance from starting: whatever fails is logged, and Flux alone would start it.
    handle = context.handle
    try:
        if not crashed(handle):
            return
        directories = job_directories(handle)
        events = eventlogs(handle, [job for job, _ in directories])
    except Exception as error:
        say(f"could not read the jobs before the restart: {error!r}")
        return
    try:
        reallocate(handle, half_allocated(events, [job for job, with_r in directories if with_r]))
    except Exception as error:
        say(f"could not look for jobs allocated only halfway before the restart: {error!r}")
    try:
        housekeeping = "housekeeping" in handle.rpc("config.get").get().get("job-manager", {})
        clean(handle, ended_not_cleaned(events, housekeeping))
    except Exception as error:
        say(f"could not look for jobs that had ended but were not cleaned up before the restart: {error!r}")


def reallocate(handle: Any, jobs: "list[str]") -> None:
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


def clean(handle: Any, jobs: "dict[str, list[str]]") -> None:
    if not jobs:
        return
    append_events(handle, jobs)
    for job, names in jobs.items():
        say(
            f"job {JobID(job).f58}: it had ended, but was not cleaned up when the instance stopped: its "
            f"{' and '.join(names)} events posted now, as Flux's job manager would as it loads it, so that "
            "its count of the jobs that run stays right"
        )
