"""The objects the pods name and the MiniCluster does not make (a volume's Secret, ConfigMap or claim, a
Secret key a container's environment reads, a pull Secret): the admission check looks for each, beside the dry runs,
with the real client against the API stand-in, which answers a GET as the API server does (404 for an
object that is not there). The pods' PriorityClass, RuntimeClass and ServiceAccount are found missing by
the sample pods' dry run: the stand-in answers it with the admission plugins' words (those of the real
API server: tests/realengine/node/test_pods_that_cannot_start.py)."""

from __future__ import annotations

import pytest

from flux_minicluster.cluster import admission
from tests.cluster.test_dry_run import verdict
from tests.kube_api import Cluster
from tests.kube_api.samples import FOUR

DATA = {"path": "/data", "secret": "app-token"}
"""A volume that mounts the Secret app-token."""


def there(api: Cluster, resource: str, name: str, *keys: str, secret_type: str = "Opaque") -> None:
    """An object of the namespace; a Secret with `keys` in its data, of the type the API server gives one
    made without a type (Opaque) unless told."""
    metadata = {"name": name, "namespace": "default"}
    if resource == "configmaps":
        api.config_maps[("default", name)] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}
    else:
        data = dict.fromkeys(keys, "c2VjcmV0")
        api.existing[(resource, "default", name)] = {"metadata": metadata, "type": secret_type, "data": data}


def missing(refused: str | None) -> list[str]:
    """The lines of a refusal that name what is missing."""
    return [line.removeprefix("  - ") for line in (refused or "").splitlines() if line.startswith("  - ")]


def test_a_secret_that_a_volume_mounts_and_is_not_there_refuses_the_minicluster_by_its_key(kube_api: Cluster) -> None:
    """Its pods would wait in ContainerCreating until jobTimeout."""
    kube_api.nodes = FOUR
    refused = verdict(volumes={"data": DATA}).refused
    assert refused == (
        "MiniCluster 'dev' names what does not exist, and its pods cannot start without it "
        "(create each, or change the key that names it):\n"
        "  - the Secret 'app-token' that minicluster:volumes.data.secret names does not exist in namespace 'default'\n"
        "Nothing was created."
    )


def test_every_missing_object_is_named_in_the_order_of_the_config(kube_api: Cluster) -> None:
    kube_api.nodes = FOUR
    volumes = {"data": DATA, "settings": {"path": "/etc/app", "configMap": "app-settings"},
               "scratch": {"path": "/scratch", "claimName": "scratch"}}  # fmt: skip
    refused = verdict(command=None, volumes=volumes, stateVolume={"claimName": "flux-state"}).refused or ""
    named = [line.split(" that ")[0] for line in refused.splitlines() if line.startswith("  - ")]
    assert named == [
        "  - the Secret 'app-token'", "  - the ConfigMap 'app-settings'",
        "  - the PersistentVolumeClaim 'scratch'", "  - the PersistentVolumeClaim 'flux-state'",
    ]  # fmt: skip
    assert "minicluster:stateVolume.claimName names" in refused


def test_objects_that_are_there_pass(kube_api: Cluster) -> None:
    kube_api.nodes = FOUR
    there(kube_api, "secrets", "app-token")
    there(kube_api, "configmaps", "app-settings")
    volumes = {"data": DATA, "settings": {"path": "/etc/app", "configMap": "app-settings"}}
    assert verdict(volumes=volumes) == admission.Verdict()


def test_in_a_preview_a_missing_object_is_a_warning_as_the_program_may_make_it(kube_api: Cluster) -> None:
    kube_api.nodes = FOUR
    found = verdict(preview=True, volumes={"data": DATA})
    assert found.refused is None
    assert found.warnings == [
        "admission check left to `pulumi up`: the Secret 'app-token' that minicluster:volumes.data.secret names "
        "does not exist in namespace 'default' yet. If this program makes it, `pulumi up` looks again; if not, "
        "`pulumi up` refuses the MiniCluster before anything is created"
    ]


def test_an_object_the_user_may_not_read_is_a_warning_not_a_refusal(kube_api: Cluster) -> None:
    kube_api.nodes = FOUR
    denied = 'secrets "app-token" is forbidden: User "dev" cannot get resource "secrets" in the namespace "default"'
    kube_api.fail("GET", "/secrets/app-token", 403, denied)
    found = verdict(volumes={"data": DATA})
    assert found.refused is None
    (warning,) = found.warnings
    assert warning.startswith("admission check: not checked: access denied (403: " + denied)
    assert "looking for the Secret 'app-token' that minicluster:volumes.data.secret names" in warning


def test_a_pull_secret_that_is_not_there_is_a_warning_as_the_kubelet_pulls_without_it(kube_api: Cluster) -> None:
    """An image that needs it then fails to pull, which the scheduling guard stops: a public one pulls."""
    kube_api.nodes = FOUR
    found = verdict(pod={"imagePullSecrets": ["regcred"]})
    assert found.refused is None
    assert found.warnings == [
        "admission check: the Secret 'regcred' that minicluster:pod.imagePullSecrets names does not exist in "
        "namespace 'default': the kubelet pulls without it, and an image that needs it fails"
    ]


@pytest.mark.parametrize(("secret_type", "key"), [("kubernetes.io/dockerconfigjson", ".dockerconfigjson"),
                                                  ("kubernetes.io/dockercfg", ".dockercfg")])  # fmt: skip
def test_a_pull_secret_of_a_registrys_type_passes(kube_api: Cluster, secret_type: str, key: str) -> None:
    kube_api.nodes = FOUR
    there(kube_api, "secrets", "regcred", key, secret_type=secret_type)
    assert verdict(pod={"imagePullSecrets": ["regcred"]}) == admission.Verdict()


