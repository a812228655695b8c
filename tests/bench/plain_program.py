"""The plainest Pulumi program for a MiniCluster: render.py's objects (objects.yaml, beside it), declared
as they are, with no keygen pod, no admission check and no resource of the project's own. The engines
benchmark runs it as Pulumi's own floor for the objects `kubectl apply` sends (tests/bench/engines.py):
what any Pulumi program pays on top of kubectl for them."""

import pulumi_kubernetes as kubernetes

kubernetes.yaml.v2.ConfigGroup("objects", files=["objects.yaml"])
