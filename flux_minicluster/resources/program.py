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
    return kube.Access(config.get("kubernetes:context"), config.get("kubernetes:kubeconfig"))


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
