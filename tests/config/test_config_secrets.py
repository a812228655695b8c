"""Config values the stack marks secret stay secret all the way into the pods (issue 19).

The program runs on mocks with the secret keys set as the engine sets them: listed in
PULUMI_CONFIG_SECRET_KEYS (what the language host hands the program) or recorded by set_all_config.
A nested `pulumi config set --secret --path 'minicluster:environment.API_TOKEN'` marks the whole
top-level key, so every value under it is treated as secret.
"""

from __future__ import annotations

import json
from typing import Any

import kubernetes_validate
import pytest

from flux_minicluster.builders import manifests
from flux_minicluster.config.loader import load_spec
from tests.conftest import config
from tests.harness import Deployment, deploy, deploy_rejected
from tests.plain import is_secret, plain, without_secrets
from tests.schemas import assert_conforms

TOKEN = "s3cr3t-t0ken"
SECRET_KIND = "kubernetes:core/v1:Secret"


def assert_nowhere_in_plain_text(deployment: Deployment, text: str) -> None:
    for resource in deployment.resources:
        assert text not in json.dumps(without_secrets(resource.inputs)), f"{resource.name} holds it in plain text"
    assert text not in repr(deployment.outputs)


def config_secret(deployment: Deployment) -> Any:
    (found,) = [r for r in deployment.of_type(SECRET_KIND) if r.name == "dev-config-secret"]
    return found


def flux_container(deployment: Deployment) -> dict[str, Any]:
    job = deployment.one("kubernetes:batch/v1:Job")
    container: dict[str, Any] = plain(job.inputs)["spec"]["template"]["spec"]["containers"][0]
    return container


@pytest.fixture
def engine_secret_keys(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Mark keys secret the way the engine does for a program: PULUMI_CONFIG_SECRET_KEYS."""

    def mark(*keys: str) -> None:
        monkeypatch.setenv("PULUMI_CONFIG_SECRET_KEYS", json.dumps([f"minicluster:{key}" for key in keys]))

    return mark


# -- environment ----------------------------------------------------------------------------------


def test_a_secret_environment_value_reaches_the_container_through_a_secret_key_ref(engine_secret_keys: Any) -> None:
    engine_secret_keys("environment")
    deployment = deploy(config(environment={"API_TOKEN": TOKEN}))
    env = {item["name"]: item for item in flux_container(deployment)["env"]}
    secret_name = deployment.live_name("dev-config-secret")
    assert env["API_TOKEN"] == {
        "name": "API_TOKEN",
        "valueFrom": {"secretKeyRef": {"name": secret_name, "key": "env.API_TOKEN"}},
    }


def test_the_secret_holds_the_value_as_a_pulumi_secret(engine_secret_keys: Any) -> None:
    engine_secret_keys("environment")
    secret = config_secret(deploy(config(environment={"API_TOKEN": TOKEN})))
    assert is_secret(secret.inputs["stringData"])
    assert plain(secret.inputs["stringData"]) == {"env.API_TOKEN": TOKEN}


def test_a_secret_environment_value_is_nowhere_in_plain_text(engine_secret_keys: Any) -> None:
    engine_secret_keys("environment")
    assert_nowhere_in_plain_text(deploy(config(environment={"API_TOKEN": TOKEN})), TOKEN)


def test_secret_keys_recorded_by_set_all_config_count_too() -> None:
    deployment = deploy(config(environment={"API_TOKEN": TOKEN}), secret_keys=("environment",))
    assert "valueFrom" in {item["name"]: item for item in flux_container(deployment)["env"]}["API_TOKEN"]
    assert_nowhere_in_plain_text(deployment, TOKEN)


def test_an_environment_that_is_not_secret_stays_a_plain_value_and_makes_no_secret() -> None:
    deployment = deploy(config(environment={"LOG": "debug"}))
    assert {"name": "LOG", "value": "debug"} in flux_container(deployment)["env"]
    assert [r.name for r in deployment.of_type(SECRET_KIND)] == ["dev-curve"]


# -- command and hooks ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "files"),
    [
        ("command", f"curl -H 'Authorization: {TOKEN}' https://example.org", ["command.args"]),
        ("hooks", {"pre": f"export TOKEN={TOKEN}", "post": "echo done"}, ["post.sh", "pre.sh"]),
    ],
)
def test_a_secret_command_or_hook_goes_into_the_secret_mounted_beside_the_entrypoint(
    engine_secret_keys: Any, key: str, value: Any, files: list[str]
) -> None:
    engine_secret_keys(key)
    deployment = deploy(config(**{key: value}))
    assert sorted(plain(config_secret(deployment).inputs["stringData"])) == files
    (entrypoint,) = [r for r in deployment.resources if r.name == "dev-entrypoint"]
    assert not set(files) & set(entrypoint.inputs["data"])
    job = plain(deployment.one("kubernetes:batch/v1:Job").inputs)
    volumes = {volume["name"]: volume for volume in job["spec"]["template"]["spec"]["volumes"]}
    assert volumes["run-config"]["projected"]["sources"] == [
        {"configMap": {"name": deployment.live_name("dev-entrypoint")}},
        {
            "secret": {
                "name": deployment.live_name("dev-config-secret"),
                "items": [{"key": f, "path": f} for f in files],
            }
        },
    ]
    assert_nowhere_in_plain_text(deployment, TOKEN)


def test_the_pod_with_secret_files_conforms_to_kubernetes() -> None:
    raw = {f"minicluster:{k}": v for k, v in config(command="hostname", environment={"A": "b"}).items()}
    spec = load_spec(raw, "dev", ["minicluster:command", "minicluster:environment"])
    for version in ("1.29.0", kubernetes_validate.latest_version()):
        for obj in manifests.all_objects(spec, "cert"):
            assert_conforms(obj, version)


# -- what cannot stay secret ----------------------------------------------------------------------


@pytest.mark.parametrize("key", ["image", "size", "name", "jobLabels"])
def test_a_key_that_cannot_stay_secret_is_refused_naming_it_and_nothing_is_created(
    engine_secret_keys: Any, key: str
) -> None:
    secret_value = {"image": "registry.example/secret-image:1", "size": 3, "name": "hidden", "jobLabels": {"a": "b"}}
    engine_secret_keys(key)
    message, deployment = deploy_rejected(config(**{key: secret_value[key]}))
    assert f"minicluster:{key} is set as a secret, but it cannot stay secret" in message
    assert "Set it without --secret" in message
    assert json.dumps(secret_value[key]).strip('"') not in message
    assert [r.typ for r in deployment.resources if r.typ.startswith("kubernetes:")] == []


def test_an_invalid_secret_value_is_refused_without_echoing_it(engine_secret_keys: Any) -> None:
    engine_secret_keys("environment")
    message, _ = deploy_rejected(config(environment={"MC_TOKEN": TOKEN}))
    assert "minicluster:environment" in message
    assert TOKEN not in message
