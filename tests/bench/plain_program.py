"""The plainest Pulumi program for a MiniCluster: render.py's objects (objects.yaml, beside it), each
declared as it is, all at once (as `kubectl apply` sends them), with no keygen pod, no admission check
and no resource of the project's own. The engines benchmark runs it as Pulumi's own floor for the
objects `kubectl apply` sends (tests/bench/engines.py): what any Pulumi program pays on top of kubectl
for them.

Each object is a KubernetesObject (the provider's type for its kind, its manifest as inputs), as the
project's program declares its own, not a `kubernetes.yaml.v2.ConfigGroup`: that component's outputs
reference each object it made, and the SDK takes 0.2 s after the Job completes to make them into its
typed classes. Its imports are kept out of the garbage collector's passes as the project's program
keeps its own (flux_minicluster/lifelong.py): without that, the interpreter's exit adds 0.2 s more."""

from flux_minicluster.lifelong import lifelong

with lifelong():
    from pathlib import Path

    import yaml

    from flux_minicluster.resources.kube_object import KubernetesObject

    for manifest in yaml.safe_load_all(Path("objects.yaml").read_text()):
        KubernetesObject(f"{manifest['metadata']['name']}-{manifest['kind'].lower()}", manifest)
