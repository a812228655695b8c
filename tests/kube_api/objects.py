"""The stand-in's routes for everything but pods: namespaces, nodes, quotas and LimitRanges, events,
creates of any kind (dry runs), Jobs and ConfigMaps with their patches."""

from __future__ import annotations

import copy
import secrets
from typing import Any
from urllib.parse import urlparse

from tests.kube_api.answers import Answers
from tests.kube_api.cluster import TERMINATING, Json, decode_problem

BUILT_IN_GROUPS = {"apps", "batch", "rbac.authorization.k8s.io"}
"""The API groups of the built-in kinds the program creates (any other group is a custom resource's)."""


class ObjectRoutes(Answers):
    def get_namespace(self, ns: str, body: Any) -> None:
        if ns not in self.cluster.namespaces:
            self._status(404, f'namespaces "{ns}" not found')
            return
        self._json(200, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})

    def create_object(self, ns: str, body: Json, resource: str, group: str = "", version: str = "v1") -> None:
        """A create with dryRun=All of any kind but a pod, as the API server answers it: a built-in kind
        must decode by its schema, the namespace and (for a custom resource) its CRD must exist, the name
        must be free, then the webhooks judge it. (Semantic validation, 422, is not modelled: a test
        arranges it as a fault.) Nothing is stored (a create that is not a dry run: 501)."""
        custom = bool(group) and group not in BUILT_IN_GROUPS
        name = body["metadata"]["name"]
        qualified = f"{resource}.{group}" if group else resource
        refusal = None if custom else decode_problem(body)
        if refusal:
            self._status(400, refusal)
        elif ns not in self.cluster.namespaces:
            self._status(404, f'namespaces "{ns}" not found')
        elif ns in self.cluster.terminating:
            self._status(403, f'{qualified} "{name}" is forbidden: {TERMINATING.format(ns)}')
        elif custom and f"{group}/{version}/{resource}" not in self.cluster.crds:
            self._status(404, "the server could not find the requested resource")
        elif self.query.get("dryRun") != "All":
            self._status(501, "the stand-in stores only pods and jobs")
        elif (resource, ns, name) in self.cluster.existing or (resource == "jobs" and (ns, name) in self.cluster.jobs):
            self._status(409, f'{qualified} "{name}" already exists')
        elif denied := next((said for webhook in self.cluster.webhooks if (said := webhook(body))), None):
            self._status(403, f'admission webhook "policy.example.com" denied the request: {denied}')
        else:
            self._json(201, body)

    def get_object(self, ns: str, resource: str, name: str, body: Any) -> None:
        """Any object of `existing` (a Service, a Role, a PodGroup, ...), as stored."""
        found = self.cluster.existing.get((resource, ns, name))
        if found is None:
            self._status(404, f'{resource} "{name}" not found')
        else:
            self._json(200, found)

    def list_nodes(self, body: Any) -> None:
        self._page("NodeList", self.cluster.nodes)

    def list_quotas(self, ns: str, body: Any) -> None:
        self._page("ResourceQuotaList", [q for q in self.cluster.quotas if q["metadata"]["namespace"] == ns])

    def list_limit_ranges(self, ns: str, body: Any) -> None:
        self._page("LimitRangeList", [lr for lr in self.cluster.limit_ranges if lr["metadata"]["namespace"] == ns])

    def list_events(self, ns: str, body: Any) -> None:
        # The API server's field selectors on events: involvedObject's name, uid, kind (and more), ANDed.
        terms = [term.split("=", 1) for term in self.query.get("fieldSelector", "").split(",") if term]
        wanted = {field.removeprefix("involvedObject."): value for field, value in terms}
        if any(not field.startswith("involvedObject.") for field, _ in terms):
            self._status(400, f"field label not supported by the stand-in: {self.query['fieldSelector']}")
            return
        items = [e for e in self.cluster.events if e["metadata"]["namespace"] == ns
                 and all(e["involvedObject"].get(field) == value for field, value in wanted.items())]  # fmt: skip
        self._json(200, {"apiVersion": "v1", "kind": "EventList", "metadata": {}, "items": items})

    def create_event(self, ns: str, body: Json) -> None:
        """An Event, decoded strictly and named from its generateName, as the API server stores it."""
        metadata = body.get("metadata") or {}
        refusal = decode_problem(body)
        if refusal:
            self._status(400, refusal)
        elif metadata.get("namespace", ns) != ns:
            self._status(400, "the namespace of the provided object does not match the namespace sent on the request")
        else:
            event = {**body, "metadata": {**metadata, "name": metadata.get("name") or
                                          f"{metadata['generateName']}{secrets.token_hex(3)}"}}  # fmt: skip
            with self.cluster.lock:
                self.cluster.events.append(event)
            self._json(201, event)

    def get_job(self, ns: str, name: str, body: Any) -> None:
        if (job := self._found(self.cluster.jobs, ns, name, "jobs.batch")) is not None:
            self._json(200, job)

    def patch_job(self, ns: str, name: str, body: Json) -> None:
        """A merge patch; a number with a fraction part is refused for the Job's integer fields."""
        job = self._found(self.cluster.jobs, ns, name, "jobs.batch")
        if job is None or not self._patchable(body):
            return
        if _has_float(body):
            self._status(400, f"json: cannot unmarshal number into Go struct field of type int64 ({body})")
            return
        expected = (body.get("metadata") or {}).get("resourceVersion")
        if expected is not None and expected != job["metadata"].get("resourceVersion"):
            self._status(409, f'Operation cannot be fulfilled on jobs.batch "{name}": the object has been modified; '
                              "please apply your changes to the latest version and try again")  # fmt: skip
            return
        spec = body.get("spec") or {}
        if ("parallelism" in spec or "completions" in spec) and spec.get("parallelism") != spec.get("completions"):
            self._status(422, f'Job.batch "{name}" is invalid: spec.completions: Invalid value: '
                              "when changing, parallelism and completions must change together")  # fmt: skip
            return
        with self.cluster.lock:
            _merge(job, body)
            self.cluster.version += 1
            job["metadata"]["resourceVersion"] = str(self.cluster.version)
            if self.cluster.job_controller is not None:
                self.cluster.job_controller(job)
        self._json(200, job)

    def get_config_map(self, ns: str, name: str, body: Any) -> None:
        if (found := self._found(self.cluster.config_maps, ns, name, "configmaps")) is not None:
            self._json(200, found)

    def patch_config_map(self, ns: str, name: str, body: Json) -> None:
        found = self._found(self.cluster.config_maps, ns, name, "configmaps")
        if found is None or not self._patchable(body):
            return
        if any(not isinstance(value, str | None) for value in (body.get("data") or {}).values()):
            self._status(
                400, f"json: cannot unmarshal number into Go struct field ConfigMap.data of type string ({body})"
            )
            return
        with self.cluster.lock:
            _merge(found, body)
        self._json(200, found)

    def _patchable(self, body: Any) -> bool:
        """As the API server: a JSON patch is a list of operations, a merge patch an object."""
        self.cluster.field_managers.append((urlparse(self.path).path, self.query.get("fieldManager")))
        content_type = self.headers.get("Content-Type", "")
        wants_list = content_type == "application/json-patch+json"
        if content_type not in ("application/json-patch+json", "application/merge-patch+json",
                                "application/strategic-merge-patch+json"):  # fmt: skip
            accepted = "application/json-patch+json, application/merge-patch+json"
            self._status(415, f"the body of the request was in an unknown format - accepted media types include: "
                              f"{accepted} ({content_type!r})")  # fmt: skip
            return False
        if wants_list != isinstance(body, list):
            self._status(400, f"json: cannot unmarshal {type(body).__name__} into Go value of type jsonpatch.Patch")
            return False
        return True


def _has_float(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_has_float(item) for item in value.values())
    if isinstance(value, list):
        return any(_has_float(item) for item in value)
    return isinstance(value, float)


def _merge(target: Json, patch: Json) -> None:
    """RFC 7386: null removes a key; an object merges into the object there (a new one if there is none,
    so that the stored object never shares the request's)."""
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict):
            if not isinstance(target.get(key), dict):
                target[key] = {}
            _merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)
