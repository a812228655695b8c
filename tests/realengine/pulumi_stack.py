"""A stack of this project under the real Pulumi engine (tests/engines/pulumi.sh built it): the CLI,
the Python language host and the Kubernetes resource plugin, against the real control plane.

The project is this checkout's, seen from a folder of the test's own: Pulumi.yaml, __main__.py and the
package are links to it, the stack's config file and the state (a local file backend, its secrets
under a passphrase) are the test's. The CLI finds its plugins on PATH and downloads nothing; the
program and its dynamic providers run on the venv's Python (the language host of versions.py takes
the interpreter from PATH, not from Pulumi.yaml's virtualenv option, which it predates).
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client

from flux_minicluster.config.loader import load_spec
from tests.engines.control_plane import ControlPlane
from tests.engines.versions import PROVIDER_BIN, PULUMI_BIN, not_built
from tests.harness import ROOT
from tests.kubelet.node import Node, selecting
from tests.kubelet.pods import Kubelet
from tests.realengine.on_node import NodeCluster

HOSTNAME_LABEL = "kubernetes.io/hostname"
PROJECT_FILES = ("Pulumi.yaml", "__main__.py", "flux_minicluster", "requirements.txt")
UP_TIMEOUT = 300
"""Seconds any one command may take: a `pulumi up` that hangs fails its test instead of CI."""


def missing() -> str | None:
    """Why the Pulumi engine cannot run here, if it cannot."""
    wanted = [PULUMI_BIN / "pulumi", PULUMI_BIN / "pulumi-language-python", PULUMI_BIN / "pulumi-language-yaml",
              PROVIDER_BIN / "pulumi-resource-kubernetes"]  # fmt: skip
    return not_built("the real Pulumi engine", wanted)


def example_program(example: str, resource: str, properties: dict[str, Any]) -> str:
    """examples/<example>/Pulumi.yaml as a user copies it, with the MiniCluster `resource`'s properties
    `properties` (the example's own, and the test's namespace and node) and its package where it is."""
    program = packages_in_place(_example(example), example)
    program["resources"][resource]["properties"] = properties
    return yaml.safe_dump(program)


def packages_in_place(program: dict[str, Any], example: str) -> dict[str, Any]:
    """An example's Pulumi.yaml (`program`) with the packages it names by paths relative to
    examples/<example> named where they are, so that it runs from a copy anywhere."""
    folder = ROOT / "examples" / example
    packages = {name: str((folder / path).resolve()) for name, path in program["packages"].items()}
    return {**program, "packages": packages}


def example_properties(example: str, resource: str) -> dict[str, Any]:
    properties: dict[str, Any] = _example(example)["resources"][resource]["properties"]
    return properties


def _example(example: str) -> dict[str, Any]:
    program: dict[str, Any] = yaml.safe_load((ROOT / "examples" / example / "Pulumi.yaml").read_text())
    return program


def encrypted(value: Any) -> bool:
    """Whether a stack file's value holds a secret (`secure:`, at any depth)."""
    if isinstance(value, dict):
        return "secure" in value or any(encrypted(item) for item in value.values())
    return isinstance(value, list) and any(encrypted(item) for item in value)


