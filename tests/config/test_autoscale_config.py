"""autoscale.enabled in the stack config: the rules it comes with, the API access the builders give
rank 0's autoscaler (and only it, in a container of its own), and what `pulumi up` declares on mocks,
where pulumi-kubernetes names the scale ConfigMap `<resource name>-<8 hex>`."""

from __future__ import annotations

from typing import Any

import pytest

from flux_minicluster.builders import manifests
from flux_minicluster.builders.names import AUTOSCALER_CONTAINER, BROKER_CONTAINER
from flux_minicluster.config.loader import load_spec
from flux_minicluster.config.spec import MiniClusterSpec
from tests.auto_names import auto_name
from tests.conftest import config
from tests.harness import deploy, refused_problems
from tests.plain import plain
from tests.schemas import SUPPORTED, assert_conforms

AUTOSCALED = {"command": None, "size": 1, "maxSize": 4, "autoscale": {"enabled": True, "scaleDownAfter": 30}}
JOB = "kubernetes:batch/v1:Job"


def spec_of(**overrides: Any) -> MiniClusterSpec:
    raw = config(**{**AUTOSCALED, **overrides})
    return load_spec({f"minicluster:{key}": value for key, value in raw.items()}, "dev")


SPEC = spec_of()


def objects(**overrides: Any) -> dict[str, dict[str, Any]]:
    """The objects, the Secrets and ConfigMaps named as pulumi-kubernetes names them."""
    return {obj["kind"]: obj for obj in manifests.all_objects(spec_of(**overrides), "cert", auto_name)}


