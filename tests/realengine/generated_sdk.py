"""An example of another language, copied with the SDK `pulumi package add` would generate for it: made
from the package's schema by Pulumi's own generator (tests/engines/sdkgen), in `sdks/minicluster`."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from flux_minicluster.provider.schema import package_schema
from tests.engines.versions import PULUMI_NODE_SDK, SDKGEN_BIN, not_built
from tests.harness import ROOT
from tests.realengine.conftest import required
from tests.realengine.pulumi_stack import packages_in_place


def example_with_sdk(example: str, language: str, folder: Path) -> Path:
    """examples/<example> in `folder`, its SDK beside it and its package named where it is (pulumi_stack.
    packages_in_place); skipped (in CI: failed) without the generator."""
    required(not_built("the SDK generator", [SDKGEN_BIN / "sdkgen"]))
    shutil.copytree(ROOT / "examples" / example, folder, dirs_exist_ok=True)
    run([str(SDKGEN_BIN / "sdkgen"), language, "sdks/minicluster"], folder, stdin=json.dumps(package_schema()))
    program = yaml.safe_load((folder / "Pulumi.yaml").read_text())
    (folder / "Pulumi.yaml").write_text(yaml.safe_dump(packages_in_place(program, example)))
    return folder


def typescript_example(tmp_path_factory: pytest.TempPathFactory, folder: Path) -> Path:
    """examples/typescript with its SDK in `folder`, its packages installed from the npm registry
    (node_modules, a link to one install that the whole run shares: 15 to 40 s each). @pulumi/pulumi is
    its last release that runs on this machine's Node.js 20 (versions.py), the one npm picks there for
    the example's own range too; the SDK is linked as `pulumi package add` links it."""
    required(None if shutil.which("npm") else "npm is not installed")
    installed = _shared(tmp_path_factory) / "typescript-example"
    with (installed.parent / "typescript-example.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # xdist's workers: the first installs, the others wait for it
        if not (installed / "node_modules" / ".installed").exists():
            shutil.rmtree(installed, ignore_errors=True)
            example_with_sdk("typescript", "nodejs", installed)
            manifest = json.loads((installed / "package.json").read_text())
            manifest["dependencies"] |= {
                "@flux-minicluster/minicluster": "file:sdks/minicluster",
                "@pulumi/pulumi": PULUMI_NODE_SDK,
            }
            (installed / "package.json").write_text(json.dumps(manifest, indent=2))
            # Packages the npm cache holds are taken from it without asking the registry again: 8 s
            # instead of 18 here, where the registry's answers carry nothing that lets npm trust its cache.
            run(["npm", "install", "--no-audit", "--no-fund", "--prefer-offline"], installed)
            (installed / "node_modules" / ".installed").touch()
    shutil.copytree(installed, folder, ignore=shutil.ignore_patterns("node_modules"), dirs_exist_ok=True)
    (folder / "node_modules").symlink_to(installed / "node_modules")
    return folder


def _shared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This run's temporary folder that all of xdist's workers share (each has its own below it)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def run(
    argv: list[str], cwd: Path, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, cwd=cwd, input=stdin, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, f"{' '.join(argv)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


def errors(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    """What a compiler said: nothing when the program compiled."""
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False)
    return done.stdout + done.stderr
