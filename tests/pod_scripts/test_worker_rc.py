"""A worker's rc1 and rc3 (worker_rc.sh): Flux's plan for a worker with its C commands where that is
all Flux would do, and Flux's own rc anywhere else. Run under bash with a `flux` that answers as an
installed flux-core does (`config builtin`, `version`) and records the rest; that the modules are the
ones Flux's own rc1 loads on a worker is checked on real Flux (tests/realflux/test_real_lifecycle.py)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from flux_minicluster.builders import files
from flux_minicluster.config import lifecycle
from tests.pods import Pods

PING = "ping --count=1 0"
"""How rc3 asks whether rank 0 is still there (worker_rc.sh, mark_if_rank0_is_gone)."""
KVS_READ = "kvs version"
"""How rc1 makes the worker's KVS take its root (worker_rc.sh, hold_kvs_root)."""
FLUX_0_88 = "commands:    \t\t0.88.0\nlibflux-core:\t\t0.88.0\nbroker:  \t\t0.88.0\n"


@dataclass
class InstalledFlux:
    """A `flux` at PREFIX/bin, with its builtin paths under PREFIX, as flux-core's install makes them."""

    prefix: Path
    version: str = FLUX_0_88
    rc_path: str = "flux modprobe rc{level}"
    failing_module: str = ""
    failing_command: str = ""
    ping_status: int = 0

    def install(self) -> Path:
        for folder in ("etc/flux", "share/flux", "libexec/flux", "bin"):
            (self.prefix / folder).mkdir(parents=True, exist_ok=True)
        flux = self.prefix / "bin" / "flux"
        flux.write_text(
            "#!/bin/bash\n"
            f'printf "%s\\n" "$*" >> {self.prefix}/calls\n'
            'case "$1 $2 $3" in\n'
            f'  "config builtin confdir") echo {self.prefix}/etc/flux ;;\n'
            f'  "config builtin datadir") echo {self.prefix}/share/flux ;;\n'
            f'  "config builtin libexecdir") echo {self.prefix}/libexec/flux ;;\n'
            f'  "config builtin rc1_path") echo "{self.rc_path.format(level=1)}" ;;\n'
            f'  "config builtin rc3_path") echo "{self.rc_path.format(level=3)}" ;;\n'
            f"  \"version \"*) printf '%s' '{self.version}' ;;\n"
            f'  "module load {self.failing_module}") exit 1 ;;\n'
            f'  "ping --count=1 0") exit {self.ping_status} ;;\n'
            "esac\n"
            f'if [[ "$*" == "{self.failing_command}" ]]; then exit 3; fi\n'
        )
        flux.chmod(0o755)
        return flux

    def calls(self) -> list[str]:
        path = self.prefix / "calls"
        lines = path.read_text().splitlines() if path.exists() else []
        return [line for line in lines if not line.startswith(("config builtin", "version"))]


def run_rc(tmp_path: Path, level: int, flux: InstalledFlux, env: dict[str, str] | None = None) -> int:
    (tmp_path / "pods").mkdir()
    pods = Pods(tmp_path / "pods")
    script_env = {
        **pods.env,
        "MC_FLUX": str(flux.install()),
        "PATH": f"{flux.prefix}/bin:/usr/bin:/bin",  # Flux's own rc is found as its broker finds it
        **(env or {}),
    }
    done = subprocess.run(["bash", str(pods.run_dir / "worker_rc.sh"), str(level)], env=script_env, check=False)
    return done.returncode


def loads(*modules: str) -> list[str]:
    return [f"module load {module}" for module in modules]


def test_rc1_loads_the_modules_of_flux_own_plan_for_a_worker_in_order(tmp_path: Path) -> None:
    flux = InstalledFlux(tmp_path / "flux")
    assert run_rc(tmp_path, 1, flux) == 0
    expected = loads("heartbeat", "content", "kvs", "kvs-watch", "resource", "job-info", "job-ingest")
    assert flux.calls()[:-1] == expected


def test_rc1_ends_by_reading_the_kvs_so_that_the_worker_holds_its_root_before_it_is_online(tmp_path: Path) -> None:
    """Why, on real Flux: tests/realflux/test_real_flux_kvs.py."""
    flux = InstalledFlux(tmp_path / "flux")
    assert run_rc(tmp_path, 1, flux) == 0
    assert flux.calls()[-1] == KVS_READ


def test_rc1_reads_the_kvs_after_flux_own_rc1_too(tmp_path: Path) -> None:
    flux = InstalledFlux(tmp_path / "flux")
    assert run_rc(tmp_path, 1, flux, {"MC_WORKER_MODULES": ""}) == 0
    assert flux.calls() == ["modprobe rc1", KVS_READ]


