"""The README stays true: its test command is the one CI runs, its config reference is the model's."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness import ROOT
from tests.readme_commands import README, setup_commands

REFERENCE = (ROOT / "docs" / "configuration.md").read_text()


def test_readme_has_exactly_two_set_up_commands_one_for_the_stack_and_one_for_the_tests() -> None:
    run_stack, run_tests = setup_commands()
    assert "pulumi up --yes --stack dev" in run_stack
    assert 'PULUMI_BACKEND_URL="file://$PWD/.pulumi-state"' in run_stack
    assert run_tests.endswith("venv/bin/python -m pytest")


def test_ci_runs_the_readme_test_command() -> None:
    _, run_tests = setup_commands()
    assert run_tests in (ROOT / ".ci" / "run").read_text().splitlines()


def test_configuration_reference_is_generated_from_the_model() -> None:
    generated = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "config_reference.py")], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert generated in REFERENCE, "run: venv/bin/python scripts/config_reference.py --write"
    assert "| `minicluster:size` | int | `1` |" in generated


@pytest.mark.parametrize(
    "key",
    ["stateVolume.claimName", "stateVolume.accessMode", "stateVolume.hostPath", "stateVolume.checkpointPeriod",
     "volumes.<name>.emptyDir.medium", "volumes.<name>.emptyDir.sizeLimit"],
)  # fmt: skip
def test_the_reference_lists_the_keys_of_optional_objects_too(key: str) -> None:
    assert f"| `minicluster:{key}` |" in REFERENCE


def test_the_first_command_keeps_secrets_under_a_random_passphrase_made_once(tmp_path: Path) -> None:
    """The README's own command under bash; only python3's venv, pip and pulumi are stand-ins."""
    run_stack, _ = setup_commands()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    recorder(bin_dir / "pulumi", tmp_path / "pulumi.log")
    fake_python(bin_dir / "python3")
    project = tmp_path / "project"
    project.mkdir()
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path), "PULUMI_CONFIG_PASSPHRASE": ""}

    for _ in range(2):
        subprocess.run(["bash", "-c", run_stack], cwd=project, env=env, check=True)

    passphrase = project / ".pulumi-passphrase"
    assert stat.S_IMODE(passphrase.stat().st_mode) == 0o600
    assert len(passphrase.read_text().strip()) >= 40  # 32 random bytes
    calls = (tmp_path / "pulumi.log").read_text().splitlines()
    assert [call.split("|")[0] for call in calls] == ["stack select --create dev", "up --yes --stack dev"] * 2
    for call in calls:
        _, backend, passphrase_set, passphrase_file = call.split("|")
        assert backend == f"file://{project}/.pulumi-state"
        assert passphrase_set == "unset"  # an empty PULUMI_CONFIG_PASSPHRASE would win over the file
        assert passphrase_file == f"{project}/.pulumi-passphrase"
    first = passphrase.read_text()
    subprocess.run(["bash", "-c", run_stack], cwd=project, env=env, check=True)
    assert passphrase.read_text() == first  # made once


def test_git_ignores_the_passphrase_and_the_state() -> None:
    ignored = (ROOT / ".gitignore").read_text().splitlines()
    assert {".pulumi-passphrase", ".pulumi-state/"} <= set(ignored)


def recorder(path: Path, log: Path) -> None:
    path.write_text(
        "#!/bin/bash\n"
        f'printf "%s|%s|%s|%s\\n" "$*" "$PULUMI_BACKEND_URL" "${{PULUMI_CONFIG_PASSPHRASE-unset}}" '
        f'"$PULUMI_CONFIG_PASSPHRASE_FILE" >>{log}\n'
    )
    path.chmod(0o755)


def fake_python(path: Path) -> None:
    """`python3 -m venv venv` makes a venv whose pip and uv do nothing; anything else is the real Python."""
    path.write_text(
        "#!/bin/bash\n"
        'if [ "$1 $2" = "-m venv" ]; then mkdir -p "$3/bin" && for tool in pip uv; do printf "#!/bin/sh\\n" '
        '>"$3/bin/$tool" && chmod +x "$3/bin/$tool"; done; exit 0; fi\n'
        f'exec {sys.executable} "$@"\n'
    )
    path.chmod(0o755)


def test_the_supported_versions_table_names_what_is_pinned() -> None:
    pins = dict(line.split("==", 1) for line in (ROOT / "constraints.txt").read_text().splitlines() if "==" in line)
    table = README.split("### Supported versions", 1)[1].split("###", 1)[0]
    for package, pin in (("pulumi (SDK)", "pulumi"), ("pulumi-kubernetes", "pulumi_kubernetes"),
                         ("kubernetes (Python client)", "kubernetes"), ("pydantic", "pydantic")):  # fmt: skip
        assert f"| {package} | {pins[pin]} |" in table


def test_without_the_pulumi_cli_the_first_command_stops_before_it_installs_anything(tmp_path: Path) -> None:
    run_stack, _ = setup_commands()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake_python(bin_dir / "python3")
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path)}  # no pulumi anywhere on it
    result = subprocess.run(["/bin/bash", "-c", run_stack], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert result.returncode != 0
    assert result.stderr == "first install the Pulumi CLI: https://www.pulumi.com/docs/install/\n"
    assert not (tmp_path / "venv").exists() and not (tmp_path / ".pulumi-passphrase").exists()


def test_the_readme_is_short_and_every_page_it_moved_is_linked_from_it() -> None:
    assert len(README.splitlines()) <= 250
    for page in (ROOT / "docs").glob("*.md"):
        assert f"(docs/{page.name})" in README, f"{page.name} is not reachable from the README"
