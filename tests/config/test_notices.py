"""Warnings for a valid stack config that may not do what its user meant (config/notices.py):

- the Kubernetes provider's default namespace (kubernetes:namespace) is not the MiniCluster's: the
  provider puts there only objects that name no namespace, and every object of the MiniCluster names its
  own (minicluster:namespace, `default` unless set);
- a suspended Job that names no Kueue queue runs only once something resumes it, and `pulumi up` waits
  for that (a real `pulumi up` says only "Waiting for Job to start" until jobTimeout);
- a command of `flux run` (or submit, batch...) in a mode that submits the command as a job itself.
(And environment values written as for a shell.)"""

from __future__ import annotations

from typing import Any

import pytest

from flux_minicluster.config.loader import load_spec
from flux_minicluster.config.notices import config_warnings

BASE = {"minicluster:image": "flux:1", "minicluster:command": "hostname"}


def warnings(**config: Any) -> list[str]:
    raw = {**BASE, **config}
    return config_warnings(raw, load_spec(raw, "dev"))


def test_a_plain_config_has_none() -> None:
    assert warnings() == []


def test_a_provider_namespace_without_a_minicluster_namespace_is_warned_of() -> None:
    assert warnings(**{"kubernetes:namespace": "hpc"}) == [
        "kubernetes:namespace is 'hpc', but MiniCluster 'dev' goes to namespace 'default' (minicluster:namespace, "
        "unset, has that default): set minicluster:namespace to 'hpc' to put it there"
    ]


def test_a_minicluster_namespace_set_apart_from_the_providers_is_the_users_choice() -> None:
    assert warnings(**{"kubernetes:namespace": "hpc", "minicluster:namespace": "flux"}) == []


def test_a_provider_namespace_that_is_the_default_one_is_no_news() -> None:
    assert warnings(**{"kubernetes:namespace": "default"}) == []


def test_a_suspended_job_that_names_no_queue_is_warned_of_with_what_resumes_it() -> None:
    assert warnings(**{"minicluster:suspend": True, "minicluster:jobTimeout": 600}) == [
        "minicluster:suspend is true and minicluster:jobLabels names no kueue.x-k8s.io/queue-name: the Job runs "
        "only once something resumes it (a queue that takes Jobs without that label, or `kubectl patch job dev -n "
        """default -p '{"spec":{"suspend":false}}'`), and `pulumi up` waits for that for up to """
        "minicluster:jobTimeout (600s)"
    ]


def test_a_suspended_job_in_a_kueue_queue_is_kueues_to_resume() -> None:
    labels = {"kueue.x-k8s.io/queue-name": "hpc"}
    assert warnings(**{"minicluster:suspend": True, "minicluster:jobLabels": labels}) == []


def test_an_environment_value_that_refers_to_a_variable_as_a_shell_would_is_warned_of() -> None:
    """`PATH: /opt/app/bin:$PATH` replaced the image's whole PATH: on the real node the pods failed at their
    first `mkdir`, with nothing that said why."""
    assert warnings(**{"minicluster:environment": {"PATH": "/opt/app/bin:$PATH", "DATA": "${HOME}/data"}}) == [
        "minicluster:environment.PATH refers to $PATH as a shell would, and Kubernetes takes that as written (it "
        "expands only $(NAME), of a variable set before it in the pod spec): the image's PATH is replaced by this one",
        "minicluster:environment.DATA refers to ${HOME} as a shell would, and Kubernetes takes that as written (it "
        "expands only $(NAME), of a variable set before it in the pod spec)",
    ]


def test_a_sidecars_environment_is_looked_at_too() -> None:
    sidecar = {"name": "exporter", "image": "exporter:1", "environment": {"ROOT": "$HOME/x"}}
    (said,) = warnings(**{"minicluster:containers": [sidecar]})
    assert said.startswith("minicluster:containers[0].environment.ROOT refers to $HOME as a shell would")


def test_what_kubernetes_expands_and_a_lone_dollar_are_no_news() -> None:
    assert warnings(**{"minicluster:environment": {"A": "/x", "B": "$(A)/y", "PRICE": "5$", "N": 3}}) == []


def test_a_secret_environments_values_are_not_looked_at() -> None:
    """A warning would show them."""
    raw = {**BASE, "minicluster:environment": {"TOKEN": "$SECRET_PART"}}
    assert config_warnings(raw, load_spec(raw, "dev", ["minicluster:environment"])) == []


@pytest.mark.parametrize("mode", ["submit", "interactive"])
def test_a_command_that_submits_flux_jobs_in_a_mode_that_submits_it_is_warned_of(mode: str) -> None:
    """On real Flux, `flux run -N1 hostname` at two brokers waited out jobTimeout: its job held the nodes."""
    assert warnings(**{"minicluster:command": "/usr/bin/flux run -N1 hostname", "minicluster:mode": mode}) == [
        f"minicluster:command is `flux run ...`, and mode {mode!r} runs the command as a Flux job of its own, which "
        "holds the cluster's nodes: the job it submits waits for nodes that its own job holds, for good where none "
        "is free (`pulumi up` then waits out minicluster:jobTimeout, 3600s). For a command that runs Flux jobs "
        "itself, set minicluster:mode to launcher: it is then the instance's program"
    ]


@pytest.mark.parametrize("command", ["flux run -N1 hostname", "flux resource list", "sh -c 'flux run -N1 hostname'"])
def test_a_launcher_a_flux_command_that_submits_nothing_or_one_a_shell_runs_is_no_news(command: str) -> None:
    mode = "launcher" if command == "flux run -N1 hostname" else "submit"
    assert warnings(**{"minicluster:command": command, "minicluster:mode": mode}) == []


def test_a_secret_command_is_not_looked_at() -> None:
    raw = {**BASE, "minicluster:command": "flux run -N1 hostname"}
    assert config_warnings(raw, load_spec(raw, "dev", ["minicluster:command"])) == []
