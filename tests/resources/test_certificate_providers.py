"""Both certificate providers, driven as the engine drives them (issue 10): the dynamic-provider plugin
process over gRPC, properties as protobuf Structs, and (for the keygen pod) the real `kubernetes`
client inside that process talking to the local API stand-in.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from flux_minicluster.config import certificate, paths
from flux_minicluster.config.loader import load_spec
from flux_minicluster.resources import keygen
from tests.conftest import config
from tests.kube_api import Cluster, StandIn, Step, running
from tests.provider_plugin import (
    DIFF_NONE,
    DIFF_SOME,
    UNKNOWN,
    ProviderPlugin,
    decode,
    grpc_error,
    is_secret,
    secret,
    served,
)

KEYGEN_TYPE = "pulumi-python:dynamic/minicluster:CurveCertificate"
LOCAL_TYPE = "pulumi-python:dynamic/minicluster:LocalCurveCertificate"
SPEC = load_spec({f"minicluster:{k}": v for k, v in config().items()}, "dev")
CERT = certificate.generate("dev-0")


def holding_the_certificate(_pod: dict[str, Any], command: list[str]) -> tuple[str, str, int | None]:
    """The keygen container, asked through the exec API for its certificate file: it has written it."""
    return (CERT.text(), "", 0) if command[-1] == paths.KEYGEN_CERT else ("", "no such file", 1)


@pytest.fixture
def api(api_server: StandIn) -> Cluster:
    """The stand-in's cluster, reset, with a kubelet that starts the keygen pod, which makes its certificate."""
    cluster = api_server.cluster.reset()
    cluster.kubelet = lambda _pod: [Step(0.02, node="node-1", status=running(), log="minicluster: made\n")]
    cluster.exec_handler = holding_the_certificate
    return cluster


@pytest.fixture(scope="module")
def plugin(api_server: StandIn) -> Iterator[ProviderPlugin]:
    yield from served(keygen.KeygenPodProvider(), KEYGEN_TYPE, api_server.cluster.kubeconfig)


@pytest.fixture(scope="module")
def local_plugin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProviderPlugin]:
    nowhere = tmp_path_factory.mktemp("no-cluster") / "kubeconfig"
    yield from served(keygen.LocalKeygenProvider(), LOCAL_TYPE, nowhere)


def program_inputs(plugin: ProviderPlugin, **overrides: Any) -> dict[str, Any]:
    """What `pulumi up` sends for the default stack: the program's own inputs, plus `__provider`."""
    return plugin.with_provider({**keygen.certificate_inputs(SPEC, pod=True), **overrides})


@pytest.fixture
def created(plugin: ProviderPlugin, api: Cluster) -> tuple[str, dict[str, Any]]:
    return plugin.create(program_inputs(plugin))


# -- Create: the default `pulumi up` --------------------------------------------------------------


def test_check_accepts_what_the_program_sends(plugin: ProviderPlugin) -> None:
    assert list(plugin.check(program_inputs(plugin)).failures) == []


def test_check_names_an_input_the_wire_cannot_make_whole(plugin: ProviderPlugin) -> None:
    (failure,) = plugin.check(program_inputs(plugin, rotation=0.5)).failures
    assert failure.property == "rotation"
    assert "integer" in failure.reason


def test_default_pulumi_up_creates_the_keygen_pod_with_whole_numbers(
    api: Cluster, created: tuple[str, dict[str, Any]]
) -> None:
    (sent,) = api.created_pods()
    assert sent["spec"]["activeDeadlineSeconds"] == 300
    assert isinstance(sent["spec"]["activeDeadlineSeconds"], int)
    assert sent["spec"]["containers"][0]["image"] == SPEC.image
    assert api.pods == {}  # deleted after


def test_create_returns_the_whole_certificate_as_a_secret(created: tuple[str, dict[str, Any]]) -> None:
    resource_id, outs = created
    assert resource_id == "default/dev/0"
    assert is_secret(outs["certificate"])
    assert certificate.parse(outs["certificate"]["value"]) == CERT
    assert outs["publicKey"] == CERT.public_key


def test_create_reads_the_certificate_through_exec_and_never_the_log(
    api: Cluster, created: tuple[str, dict[str, Any]]
) -> None:
    paths_asked = [path for method, path, _ in api.requests if method == "GET"]
    assert any(path.endswith("/exec") for path in paths_asked)
    assert not any(path.endswith("/log") for path in paths_asked)


