"""The order in which the suite's tests are handed out, and pytest-xdist's work stealing, except that
the tests of one real-engine module stay on one worker.

The longest first: a worker can steal only tests not yet begun, and takes them from the end of the
other's queue (pyproject.toml: worksteal), so a long module begun last leaves the other worker idle to
the end (one run ended with a module of 81 s stolen last, 52 s after the other worker's last test).

Some real-engine modules share a `pulumi up` among their read-only tests in a module-scoped fixture.
Plain worksteal cuts the queue anywhere, so a module's tests could land on both workers and each would
deploy the stack again: 15 to 40 s of a worker's time for each module split. Here a cut, when tests are
first handed out or when an idle worker steals, never splits such a module; every other module is cut
anywhere, one test at a time, so that the last minute can still be shared out. The rest is
worksteal's own (xdist 3.8's WorkStealingScheduling, pinned in constraints.txt)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from xdist.scheduler.worksteal import MIN_PENDING, NodePending, WorkStealingScheduling

if TYPE_CHECKING:
    from xdist.workermanage import WorkerController

REAL_ENGINES = "tests/realengine/"

KEPT_TOGETHER = (
    "tests/realengine/node/test_dev_stack.py",
    "tests/realengine/node/test_go_program.py",
    "tests/realengine/node/test_interactive.py",
    "tests/realengine/node/test_keeper.py",
    "tests/realengine/node/test_ops_exec.py",
    "tests/realengine/node/test_rank0_eviction.py",
    "tests/realengine/node/test_restricted.py",
    "tests/realengine/node/test_secrets.py",
    "tests/realengine/node/test_sidecar_example.py",
    "tests/realengine/test_go_example.py",
)
"""The real-engine modules whose tests share a module-scoped fixture: one worker runs each whole. A
session whose modules disagree with this list stops at collection (`kept_together_mismatch`)."""


def module_of(item: pytest.Item) -> str:
    return item.path.relative_to(item.config.rootpath).as_posix()


def kept_together_mismatch(items: list[pytest.Item]) -> list[str]:
    """The real-engine modules among `items` that share a module-scoped fixture and are not in
    KEPT_TOGETHER, or are in it and share none."""
    sharing: dict[str, bool] = {}
    for item in items:
        module = module_of(item)
        if isinstance(item, pytest.Function) and module.startswith(REAL_ENGINES):
            definitions = item._fixtureinfo.name2fixturedefs.values()  # pytest's own record of its fixtures
            shares = any(definition.scope == "module" for chain in definitions for definition in chain)
            sharing[module] = sharing.get(module, False) or shares
    return sorted(module for module, shares in sharing.items() if shares != (module in KEPT_TOGETHER))


LONGEST = (
    "tests/realengine/node/test_readme_main_command.py",  # 145 s with pip; 73 to 92 s once it installed with uv
    "tests/realengine/node/test_pods_that_cannot_start.py",  # about 125 s: three tests wait out a timeout
    "tests/realengine/node/test_scheduling_guard.py",  # about 115 s: three stacks, each stopped by its guard
    "tests/realengine/node/test_interactive.py",  # 86 s
    "tests/realengine/node/test_typescript_program.py",  # 81 s with the npm install, about 50 s without
    "tests/realengine/test_component_package.py",  # 63 s
    "tests/realengine/node/test_keeper_stack.py",  # 62 s
    "tests/realengine/node/test_image_change.py",  # 45 s
    "tests/realengine/node/test_flux_view.py",  # 44 s
    "tests/realengine/node/test_secrets.py",  # 37 s
    "tests/realengine/node/test_go_program.py",  # 31 s
    "tests/realengine/test_typescript_example.py",  # 44 s with the npm install, about 15 s without
    "tests/realengine/test_status_after_faults.py",  # 27 s
    "tests/realengine/node/test_restricted.py",  # 26 s
    "tests/realengine/node/test_dev_stack.py",  # 26 s
)
"""The modules that took longest in CI, longest first: seconds of one worker in one run (2 cores,
without flux-core, 2026-11-27). A module left out, or one that grew, is only handed out later than it
could be."""


def longest_first(items: list[pytest.Item]) -> None:
    """LONGEST in its order, then the rest of the real node's journeys, then the rest of the real-engine
    tier, then everything else. A stable sort: each file keeps its order."""

    def rank(item: pytest.Item) -> tuple[int, int]:
        path = module_of(item)
        if path in LONGEST:
            return 0, LONGEST.index(path)
        return (1 if path.startswith(f"{REAL_ENGINES}node/") else 2 if path.startswith(REAL_ENGINES) else 3), 0

    items.sort(key=rank)


class ModulesKeptTogether(WorkStealingScheduling):
    def group(self, index: int) -> str:
        """The module of a test kept with its module, or the test alone."""
        assert self.collection is not None
        nodeid = self.collection[index]
        module = nodeid.split("::", 1)[0]
        return module if module in KEPT_TOGETHER else nodeid

    def cut(self, queue: list[int], at: int, lowest: int = 0) -> int:
        """The place nearest to `at`, from `lowest` to the queue's end, that splits no module kept
        together: `queue[:cut]` and `queue[cut:]` share none. The later of two as near."""
        for distance in range(len(queue) + 1):
            for place in (at + distance, at - distance):
                if lowest <= place <= len(queue) and (
                    place in (0, len(queue)) or self.group(queue[place - 1]) != self.group(queue[place])
                ):
                    return place
        return len(queue)

    def _send_tests(self, node: WorkerController, num: int) -> None:
        super()._send_tests(node, self.cut(self.pending, num))

    def check_schedule(self) -> None:
        """worksteal's, with the stolen tail of a worker's queue begun where it splits no module: more or
        less than half of it, or nothing where the rest is the module the worker is in."""
        nodes_up = [NodePending(node, pending) for node, pending in self.node2pending.items() if not node.shutting_down]

        def idle_nodes() -> list[WorkerController]:
            return [node for node, pending in nodes_up if len(pending) < MIN_PENDING]

        idle = idle_nodes()
        if not idle:
            return
        if self.pending:
            for i, node in enumerate(idle):
                self._send_tests(node, len(self.pending) // (len(idle) - i))
            if not idle_nodes():
                return
        if self.steal_requested_from_node is not None:
            return
        victim = max(nodes_up, key=lambda node_pending: len(node_pending.pending), default=None)
        stolen: list[int] = []
        if victim is not None:
            # worksteal takes half of the queue and leaves at least MIN_PENDING: the test the worker runs
            # and the one after it, which it has begun to set up for
            wanted = min(len(victim.pending) // 2, max(0, len(victim.pending) - MIN_PENDING))
            if wanted:
                start = self.cut(victim.pending, len(victim.pending) - wanted, lowest=MIN_PENDING)
                stolen = victim.pending[start:]
        if not stolen:
            for node in idle_nodes():
                node.shutdown()
            return
        assert victim is not None
        victim.node.send_steal(stolen)
        self.steal_requested_from_node = victim.node
