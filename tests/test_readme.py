"""The README stays true: its test command is the one CI runs, its config reference is the model's."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.harness import ROOT

README = (ROOT / "README.md").read_text()


def setup_commands() -> list[str]:
    section = README.split("## Set up", 1)[1].split("### Prerequisites", 1)[0]
    return re.findall(r"```bash\n(.*?)\n```", section, flags=re.DOTALL)


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
    assert generated in README, "run: venv/bin/python scripts/config_reference.py --write"
    assert "| `minicluster:size` | int | `1` |" in generated
