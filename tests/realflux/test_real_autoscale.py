"""Autoscaling end to end (autoscale.enabled): rank 0's autoscaler on real Flux brokers in the Job's
pods on this machine, acting through the API stand-in as its service account (its Role enforced),
whose Job controller makes and stops the pods (tests/autoscaled.py)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from flux_minicluster.config import sizing
from flux_minicluster.config.paths import SERVICE_ACCOUNT_DIR as SERVICE_ACCOUNT
from tests.autoscaled import AUTOSCALE, Autoscaled, example, shrinks
from tests.kube_api import StandIn
from tests.kubelet.image import FLUX_PREFIX
from tests.kubelet.pods import Kubelet
from tests.realflux.test_real_metrics import scrape

pytestmark = pytest.mark.realflux
Make = Callable[..., Kubelet]


def autoscaled(minicluster: Make, api_server: StandIn, makes_pods: bool = True, **overrides: Any) -> Autoscaled:
    kubelet = minicluster(**{"command": None, "size": 1, "maxSize": 4, "autoscale": AUTOSCALE, **overrides})
    return Autoscaled(kubelet, api_server, makes_pods)


def sizes(cluster: Autoscaled) -> tuple[float, float, float]:
    """What rank 0's metrics say: the cluster's size, its nodes up, its jobs pending."""
    found = scrape(cluster.rank0)
    return (found[("minicluster_size", ())], found[("flux_nodes", (("state", "up"),))],
            found[("flux_jobs", (("queue", "all"), ("state", "pending")))])  # fmt: skip


def test_the_example_grows_from_one_to_four_for_four_one_node_jobs_and_back_to_one_when_they_are_done(
    minicluster: Make, api_server: StandIn
) -> None:
    cluster = Autoscaled(minicluster(**example()), api_server)
    jobs = cluster.submit("--cc=1-4", "-N1", "sleep", "3").split()
    cluster.wait(lambda: cluster.size == 4, "the cluster to grow to 4")
    # Not "4 up": a rank whose job ended may be given back before the last one joins.
    cluster.wait(lambda: sizes(cluster)[0] == 4, "the metrics to say 4 brokers")
    cluster.wait(lambda: all(cluster.job_field(job, "status") == "COMPLETED" for job in jobs), "the 4 jobs to end")
    assert sorted(cluster.job_field(job, "ranks") for job in jobs) == ["0", "1", "2", "3"]
    assert [event["message"] for event in cluster.events("Grew")] == [
        "grew from 1 to 4 brokers: 3 queued jobs need 3 nodes, 0 free"
    ]

    # The Event follows the change it tells of (docs/resizing.md): the size may read 1 a moment before it.
    # The jobs end as their ranks joined, so the idle ranks may go in one step or several.
    def shrank() -> list[tuple[int, int]]:
        return shrinks([event["message"] for event in cluster.events("Shrank")])

    cluster.wait(lambda: bool(cluster.events("Shrank")) and shrank()[-1][1] == 1, "the Events of a shrink to 1")
    assert cluster.size == 1 and shrank()[0][0] == 4
    cluster.wait(lambda: not any(cluster.kubelet.pod(rank).running() for rank in (1, 2, 3)), "ranks 1-3's pods to end")
    assert [size for _, size in cluster.resized] == [4, *(to for _, to in shrank())]
    assert all(f"autoscaler: shrank from {start} to {to} brokers" in cluster.autoscaler_log for start, to in shrank())
    assert sizes(cluster) == (1, 1, 0)


def test_a_grow_whose_pods_never_come_is_rolled_back_after_schedule_timeout(
    minicluster: Make, api_server: StandIn
) -> None:
    cluster = autoscaled(minicluster, api_server, makes_pods=False, scheduleTimeout=2)
    cluster.submit("-N2", "true")
    cluster.wait(lambda: bool(cluster.events("GrowRolledBack")), "the grow to be rolled back")
    (rolled_back,) = cluster.events("GrowRolledBack")
    assert rolled_back["type"] == "Warning"
    assert rolled_back["message"] == "the new brokers were not up within 2s (scheduleTimeout): back to 1 brokers"
    assert cluster.size == 1
    assert cluster.api.config_maps[("default", cluster.kubelet.scale_config)]["data"] == {"size": "1", "quorum": "1"}


def test_a_job_event_wakes_the_autoscaler_whose_periodic_look_is_an_hour_away(
    minicluster: Make, api_server: StandIn
) -> None:
    """With the periodic look an hour away, every look after the first is one that a job event woke: a
    job that fits wakes one, and one that needs a node grows the cluster. How soon is
    tests/bench/autoscale.py's to time (its "detect")."""
    cluster = autoscaled(minicluster, api_server, autoscale={**AUTOSCALE, "interval": 3600})
    cluster.wait(lambda: cluster.looks == 1, "the autoscaler's first look")
    fits = cluster.submit("-N1", "true")
    cluster.wait(lambda: cluster.job_field(fits, "status") == "COMPLETED", "the job that fits to run")
    cluster.wait(lambda: cluster.looks >= 2, "a look woken by its events")
    assert cluster.size == 1
    needs_two = cluster.submit("-N2", "true")
    cluster.wait(lambda: cluster.job_field(needs_two, "status") == "COMPLETED", "the job to run on a new broker")
    assert cluster.size == 2
    assert [event["message"] for event in cluster.events("Grew")] == [
        "grew from 1 to 2 brokers: 1 queued job needs 2 nodes, 1 free"
    ]


