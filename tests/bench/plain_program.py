"""The plainest Pulumi program for a MiniCluster: render.py's objects (objects.yaml, beside it), each
declared as it is, all at once (as `kubectl apply` sends them), with no admission check and no resource
of the project's own. The engines benchmark runs it as Pulumi's own floor for the objects `kubectl
apply` sends (tests/bench/engines.py): what any Pulumi program pays on top of kubectl for them.

With keygen-pod.json beside it (the keygen pod's manifest, its timeout and the Secret's key), it is
also the floor of any program whose certificate comes from a keygen pod, as the design has it. The pod
runs from the program's first line, before the Pulumi SDK's import, in a thread, through the same
client code as the certificate's provider (cluster/keygen_pod.py), while every other object is
declared; only the Secret waits for the certificate, and the Job for the Secret. No program can start
the pod sooner or wait for it less. (It makes a new keypair at every run: a floor, not a program to
keep a stack with.)

Each object is a KubernetesObject (the provider's type for its kind, its manifest as inputs), as the
project's program declares its own, not a `kubernetes.yaml.v2.ConfigGroup`: that component's outputs
reference each object it made, and the SDK takes 0.2 s after the Job completes to make them into its
typed classes. Its imports are kept out of the garbage collector's passes as the project's program
keeps its own (flux_minicluster/lifelong.py): without that, the interpreter's exit adds 0.2 s more."""

from flux_minicluster.lifelong import lifelong

with lifelong():
    import json
    from concurrent.futures import Future, ThreadPoolExecutor
    from pathlib import Path
    from typing import Any

    KEYGEN = Path("keygen-pod.json")

    def certificate_text(keygen: dict[str, Any]) -> str:
        from flux_minicluster.cluster import kube
        from flux_minicluster.cluster.keygen_pod import run_keygen_pod

        return run_keygen_pod(kube.api_client(None), keygen["pod"], keygen["timeout"]).text()

    # Before the Pulumi SDK's import: the pod starts on the node meanwhile.
    keygen = json.loads(KEYGEN.read_text()) if KEYGEN.exists() else None
    running: Future[str] | None = ThreadPoolExecutor(1).submit(certificate_text, keygen) if keygen else None

    import asyncio

    import pulumi
    import yaml

    from flux_minicluster.resources.kube_object import KubernetesObject

    certificate: pulumi.Output[str] | None = None
    if running is not None:
        certificate = pulumi.Output.from_input(asyncio.wrap_future(running, loop=asyncio.get_event_loop()))

    def declared(manifest: dict[str, Any], opts: pulumi.ResourceOptions | None = None) -> KubernetesObject:
        return KubernetesObject(f"{manifest['metadata']['name']}-{manifest['kind'].lower()}", manifest, opts)

    manifests = list(yaml.safe_load_all(Path("objects.yaml").read_text()))
    secrets = []
    for manifest in (manifest for manifest in manifests if manifest["kind"] == "Secret"):
        if keygen is not None and keygen["secretKey"] in manifest.get("stringData", {}):
            manifest = {**manifest, "stringData": {**manifest["stringData"], keygen["secretKey"]: certificate}}
        secrets.append(declared(manifest))
    after_secrets = pulumi.ResourceOptions(depends_on=secrets) if certificate is not None else None
    for manifest in (manifest for manifest in manifests if manifest["kind"] != "Secret"):
        declared(manifest, after_secrets if manifest["kind"] == "Job" else None)
