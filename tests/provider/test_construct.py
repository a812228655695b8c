"""The component package's Construct over the engine's gRPC protocol, on mocks (engine_peer.py): the
inputs as another language's SDK sends them (camelCase keys, every number a double, secrets wrapped,
unknown values in a preview) make the same MiniCluster as the same keys in a stack file."""

from __future__ import annotations

from typing import Any

from pulumi.runtime import rpc

from flux_minicluster.builders.names import INDEX_LABEL
from flux_minicluster.config import certificate
from flux_minicluster.provider.inputs import canonical
from tests.conftest import config
from tests.harness import deploy, example, refused_problems
from tests.plain import is_secret, plain
from tests.provider.engine_peer import construct
from tests.provider_plugin import secret

JOB = "kubernetes:batch/v1:Job"
EVERY_KIND: dict[str, Any] = {
    **example("showcase"),  # strings, integers, booleans, an enum, lists, maps, nested objects, lists and maps of them
    "admission": "off",  # no cluster here
    "hooks": {"pre": "echo ready", "post": "echo done"},
    "securityContext": {"runAsNonRoot": True, "runAsUser": 1000},  # any value, as Kubernetes spells it
    # A map's keys in sorted order: so the wire carries them (a protobuf Struct), whatever the order
    # the program wrote them in (docs/configuration.md says what that means for $(VAR) references).
    "environment": {"API_TOKEN": "s3cret", "ENSEMBLE": True, "OMP_NUM_THREADS": 1},
}


def on_the_wire(value: Any) -> Any:
    """As a TypeScript program's SDK sends it: JavaScript numbers are doubles."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return float(value)
    if isinstance(value, dict):
        return {key: on_the_wire(item) for key, item in value.items()}
    if isinstance(value, list):
        return [on_the_wire(item) for item in value]
    return value


def kubernetes_objects(resources: list[Any]) -> dict[str, Any]:
    return {r.name: plain(r.inputs) for r in resources if r.typ.startswith("kubernetes:")}


def test_every_input_kind_makes_the_same_objects_as_the_stack_file() -> None:
    environment = {**EVERY_KIND["environment"], "API_TOKEN": secret("s3cret")}
    built = construct(on_the_wire({**EVERY_KIND, "environment": environment}))
    assert built.error is None
    from_stack_file = deploy(EVERY_KIND, secret_keys=("environment",))
    assert kubernetes_objects(built.deployment.resources) == kubernetes_objects(from_stack_file.resources)


def test_whole_doubles_are_integers_again() -> None:
    built = construct(on_the_wire(config(size=4, environment={"OMP_NUM_THREADS": 4}, admission="off")))
    job = plain(built.deployment.one(JOB).inputs)
    assert job["spec"]["completions"] == 4
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert {"name": "OMP_NUM_THREADS", "value": "4"} in container["env"]  # "4", not "4.0"


def test_a_secret_input_stays_in_its_own_secret() -> None:
    built = construct(config(environment={"API_TOKEN": secret("s3cret")}, admission="off"))
    holders = [r for r in built.deployment.resources if "s3cret" in repr(plain(r.inputs))]
    assert [r.name for r in holders] == ["dev-config-secret"]
    assert is_secret(holders[0].inputs["stringData"])


def test_an_invalid_input_is_refused_in_the_stack_files_words_and_nothing_is_declared() -> None:
    built = construct(on_the_wire(config(size=0, mode="sumbit", admission="off")))
    assert built.error is not None
    for problem in refused_problems(config(size=0, mode="sumbit", admission="off")):
        assert problem in built.error
    assert built.deployment.resources == []


def test_a_preview_with_an_input_not_yet_known_shows_the_component_alone() -> None:
    built = construct(config(namespace=rpc.UNKNOWN, admission="off"), preview=True)
    assert built.error is None
    assert built.deployment.kinds == ["minicluster:index:MiniCluster"]
    assert set(built.state.values()) == {rpc.UNKNOWN}  # every output unknown, as the inputs they come from
    assert any("minicluster:namespace not known" in message for message in built.warnings())


def test_an_input_not_known_outside_a_preview_is_an_error() -> None:
    built = construct(config(namespace=rpc.UNKNOWN, admission="off"))
    assert built.error is not None and "minicluster:namespace: not known" in built.error
    assert built.deployment.resources == []


def test_the_outputs_are_the_components() -> None:
    built = construct(config(admission="off"))
    assert plain(built.state) | {"publicKey": None} == {
        "name": "dev", "namespace": "default", "size": 4, "serviceName": "dev", "jobName": "dev",
        "rank0Hostname": "dev-0", "publicKey": None,  # no apiServiceName: it has no RESTful API
        "logsCommand": f"kubectl logs -f -n default -c flux-broker -l job-name=dev,{INDEX_LABEL}=0",
    }  # fmt: skip


def test_its_custom_resources_are_the_packages_own_types() -> None:
    built = construct(config(command=None, admission="off"))  # persistent: elastic, so a Scale and a JobDeletion
    custom = {r.typ for r in built.deployment.resources if not r.typ.startswith("kubernetes:")}
    assert custom == {
        "minicluster:index:MiniCluster", "minicluster:index:CurveCertificate", "minicluster:index:Scale",
        "minicluster:index:JobDeletion", "minicluster:index:SchedulingGuard",
    }  # fmt: skip


def test_a_maps_keys_are_taken_in_key_order_whatever_order_they_came_in() -> None:
    came = {"environment": {"ZETA": 1.0, "ALPHA": 2.5, "MID": {"b": 1.0, "a": True}}}
    assert canonical(came) == {"environment": {"ALPHA": 2.5, "MID": {"a": True, "b": 1}, "ZETA": 1}}
    assert list(canonical(came)["environment"]) == ["ALPHA", "MID", "ZETA"]


def test_a_cluster_of_many_resources_is_constructed_while_the_engine_checks_each() -> None:
    # An autoscaled cluster with a secret: eleven registrations in flight at once, each answered only
    # once the plugin's own Check of the package's types has run (the plugin deadlocked here before).
    built = construct(config(command=None, autoscale={"enabled": True}, environment={"TOKEN": secret("t")},
                             admission="off"))  # fmt: skip
    assert built.error is None
    assert len(built.deployment.resources) >= 11


def test_a_certificate_given_as_a_secret_input_is_the_clusters_and_stays_secret() -> None:
    given = certificate.generate("dev-0")
    built = construct(config(curveCertificate=secret(given.text()), admission="off"))
    assert built.error is None
    assert not [r for r in built.deployment.resources if r.typ.endswith("CurveCertificate")]  # no keygen at all
    (curve,) = [r for r in built.deployment.resources if r.name == "dev-curve"]
    assert is_secret(curve.inputs["stringData"]) and given.secret_key in repr(plain(curve.inputs))
    assert given.secret_key not in repr([plain(r.inputs) for r in built.deployment.resources if r is not curve])
    assert built.state["publicKey"] == given.public_key
