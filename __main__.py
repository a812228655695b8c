"""Pulumi entry point: read the stack config, declare one MiniCluster, export its outputs."""

import pulumi

from flux_minicluster.builders import object_limits
from flux_minicluster.cluster import admission
from flux_minicluster.config.loader import ConfigError, load_spec
from flux_minicluster.resources.minicluster import MiniCluster, MiniClusterArgs, stack_config, stack_secret_keys

try:
    spec = load_spec(stack_config(), pulumi.get_stack(), stack_secret_keys())
    object_limits.check(spec)
except ConfigError as error:
    # Validated before any resource is declared: a bad config creates nothing.
    raise pulumi.RunError(str(error)) from None

kube_context = pulumi.Config("kubernetes").get("context")
verdict = admission.check(spec, kube_context)  # before any resource too: a refusal creates nothing
for warning in verdict.warnings:
    pulumi.log.warn(warning)
if verdict.refused:
    raise pulumi.RunError(verdict.refused)

cluster = MiniCluster(spec.name, MiniClusterArgs(spec=spec, kube_context=kube_context))

pulumi.export("name", cluster.cluster_name)
pulumi.export("namespace", cluster.namespace)
pulumi.export("size", cluster.size)
pulumi.export("serviceName", cluster.service_name)
pulumi.export("jobName", cluster.job_name)
pulumi.export("rank0Hostname", cluster.rank0_hostname)
pulumi.export("publicKey", cluster.public_key)
pulumi.export("logsCommand", cluster.logs_command)
if cluster.api_service_name is not None:
    pulumi.export("apiServiceName", cluster.api_service_name)