def pod_spec(found: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return found["Job"]["spec"]["template"]["spec"]  # type: ignore[no-any-return]


def containers(found: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    pod = pod_spec(found)
    return {container["name"]: container for container in [*pod.get("initContainers", []), *pod["containers"]]}


def env(found: dict[str, dict[str, Any]], container: str = AUTOSCALER_CONTAINER) -> dict[str, str]:
    return {item["name"]: item.get("value") for item in containers(found)[container]["env"]}


@pytest.mark.parametrize(
    ("overrides", "line"),
    [
        (
            {"command": "hostname", "maxSize": None},
            "minicluster:autoscale resizes a running instance, "
            "and mode 'submit' with a command runs once at its size: use no command, or mode interactive or launcher",
        ),
        (
            {"maxSize": None},
            "minicluster:autoscale needs room: minicluster:maxSize (1) must be above minicluster:minSize (1)",
        ),
        (
            {"minSize": 4, "size": 4},
            "minicluster:autoscale needs room: minicluster:maxSize (4) must be above minicluster:minSize (4)",
        ),
        (
            {"scheduler": {"gang": "coscheduling"}},
            "minicluster:autoscale with "
            "minicluster:scheduler: the gang's PodGroup holds the size, which the autoscaler may not change; resize "
            "with `pulumi up` instead",
        ),
        (
            {"pod": {"automountServiceAccountToken": True}},
            "minicluster:autoscale keeps its account's token in its own container: a token in the Flux "
            "container would let every Flux job resize or suspend the cluster; unset "
            "minicluster:pod.automountServiceAccountToken, or name an account of your own in "
            "minicluster:pod.serviceAccountName",
        ),
        (
            {"autoscale": {"admissionPolicy": True}},
            "minicluster:autoscale.admissionPolicy bounds the autoscaler's account: it needs "
            "minicluster:autoscale.enabled",
        ),
        (
            {"autoscale": {"enabled": True, "interval": 0}},
            "minicluster:autoscale.interval: Input should be greater than or equal to 1 (got 0)",
        ),
    ],
    ids=[
        "one-shot-command",
        "no-max-size",
        "max-size-not-above-min-size",
        "gang",
        "token-in-every-container",
        "policy-without-autoscale",
        "interval-zero",
    ],
)
def test_a_config_autoscaling_cannot_serve_is_refused_by_key(overrides: dict[str, Any], line: str) -> None:
    assert refused_problems(config(**{**AUTOSCALED, **overrides})) == [line]


def test_the_role_allows_get_and_patch_of_its_own_job_and_scale_config_map_and_creating_events() -> None:
    found = objects()
    assert found["Role"]["rules"] == [
        {"apiGroups": ["batch"], "resources": ["jobs"], "resourceNames": [found["Job"]["metadata"]["name"]],
         "verbs": ["get", "patch"]},
        {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": [found["ConfigMap"]["metadata"]["name"]],
         "verbs": ["get", "patch"]},
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
    ]  # fmt: skip


def test_the_pods_run_as_the_autoscalers_service_account() -> None:
    found = objects()
    assert found["RoleBinding"]["subjects"] == [{"kind": "ServiceAccount", "name": "dev-autoscaler",
                                                 "namespace": "default"}]  # fmt: skip
    assert found["RoleBinding"]["roleRef"]["name"] == found["Role"]["metadata"]["name"] == "dev-autoscaler"
    assert found["ServiceAccount"]["metadata"]["name"] == "dev-autoscaler"
    assert pod_spec(found)["serviceAccountName"] == "dev-autoscaler"


def test_a_service_account_the_stack_names_gets_the_role_and_none_is_made() -> None:
    found = objects(pod={"serviceAccountName": "flux-runner"})
    assert "ServiceAccount" not in found
    assert found["RoleBinding"]["subjects"][0]["name"] == pod_spec(found)["serviceAccountName"] == "flux-runner"


def test_without_autoscale_there_is_no_role_no_autoscaler_and_no_token() -> None:
    found = objects(autoscale=None, maxSize=None)
    assert not {"ServiceAccount", "Role", "RoleBinding"} & set(found)
    assert pod_spec(found)["automountServiceAccountToken"] is False
    assert list(containers(found)) == [BROKER_CONTAINER]


def test_the_autoscaler_is_told_its_rhythm_its_bounds_and_what_it_patches() -> None:
    found = objects(minSize=None)
    settings = env(found)
    assert {key: settings[key] for key in settings if key.startswith("MC_AUTOSCALE")} == {
        "MC_AUTOSCALE_INTERVAL": "10", "MC_AUTOSCALE_DOWN_AFTER": "30", "MC_AUTOSCALE_COOLDOWN": "30",
        "MC_AUTOSCALE_MIN_SIZE": "",
    }  # fmt: skip
    assert (settings["MC_MAX_SIZE"], settings["MC_JOB"]) == ("4", found["Job"]["metadata"]["name"])
    assert settings["MC_MIN_SIZE"] == ""  # the metrics' (off here); the autoscaler derives it from minSize
    assert settings["MC_SCALE_CONFIG"] == found["ConfigMap"]["metadata"]["name"]
    assert settings["MC_SERVICE_ACCOUNT_DIR"] == "/var/run/secrets/kubernetes.io/serviceaccount"
    assert not any(key.startswith("MC_AUTOSCALE") for key in env(found, BROKER_CONTAINER))


@pytest.mark.parametrize("version", [SUPPORTED[0], SUPPORTED[-1]])
def test_the_access_objects_conform_to_kubernetes(version: str) -> None:
    for kind in ("ServiceAccount", "Role", "RoleBinding"):
        assert_conforms(objects()[kind], version)


def test_pulumi_up_declares_the_access_before_the_job() -> None:
    deployment = deploy(config(**AUTOSCALED))
    kinds = {"kubernetes:core/v1:ServiceAccount", "kubernetes:rbac.authorization.k8s.io/v1:Role",
             "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding"}  # fmt: skip
    access = [resource for resource in deployment.resources if resource.typ in kinds]
    assert sorted(resource.name for resource in access) == [
        "dev-autoscaler-role", "dev-autoscaler-role-binding", "dev-autoscaler-service-account",
    ]  # fmt: skip
    job = deployment.one(JOB)
    assert {deployment.urn(resource) for resource in access} <= set(deployment.options[job.name]["dependencies"])
    assert plain(job.inputs["spec"])["template"]["spec"]["serviceAccountName"] == "dev-autoscaler"
    assert deployment.one("pulumi-python:dynamic/minicluster:Scale").inputs["autoscale"] is True


def test_under_pulumi_up_the_autoscaler_and_its_role_name_the_scale_config_map_the_engine_created() -> None:
    """pulumi-kubernetes names the scale ConfigMap `<resource name>-<8 hex>`: what the autoscaler patches
    and what its Role allows are that name, not the stack's."""
    deployment = deploy(config(**AUTOSCALED))
    created = deployment.live_name("dev-scale")
    job = plain(deployment.one(JOB).inputs)
    pod = job["spec"]["template"]["spec"]
    autoscaler = next(c for c in pod["initContainers"] if c["name"] == AUTOSCALER_CONTAINER)
    assert {item["name"]: item["value"] for item in autoscaler["env"]}["MC_SCALE_CONFIG"] == created
    (role,) = [r for r in deployment.resources if r.typ == "kubernetes:rbac.authorization.k8s.io/v1:Role"]
    assert plain(role.inputs)["rules"][1]["resourceNames"] == [created]
    assert {"name": "scale", "configMap": {"name": created}} in pod["volumes"]
    (scale_config,) = [r for r in deployment.resources if r.name == "dev-scale"]
    assert deployment.urn(scale_config) in deployment.options[role.name]["dependencies"]
