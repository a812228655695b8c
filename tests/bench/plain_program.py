"""The plainest Pulumi program for a MiniCluster: render.py's objects (objects.yaml, beside it), declared
as they are, with no keygen pod, no admission check and no resource of the project's own. The engines
benchmark runs it as Pulumi's own floor for the objects `kubectl apply` sends (tests/bench/engines.py):
what any Pulumi program pays on top of kubectl for them. Its imports are kept out of the garbage
collector's passes as the project's program keeps its own (flux_minicluster/lifelong.py), so that the
floor pays no teardown that ours does not: without it, the interpreter's exit adds about 0.2 s."""

from flux_minicluster.lifelong import lifelong

with lifelong():
    import pulumi_kubernetes as kubernetes

    kubernetes.yaml.v2.ConfigGroup("objects", files=["objects.yaml"])
