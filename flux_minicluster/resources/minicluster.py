"""The MiniCluster component: wires the pure builders' objects into Pulumi resources.

Graph: certificate -> Secret ─┐
       broker ConfigMap ──────┤
       entrypoint ConfigMap ──┤
       autoscaler's Role ─────┤   (autoscale: its ServiceAccount, Role and RoleBinding)
       PodGroup (a gang) ─────┼─> Indexed Job ──> Scale (elastic clusters: waits for the brokers, and
       scale ConfigMap ───────┤   (names passed   resizes the running Job when `size` changes)
       headless Service ──────┘   as Outputs)     and, beside the Job (after an elastic one), the
                                                  scheduling guard (stops it if its pods cannot
                                                  be scheduled in time);
                                                  keeper: its account and Deployment, after the
                                                  guard (the Job's pods all started)

On an elastic cluster, Pulumi ignores the Job's size fields and the scale ConfigMap's data after
creating them: the Scale resource owns them, so a resize is an update of the Scale, never a new Job.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import pulumi
from pulumi.runtime import settings

from flux_minicluster.builders import admission_policy, autoscaling, keeper, manifests, monitoring
from flux_minicluster.builders.names import INDEX_LABEL, labels
from flux_minicluster.cluster.kube import CURRENT_CONTEXT, Access
from flux_minicluster.config import lifecycle
from flux_minicluster.config.certificate import parse
from flux_minicluster.config.outputs import COMPONENT, OUTPUTS
from flux_minicluster.config.spec import MiniClusterSpec
from flux_minicluster.resources.deletion import JobDeletion, identity
from flux_minicluster.resources.keygen import CurveCertificate, LocalCurveCertificate
from flux_minicluster.resources.kube_object import KubernetesObject
from flux_minicluster.resources.scale import Scale
from flux_minicluster.resources.scheduling import SchedulingGuard, revision, with_revision
from flux_minicluster.resources.wire import cluster_inputs

# Immutable Job fields that the provider would otherwise try to patch in place (and fail).
JOB_IMMUTABLE_FIELDS = ["spec.completionMode", "spec.successPolicy", "spec.podFailurePolicy"]
# An elastic Job's size, which pulumi-kubernetes would otherwise replace the Job for: the Scale owns it.
JOB_SIZE_FIELDS = ["spec.parallelism", "spec.completions"]
ACCESS_KINDS = {
    "ServiceAccount": "service-account", "Role": "role", "RoleBinding": "role-binding",
    "ValidatingAdmissionPolicy": "admission-policy", "ValidatingAdmissionPolicyBinding": "admission-binding",
}  # fmt: skip
"""The API access objects' kinds: the resource name's suffix for each."""


@dataclass(frozen=True)
class MiniClusterArgs:
    spec: MiniClusterSpec
    """The validated stack config (see flux_minicluster.config.spec.MiniClusterSpec for every setting)."""
    access: Access = CURRENT_CONTEXT
    """The cluster the Kubernetes provider is given (its `context` and `kubeconfig`): the keygen pod,
    the scheduling guard, a resize and the Job's deletion talk to the same one."""
    packaged: bool = False
    """True when the component package's provider declares it for another language's program: its
    keygen, scale, scheduling and deletion resources are then the package's own types (wire.py)."""


