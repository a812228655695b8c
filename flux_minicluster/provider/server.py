"""The component package's plugin: the gRPC server the engine starts (`python package/`). It constructs
`minicluster:index:MiniCluster` (the SDK's ProviderServicer) and serves the custom resources the
component declares when it is hosted here (the keygen, scale, scheduling and deletion resources, as
`minicluster:index:<name>`), with the same WireProviders a Python program runs as dynamic providers."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import Callable
from concurrent import futures
from typing import Any, TypeVar

import grpc
import pulumi
from google.protobuf import empty_pb2, struct_pb2
from pulumi.provider.server import ProviderServicer
from pulumi.runtime import rpc
from pulumi.runtime.proto import provider_pb2 as proto
from pulumi.runtime.proto import provider_pb2_grpc

from flux_minicluster.provider.component import MiniClusterProvider
from flux_minicluster.resources.deletion import JobDeletion
from flux_minicluster.resources.keygen import CurveCertificate, LocalCurveCertificate
from flux_minicluster.resources.scale import Scale
from flux_minicluster.resources.scheduling import SchedulingGuard
from flux_minicluster.resources.wire import WireProvider

SERVED = {
    kind.package_type: kind.PROVIDER
    for kind in (CurveCertificate, LocalCurveCertificate, Scale, SchedulingGuard, JobDeletion)
}
"""The custom resources of a hosted MiniCluster, by type token."""

Result = TypeVar("Result")


class PackageServicer(ProviderServicer):
    """Construct from the SDK; the CRUD of SERVED here. A provider method may wait minutes (a resize, the
    keygen pod): it runs in a thread, so the server keeps answering the engine meanwhile."""

    async def Construct(self, request: proto.ConstructRequest, context: Any) -> proto.ConstructResponse:
        """A refusal (RunError: the config's problems, by key) reads as its own words, as the stack
        program's does, not as an exception of the server's."""
        try:
            return await super().Construct(request, context)
        except pulumi.RunError as error:
            await context.abort(grpc.StatusCode.UNKNOWN, str(error))
            raise

    async def CheckConfig(self, request: proto.CheckRequest, context: Any) -> proto.CheckResponse:
        return proto.CheckResponse(inputs=request.news)

    async def DiffConfig(self, request: proto.DiffRequest, context: Any) -> proto.DiffResponse:
        return proto.DiffResponse(changes=proto.DiffResponse.DIFF_NONE)

    async def Check(self, request: proto.CheckRequest, context: Any) -> proto.CheckResponse:
        olds, news = _decoded(request.olds, unknowns=True), _decoded(request.news, unknowns=True)
        result = await _run(context, _provider(request.urn).check, olds, news)
        failures = [proto.CheckFailure(property=failure.property, reason=failure.reason) for failure in result.failures]
        return proto.CheckResponse(inputs=await _encoded(result.inputs), failures=failures)

    async def Diff(self, request: proto.DiffRequest, context: Any) -> proto.DiffResponse:
        olds, news = _decoded(request.olds, unknowns=True), _decoded(request.news, unknowns=True)
        result = await _run(context, _provider(request.urn).diff, request.id, olds, news)
        some, none, unknown = (
            proto.DiffResponse.DIFF_SOME,
            proto.DiffResponse.DIFF_NONE,
            proto.DiffResponse.DIFF_UNKNOWN,
        )
        changes = unknown if result.changes is None else some if result.changes else none
        return proto.DiffResponse(
            changes=changes, replaces=result.replaces or [],
            deleteBeforeReplace=bool(result.delete_before_replace),
        )  # fmt: skip

    async def Create(self, request: proto.CreateRequest, context: Any) -> proto.CreateResponse:
        result = await _run(context, _provider(request.urn).create, _decoded(request.properties))
        return proto.CreateResponse(id=result.id, properties=await _encoded(result.outs or {}))

    async def Read(self, request: proto.ReadRequest, context: Any) -> proto.ReadResponse:
        props = _decoded(request.properties) or _decoded(request.inputs)
        result = await _run(context, _provider(request.urn).read, request.id, props)
        inputs = await _encoded(result.inputs) if result.inputs is not None else None
        return proto.ReadResponse(
            id=result.id or request.id, properties=await _encoded(result.outs or {}), inputs=inputs
        )

    async def Update(self, request: proto.UpdateRequest, context: Any) -> proto.UpdateResponse:
        olds, news = _decoded(request.olds), _decoded(request.news)
        result = await _run(context, _provider(request.urn).update, request.id, olds, news)
        return proto.UpdateResponse(properties=await _encoded(result.outs or {}))

    async def Delete(self, request: proto.DeleteRequest, context: Any) -> empty_pb2.Empty:
        await _run(context, _provider(request.urn).delete, request.id, _decoded(request.properties))
        return empty_pb2.Empty()


def _provider(urn: str) -> WireProvider:
    """The provider of a URN's type (urn:pulumi:stack::project::parent$type::name)."""
    resource_type = urn.split("::")[2].split("$")[-1]
    if resource_type not in SERVED:
        raise ValueError(f"unknown resource type {resource_type}: this package serves {', '.join(SERVED)}")
    return SERVED[resource_type]()


_PROVIDER_THREADS = futures.ThreadPoolExecutor(max_workers=16, thread_name_prefix="package-provider")
"""Not the event loop's default pool: a Construct's registrations wait in that one until the engine
has checked each of them, with this plugin's Check among others; a Check queued behind them there
would never run (seven registrations were enough on two cores)."""


async def _run(context: Any, method: Callable[..., Result], *args: Any) -> Result:
    """The provider's own message, as a dynamic provider's failure reads, without a traceback."""
    try:
        return await asyncio.get_running_loop().run_in_executor(_PROVIDER_THREADS, method, *args)
    except Exception as error:
        await context.abort(grpc.StatusCode.UNKNOWN, str(error))
        raise


def _decoded(properties: struct_pb2.Struct, unknowns: bool = False) -> dict[str, Any]:
    decoded: dict[str, Any] = rpc.deserialize_properties(properties, keep_unknowns=unknowns)
    return decoded


async def _encoded(properties: dict[str, Any]) -> struct_pb2.Struct:
    encoded: struct_pb2.Struct = await rpc.serialize_properties(properties, {})
    return encoded


def main() -> None:
    """Started by the engine with its address; prints the port it serves, as every plugin does."""
    parser = argparse.ArgumentParser(description="The MiniCluster component package's plugin (gRPC server)")
    parser.add_argument("engine", help="the Pulumi engine's address")
    engine, _ = parser.parse_known_args()

    async def serve() -> None:
        server = grpc.aio.server()
        servicer = PackageServicer(MiniClusterProvider(), sys.argv[1:], engine_address=engine.engine)
        provider_pb2_grpc.add_ResourceProviderServicer_to_server(servicer, server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        sys.stdout.write(f"{port}\n")
        sys.stdout.flush()
        await server.wait_for_termination()

    with contextlib.suppress(KeyboardInterrupt):  # the engine stops its plugins so
        asyncio.run(serve())
