"""examples/typescript against the SDK a TypeScript program gets from `pulumi package add`
(generated_sdk.py; the Node.js language host built here has no GeneratePackage for `package add` to
call, docs/development.md), linked into the example as `package add` links it, installed from the npm
registry, and compiled by TypeScript. The program runs for real in node/test_typescript_program.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness import ROOT
from tests.realengine.generated_sdk import errors, typescript_example

EXAMPLE = ROOT / "examples" / "typescript" / "index.ts"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The example in a folder of the test's own (its index.ts is the test's to change)."""
    return typescript_example(tmp_path / "typescript")


def compile_errors(project: Path, program: str) -> str:
    (project / "index.ts").write_text(program)
    return errors(["npx", "tsc", "--noEmit", "-p", "."], project)


def test_the_example_compiles_against_the_generated_sdk(project: Path) -> None:
    assert compile_errors(project, EXAMPLE.read_text()) == ""


def test_a_value_of_the_wrong_type_does_not_compile(project: Path) -> None:
    program = EXAMPLE.read_text().replace("size: 4,", 'size: "4",')
    assert "error TS2322: Type 'string' is not assignable to type 'Input<number" in compile_errors(project, program)


def test_a_mode_outside_the_enum_does_not_compile(project: Path) -> None:
    program = EXAMPLE.read_text().replace('command: "hostname",', 'command: "hostname", mode: "sumbit",')
    assert "'\"sumbit\"' is not assignable" in compile_errors(project, program)


def test_the_sdk_is_what_the_readme_says(project: Path) -> None:
    sdk = project / "sdks" / "minicluster"
    generated = (sdk / "miniCluster.ts").read_text()
    assert "export interface MiniClusterArgs" in generated
    assert "containers?: pulumi.Input<pulumi.Input<inputs.SidecarArgs>[]" in generated
    assert "export interface SidecarArgs" in (sdk / "types" / "input.ts").read_text()
    assert "export const Mode = {" in (sdk / "types" / "enums" / "index.ts").read_text()
