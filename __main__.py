"""Pulumi entry point: read the stack config, declare one MiniCluster, export its outputs."""

import gc

# What the program imports and declares lives until its process exits, so the cyclic garbage collector
# would only walk it: twice while the imports run and once more at the interpreter's exit, about 0.4 s
# of each `pulumi up` (docs/benchmarks.md). It is off while the program is declared; then what the
# program made is frozen out of its passes, and what the run makes later is collected as usual.
gc.disable()
try:
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
finally:
    gc.freeze()
    gc.enable()