class MiniCluster(pulumi.ComponentResource):
    """N pods, each running a Flux broker, joined into one Flux instance."""

    def __init__(self, name: str, args: MiniClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(COMPONENT, name, None, opts)
        spec = args.spec
        cert = self._curve_certificate(name, args)
        curve_secret = self._content(f"{name}-curve", manifests.curve_secret(spec, cert.certificate))
        config_secret_name = self._config_secret(name, spec)
        broker_config = self._content(f"{name}-broker-config", manifests.broker_config_map(spec))
        entrypoint = self._content(f"{name}-entrypoint", manifests.entrypoint_config_map(spec))
        scale_config = self._content(
            f"{name}-scale", manifests.scale_config_map(spec), ignore_changes=["data"] if spec.elastic else []
        )
        service = self._named(f"{name}-service", manifests.headless_service(spec))
        self._service_monitor(name, spec, service)
        api = self._named(f"{name}-api", manifests.restful_api_service(spec)) if spec.restful_api.enabled else None
        self.api_service_name: pulumi.Output[str] | None = api.name if api is not None else None
        pod_group_name = self._pod_group(name, spec)
        job_manifest = manifests.job(
            spec,
            service_name=service.name,
            curve_secret_name=curve_secret.name,
            broker_config_name=broker_config.name,
            entrypoint_name=entrypoint.name,
            scale_config_name=scale_config.name,
            config_secret_name=config_secret_name,
            pod_group_name=pod_group_name,
        )
        # A queue (e.g. Kueue) resumes a suspended Job by setting spec.suspend: Pulumi must not undo that.
        ignore = (["spec.suspend"] if spec.suspend else []) + (JOB_SIZE_FIELDS if spec.elastic else [])
        deleted_first = [self._job_deletion(name, args, job_manifest)]
        job_revision = revision(job_manifest)
        # replace_with: the engine deletes a dependent before a delete-before-replace resource only when
        # it is replaced with it; a dependsOn edge alone is not enough (the JobDeletion would wait for a
        # Job that nothing deletes).
        job = self._named(
            f"{name}-job", with_revision(job_manifest, job_revision), replace_on_changes=JOB_IMMUTABLE_FIELDS,
            ignore_changes=ignore, depends_on=deleted_first + self._api_access(name, spec, scale_config.name),
            replace_with=deleted_first,
        )  # fmt: skip
        # A queue holding the Job back is not a scheduling failure: a suspended Job has no guard.
        guard = None if spec.suspend else self._scheduling_guard(name, args, job_revision, job)
        if spec.elastic:
            self._scale(name, args, job, scale_config.name)
        self._keeper(name, spec, guard)

        self.cluster_name = pulumi.Output.from_input(spec.name)
        self.namespace = job.namespace
        self.size = pulumi.Output.from_input(spec.size)
        self.service_name = service.name
        self.job_name = job.name
        self.rank0_hostname = pulumi.Output.from_input(spec.rank0_host)
        self.public_key = cert.publicKey
        self.logs_command = pulumi.Output.concat(
            "kubectl logs -f -n ", job.namespace, " -c ", manifests.BROKER_CONTAINER,
            " -l job-name=", job.name, f",{INDEX_LABEL}=0",
        )  # fmt: skip
        self.register_outputs(self.outputs())

    def outputs(self) -> dict[str, pulumi.Output[Any] | None]:
        """By output key (config/outputs.py); None: this cluster has no such output."""
        values = {
            "name": self.cluster_name, "namespace": self.namespace, "size": self.size,
            "serviceName": self.service_name, "jobName": self.job_name, "rank0Hostname": self.rank0_hostname,
            "publicKey": self.public_key, "logsCommand": self.logs_command, "apiServiceName": self.api_service_name,
        }  # fmt: skip
        return {output.key: values[output.key] for output in OUTPUTS}

    def _config_secret(self, name: str, spec: MiniClusterSpec) -> pulumi.Output[str] | None:
        """The values of the stack's secret config keys, in a Secret, whose content Pulumi encrypts in its
        state and hides in previews (kube_object.SECRET_FIELDS). None when the stack marks nothing secret."""
        manifest = manifests.config_secret(spec)
        if manifest is None:
            return None
        return self._content(f"{name}-config-secret", manifest).name

    def _pod_group(self, name: str, spec: MiniClusterSpec) -> pulumi.Output[str] | None:
        """The gang's PodGroup, before the Job: its scheduler holds every pod until all of them fit. A
        resize updates its minMember in place (before the Scale grows or shrinks the Job)."""
        manifest = manifests.pod_group(spec)
        if manifest is None:
            return None
        # Named up front; taken through the resource, so that the Job follows it in the graph.
        return self._named(f"{name}-pod-group", manifest).name

    def _service_monitor(self, name: str, spec: MiniClusterSpec, service: pulumi.Resource) -> None:
        """The Prometheus Operator's ServiceMonitor (metrics.serviceMonitor), after the Service it selects."""
        manifest = monitoring.service_monitor(spec)
        if manifest is None:
            return
        KubernetesObject(f"{name}-service-monitor", manifest, pulumi.ResourceOptions(parent=self, depends_on=[service]))

    def _api_access(self, name: str, spec: MiniClusterSpec, scale_config: pulumi.Output[str]) -> list[pulumi.Resource]:
        """The autoscaler's ServiceAccount, Role and RoleBinding, and the bounds of its patches, before the
        Job whose pods use them; their rules name the scale ConfigMap as it was created."""
        found = [*autoscaling.objects(spec, scale_config), *admission_policy.objects(spec, scale_config)]
        return self._access(f"{name}-autoscaler", found)

    def _access(self, prefix: str, found: list[manifests.Manifest], **options: Any) -> list[pulumi.Resource]:
        """API access objects, each named <prefix>-<its kind>."""
        return [self._named(f"{prefix}-{ACCESS_KINDS[m['kind']]}", m, **options) for m in found]

    def _keeper(self, name: str, spec: MiniClusterSpec, guard: SchedulingGuard | None) -> None:
        """keeper.enabled: its scripts, account and Deployment. Not after the Job, whose await lasts as
        long as a one-shot command runs: the keeper would come when there is nothing left to keep. After
        the Job's guard instead (its pods all started): when they cannot start (say, an image the
        kubelet cannot pull, by default the keeper's too), the guard ends `pulumi up` with why, and no
        keeper's rollout holds it for its 10 minutes. A suspended Job has no guard: its keeper comes beside it."""
        scripts = keeper.scripts_config_map(spec)
        if scripts is None:
            return
        config_map = self._content(f"{name}-keeper-scripts", scripts)
        access = self._access(f"{name}-keeper", keeper.access(spec))
        after = [guard] if guard is not None else []
        self._named(f"{name}-keeper", keeper.deployment(spec, config_map.name), depends_on=[*after, *access])

    def _scheduling_guard(
        self, name: str, args: MiniClusterArgs, job_revision: pulumi.Output[str], job: pulumi.Resource
    ) -> SchedulingGuard:
        """Beside a Job that the provider awaits (a one-shot command's), not after it: it must act while
        that await goes on. It waits for what the Job waits for (the Secret, ConfigMaps and Service),
        through the Job's revision. After an elastic Job, which is not awaited, and after any Job when
        the engine runs one step at a time (`pulumi up --parallel 1`): there the engine could run the
        guard first, holding the Job back until the guard gave up on it, and nothing runs beside an
        await anyway."""
        spec = args.spec
        # The Job's URN as Pulumi forms it (parent, project, stack). From this component's URN alone: a
        # dependency on the component itself would be a cycle, since the guard is one of its children.
        own_urn: pulumi.Output[str] = pulumi.Output.from_input(self.urn.future())  # type: ignore[arg-type]
        job_urn = pulumi.create_urn(f"{name}-job", "kubernetes:batch/v1:Job", parent=own_urn)
        inputs = {
            "namespace": spec.namespace, "job": spec.name, "selector": labels(spec, "broker"), "size": spec.size,
            "scheduleTimeout": spec.schedule_timeout, "jobTimeout": spec.job_timeout, "jobUrn": job_urn,
            "revision": job_revision, "gang": spec.scheduler.gang if spec.scheduler else None,
            **cluster_inputs(args.access),
        }  # fmt: skip
        # It watches a new Job's first pods; growing an elastic Job is the Scale's to watch. (A replaced
        # Job starts at the size Pulumi keeps for it, the one kept here too.)
        ignore = ["size"] if spec.elastic else []
        after_job = spec.elastic or one_step_at_a_time()
        opts = pulumi.ResourceOptions(parent=self, ignore_changes=ignore, depends_on=[job] if after_job else None)
        return SchedulingGuard(f"{name}-scheduling", inputs, opts, packaged=args.packaged)

    def _job_deletion(self, name: str, args: MiniClusterArgs, job_manifest: manifests.Manifest) -> JobDeletion:
        """Before the Job, so that it is deleted after it: its delete waits for the Job's pods. A one-shot
        Job has one too: pulumi-kubernetes awaits a Job's deletion by the old Job's own annotations, so an
        elastic Job (skipAwait) replaced by a one-shot one was not awaited, and the new Job's create met
        the old one still there (a field conflict, on the real engines)."""
        spec = args.spec
        inputs = {
            "namespace": spec.namespace, "job": spec.name, "selector": labels(spec, "broker"),
            "identity": identity(job_manifest), "timeout": lifecycle.POD_GRACE + lifecycle.DELETION_MARGIN,
            **cluster_inputs(args.access),
        }  # fmt: skip
        opts = pulumi.ResourceOptions(parent=self, delete_before_replace=True)
        return JobDeletion(f"{name}-job-deletion", inputs, opts, packaged=args.packaged)

    def _scale(self, name: str, args: MiniClusterArgs, job: Any, scale_config: pulumi.Output[str]) -> Scale:
        """After the Job (its uid is an input: a replaced Job is resized too). With a suspended Job it
        waits for the queue to admit it, within jobTimeout."""
        spec = args.spec
        inputs = {
            "namespace": spec.namespace, "job": job.name, "jobUid": job.uid,
            "scaleConfig": scale_config, "selector": labels(spec, "broker"), "size": spec.size,
            "minSize": spec.min_size, "maxSize": spec.largest_size, "shrinkPolicy": spec.shrink_policy,
            "shrinkTimeout": spec.shrink_timeout, "jobTimeout": spec.job_timeout,
            "scheduleTimeout": spec.schedule_timeout, **cluster_inputs(args.access),
            **({"autoscale": True} if spec.autoscale.enabled else {}),  # absent: older stacks see no change
        }  # fmt: skip
        return Scale(f"{name}-size", inputs, pulumi.ResourceOptions(parent=self), packaged=args.packaged)

    def _curve_certificate(self, name: str, args: MiniClusterArgs) -> _Certificate:
        spec, opts = args.spec, pulumi.ResourceOptions(parent=self)
        if spec.curve_certificate is not None:
            return _ProvidedCertificate(spec)
        if spec.keygen == "local":
            return LocalCurveCertificate(f"{name}-curve-certificate", spec, opts, packaged=args.packaged)
        return CurveCertificate(f"{name}-curve-certificate", spec, args.access, opts, packaged=args.packaged)

    def _named(self, resource_name: str, manifest: manifests.Manifest, **options: Any) -> KubernetesObject:
        """The Job and the Service keep their names: hostnames and DNS records derive from them. A
        replacement must then delete first, or the create hits AlreadyExists."""
        opts = pulumi.ResourceOptions(parent=self, delete_before_replace=True, **options)
        return KubernetesObject(resource_name, manifest, opts)

    def _content(self, resource_name: str, manifest: manifests.Manifest, **options: Any) -> KubernetesObject:
        """Secrets and ConfigMaps (names.AUTO_NAMED_KINDS) are auto-named (<resource name>-<suffix>): a
        content change replaces the object under a new name, the new name flows into the Job's pod
        template, and so the Job is replaced too, instead of running brokers with a stale config or keypair."""
        metadata = {key: value for key, value in manifest["metadata"].items() if key != "name"}
        opts = pulumi.ResourceOptions(parent=self, **options)
        return KubernetesObject(resource_name, {**manifest, "metadata": metadata}, opts)


def one_step_at_a_time() -> bool:
    """Whether the engine runs one resource's step at a time (`--parallel 1`), as it tells the program."""
    return bool(settings.SETTINGS.parallel == 1)


class _Certificate(Protocol):
    certificate: pulumi.Output[str]
    publicKey: pulumi.Output[str]


class _ProvidedCertificate:
    """The user's own certificate (already validated by the spec): no resource at all."""

    def __init__(self, spec: MiniClusterSpec) -> None:
        assert spec.curve_certificate is not None
        provided = parse(spec.curve_certificate.get_secret_value())
        self.certificate: pulumi.Output[str] = pulumi.Output.secret(provided.text())
        self.publicKey: pulumi.Output[str] = pulumi.Output.from_input(provided.public_key)
