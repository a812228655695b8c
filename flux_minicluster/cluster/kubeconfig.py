"""Reading a kubeconfig as kubectl does: KUBECONFIG's files or ~/.kube/config, or the one the Kubernetes
provider was given (a path or its text), a context of it, and its user's credentials.

A user whose credentials come from a plugin (`users[].user.exec`: gke-gcloud-auth-plugin, `aws eks
get-token`, kubelogin) is the clouds' default. The `kubernetes` client runs the plugin as it loads the
kubeconfig, and where the plugin fails (not installed, not logged in) it logs the error and goes on
without credentials: every request was then refused as `system:anonymous`, which read as missing RBAC
rights, while the plugin's own words went to stderr as a bare `ERROR:root:` line. Here they are the
error.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

PLUGIN_DETAIL_LIMIT = 400
"""Characters kept of what a failed credential plugin said: a cloud's CLI explains at length."""


class NoCluster(RuntimeError):
    """No usable kubeconfig context or in-cluster account: the message says which and what exists."""


class CredentialsFailed(NoCluster):
    """The kubeconfig's credential plugin failed: no request can be made until the user logs in again."""


def one_line(text: str) -> str:
    return " ".join(text.split())


def path_in_use() -> str | None:
    """The kubeconfig path(s) kubectl would read, if any exists (KUBECONFIG may list several)."""
    value = os.environ.get("KUBECONFIG") or "~/.kube/config"
    paths = [part for part in value.split(os.pathsep) if part]
    return value if any(Path(path).expanduser().is_file() for path in paths) else None


def where() -> str:
    return f"KUBECONFIG={os.environ['KUBECONFIG']}" if os.environ.get("KUBECONFIG") else "~/.kube/config"


def given_client(given: str, context: str | None) -> Any:
    """A client from the kubeconfig the provider was given: its text, when it reads as a kubeconfig's
    YAML (or JSON) mapping, else the file it names (as the provider reads it, `~` expanded). The text
    holds credentials: no message quotes it, not even as a file name (one line of JSON is a valid one)."""
    import yaml
    from kubernetes import config

    named_as = "the kubeconfig given to the Kubernetes provider"
    try:
        loaded = yaml.safe_load(given)
    except yaml.YAMLError:
        loaded = None
    if not isinstance(loaded, dict):
        path = Path(given).expanduser()
        try:
            named = path.is_file()
        except OSError:  # not a name this machine's files can have (too long, say)
            named = False
        if not named:
            raise NoCluster(f"{named_as} is neither a file that exists nor a kubeconfig's YAML text")
        return file_client(str(path), context)
    _check_context(_contexts(loaded, named_as), named_as, context)
    return _loaded(lambda: config.new_client_from_config_dict(loaded, context=context), named_as)  # type: ignore[no-untyped-call]


def file_client(kubeconfig: str, context: str | None) -> Any:
    """A client from the kubeconfig file(s) at `kubeconfig` (as KUBECONFIG lists them)."""
    from kubernetes import config

    named_as = f"the kubeconfig {kubeconfig}"
    _check_context(_contexts(kubeconfig, named_as), kubeconfig, context)
    load = lambda: config.new_client_from_config(config_file=kubeconfig, context=context)  # type: ignore[no-untyped-call]  # noqa: E731
    return _loaded(load, named_as)


def _loaded(load: Callable[[], Any], named_as: str) -> Any:
    """The client `load` makes, with what its user's credential plugin said if it failed meanwhile."""
    plugin = _PluginErrors()
    root = logging.getLogger()
    root.addHandler(plugin)  # also keeps Python's last-resort handler from printing it bare
    try:
        client = load()
    except _unreadable() as error:
        raise NoCluster(f"{named_as} is not usable: {one_line(str(error))}") from None
    finally:
        root.removeHandler(plugin)
    if plugin.said:
        detail = one_line(" ".join(plugin.said))
        if len(detail) > PLUGIN_DETAIL_LIMIT:
            detail = detail[: PLUGIN_DETAIL_LIMIT - 3] + "..."
        raise CredentialsFailed(
            f"the credential plugin of {named_as} (its user's `exec`) gave no credentials: {detail}. Run "
            "`kubectl get namespaces` with the same kubeconfig and context to see it fail, then log in again"
        )
    return client


class _PluginErrors(logging.Handler):
    """The errors the `kubernetes` client logs while it loads a kubeconfig (its kube_config module):
    only a credential plugin's failure is logged there rather than raised."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.said: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.pathname.replace("\\", "/").endswith("config/kube_config.py"):
            self.said.append(record.getMessage())


def _contexts(kubeconfig: str | dict[str, Any], named_as: str) -> list[str]:
    """The names of the kubeconfig's contexts (a path or the loaded text)."""
    from kubernetes import config

    try:
        if isinstance(kubeconfig, str):
            contexts, _ = config.list_kube_config_contexts(config_file=kubeconfig)  # type: ignore[no-untyped-call]
        else:
            contexts = kubeconfig.get("contexts") or []
        return [entry["name"] for entry in contexts or []]
    except _unreadable() as error:
        raise NoCluster(f"{named_as} is not usable: {one_line(str(error))}") from None


def _check_context(names: list[str], named_as: str, context: str | None) -> None:
    if context is not None and context not in names:
        known = ", ".join(names) if names else "none"
        raise NoCluster(f"kubeconfig context {context!r} does not exist in {named_as}; its contexts: {known}")


def _unreadable() -> tuple[type[Exception], ...]:
    """What the client raises for a kubeconfig it cannot use: its own complaint, YAML that does not
    parse, or YAML that is not a kubeconfig's mapping."""
    import yaml
    from kubernetes import config

    return (config.ConfigException, yaml.YAMLError, TypeError, AttributeError, KeyError)
