from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from tests.harness import example
from tests.realengine.node.stacks import StackOnRealNode


@pytest.mark.realflux
def test_probe(stack_on_real_node: Callable[..., StackOnRealNode]) -> None:
    command = "sh -c 'hostnme; exit 3'"
    cluster = stack_on_real_node("dev", **{**example("dev"), "size": 2, "tasks": 2, "command": command})
    t = time.monotonic()
    failed = cluster.stack.up(check=False)
    print("FIRST", time.monotonic() - t, failed.returncode, failed.stdout[-2500:])
    t = time.monotonic()
    again = cluster.stack.up(check=False)
    print("AGAIN", time.monotonic() - t, again.returncode, again.stdout[-4000:])
    t = time.monotonic()
    prev = cluster.stack.pulumi("preview", "--diff", check=False)
    print("PREVIEW", time.monotonic() - t, prev.returncode, prev.stdout[-3000:])
    cluster.stack.configure({**cluster.stack.config, "command": "hostname"})
    t = time.monotonic()
    fixed = cluster.stack.up(check=False)
    print("FIXED", time.monotonic() - t, fixed.returncode, fixed.stdout[-2500:])
    cluster.stack.destroy()
    print("LEFT", cluster.left())
