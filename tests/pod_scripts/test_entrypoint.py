"""The real entrypoint under bash, one process per rank, with stand-in `flux` and `sleep` (issues 3, 13).

The pods (tests/pods.py) get their files and environment from the same builders the Job uses; only
the mount points are redirected into a temporary directory.
"""

from __future__ import annotations

import json
import shutil
import stat
import tomllib
from pathlib import Path

import pytest

from flux_minicluster.builders import files, manifests
from tests.pods import Pods


def recorder(path: Path, log: Path, then: str = "") -> None:
    """A stand-in command that records its argv and working directory, then runs `then`."""
    path.write_text(f'#!/bin/bash\nprintf "%s|%s\\n" "$PWD" "$*" >> {log}\n{then}\n')
    path.chmod(0o755)


def broker_options(pods: Pods, rank: int) -> list[str]:
    state = pods.tmp / f"state-{rank}"
    return [
        "-o,--config-path=" + pods.env["MC_BROKER_CONFIG_DIR"],
        f"-Srundir={state}/run",
        f"-Sstatedir={state}/content",
        f"-Slocal-uri=local://{state}/run/local",
        "-Slog-stderr-level=6",
        "-Slog-stderr-mode=local",
        *([] if rank == 0 else [f"-Sbroker.rc{n}_path=bash {pods.run_dir}/worker_rc.sh {n}" for n in (1, 3)]),
    ]


# -- ranks ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "size"), [("dev", 1), ("dev", 3), ("job-2-b3", 12)])
def test_every_rank_finds_itself_and_only_rank0_runs_the_command(tmp_path: Path, name: str, size: int) -> None:
    pods = Pods(tmp_path, name=name, size=size)
    runs = [Pods.wait(pods.start(rank)) for rank in range(size)]  # one process per rank, concurrently
    assert [run.status for run in runs] == [0] * size
    for rank, run in enumerate(runs):
        assert f"minicluster[rank {rank}]: rank {rank} of {size} in {files.hostlist(pods.spec)}" in run.stderr
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


@pytest.mark.parametrize("mode", ["submit", "launcher"])
def test_a_commands_words_reach_flux_as_written_line_breaks_and_backslashes_too(tmp_path: Path, mode: str) -> None:
    """The words file holds a word a line: a word's own line breaks (`python3 -c` of a script) and
    backslashes must come back as they were, not as words of their own."""
    words = ["python3", "-c", "import sys\nprint(sys.argv[1:])", "a\\b", "\\n", "end\\"]
    pods = Pods(tmp_path, mode=mode, command=json.dumps(words))
    assert pods.run(0).start[-len(words) :] == words


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
def test_batch_and_interactive_run_instance_sh_inside_the_instance(tmp_path: Path, mode: str) -> None:
    pods = Pods(tmp_path, mode=mode)
    assert pods.run(0).start == ["start", *broker_options(pods, 0), "bash", str(pods.run_dir / "instance.sh")]


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
    assert "-Sbroker.quorum=4" in Pods(tmp_path, maxSize=10, command=None).run(1).start


def test_min_size_sets_the_quorum(tmp_path: Path) -> None:
    assert "-Sbroker.quorum=2" in Pods(tmp_path, minSize=2).run(1).start


def test_topology_and_connect_timeout_reach_broker_toml_and_the_log_level_the_broker(tmp_path: Path) -> None:
    pods = Pods(tmp_path, topology="kary:2", connectTimeout="2s", logLevel=7)
    start = pods.run(1).start
    broker_toml = tomllib.loads((tmp_path / "broker" / manifests.BROKER_CONFIG_KEY).read_text())
    assert broker_toml["tbon"] == {"connect_timeout": "2s", "zmqdebug": 1, "topo": "kary:2"}  # flux-config-tbon(5)
    assert "-Slog-stderr-level=7" in start
    assert not [option for option in start if option.startswith("-Stbon.")]


def test_no_quorum_by_default_so_flux_waits_for_every_rank(tmp_path: Path) -> None:
    assert not [option for option in Pods(tmp_path).run(1).start if option.startswith("-Sbroker.quorum")]


# -- files the broker needs -----------------------------------------------------------------------


def test_certificate_is_copied_private_and_byte_identical(tmp_path: Path) -> None:
    pods = Pods(tmp_path)
    (call,) = [c for c in pods.run(2).calls if c["argv"][0] == "start"]
    assert call["cert_mode"] == 0o600
    assert call["cert_bytes"] == pods.cert.text()


def test_rank_0_encodes_the_resource_set_of_the_whole_hostlist_from_its_node(tmp_path: Path) -> None:
    pods = Pods(tmp_path, size=2, maxSize=6, command=None)
    run = pods.run(0)
    assert run.subcommand("R") == [["R", "encode", "--hosts=dev-[0-5]", "--local"]]
    assert (tmp_path / "state-0" / "R").read_text().startswith('{"version": 1')


def test_a_worker_writes_a_resource_set_of_the_same_hosts_without_flux(tmp_path: Path) -> None:
    pods = Pods(tmp_path, size=2, maxSize=6, command=None)
    run = pods.run(1)
    assert run.subcommand("R") == []
    assert json.loads((tmp_path / "state-1" / "R").read_text()) == {
        "version": 1,
        "execution": {"R_lite": [{"rank": "0-5", "children": {"core": "0"}}], "starttime": 0.0, "expiration": 0.0,
                      "nodelist": ["dev-[0-5]"]},
    }  # fmt: skip


def test_a_worker_without_gpus_starts_its_broker_without_hwlocs_io_discovery(tmp_path: Path) -> None:
    (start,) = [call for call in Pods(tmp_path).run(1).calls if call["argv"][0] == "start"]
    assert (start["env"].get("HWLOC_COMPONENTS"), start["env"].get("HWLOC_PLUGINS_PATH")) == (
        "-linuxio",
        "/nonexistent",
    )


def test_rank_0_and_a_worker_with_gpus_start_their_brokers_with_hwlocs_whole_discovery(tmp_path: Path) -> None:
    for folder in ("rank0", "gpus"):
        (tmp_path / folder).mkdir()
    rank0 = [call for call in Pods(tmp_path / "rank0").run(0).calls if call["argv"][0] == "start"]
    gpu_worker = [call for call in Pods(tmp_path / "gpus", gpus=1).run(1).calls if call["argv"][0] == "start"]
    assert [call["env"].get("HWLOC_COMPONENTS") for call in rank0 + gpu_worker] == [None, None]


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
