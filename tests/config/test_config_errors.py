"""Bad input is refused before anything is created, with a message naming the key (issue 5).

Each case runs the real program on mocks with the base config plus one change, and checks the exact
problem line and that not a single resource was registered.
"""

from __future__ import annotations

from typing import Any

import pytest

from flux_minicluster.config.volumes import StateVolume
from tests.conftest import config
from tests.harness import deploy_rejected

LONG = "a" * 58
CASES: list[tuple[str, dict[str, Any], str]] = [
    # (id, overrides, expected problem line or its start)
    ("image-missing", {"image": None}, "minicluster:image: required, and not set (`pulumi config set minicluster:image ...`)"),
    ("image-spaces", {"image": "my image"}, "minicluster:image: must be an image reference like registry/path:tag (got 'my image')"),
    ("image-upper", {"image": "Flux/Core:1"}, "minicluster:image: must be an image reference"),
    ("image-empty", {"image": ""}, "minicluster:image: must be an image reference"),
    ("size-zero", {"size": 0}, "minicluster:size: Input should be greater than or equal to 1 (got 0)"),
    ("size-negative", {"size": -3}, "minicluster:size: Input should be greater than or equal to 1"),
    ("size-word", {"size": "four"}, "minicluster:size: must be a whole number (got four)"),
    ("size-over-job-limit", {"size": 100_001}, "minicluster:size: Input should be less than or equal to 100000"),
    ("size-above-max-size", {"maxSize": 2}, "minicluster:size (4) is above minicluster:maxSize (2), the most hosts "
     "the instance has: raise minicluster:maxSize to at least 4 too (that changes the hostlist, so the Job"),
    ("max-size-zero", {"maxSize": 0}, "minicluster:maxSize: Input should be greater than or equal to 1"),
    ("size-below-min-size", {"minSize": 5}, "minicluster:size (4) is below minicluster:minSize (5): lower "
     "minicluster:minSize to shrink further"),
    ("min-size-zero", {"minSize": 0}, "minicluster:minSize: Input should be greater than or equal to 1"),
    ("tasks-zero", {"tasks": 0}, "minicluster:tasks: Input should be greater than or equal to 1"),
    ("name-upper", {"name": "Flux"}, "minicluster:name: must be a DNS-1035 label: lower-case letters, digits and '-', starting with a letter"),
    ("name-digit-first", {"name": "1flux"}, "minicluster:name: must be a DNS-1035 label"),
    ("name-underscore", {"name": "flux_cluster"}, "minicluster:name: must be a DNS-1035 label"),
    ("name-trailing-dash", {"name": "flux-"}, "minicluster:name: must be a DNS-1035 label"),
    ("name-64", {"name": "a" * 64}, "minicluster:name: must be a DNS-1035 label of at most 63 characters (it has 64)"),
    ("hostname-too-long", {"name": "a" * 60, "size": 1000}, f"minicluster:name: the last pod hostname '{'a' * 60}-999' is 64 characters"),
    ("hostname-via-max-size", {"name": "a" * 61, "size": 4, "maxSize": 100}, "minicluster:name: the last pod hostname"),
    ("service-upper", {"serviceName": "Flux-Net"}, "minicluster:serviceName: must be a DNS-1035 label"),
    ("namespace-upper", {"namespace": "Default"}, "minicluster:namespace: must be a DNS-1123 label"),
    ("namespace-64", {"namespace": "n" * 64}, "minicluster:namespace: must be a DNS-1123 label of at most 63 characters"),
    ("pod-fqdn-over-253", {"name": LONG, "serviceName": "s" * 63, "namespace": "n" * 63, "clusterDomain": "c" * 63 + ".local"},
     "minicluster:name: the pod DNS name"),
    ("port-zero", {"port": 0}, "minicluster:port: Input should be greater than or equal to 1"),
    ("port-too-big", {"port": 70000}, "minicluster:port: Input should be less than or equal to 65535"),
    ("port-name", {"port": "http"}, "minicluster:port: must be a whole number (got http)"),
    ("timeout-with-a-unit", {"jobTimeout": "10m"}, "minicluster:jobTimeout: must be a whole number of seconds (600 for ten minutes) (got 10m)"),
    ("an-object-as-a-word", {"restfulApi": "true"}, "minicluster:restfulApi: must be an object of its own keys (minicluster:restfulApi.* in the configuration reference) (got true)"),
    ("mode-unknown", {"mode": "parallel"}, "minicluster:mode: Input should be 'submit', 'launcher', 'batch' or 'interactive'"),
    ("launcher-without-command", {"mode": "launcher", "command": None}, "minicluster:mode 'launcher' needs minicluster:command"),
    ("batch-without-command", {"mode": "batch", "command": None}, "minicluster:mode 'batch' needs minicluster:command"),
    ("batch-output-outside-batch", {"batchOutput": "/data/out.log"}, "minicluster:batchOutput is for mode 'batch', not 'submit'"),
    ("batch-output-relative", {"mode": "batch", "batchOutput": "out.log"}, "minicluster:batchOutput: must be an absolute path"),
    ("command-blank", {"command": "  "}, "minicluster:command: must not be empty (leave it unset for a persistent cluster)"),
    ("command-unbalanced", {"command": "echo 'hi"}, "minicluster:command: cannot be split into words like a shell line"),
    ("log-level-8", {"logLevel": 8}, "minicluster:logLevel: Input should be less than or equal to 7"),
    ("connect-timeout-words", {"connectTimeout": "5 seconds"}, "minicluster:connectTimeout: must be a Flux duration like 5s"),
    ("topology-unknown", {"topology": "tree"}, "minicluster:topology: must be kary:K, binomial or mincrit[:K]"),
    ("interface-space", {"networkInterface": "eth 0"}, "minicluster:networkInterface: must be an interface name"),
    ("domain-upper", {"clusterDomain": "Cluster.Local"}, "minicluster:clusterDomain: must be a DNS name like cluster.local"),
    ("success-policy-unknown", {"successPolicy": "any"}, "minicluster:successPolicy: Input should be 'all' or 'rank0'"),
    ("keygen-unknown", {"keygen": "remote"}, "minicluster:keygen: Input should be 'pod' or 'local'"),
    ("keygen-image-bad", {"keygenImage": "Not An Image"}, "minicluster:keygenImage: must be an image reference"),
    ("keygen-timeout-zero", {"keygenTimeout": 0}, "minicluster:keygenTimeout: Input should be greater than or equal to 1"),
    ("job-timeout-zero", {"jobTimeout": 0}, "minicluster:jobTimeout: Input should be greater than or equal to 1"),
    ("backoff-negative", {"backoffLimit": -1}, "minicluster:backoffLimit: Input should be greater than or equal to 0"),
    ("worker-retries-zero", {"workerRetries": 0}, "minicluster:workerRetries: Input should be greater than or equal to 1"),
    ("rotation-negative", {"certificateRotation": -1}, "minicluster:certificateRotation: Input should be greater than or equal to 0"),
    ("rerun-negative", {"rerun": -1}, "minicluster:rerun: Input should be greater than or equal to 0"),
    ("submit-flags-not-list", {"submitFlags": "--exclusive"}, "minicluster:submitFlags: Input should be a valid list"),
    ("submit-flags-empty-item", {"submitFlags": ["", "-x"]}, "minicluster:submitFlags: each item must be a non-empty, single-line argument"),
    ("flux-path-space", {"fluxPath": "my flux"}, "minicluster:fluxPath: must be a command name or absolute path"),
    ("hooks-typo", {"hooks": {"pree": "echo"}}, "minicluster:hooks.pree: unknown config key; did you mean minicluster:hooks.pre?"),
    ("logging-not-bool", {"logging": {"strict": "maybe"}}, "minicluster:logging.strict: Input should be a valid boolean"),
    ("key-typo", {"sise": 4}, "minicluster:sise: unknown config key; did you mean minicluster:size?"),
    ("key-unknown", {"flavour": "x"}, "minicluster:flavour: unknown config key"),
    ("certificate-garbage", {"curveCertificate": "garbage"}, "minicluster:curveCertificate: the certificate has no `metadata` section"),
    ("env-name-bad", {"environment": {"1BAD": "x"}}, "minicluster:environment: '1BAD' is not a valid environment variable name"),
    ("env-name-reserved", {"environment": {"MC_SIZE": "9"}}, "minicluster:environment: 'MC_SIZE': names starting MC_ are reserved for the entrypoint"),
    ("resource-name-bad", {"resources": {"limits": {"CPU!": "1"}}}, "minicluster:resources.limits: 'CPU!' is not a resource name"),
    ("resource-without-domain", {"resources": {"limits": {"gpu": 1}}}, "minicluster:resources.limits: 'gpu' is not a standard resource for containers (cpu, memory, ephemeral-storage, hugepages-<size>), and an extended resource needs its domain: nvidia.com/gpu"),
    ("sidecar-resource-without-domain", {"containers": [{"name": "side", "image": "busybox:1", "resources": {"requests": {"gpu": 1}}}]}, "minicluster:containers[0].resources.requests: 'gpu' is not a standard resource for containers"),
    ("quantity-bad", {"resources": {"requests": {"memory": "8 GB"}}}, "minicluster:resources.requests: memory: '8 GB' is not a Kubernetes quantity"),
    ("quantity-negative", {"resources": {"requests": {"cpu": "-1"}}}, "minicluster:resources.requests: cpu: '-1' is not a Kubernetes quantity"),
    ("two-flux-containers", {"containers": [{"name": "app", "image": "app:1", "runFlux": True}]}, "minicluster:containers[0].runFlux: only one container runs Flux, the one given by minicluster:image and minicluster:command"),
    ("sidecar-name-taken", {"containers": [{"name": "flux-broker", "image": "app:1"}]}, "minicluster:containers: 'flux-broker' is the name of a container the MiniCluster adds itself"),
    ("sidecar-names-repeat", {"containers": [{"name": "a", "image": "app:1"}, {"name": "a", "image": "app:2"}]}, "minicluster:containers: two containers are named 'a'"),
    ("sidecar-unknown-volume", {"containers": [{"name": "a", "image": "app:1", "volumes": ["nope"]}]}, "minicluster:containers[0].volumes: 'nope' is not one of minicluster:volumes"),
    ("sidecar-image-bad", {"containers": [{"name": "a", "image": "Bad Image"}]}, "minicluster:containers[0].image: must be an image reference"),
    ("volume-without-path", {"volumes": {"data": {"claimName": "pvc"}}}, "minicluster:volumes.data.path: required, and not set"),
    ("volume-two-sources", {"volumes": {"data": {"path": "/d", "claimName": "pvc", "hostPath": "/x"}}}, "minicluster:volumes.data: needs exactly one source of claimName, hostPath, configMap, secret, emptyDir (it has 2: claimName, hostPath)"),
    ("volume-no-source", {"volumes": {"data": {"path": "/d"}}}, "minicluster:volumes.data: needs exactly one source"),
    ("volume-on-our-files", {"volumes": {"data": {"path": "/var/lib/minicluster", "emptyDir": {}}}}, "minicluster:volumes.data.path: /var/lib/minicluster overlaps /var/lib/minicluster"),
    ("volume-relative-path", {"volumes": {"data": {"path": "data", "emptyDir": {}}}}, "minicluster:volumes.data.path: must be an absolute path"),
    ("volume-name-upper", {"volumes": {"Data": {"path": "/d", "emptyDir": {}}}}, "minicluster:volumes: must be a DNS-1123 label ('Data')"),
    ("volume-size-bad", {"volumes": {"shm": {"path": "/dev/shm", "emptyDir": {"sizeLimit": "lots"}}}}, "minicluster:volumes.shm.emptyDir.sizeLimit: sizeLimit: 'lots' is not a Kubernetes quantity"),
    ("restful-with-command", {"restfulApi": {"enabled": True, "secretName": "creds"}}, "minicluster:restfulApi runs as rank 0's program in a persistent cluster: unset minicluster:command or disable the API"),
    ("restful-without-secret", {"restfulApi": {"enabled": True}, "command": None}, "minicluster:restfulApi: restfulApi.secretName is required when enabled"),
    ("restful-port-clash", {"restfulApi": {"enabled": True, "secretName": "c", "port": 8050}, "command": None}, "minicluster:restfulApi.port 8050 is the Flux overlay port"),
    ("pod-label-ours", {"pod": {"labels": {"app.kubernetes.io/instance": "x"}}}, "minicluster:pod.labels: 'app.kubernetes.io/instance': keys starting app.kubernetes.io/ are set by the MiniCluster itself"),
    ("pod-restart-always", {"pod": {"restartPolicy": "Always"}}, "minicluster:pod.restartPolicy: Input should be 'Never' or 'OnFailure'"),
    ("pod-anti-affinity-twice", {"pod": {"onePodPerNode": True, "affinity": {"podAntiAffinity": {}}}}, "minicluster:pod: set pod.onePodPerNode or pod.affinity.podAntiAffinity, not both"),
    ("job-label-bad", {"jobLabels": {"queue": "has space"}}, "minicluster:jobLabels: queue: 'has space' is not a valid label value"),
    ("queue-policy-unknown", {"queuePolicy": "lifo"}, "minicluster:queuePolicy: Input should be 'fcfs', 'easy', 'hybrid' or 'conservative'"),
    ("broker-config-not-toml", {"brokerConfig": "[bootstrap"}, "minicluster:brokerConfig: is not valid TOML"),
    ("broker-config-no-bootstrap", {"brokerConfig": "[resource]\nnoverify = true\n"}, "minicluster:brokerConfig: needs a [bootstrap] table with hosts and curve_cert"),
    ("broker-attribute-bad", {"brokerAttributes": {"Bad Key": "1"}}, "minicluster:brokerAttributes: 'Bad Key': attributes are lower-case dotted names"),
    ("flux-view-image-bad", {"fluxView": {"enabled": True, "image": "Not An Image"}}, "minicluster:fluxView.image: must be an image reference"),
    ("env-from-secret-bad-name", {"environmentFromSecrets": {"1X": {"name": "s", "key": "k"}}}, "minicluster:environmentFromSecrets: '1X' is not a valid environment variable name"),
    ("pull-policy-unknown", {"imagePullPolicy": "Sometimes"}, "minicluster:imagePullPolicy: Input should be 'Always', 'IfNotPresent' or 'Never'"),
    ("optional-object-key-typo", {"command": None, "size": 1, "stateVolume": {"hostPath": "/srv/flux", "acessMode": "ReadWriteOnce"}}, "minicluster:stateVolume.acessMode: unknown config key; did you mean minicluster:stateVolume.accessMode?"),
    ("sidecar-key-typo", {"containers": [{"name": "a", "image": "app:1", "comand": ["x"]}]}, "minicluster:containers[0].comand: unknown config key; did you mean minicluster:containers[0].command?"),
    ("volume-key-typo", {"volumes": {"data": {"path": "/d", "emptydir": {}}}}, "minicluster:volumes.data.emptydir: unknown config key; did you mean minicluster:volumes.data.emptyDir?"),
    ("certificate-empty", {"curveCertificate": ""}, "minicluster:curveCertificate: the certificate is empty"),
    ("state-volume-with-a-command", {"stateVolume": {"claimName": "state"}}, "minicluster:stateVolume keeps a persistent instance's queue for a replaced rank 0; with minicluster:command in mode 'submit'"),
    ("state-volume-rwo-spread", {"command": None, "stateVolume": {"claimName": "state", "accessMode": "ReadWriteOnce"}}, "minicluster:stateVolume: a ReadWriteOnce claim mounts on one node only and every pod mounts it, while the pods spread over nodes"),
    ("state-volume-host-path-spread", {"command": None, "stateVolume": {"hostPath": "/srv/flux"}}, "minicluster:stateVolume.hostPath is a different directory on each node"),
    ("state-volume-pinned-but-spread", {"command": None, "pod": {"nodeSelector": {"kubernetes.io/hostname": "n1"}, "onePodPerNode": True}, "stateVolume": {"hostPath": "/srv/flux"}}, "minicluster:stateVolume pins the pods to one node, and minicluster:pod.onePodPerNode spreads them"),
    ("state-volume-two-sources", {"command": None, "stateVolume": {"claimName": "s", "hostPath": "/srv"}}, "minicluster:stateVolume: needs exactly one of claimName and hostPath"),
    ("state-volume-no-source", {"command": None, "stateVolume": {}}, "minicluster:stateVolume: needs exactly one of claimName and hostPath"),
    ("state-volume-period", {"command": None, "stateVolume": {"claimName": "s", "checkpointPeriod": "often"}}, "minicluster:stateVolume.checkpointPeriod: must be a Flux duration"),
    ("topology-beside-own-tbon", {"topology": "binomial", "brokerConfig": '[bootstrap]\ncurve_cert = "/c"\nhosts = [{ host = "dev-[0-3]" }]\n[tbon]\ntopo = "kary:2"\n'},
     "minicluster:topology goes into broker.toml's [tbon] table, and minicluster:brokerConfig has its own: set it there, or remove the [tbon] table"),
    ("request-above-limit", {"resources": {"requests": {"cpu": "4"}, "limits": {"cpu": "2"}}}, "minicluster:resources: requests.cpu (4) is above limits.cpu (2)"),
    ("gpu-request-without-limit", {"resources": {"requests": {"nvidia.com/gpu": 1}}}, "minicluster:resources: requests.nvidia.com/gpu (1) needs limits.nvidia.com/gpu equal to it"),
    ("gpu-fraction", {"resources": {"limits": {"nvidia.com/gpu": "0.5"}}}, "minicluster:resources: nvidia.com/gpu (0.5) must be a whole number"),
    ("sidecar-request-above-limit", {"containers": [{"name": "side", "image": "busybox:1", "resources": {"requests": {"memory": "2Gi"}, "limits": {"memory": "1Gi"}}}]}, "minicluster:containers[0].resources: requests.memory (2Gi) is above limits.memory (1Gi)"),
    ("toleration-operator-lower-case", {"pod": {"tolerations": [{"key": "gpu", "operator": "exists"}]}}, "minicluster:pod.tolerations[0].operator: Input should be 'Equal' or 'Exists' (got exists)"),
    ("toleration-exists-with-value", {"pod": {"tolerations": [{"key": "gpu", "operator": "Exists", "value": "true"}]}}, "minicluster:pod.tolerations[0]: operator Exists matches any value: remove value, or use operator Equal"),
    ("toleration-seconds-as-duration", {"pod": {"tolerations": [{"key": "gpu", "effect": "NoExecute", "value": "a", "tolerationSeconds": "5m"}]}}, "minicluster:pod.tolerations[0].tolerationSeconds: must be a whole number (got 5m)"),
    ("toleration-seconds-without-no-execute", {"pod": {"tolerations": [{"key": "gpu", "value": "a", "tolerationSeconds": 60}]}}, "minicluster:pod.tolerations[0]: tolerationSeconds is for effect NoExecute only"),
    ("dns-policy-none", {"pod": {"dnsPolicy": "None"}}, "minicluster:pod.dnsPolicy: Input should be 'ClusterFirst', 'ClusterFirstWithHostNet' or 'Default' (got None)"),
    ("affinity-missing-a-level", {"pod": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}}}}}, "minicluster:pod.affinity: nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: required, and not set"),
    ("affinity-operator-lower-case", {"pod": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "in", "values": ["a"]}]}]}}}}}, "minicluster:pod.affinity: nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator: Input should be 'In', 'NotIn', 'Exists', 'DoesNotExist', 'Gt' or 'Lt'"),
    ("affinity-exists-with-values", {"pod": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "Exists", "values": ["a"]}]}]}}}}}, "minicluster:pod.affinity: nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]: operator Exists takes no values"),
    ("affinity-gt-not-a-number", {"pod": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["many"]}]}]}}}}}, "minicluster:pod.affinity: nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]: operator Gt needs one value, a whole number"),
    ("affinity-term-without-topology-key", {"pod": {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {"matchLabels": {"app": "db"}}}]}}}}, "minicluster:pod.affinity: podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: required, and not set"),
    ("affinity-weight-over-100", {"pod": {"affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 200, "podAffinityTerm": {"topologyKey": "zone"}}]}}}}, "minicluster:pod.affinity: podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Input should be less than or equal to 100"),
    ("affinity-misspelt", {"pod": {"affinity": {"nodeAfinity": {}}}}, "minicluster:pod.affinity: nodeAfinity: not a field Kubernetes has here"),
    ("mount-path-as-kubernetes-spells-it", {"volumes": {"data": {"mountPath": "/data", "claimName": "c"}}}, "minicluster:volumes.data.mountPath: unknown config key; did you mean minicluster:volumes.data.path?"),
    ("min-size-above-max-size", {"command": None, "size": 5, "minSize": 6, "maxSize": 4}, "minicluster:minSize (6) is above minicluster:maxSize (4): the size can never be between them"),
    ("snake-case-inside-an-object", {"pod": {"node_selector": {"pool": "hpc"}}}, "minicluster:pod.node_selector: unknown config key; did you mean minicluster:pod.nodeSelector?"),
    ("snake-case-inside-a-list", {"containers": [{"name": "s", "image": "busybox", "image_pull_policy": "Always"}]}, "minicluster:containers[0].image_pull_policy: unknown config key; did you mean minicluster:containers[0].imagePullPolicy?"),
    ("security-context-wrong-type", {"securityContext": {"runAsUser": "root"}}, "minicluster:securityContext: Kubernetes refuses it: runAsUser: 'root' is not of type 'integer', 'null'"),
    ("security-context-unknown-field", {"securityContext": {"privilegd": True}}, "minicluster:securityContext: Kubernetes refuses it: Additional properties are not allowed ('privilegd' was unexpected)"),
]  # fmt: skip


@pytest.mark.parametrize(("overrides", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_config_is_refused_by_key_and_nothing_is_created(overrides: dict[str, Any], expected: str) -> None:
    message, deployment = deploy_rejected(config(**overrides))
    problems = [line.removeprefix("  - ") for line in message.splitlines()[1:]]
    assert message.startswith("invalid MiniCluster stack config:")
    assert any(problem.startswith(expected) for problem in problems), problems
    assert deployment.resources == []


def test_there_are_at_least_forty_cases() -> None:
    assert len(CASES) >= 40


def test_every_problem_is_reported_at_once() -> None:
    message, _ = deploy_rejected(config(size=0, port=0, image="bad image", colour="blue"))
    assert [line.split(":")[1] for line in message.splitlines()[1:]] == ["colour", "image", "size", "port"]


def test_a_certificate_and_local_keygen_together_are_contradictory() -> None:
    from flux_minicluster.config import certificate

    given = certificate.generate("dev-0").text()
    message, _ = deploy_rejected(
        config(keygen="local", curveCertificate=given), secret_keys=("minicluster:curveCertificate",)
    )
    assert "minicluster:curveCertificate is set, so minicluster:keygen 'local' has nothing to do; unset one" in message


def test_keys_of_other_namespaces_belong_to_their_providers() -> None:
    from tests.harness import deploy

    assert deploy({**config(), "kubernetes:context": "kind-flux", "aws:region": "us-east-1"}).outputs["size"] == 4


def test_rules_across_keys_say_which_key_is_at_fault() -> None:
    from flux_minicluster.config import consistency
    from flux_minicluster.config.loader import load_spec

    spec = load_spec({f"minicluster:{k}": v for k, v in config(command=None, size=1).items()}, "dev")
    grown = spec.model_copy(update={"max_size": 3, "state_volume": StateVolume(host_path="/srv/flux")})
    assert [problem.key for problem in consistency.problems(grown)] == ["stateVolume.hostPath"]


def test_a_command_over_the_size_kubernetes_allows_one_config_map_is_refused_before_anything_is_created() -> None:
    long_batch = "\n".join(f"echo {'x' * 100} {line}" for line in range(11000))  # about 1.2 MB
    message, deployment = deploy_rejected(config(mode="batch", command=long_batch))
    assert "minicluster:command and minicluster:hooks: the ConfigMap dev-entrypoint would hold" in message
    assert "over the 1048576 (1 MiB) Kubernetes allows one ConfigMap" in message
    assert deployment.resources == []