def test_a_generic_secret_as_the_pull_secret_is_a_warning_as_the_kubelet_passes_over_it(kube_api: Cluster) -> None:
    """`kubectl create secret generic --from-file=.dockerconfigjson=...`: the right key, an Opaque Secret."""
    kube_api.nodes = FOUR
    there(kube_api, "secrets", "regcred", ".dockerconfigjson")
    found = verdict(pod={"imagePullSecrets": ["regcred"]})
    assert found.refused is None
    assert found.warnings == [
        "admission check: the Secret 'regcred' that minicluster:pod.imagePullSecrets names is of type 'Opaque', and "
        "the kubelet pulls only with one of type kubernetes.io/dockerconfigjson or kubernetes.io/dockercfg (`kubectl "
        "create secret docker-registry` makes one): it pulls without it, and an image that needs it fails"
    ]


def test_in_a_namespace_that_does_not_exist_the_namespace_is_the_one_problem(kube_api: Cluster) -> None:
    kube_api.nodes = FOUR
    kube_api.namespaces = {"other"}
    refused = verdict(volumes={"data": DATA}).refused or ""
    assert "namespace 'default' does not exist" in refused
    assert "app-token" not in refused


def test_a_secret_key_an_environment_variable_reads_must_be_in_its_secret(kube_api: Cluster) -> None:
    """Without it the container waits in CreateContainerConfigError."""
    kube_api.nodes = FOUR
    there(kube_api, "secrets", "lammps", "other")
    variables = {"LAMMPS_LICENSE": {"name": "lammps", "key": "license"}}
    assert missing(verdict(environmentFromSecrets=variables).refused) == [
        "the Secret 'lammps' that minicluster:environmentFromSecrets.LAMMPS_LICENSE.name names has no key 'license'"
    ]


def test_a_secret_that_an_environment_variable_reads_is_there_with_its_key(kube_api: Cluster) -> None:
    kube_api.nodes = FOUR
    there(kube_api, "secrets", "lammps", "license")
    variables = {"LAMMPS_LICENSE": {"name": "lammps", "key": "license"}}
    assert verdict(environmentFromSecrets=variables) == admission.Verdict()


def test_a_sidecars_secrets_and_the_restful_apis_are_looked_for_too(kube_api: Cluster) -> None:
    kube_api.nodes = FOUR
    there(kube_api, "secrets", "api-credentials", "user", "secret-key")  # no token
    variables = {"TOKEN": {"name": "exporter-token", "key": "token"}}
    sidecar = {"name": "exporter", "image": "exporter:1", "environmentFromSecrets": variables}
    api = {"enabled": True, "secretName": "api-credentials"}
    refused = verdict(command=None, containers=[sidecar], restfulApi=api).refused
    assert missing(refused) == [
        "the Secret 'exporter-token' that minicluster:containers[0].environmentFromSecrets.TOKEN.name names does not "
        "exist in namespace 'default'",
        "the Secret 'api-credentials' that minicluster:restfulApi.secretName names has no key 'token'",
    ]


def test_each_object_is_read_once_however_many_keys_name_it(kube_api: Cluster) -> None:
    kube_api.nodes = FOUR
    there(kube_api, "secrets", "api-credentials", "user", "token", "secret-key")
    verdict(command=None, restfulApi={"enabled": True, "secretName": "api-credentials"})
    assert [path for method, path, _ in kube_api.requests if path.endswith("/secrets/api-credentials")] == [
        "/api/v1/namespaces/default/secrets/api-credentials"
    ]


NAMED_BY_THE_POD = [
    ({"priorityClassName": "hpc-batch"}, 'pods "dev-0" is forbidden: no PriorityClass with name hpc-batch was found',
     "the PriorityClass 'hpc-batch' that minicluster:pod.priorityClassName names does not exist in the cluster"),
    ({"runtimeClassName": "kata"}, 'pods "dev-0" is forbidden: pod rejected: RuntimeClass "kata" not found',
     "the RuntimeClass 'kata' that minicluster:pod.runtimeClassName names does not exist in the cluster"),
    ({"serviceAccountName": "flux"},
     'pods "dev-0" is forbidden: error looking up service account default/flux: serviceaccount "flux" not found',
     "the ServiceAccount 'flux' that minicluster:pod.serviceAccountName names does not exist in namespace 'default'"),
]  # fmt: skip


@pytest.mark.parametrize(("pod", "refusal", "line"), NAMED_BY_THE_POD)
def test_what_the_pods_name_that_admission_does_not_find_refuses_the_minicluster_by_its_key(
    kube_api: Cluster, pod: dict[str, str], refusal: str, line: str
) -> None:
    """The Job controller would meet the refusal at every pod (FailedCreate), which the scheduling guard
    stops only after scheduleTimeout."""
    kube_api.nodes = FOUR
    kube_api.fail("POST", "/pods$", 403, refusal)
    assert missing(verdict(pod=pod).refused) == [line]


def test_the_service_account_the_minicluster_makes_itself_is_not_looked_for(kube_api: Cluster) -> None:
    """The autoscaler's account is made with the MiniCluster, after the check."""
    kube_api.nodes = FOUR
    refusal = 'pods "x" is forbidden: error looking up service account default/dev: serviceaccount "dev" not found'
    kube_api.fail("POST", "/pods$", 403, refusal)
    assert verdict(command=None, size=1, maxSize=4, autoscale={"enabled": True}).refused is None
