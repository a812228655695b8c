"""Label, annotation, node selector and toleration values written as YAML numbers or booleans (`count: 2`,
`gpu: true`; `pulumi config set --path 'minicluster:pod.nodeSelector.count' 2` stores a number too):
taken as the text they read as, as `environment` takes them, so that they reach Kubernetes as the strings
it requires. A list or an object is still no text."""

from __future__ import annotations

from typing import Any

import pytest

from flux_minicluster.builders import manifests
from flux_minicluster.config.loader import ConfigError, load_spec
from flux_minicluster.config.spec import MiniClusterSpec
from tests.conftest import config


def spec_of(**overrides: Any) -> MiniClusterSpec:
    return load_spec({f"minicluster:{key}": value for key, value in config(**overrides).items()}, "dev")


def job_pod(spec: MiniClusterSpec) -> dict[str, Any]:
    (job,) = [obj for obj in manifests.all_objects(spec, "cert") if obj["kind"] == "Job"]
    return job["spec"]["template"]  # type: ignore[no-any-return]


def test_numbers_and_booleans_in_the_pods_labels_and_selectors_reach_the_job_as_text() -> None:
    pod = {"nodeSelector": {"cores": 64, "gpu": True}, "labels": {"tier": 2}, "annotations": {"weight": 1.5}}
    template = job_pod(spec_of(pod=pod))
    assert template["spec"]["nodeSelector"] == {"cores": "64", "gpu": "true"}
    assert template["metadata"]["labels"]["tier"] == "2"
    assert template["metadata"]["annotations"]["weight"] == "1.5"


def test_a_job_label_and_a_toleration_value_are_taken_as_text_too() -> None:
    spec = spec_of(
        jobLabels={"priority": 5}, pod={"tolerations": [{"key": "gpu", "value": True, "effect": "NoSchedule"}]}
    )
    assert spec.job_labels == {"priority": "5"}
    assert [t.value for t in spec.pod.tolerations] == ["true"]


def test_a_list_is_still_no_label_value() -> None:
    with pytest.raises(
        ConfigError, match=r"minicluster:pod\.nodeSelector\.pool: must be text, not a list or an object"
    ):
        spec_of(pod={"nodeSelector": {"pool": ["a", "b"]}})
