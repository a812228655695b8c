"""Rank 0's initial program (instance.sh) for batch, interactive and the RESTful API, and the RESTful
API's init container, under sh and bash with stand-ins for `flux`, `git` and `python3`.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from flux_minicluster.builders import manifests, pod_template
from flux_minicluster.builders.names import BROKER_CONTAINER
from flux_minicluster.config import paths
from tests.pod_scripts.test_entrypoint import broker_options, recorder
from tests.pods import Pods, Run

# -- batch and interactive --------------------------------------------------------------------------


def in_instance(pods: Pods, **env: str) -> Run:
    """instance.sh as flux start runs it on rank 0: with the entrypoint's rank and size."""
    (pods.tmp / "state-0").mkdir(exist_ok=True)  # made by rank 0's set-up before flux start runs this
    return pods.run(0, script="instance.sh", **{"MC_RANK": "0", "MC_SIZE": str(pods.spec.size), **env})


def test_batch_runs_one_flux_batch_whose_output_goes_to_the_pod_log(tmp_path: Path) -> None:
    pods = Pods(tmp_path, mode="batch", command="echo one\n\nhostname --fqdn\n", submitFlags=["-n", "2"])
    run = in_instance(pods, STANDIN_EXITS_JOB="3")
    assert run.subcommand("batch") == [["batch", "--output=kvs", "-N4", str(pods.run_dir / "batch.sh")]]
    assert run.subcommand("job") == [["job", "attach", "f2ZvLjeF"]]
    assert (pods.run_dir / "batch.sh").read_text() == (
        "#!/bin/bash\n"
        "ids=()\n"
        'ids+=("$(flux submit -n 2 echo one)")\n'
        'ids+=("$(flux submit -n 2 hostname --fqdn)")\n'
        "status=0\n"
        'for id in "${ids[@]}"; do flux job attach "$id" || status=1; done\n'
        'exit "$status"\n'
    )
    assert run.status == 3  # the batch job's status
    assert "minicluster[rank 0]: batch job f2ZvLjeF submitted" in run.stderr


def run_batch_script(pods: Pods, **env: str) -> tuple[subprocess.CompletedProcess[str], list[list[str]]]:
    """The batch job's script as the batch job runs it (bash), with the stand-in `flux`: its run, and
    the `flux` commands it ran."""
    state, log = pods.tmp / "batch-state", pods.tmp / "batch.jsonl"
    state.mkdir()
    batch = subprocess.run(
        ["bash", str(pods.run_dir / "batch.sh")], capture_output=True, text=True, check=False,
        env={"PATH": f"{pods.bin}:{os.environ['PATH']}", "STANDIN_LOG": str(log), "MC_STATE_DIR": str(state), **env},
    )  # fmt: skip
    return batch, [json.loads(line)["argv"] for line in log.read_text().splitlines()]


def test_the_batch_script_shows_every_jobs_output_in_order_and_fails_if_one_failed(tmp_path: Path) -> None:
    pods = Pods(tmp_path, mode="batch", command="echo one\nfalse\necho three\n")
    batch, calls = run_batch_script(pods, STANDIN_EXITS_JOB="0 7 0")
    assert batch.stdout == "output of job f1\noutput of job f2\noutput of job f3\n"
    assert batch.returncode == 1
    assert calls == [["submit", "echo", "one"], ["submit", "false"], ["submit", "echo", "three"],
                     ["job", "attach", "f1"], ["job", "attach", "f2"], ["job", "attach", "f3"]]  # fmt: skip


def test_the_batch_script_submits_a_command_over_several_lines_as_one(tmp_path: Path) -> None:
    """bash runs the script: a quoted line break and a backslash at a line's end each made it a syntax error."""
    pods = Pods(tmp_path, mode="batch", command="sh -c 'echo a\necho b'\nlmp -in x \\\n  -var y 2\n")
    batch, calls = run_batch_script(pods)
    assert batch.returncode == 0, batch.stderr
    assert calls[:2] == [["submit", "sh", "-c", "echo a\necho b"], ["submit", "lmp", "-in", "x", "-var", "y", "2"]]


def test_a_batch_command_is_stored_once_as_its_script(tmp_path: Path) -> None:
    files = manifests.run_config_files(Pods(tmp_path, mode="batch", command="echo one").spec)
    assert "batch.sh" in files and "command.args" not in files


def test_a_secret_batch_command_is_only_in_the_secret_files(tmp_path: Path) -> None:
    pods = Pods(tmp_path, secret_keys=("command",), mode="batch", command="echo one")
    assert "batch.sh" not in manifests.run_config_files(pods.spec)
    assert (pods.run_dir / "batch.sh").exists()  # mounted beside the scripts from the config Secret


def test_rank0s_initial_program_inherits_its_rank_for_its_log_lines(tmp_path: Path) -> None:
    (start,) = [call for call in Pods(tmp_path, mode="batch").run(0).calls if call["argv"][0] == "start"]
    assert start["env"]["MC_RANK"] == "0"  # flux start hands its environment to the initial program


