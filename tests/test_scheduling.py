"""The suite's xdist scheduling (tests/scheduling.py): work stealing that never splits a real-engine
module whose tests share a module-scoped fixture, and splits every other module anywhere, as worksteal
does."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, cast

from xdist.workermanage import WorkerController

from tests.scheduling import ModulesKeptTogether

MODULE_A = [f"tests/realengine/node/test_interactive.py::test_{n}" for n in range(3)]
MODULE_B = [f"tests/realengine/node/test_secrets.py::test_{n}" for n in range(4)]
UNIT = [f"tests/builders/test_u.py::test_{n}" for n in range(8)]
UNSHARED = [f"tests/realengine/node/test_flux_view.py::test_{n}" for n in range(8)]
"""A real-engine module whose tests share no fixture of its own."""


@dataclass(eq=False)
class Worker:
    """What the scheduler sees of a worker: what it was sent and asked to give back."""

    name: str
    shutting_down: bool = False
    sent: list[int] = field(default_factory=list)
    asked_back: list[int] = field(default_factory=list)

    @property
    def gateway(self) -> SimpleNamespace:
        return SimpleNamespace(id=self.name)

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent += indices

    def send_steal(self, indices: list[int]) -> None:
        self.asked_back = list(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


class Config:
    def getvalue(self, name: str) -> Any:
        return {"tx": ["2*popen"]}[name]


def scheduled(collection: list[str]) -> tuple[ModulesKeptTogether, Worker, Worker]:
    """Two workers that collected `collection`, its tests handed out."""
    scheduler, first, second = ModulesKeptTogether(cast(Any, Config())), Worker("gw0"), Worker("gw1")
    for worker in (first, second):
        scheduler.add_node(controller(worker))
        scheduler.add_node_collection(controller(worker), collection)
    scheduler.schedule()
    return scheduler, first, second


def controller(worker: Worker) -> WorkerController:
    return cast(WorkerController, worker)


def named(collection: list[str], indices: list[int]) -> list[str]:
    return [collection[index] for index in indices]


def run_all(scheduler: ModulesKeptTogether, worker: Worker) -> None:
    """The worker ran every test it was sent: it steals when one is left."""
    for index in list(worker.sent):
        scheduler.mark_test_complete(controller(worker), index)


def test_the_first_hand_out_cuts_between_real_engine_modules() -> None:
    collection = MODULE_A + MODULE_B + UNIT[:3]  # half of the 10 falls inside module B
    _, first, second = scheduled(collection)
    assert named(collection, first.sent) == MODULE_A + MODULE_B
    assert named(collection, second.sent) == UNIT[:3]


def test_a_worker_out_of_work_steals_a_whole_module_where_half_the_queue_would_split_it() -> None:
    collection = MODULE_A + MODULE_B + UNIT[:7]
    scheduler, first, second = scheduled(collection)
    assert named(collection, first.sent) == MODULE_A + MODULE_B
    run_all(scheduler, second)  # half of the first's queue would begin at B's second test
    assert named(collection, first.asked_back) == MODULE_B


def test_nothing_is_stolen_from_a_worker_whose_queue_is_the_module_it_is_in() -> None:
    collection = MODULE_B + UNIT[:1]
    scheduler, first, second = scheduled(collection)
    run_all(scheduler, second)
    assert named(collection, first.sent) == MODULE_B
    assert (first.asked_back, second.shutting_down) == ([], True)


def test_unit_tests_are_stolen_one_by_one_as_worksteal_does() -> None:
    scheduler, first, second = scheduled(UNIT)
    run_all(scheduler, second)
    assert named(UNIT, first.asked_back) == UNIT[2:4]


def test_a_real_engine_module_that_shares_no_fixture_is_stolen_one_by_one() -> None:
    scheduler, first, second = scheduled(UNSHARED)
    run_all(scheduler, second)
    assert named(UNSHARED, first.asked_back) == UNSHARED[2:4]
