"""An example of another language, copied with the SDK `pulumi package add` would generate for it: made
from the package's schema by Pulumi's own generator (tests/engines/sdkgen), in `sdks/minicluster`."""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml

from flux_minicluster.provider.schema import package_schema
from tests.engines.versions import ENGINES, PULUMI_NODE_SDK, SDKGEN_BIN, not_built
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


def typescript_example(folder: Path) -> Path:
    """examples/typescript with its SDK in `folder`, its packages installed from the npm registry
    (node_modules, a link to an install kept with the engines: npm_installed). @pulumi/pulumi is its last
    release that runs on this machine's Node.js 20 (versions.py), the one npm picks there for the
    example's own range too; the SDK is linked as `pulumi package add` links it."""
    required(None if shutil.which("npm") else "npm is not installed")
    example_with_sdk("typescript", "nodejs", folder)
    manifest = json.loads((folder / "package.json").read_text())
    manifest["dependencies"] |= {
        "@flux-minicluster/minicluster": "file:sdks/minicluster",
        "@pulumi/pulumi": PULUMI_NODE_SDK,
    }
    (folder / "package.json").write_text(json.dumps(manifest, indent=2))
    installed = npm_installed(folder)
    shutil.copy2(installed / "package-lock.json", folder)  # what npm installed, as a user's project has it
    (folder / "node_modules").symlink_to(installed / "node_modules")
    return folder


NPM_INSTALLS = ENGINES / "npm-installs"
"""Installs of the examples' packages, one folder a key (npm_installed)."""


def npm_installed(project: Path) -> Path:
    """`project` with its packages installed, from NPM_INSTALLS, or installed there first. Its key is all
    that npm's result depends on: package.json, the files of the SDKs it links (sdks/), Node.js's and
    npm's versions. The install took 15 to 40 s in each run, 25 s of CPU; a run whose key is kept takes
    none. npm links a local SDK relatively (node_modules/@scope/name -> ../../sdks/name), so the kept
    folder holds the SDK too, and a test's folder links to its node_modules."""
    digest = hashlib.sha256(_node_and_npm().encode())
    for path in [project / "package.json", *sorted((project / "sdks").rglob("*"))]:
        if path.is_file():
            digest.update(f"{path.relative_to(project)}\0".encode() + path.read_bytes() + b"\0")
    installed = NPM_INSTALLS / digest.hexdigest()[:16]
    NPM_INSTALLS.mkdir(parents=True, exist_ok=True)
    with _locked(installed.with_name(f"{installed.name}.lock")):  # workers, and runs side by side
        if not installed.exists():
            made = installed.with_name(f"{installed.name}.partial")
            shutil.rmtree(made, ignore_errors=True)
            shutil.copytree(project, made, ignore=shutil.ignore_patterns("node_modules"))
            # Packages the npm cache holds are taken from it without asking the registry again: 8 s
            # instead of 18 here, where the registry's answers carry nothing that lets npm trust its cache.
            run(["npm", "install", "--no-audit", "--no-fund", "--prefer-offline"], made)
            made.rename(installed)  # whole or not at all: a run stopped mid-install leaves only .partial
            _forget_all_but_the_newest(KEPT_INSTALLS, installed)
        os.utime(installed)  # used now: what _forget_all_but_the_newest goes by
    return installed


KEPT_INSTALLS = 4
"""Each install is 130 MB, and each change to the package's schema makes a new SDK, so a new key."""


def _forget_all_but_the_newest(kept: int, new: Path) -> None:
    """The installs beyond the `kept` used last go, but not `new`, nor one whose lock a run holds now."""
    others = [path for path in NPM_INSTALLS.iterdir() if path.is_dir() and "." not in path.name and path != new]
    for old in sorted(others, key=lambda path: path.stat().st_mtime, reverse=True)[kept - 1 :]:
        with old.with_name(f"{old.name}.lock").open("w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            shutil.rmtree(old, ignore_errors=True)


@functools.cache
def _node_and_npm() -> str:
    """Node.js's and npm's versions, as they print them."""
    return "".join(run([tool, "--version"], ROOT).stdout for tool in ("node", "npm"))


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


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
