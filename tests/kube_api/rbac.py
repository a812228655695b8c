"""Authorization as the API server's RBAC authorizer decides it, for the service accounts a test grants
a Role to (by their token): a request no rule of the Role allows is refused with 403 and the API
server's own words. Requests with any other token (the tests' own kubeconfig) are the cluster admin's."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

Json = dict[str, Any]
PATH = re.compile(
    r"^/(?:api/v1|apis/(?P<group>[^/]+)/[^/]+)(?:/namespaces/(?P<ns>[^/]+))?/(?P<resource>[^/]+)"
    r"(?:/(?P<name>[^/]+))?(?:/(?P<subresource>[^/]+))?$"
)
VERBS = {"POST": "create", "PATCH": "patch", "PUT": "update", "DELETE": "delete"}


@dataclass(frozen=True)
class Account:
    """A service account and the rules of the Role bound to it in its namespace."""

    namespace: str
    name: str
    rules: list[Json]

    @property
    def user(self) -> str:
        return "system:anonymous" if self is ANONYMOUS else f"system:serviceaccount:{self.namespace}:{self.name}"


ANONYMOUS = Account("", "", [])
"""A request with no token: the API server's anonymous user, whom RBAC allows nothing of this API."""


def watch_asked(query: dict[str, str]) -> bool:
    """Whether a GET asks to watch, as the API server reads its `watch` parameter (a bool from a query
    string): there and anything but 0 or false, in any case (`watch=1` and `watch=true` alike)."""
    return "watch" in query and query["watch"].lower() not in ("0", "false")


def refusal(account: Account, method: str, path: str, query: dict[str, str]) -> str | None:
    """Why the API server forbids `account` this request (None: a rule allows it)."""
    match = PATH.match(path)
    if match is None:
        return f'forbidden: User "{account.user}" cannot {method.lower()} path "{path}"'
    group, namespace, name = match["group"] or "", match["ns"], match["name"]
    resource = match["resource"] if match["subresource"] is None else f"{match['resource']}/{match['subresource']}"
    verb = ("get" if name else "watch" if watch_asked(query) else "list") if method == "GET" else VERBS[method]
    if namespace == account.namespace and any(_allows(rule, group, resource, verb, name) for rule in account.rules):
        return None
    qualified = match["resource"] + (f".{group}" if group else "")
    subject = f'{qualified} "{name}"' if name else qualified
    scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    return (f'{subject} is forbidden: User "{account.user}" cannot {verb} resource "{resource}" in API group '
            f'"{group}" {scope}')  # fmt: skip


def _allows(rule: Json, group: str, resource: str, verb: str, name: str | None) -> bool:
    names = rule.get("resourceNames") or []
    return (
        bool({group, "*"} & set(rule.get("apiGroups", [])))
        and bool({resource, "*"} & set(rule.get("resources", [])))
        and bool({verb, "*"} & set(rule.get("verbs", [])))
        and (not names or name in names)
    )
