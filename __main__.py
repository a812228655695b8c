"""Pulumi entry point: read the stack config, declare one MiniCluster, export its outputs."""

from flux_minicluster.lifelong import lifelong

with lifelong():  # all the program imports and declares lives until its process ends
    import pulumi

    from flux_minicluster.resources.minicluster import MiniCluster, MiniClusterArgs
    from flux_minicluster.resources.program import checked_spec, stack_config, stack_secret_keys

    # Validated, and asked of the cluster, before any resource is declared: a refusal creates nothing.
    kube_context = pulumi.Config("kubernetes").get("context")
    spec = checked_spec(stack_config(), pulumi.get_stack(), stack_secret_keys(), kube_context)
    cluster = MiniCluster(spec.name, MiniClusterArgs(spec=spec, kube_context=kube_context))
    for key, value in cluster.outputs().items():
        if value is not None:
            pulumi.export(key, value)
