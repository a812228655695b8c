"""The example stacks are valid, render cleanly and declare what they say (issue 6)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from flux_minicluster.config import stack_file
from tests.harness import ROOT, deploy

EXAMPLES = sorted(ROOT.glob("Pulumi.*.yaml"))


def test_every_documented_example_exists() -> None:
    assert {stack_file.stack_name(path) for path in EXAMPLES} >= {
        "dev",
        "lammps",
        "interactive",
        "sidecar",
        "restful",
        "showcase",
    }


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_loads_and_its_program_declares_a_job_of_its_size(path: Path) -> None:
    spec, encrypted = stack_file.load(path)
    assert encrypted == []
    config = yaml.safe_load(path.read_text())["config"]
    deployment = deploy(config, stack=stack_file.stack_name(path))
    job = deployment.one("kubernetes:batch/v1:Job")
    assert job.inputs["spec"]["completions"] == spec.size
    assert deployment.outputs["name"] == stack_file.stack_name(path)


def test_lammps_runs_in_its_input_directory_with_eight_tasks() -> None:
    spec, _ = stack_file.load(ROOT / "Pulumi.lammps.yaml")
    assert (spec.working_dir, spec.tasks, spec.command_args[0]) == ("/home/flux/examples/reaxff/HNS", 8, "lmp")


def test_interactive_example_is_persistent() -> None:
    spec, _ = stack_file.load(ROOT / "Pulumi.interactive.yaml")
    assert spec.persistent and spec.command is None


def test_sidecar_example_runs_its_watcher_as_a_native_sidecar_sharing_scratch() -> None:
    config = yaml.safe_load((ROOT / "Pulumi.sidecar.yaml").read_text())["config"]
    template = deploy(config, stack="sidecar").one("kubernetes:batch/v1:Job").inputs["spec"]["template"]["spec"]
    (watcher,) = template["initContainers"]
    assert (watcher["name"], watcher["restartPolicy"]) == ("watcher", "Always")
    assert watcher["volumeMounts"] == [{"name": "scratch", "mountPath": "/scratch"}]
    assert {"name": "scratch", "mountPath": "/scratch"} in template["containers"][0]["volumeMounts"]


def test_restful_example_serves_the_api_behind_its_service() -> None:
    config = yaml.safe_load((ROOT / "Pulumi.restful.yaml").read_text())["config"]
    deployment = deploy(config, stack="restful")
    assert deployment.outputs["apiServiceName"] == "restful-api"
    spec, _ = stack_file.load(ROOT / "Pulumi.restful.yaml")
    assert spec.persistent and spec.restful_api.secret_name == "flux-api-creds"


def test_showcase_example_sets_many_settings_at_once() -> None:
    spec, _ = stack_file.load(ROOT / "Pulumi.showcase.yaml")
    set_keys = set(spec.model_dump(exclude_defaults=True))
    assert len(set_keys) >= 20, sorted(set_keys)


def test_autoscale_example_starts_at_one_broker_and_may_grow_to_four() -> None:
    spec, _ = stack_file.load(ROOT / "Pulumi.autoscale.yaml")
    assert (spec.size, spec.smallest_size, spec.largest_size) == (1, 1, 4)
    assert spec.autoscale.enabled and spec.metrics.enabled and spec.persistent
