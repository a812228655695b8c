"""A worker's rc1 on real Flux (tests/kubelet runs the pods): through worker_rc.sh, a worker's broker
has the modules that Flux's own rc1 gives a worker of `flux start -s 2`, and its rc3 lets the instance
shut down cleanly; and real Flux's own answers are what decide the short way."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import pytest

from flux_minicluster.builders import files
from flux_minicluster.config import lifecycle, paths
from tests.flux_instance import flux_env
from tests.kubelet.image import FLUX
from tests.kubelet.pod import wait_until
from tests.kubelet.pods import Kubelet

pytestmark = pytest.mark.realflux
Make = Callable[..., Kubelet]


def module_names(listing: str) -> list[str]:
    """The names in `flux module list`'s table (its first line is the header)."""
    return sorted(line.split()[0] for line in listing.splitlines()[1:])


def flux_start_s2_worker_modules() -> str:
    """`flux module list` on rank 1 of Flux's own `flux start -s 2`."""
    floor = subprocess.run(
        [str(FLUX), "start", "-s", "2", "flux", "exec", "-r", "1", "flux", "module", "list"],
        capture_output=True, text=True, timeout=60, check=True, env=flux_env({}),
    )  # fmt: skip
    return floor.stdout


def test_a_workers_broker_has_the_modules_flux_own_rc1_gives_a_worker(minicluster: Make) -> None:
    cluster = minicluster(size=2, command=None)
    rank0, worker = cluster.start_all()
    wait_until(lambda: rank0.ready() and worker.ready(), "both brokers to be up", 30)
    assert worker.flux("getattr", "broker.rc1_path").split()[-2:] == [f"{paths.RUN_CONFIG_DIR}/worker_rc.sh", "1"]
    assert module_names(worker.flux("module", "list")) == module_names(flux_start_s2_worker_modules())


def test_a_worker_sent_flux_own_way_by_a_modules_table_runs_it_inside_worker_rc(minicluster: Make) -> None:
    """Flux's own rc1 and rc3 (modprobe), run by worker_rc.sh rather than in its place: the same modules,
    and a clean shutdown."""
    plain = files.broker_toml(minicluster(size=2, command=None).spec)
    cluster = minicluster(
        size=2, command=None, brokerConfig=f'{plain}\n[modules.alternatives]\nsched = "sched-simple"\n'
    )
    rank0, worker = cluster.start_all()
    wait_until(lambda: rank0.ready() and worker.ready(), "both brokers to be up", 30)
    assert worker.flux("getattr", "broker.rc1_path").split()[-2:] == [f"{paths.RUN_CONFIG_DIR}/worker_rc.sh", "1"]
    assert module_names(worker.flux("module", "list")) == module_names(flux_start_s2_worker_modules())
    rank0.flux("shutdown", "--quiet", timeout=60)
    assert (rank0.wait(timeout=60), worker.wait(timeout=60)) == (0, 0)
    assert "Exited (rc=0)" in worker.log.split("rc3.0: bash")[1].splitlines()[0]


def test_the_instance_shuts_down_cleanly_through_the_workers_rc3(minicluster: Make) -> None:
    cluster = minicluster(size=2, command=None)
    rank0, worker = cluster.start_all()
    wait_until(lambda: rank0.ready() and worker.ready(), "both brokers to be up", 30)
    rank0.flux("shutdown", "--quiet", timeout=60)
    assert (rank0.wait(timeout=60), worker.wait(timeout=60)) == (0, 0)
    assert "rc3.0: bash" in worker.log and "Exited (rc=0)" in worker.log.split("rc3.0: bash")[1].splitlines()[0]


@pytest.mark.parametrize(("flux_version", "short_way"), [(lifecycle.WORKER_RC_FLUX, True), ("0.87.", False)])
def test_flux_core_0_88s_own_answers_decide_the_way(flux_version: str, short_way: bool) -> None:
    """The script as the rc1 and rc3 of a `flux start -s 1`, its only rank rank 0, given the modules
    rank 0 can run alone (a worker's job-ingest needs rank 0's job manager): the short way loads those
    alone, Flux's own rc rank 0's job manager too. So it is real Flux's `flux version` and `flux config
    builtin` (its rc path, its folders) that send 0.88 the short way, and another version Flux's own."""
    script = f"bash {files.POD_SCRIPTS / 'worker_rc.sh'}"
    alone = ("heartbeat", "content", "kvs", "kvs-watch")
    env = {"MC_FLUX": str(FLUX), "MC_WORKER_MODULES": " ".join(alone), "MC_WORKER_RC_FLUX": flux_version}
    done = subprocess.run(
        [str(FLUX), "start", "-s", "1", f"-Sbroker.rc1_path={script} 1", f"-Sbroker.rc3_path={script} 3",
         "flux", "module", "list"],
        capture_output=True, text=True, timeout=60, check=True, env=flux_env(env),
    )  # fmt: skip
    loaded = set(module_names(done.stdout))
    assert set(alone) <= loaded
    assert ("job-manager" in loaded) is not short_way
