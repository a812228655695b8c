"""A deployed MiniCluster as the API server sees it, for the ops tool (flux_minicluster/ops): its Job, pods,
events, logs and exec. Every failed request becomes a Failure: one line for the user, and the ops
tool's exit code that goes with it (the README's states table lists them).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

from flux_minicluster.builders.keeper import COMPONENT as KEEPER
from flux_minicluster.builders.manifests import BROKER_CONTAINER, labels
from flux_minicluster.cluster import flux_view, kube, objects, pod_exec
from flux_minicluster.cluster.status import live_size, without_pods
from flux_minicluster.config import paths
from flux_minicluster.config.spec import MiniClusterSpec

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_NOT_FOUND, EXIT_TIMEOUT = 0, 1, 2, 3, 4
EXIT_NOT_RUNNING, EXIT_UNREACHABLE, EXIT_DENIED, EXIT_INTERRUPTED = 5, 6, 7, 130
EXIT_CODES = {"unreachable": EXIT_UNREACHABLE, "server-error": EXIT_UNREACHABLE, "denied": EXIT_DENIED}
"""By kind of failed request; any other kind: EXIT_FAILED."""
NEEDS = f"get, list and watch on jobs and pods, list on events, get on pods/log and {kube.EXEC_RIGHTS}"
STREAM_TIMEOUT = (kube.REQUEST_TIMEOUT[0], 7 * 24 * 3600.0)
"""A followed log may be silent for as long as the broker is (the client takes no "never" here)."""


def note(message: str) -> None:
    """What the user should know beside the output (which stays clean for pipes)."""
    print(message, file=sys.stderr, flush=True)


class Failure(RuntimeError):
    """One clear line for the user, and the exit code that goes with it."""

    def __init__(self, exit_code: int, message: str, problem: kube.ApiProblem | None = None) -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.problem = problem
        """The failed request behind it, if any."""


class Cluster:
    """This stack's MiniCluster as the API server sees it. Every failed request becomes a Failure."""

    def __init__(self, api_client: Any, spec: MiniClusterSpec, stack: str = "dev") -> None:
        from kubernetes import client

        self.core, self.batch, self.spec = client.CoreV1Api(api_client), client.BatchV1Api(api_client), spec
        self.stack = stack
        self.host = api_client.configuration.host
        self.job_seen = False

    def call(self, request: Callable[[], Any], missing: Callable[[], Failure] | None = None) -> Any:
        try:
            return request()
        except Failure:
            raise
        except Exception as error:
            found = kube.problem(error)
            if found.kind == "not-found":
                raise (missing or self._missing)() from None
            raise self._failure(found) from None

    def call_on_pod(self, pod: Any, request: Callable[[], Any]) -> Any:
        """A request that needs the pod's container running: a 400 means it stopped (or never ran) meanwhile."""
        name = pod.metadata.name
        try:
            return self.call(request, missing=lambda: self._gone(name))
        except Failure as failure:
            if failure.problem is not None and failure.problem.status == 400:
                message = f"pod {name} is not running: {failure.problem.detail}; see `status`"
                raise Failure(EXIT_NOT_RUNNING, message) from None
            raise

    def _failure(self, found: kube.ApiProblem) -> Failure:
        message = kube.describe(
            found, doing=f"reading MiniCluster {self.spec.name!r}", namespace=self.spec.namespace, needs=NEEDS,
            context="--context", host=self.host,
        )  # fmt: skip
        return Failure(EXIT_CODES.get(found.kind, EXIT_FAILED), message, found)

    def _missing(self) -> Failure:
        spec = self.spec
        if self.job_seen:
            return Failure(
                EXIT_NOT_FOUND,
                f"MiniCluster {spec.name!r} was deleted while this command ran "
                "(pulumi destroy, or a replacement of its Job)",
            )
        try:
            self.core.read_namespace(spec.namespace, _request_timeout=kube.REQUEST_TIMEOUT)
        except Exception as error:
            if kube.problem(error).kind == "not-found":
                return Failure(
                    EXIT_NOT_FOUND,
                    f"namespace {spec.namespace!r} does not exist: is minicluster:namespace right, and the context?",
                )
        return Failure(
            EXIT_NOT_FOUND,
            f"MiniCluster {spec.name!r} is not deployed in namespace {spec.namespace!r}: run `pulumi up --stack "
            f"{self.stack}` (`pulumi up --refresh` if its Job was deleted outside Pulumi, which `pulumi up` alone "
            "does not see)",
        )

    def job(self) -> Any:
        """Every subcommand starts here, so a stack that was never deployed is reported as such."""
        spec = self.spec
        found = self.call(
            lambda: self.batch.read_namespaced_job(spec.name, spec.namespace, _request_timeout=kube.REQUEST_TIMEOUT)
        )
        self.job_seen = True
        return found

    def pods(self) -> list[Any]:
        """This MiniCluster's broker pods only (not its keygen pod, not another MiniCluster's), by rank.
        None at all: the Job is read again, so that a MiniCluster deleted meanwhile is said to be."""
        found = self._pods_of("broker")
        if not found and self.job_seen:
            self.job()
        return sorted(found, key=lambda pod: (objects.pod_rank(pod), pod.metadata.creation_timestamp or datetime.min))

    def keeper_pods(self) -> list[Any]:
        """The keeper's pods (keeper.enabled): one, or two while its Deployment replaces one."""
        return self._pods_of(KEEPER)

    def _pods_of(self, component: str) -> list[Any]:
        """The pods of this MiniCluster's `component` (its labels)."""
        selector = objects.label_selector(labels(self.spec, component))
        listed = self.call(
            lambda: self.core.list_namespaced_pod(
                self.spec.namespace, label_selector=selector, _request_timeout=kube.REQUEST_TIMEOUT
            )
        )
        return list(listed.items)

    def events(self) -> list[Any]:
        """The namespace's events (to say why pods were replaced); none if they may not be read."""
        try:
            found = self.call(
                lambda: self.core.list_namespaced_event(self.spec.namespace, _request_timeout=kube.REQUEST_TIMEOUT)
            )
        except Failure as failure:
            if failure.exit_code != EXIT_DENIED:
                raise
            note("the namespace's events may not be read: why pods were replaced is shown only from the pods")
            return []
        return list(found.items or [])

    def pod_of_rank(self, rank: int) -> Any:
        """The rank's newest pod: a failed one that the Job replaced stays listed (the Job keeps it)."""
        spec, job = self.spec, self.job()
        size = live_size(job, spec)
        if not 0 <= rank < size:
            raise Failure(EXIT_NOT_FOUND, f"MiniCluster {spec.name!r} has no rank {rank} (it has {size}: 0-{size - 1})")
        mine = [pod for pod in self.pods() if objects.pod_rank(pod) == rank]
        if not mine:
            raise Failure(EXIT_NOT_RUNNING, f"rank {rank} has no pod: {without_pods(job)}; see `status`")
        return mine[-1]

    def log_lines(self, pod: Any, *, follow: bool, previous: bool) -> Iterator[str]:
        from kubernetes.watch.watch import iter_resp_lines

        response = self.call_on_pod(
            pod,
            lambda: self.core.read_namespaced_pod_log(
                pod.metadata.name, self.spec.namespace, container=BROKER_CONTAINER, follow=follow, previous=previous,
                _preload_content=False, _request_timeout=STREAM_TIMEOUT if follow else kube.REQUEST_TIMEOUT,
            ),
        )  # fmt: skip
        try:
            yield from iter_resp_lines(response)  # type: ignore[no-untyped-call]
        except Exception as error:  # the connection dropped mid-stream
            raise self._failure(kube.problem(error)) from None
        finally:
            response.release_conn()

    def _gone(self, pod_name: str) -> Failure:
        return Failure(
            EXIT_NOT_FOUND,
            f"MiniCluster {self.spec.name!r} was deleted while this command ran (its pod {pod_name} is gone)",
        )

    def flux_view(self, pod: Any) -> list[tuple[str, str]]:
        """Rank 0's instance's own view (its readings, one exec bounded in time), as status rows."""
        command = ["/bin/bash", paths.ENTRYPOINT, "--readings"]
        timeout = flux_view.READINGS_TIMEOUT
        stdout, stderr, code = self.exec(pod, command, timeout)
        if code is None:
            raise Failure(EXIT_TIMEOUT, f"rank 0 did not answer within {timeout:g}s")
        if code != 0:
            said = stderr.strip().splitlines()[-1] if stderr.strip() else "no message"
            raise Failure(EXIT_FAILED, f"rank 0's readings exited with status {code}: {said}")
        try:
            return flux_view.rows(json.loads(stdout))
        except ValueError as error:
            raise Failure(EXIT_FAILED, f"rank 0's answer is {error}") from None

    def exec(self, pod: Any, command: list[str], timeout: float | None = None) -> tuple[str, str, int | None]:
        """The command's output, once it has ended (or `timeout` seconds passed: no status)."""
        name, namespace, api_client = pod.metadata.name, self.spec.namespace, self.core.api_client
        run = pod_exec.run_in_pod
        return self.call_on_pod(pod, lambda: run(api_client, namespace, name, BROKER_CONTAINER, command, timeout))  # type: ignore[no-any-return]

    def stream(self, pod: Any, command: list[str], stdin: Any | None = None) -> int | None:
        """The command's output passed on to this process's as it comes, `stdin` sent as its input."""
        name, namespace, api_client = pod.metadata.name, self.spec.namespace, self.core.api_client
        sys.stdout.flush()  # what was printed before comes first
        out, err = sys.stdout.buffer, sys.stderr.buffer
        stream = pod_exec.stream_in_pod
        return self.call_on_pod(  # type: ignore[no-any-return]
            pod, lambda: stream(api_client, namespace, name, BROKER_CONTAINER, command, out, err, stdin, note)
        )