def test_batch_output_keeps_a_copy_in_a_file_when_asked(tmp_path: Path) -> None:
    copy = tmp_path / "results" / "batch.log"
    copy.parent.mkdir()
    pods = Pods(tmp_path, mode="batch", command="echo one", batchOutput=str(copy))
    run = in_instance(pods, STANDIN_EXITS_JOB="4")
    assert copy.read_text() == "output of job f2ZvLjeF\n"
    assert run.status == 4  # the copy does not hide the batch job's status


def test_interactive_submits_the_command_then_keeps_the_instance_up(tmp_path: Path) -> None:
    run = in_instance(Pods(tmp_path, mode="interactive"), STANDIN_EXITS_SUBMIT="1", STANDIN_SLEEP_LIMIT="3")
    assert run.subcommand("submit") == [["submit", "--watch", "-n1", "hostname"]]
    assert "the command exited with status 1" in run.stderr
    assert run.sleeps == ["sleep 3600"] * 3  # waited until terminated, as `flux shutdown` does


# -- a secret command ------------------------------------------------------------------------------
# Flux logs its initial program's words (`rc2.0: flux submit --watch ... Exited (rc=3)`), and a failed
# pod's log tail is its termination message: in the pod's status, `pulumi up`'s error and Pulumi's state
# (seen on the real engines with a secret command). So a secret command runs from instance.sh.


@pytest.mark.parametrize("mode", ["submit", "launcher"])
def test_rank0_gives_flux_start_instance_sh_for_a_secret_command(tmp_path: Path, mode: str) -> None:
    pods = Pods(tmp_path, secret_keys=("command",), mode=mode, command="run --token s3cret")
    start = pods.run(0).start
    assert start == ["start", *broker_options(pods, 0), "bash", str(pods.run_dir / "instance.sh")]
    assert "s3cret" not in " ".join(start)


def test_instance_sh_submits_a_secret_command_as_submit_mode_does(tmp_path: Path) -> None:
    pods = Pods(tmp_path, secret_keys=("command",), command="run --token s3cret", tasks=8, submitFlags=["-x"])
    run = in_instance(pods, STANDIN_EXITS_SUBMIT="3")
    assert run.subcommand("submit") == [["submit", "--watch", "-N4", "-n8", "-x", "run", "--token", "s3cret"]]
    assert run.status == 3  # the command's status, which flux start returns


def test_instance_sh_runs_a_secret_launcher_command_itself(tmp_path: Path) -> None:
    pods = Pods(tmp_path, secret_keys=("command",), mode="launcher", command="flux run --token s3cret")
    assert in_instance(pods).subcommand("run") == [["run", "--token", "s3cret"]]


def test_a_secret_commands_words_come_back_whole_in_instance_sh(tmp_path: Path) -> None:
    words = ["flux", "run", "--token", "line one\nline\\two"]
    pods = Pods(tmp_path, secret_keys=("command",), mode="launcher", command=json.dumps(words))
    assert in_instance(pods).subcommand("run") == [words[1:]]


# -- a command the Job runs again ------------------------------------------------------------------
# With a backoffLimit above 0 the Job runs rank 0 again after a failure; its workers, which complete at
# the instance's end, would never run again (on the real engines the next rank 0 waited for them for
# good). A failed command first marks them to rejoin the next run.


def test_rank0_gives_flux_start_instance_sh_for_a_command_the_job_runs_again(tmp_path: Path) -> None:
    pods = Pods(tmp_path, backoffLimit=2)
    assert pods.run(0).start == ["start", *broker_options(pods, 0), "bash", str(pods.run_dir / "instance.sh")]


@pytest.mark.parametrize("mode", ["submit", "launcher", "batch"])
def test_a_failed_command_the_job_runs_again_marks_every_worker_to_rejoin(tmp_path: Path, mode: str) -> None:
    pods = Pods(tmp_path, backoffLimit=1, mode=mode, command="flux run --fail" if mode == "launcher" else "hostname")
    failing = {"submit": "STANDIN_EXITS_SUBMIT", "batch": "STANDIN_EXITS_JOB", "launcher": "STANDIN_EXITS_RUN"}[mode]
    run = in_instance(pods, **{failing: "3"})
    (marking,) = [call for call in run.calls if call["argv"][0] == "exec"]
    assert marking["argv"] == ["exec", "-r", "all", "touch", marking["env"]["MC_REJOIN_MARK"]]  # every worker's
    assert run.status == 3
    assert "marking the workers to rejoin its next run" in run.stderr


def test_a_command_that_succeeds_marks_none(tmp_path: Path) -> None:
    assert in_instance(Pods(tmp_path, backoffLimit=1)).subcommand("exec") == []


