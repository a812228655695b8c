"""Gang scheduling: a MiniCluster is of no use until every broker is placed, so its pods go to a gang
scheduler that places all of them at once or none. Pure pydantic; the PodGroup and the pods' marks are
built from it in builders/gang.py."""

from __future__ import annotations

from typing import Literal

from flux_minicluster.config.settings import Model
from flux_minicluster.config.types import Subdomain

Gang = Literal["coscheduling", "volcano"]
SCHEDULER_NAMES: dict[str, str] = {
    "coscheduling": "scheduler-plugins-scheduler",  # the second scheduler that scheduler-plugins' Helm chart installs
    "volcano": "volcano",
}


class Scheduler(Model):
    """Which scheduler places the brokers, and as one gang."""

    gang: Gang
    """coscheduling: the Coscheduling plugin of kubernetes-sigs/scheduler-plugins (a PodGroup of
    scheduling.x-k8s.io/v1alpha1); volcano: Volcano (a PodGroup of scheduling.volcano.sh/v1beta1).
    Either way a PodGroup with minMember = size is created before the Job, and kept at the size by a resize."""
    name: Subdomain | None = None
    """The scheduler's name (the pods' schedulerName). Default: scheduler-plugins-scheduler (coscheduling,
    as its Helm chart installs it beside the default scheduler; default-scheduler where it replaced it)
    or volcano."""
    queue: str | None = None
    """volcano only: the Volcano queue of the PodGroup. Default: Volcano's own (default)."""

    @property
    def scheduler_name(self) -> str:
        return self.name or SCHEDULER_NAMES[self.gang]
