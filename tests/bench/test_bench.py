"""The benchmark at reduced sizes, in CI: nothing the program does may grow with the cluster (issue 6)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.bench import entrypoint_steps as bench_steps
from tests.bench import sizes as bench
from tests.bench import stop as bench_stop
from tests.kube_api import Cluster


def test_evaluation_and_render_do_not_grow_with_size() -> None:
    results = bench.run([1, 100, 10_000], repeat=1)
    base, largest = results[0], results[-1]
    assert [r.size for r in results] == [1, 100, 10_000]
    # The hostlist is compressed and the Job counts completions: only digits get longer.
    assert largest.render_bytes - base.render_bytes < 100
    # Steps, not seconds (a loaded machine stretches seconds): one line run per pod would add 10 000.
    assert abs(largest.evaluation_steps - base.evaluation_steps) < 100, results
    assert abs(largest.render_steps - base.render_steps) < 100, results


def test_the_benchmark_reaches_no_cluster(kube_api: Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    """KUBECONFIG names a reachable API server (the stand-in): the benchmark still asks it nothing."""
    bench.run([1, 10], repeat=1)
    assert kube_api.requests == []
    assert "admission check" not in capsys.readouterr().err


def table(module: str, *args: str) -> tuple[str, list[list[str]]]:
    """The benchmark's printed table, run as its usage says: its header line, and each row's cells."""
    result = subprocess.run(
        [sys.executable, "-m", f"tests.bench.{module}", *args], capture_output=True, text=True, check=True,
        timeout=300,
    )  # fmt: skip
    header, _rule, *rows = result.stdout.strip().splitlines()
    return header, [[cell.strip() for cell in row.strip("|").split("|")] for row in rows]


def test_the_command_prints_a_ratio_table() -> None:
    header, (first, second) = table("sizes", "--sizes", "1,10", "--repeat", "1")
    assert header.startswith("| size | evaluation (ms) | ratio to size 1 |")
    assert first[0] == "1" and first[2] == "1.00"
    assert second[0] == "10"


@pytest.mark.realflux
def test_the_stop_benchmark_times_each_stop_on_real_brokers(real_flux: None) -> None:
    """Each stop ends as it should: the benchmark fails unless every pod it stops exits 143, by itself.
    What makes a stop quick is asserted as behaviour in tests/realflux (test_real_lifecycle: a worker
    drains its rank and ends its job first; test_real_rank0_replacement: the hand-over); the seconds are
    the benchmark's to report, not a test's to bound, since a loaded machine stretches them."""
    header, rows = table("stop", "--runs", "1")
    assert header == "| what | runs | min (ms) | median (ms) | max (ms) |"
    assert [cells[:2] for cells in rows] == [[label, "1"] for label, _ in bench_stop.MEASURES]
    assert all(int(ms) > 0 for cells in rows for ms in cells[2:]), rows


def test_the_admission_check_grows_linearly_with_the_cluster() -> None:
    """CI's reduced run: 500 nodes and 10 000 pods. Linear work; 5 000 and 100 000 are in the README."""
    from tests.bench import admission as bench_admission

    small = bench_admission.measure(50, 1_000)
    large = bench_admission.measure(500, 10_000)
    assert large.problems == []  # the fixtures' hpc half has room for 1000 brokers of 4 cpu
    # Ten times the cluster costs ten times the steps, not a hundred (the check is linear). Steps, not
    # seconds, which a loaded machine stretches; the seconds are the benchmark's to report.
    assert 9 * small.check_steps < large.check_steps < 11 * small.check_steps, (small, large)


@pytest.mark.realflux
def test_up_and_destroy_return_only_once_the_cluster_is_done(real_flux: None) -> None:
    """Real brokers mirrored into the API stand-in as a kubelet reports them (tests/bench/waits.py),
    each wait timed from the last broker up (up) or the last pod gone (destroy): neither returns
    before. That both watch the pods rather than poll them is asserted in tests/resources
    (test_scale_provider, test_job_deletion); how soon they return is the benchmark's to report."""
    header, rows = table("waits", "--runs", "1")
    assert header == "| what | brokers | runs | min (ms) | median (ms) | max (ms) |"
    assert [cells[1:3] for cells in rows] == [["4", "1"], ["4", "1"]]  # up, destroy
    assert all(int(ms) >= 0 for cells in rows for ms in cells[3:]), rows


@pytest.mark.realflux
def test_the_metrics_benchmark_times_scrapes_of_rank0_with_jobs_held(real_flux: None) -> None:
    """That a scrape asks Flux the same with 1000 jobs as with 10 is asserted in
    tests/realflux/test_real_metrics.py; the milliseconds are the benchmark's to report."""
    header, ((jobs, scrapes, *times),) = table("metrics", "--jobs", "10", "--scrapes", "3")
    assert header == "| jobs in the instance | scrapes | min (ms) | median (ms) | max (ms) |"
    assert (jobs, scrapes) == ("10", "3")
    assert all(float(ms) > 0 for ms in times), times


@pytest.mark.realflux
def test_the_autoscale_benchmark_times_a_grow_from_the_submit_to_the_job_running(real_flux: None) -> None:
    """Real brokers, rank 0's autoscaler acting through the API stand-in (tests/bench/autoscale.py): the
    Job is patched after the submit, the new brokers come online after the patch, the job runs after
    they did. That a job's events wake the autoscaler at once is asserted in
    tests/realflux/test_real_autoscale.py; how soon is the benchmark's to report."""
    header, rows = table("autoscale", "--runs", "1")
    assert header == "| what | nodes | runs | min (s) | median (s) | max (s) |"
    measured = {cells[0]: [float(seconds) for seconds in cells[3:]] for cells in rows}
    assert list(measured) == ["detect", "bring-up", "start", "overhead"]
    assert all(seconds >= 0 for times in measured.values() for seconds in times), measured


@pytest.mark.realflux
def test_the_entrypoint_steps_benchmark_finds_each_step_of_a_pods_start_in_order(real_flux: None) -> None:
    """Real brokers, their processes as the kernel reports them (tests/bench/entrypoint_steps.py): each
    step of rank 0's and of a worker's start is found, one after the other, the broker is up before the
    command's first task, and CPU is counted where processes ran. The seconds are the benchmark's."""
    header, rows = table("entrypoint_steps", "--runs", "1")
    assert header.startswith("| step (3 brokers; medians of 1 runs) | rank 0: at (s) |")
    keys = [key for key, _ in (*bench_steps.STEPS, *bench_steps.CPU_ONLY)]
    assert [cells[0] for cells in rows] == [label for _, label in (*bench_steps.STEPS, *bench_steps.CPU_ONLY)]
    found = dict(zip(keys, rows, strict=True))  # per row: label, then rank 0's at, takes, CPU, a worker's
    rank0_starts = [float(found[key][1]) for key, _ in bench_steps.STEPS]  # in the order they begin
    assert rank0_starts == sorted(rank0_starts), rank0_starts
    assert float(found["up"][4]) < float(found["task"][4]), found
    assert float(found["rc1"][3]) > 0 and float(found["rc1"][6]) > 0, found  # Flux's Python; a worker's flux commands
    assert float(found["pod"][3]) > float(found["to_up"][3]) > 0, found
