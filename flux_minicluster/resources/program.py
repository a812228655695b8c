"""What runs before a MiniCluster is declared, in the stack program (__main__.py) and in the component
package's provider alike: the config validated, the objects' sizes checked, the cluster's admission
asked. Any refusal stops here, so nothing is created."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import pulumi

from flux_minicluster.builders import object_limits
from flux_minicluster.cluster import admission, kube
from flux_minicluster.config.loader import ConfigError, load_spec
from flux_minicluster.config.notices import config_warnings
from flux_minicluster.config.spec import MiniClusterSpec
from flux_minicluster.resources.kube_object import this_stack


def checked_spec(
    raw: Mapping[str, Any], default_name: str, secret_keys: Collection[str], access: kube.Access
) -> MiniClusterSpec:
    """The spec from raw `minicluster:*` config, or pulumi.RunError with every problem, each by key."""
    try:
        spec = load_spec(raw, default_name, secret_keys)
        object_limits.check(spec)
    except ConfigError as error:
        raise pulumi.RunError(str(error)) from None
    for said in config_warnings(raw, spec):
        pulumi.log.warn(said)
    verdict = admission.check(spec, access, this_stack(), preview=pulumi.runtime.is_dry_run())
    for warning in verdict.warnings:
        pulumi.log.warn(warning)
    if verdict.refused:
        raise pulumi.RunError(verdict.refused)
    return spec


def stack_access() -> kube.Access:
    """The cluster the stack's default Kubernetes provider is given: its `kubernetes:context` and
    `kubernetes:kubeconfig` settings (a secret one too: the provider takes it so)."""
    config = stack_config()
    not_rendered(f"kubernetes:{RENDERING}", config.get(f"kubernetes:{RENDERING}"))
    return kube.Access(config.get("kubernetes:context"), config.get("kubernetes:kubeconfig"))


RENDERING = "renderYamlToDirectory"
"""The Kubernetes provider's setting that writes each object to a file instead of creating it."""


def not_rendered(setting: str, directory: Any) -> None:
    """Refuses a Kubernetes provider that renders YAML (`setting` names where it is set). It would make
    none of the objects, while the MiniCluster itself talks to the cluster: the keygen pod ran there, and
    the scheduling guard waited for a Job that never came, then failed as if its create had."""
    if directory:
        raise pulumi.RunError(
            f"{setting} is set ({directory}): the Kubernetes provider would write the MiniCluster's objects to files "
            "and create none, while the MiniCluster itself works in the cluster (the keygen pod, the admission "
            "check, the waits for its pods). Render its objects with this project's scripts/render.py (`--stack "
            f"{pulumi.get_stack()}`) instead, or unset {setting} to deploy it. Nothing was created."
        )


def stack_config() -> dict[str, Any]:
    """Every config value of the running stack, as the engine hands it to the program."""
    from pulumi.runtime import config

    return {**config.get_config_env(), **config.CONFIG.get()}


def stack_secret_keys() -> set[str]:
    """The config keys the stack marks secret: the engine lists them in PULUMI_CONFIG_SECRET_KEYS (a
    nested secret, set with --path, marks its whole top-level key), and set_all_config records them."""
    from pulumi.runtime import config

    listed = set(config.get_config_secret_keys_env())
    return listed | {key for key in stack_config() if config.is_config_secret(key)}
