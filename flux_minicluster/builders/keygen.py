"""The keygen pod: `flux keygen` in the cluster's own image, its certificate kept in memory until
`pulumi up` reads it through the exec API (cluster/keygen_pod.py) and deletes the pod. Pure, like every
builder: the Pulumi layer and the admission check's dry run both send this manifest."""

from __future__ import annotations

from typing import Any

from flux_minicluster.builders import flux_view, pod_security
from flux_minicluster.builders.names import object_metadata
from flux_minicluster.config import paths
from flux_minicluster.config.spec import MiniClusterSpec

Manifest = dict[str, Any]

KEYGEN_CONTAINER = "keygen"
# The certificate goes to a file in memory (the runtime's /dev/shm, paths.KEYGEN_CERT), complete or not
# at all (mv), and stays there until `pulumi up` has read it through the exec API and deleted the pod:
# no log line, event or status ever holds it. The pod's deadline (activeDeadlineSeconds) ends the wait
# if nobody comes.
KEYGEN_SCRIPT = r"""set -eu
memory=${MC_CERT_FILE%/*}
if ! [ -d "$memory" ] || ! [ -w "$memory" ]; then
  echo "minicluster: no writable $memory in the keygen container (a container runtime gives each pod one)" >&2
  exit 1
fi
if [ -n "${MC_FLUX_VIEW:-}" ]; then
  PATH="$PATH:$MC_FLUX_VIEW/view/bin" LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}:$MC_FLUX_VIEW/view/lib"
  export PATH LD_LIBRARY_PATH
fi
"$MC_FLUX" keygen --name="$MC_CERT_NAME" "$MC_CERT_FILE.new" >&2
mv "$MC_CERT_FILE.new" "$MC_CERT_FILE"
echo "minicluster: the certificate is made; pulumi up reads it through the exec API, then deletes this pod"
exec sleep "$MC_HOLD_SECONDS"
"""


def keygen_pod(spec: MiniClusterSpec) -> Manifest:
    """A pod that runs `flux keygen` in the cluster's image and keeps the certificate in memory until
    `pulumi up` reads it (exec) and deletes the pod. It can pull and schedule where the brokers can.
    generateName: a pod left behind never blocks the next. No volume (paths.KEYGEN_CERT says why),
    unless the flux view brings Flux."""
    env = {
        "MC_FLUX": spec.flux_path,
        "MC_CERT_NAME": spec.rank0_host,
        "MC_CERT_FILE": paths.KEYGEN_CERT,
        "MC_HOLD_SECONDS": str(spec.keygen_timeout),
    }
    container: Manifest = {
        "name": KEYGEN_CONTAINER,
        "image": spec.keygen_image or spec.image,
        "command": ["/bin/sh", "-c", KEYGEN_SCRIPT],
        "env": [{"name": key, "value": value} for key, value in env.items()],
    }
    pod_spec: Manifest = {
        "restartPolicy": "Never",
        "automountServiceAccountToken": False,
        "activeDeadlineSeconds": spec.keygen_timeout,
        "containers": [container],
    }
    pod = spec.pod
    tolerations = [toleration.manifest() for toleration in pod.tolerations]
    for key, value in (("imagePullSecrets", [{"name": name} for name in pod.image_pull_secrets]),
                       ("nodeSelector", dict(pod.node_selector)), ("tolerations", tolerations)):  # fmt: skip
        if value:
            pod_spec[key] = value
    if spec.flux_view.enabled and spec.keygen_image is None:
        view = flux_view.FLUX_VIEW
        pod_spec["initContainers"] = [flux_view.init_container(spec)]
        pod_spec["volumes"] = [{"name": view, "emptyDir": {}}]
        container["volumeMounts"] = flux_view.keygen_mounts(spec)
        container["env"].append({"name": "MC_FLUX_VIEW", "value": spec.flux_view.path})
    pod_security.secure(spec, pod_spec)
    metadata = {"generateName": f"{spec.name}-keygen-", **object_metadata(spec, None, "keygen")}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": pod_spec}
