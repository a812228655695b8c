"""Run by `flux python` in an instance of two brokers (tests/realflux/test_real_flux_kvs.py): looks for a
namespace whose first read on rank 1 met a commit on rank 0, and tells on stdout, as JSON, what rank 1
reads of it afterwards. Each round creates a few namespaces and sends, for each, rank 1's first read and
rank 0's commit of one key at once; the race is rare (about one such pair in 300 here), so rounds go on
until one is found or the time is up."""

import json
import os
import time
from collections.abc import Callable
from typing import Any

import flux  # type: ignore[import-not-found]
import flux.kvs  # type: ignore[import-not-found]
from flux.constants import FLUX_NODEID_ANY  # type: ignore[import-not-found]

ROUND = 20
TIME_UP = 90.0
ONE = {"data": "MQ==", "type": "val", "ver": 1}  # a KVS value: "1", base64 in a treeobj


def put(handle: "flux.Flux", namespace: str, key: str) -> Any:
    """A commit of `key` on rank 0, sent now, answered later."""
    ops = [{"key": key, "flags": 0, "dirent": ONE}]
    return handle.rpc("kvs.commit", {"namespace": namespace, "flags": 0, "ops": ops}, 0)


def reads(handle: "flux.Flux", namespace: str, key: str) -> bool:
    try:
        flux.kvs.get(handle, key, namespace=namespace)
        return True
    except FileNotFoundError:
        return False


def until(condition: "Callable[[], bool]", timeout: float) -> bool:
    end = time.monotonic() + timeout
    while not condition() and time.monotonic() < end:
        time.sleep(0.05)
    return condition()


def what_rank1_reads(rank0: "flux.Flux", rank1: "flux.Flux", name: str, rounds: int) -> "dict[str, Any]":
    """Of a namespace whose commit rank 1 missed: what each rank reads, once rank 0 commits again."""
    put(rank0, name, "b").get()
    return {
        "rounds": rounds,
        "rank0_reads_it": reads(rank0, name, "a"),
        "rank1_reads_it_after_the_next_commit": until(lambda: reads(rank1, name, "b"), 10) and reads(rank1, name, "a"),
    }


def main() -> None:
    rank0 = flux.Flux()
    rank1 = flux.Flux(rank0.rpc("attr.get", {"name": "local-uri"}, 1).get()["value"])
    started = time.monotonic()
    rounds = 0
    while time.monotonic() - started < TIME_UP:
        rounds += 1
        names = [f"first-read-{os.getpid()}-{rounds}-{i}" for i in range(ROUND)]
        for name in names:
            flux.kvs.namespace_create(rank0, name, os.getuid(), 0)
        sent = []
        for name in names:
            sent.append(rank1.rpc("kvs.getroot", {"namespace": name}, FLUX_NODEID_ANY))  # rank 1's first read
            sent.append(put(rank0, name, "a"))
        for future in sent:
            future.get()
        missed = [name for name in names if not reads(rank1, name, "a")]
        if missed:
            time.sleep(1)  # ample for rank 0's commits to reach rank 1, in the order they were made
            missed = [name for name in missed if not reads(rank1, name, "a")]
        found = what_rank1_reads(rank0, rank1, missed[0], rounds) if missed else None
        for name in names:
            flux.kvs.namespace_remove(rank0, name)
        if found:
            print(json.dumps(found))
            return
    print(json.dumps({"rounds": rounds}))


main()
