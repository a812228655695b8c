"""Run the real Pulumi program (`__main__.py`) on Pulumi mocks and collect what it registered.

Every call starts from a clean runtime: a new event loop, a new root stack, the given config only.
"""

from __future__ import annotations

import asyncio
import gc
import runpy
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
import yaml
from pulumi.runtime import mocks, settings

from flux_minicluster.config import certificate
from tests.auto_names import auto_name

ROOT = Path(__file__).resolve().parent.parent
PROJECT = "minicluster"  # must match Pulumi.yaml, or config keys silently miss
ORGANIZATION = "organization"  # what Pulumi's file backend calls every stack's organization
OWNER = f"{ORGANIZATION}/{PROJECT}/dev"
"""The dev stack, as the objects it names record it (names.OWNER)."""
KEYGEN_CERTIFICATE = certificate.generate("mocked-0")
"""What the mocked keygen resources return: a real, valid certificate."""
CERTIFICATE_TYPES = (
    "pulumi-python:dynamic/minicluster:CurveCertificate",
    "pulumi-python:dynamic/minicluster:LocalCurveCertificate",
    "minicluster:index:CurveCertificate",  # the component package's own (resources/wire.py)
    "minicluster:index:LocalCurveCertificate",
)


@dataclass
class Registered:
    typ: str
    name: str
    inputs: dict[str, Any]


@dataclass
class Deployment:
    resources: list[Registered] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)
    secret_outputs: set[str] = field(default_factory=set)
    registrations: dict[str, tuple[str | None, str]] = field(default_factory=dict)
    """Resource name -> (parent URN, own URN); the names in this program are unique."""
    options: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Resource name -> the resource options the engine was sent."""
    auto_names: dict[str, str] = field(default_factory=dict)
    """Resource name -> the name the provider gave the object it created (manifests without a name)."""
    collector: tuple[bool, int] = (False, 0)
    """After the program: whether the garbage collector was on, and how many objects it left frozen."""

    def live_name(self, resource_name: str) -> str:
        """The name of the Kubernetes object that the resource `resource_name` created."""
        return self.auto_names[resource_name]

    def parent(self, resource: Registered) -> str | None:
        return self.registrations[resource.name][0]

    def urn(self, resource: Registered) -> str:
        return self.registrations[resource.name][1]

    def of_type(self, typ: str) -> list[Registered]:
        return [r for r in self.resources if r.typ == typ]

    def one(self, typ: str) -> Registered:
        found = self.of_type(typ)
        assert len(found) == 1, f"expected one {typ}, found {len(found)}"
        return found[0]

    @property
    def kinds(self) -> list[str]:
        return sorted(r.typ for r in self.resources)


_LAST = [Deployment()]
_OPEN_LOOPS: list[asyncio.AbstractEventLoop] = []
_LOOPS_LOCK = threading.Lock()


def close_program_loops() -> None:
    """Close the event loops of the programs deploy() ran (tests/conftest.py, after each test): the
    program's own, and one per thread of its executor, which Pulumi's mock monitor makes (its
    _ensure_event_loop) and never closes. Left open, each is closed by its finalizer whenever the garbage
    collector reaches it, and that fails (its self-pipe's socket, in the same cycle, may be finalized
    first: "Invalid file descriptor: -1"). An exception raised while CPython 3.11.7 builds an AST becomes
    "SystemError: AST constructor recursion depth mismatch" (python/cpython#106905): test_layers.py's
    ast.parse failed so in a CI run."""
    with _LOOPS_LOCK:
        loops, _OPEN_LOOPS[:] = list(_OPEN_LOOPS), []
    for loop in reversed(loops):
        loop.close()


def _keep_this_threads_loop() -> None:
    """The calling thread's event loop, if it has one, to be closed with the program's
    (close_program_loops)."""
    try:
        loop = asyncio.get_event_loop()
    except RuntimeError:  # none: the mock monitor made none here (a registration it answers at once)
        return
    with _LOOPS_LOCK:
        if loop not in _OPEN_LOOPS:
            _OPEN_LOOPS.append(loop)


"""The most recent deployment, also when the program raised before returning it."""


class MiniClusterMocks(pulumi.runtime.Mocks):
    def __init__(self, deployment: Deployment, stack: str | None = None) -> None:
        """`stack`: the stack's name, when no program in this process runs (the engine peer's)."""
        self.deployment, self.stack = deployment, stack

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        self.deployment.resources.append(Registered(args.typ, args.name, dict(args.inputs)))
        state = dict(args.inputs)
        if args.typ.startswith("kubernetes:") and "name" not in state.get("metadata", {}):
            # As pulumi-kubernetes names an object without metadata.name: <resource name>-<8 random hex>.
            given = self.deployment.auto_names[args.name] = auto_name(args.name, self.stack or pulumi.get_stack())
            state["metadata"] = {**state.get("metadata", {}), "name": given}
        if args.typ.startswith("kubernetes:"):  # the API server gives every object a uid
            state["metadata"] = {**state.get("metadata", {}), "uid": f"{args.name}-uid"}
        if args.typ in CERTIFICATE_TYPES:
            state.update(certificate=KEYGEN_CERTIFICATE.text(), publicKey=KEYGEN_CERTIFICATE.public_key)
        return f"{args.name}-id", state

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        return {}, None


class RecordingMonitor(mocks.MockMonitor):
    """Also records each registration's parent URN (MockResourceArgs does not carry it)."""

    def __init__(self, mocks_: MiniClusterMocks) -> None:
        super().__init__(mocks_)
        self.deployment, self.stack = mocks_.deployment, mocks_.stack

    def make_urn(self, parent: str, type_: str, name: str) -> str:
        """As the engine forms URNs (the mock monitor keeps only the parent's last type, and counts the
        root stack as a parent): the parent's whole type chain, the root stack left out."""
        parent_type = parent.split("::")[2] if parent else ""
        if parent_type and parent_type != "pulumi:pulumi:Stack":
            type_ = f"{parent_type}${type_}"
        return f"urn:pulumi:{self.stack or pulumi.get_stack()}::{PROJECT}::{type_}::{name}"

    def RegisterResource(self, request: Any) -> Any:
        response = super().RegisterResource(request)  # type: ignore[no-untyped-call]
        _keep_this_threads_loop()
        self.deployment.registrations[request.name] = (request.parent or None, response.urn)
        self.deployment.options[request.name] = {
            "ignoreChanges": list(request.ignoreChanges),
            "replaceOnChanges": list(request.replaceOnChanges),
            "deleteBeforeReplace": request.deleteBeforeReplace,
            "dependencies": list(request.dependencies),
            "replaceWith": list(request.replace_with),
            "additionalSecretOutputs": list(request.additionalSecretOutputs),
            "version": request.version,
        }
        return response


