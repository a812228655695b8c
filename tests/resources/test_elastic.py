"""Resizing on mocks (issue 11): what the program declares before and after a change of `size`.

pulumi-kubernetes replaces a Job when its pod template, completions or parallelism change, and a
ConfigMap when its data changes; the engine compares inputs after putting back the old value of every
ignoreChanges path. So a resize that changes nothing else in place is one where every changed input
is ignored by its resource, and the Scale is the only resource with a changed input.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import config
from tests.harness import await_annotations, deploy, deploy_rejected
from tests.plain import plain
from tests.resources.changes import changes, not_ignored

JOB = "kubernetes:batch/v1:Job"
SCALE = "pulumi-python:dynamic/minicluster:Scale"
ELASTIC = {"command": None, "size": 4, "maxSize": 8}


@pytest.mark.parametrize(
    "stack",
    [ELASTIC, {**ELASTIC, "mode": "interactive", "command": "hostname"}, {**ELASTIC, "mode": "launcher",
     "command": "my-workflow"}, {**ELASTIC, "restfulApi": {"enabled": True, "secretName": "api"}}],
    ids=["persistent", "interactive", "launcher", "restful-api"],
)  # fmt: skip
def test_a_size_change_within_bounds_changes_only_the_scale(stack: dict[str, Any]) -> None:
    before, after = deploy(config(**stack)), deploy(config(**{**stack, "size": 6}))
    changed = changes(before, after)
    assert changed == {
        "dev-size": ["size"],  # the Scale resource: an update that resizes the running Job
        "dev-job": ["spec.completions", "spec.parallelism"],
        "dev-scale": ["data.quorum", "data.size"],  # the scale ConfigMap
        "dev-scheduling": ["size"],  # the guard, which watches a new Job's first pods only
    }
    for name in ("dev-job", "dev-scale", "dev-scheduling"):
        assert not_ignored(after, name, changed[name]) == []
    assert after.options["dev-size"]["ignoreChanges"] == []


def test_the_scale_runs_after_the_job_and_resizes_it_by_name_uid_and_config_map() -> None:
    deployment = deploy(config(**ELASTIC))
    scale = next(r for r in deployment.resources if r.typ == SCALE)
    job = deployment.one(JOB)
    assert deployment.urn(job) in deployment.options[scale.name]["dependencies"]
    inputs = plain(scale.inputs)
    assert {key: inputs[key] for key in ("namespace", "job", "jobUid", "scaleConfig", "size", "maxSize")} == {
        "namespace": "default", "job": "dev", "jobUid": "dev-job-uid", "scaleConfig": deployment.live_name("dev-scale"),
        "size": 4, "maxSize": 8,
    }  # fmt: skip
    assert (inputs["shrinkPolicy"], inputs["shrinkTimeout"], inputs["scheduleTimeout"]) == ("wait", 600, 180)


def test_the_pod_template_holds_no_size() -> None:
    templates = [deploy(config(**{**ELASTIC, "size": size})).one(JOB).inputs["spec"]["template"] for size in (1, 4, 8)]
    assert plain(templates[0]) == plain(templates[1]) == plain(templates[2])


def test_a_change_of_max_size_replaces_the_job() -> None:
    """The hostlist changes: the broker config (a replaced ConfigMap, so a new name in the pod template)
    and the pod template's environment, neither of them ignored."""
    before, after = deploy(config(**ELASTIC)), deploy(config(**{**ELASTIC, "maxSize": 10}))
    changed = changes(before, after)
    assert changed["dev-broker-config"] == ["data.broker.toml"]  # data: the ConfigMap is replaced
    template_changes = [path for path in changed["dev-job"] if path.startswith("spec.template.")]
    assert template_changes and not_ignored(after, "dev-job", template_changes) == template_changes


@pytest.mark.parametrize("mode", ["submit", "batch"])
def test_a_size_change_of_a_one_shot_command_replaces_the_job(mode: str) -> None:
    """A new size is a new run: a new hostlist, so a new broker config, and a new pod template."""
    stack = {"mode": mode, "command": "hostname", "size": 4}
    before, after = deploy(config(**stack)), deploy(config(**{**stack, "size": 6}))
    assert SCALE not in after.kinds
    changed = changes(before, after)
    assert changed["dev-broker-config"] == ["data.broker.toml"]  # data: the ConfigMap is replaced
    assert {"spec.completions", "spec.parallelism"} <= set(not_ignored(after, "dev-job", changed["dev-job"]))
    template_changes = [path for path in changed["dev-job"] if path.startswith("spec.template.")]
    assert template_changes and not_ignored(after, "dev-job", template_changes) == template_changes
    assert await_annotations(after.one(JOB).inputs) == {"pulumi.com/timeoutSeconds": "3600"}


@pytest.mark.parametrize("mode", ["submit", "batch"])
def test_max_size_on_a_one_shot_command_is_refused_by_key(mode: str) -> None:
    message, deployment = deploy_rejected(config(mode=mode, command="hostname", size=4, maxSize=8))
    elastic_only = "minicluster:maxSize (8) is for elastic clusters (no command, or mode interactive or launcher)"
    assert f"{elastic_only}, and mode {mode!r} with a command runs once" in message
    assert deployment.resources == []


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"size": 9}, "minicluster:size (9) is above minicluster:maxSize (8)"),
        ({"size": 2, "minSize": 3}, "minicluster:size (2) is below minicluster:minSize (3)"),
    ],
)
def test_a_size_out_of_bounds_is_refused_with_nothing_registered(overrides: dict[str, Any], message: str) -> None:
    error, deployment = deploy_rejected(config(**{**ELASTIC, **overrides}))
    assert message in error
    assert deployment.resources == []
