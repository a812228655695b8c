"""On mocks, where the program puts the keeper (keeper.enabled) in the graph: after the Job's scheduling
guard, never after the Job, whose await lasts as long as a one-shot command runs. The real node shows
what that means for a user: tests/realengine/node/test_keeper_stack.py."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import config
from tests.harness import Deployment, deploy
from tests.plain import plain

KEEPER = {"keeper": {"enabled": True}}
GUARD = "pulumi-python:dynamic/minicluster:SchedulingGuard"
JOB = "kubernetes:batch/v1:Job"
ACCESS = ("dev-keeper-service-account", "dev-keeper-role", "dev-keeper-role-binding")


def dependencies(deployment: Deployment, name: str) -> list[str]:
    found: list[str] = deployment.options[name]["dependencies"]
    return found


@pytest.mark.parametrize("overrides", [{}, {"command": None}], ids=["one-shot", "elastic"])
def test_the_keeper_comes_after_the_jobs_guard_not_after_the_job(overrides: dict[str, Any]) -> None:
    """The guard is done once every pod has started; the Job's await, with a command, once it ends."""
    deployment = deploy(config(**KEEPER, **overrides))
    keeper = dependencies(deployment, "dev-keeper")
    assert deployment.urn(deployment.one(GUARD)) in keeper
    assert deployment.urn(deployment.one(JOB)) not in keeper


def test_the_keepers_account_is_not_after_the_job_either() -> None:
    deployment = deploy(config(**KEEPER))
    job = deployment.urn(deployment.one(JOB))
    assert {name: job in dependencies(deployment, name) for name in ACCESS} == dict.fromkeys(ACCESS, False)
    assert {deployment.registrations[name][1] for name in ACCESS} <= set(dependencies(deployment, "dev-keeper"))


def test_the_keeper_of_a_suspended_job_comes_beside_it() -> None:
    """A queue may hold a suspended Job back for long: it has no guard, and its keeper waits for neither."""
    deployment = deploy(config(**KEEPER, suspend=True))
    assert deployment.of_type(GUARD) == []
    assert deployment.urn(deployment.one(JOB)) not in dependencies(deployment, "dev-keeper")


def test_the_keeper_mounts_its_scripts_by_the_name_their_config_map_was_created_with() -> None:
    deployment = deploy(config(**KEEPER))
    keeper = next(r for r in deployment.resources if r.name == "dev-keeper")
    volumes = plain(keeper.inputs)["spec"]["template"]["spec"]["volumes"]
    assert volumes[0]["configMap"]["name"] == deployment.live_name("dev-keeper-scripts")