class Stack:
    """Stack `name` of the project, with the config `config` (keys without `minicluster:`; `kubernetes`
    keys as they are), deployed to the cluster of `plane`."""

    def __init__(
        self, plane: ControlPlane, directory: Path, name: str, config: dict[str, Any], program: str | None = None,
        project: Path | None = None,
    ) -> None:  # fmt: skip
        """`program`: the text of another project's Pulumi.yaml (an example's) instead of this project.
        `project`: another project's folder as it is (a TypeScript or Go example's)."""
        self.name, self.directory = name, directory
        self.project = project or directory / "project"
        self.state = directory / "state"
        for folder in (self.project, self.state, directory / "home"):
            folder.mkdir(parents=True, exist_ok=True)
        if project is not None:
            pass
        elif program is None:
            for file in PROJECT_FILES:
                (self.project / file).symlink_to(ROOT / file)
            (self.project / "venv").symlink_to(Path(sys.prefix))
        else:
            (self.project / "Pulumi.yaml").write_text(program)
        self.passphrase = secrets.token_urlsafe(16)
        self.env = {
            **os.environ,
            "PATH": os.pathsep.join([str(Path(sys.prefix) / "bin"), str(PULUMI_BIN), str(PROVIDER_BIN),
                                     os.environ.get("PATH", "")]),
            "PULUMI_HOME": str(directory / "home"), "PULUMI_BACKEND_URL": f"file://{self.state}",
            "PULUMI_CONFIG_PASSPHRASE": self.passphrase, "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true", "KUBECONFIG": str(plane.kubeconfig),
        }  # fmt: skip
        self.pulumi("stack", "init", name, stack=False)
        self.configure(config)

    def configure(self, config: dict[str, Any]) -> None:
        """The stack file, as a user writes it, keeping what `pulumi` put there (the passphrase's salt,
        the keys set with set_secret): a key set to None is left out (Pulumi reads a key without a
        value as "")."""
        self.config = dict(config)
        file = self.project / f"Pulumi.{self.name}.yaml"
        kept = (yaml.safe_load(file.read_text()) if file.exists() else None) or {}
        secret = {key: value for key, value in (kept.get("config") or {}).items() if encrypted(value)}
        keys = {
            key if ":" in key else f"minicluster:{key}": value for key, value in config.items() if value is not None
        }
        file.write_text(yaml.safe_dump({**kept, "config": {**keys, **secret}}))

    def set_secret(self, key: str, value: str) -> None:
        """`pulumi config set --secret --path KEY VALUE`: KEY may name a value inside a map."""
        self.pulumi("config", "set", "--secret", "--path", key, value)

    def pulumi(self, *args: str, stack: bool = True, check: bool = True) -> subprocess.CompletedProcess[str]:
        argv = ["pulumi", *args, *(["--stack", self.name] if stack else []), "--non-interactive"]
        done = subprocess.run(
            argv, cwd=self.project, env=self.env, capture_output=True, text=True, timeout=UP_TIMEOUT, check=False
        )
        if check and done.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
        return done

    def ops(self, *args: str) -> str:
        """What the ops tool prints (`minicluster ARGS --stack NAME`), run where a user runs it."""
        argv = ["venv/bin/minicluster", *args, "--stack", self.name]
        done = subprocess.run(argv, cwd=self.project, env=self.env, capture_output=True, text=True, timeout=UP_TIMEOUT)
        if done.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
        return done.stdout

    def up(self, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.pulumi("up", "--yes", "--skip-preview", check=check)

    def preview(self) -> subprocess.CompletedProcess[str]:
        return self.pulumi("preview", "--diff")

    def preview_steps(self) -> dict[str, dict[str, Any]]:
        """What `pulumi preview` says it would do, by resource name: each step as `--json` tells it (its
        `op`, and the resource's `oldState` and `newState`)."""
        steps = json.loads(self.pulumi("preview", "--json").stdout)["steps"]
        return {step["urn"].rsplit("::", 1)[1]: step for step in steps}

    def destroy(self) -> subprocess.CompletedProcess[str]:
        return self.pulumi("destroy", "--yes", "--skip-preview")

    def outputs(self) -> dict[str, Any]:
        """The stack's outputs, secrets as Pulumi shows them to whoever asks without --show-secrets."""
        found: dict[str, Any] = json.loads(self.pulumi("stack", "output", "--json").stdout)
        return found

    def state_text(self) -> str:
        """Every file of the backend, as one text: what anyone who can read the state's folder sees."""
        return "\n".join(path.read_text(errors="replace") for path in self.state.rglob("*") if path.is_file())

    def resource_types(self) -> list[str]:
        """The types of the resources the state holds, as `pulumi stack export` tells them."""
        return exported_types(self.pulumi("stack", "export").stdout)


class StackOnNode(NodeCluster):
    """A stack whose MiniCluster's pods run on a Node of the test's own (tests/kubelet/node.py) with real
    Flux: the config's pods select it (`pinned`: by its hostname label too, as a stack pins its pods to
    one node). The Node is there before `pulumi up` (the program's admission check reads the nodes), and
    runs the objects Pulumi created once the Job's first pod is bound."""

    def __init__(
        self, admin: client.ApiClient, plane: ControlPlane, namespace: str, tmp: Path, name: str,
        config: dict[str, Any], pinned: bool = False, example: str | None = None,
    ) -> None:  # fmt: skip
        """`example`: the stack is that example's program (examples/<example>), its MiniCluster's
        properties set to `config` instead of a stack file's keys; `name` is then its resource name."""
        node = f"node-{secrets.token_hex(4)}"
        placed = selecting(namespace)
        placed["nodeSelector"].update({HOSTNAME_LABEL: node} if pinned else {})
        config = {**config, "namespace": namespace, "pod": {**config.pop("pod", {}), **placed}}
        spec = load_spec({f"minicluster:{key}": value for key, value in config.items()}, name)
        self.kubelet = Kubelet(tmp / "cluster", spec, objects=[])
        self.namespace, self.admin = namespace, admin
        self.node = Node(self.kubelet, plane, admin, label=namespace, name=node)
        if example is None:
            self.stack = Stack(plane, tmp / "stack", name, config)
        else:
            self.stack = Stack(plane, tmp / "stack", name, {}, program=example_program(example, name, config))

    def left(self) -> dict[str, list[str]]:
        """What is left in the namespace, kind by kind, besides what Kubernetes puts in every namespace."""
        return left_in(self.admin, self.namespace)


def exported_types(exported: str) -> list[str]:
    """The types of the resources a state holds, from what `pulumi stack export` printed."""
    return [resource["type"] for resource in json.loads(exported)["deployment"].get("resources") or []]


def left_in(admin: client.ApiClient, namespace: str) -> dict[str, list[str]]:
    """What is left in `namespace`, kind by kind, besides what Kubernetes puts in every namespace."""
    core, batch, rbac, apps = (
        client.CoreV1Api(admin),
        client.BatchV1Api(admin),
        client.RbacAuthorizationV1Api(admin),
        client.AppsV1Api(admin),
    )
    listings: dict[str, Any] = {
        "jobs": batch.list_namespaced_job, "pods": core.list_namespaced_pod,
        "configmaps": core.list_namespaced_config_map, "secrets": core.list_namespaced_secret,
        "services": core.list_namespaced_service, "serviceaccounts": core.list_namespaced_service_account,
        "roles": rbac.list_namespaced_role, "rolebindings": rbac.list_namespaced_role_binding,
        "deployments": apps.list_namespaced_deployment, "replicasets": apps.list_namespaced_replica_set,
    }  # fmt: skip
    everywhere = {"kube-root-ca.crt", "default"}
    found = {kind: [obj.metadata.name for obj in listing(namespace).items] for kind, listing in listings.items()}
    return {
        kind: [name for name in names if name not in everywhere]
        for kind, names in found.items()
        if set(names) - everywhere
    }
