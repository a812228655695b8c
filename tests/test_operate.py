"""scripts/minicluster.py against a fake Kubernetes API (issue 6)."""

from __future__ import annotations

import importlib.util
import io
import random
import sys
from datetime import UTC, datetime, timedelta
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException
from rich.console import Console

from components.manifests import labels
from components.spec import MiniClusterSpec, load_spec
from tests.harness import ROOT

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("minicluster_cli", ROOT / "scripts" / "minicluster.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


cli = load_script()
DEV = load_spec({"minicluster:image": "flux:1", "minicluster:size": 4, "minicluster:command": "hostname"}, "dev")


def pod(spec: MiniClusterSpec, rank: int, phase: str = "Running", node: str | None = "node-a", restarts: int = 0,
        component: str = "broker") -> Any:  # fmt: skip
    pod_labels = {**labels(spec, component), "job-name": spec.name, cli.INDEX_LABEL: str(rank)}
    return SimpleNamespace(
        metadata=SimpleNamespace(name=f"{spec.name}-{rank}-x{rank}", labels=pod_labels, annotations={},
                                 creation_timestamp=NOW - timedelta(minutes=5)),
        spec=SimpleNamespace(node_name=node),
        status=SimpleNamespace(phase=phase, container_statuses=[SimpleNamespace(restart_count=restarts)]),
    )  # fmt: skip


def job(spec: MiniClusterSpec, condition: str | None = None, reason: str | None = None, completed: str = "") -> Any:
    conditions = [SimpleNamespace(type=condition, status="True", reason=reason)] if condition else []
    return SimpleNamespace(
        metadata=SimpleNamespace(name=spec.name, namespace=spec.namespace, creation_timestamp=NOW - timedelta(hours=2)),
        status=SimpleNamespace(conditions=conditions, completed_indexes=completed, failed_indexes=None),
    )


class FakeCore:
    def __init__(self, pods: list[Any], namespaces: tuple[str, ...] = ("default",), error: Exception | None = None):
        self.pods, self.namespaces, self.error = pods, namespaces, error
        self.log_requests: list[dict[str, Any]] = []

    def list_namespaced_pod(self, namespace: str, label_selector: str) -> Any:
        if self.error:
            raise self.error
        wanted = dict(pair.split("=", 1) for pair in label_selector.split(","))
        return SimpleNamespace(items=[p for p in self.pods if wanted.items() <= p.metadata.labels.items()])

    def read_namespace(self, namespace: str) -> Any:
        if namespace not in self.namespaces:
            raise ApiException(status=404)
        return SimpleNamespace()

    def connect_get_namespaced_pod_exec(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("exec goes through kubernetes.stream.stream, which calls this itself")

    def read_namespaced_pod_log(self, name: str, namespace: str, **options: Any) -> Any:
        self.log_requests.append({"name": name, **options})
        return SimpleNamespace(stream=lambda: iter([b"rank 0 says hello\n", b"done\n"]))


class FakeBatch:
    """Returns the given Job states one per read (the last repeats); None means 'not found'."""

    def __init__(self, *jobs: Any, error: Exception | None = None) -> None:
        self.jobs, self.reads, self.error = list(jobs), 0, error

    def read_namespaced_job(self, name: str, namespace: str) -> Any:
        if self.error:
            raise self.error
        current = self.jobs[min(self.reads, len(self.jobs) - 1)]
        self.reads += 1
        if current is None:
            raise ApiException(status=404)
        return current


def console() -> Console:
    return Console(file=io.StringIO(), width=120, force_terminal=False)


def output(out: Console) -> str:
    return out.file.getvalue()  # type: ignore[attr-defined,no-any-return]


# -- which pods, in which order -------------------------------------------------------------------


def test_only_this_miniclusters_broker_pods_are_selected_in_rank_order() -> None:
    other = load_spec({"minicluster:image": "flux:1", "minicluster:size": 2}, "other")
    mine = [pod(DEV, rank) for rank in range(4)]
    noise = [pod(DEV, 0, component="keygen"), pod(other, 0), pod(other, 1)]
    shuffled = mine + noise
    random.Random(7).shuffle(shuffled)
    apis = cli.Apis(FakeCore(shuffled), FakeBatch(job(DEV)))
    assert [p.metadata.name for p in cli.broker_pods(apis, DEV)] == [p.metadata.name for p in mine]


def test_list_shows_rank_phase_node_restarts_and_age() -> None:
    pods = [pod(DEV, 1, phase="Pending", node=None), pod(DEV, 0, restarts=2)]
    assert cli.pod_rows(sorted(pods, key=cli.rank_of), NOW) == [
        ("0", "dev-0-x0", "Running", "node-a", "2", "5m"),
        ("1", "dev-1-x1", "Pending", "-", "0", "5m"),
    ]


def test_list_prints_a_table_of_the_pods() -> None:
    out = console()
    assert cli.cmd_list(cli.Apis(FakeCore([pod(DEV, 0)]), FakeBatch(job(DEV))), DEV, out) == 0
    assert "dev-0-x0" in output(out) and "node-a" in output(out)


# -- status ---------------------------------------------------------------------------------------


def test_status_summarises_job_state_pods_per_phase_indexes_and_age() -> None:
    pods = [pod(DEV, 0, "Succeeded"), pod(DEV, 1, "Succeeded"), pod(DEV, 2, "Running"), pod(DEV, 3, "Pending")]
    rows = dict(cli.status_rows(job(DEV, completed="0-1"), pods, NOW))
    assert rows == {
        "job": "default/dev",
        "state": "Running",
        "pods": "1 Pending, 1 Running, 2 Succeeded",
        "completed indexes": "0-1",
        "failed indexes": "none",
        "age": "2h",
    }


@pytest.mark.parametrize(
    ("condition", "reason", "state"),
    [("Complete", None, "Complete"), ("Failed", "BackoffLimitExceeded", "Failed (BackoffLimitExceeded)"),
     (None, None, "Running")],
)  # fmt: skip
def test_job_state_names_the_condition_and_its_reason(condition: str | None, reason: str | None, state: str) -> None:
    assert cli.job_state(job(DEV, condition, reason)) == state


# -- wait: progress and exit codes ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("pods", "condition", "stage", "exit_code"),
    [
        ([pod(DEV, r, "Pending", node=None) for r in range(4)], None, "scheduling pods", None),
        ([pod(DEV, r, "Pending") for r in range(4)], None, "starting brokers", None),
        ([pod(DEV, r) for r in range(4)], None, "Flux is up; the command is running", None),
        ([pod(DEV, r, "Succeeded") for r in range(4)], "Complete", "the job completed", 0),
        ([pod(DEV, 0, "Failed")], "Failed", "the job failed: Failed (BackoffLimitExceeded)", 1),
    ],
    ids=["unscheduled", "scheduled", "running", "complete", "failed"],
)
def test_progress_moves_through_its_stages(
    pods: list[Any], condition: str | None, stage: str, exit_code: int | None
) -> None:
    state = cli.progress(job(DEV, condition, "BackoffLimitExceeded" if condition == "Failed" else None), pods, DEV)
    assert (state.stage, state.exit_code) == (stage, exit_code)


def test_a_persistent_cluster_is_done_waiting_once_every_broker_runs() -> None:
    persistent = load_spec({"minicluster:image": "flux:1", "minicluster:size": 2}, "dev")
    state = cli.progress(job(persistent), [pod(persistent, 0), pod(persistent, 1)], persistent)
    assert (state.stage, state.exit_code, state.running) == ("every broker is up; the instance stays up", 0, 2)


def fake_time() -> tuple[Any, Any]:
    now = [0.0]
    return (lambda seconds: now.__setitem__(0, now[0] + seconds)), (lambda: now[0])


def test_wait_follows_the_job_to_completion_and_exits_0() -> None:
    batch = FakeBatch(job(DEV), job(DEV), job(DEV, "Complete"))
    sleep, clock = fake_time()
    out = console()
    assert (
        cli.cmd_wait(cli.Apis(FakeCore([pod(DEV, r) for r in range(4)]), batch), DEV, out, 60, sleep=sleep, clock=clock)
        == 0
    )
    assert batch.reads == 3
    assert "the job completed" in output(out)


def test_wait_exits_1_when_the_job_fails() -> None:
    apis = cli.Apis(FakeCore([pod(DEV, 0, "Failed")]), FakeBatch(job(DEV, "Failed", "BackoffLimitExceeded")))
    assert cli.cmd_wait(apis, DEV, console(), 60) == 1


def test_wait_gives_up_at_the_timeout_with_exit_4() -> None:
    sleep, clock = fake_time()
    out = console()
    apis = cli.Apis(FakeCore([pod(DEV, r, "Pending", node=None) for r in range(4)]), FakeBatch(job(DEV)))
    assert cli.cmd_wait(apis, DEV, out, 10, poll=2, sleep=sleep, clock=clock) == 4
    assert "timed out after 10s: scheduling pods" in output(out)


# -- logs and exec --------------------------------------------------------------------------------


def test_logs_reads_the_chosen_ranks_broker_container() -> None:
    core = FakeCore([pod(DEV, r) for r in range(4)])
    out = console()
    assert cli.cmd_logs(cli.Apis(core, FakeBatch(job(DEV))), DEV, out, rank=2, follow=True) == 0
    assert core.log_requests == [
        {"name": "dev-2-x2", "container": "flux-broker", "follow": True, "_preload_content": False}
    ]
    assert output(out) == "rank 0 says hello\ndone\n"


def test_exec_runs_the_command_in_the_chosen_rank_and_returns_its_status(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[Any, ...]] = []

    class Session:
        returncode = 3

        def run_forever(self) -> None: ...
        def read_stdout(self) -> str:
            return "     STATE NNODES\n      free      4\n"

        def read_stderr(self) -> str:
            return ""

    def fake_stream(*args: Any, **kwargs: Any) -> Session:
        calls.append((args[1:], kwargs["container"], kwargs["command"]))
        return Session()

    monkeypatch.setattr("kubernetes.stream.stream", fake_stream)
    out = console()
    apis = cli.Apis(FakeCore([pod(DEV, r) for r in range(4)]), FakeBatch(job(DEV)))
    assert cli.cmd_exec(apis, DEV, out, 1, ["flux", "resource", "list"]) == 1
    flux_uri = "FLUX_URI=local:///var/lib/minicluster/run/local"
    assert calls == [(("dev-1-x1", "default"), "flux-broker", ["env", flux_uri, "flux", "resource", "list"])]
    assert "free      4" in output(out)


# -- clear errors instead of tracebacks -----------------------------------------------------------


def run_main(args: list[str], apis: Any, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = cli.main(args, apis=apis)
    return code, capsys.readouterr().err.strip()


def test_unreachable_cluster_is_one_line_and_exit_3(capsys: pytest.CaptureFixture[str]) -> None:
    apis = cli.Apis(FakeCore([]), FakeBatch(error=ConnectionRefusedError(111, "refused")))
    unreachable = "error: cannot reach the Kubernetes cluster (ConnectionRefusedError); check `kubectl cluster-info`"
    assert run_main(["status", "--stack", "dev"], apis, capsys) == (3, unreachable)


def test_missing_namespace_is_one_line_and_exit_3(capsys: pytest.CaptureFixture[str]) -> None:
    apis = cli.Apis(FakeCore([], namespaces=()), FakeBatch(None))
    code, message = run_main(["list", "--stack", "dev"], apis, capsys)
    assert (code, message) == (
        3,
        "error: namespace 'default' does not exist: is minicluster:namespace right, and the context?",
    )


def test_never_deployed_stack_is_one_line_and_exit_3(capsys: pytest.CaptureFixture[str]) -> None:
    code, message = run_main(["logs", "--stack", "dev"], cli.Apis(FakeCore([]), FakeBatch(None)), capsys)
    assert (code, message) == (
        3,
        "error: MiniCluster 'dev' is not deployed in namespace 'default': run `pulumi up --stack <stack>`",
    )


def test_unknown_stack_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, message = run_main(["list", "--stack", "nope"], cli.Apis(FakeCore([]), FakeBatch()), capsys)
    assert code == 2 and "no stack file" in message


def test_a_rank_outside_the_cluster_is_reported(capsys: pytest.CaptureFixture[str]) -> None:
    apis = cli.Apis(FakeCore([pod(DEV, r) for r in range(4)]), FakeBatch(job(DEV)))
    code, message = run_main(["exec", "--stack", "dev", "--rank", "9", "--", "hostname"], apis, capsys)
    assert (code, message) == (3, "error: MiniCluster 'dev' has no pod for rank 9 (it has 4: 0-3)")
