"""A persistent instance whose Job is over (`flux shutdown`, rank 0's broker gone): `pulumi up` leaves a
finished Job as it is, so the admission check, which reads this stack's Job already (test_taken_names.py),
says the instance is not running and how to start it anew. A one-shot command's Job ends as it should."""

from __future__ import annotations

from typing import Any

import pytest

from flux_minicluster.builders.names import SKIP_AWAIT
from flux_minicluster.cluster import admission
from tests.cluster.test_dry_run import verdict
from tests.cluster.test_taken_names import store
from tests.harness import OWNER
from tests.kube_api import Cluster
from tests.kube_api.samples import FOUR, job

SHUT_DOWN = (
    "MiniCluster 'dev' is not running: its Job has completed, so its instance ended (`flux shutdown`, or rank 0's "
    "broker exited). `pulumi up` leaves a finished Job as it is, unless a change replaces it (`pulumi preview` says "
    "so). To start the instance anew, set minicluster:rerun to a new number (`pulumi config set minicluster:rerun "
    "N`); a stateVolume keeps its queue"
)


def finished_job(api: Cluster, condition: str | None, reason: str | None = None, elastic: bool = True) -> None:
    """This stack's Job, as it is there: an elastic one (not awaited), or a one-shot command's."""
    api.nodes = FOUR
    stored = store(api, "Job", "dev", OWNER)
    stored["status"] = job(condition, reason)["status"]
    stored["metadata"]["annotations"].update({SKIP_AWAIT: "true"} if elastic else {})


@pytest.mark.parametrize("persistent", [{"command": None}, {"mode": "interactive"}])
def test_a_persistent_instance_whose_job_completed_is_said_not_to_run(
    kube_api: Cluster, persistent: dict[str, Any]
) -> None:
    finished_job(kube_api, "Complete")
    assert verdict(**persistent) == admission.Verdict(warnings=[SHUT_DOWN])


def test_a_failed_one_says_how_it_failed(kube_api: Cluster) -> None:
    finished_job(kube_api, "Failed", "BackoffLimitExceeded")
    (warning,) = verdict(command=None).warnings
    assert warning.startswith("MiniCluster 'dev' is not running: its Job has failed (BackoffLimitExceeded), so ")


@pytest.mark.parametrize("overrides", [{"command": None, "condition": None}, {"condition": "Complete"}])
def test_a_running_instance_or_a_finished_one_shot_command_is_no_news(
    kube_api: Cluster, overrides: dict[str, Any]
) -> None:
    finished_job(kube_api, overrides.pop("condition"))
    assert verdict(**overrides) == admission.Verdict()


def test_the_pulumi_up_that_makes_a_one_shot_commands_finished_job_persistent_is_not_told(kube_api: Cluster) -> None:
    """The dev stack's command done, its command unset: this `pulumi up` replaces the Job anyway."""
    finished_job(kube_api, "Complete", elastic=False)
    assert verdict(command=None) == admission.Verdict()


def test_the_pulumi_up_that_reruns_it_is_not_told_to(kube_api: Cluster) -> None:
    """minicluster:rerun replaces the Job (its pod template's annotation), as the warning advises."""
    finished_job(kube_api, "Complete")
    assert verdict(command=None, rerun=1) == admission.Verdict()
