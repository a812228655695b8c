"""Where things are inside a broker pod: defined once, used by the builders (mounts, broker.toml,
env vars for the scripts) and by the config checks (user volumes must not land on them)."""

PREFIX = "/etc/minicluster"
BROKER_CONFIG_DIR = f"{PREFIX}/broker"
RUN_CONFIG_DIR = f"{PREFIX}/run"
"""The scripts (pod_scripts/) and the files that configure them."""
CURVE_DIR = f"{PREFIX}/curve"
SCALE_DIR = f"{PREFIX}/scale"
"""The current size and quorum (files `size`, `quorum`): a ConfigMap that a resize updates in place,
so that the pod template never holds the size."""
STATE_DIR = "/var/lib/minicluster"
# Files the entrypoint writes in STATE_DIR and the broker reads through broker.toml.
PRIVATE_CURVE_CERT = f"{STATE_DIR}/curve.cert"
RESOURCE_FILE = f"{STATE_DIR}/R"
RUN_DIR = f"{STATE_DIR}/run"
"""The broker's rundir."""
REJOIN_MARK = f"{STATE_DIR}/rejoin"
"""A worker's mark to rejoin rank 0's replacement when its broker ends: written by a rank 0 that goes away
(on every rank), by a worker that stops (on the ranks below it), or by a worker's own rc3 (rank 0 out of
reach as its broker leaves); taken by the entrypoint as the broker ends."""
LOCAL_URI = f"local://{RUN_DIR}/local"
"""Where a process in a broker's container (`kubectl exec`) reaches that broker: set FLUX_URI to it."""
STATE_VOLUME = "/var/lib/minicluster-state"
"""Where the state volume (minicluster:stateVolume) is mounted: rank 0's statedir is in it."""
RESTFUL_API_DIR = "/var/lib/minicluster-api"
"""The RESTful API's code and libraries, put there by its init container, run from there by rank 0."""
VIEW_SOFTWARE = "/opt/software"
"""Where the flux view's files link to (the flux-view images are spack views): its init container
copies it alongside the view, and the Flux container gets it back there."""
RESERVED = (PREFIX, STATE_DIR, STATE_VOLUME, RESTFUL_API_DIR)

ENTRYPOINT_SCRIPT = "entrypoint.sh"
RESIZE_SCRIPT = "resize.sh"
READINGS_SCRIPT = "readings.py"
"""The instance's own view (nodes, cores, GPUs, jobs, queues), read with Flux's Python in rank 0."""
METRICS_SCRIPT = "metrics.py"
"""The Prometheus metrics server of every broker pod (metrics.enabled), with Flux's Python."""
AUTOSCALER_ENTRY = "autoscaler.sh"
"""The autoscaler container's command (autoscale.enabled): rank 0's runs autoscaler.py, the others idle."""
AUTOSCALER_SCRIPT = "autoscaler.py"
"""Rank 0's autoscaler, with Flux's Python: it imports the two modules below."""
AUTOSCALING_MODULE = "autoscaling.py"
"""The autoscaler's decisions: pure functions of what it observed."""
CLUSTER_API_MODULE = "cluster_api.py"
"""The Kubernetes API from inside a pod, as its service account, with the standard library."""
KEEPER_SCRIPT = "keeper.py"
"""The keeper's program (keeper.enabled), in its own pod, with the image's python3: it imports cluster_api.py."""
RESTART_RC1 = "restart_rc1.py"
"""Rank 0's own step in Flux's rc1 (a modprobe task, with Flux's Python) when it restarts a saved
instance: a job whose allocation a crash left recorded only halfway is allocated anew."""
SIZING_MODULE = "sizing.py"
"""flux_minicluster/config/sizing.py itself: the scale ConfigMap's and the Job's size, one definition."""
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
"""Where Kubernetes mounts a pod's service account token, CA and namespace (automountServiceAccountToken),
and where the autoscaler container alone mounts them (autoscale.enabled)."""
ENTRYPOINT = f"{RUN_CONFIG_DIR}/{ENTRYPOINT_SCRIPT}"
RESIZE = f"{RUN_CONFIG_DIR}/{RESIZE_SCRIPT}"
LOG_SINK = "/proc/1/fd/2"
"""Rank 0's log, for a script run through the exec API (resize.sh): the stderr of the container's
first process, the entrypoint."""

SHARED_MEMORY_DIR = "/dev/shm"
"""The memory-backed tmpfs every container runtime gives a pod; the broker pod mounts a bigger one
there (minicluster:sharedMemory)."""
KEYGEN_CERT = f"{SHARED_MEMORY_DIR}/minicluster-curve.cert"
"""In the keygen pod: where `flux keygen` writes the certificate, which `pulumi up` reads through the
exec API (never the pod's log). In the runtime's /dev/shm, the pod needs no volume: the kubelet's
volume manager, which loops every 100 ms, holds a pod that has one about 0.3 s before its sandbox
starts, and the Job waits for this pod."""
READ_CERTIFICATE = 'while [ ! -s "$1" ]; do sleep 0.1; done; cat "$1"'
"""Run (sh -c) through the exec API in the keygen container: the certificate ($1), as soon as it is written."""

# The volumes of a broker pod, by name.
BROKER_CONFIG_VOLUME = "broker-config"
RUN_CONFIG_VOLUME = "run-config"
SCALE_VOLUME = "scale"
CURVE_VOLUME = "curve-certificate"
STATE_VOLUME_OF_POD = "state"
FLUX_VIEW = "flux-view"
"""The flux-view init container and its volume."""
RESTFUL_API = "restful-api"
"""The RESTful API's init container and its volume."""
STATE_VOLUME_NAME = "flux-state"
SHARED_MEMORY_VOLUME = "shared-memory"
"""The broker pod's memory-backed /dev/shm (minicluster:sharedMemory)."""
AUTOSCALER_TOKEN_VOLUME = "autoscaler-token"
"""The service account's token, CA and namespace: mounted in the autoscaler container only."""
OWN_VOLUMES = (
    BROKER_CONFIG_VOLUME, RUN_CONFIG_VOLUME, SCALE_VOLUME, CURVE_VOLUME, STATE_VOLUME_OF_POD, FLUX_VIEW, RESTFUL_API,
    STATE_VOLUME_NAME, SHARED_MEMORY_VOLUME, AUTOSCALER_TOKEN_VOLUME,
)  # fmt: skip
"""The volumes the broker pod has for itself: a user volume may not take one of these names."""