def test_create_without_the_right_to_exec_fails_in_one_line_without_key_material(
    plugin: ProviderPlugin, api: Cluster
) -> None:
    api.fail("GET", "/exec", 403, 'pods "x" is forbidden: User "dev" cannot get resource "pods/exec"')
    details = grpc_error(lambda: plugin.create(program_inputs(plugin)))
    (line,) = details.splitlines()  # the error's line, as the dynamic providers' process reports it: no traceback
    assert line.startswith("flux_minicluster.cluster.keygen_pod.KeygenError: ")
    assert "this needs get and create on pods/exec" in line
    assert CERT.secret_key not in details
    assert api.pods == {}


def test_create_reports_a_missing_namespace_as_such(plugin: ProviderPlugin, api: Cluster) -> None:
    api.namespaces = {"other"}
    details = grpc_error(lambda: plugin.create(program_inputs(plugin)))
    assert "namespace 'default' does not exist" in details
    assert "cannot reach" not in details


def test_create_names_a_missing_kube_context_and_the_ones_there_are(plugin: ProviderPlugin, api: Cluster) -> None:
    details = grpc_error(lambda: plugin.create(program_inputs(plugin, kubeContext="nope")))
    assert "kubeconfig context 'nope' does not exist" in details
    assert "its contexts: standin" in details
    assert api.requests == []


# -- Diff, Update, Read, Delete: the key is stable ------------------------------------------------


def test_diff_of_the_same_inputs_is_no_change(plugin: ProviderPlugin, created: tuple[str, dict[str, Any]]) -> None:
    resource_id, outs = created
    diff = plugin.diff(resource_id, outs, program_inputs(plugin))
    assert (diff.changes, list(diff.replaces)) == (DIFF_NONE, [])


def test_an_edited_provider_does_not_rotate_the_key(
    plugin: ProviderPlugin, created: tuple[str, dict[str, Any]]
) -> None:
    resource_id, outs = created
    edited = keygen.KeygenPodProvider()
    edited.edited = True  # type: ignore[attr-defined]  # other code, other pickled bytes
    from pulumi.dynamic.dynamic import serialize_provider

    news = plugin.with_provider(keygen.certificate_inputs(SPEC, pod=True), serialize_provider(edited))
    assert news["__provider"] != outs["__provider"]
    diff = plugin.diff(resource_id, outs, news)
    assert (diff.changes, list(diff.replaces)) == (DIFF_NONE, [])


@pytest.mark.parametrize(
    ("change", "replaced"), [({"rotation": 1}, ["rotation"]), ({"namespace": "hpc"}, ["namespace"])]
)
def test_rotation_or_namespace_replace_the_keypair(
    plugin: ProviderPlugin, created: tuple[str, dict[str, Any]], change: dict[str, Any], replaced: list[str]
) -> None:
    resource_id, outs = created
    diff = plugin.diff(resource_id, outs, program_inputs(plugin, **change))
    assert (diff.changes, list(diff.replaces), diff.deleteBeforeReplace) == (DIFF_SOME, replaced, True)


@pytest.mark.parametrize(
    "change",
    [{"timeout": 900}, {"scheduleTimeout": 30}, {"kubeContext": "kind-flux"}, {"pod": '{"kind": "Pod"}'}],
    ids=["timeout", "scheduleTimeout", "kubeContext", "pod"],
)
def test_how_the_keypair_is_made_is_no_change_once_it_is(
    plugin: ProviderPlugin, created: tuple[str, dict[str, Any]], change: dict[str, Any]
) -> None:
    """A new keygen pod (another image, the certificate elsewhere in it) or other timeouts change
    nothing: a preview must not show the Secret and the Job as replaced, as an update's unknown outputs
    would."""
    resource_id, outs = created
    assert plugin.diff(resource_id, outs, program_inputs(plugin, **change)).changes == DIFF_NONE


def test_an_update_keeps_the_secret_certificate(plugin: ProviderPlugin, created: tuple[str, dict[str, Any]]) -> None:
    resource_id, outs = created
    news = program_inputs(plugin, timeout=900, kubeContext="kind-flux")
    updated = plugin.update(resource_id, outs, news)
    assert updated["certificate"] == outs["certificate"]
    assert is_secret(updated["certificate"])
    assert (updated["timeout"], updated["kubeContext"]) == (900, "kind-flux")


