"""When a Job is created and when it completes, as one watch sees both: a benchmark takes the Job's own
run (its pods, Flux, the command) out of a step's time, which leaves what the step adds on top of
Kubernetes, free of the run-to-run noise of the pods on a loaded machine."""

from __future__ import annotations

import threading
import time
from types import TracebackType
from typing import Any

from kubernetes import client, watch


class JobClock:
    """With it: the monotonic times at which the watch saw the Job `name` appear and complete."""

    def __init__(self, admin: client.ApiClient, namespace: str, name: str) -> None:
        self.batch, self.namespace, self.name = client.BatchV1Api(admin), namespace, name
        self.created: float | None = None
        self.completed: float | None = None
        self._watch = watch.Watch()  # type: ignore[no-untyped-call]
        self._thread = threading.Thread(target=self._follow, daemon=True)

    def __enter__(self) -> JobClock:
        # The watch starts at the listed version: it brings every change after it, however late it connects.
        listed: Any = self.batch.list_namespaced_job(self.namespace)
        self._version = listed.metadata.resource_version
        self._thread.start()
        return self

    def __exit__(self, *_: type[BaseException] | BaseException | TracebackType | None) -> None:
        self._watch.stop()  # type: ignore[no-untyped-call]
        self._thread.join(10)

    @property
    def run(self) -> float:
        """Seconds from the Job's creation to its completion."""
        assert self.created is not None and self.completed is not None, f"job/{self.name} did not complete"
        return self.completed - self.created

    def _follow(self) -> None:
        changes: Any = self._watch.stream(  # type: ignore[no-untyped-call]
            self.batch.list_namespaced_job, self.namespace, field_selector=f"metadata.name={self.name}",
            resource_version=self._version, timeout_seconds=600,
        )  # fmt: skip
        for change in changes:
            now = time.monotonic()
            if self.created is None:
                self.created = now
            conditions = change["object"].status.conditions or []
            if any(c.type == "Complete" and c.status == "True" for c in conditions):
                self.completed = now
                return
