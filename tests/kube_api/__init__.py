"""A local Kubernetes API server stand-in, for the real `kubernetes` client to talk to over HTTP.

It speaks the API's JSON: objects, lists, `Status` error bodies with their codes, watch streams
(chunked JSON lines, ADDED then MODIFIED/DELETED, ended at `timeoutSeconds`), pod logs (with
`tailLines`, `follow` and `previous`), and exec over a websocket (the v4.channel.k8s.io protocol,
ending with its status channel). It decodes request bodies as strictly as the API server does: a
number with a fraction part, even `300.0`, is refused for an integer field, and so is an unknown
field. A "kubelet" script moves pods through their statuses, and faults make any request fail, hang
or be slow. Tests point a kubeconfig at it, so the client's own validation, encoding and
configuration all run.
"""

from __future__ import annotations

from tests.kube_api.cluster import (
    CREATED,
    Cluster,
    ExecHandler,
    Fault,
    Json,
    Step,
    decode_problem,
    finished,
    ready,
    running,
    unschedulable,
    waiting,
)
from tests.kube_api.server import StandIn, refused_url, write_kubeconfig

__all__ = [
    "CREATED",
    "Cluster",
    "ExecHandler",
    "Fault",
    "Json",
    "StandIn",
    "Step",
    "decode_problem",
    "finished",
    "ready",
    "refused_url",
    "running",
    "unschedulable",
    "waiting",
    "write_kubeconfig",
]