def test_rc1_goes_on_where_the_worker_has_no_kvs(tmp_path: Path) -> None:
    """A site's module table may load none on a worker: there is no root to hold then."""
    flux = InstalledFlux(tmp_path / "flux", failing_command=KVS_READ)
    assert run_rc(tmp_path, 1, flux) == 0


def test_rc3_removes_them_in_reverse_once_it_has_found_rank0(tmp_path: Path) -> None:
    flux = InstalledFlux(tmp_path / "flux")
    assert run_rc(tmp_path, 3, flux, {"MC_REJOIN_MARK": str(tmp_path / "rejoin")}) == 0
    assert flux.calls() == [PING, *[f"module remove -f {module}" for module in reversed(lifecycle.WORKER_MODULES)]]
    assert not (tmp_path / "rejoin").exists()  # rank 0 is there: the instance's end, or this rank's own


def test_rc3_marks_the_broker_to_rejoin_when_rank0_is_out_of_reach(tmp_path: Path) -> None:
    """The worker above it left the instance on its own, having lost rank 0, and took it down with it."""
    flux = InstalledFlux(tmp_path / "flux", ping_status=1)
    assert run_rc(tmp_path, 3, flux, {"MC_REJOIN_MARK": str(tmp_path / "rejoin")}) == 0
    assert (tmp_path / "rejoin").exists()
    assert flux.calls()[-1] == f"module remove -f {lifecycle.WORKER_MODULES[0]}"  # the rc goes on


def test_rc3_does_not_mark_the_broker_when_rank0_does_not_answer_in_time(tmp_path: Path) -> None:
    """A rank 0 busy at the instance's end: a worker marked then would wait for it in vain."""
    flux = InstalledFlux(tmp_path / "flux", ping_status=124)  # as `timeout` exits for a ping it ended
    assert run_rc(tmp_path, 3, flux, {"MC_REJOIN_MARK": str(tmp_path / "rejoin")}) == 0
    assert not (tmp_path / "rejoin").exists()


def test_rc1_asks_nothing_of_rank0(tmp_path: Path) -> None:
    flux = InstalledFlux(tmp_path / "flux", ping_status=1)
    assert run_rc(tmp_path, 1, flux, {"MC_REJOIN_MARK": str(tmp_path / "rejoin")}) == 0
    assert PING not in flux.calls()
    assert not (tmp_path / "rejoin").exists()


def test_a_module_that_fails_to_load_fails_rc1_and_stops_it_there(tmp_path: Path) -> None:
    flux = InstalledFlux(tmp_path / "flux", failing_module="kvs")
    assert run_rc(tmp_path, 1, flux) != 0
    assert flux.calls() == loads("heartbeat", "content", "kvs")  # nor does it read the KVS


def test_another_flux_version_runs_flux_own_rc(tmp_path: Path) -> None:
    flux = InstalledFlux(tmp_path / "flux", version=FLUX_0_88.replace("0.88.0", "0.89.0"))
    assert run_rc(tmp_path, 3, flux, {"MC_REJOIN_MARK": str(tmp_path / "rejoin")}) == 0
    assert flux.calls() == [PING, "modprobe rc3"]


def test_flux_own_rc_runs_through_the_pods_flux_where_path_has_none(tmp_path: Path) -> None:
    flux = InstalledFlux(tmp_path / "flux", version=FLUX_0_88.replace("0.88.0", "0.89.0"))
    assert run_rc(tmp_path, 1, flux, {"PATH": "/usr/bin:/bin"}) == 0
    assert flux.calls() == ["modprobe rc1", KVS_READ]


def test_a_failing_flux_own_rc_fails_the_rc_with_its_status(tmp_path: Path) -> None:
    flux = InstalledFlux(tmp_path / "flux", failing_command="modprobe rc1")
    assert run_rc(tmp_path, 1, flux, {"MC_WORKER_MODULES": ""}) == 3
    assert flux.calls() == ["modprobe rc1"]


def test_a_flux_whose_rc_is_not_modprobe_runs_that_rc(tmp_path: Path) -> None:
    older = tmp_path / "flux" / "libexec" / "flux" / "rc3"
    flux = InstalledFlux(tmp_path / "flux", rc_path=f"{older.parent}/rc{{level}}")
    flux.install()
    older.write_text(f"#!/bin/bash\necho own-rc3 >> {flux.prefix}/calls\n")
    older.chmod(0o755)
    assert run_rc(tmp_path, 3, flux, {"MC_REJOIN_MARK": str(tmp_path / "rejoin")}) == 0
    assert flux.calls() == [PING, "own-rc3"]