def test_a_failed_command_of_a_job_that_fails_at_once_marks_none(tmp_path: Path) -> None:
    failed = in_instance(Pods(tmp_path, secret_keys=("command",)), STANDIN_EXITS_SUBMIT="3")  # backoffLimit 0
    assert failed.status == 3 and failed.subcommand("exec") == []


# -- RESTful API ----------------------------------------------------------------------------------

API: dict[str, Any] = {"restfulApi": {"enabled": True, "secretName": "creds", "port": 5001}, "command": None}


def test_rank0_runs_the_restful_api_as_the_instances_program(tmp_path: Path) -> None:
    pods = Pods(tmp_path, **API)
    assert pods.run(0).start == ["start", *broker_options(pods, 0), "bash", str(pods.run_dir / "instance.sh")]


def test_workers_of_an_api_cluster_are_plain_brokers(tmp_path: Path) -> None:
    pods = Pods(tmp_path, **API)
    assert pods.run(2).start == ["start", *broker_options(pods, 2)]


def install_api(pods: Pods, image_dir: Path) -> tuple[subprocess.CompletedProcess[str], Path]:
    """The restful-api init container's own command and environment (from the Job's pod template),
    with its volume and the image's install directory redirected into the test's directory."""
    template = pod_template.broker_pod(
        pods.spec, service_name="s", secret_name="c", broker_config="b", entrypoint="e", scale_config="sc"
    )
    (init,) = [c for c in template["spec"]["initContainers"] if c["name"] == paths.RESTFUL_API]
    assert init["image"] == pods.spec.image
    volume = pods.tmp / "api-volume"
    volume.mkdir()
    env = {item["name"]: item["value"] for item in init["env"]}
    env.update(MC_RESTFUL_DIR=str(volume), MC_RESTFUL_INSTALL_DIR=str(image_dir), PATH=f"{pods.bin}:/usr/bin:/bin")
    return subprocess.run(init["command"], env=env, capture_output=True, text=True, cwd=pods.tmp), volume


def api_pods(tmp_path: Path) -> tuple[Pods, Path, Path]:
    pods = Pods(tmp_path, **API)
    git_log, python_log = tmp_path / "git.log", tmp_path / "python.log"
    # The stand-in git "clones" by creating the app; python3 records, and reports its signing key.
    recorder(pods.bin / "git", git_log, then='mkdir -p "${!#}/app" && touch "${!#}/app/main.py"')
    recorder(pods.bin / "python3", python_log, then='echo "key:${#FLUX_TOKEN_SIGNING_KEY}" >> ' + str(python_log))
    return pods, git_log, python_log


def test_the_api_is_installed_by_its_init_container_when_the_image_lacks_it(tmp_path: Path) -> None:
    pods, git_log, python_log = api_pods(tmp_path)
    installed, volume = install_api(pods, tmp_path / "image-code")
    assert installed.returncode == 0, installed.stderr
    assert git_log.read_text().splitlines() == [
        f"{tmp_path}|clone --quiet --depth 1 --branch main https://github.com/flux-framework/flux-restful-api {volume}"
    ]
    assert python_log.read_text().splitlines() == [
        f"{tmp_path}|-m pip install --quiet --no-cache-dir --target {volume}/.libraries -r {volume}/requirements.txt",
        "key:0",
    ]


def test_an_api_in_the_image_is_copied_without_cloning(tmp_path: Path) -> None:
    pods, git_log, _ = api_pods(tmp_path)
    image_code = tmp_path / "image-code"
    (image_code / "app").mkdir(parents=True)
    (image_code / "app" / "main.py").write_text("# the server")
    installed, volume = install_api(pods, image_code)
    assert installed.returncode == 0, installed.stderr
    assert not git_log.exists()
    assert (volume / "app" / "main.py").read_text() == "# the server"


def test_rank0_starts_the_installed_api_with_its_libraries_and_a_new_signing_key(tmp_path: Path) -> None:
    pods, _, python_log = api_pods(tmp_path)
    _, volume = install_api(pods, tmp_path / "image-code")
    (volume / ".libraries").mkdir()
    run = in_instance(pods, MC_RESTFUL_DIR=str(volume))
    assert python_log.read_text().splitlines()[2:] == [
        f"{volume}|app/db/init_db.py init",
        "key:64",  # the token-signing key is made for the server only
        f"{volume}|-m uvicorn app.main:app --host=0.0.0.0 --port=5001",
        "key:64",
    ]
    assert run.status == 0
    assert "the Flux RESTful API listens on port 5001" in run.stderr


def test_the_broker_container_mounts_the_api_volume_where_rank0_runs_it(tmp_path: Path) -> None:
    pods = Pods(tmp_path, **API)
    container = pod_template.flux_container(pods.spec)
    assert container["name"] == BROKER_CONTAINER
    mount = {"name": paths.RESTFUL_API, "mountPath": paths.RESTFUL_API_DIR}
    assert mount in container["volumeMounts"]
    assert {"name": "MC_RESTFUL_DIR", "value": paths.RESTFUL_API_DIR} in container["env"]
