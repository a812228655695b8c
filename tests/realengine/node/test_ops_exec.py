"""`minicluster exec` as a user runs it, against a stack on the real node (containerd's exec through the
API server): what it reads from a pipe with -i is the command's input, and Ctrl-C ends the tool, not the
command, which the tool says."""

from __future__ import annotations

import secrets
import signal
import subprocess
from collections.abc import Callable

import pytest

from tests.harness import example
from tests.kubelet.pod import wait_until
from tests.realengine.node.stacks import StackOnRealNode


@pytest.fixture(scope="module")
def interactive(module_stack_on_real_node: Callable[..., StackOnRealNode]) -> StackOnRealNode:
    cluster = module_stack_on_real_node("interactive", **example("interactive"))
    cluster.stack.up()
    return cluster


def minicluster_exec(cluster: StackOnRealNode, *argv: str) -> list[str]:
    return ["venv/bin/minicluster", "exec", "--stack", cluster.stack.name, *argv]


def test_exec_with_stdin_runs_a_script_piped_to_it(interactive: StackOnRealNode) -> None:
    script = b'echo "from the pipe on $(hostname)"\nexit 4\n'
    done = subprocess.run(
        minicluster_exec(interactive, "-i", "--", "bash"), input=script, capture_output=True,
        cwd=interactive.stack.project, env=interactive.stack.env, timeout=120,
    )  # fmt: skip
    assert (done.stdout, done.returncode) == (b"from the pipe on interactive-0\n", 1), done.stderr
    assert b"the command exited with status 4" in done.stderr


def test_ctrl_c_ends_exec_and_says_that_the_command_goes_on(interactive: StackOnRealNode) -> None:
    go, result = (f"/tmp/{word}-{secrets.token_hex(4)}" for word in ("go", "result"))
    script = f"echo started; while [ ! -e {go} ]; do sleep 0.1; done; echo went-on > {result}"
    tool = subprocess.Popen(
        minicluster_exec(interactive, "--", "sh", "-c", script), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        cwd=interactive.stack.project, env=interactive.stack.env,
    )  # fmt: skip
    assert tool.stdout is not None and tool.stdout.readline() == b"started\n"
    tool.send_signal(signal.SIGINT)
    out, err = tool.communicate(timeout=60)
    assert (tool.returncode, out) == (130, b"")
    pod = interactive.pod_name(0)
    said = f"interrupted: the command goes on in {pod} (an exec's end does not stop it, as with kubectl)\n"
    assert err.decode() == said
    interactive.exec(0, "touch", go)
    went_on = lambda: interactive.exec(0, "sh", "-c", f"cat {result} 2>/dev/null || :") == "went-on\n"  # noqa: E731
    wait_until(went_on, "the interrupted command to go on to its end", 60, poll=0.2)
