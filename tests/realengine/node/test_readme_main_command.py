"""The README's first set-up command, as a user runs it, in a fresh copy of the project, against the CI
cluster: real Pulumi, the real control plane, and the dev stack's four brokers in real containers on the
real node, in the image the stack file names. Then the README's next steps (`minicluster wait`, `logs`,
`status`) and `pulumi destroy`, which leaves nothing behind, in the namespace or in the state."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from kubernetes import client

from tests.engines.control_plane import ControlPlane
from tests.engines.versions import PROVIDER_BIN, PULUMI_BIN
from tests.harness import ROOT
from tests.readme_commands import setup_commands
from tests.realengine.conftest import required
from tests.realengine.node.conftest import NodeInfo
from tests.realengine.pulumi_stack import exported_types, left_in, missing

TIMEOUT = 600


def project_copy(destination: Path) -> Path:
    """The project's files as a fresh clone of this working tree has them (tracked, and new files git
    does not ignore), in a folder of the test's own."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout  # fmt: skip
    for name in filter(None, listed.decode().split("\0")):
        source = ROOT / name
        if source.is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)
    return destination


def run(command: list[str], project: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, f"{command} exited {done.returncode}:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done


def test_the_readme_first_command_runs_the_dev_stack_on_the_real_node_and_destroy_leaves_nothing(
    control_plane: ControlPlane, real_node: NodeInfo, admin: client.ApiClient, tmp_path: Path
) -> None:
    """One user's journey, one test: the stack is `dev` in the namespace `default`, as the README has it,
    so no other test may deploy it beside this one."""
    required(missing())
    project = project_copy(tmp_path / "minicluster")
    env = {
        **os.environ,
        "KUBECONFIG": str(control_plane.kubeconfig), "HOME": str(tmp_path / "home"),
        # The Python language host built here (versions.py) predates Pulumi.yaml's `virtualenv` option and
        # runs the python3 on PATH: the venv's, as the CLI's own bundled host would pick it.
        "PATH": os.pathsep.join([str(project / "venv" / "bin"), str(PULUMI_BIN), str(PROVIDER_BIN),
                                 os.environ.get("PATH", "")]),
        "PULUMI_SKIP_UPDATE_CHECK": "true", "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
    }  # fmt: skip
    for variable in ("PULUMI_CONFIG_PASSPHRASE", "VIRTUAL_ENV", "PULUMI_BACKEND_URL"):
        env.pop(variable, None)
    first, _ = setup_commands()
    done = subprocess.run(["bash", "-c", first], cwd=project, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    env |= {"PULUMI_BACKEND_URL": f"file://{project}/.pulumi-state",
            "PULUMI_CONFIG_PASSPHRASE_FILE": f"{project}/.pulumi-passphrase"}  # fmt: skip
    try:
        assert done.returncode == 0, f"it exited {done.returncode}:\n{done.stdout[-6000:]}\n{done.stderr[-3000:]}"
        assert 'jobName      : "dev"' in done.stdout
        ran_on_the_real_node(project, env, admin, real_node)
    finally:
        run(["pulumi", "destroy", "--yes", "--stack", "dev", "--non-interactive"], project, env)
    # Every kind a stack's test checks (pulumi_stack.left_in), less what the namespace `default` always holds
    assert left_in(admin, "default") == {"services": ["kubernetes"]}
    exported = run(["pulumi", "stack", "export", "--stack", "dev"], project, env).stdout
    assert exported_types(exported) == []  # nor the state


def ran_on_the_real_node(project: Path, env: dict[str, str], admin: client.ApiClient, node: NodeInfo) -> None:
    """The README's next steps say the job completed, and its pods ran in the stack file's image there."""
    waited = run(["venv/bin/minicluster", "wait", "--stack", "dev"], project, env)
    assert "the job completed" in waited.stdout + waited.stderr
    logs = run(["venv/bin/minicluster", "logs", "--stack", "dev"], project, env).stdout
    assert "rank 0 of 4 in dev-[0-3]" in logs and "exiting with status 0" in logs
    assert "4 Succeeded" in run(["venv/bin/minicluster", "status", "--stack", "dev"], project, env).stdout
    pods: list[Any] = client.CoreV1Api(admin).list_namespaced_pod("default", label_selector="job-name=dev").items
    assert sorted(pod.metadata.labels["batch.kubernetes.io/job-completion-index"] for pod in pods) == list("0123")
    assert {pod.spec.node_name for pod in pods} == {node.name}
    assert {pod.status.host_ip for pod in pods} == {node.address}
    statuses = [status for pod in pods for status in pod.status.container_statuses]
    assert {status.image for status in statuses} == {"ghcr.io/flux-framework/flux-restful-api:latest"}
    assert all(status.image_id.startswith("ghcr.io/flux-framework/flux-restful-api@sha256:") for status in statuses)
