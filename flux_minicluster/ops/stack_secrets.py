"""A stack's encrypted `kubernetes:*` settings, for the ops tool: a kubeconfig holds credentials, so it is
set with `pulumi config set --secret`, and only pulumi can read it back. Without it the tool went to the
current context of KUBECONFIG, which may be another cluster altogether. It is read as a user reads it:
`pulumi config get`, in the project's folder, with this process's environment (the stack's passphrase or
secrets provider, its backend). The value stays in this process's memory."""

from __future__ import annotations

import subprocess
from pathlib import Path

from flux_minicluster.cluster.kube import NoCluster

READ_TIMEOUT = 60.0
"""Seconds for `pulumi config get`: a cloud secrets provider answers over the network."""


def decrypted(stack: str, key: str, project: Path) -> str:
    """The value of `key` in stack `stack`, as pulumi decrypts it; NoCluster, saying how to go on, if
    pulumi cannot."""
    argv = ["pulumi", "config", "get", key, "--stack", stack, "--non-interactive"]
    instead = f"or give this tool the same with --{key.removeprefix('kubernetes:')}"
    try:
        done = subprocess.run(argv, cwd=project, capture_output=True, text=True, timeout=READ_TIMEOUT, check=False)
    except FileNotFoundError:
        raise NoCluster(
            f"the stack's {key} is encrypted, which only pulumi can read, and pulumi is not on PATH: add it, {instead}"
        ) from None
    except subprocess.TimeoutExpired:
        raise NoCluster(f"the stack's {key} is encrypted, and `{' '.join(argv)}` did not answer: {instead}") from None
    if done.returncode != 0:
        said = next((line.strip() for line in reversed(done.stderr.splitlines()) if line.strip()), "no message")
        raise NoCluster(f"the stack's {key} is encrypted, and `{' '.join(argv)}` failed ({said}): {instead}")
    return done.stdout.removesuffix("\n")
