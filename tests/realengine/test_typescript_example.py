"""examples/typescript against the SDK a TypeScript program gets from `pulumi package add`: made from the
package's schema by Pulumi's own generator (tests/engines/sdkgen: the Node.js language host that runs it
for `pulumi package add` cannot be built here, docs/development.md), linked into the example as `package
add` links it, installed from the npm registry, and compiled by TypeScript. The program itself does not
run here, for want of that host."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from flux_minicluster.provider.schema import package_schema
from tests.engines.versions import SDKGEN_BIN, not_built
from tests.harness import ROOT
from tests.realengine.conftest import required

EXAMPLE = ROOT / "examples" / "typescript"
SDK = "@flux-minicluster/minicluster"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    required(not_built("the TypeScript SDK generator", [SDKGEN_BIN / "sdkgen"]) or _no_npm())
    folder = tmp_path_factory.mktemp("typescript")
    shutil.copytree(EXAMPLE, folder, dirs_exist_ok=True)
    run([str(SDKGEN_BIN / "sdkgen"), "sdks/minicluster"], folder, stdin=json.dumps(package_schema()))
    manifest = json.loads((folder / "package.json").read_text())
    manifest["dependencies"][SDK] = "file:sdks/minicluster"  # as `pulumi package add` links it
    (folder / "package.json").write_text(json.dumps(manifest, indent=2))
    run(["npm", "install", "--no-audit", "--no-fund"], folder)
    return folder


def _no_npm() -> str | None:
    return None if shutil.which("npm") else "npm is not installed"


def run(argv: list[str], cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, cwd=cwd, input=stdin, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, f"{' '.join(argv)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


def compile_errors(project: Path, program: str) -> str:
    (project / "index.ts").write_text(program)
    done = subprocess.run(["npx", "tsc", "--noEmit", "-p", "."], cwd=project, capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    return done.stdout + done.stderr


def test_the_example_compiles_against_the_generated_sdk(project: Path) -> None:
    assert compile_errors(project, (EXAMPLE / "index.ts").read_text()) == ""


def test_a_value_of_the_wrong_type_does_not_compile(project: Path) -> None:
    program = (EXAMPLE / "index.ts").read_text().replace("size: 4,", 'size: "4",')
    assert "index.ts(7,5): error TS2322: Type 'string' is not assignable to type 'Input<number" in compile_errors(
        project, program
    )


def test_a_mode_outside_the_enum_does_not_compile(project: Path) -> None:
    program = (EXAMPLE / "index.ts").read_text().replace('command: "hostname",', 'command: "hostname", mode: "sumbit",')
    assert "'\"sumbit\"' is not assignable" in compile_errors(project, program)


def test_the_sdk_is_what_the_readme_says(project: Path) -> None:
    generated = (project / "sdks" / "minicluster" / "miniCluster.ts").read_text()
    inputs = (project / "sdks" / "minicluster" / "types" / "input.ts").read_text()
    assert (
        "export interface MiniClusterArgs" in generated
        and "containers?: pulumi.Input<pulumi.Input<inputs.SidecarArgs>[]" in generated
    )
    assert "export interface SidecarArgs" in inputs
    assert "export const Mode = {" in (project / "sdks" / "minicluster" / "types" / "enums" / "index.ts").read_text()