def test_a_certificate_the_engine_sends_back_unwrapped_is_kept_and_stays_secret(
    plugin: ProviderPlugin, created: tuple[str, dict[str, Any]]
) -> None:
    resource_id, outs = created
    plain_state = {**outs, "certificate": outs["certificate"]["value"]}
    assert plugin.diff(resource_id, plain_state, program_inputs(plugin)).changes == DIFF_NONE
    updated = plugin.update(resource_id, plain_state, program_inputs(plugin, timeout=60))
    assert updated["certificate"] == secret(CERT.text())


@pytest.mark.parametrize(
    ("unknown", "diff_says"), [("rotation", (DIFF_SOME, ["rotation"])), ("kubeContext", (DIFF_NONE, []))]
)
def test_preview_with_unknown_inputs(
    plugin: ProviderPlugin, created: tuple[str, dict[str, Any]], unknown: str, diff_says: tuple[Any, list[str]]
) -> None:
    resource_id, outs = created
    diff = plugin.diff(resource_id, outs, program_inputs(plugin, **{unknown: UNKNOWN}))
    assert (diff.changes, list(diff.replaces)) == diff_says


def test_refresh_keeps_the_certificate(plugin: ProviderPlugin, created: tuple[str, dict[str, Any]]) -> None:
    resource_id, outs = created
    read_id, read = plugin.read(resource_id, outs)
    assert read_id == resource_id
    assert read["certificate"] == outs["certificate"]
    assert read["publicKey"] == CERT.public_key


def test_delete_touches_nothing_in_the_cluster(
    plugin: ProviderPlugin, api: Cluster, created: tuple[str, dict[str, Any]]
) -> None:
    resource_id, outs = created
    api.requests.clear()
    plugin.delete(resource_id, outs)
    assert api.requests == []


# -- the local keypair ----------------------------------------------------------------------------


def test_local_keypair_over_the_wire(local_plugin: ProviderPlugin) -> None:
    inputs = local_plugin.with_provider(keygen.certificate_inputs(SPEC, pod=False))
    assert list(local_plugin.check(inputs).failures) == []
    resource_id, outs = local_plugin.create(inputs)
    assert resource_id == "default/dev/0"  # not "default/dev/0.0"
    assert is_secret(outs["certificate"])
    made = certificate.parse(outs["certificate"]["value"])
    assert (made.name, made.public_key) == ("dev-0", outs["publicKey"])
    assert local_plugin.diff(resource_id, outs, inputs).changes == DIFF_NONE
    rotated = local_plugin.diff(resource_id, outs, {**inputs, "rotation": 3})
    assert list(rotated.replaces) == ["rotation"]


@pytest.mark.parametrize("old_module", ["components.keygen", "components.resources.keygen"])
def test_state_from_before_the_rename_still_finds_its_providers(old_module: str) -> None:
    """What unpickling a provider that older state names under `components` resolves to: the very
    classes of flux_minicluster (state from before the layered layout named components.keygen)."""
    import importlib

    old = importlib.import_module(old_module)
    assert old.LocalKeygenProvider is keygen.LocalKeygenProvider
    assert old.KeygenPodProvider is keygen.KeygenPodProvider


def test_every_provider_in_older_state_unpickles_to_todays_class() -> None:
    import pickle

    from flux_minicluster.resources import deletion, scale, scheduling

    for provider in (keygen.KeygenPodProvider, scale.ScaleProvider, scheduling.SchedulingGuardProvider,
                     deletion.JobDeletionProvider):  # fmt: skip
        old_reference = pickle.dumps(provider, protocol=0).replace(
            b"flux_minicluster.", b"components."
        )  # text: no lengths
        assert b"components.resources." in old_reference
        assert pickle.loads(old_reference) is provider


def test_check_during_a_preview_passes_unknown_inputs_back_unknown(plugin: ProviderPlugin) -> None:
    response = plugin.check(program_inputs(plugin, kubeContext=UNKNOWN, rotation=UNKNOWN))
    assert list(response.failures) == []
    checked = decode(response.inputs)
    assert (checked["kubeContext"], checked["rotation"]) == (UNKNOWN, UNKNOWN)
    assert checked["namespace"] == "default"


def test_a_module_reached_by_its_old_name_keeps_its_own_spec() -> None:
    import importlib

    from flux_minicluster.builders import files

    assert importlib.import_module("components.builders.files") is files
    assert files.__spec__ is not None and files.__spec__.name == "flux_minicluster.builders.files"
    assert files.script("lib.sh").startswith("# shellcheck")
