"""Properties over generated valid configs (issue 5): building never fails, every name fits its
limit, every manifest passes the newest schema, and the hostlist always names exactly the ranks."""

from __future__ import annotations

import string
from typing import Any

import hostlist
import kubernetes_validate
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from flux_minicluster.builders import files, manifests
from flux_minicluster.config.loader import load_spec
from tests.auto_names import auto_name
from tests.schemas import assert_conforms

LABEL_CHARS = string.ascii_lowercase + string.digits + "-"
LABEL_NAMED = {"Service", "Job"}
"""Kinds whose names are DNS labels: a Service's, and a Job's, which goes into its pods' job-name label.
Every other name is a DNS subdomain (253): `<name>-broker-config` is over 63 for a name over 49."""
IMAGES = ["flux:1", "ghcr.io/flux-framework/flux-restful-api:latest", f"registry:5000/a/b@sha256:{'a' * 64}"]


def dns_1035_label(max_size: int) -> st.SearchStrategy[str]:
    middle = st.text(LABEL_CHARS, max_size=max(0, max_size - 2))
    end = st.sampled_from(string.ascii_lowercase + string.digits)
    return st.builds(lambda first, mid, last: first + mid + last, st.sampled_from(string.ascii_lowercase), middle, end)


@st.composite
def valid_configs(draw: st.DrawFn) -> dict[str, Any]:
    size = draw(st.integers(1, 5000))
    max_size = draw(st.one_of(st.none(), st.integers(size, 100_000)))
    largest = max_size or size
    # Leave room for "-<largest rank>" in a 63-character hostname.
    name = draw(dns_1035_label(63 - 1 - len(str(largest - 1))))
    mode = draw(st.sampled_from(["submit", "launcher", "batch", "interactive"]))
    lines = "echo a\necho b" if mode == "batch" else "sh -c 'echo a\necho b'"  # lines are a shell's, or batch's
    command = draw(st.one_of(st.none(), st.sampled_from(["hostname", "lmp -in in.lj", lines])))
    if mode in ("launcher", "batch") and command is None:
        command = "hostname"
    if command is not None and mode in ("submit", "batch"):  # one-shot: maxSize is for elastic clusters
        max_size, largest = None, size
    raw: dict[str, Any] = {
        "image": draw(st.sampled_from(IMAGES)),
        "name": name,
        "namespace": draw(st.sampled_from(["default", "hpc", "team-7"])),
        "size": size,
        "maxSize": max_size,
        "minSize": draw(st.one_of(st.none(), st.integers(1, size))),
        "tasks": draw(st.integers(1, 10_000)),
        "mode": mode,
        "command": command,
        "port": draw(st.integers(1, 65535)),
        "successPolicy": "all",
        "topology": draw(st.one_of(st.none(), st.sampled_from(["binomial", "kary:2", "mincrit:8"]))),
    }
    return {f"minicluster:{key}": value for key, value in raw.items() if value is not None}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_configs())
@example({"minicluster:image": "flux:1", "minicluster:name": "a" * 61, "minicluster:size": 1})  # the longest
def test_valid_configs_build_conforming_objects_with_names_in_limits(raw: dict[str, Any]) -> None:
    spec = load_spec(raw, "dev")
    objects = manifests.all_objects(spec, "certificate text")
    for obj in objects:
        assert_conforms(obj, kubernetes_validate.latest_version())
        name = obj["metadata"]["name"]
        if obj["kind"] in LABEL_NAMED:
            assert len(name) <= 63
        else:  # a DNS subdomain, with pulumi-kubernetes' suffix where it names the object
            assert len(auto_name(name)) <= 253
    assert len(spec.host(spec.largest_size - 1)) <= 63
    assert len(f"{spec.host(spec.largest_size - 1)}.{spec.service}.{spec.namespace}.svc.{spec.cluster_domain}") <= 253


@settings(max_examples=40, deadline=None)
@given(valid_configs())
def test_hostlist_names_exactly_the_ranks(raw: dict[str, Any]) -> None:
    spec = load_spec(raw, "dev")
    hosts = hostlist.expand_hostlist(files.hostlist(spec))
    assert len(hosts) == spec.largest_size
    assert hosts[0] == spec.rank0_host and hosts[-1] == spec.host(spec.largest_size - 1)
