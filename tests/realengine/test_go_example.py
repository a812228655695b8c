"""examples/go against the SDK a Go program gets from `pulumi package add` (generated_sdk.py; the Go
language host built here cannot generate it, docs/development.md), put where `package add` puts
it and built by Go. The program runs for real in node/test_go_program.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.engines.versions import GO_TEST_BUILD
from tests.harness import ROOT
from tests.realengine.generated_sdk import errors, example_with_sdk, run

EXAMPLE = ROOT / "examples" / "go" / "main.go"
ENV = {**os.environ, **GO_TEST_BUILD}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = example_with_sdk("go", "go", tmp_path_factory.mktemp("go"))
    run(["go", "mod", "tidy"], folder, env=ENV)
    return folder


def build_errors(project: Path, program: str) -> str:
    (project / "main.go").write_text(program)
    return errors(["go", "build", "-o", os.devnull, "."], project, env=ENV)


def test_the_example_builds_against_the_generated_sdk(project: Path) -> None:
    assert build_errors(project, EXAMPLE.read_text()) == ""


def test_a_value_of_the_wrong_type_does_not_build(project: Path) -> None:
    program = EXAMPLE.read_text().replace("Size:    pulumi.Int(4),", 'Size:    pulumi.String("4"),')
    assert 'cannot use pulumi.String("4")' in build_errors(project, program)
