"""The validated MiniCluster configuration: one pydantic model for the whole stack config.

Pure: no Pulumi, no Kubernetes client. Each field's type carries its own rule (config/types.py); the
rules across fields are in config/consistency.py, and reading stack config into this model, with the
error messages, in config/loader.py.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from flux_minicluster.config import paths, rules, sizing
from flux_minicluster.config.autoscale import Autoscale
from flux_minicluster.config.flux_extras import FluxView, Metrics, RestfulApi
from flux_minicluster.config.gang import Scheduler
from flux_minicluster.config.keeper import Keeper
from flux_minicluster.config.settings import ContainerSettings, Hooks, Logging, Pod, Sidecar
from flux_minicluster.config.types import (
    AbsolutePath,
    Arguments,
    BrokerAttributes,
    BrokerToml,
    ClusterDomain,
    CurveCertificate,
    Dns1035Label,
    Dns1123Label,
    Executable,
    ExtendedResourceName,
    FluxDuration,
    Image,
    Labels,
    NetworkInterface,
    Port,
    Seconds,
    SharedMemorySize,
    ShellLine,
    ShellWords,
    TbonTopology,
)
from flux_minicluster.config.volumes import StateVolume, Volumes

MAX_INDEXED_COMPLETIONS = 100_000
BROKER_CONTAINER = "flux-broker"
RESERVED_CONTAINERS = {BROKER_CONTAINER, paths.FLUX_VIEW, paths.RESTFUL_API}

DEFAULT_GPU_RESOURCE = "nvidia.com/gpu"
DEFAULT_SHARED_MEMORY = "1Gi"

Mode = Literal["submit", "launcher", "batch", "interactive"]
Keygen = Literal["pod", "local"]
SuccessPolicy = Literal["all", "rank0"]
QueuePolicy = Literal["fcfs", "easy", "hybrid", "conservative"]


class MiniClusterSpec(ContainerSettings):
    """The whole stack config. The Flux container's own settings (workingDir, environment, resources, ...)
    are top-level keys, inherited from ContainerSettings. Field docstrings feed the README's reference."""

    name: Dns1035Label
    """MiniCluster name (DNS-1035 label); pods are `<name>-<rank>`. Default: the stack name."""
    namespace: Dns1123Label = "default"
    """Kubernetes namespace for every object (must exist)."""
    image: Image
    """Container image with Flux installed, used by every broker pod (and by the keygen pod)."""
    command: ShellLine | None = None
    """Command rank 0 runs in the instance, split like a shell line (a backslash ends a line it goes on
    from), or a YAML list of its words. No shell runs it (batch mode's lines aside): for `&&`, `|`, `>`,
    `$VAR` or a command a line, give it to one (`sh -c '...'`). Absent: a persistent cluster."""
    size: int = Field(1, ge=1, le=MAX_INDEXED_COMPLETIONS)
    """Number of pods, each running one Flux broker. On an elastic cluster (no command, interactive,
    launcher, the RESTful API) a change between minSize and maxSize resizes the running instance."""
    max_size: int | None = Field(None, ge=1, le=MAX_INDEXED_COMPLETIONS)
    """Largest size an elastic instance can grow to (hostlist length; changing it replaces the Job).
    Default: size. Refused with a one-shot command (submit, batch), which runs once at its size."""
    min_size: int | None = Field(None, ge=1, le=MAX_INDEXED_COMPLETIONS)
    """Smallest size it can shrink to, and the brokers that must be online before rank 0 runs the command
    (broker.quorum). Default: shrinking goes down to 1, and the quorum is the size."""
    shrink_policy: Literal["wait", "cancel"] = "wait"
    """When an elastic cluster shrinks, the ranks that go are drained first; wait: jobs running on them
    may finish (up to shrinkTimeout, else `pulumi up` stops and nothing shrinks); cancel: they are
    cancelled at once."""
    shrink_timeout: Seconds = 600
    """Seconds a shrink waits for the jobs on the ranks that go (shrinkPolicy wait), or for them to end
    once cancelled."""
    tasks: int = Field(1, ge=1)
    """Tasks for `flux submit -n` (the command's process count)."""
    gpus: int | None = Field(None, ge=0)
    """GPUs per broker. Flux's resource set (R) then lists GPUs 0..gpus-1 on every node, the ones the
    device plugin gave the pod, whatever hwloc sees in the container; the Flux container asks for them
    (gpuResource in its limits). Default: the count the Flux container's resources.limits give for a
    GPU resource (gpuResource, or a name ending in /gpu), else none."""
    gpu_resource: ExtendedResourceName | None = None
    """The device plugin's name for the GPUs: nvidia.com/gpu, amd.com/gpu, gpu.intel.com/i915, ...
    Default: the name ending in /gpu in resources.limits, else nvidia.com/gpu."""
    gpus_per_task: int | None = Field(None, ge=1)
    """GPUs bound to each task of the command (`flux submit -g`); tasks times this must fit the
    cluster's GPUs (gpus per broker times size)."""
    mode: Mode = "submit"
    """submit: `flux submit --watch` the command; launcher: the command is flux start's initial program;
    batch: each command line is a `flux submit` inside one `flux batch`; interactive: like submit, then
    the instance stays up."""
    submit_flags: Arguments = Field(default_factory=list)
    """Extra arguments for `flux submit` / `flux batch`, one list item per argument."""
    batch_output: AbsolutePath | None = None
    """batch mode: a file in the pod (put it on a volume to outlive the pod) that keeps a copy of the
    jobs' output, which rank 0's log always shows."""
    flux_path: Executable = "flux"
    """The flux executable: a name on PATH or an absolute path."""
    service_name: Dns1035Label | None = None
    """Name of the headless Service (DNS-1035 label). Default: the MiniCluster name."""
    network_interface: NetworkInterface = "eth0"
    """Interface the brokers bind to (`*` for all)."""
    cluster_domain: ClusterDomain = "cluster.local"
    """The cluster's DNS domain, used in the brokers' connect URI."""
    port: Port = 8050
    """TCP port of the Flux overlay network."""
    log_level: int = Field(6, ge=0, le=7)
    """Broker stderr log level (0 emergencies only … 7 debug)."""
    connect_timeout: FluxDuration = "5s"
    """tbon.connect_timeout: how long one connect try to the parent broker may take."""
    topology: TbonTopology | None = None
    """tbon.topo: overlay tree shape, e.g. `kary:16` or `binomial`. Default: Flux's own."""
    worker_retries: int = Field(10, ge=1, le=1000)
    """How many times a worker broker is started before its pod fails. One that had joined and then lost
    rank 0 gets the tries again, and is not given up on for 5 minutes, however many tries that takes."""
    backoff_limit: int = Field(0, ge=0, le=1000)
    """Job backoffLimit: pod failures tolerated before the Job fails (0: the first failure fails it)."""
    success_policy: SuccessPolicy = "all"
    """all: the Job succeeds when every pod exits 0 (workers do once rank 0 shuts down; any cluster);
    rank0: successPolicy ends the Job as soon as rank 0 succeeds (Kubernetes >= 1.31)."""
    job_timeout: Seconds = 3600
    """Seconds `pulumi up` waits for the Job to complete (with a command) or its pods to run."""
    keygen: Keygen = "pod"
    """How the CURVE certificate is made: pod runs `flux keygen` in the cluster; local uses pyzmq."""
    keygen_image: Image | None = None
    """Image for the keygen pod. Default: image."""
    keygen_timeout: Seconds = 300
    """Seconds the keygen pod may take, image pull included."""
    schedule_timeout: Seconds = 180
    """Seconds a pod (the keygen pod, or the Job's) may stay unschedulable, or a Job's pod unable to
    start (an image the kubelet cannot pull), before `pulumi up` stops with the reason, instead of
    waiting out keygenTimeout or jobTimeout."""
    certificate_rotation: int = Field(0, ge=0)
    """Change this number to make a new keypair (the Job is then replaced)."""
    rerun: int = Field(0, ge=0)
    """Change this number to run the Job again as it is: a new Job, whose command runs from the start
    (after a failure, say). A persistent instance starts anew (a stateVolume keeps its queue)."""
    curve_certificate: CurveCertificate | None = None
    """Your own zcert certificate text, set with `pulumi config set --secret` (in plain text it is
    refused): no keygen at all."""
    hooks: Hooks = Field(default_factory=Hooks)
    """Shell snippets run by the entrypoint: init, pre, post; what they export reaches the broker and command."""
    logging: Logging = Field(default_factory=Logging)
    """Entrypoint logging: quiet, strict, debug, timed."""
    containers: list[Sidecar] = Field(default_factory=list)
    """Containers that run alongside the Flux container in every pod: native sidecars, started first and
    stopped (SIGTERM) when the Flux container exits; one that ignores SIGTERM holds the pod's end until
    its grace period (30 s) is over."""
    volumes: Volumes = Field(default_factory=dict)
    """Volumes by name (DNS-1123 label), mounted into the Flux container: PVCs, hostPath, ConfigMap,
    Secret or emptyDir."""
    pod: Pod = Field(default_factory=Pod)
    """Pod settings: labels, annotations, scheduling, service account, restart and DNS policy."""
    deadline_seconds: int | None = Field(None, ge=1)
    """Job activeDeadlineSeconds: the whole Job fails after this long."""
    job_labels: Labels = Field(default_factory=dict)
    """Labels on the Job itself, e.g. kueue.x-k8s.io/queue-name for Kueue."""
    suspend: bool = False
    """Create the Job suspended (a queue such as Kueue resumes it; Pulumi then leaves spec.suspend alone)."""
    queue_policy: QueuePolicy | None = None
    """Fluxion's queue policy (sched-fluxion-qmanager queue-policy). Default: Flux's (fcfs)."""
    broker_attributes: BrokerAttributes = Field(default_factory=dict)
    """Extra broker attributes, each passed as -Skey=value. A broker.rc1_path or broker.rc3_path runs
    instead of the workers' own rc (worker_rc.sh), without what it adds to Flux's (docs/lost-pods.md)."""
    broker_config: BrokerToml | None = None
    """A complete broker.toml used instead of the generated one (flux-operator-settings.md says what it must keep).
    With a [modules] or [systemd] table the workers run Flux's own rc1 and rc3, inside worker_rc.sh."""
    option_flags: ShellWords | None = None
    """Flux option flags in one string, e.g. "-ompi=openmpi@5", or a YAML list of its words; added to
    submit (and the RESTful API)."""
    flux_view: FluxView = Field(default_factory=FluxView)
    """Flux from an init container, for application images without Flux."""
    restful_api: RestfulApi = Field(default_factory=RestfulApi)
    """The Flux RESTful API server on rank 0 of a persistent cluster."""
    metrics: Metrics = Field(default_factory=Metrics)
    """Prometheus metrics from every broker pod: Flux's own view of the instance on rank 0."""
    autoscale: Autoscale = Field(default_factory=Autoscale)
    """Rank 0 resizes an elastic cluster to its queue, between minSize and maxSize (docs/resizing.md)."""
    admission: Literal["refuse", "warn", "off"] = "warn"
    """Before anything is created, send every object and pod to the API server as a dry run (one it
    refuses, or a name another stack holds, stops `pulumi up`), then check that the pods fit the cluster
    as it is (nodes, their free room, quotas): refuse stops `pulumi up` with what does not fit; warn says
    so and goes ahead (a cluster autoscaler may add room); off sends nothing to the cluster and reads
    nothing, the dry run and the names included. With Kueue (jobLabels queue name and suspend) Kueue
    decides whether it fits; the dry run still runs (docs/admission.md)."""
    scheduler: Scheduler | None = None
    """Gang scheduling (scheduler.gang: coscheduling or volcano): every broker placed at once, or none, so
    that two MiniClusters on a busy cluster never each hold part of their pods and wait for each other."""
    security_profile: Literal["none", "restricted"] = "none"
    """restricted: every pod the program creates satisfies Kubernetes' restricted Pod Security Standard
    (non-root user, no privilege escalation, every capability dropped, the runtime's seccomp profile),
    so it runs in namespaces that enforce it. hostPath volumes are refused then. none: the pods run as
    the image says."""
    shared_memory: SharedMemorySize = DEFAULT_SHARED_MEMORY
    """The size of the memory-backed /dev/shm of every broker pod (a tmpfs; what it holds counts against
    the pod's memory). MPI and many HPC codes fail or crawl on a container's default 64 MiB. Kubernetes
    caps it at the pod's memory limit; the admission check counts it as memory each pod needs at least.
    none: the container runtime's own /dev/shm (as does a volume of yours at /dev/shm)."""
    state_volume: StateVolume | None = None
    """A persistent cluster's state, kept by rank 0 on a volume: a replaced rank 0 (eviction, drain)
    restarts the same instance, with its queue and job history."""
    keeper: Keeper = Field(default_factory=Keeper)
    """Replace a pod lost to an eviction, a preemption or a drain at once (docs/lost-pods.md)."""
    secret_keys: frozenset[str] = Field(default=frozenset(), exclude=True)
    """Not a config key: which config keys the stack marks secret (`pulumi config set --secret`), as
    load_spec found them. Their values reach the pods only through a Kubernetes Secret."""

    # -- derived values (the one place each is computed) ------------------------------------------

    def is_secret(self, key: str) -> bool:
        """Whether the stack marks this config key (as users write it: `environment`) secret."""
        return key in self.secret_keys

    @property
    def shared_memory_size(self) -> str | None:
        """The size of the /dev/shm the MiniCluster mounts itself: none with sharedMemory null, or where a
        volume of the user's is mounted there and sharedMemory is left at its default (theirs is used)."""
        own = any(volume.path.rstrip("/") == paths.SHARED_MEMORY_DIR for volume in self.volumes.values())
        return None if own and "shared_memory" not in self.model_fields_set else self.shared_memory

    @property
    def largest_size(self) -> int:
        return self.max_size or self.size

    @property
    def smallest_size(self) -> int:
        return sizing.smallest_size(self.min_size)

    @property
    def service(self) -> str:
        return self.service_name or self.name

    @property
    def api_service(self) -> str:
        return f"{self.name}-api"

    def host(self, rank: int) -> str:
        return f"{self.name}-{rank}"

    @property
    def rank0_host(self) -> str:
        return self.host(0)

    @property
    def quorum(self) -> int | None:
        return sizing.quorum(self.size, self.min_size, self.largest_size)

    @property
    def persistent(self) -> bool:
        """The instance outlives any command: pods run until `flux shutdown` or `pulumi destroy`."""
        return self.command is None or self.mode == "interactive"

    @property
    def elastic(self) -> bool:
        """Its size changes in place: the instance outlives the command, or the command is the launcher
        that submits into it. One-shot commands (submit, batch) start a new run at a new size."""
        return self.persistent or self.mode == "launcher"

    @property
    def gpu_resource_name(self) -> str:
        if self.gpu_resource is not None:
            return self.gpu_resource
        return next(iter(rules.gpu_names(self.resources.limits)), DEFAULT_GPU_RESOURCE)

    @property
    def broker_gpus(self) -> int:
        """GPUs per broker: `gpus`, or what the Flux container's limits give for gpuResource."""
        if self.gpus is not None:
            return self.gpus
        limit = self.resources.limits.get(self.gpu_resource_name)
        return 0 if limit is None else int(rules.quantity(limit))

    @property
    def restricted(self) -> bool:
        return self.security_profile == "restricted"

    @property
    def all_submit_flags(self) -> list[str]:
        per_task = [f"-g{self.gpus_per_task}"] if self.gpus_per_task else []
        return [*per_task, *self.submit_flags, *rules.shell_words(self.option_flags or "")]

    @property
    def command_args(self) -> list[str]:
        return rules.shell_words(self.command) if self.command else []

    @property
    def command_lines(self) -> list[str]:
        """For batch mode: the commands, a line each as a shell reads them (rules.shell_lines)."""
        return rules.shell_lines(self.command or "")