def test_while_a_pulumi_up_resizes_the_autoscaler_waits_then_acts(minicluster: Make, api_server: StandIn) -> None:
    cluster = autoscaled(minicluster, api_server)
    job = cluster.api.jobs[("default", "dev")]
    job["metadata"]["annotations"] = {sizing.RESIZING: sizing.lease(sizing.PULUMI, time.time() + 60)}
    cluster.submit("-N2", "true")
    cluster.wait(lambda: "a `pulumi up` is resizing the cluster" in cluster.autoscaler_log, "the autoscaler to wait")
    looked = cluster.looks
    cluster.wait(lambda: cluster.looks >= looked + 2, "two more looks")
    assert cluster.size == 1
    job["metadata"]["annotations"] = {}
    cluster.wait(lambda: cluster.size == 2 and cluster.ready(2), "the cluster to grow once the lease is given back")


def test_a_lease_a_resize_left_held_is_given_back_at_the_next_look(minicluster: Make, api_server: StandIn) -> None:
    """A resize whose end found the API server away (or a rank 0 killed mid-resize) leaves the lease
    held until it expires, which would hold off every `pulumi up` resize for scheduleTimeout + 60 s."""
    cluster = autoscaled(minicluster, api_server)
    job = cluster.api.jobs[("default", "dev")]
    job["metadata"]["annotations"] = {sizing.RESIZING: sizing.lease(sizing.AUTOSCALER_HOLDER, time.time() + 600)}
    cluster.wait(lambda: "giving back the resize lease a resize left held" in cluster.autoscaler_log, "the look")
    cluster.wait(lambda: sizing.lease_holder(job["metadata"].get("annotations"), time.time()) is None, "no lease")
    cluster.submit("-N2", "true")
    cluster.wait(lambda: cluster.size == 2 and cluster.ready(2), "the next resize, as usual")


# A Flux job's look for an API token: the standard path, then every file under the directories a pod's
# volumes and runtime files live in, and its environment, for the token's own text. The token comes in
# two halves, so that the job's own command line, which Flux keeps, never holds it whole.
LOOK_FOR_TOKEN = r"""
ls -A /var/run/secrets/kubernetes.io/serviceaccount 2>&1
grep -rlsF "$1$2" /etc /var /run /tmp "$3" 2>/dev/null | head -5
env | grep -cF "$1$2"
exit 0
"""
# The same job's request to the API server with what it can find: no token, and no CA to check the
# server against (so it does not check it).
SUSPEND = r"""
import json, os, ssl, urllib.request, urllib.error
url = "https://%s:%s/apis/batch/v1/namespaces/default/jobs/dev" % (
    os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"])
body = json.dumps({"spec": {"suspend": True}}).encode()
asked = urllib.request.Request(url, body, {"Content-Type": "application/merge-patch+json"}, method="PATCH")
try:
    urllib.request.urlopen(asked, context=ssl._create_unverified_context(), timeout=10)
    print("200")
except urllib.error.HTTPError as refused:
    print(refused.code, json.loads(refused.read())["message"])
"""


def test_a_flux_job_finds_no_token_and_the_api_server_refuses_its_request(
    minicluster: Make, api_server: StandIn
) -> None:
    cluster = autoscaled(minicluster, api_server)
    token = (cluster.kubelet.tmp / "api" / "account-dev-autoscaler" / "token").read_text()
    autoscaler = cluster.rank0.container("autoscaler")
    assert autoscaler.exec("cat", f"{SERVICE_ACCOUNT}/token").stdout == token  # it is there, for it alone
    halves = (token[: len(token) // 2], token[len(token) // 2 :])
    flux_etc = str(FLUX_PREFIX / "etc")  # the image's Flux installation (tests/kubelet/image.py)
    looked = cluster.rank0.flux("run", "-N1", "bash", "-c", LOOK_FOR_TOKEN, "look", *halves, flux_etc).splitlines()
    assert looked == [f"ls: cannot access '{SERVICE_ACCOUNT}': No such file or directory", "0"]
    answer = cluster.rank0.flux("run", "-N1", "flux", "python", "-c", SUSPEND).strip()
    assert answer == (
        '403 jobs.batch "dev" is forbidden: User "system:anonymous" cannot patch resource "jobs" in API group '
        '"batch" in the namespace "default"'
    )
    assert cluster.api.jobs[("default", "dev")]["spec"].get("suspend") is not True


def test_under_restricted_pod_security_the_autoscaler_reaches_its_broker_as_the_pods_user_and_grows_it(
    minicluster: Make, api_server: StandIn
) -> None:
    cluster = autoscaled(minicluster, api_server, securityProfile="restricted")
    assert cluster.rank0.container("autoscaler").exec("id", "-u").stdout.strip() == "1000"
    cluster.submit("-N2", "true")
    cluster.wait(lambda: cluster.size == 2 and cluster.ready(2), "the cluster to grow to 2")
    assert cluster.events("Grew")


@pytest.mark.parametrize("rank", [0, 1])
def test_the_autoscaler_container_ends_itself_when_kubernetes_stops_it(
    minicluster: Make, api_server: StandIn, rank: int
) -> None:
    """Its first process handles SIGTERM and ends cleanly (before, rank 0's ended with 1): a first
    process that ignored it would keep every pod's stop, rank 0's hand-over to its replacement
    included, waiting out the grace period."""
    cluster = autoscaled(minicluster, api_server, size=2)
    autoscaler = cluster.kubelet.pod(rank).container("autoscaler")
    assert autoscaler.stop(grace=20) == 0  # ended itself on SIGTERM: not killed at the grace period's end (137)
