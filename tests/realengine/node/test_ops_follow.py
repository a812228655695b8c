"""`minicluster logs --follow` of rank 0 across its eviction, on the real node: the real Job controller
replaces the evicted pod, and the follow goes on in the replacement's log (it ended with the old pod,
exit 0, saying nothing)."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable

from kubernetes import client

from tests.harness import example
from tests.kubelet.pod import wait_until
from tests.realengine.node.lost_pods import lose
from tests.realengine.node.stacks import StackOnRealNode


def test_logs_follow_goes_on_in_rank_0s_replacement_after_an_eviction(
    stack_on_real_node: Callable[..., StackOnRealNode], admin: client.ApiClient
) -> None:
    cluster = stack_on_real_node("interactive", **{**example("interactive"), "size": 2})
    cluster.stack.up()
    evicted = cluster.pod_name(0)
    follow = subprocess.Popen(
        ["venv/bin/minicluster", "logs", "--follow", "--stack", cluster.stack.name], cwd=cluster.stack.project,
        env=cluster.stack.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    said: list[str] = []
    threading.Thread(target=lambda: said.extend(follow.stderr or []), daemon=True).start()
    try:
        assert follow.stdout is not None and follow.stdout.readline()  # following: its log has begun
        lose(client.CoreV1Api(admin), cluster.namespace, evicted, "evict")
        following = lambda: any("following its replacement" in line for line in said)  # noqa: E731
        wait_until(following, "the follow to go on in the replacement", 120, poll=0.2)
        assert follow.poll() is None  # still following
        replacement = cluster.pod_name(0)
        assert replacement != evicted
        assert f"rank 0's pod {evicted} ended; following its replacement, {replacement}\n" in said
    finally:
        follow.kill()
