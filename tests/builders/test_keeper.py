"""keeper.enabled: the keeper's objects (its scripts, account, Role and Deployment), who holds the right
to create pods (its account alone), where its pod runs, and what `pulumi up` declares on mocks: the
keeper after the Job it keeps, so that `pulumi destroy` deletes it first."""

from __future__ import annotations

from typing import Any

import pytest

from flux_minicluster.builders import files, keeper, manifests
from flux_minicluster.builders.names import INDEX_LABEL, KEEPER_CONTAINER, REPLACES
from flux_minicluster.config import paths
from flux_minicluster.config.loader import load_spec
from flux_minicluster.config.spec import MiniClusterSpec
from tests.auto_names import auto_name
from tests.conftest import config
from tests.harness import deploy
from tests.schemas import SUPPORTED, assert_conforms

PERSISTENT = {"command": None, "size": 2, "keeper": {"enabled": True}}
STATE = {"stateVolume": {"claimName": "flux-state"}}
DEPLOYMENT = "kubernetes:apps/v1:Deployment"


def spec_of(**overrides: Any) -> MiniClusterSpec:
    raw = config(**{**PERSISTENT, **overrides})
    return load_spec({f"minicluster:{key}": value for key, value in raw.items()}, "dev")


def objects(**overrides: Any) -> dict[tuple[str, str], dict[str, Any]]:
    """The objects by kind and name, the ConfigMaps named as pulumi-kubernetes names them."""
    found = manifests.all_objects(spec_of(**overrides), "cert", auto_name)
    return {(obj["kind"], obj["metadata"]["name"]): obj for obj in found}


def keeper_pod(**overrides: Any) -> dict[str, Any]:
    return objects(**overrides)[("Deployment", "dev-keeper")]["spec"]["template"]["spec"]  # type: ignore[no-any-return]


def environment(**overrides: Any) -> dict[str, str]:
    return {item["name"]: item["value"] for item in keeper_pod(**overrides)["containers"][0]["env"]}


def test_without_the_keeper_nothing_of_it_is_made() -> None:
    found = objects(keeper={"enabled": False})
    assert [key for key in found if "keeper" in key[1]] == []


def test_the_keeper_comes_after_the_job_it_keeps() -> None:
    kinds = [kind for kind, _ in objects()]
    assert kinds[kinds.index("Job") :] == ["Job", "ServiceAccount", "Role", "RoleBinding", "Deployment"]


def test_its_account_may_read_its_own_job_and_follow_and_create_pods_and_nothing_else() -> None:
    assert objects()[("Role", "dev-keeper")]["rules"] == [
        {"apiGroups": ["batch"], "resources": ["jobs"], "resourceNames": ["dev"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "create"]},
    ]
    binding = objects()[("RoleBinding", "dev-keeper")]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "dev-keeper", "namespace": "default"}]


def test_only_the_keepers_pod_runs_as_its_account() -> None:
    found = objects()
    assert keeper_pod()["serviceAccountName"] == "dev-keeper"
    assert found[("Job", "dev")]["spec"]["template"]["spec"].get("serviceAccountName") is None


def test_one_keeper_at_a_time() -> None:
    spec = objects()[("Deployment", "dev-keeper")]["spec"]
    assert (spec["replicas"], spec["strategy"]) == (1, {"type": "Recreate"})


def test_it_runs_keeper_py_from_its_own_config_map_of_the_pods_scripts() -> None:
    found = objects()
    scripts = found[("ConfigMap", auto_name("dev-keeper-scripts"))]
    assert scripts["data"] == {name: files.script(name) for name in ("keeper.py", "cluster_api.py")}
    pod = keeper_pod()
    assert pod["containers"][0]["command"] == ["python3", "/etc/minicluster/run/keeper.py"]
    assert pod["volumes"] == [{"name": "run-config", "configMap": {"name": auto_name("dev-keeper-scripts")}}]


def test_the_broker_pods_scripts_are_not_changed_by_the_keeper() -> None:
    """Turning the keeper on or off never replaces the Job."""
    assert objects()[("Job", "dev")] == objects(keeper={"enabled": False})[("Job", "dev")]


def test_it_is_told_the_job_and_the_contracts_it_shares_with_the_builders() -> None:
    assert environment() == {
        "MC_JOB": "dev", "MC_INDEX_LABEL": INDEX_LABEL, "MC_REPLACES": REPLACES, "MC_RANK0_WHILE_STOPPING": "0",
        "MC_SERVICE_ACCOUNT_DIR": paths.SERVICE_ACCOUNT_DIR,
    }  # fmt: skip


def test_rank0_is_replaced_while_it_stops_only_with_a_state_volume_to_lock() -> None:
    assert environment(**STATE)["MC_RANK0_WHILE_STOPPING"] == "1"


def test_its_image_is_the_clusters_unless_one_is_given() -> None:
    assert keeper_pod()["containers"][0]["image"] == spec_of().image
    assert keeper_pod(keeper={"enabled": True, "image": "python:3.12"})["containers"][0]["image"] == "python:3.12"


def test_it_goes_where_the_brokers_may_go() -> None:
    placed = {"nodeSelector": {"pool": "hpc"}, "tolerations": [{"key": "hpc", "operator": "Exists"}],
              "imagePullSecrets": ["registry"]}  # fmt: skip
    pod = keeper_pod(pod=placed)
    assert pod["nodeSelector"] == {"pool": "hpc"}
    assert pod["tolerations"] == [{"key": "hpc", "operator": "Exists"}]
    assert pod["imagePullSecrets"] == [{"name": "registry"}]


def test_under_the_restricted_profile_it_is_restricted_too() -> None:
    pod = keeper_pod(securityProfile="restricted")
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["containers"][0]["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert pod["containers"][0]["securityContext"]["allowPrivilegeEscalation"] is False


def test_its_dry_run_pod_is_its_deployments() -> None:
    spec = spec_of()
    dry_run = keeper.pod(spec)
    assert dry_run["spec"] == keeper.pod_spec(spec, "dev-keeper-scripts")
    assert dry_run["spec"]["containers"][0]["name"] == KEEPER_CONTAINER


@pytest.mark.parametrize("version", SUPPORTED)
def test_its_objects_conform_to_kubernetes(version: str) -> None:
    for (kind, _), obj in objects(**STATE).items():
        if kind in ("ServiceAccount", "Role", "RoleBinding", "Deployment"):
            assert_conforms(obj, version)


def test_pulumi_up_declares_no_keeper_unless_asked() -> None:
    assert deploy(config(**{**PERSISTENT, "keeper": {"enabled": False}})).of_type(DEPLOYMENT) == []
