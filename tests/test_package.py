"""`pip install .` (issue 22): a wheel with the package, the pods' scripts and the `minicluster` command,
installed away from this checkout and used from another Pulumi project."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.harness import ROOT


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out, source = tmp_path_factory.mktemp("wheel"), tmp_path_factory.mktemp("source")
    # From a copy of what the build reads (it writes build/ and egg-info beside it); no build isolation:
    # the venv's setuptools builds it, with no download.
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source)
    shutil.copytree(
        ROOT / "flux_minicluster", source / "flux_minicluster", ignore=shutil.ignore_patterns("__pycache__")
    )
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", str(out),
                    str(source)], check=True, capture_output=True)  # fmt: skip
    (built,) = out.glob("flux_minicluster-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), str(wheel)],
                   check=True, capture_output=True)  # fmt: skip
    return target


def test_the_wheel_holds_the_package_the_pods_scripts_and_the_command(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert "flux_minicluster/pod_scripts/entrypoint.sh" in names
    assert "flux_minicluster/ops/cli.py" in names
    assert not [name for name in names if name.startswith(("components/", "tests/", "scripts/"))]
    (entry_points,) = [name for name in names if name.endswith("entry_points.txt")]
    assert "minicluster = flux_minicluster.ops.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def run_elsewhere(installed: Path, project: Path, *command: str) -> subprocess.CompletedProcess[str]:
    """In another project's folder, with the installed package first on the path (not this checkout)."""
    env = {**os.environ, "PYTHONPATH": str(installed)}
    return subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=60)


def test_another_pulumi_program_imports_the_component(installed: Path, tmp_path: Path) -> None:
    code = ("import flux_minicluster; from flux_minicluster import MiniCluster, MiniClusterArgs, load_spec; "
            "print(flux_minicluster.__file__); print(MiniCluster.__mro__[1].__module__)")  # fmt: skip
    done = run_elsewhere(installed, tmp_path, sys.executable, "-c", code)
    assert done.returncode == 0, done.stderr
    where, base = done.stdout.splitlines()
    assert Path(where).is_relative_to(installed)
    assert base == "pulumi.resource"


def test_the_command_reads_the_stack_of_the_project_it_runs_in(installed: Path, tmp_path: Path) -> None:
    project = tmp_path / "hpc"
    (project / "deep").mkdir(parents=True)
    shutil.copy(ROOT / "Pulumi.yaml", project)
    shutil.copy(ROOT / "Pulumi.dev.yaml", project / "Pulumi.lab.yaml")
    missing = run_elsewhere(
        installed, project / "deep", str(installed / "bin" / "minicluster"), "status", "--stack", "x"
    )
    assert missing.returncode == 2
    assert missing.stderr.startswith(f"error: no stack file {project / 'Pulumi.x.yaml'} (the stacks here: lab;")
    found = run_elsewhere(
        installed, project / "deep", str(installed / "bin" / "minicluster"), "status", "--stack", "lab"
    )
    assert found.returncode == 2  # it read the stack, and stops at the cluster: the tests have no kubeconfig
    assert "kubeconfig" in found.stderr and found.stderr.count("\n") == 1
