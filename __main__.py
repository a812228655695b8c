"""Pulumi entry point: read the stack config, declare one MiniCluster, export its outputs."""

from flux_minicluster.lifelong import lifelong

with lifelong():  # all the program imports and declares lives until its process ends
    import pulumi

    from flux_minicluster.resources.minicluster import MiniCluster, MiniClusterArgs
    from flux_minicluster.resources.program import checked_spec, stack_access, stack_config, stack_secret_keys

    # Validated, and asked of the cluster, before any resource is declared: a refusal creates nothing.
    access = stack_access()  # the cluster the Kubernetes provider is given
    spec = checked_spec(stack_config(), pulumi.get_stack(), stack_secret_keys(), access)
    cluster = MiniCluster(spec.name, MiniClusterArgs(spec=spec, access=access))
    for key, value in cluster.outputs().items():
        if value is not None:
            pulumi.export(key, value)