def example(stack: str) -> dict[str, Any]:
    """The config of the project's example stack `stack` (Pulumi.<stack>.yaml), its keys without the
    `minicluster:` prefix."""
    raw = yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text())["config"]
    return {key.removeprefix("minicluster:"): value for key, value in raw.items()}


def deploy(
    config: dict[str, Any], stack: str = "dev", preview: bool = False, secret_keys: tuple[str, ...] = (),
    parallel: int | None = None,
) -> Deployment:  # fmt: skip
    """Run __main__.py with `config` (keys without the `minicluster:` prefix get it added); the keys
    in `secret_keys` are marked secret, as set_all_config records them. `parallel`: the steps the engine
    runs at once, as `pulumi up --parallel` tells the program (None: as the mocks leave it, unset)."""
    deployment = Deployment()
    _LAST[0] = deployment
    asyncio.set_event_loop(asyncio.new_event_loop())
    _keep_this_threads_loop()
    settings.ROOT.set(None)
    fake = MiniClusterMocks(deployment)
    pulumi.runtime.set_mocks(
        fake, project=PROJECT, stack=stack, preview=preview, monitor=RecordingMonitor(fake), organization=ORGANIZATION
    )
    settings.SETTINGS.parallel = parallel
    pulumi.runtime.set_all_config(
        {_key(k): _value(v) for k, v in config.items()}, secret_keys=[_key(k) for k in secret_keys]
    )

    @pulumi.runtime.test  # type: ignore[untyped-decorator]
    def program() -> pulumi.Output[Any]:
        runpy.run_path(str(ROOT / "__main__.py"), run_name="__main__")
        root = settings.get_root_resource()
        exported: dict[str, Any] = root.outputs  # type: ignore[union-attr]
        return pulumi.Output.all(**{name: _with_secrecy(o) for name, o in exported.items()}).apply(
            lambda values: _collect(deployment, values)
        )

    try:
        program()
    finally:  # tests/conftest.py unfreezes it after the test
        deployment.collector = (gc.isenabled(), gc.get_freeze_count())
    return deployment


def await_annotations(inputs: dict[str, Any]) -> dict[str, str]:
    """A declared object's annotations for Pulumi's Kubernetes provider (pulumi.com/*: how it is awaited).
    The Job's one other annotation, its revision, is its scheduling guard's (test_scheduling_guard.py)."""
    annotations: dict[str, str] = inputs["metadata"].get("annotations", {})
    return {key: value for key, value in annotations.items() if key.startswith("pulumi.com/")}


def deploy_rejected(
    config: dict[str, Any], stack: str = "dev", secret_keys: tuple[str, ...] = ()
) -> tuple[str, Deployment]:
    """Run a config the program must refuse: returns the error text and what was registered anyway."""
    try:
        deployment = deploy(config, stack, secret_keys=secret_keys)
    except pulumi.RunError as error:
        return str(error), _LAST[0]
    raise AssertionError(f"the config was accepted: {deployment.kinds}")


def refused_problems(config: dict[str, Any]) -> list[str]:
    """The problem lines the program refuses a config with, after checking that it created nothing."""
    message, deployment = deploy_rejected(config)
    assert message.startswith("invalid MiniCluster stack config:"), message
    assert deployment.resources == []
    return [line.strip().removeprefix("- ") for line in message.splitlines()[1:]]


def _with_secrecy(output: Any) -> pulumi.Output[tuple[Any, bool]]:
    out = pulumi.Output.from_input(output)
    return pulumi.Output.all(out, pulumi.Output.from_input(out.is_secret())).apply(tuple)  # type: ignore[arg-type]


def _collect(deployment: Deployment, values: dict[str, tuple[Any, bool]]) -> None:
    for name, (value, secret) in values.items():
        deployment.outputs[name] = value
        if secret:
            deployment.secret_outputs.add(name)


def _key(key: str) -> str:
    return key if ":" in key else f"{PROJECT}:{key}"


def _value(value: Any) -> str:
    """Config values reach the program as strings; structured ones as JSON, as the engine sends them."""
    import json

    if isinstance(value, str):
        return value
    return json.dumps(value)
