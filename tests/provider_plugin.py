"""Drive a dynamic provider the way the Pulumi engine does: `python -m pulumi.dynamic` in the project
directory, spoken to over gRPC, with properties encoded as the engine encodes them.

The engine sends every property as a `google.protobuf.Struct`, so every number is a double
(`300` arrives as `300.0`), `None` values are not sent, secrets are maps carrying Pulumi's secret
signature, and during a preview unknown values are a sentinel string. `__provider` is made with the
SDK's own serializer, exactly as the program makes it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import json_format, struct_pb2
from pulumi.dynamic.dynamic import serialize_provider
from pulumi.runtime import rpc
from pulumi.runtime.proto import provider_pb2, provider_pb2_grpc

ROOT = Path(__file__).resolve().parent.parent
UNKNOWN = rpc.UNKNOWN
DIFF_NONE = provider_pb2.DiffResponse.DIFF_NONE
DIFF_SOME = provider_pb2.DiffResponse.DIFF_SOME


def secret(value: Any) -> dict[str, Any]:
    """A secret as it travels on the wire."""
    return {rpc._special_sig_key: rpc._special_secret_sig, "value": value}


def is_secret(value: Any) -> bool:
    return isinstance(value, dict) and value.get(rpc._special_sig_key) == rpc._special_secret_sig


def encode(properties: dict[str, Any]) -> struct_pb2.Struct:
    """Properties as the engine sends them: None values left out, numbers as doubles."""
    wire = struct_pb2.Struct()
    wire.update({key: value for key, value in properties.items() if value is not None})
    return wire


def decode(wire: struct_pb2.Struct) -> dict[str, Any]:
    """What came back, as the engine reads it: numbers as floats, secrets still in their wrapper."""
    decoded: dict[str, Any] = json_format.MessageToDict(wire)
    return decoded


class ProviderPlugin:
    """One provider process, as the engine starts it for a program's dynamic resources."""

    def __init__(self, provider: Any, resource_type: str, env: dict[str, str]) -> None:
        self.provider = serialize_provider(provider)
        self.urn = f"urn:pulumi:dev::minicluster::{resource_type}::dev-curve-certificate"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "pulumi.dynamic"], cwd=ROOT, env={**os.environ, **env},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        assert self.process.stdout is not None
        port = int(self.process.stdout.readline())
        self.channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        self.stub = provider_pb2_grpc.ResourceProviderStub(self.channel)
        self.stub.Configure(provider_pb2.ConfigureRequest(args=encode({}), acceptSecrets=False, acceptResources=True))

    def with_provider(self, properties: dict[str, Any], provider: str | None = None) -> dict[str, Any]:
        return {**properties, "__provider": provider or self.provider}

    def check(self, news: dict[str, Any], olds: dict[str, Any] | None = None) -> Any:
        request = provider_pb2.CheckRequest(urn=self.urn, olds=encode(olds or {}), news=encode(news))
        return self.stub.Check(request)

    def create(self, properties: dict[str, Any], timeout: float = 30) -> tuple[str, dict[str, Any]]:
        request = provider_pb2.CreateRequest(urn=self.urn, properties=encode(properties), timeout=timeout)
        response = self.stub.Create(request, timeout=timeout + 10)
        return response.id, decode(response.properties)

    def diff(self, resource_id: str, olds: dict[str, Any], news: dict[str, Any]) -> Any:
        request = provider_pb2.DiffRequest(id=resource_id, urn=self.urn, olds=encode(olds), news=encode(news))
        return self.stub.Diff(request)

    def update(self, resource_id: str, olds: dict[str, Any], news: dict[str, Any]) -> dict[str, Any]:
        request = provider_pb2.UpdateRequest(id=resource_id, urn=self.urn, olds=encode(olds), news=encode(news))
        return decode(self.stub.Update(request).properties)

    def read(self, resource_id: str, properties: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        response = self.stub.Read(provider_pb2.ReadRequest(id=resource_id, urn=self.urn, properties=encode(properties)))
        return response.id, decode(response.properties)

    def delete(self, resource_id: str, properties: dict[str, Any]) -> None:
        self.stub.Delete(provider_pb2.DeleteRequest(id=resource_id, urn=self.urn, properties=encode(properties)))

    def close(self) -> str:
        """Stop the process; returns what it wrote to stderr."""
        self.channel.close()
        self.process.kill()
        _, stderr = self.process.communicate(timeout=10)
        return stderr.decode(errors="replace")


def served(provider: Any, resource_type: str, kubeconfig: Path) -> Iterator[ProviderPlugin]:
    """A module's provider process, talking to the cluster of `kubeconfig`, closed at the module's end."""
    process = ProviderPlugin(provider, resource_type, {"KUBECONFIG": str(kubeconfig)})
    yield process
    process.close()


def grpc_error(call: Any) -> str:
    """The details of a failed call (the provider's traceback, ending with its error)."""
    try:
        call()
    except grpc.RpcError as error:
        return str(error.details())
    raise AssertionError("the call succeeded")
