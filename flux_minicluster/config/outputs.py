"""The MiniCluster component's contract with every program: its type token, and its outputs (what the
stack program exports, what the component registers and what the component package's schema lists:
key, type, meaning). Pure."""

from __future__ import annotations

from typing import Literal, NamedTuple

from flux_minicluster.config.project import NAMESPACE

COMPONENT = f"{NAMESPACE}:index:MiniCluster"
"""The component's type token, in a Python program and in the package's schema alike."""


class ComponentOutput(NamedTuple):
    key: str
    kind: Literal["string", "integer"]
    description: str
    always: bool = True
    """False: only some clusters have it (apiServiceName: the RESTful API's Service)."""


OUTPUTS = (
    ComponentOutput("name", "string", "The MiniCluster's name: its pods are <name>-<rank>."),
    ComponentOutput("namespace", "string", "The namespace of every object."),
    ComponentOutput("size", "integer", "Brokers asked for (an autoscaled cluster may run another size)."),
    ComponentOutput("serviceName", "string", "The headless Service that gives each pod its DNS name."),
    ComponentOutput("jobName", "string", "The Indexed Job of the brokers' pods."),
    ComponentOutput("rank0Hostname", "string", "Rank 0's hostname, where the command runs."),
    ComponentOutput("publicKey", "string", "The CURVE certificate's public key (its secret key stays in a Secret)."),
    ComponentOutput("logsCommand", "string", "A kubectl command that follows rank 0's log."),
    ComponentOutput("apiServiceName", "string", "The RESTful API's Service (restfulApi.enabled).", always=False),
)
