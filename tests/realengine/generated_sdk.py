"""An example of another language, copied with the SDK `pulumi package add` would generate for it: made
from the package's schema by Pulumi's own generator (tests/engines/sdkgen), in `sdks/minicluster`."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import yaml

from flux_minicluster.provider.schema import package_schema
from tests.engines.versions import SDKGEN_BIN, not_built
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
