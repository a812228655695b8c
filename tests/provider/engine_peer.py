"""The component package's plugin driven as the engine drives it: started as the engine starts it
(package/bin/pulumi-resource-minicluster with the engine's address, its port read from its stdout),
asked to Construct over gRPC with inputs encoded as another language's SDK sends them, and answered by
a resource monitor and an engine that speak the real protocol: the monitor records each registration
and answers as the project's mocks do (tests/harness.py), the engine records the log."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any

import grpc
from google.protobuf import empty_pb2
from pulumi.runtime.mocks import MockMonitor
from pulumi.runtime.proto import (
    engine_pb2,
    engine_pb2_grpc,
    provider_pb2,
    provider_pb2_grpc,
    resource_pb2,
    resource_pb2_grpc,
)

from flux_minicluster.config.outputs import COMPONENT
from flux_minicluster.config.project import NAMESPACE
from tests.harness import PROJECT, ROOT, Deployment, MiniClusterMocks, RecordingMonitor
from tests.provider_plugin import decode, encode

PLUGIN = ROOT / "package" / "bin" / "pulumi-resource-minicluster"
STACK = "dev"
CHECK_TIME = 0.2
"""How long the engine takes to answer a registration of a Kubernetes object here: as long as the first
ones wait for the Kubernetes plugin to start, so that registrations are in flight together, as there."""
STACK_URN = f"urn:pulumi:{STACK}::{PROJECT}::pulumi:pulumi:Stack::{PROJECT}-{STACK}"


class Monitor(resource_pb2_grpc.ResourceMonitorServicer):
    """The mocks' monitor, over gRPC (output values off, as the mock monitor has them)."""

    def __init__(self, deployment: Deployment) -> None:
        self.recording = RecordingMonitor(MiniClusterMocks(deployment, stack=STACK))
        self.outputs: dict[str, dict[str, Any]] = {}
        self.plugin: provider_pb2_grpc.ResourceProviderStub | None = None
        """As the engine does, a registration of the package's own type waits for the plugin's Check."""
        self.one_at_a_time = threading.Lock()

    def SupportsFeature(self, request: Any, context: Any) -> Any:
        answer = self.recording.SupportsFeature(request)  # type: ignore[no-untyped-call]
        return resource_pb2.SupportsFeatureResponse(hasSupport=answer.hasSupport)

    def GetDeploymentInfo(self, request: Any, context: Any) -> Any:
        return self.recording.GetDeploymentInfo(request)  # type: ignore[no-untyped-call]

    def RegisterResource(self, request: Any, context: Any) -> Any:
        with self.one_at_a_time:  # the engine's deployment executor handles one registration at a time
            if request.custom and request.type.startswith("kubernetes:"):
                time.sleep(CHECK_TIME)  # the engine asks the Kubernetes plugin, another process, to check it
            if request.custom and request.type.startswith(f"{NAMESPACE}:") and self.plugin is not None:
                urn = self.recording.make_urn(request.parent, request.type, request.name)
                checked = self.plugin.Check(provider_pb2.CheckRequest(urn=urn, news=request.object), timeout=30)
                assert not checked.failures, checked.failures
            return self.recording.RegisterResource(request)

    def RegisterResourceOutputs(self, request: Any, context: Any) -> Any:
        self.outputs[request.urn] = decode(request.outputs)
        return empty_pb2.Empty()

    def Invoke(self, request: Any, context: Any) -> Any:
        """The engine's own functions (`pulumi:pulumi:getResource`: a registered resource's state)."""
        return self.recording.Invoke(request)  # type: ignore[no-untyped-call]

    def provider(self, package: str, name: str, settings: dict[str, Any]) -> str:
        """A provider the program registered, as a reference the engine hands Construct: `URN::ID`. Its
        state is its settings as given, unknown values included: the engine keeps them so in a preview
        (the mock monitor, outside a preview of its own, would drop them)."""
        asyncio.set_event_loop(asyncio.new_event_loop())  # the mock monitor's, closed after the test
        registered = self.recording.RegisterResource(
            resource_pb2.RegisterResourceRequest(
                type=f"pulumi:providers:{package}", name=name, parent=STACK_URN, custom=True, object=encode(settings)
            )
        )
        self.recording.resources[registered.urn] = MockMonitor.ResourceRegistration(
            registered.urn, registered.id, settings
        )
        return f"{registered.urn}::{registered.id}"


class Engine(engine_pb2_grpc.EngineServicer):
    def __init__(self) -> None:
        self.log: list[tuple[int, str]] = []

    def Log(self, request: Any, context: Any) -> Any:
        self.log.append((request.severity, request.message))
        return empty_pb2.Empty()

    def GetRootResource(self, request: Any, context: Any) -> Any:
        return engine_pb2.GetRootResourceResponse(urn=STACK_URN)

    def SetRootResource(self, request: Any, context: Any) -> Any:
        return engine_pb2.SetRootResourceResponse()


@dataclass
class Constructed:
    """What one Construct left: every registration (the monitor's record), the answer or the error."""

    deployment: Deployment
    log: list[tuple[int, str]]
    state: dict[str, Any] = field(default_factory=dict)
    urn: str = ""
    error: str | None = None

    def warnings(self) -> list[str]:
        return [message for severity, message in self.log if severity >= engine_pb2.INFO]


def construct(
    inputs: dict[str, Any], name: str = "dev", preview: bool = False, kubernetes: dict[str, Any] | None = None
) -> Constructed:
    """One Construct of a MiniCluster `name` from `inputs` (already as the wire carries them: see
    tests/provider_plugin.py's encode and secret), by a freshly started plugin. `kubernetes`: the
    settings of a Kubernetes provider the program gives it (`providers`), registered first."""
    deployment, engine = Deployment(), Engine()
    monitor = Monitor(deployment)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    resource_pb2_grpc.add_ResourceMonitorServicer_to_server(monitor, server)
    engine_pb2_grpc.add_EngineServicer_to_server(engine, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    # No cluster: the plugin's admission check must not find the machine's kubeconfig.
    env = {**os.environ, "MINICLUSTER_PYTHON": sys.executable, "KUBECONFIG": os.devnull}
    plugin = subprocess.Popen(
        [str(PLUGIN), f"127.0.0.1:{port}"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    constructed = Constructed(deployment, engine.log)
    providers = {} if kubernetes is None else {"kubernetes": monitor.provider("kubernetes", "cluster", kubernetes)}
    try:
        assert plugin.stdout is not None
        channel = grpc.insecure_channel(f"127.0.0.1:{int(plugin.stdout.readline())}")
        monitor.plugin = provider_pb2_grpc.ResourceProviderStub(channel)
        request = provider_pb2.ConstructRequest(
            project=PROJECT, stack=STACK, monitorEndpoint=f"127.0.0.1:{port}", dryRun=preview, parallel=8,
            type=COMPONENT, name=name, parent=STACK_URN, inputs=encode(inputs), providers=providers,
        )  # fmt: skip
        try:
            response = provider_pb2_grpc.ResourceProviderStub(channel).Construct(request, timeout=60)
        except grpc.RpcError as error:
            constructed.error = str(error.details())
        else:
            constructed.urn, constructed.state = response.urn, decode(response.state)
        channel.close()
    finally:
        plugin.kill()
        plugin.communicate(timeout=10)
        server.stop(None)
    return constructed
