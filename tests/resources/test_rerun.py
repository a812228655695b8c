"""`rerun`: a new number runs the Job again as it is. Its pod template carries the number, and a Job's
pod template cannot change in place, so the engine replaces the Job (deleting it first) and its guard
follows the new one. At 0, its default, the template has nothing of it: a stack made before the key
existed keeps its Job."""

from __future__ import annotations

from typing import Any

import pytest

from flux_minicluster.builders.names import RERUN
from tests.conftest import config
from tests.harness import deploy
from tests.resources.changes import changes, not_ignored

JOB = "kubernetes:batch/v1:Job"
ONE_SHOT = {"command": "hostname", "size": 4}
ELASTIC = {"command": None, "size": 4}


def pod_annotations(**overrides: Any) -> dict[str, str]:
    template = deploy(config(**overrides)).one(JOB).inputs["spec"]["template"]
    return dict(template["metadata"].get("annotations", {}))


def test_at_zero_the_pod_template_has_nothing_of_it() -> None:
    assert RERUN not in pod_annotations(**ONE_SHOT)
    assert pod_annotations(**ONE_SHOT) == pod_annotations(**ONE_SHOT, rerun=0)


def test_the_pods_carry_the_number() -> None:
    assert pod_annotations(**ONE_SHOT, rerun=2)[RERUN] == "2"


@pytest.mark.parametrize("stack", [ONE_SHOT, ELASTIC], ids=["one-shot", "elastic"])
def test_a_new_number_changes_the_jobs_pod_template_which_is_not_ignored(stack: dict[str, Any]) -> None:
    before, after = deploy(config(**stack, rerun=1)), deploy(config(**stack, rerun=2))
    changed = changes(before, after)
    template = [path for path in changed["dev-job"] if path.startswith("spec.template.")]
    assert template == [f"spec.template.metadata.annotations.{RERUN}"]
    assert not_ignored(after, "dev-job", template) == template
    assert after.options["dev-job"]["deleteBeforeReplace"] is True  # the Job keeps its name
    assert "revision" in changed["dev-scheduling"]  # a new guard, for the new Job