@pytest.mark.parametrize(
    "addition",
    [
        "etc/flux/modprobe/modprobe.d/site.toml",
        "share/flux/modprobe/modprobe.d/fluxion.toml",
        "etc/flux/modprobe/rc1.d/site.py",
        "libexec/flux/modprobe/rc1.d/extra.py",
        "etc/flux/rc1.d/site-script",
    ],
)
def test_a_module_table_or_rc_script_beyond_flux_own_runs_flux_own_rc(tmp_path: Path, addition: str) -> None:
    flux = InstalledFlux(tmp_path / "flux")
    (flux.prefix / addition).parent.mkdir(parents=True, exist_ok=True)
    (flux.prefix / addition).write_text("")
    assert run_rc(tmp_path, 1, flux) == 0
    assert flux.calls() == ["modprobe rc1", KVS_READ]


@pytest.mark.parametrize(
    "variable",
    ["FLUX_MODPROBE_PATH", "FLUX_MODPROBE_PATH_APPEND", "FLUX_MODPROBE_PATH_PREPEND", "FLUX_MODPROBE_DISABLE",
     "FLUX_RC_EXTRA"],
)  # fmt: skip
def test_a_search_path_of_the_environments_runs_flux_own_rc(tmp_path: Path, variable: str) -> None:
    flux = InstalledFlux(tmp_path / "flux")
    assert run_rc(tmp_path, 1, flux, {variable: str(tmp_path)}) == 0
    assert flux.calls() == ["modprobe rc1", KVS_READ]


def test_no_modules_from_the_job_runs_flux_own_rc(tmp_path: Path) -> None:
    flux = InstalledFlux(tmp_path / "flux")
    assert run_rc(tmp_path, 3, flux, {"MC_WORKER_MODULES": "", "MC_REJOIN_MARK": str(tmp_path / "rejoin")}) == 0
    assert flux.calls() == [PING, "modprobe rc3"]


# -- what the Job gives a worker ---------------------------------------------------------------------


def worker_rc_options(pods: Pods) -> list[str]:
    """The rc attributes a worker's entrypoint gives its broker."""
    run = pods.run(1)
    assert run.status == 0
    return [option for option in run.start if option.startswith(("-Sbroker.rc1_path", "-Sbroker.rc3_path"))]


def test_a_worker_runs_worker_rc_by_default(tmp_path: Path) -> None:
    pods = Pods(tmp_path)
    assert worker_rc_options(pods) == [f"-Sbroker.rc{n}_path=bash {pods.run_dir}/worker_rc.sh {n}" for n in (1, 3)]


def test_a_worker_runs_worker_rc_where_a_broker_config_with_modules_sends_it_flux_own(tmp_path: Path) -> None:
    """Flux's own rc then, through worker_rc.sh: its rc3 still marks the worker to rejoin, its rc1 still
    holds the KVS root."""
    (tmp_path / "plain").mkdir()
    config = f"{files.broker_toml(Pods(tmp_path / 'plain').spec)}\n[modules.resource]\nnoverify = true\n"
    pods = Pods(tmp_path, brokerConfig=config)
    assert worker_rc_options(pods) == [f"-Sbroker.rc{n}_path=bash {pods.run_dir}/worker_rc.sh {n}" for n in (1, 3)]


def test_a_worker_runs_the_rc_its_broker_attributes_name(tmp_path: Path) -> None:
    pods = Pods(tmp_path, brokerAttributes={"broker.rc1_path": "/site/rc1"})
    assert worker_rc_options(pods) == ["-Sbroker.rc1_path=/site/rc1"]


def test_the_job_gives_flux_plan_for_a_worker_by_default(tmp_path: Path) -> None:
    assert Pods(tmp_path).env["MC_WORKER_MODULES"] == " ".join(lifecycle.WORKER_MODULES)


@pytest.mark.parametrize("table", ["[modules.resource]\nnoverify = true", "[systemd]\nenable = true"])
def test_a_broker_config_with_modules_or_systemd_gives_no_modules(tmp_path: Path, table: str) -> None:
    (tmp_path / "plain").mkdir()
    config = f"{files.broker_toml(Pods(tmp_path / 'plain').spec)}\n{table}\n"  # the Job's own, plus the table
    assert Pods(tmp_path, brokerConfig=config).env["MC_WORKER_MODULES"] == ""


@pytest.mark.parametrize("attribute", ["broker.rc1_path", "broker.rc3_path"])
def test_broker_attributes_with_an_rc_of_their_own_give_no_modules(tmp_path: Path, attribute: str) -> None:
    assert Pods(tmp_path, brokerAttributes={attribute: "/site/rc"}).env["MC_WORKER_MODULES"] == ""
