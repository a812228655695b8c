"""minicluster:command is split into words like a shell line, and outside batch mode no shell runs it:
what a shell would act on (a pipe, a list, a redirection, an expansion) is refused by the key, since the
command would take it as text. Quoted, escaped, inside a shell's own line, as a word of a YAML list or
in batch mode's shell lines it is taken as written."""

from __future__ import annotations

import json
from typing import Any

import pytest

from flux_minicluster.config.loader import load_spec
from flux_minicluster.config.spec import MiniClusterSpec
from tests.conftest import config
from tests.harness import refused_problems


def loaded(**overrides: Any) -> MiniClusterSpec:
    return load_spec({f"minicluster:{key}": value for key, value in config(**overrides).items()}, "dev")


@pytest.mark.parametrize(
    ("command", "syntax"),
    [("hostname && sleep 5", "&&"), ("lmp -in in.lj > out.log", ">"), ("flux resource list | head", "|"),
     ("hostname; sleep 5", ";"), ("make 2>&1", ">&"), ("train --out $OUTPUT_DIR", "$OUTPUT_DIR"),
     ("echo ${HOME}", "${"), ("echo $(date)", "$("), ("echo `date`", "`")],
)  # fmt: skip
def test_what_a_shell_would_act_on_is_refused_by_the_key(command: str, syntax: str) -> None:
    assert refused_problems(config(command=command)) == [
        f"minicluster:command: {syntax!r} is shell syntax, but no shell runs the command in mode 'submit': "
        "its words go to Flux as they are. Give the line to a shell: sh -c '...'"
    ]


def test_the_mode_that_runs_no_shell_is_named() -> None:
    (problem,) = refused_problems(config(command="app > out.log", mode="launcher"))
    assert "no shell runs the command in mode 'launcher'" in problem


@pytest.mark.parametrize(
    ("command", "expected"),
    [("echo 'a && b'", ["echo", "a && b"]), (r"echo a\|b", ["echo", "a|b"]), ('echo "x > y"', ["echo", "x > y"]),
     ("sh -c 'hostname > /tmp/h && sleep 1'", ["sh", "-c", "hostname > /tmp/h && sleep 1"]),
     ("sh -c \"echo $OUTPUT_DIR\"", ["sh", "-c", "echo $OUTPUT_DIR"]), ("echo 5$", ["echo", "5$"]),
     (json.dumps(["echo", "&&", "x"]), ["echo", "&&", "x"])],
)  # fmt: skip
def test_what_no_shell_would_act_on_is_a_word_as_written(command: str, expected: list[str]) -> None:
    assert loaded(command=command).command_args == expected


def test_batch_modes_lines_are_shell_lines_and_may_hold_shell_syntax() -> None:
    batch = loaded(command="hostname && sleep 5\nflux resource list | head", mode="batch")
    assert batch.command_lines == ["hostname && sleep 5", "flux resource list | head"]


def test_lines_outside_quotes_are_refused_since_no_shell_runs_them_one_by_one() -> None:
    """A YAML block of two commands: without a shell its words were one command (`echo one echo two`)."""
    assert refused_problems(config(command="echo one\necho two\n")) == [
        "minicluster:command is several lines, but no shell runs the command in mode 'submit': their words would "
        "go to Flux as one command. Give the lines to a shell (sh -c '...'), make each a job of its own (mode "
        "'batch'), or end each line but the last with a backslash if they are one command"
    ]


@pytest.mark.parametrize(
    ("command", "expected"),
    [("hostname\n", ["hostname"]), ("\n  hostname --fqdn\n\n", ["hostname", "--fqdn"]),
     ("sh -c 'echo one\necho two'\n", ["sh", "-c", "echo one\necho two"]),
     ("lmp -in in.lj \\\n  -var x 2\n", ["lmp", "-in", "in.lj", "-var", "x", "2"]),
     ('echo "a\\\nb"', ["echo", "ab"]), ("echo 'a\\\nb'", ["echo", "a\\\nb"]),
     (json.dumps(["python3", "-c", "import sys\nprint(sys.argv)"]), ["python3", "-c", "import sys\nprint(sys.argv)"])],
)  # fmt: skip
def test_a_command_over_several_lines_is_split_as_a_shell_reads_it(command: str, expected: list[str]) -> None:
    """A YAML block's last line break is no word; a backslash at a line's end joins the next line, but not
    inside single quotes; a line break inside quotes is part of its word."""
    assert loaded(command=command).command_args == expected


def test_batch_modes_lines_are_read_as_a_shell_reads_a_script() -> None:
    """A backslash at a line's end goes on to the next line, a quoted line break stays in its word (each
    was once a line of its own, and the batch script a syntax error), and a comment line is no command."""
    command = "sh -c 'echo a\necho b'\nlmp -in x \\\n  -var y 2\n# the last one\nhostname\n"
    assert loaded(command=command, mode="batch").command_lines == [
        "sh -c 'echo a\necho b'",
        "lmp -in x   -var y 2",
        "hostname",
    ]
