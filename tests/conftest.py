"""Shared test data: one base config; each test overrides one thing."""

from __future__ import annotations

import gc
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from flux_minicluster.config.loader import load_spec
from tests.harness import close_program_loops
from tests.kube_api import Cluster, StandIn
from tests.kubelet.image import real_flux_missing
from tests.kubelet.pods import Kubelet
from tests.scheduling import ModulesKeptTogether, kept_together_mismatch, longest_first

IMAGE = "ghcr.io/flux-framework/flux-restful-api:latest"
BASE_CONFIG: dict[str, Any] = {"image": IMAGE, "size": 4, "command": "hostname"}


def config(**overrides: Any) -> dict[str, Any]:
    """The base config with overrides; an override of None removes the key."""
    merged = {**BASE_CONFIG, **overrides}
    return {key: value for key, value in merged.items() if value is not None}


def pytest_configure(config: pytest.Config) -> None:
    """SIGTERM (a CI job cancelled, `timeout`) ends the run as Ctrl-C does, and pytest tears down what the
    tests made: Python's own way, an exit on the spot, left the test kubelet's pods, their brokers and
    network namespaces running."""
    signal.signal(signal.SIGTERM, interrupted)


def interrupted(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@pytest.fixture
def base_config() -> dict[str, Any]:
    return config()


@pytest.fixture(scope="session", autouse=True)
def no_real_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """No test reaches the cluster of the machine it runs on (the program's admission check reads the
    kubeconfig's cluster), from the first fixture on. Tests that want an API server use kube_api."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KUBECONFIG", str(tmp_path_factory.getbasetemp() / "no-kubeconfig"))
        patch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
        yield


@pytest.fixture(autouse=True)
def collected_after_each_test() -> Iterator[None]:
    """The program and the cluster client freeze what they made out of the garbage collector's passes,
    for the rest of their process (docs/benchmarks/pulumi-up.md); a test process runs them again and again.
    The event loops the programs ran on are closed first, rather than by their finalizers."""
    yield
    close_program_loops()
    gc.unfreeze()


@pytest.fixture
def kube_api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Cluster]:
    """A local Kubernetes API stand-in, and KUBECONFIG pointing at it (its context: `standin`)."""
    stand_in = StandIn(tmp_path)
    monkeypatch.setenv("KUBECONFIG", str(stand_in.cluster.kubeconfig))
    yield stand_in.cluster
    stand_in.stop()


@pytest.fixture(scope="module")
def api_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandIn]:
    """One API stand-in for a whole module: for a provider plugin process, which keeps its KUBECONFIG."""
    server = StandIn(tmp_path_factory.mktemp("api"))
    yield server
    server.stop()


# -- real Flux: the pods' scripts under real brokers (tests/kubelet) ------------------------------------


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test marked realflux needs real Flux brokers: where flux-core is not installed (no registry
    serves it; tests/kubelet/image.py says where it is looked for), it is skipped with that reason, in CI
    too. Where it is installed, it runs."""
    if item.get_closest_marker("realflux") is not None:
        missing = real_flux_missing()
        if missing is not None:
            pytest.skip(missing)


@pytest.fixture
def real_flux() -> None:
    """Real Flux brokers, for a test that runs them: skipped with the reason where they cannot run."""
    missing = real_flux_missing()
    if missing is not None:
        pytest.skip(missing)


@pytest.fixture
def minicluster(tmp_path: Path, real_flux: None) -> Iterator[Callable[..., Kubelet]]:
    """Makes a MiniCluster's pods from the base config with overrides (`secret_keys`: config keys given
    as secrets), on real Flux (see real_flux); every one made is torn down after the test, whatever its
    outcome."""
    made: list[Kubelet] = []

    def make(secret_keys: tuple[str, ...] = (), **overrides: Any) -> Kubelet:
        raw = {f"minicluster:{key}": value for key, value in config(**overrides).items()}
        spec = load_spec(raw, "dev", [f"minicluster:{key}" for key in secret_keys])
        made.append(Kubelet(tmp_path / f"cluster-{len(made)}", spec))
        return made[-1]

    try:
        yield make
    finally:
        for kubelet in made:
            kubelet.close()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest tests first, and the modules kept whole on one worker named where they are
    (tests/scheduling.py)."""
    mismatch = kept_together_mismatch(items)
    if mismatch:
        raise pytest.UsageError(f"tests/scheduling.py: KEPT_TOGETHER is wrong about {', '.join(mismatch)}")
    longest_first(items)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> ModulesKeptTogether | None:
    """worksteal (pyproject.toml), with the tests of each module that shares a module-scoped stack kept on
    one worker, so that the stack is deployed once (tests/scheduling.py); another --dist as xdist has it."""
    return ModulesKeptTogether(config, log) if config.getvalue("dist") == "worksteal" else None


TIERS = {"realflux": "real Flux (tests/kubelet, marked realflux)",
         "realengine": "real Kubernetes and Pulumi engines (tests/realengine, marked realengine)"}  # fmt: skip


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The summary says how many tests ran on each real engine, so that a run where they were skipped
    shows it."""
    for marker, tier in TIERS.items():
        counts = {
            outcome: len({report.nodeid for report in reports if marker in getattr(report, "keywords", {})})
            for outcome, reports in terminalreporter.stats.items()
            if outcome in ("passed", "failed", "skipped", "error")
        }
        summary = ", ".join(f"{count} {outcome}" for outcome, count in counts.items() if count)
        if summary:
            terminalreporter.write_line(f"{tier}: {summary}")
