"""How a broker pod's life goes where it is not the user's to configure: the numbers and file names the
entrypoint requires (as MC_* variables, never defaulted in bash) and the readiness probe's timing.
Defined once here; the builders hand them over (flux_minicluster.builders.files, pod_template)."""

STATE_LOCK_WAIT = 300
"""Seconds a replaced rank 0 waits for its predecessor's broker to let go of the saved instance. The
kubelet kills a stopping broker after the pod's grace period (30 s by default), and an NFSv4 server
frees a dead client's lock after its lease (90 s by default): both come well within this."""
RESTORE_TRIES = 3
"""Starts from the saved state, each failing within RESTORE_GRACE, before it is moved aside: one
failed start is not enough to throw an instance's queue and history away."""
RESTORE_GRACE = 60
"""Seconds within which a broker that exits non-zero before it is up counts as not having started from
the saved state. A broker that was up or ran longer crashed: it is started again from the state at once."""
RESTORE_PAUSE = 5
"""Seconds between those starts."""
QUEUE_RESUME_WAIT = 300
"""Seconds a replaced rank 0 tries to start scheduling again (which its predecessor stopped when it
handed over) while its broker comes up."""
STOPPED_QUEUES_FILE = "minicluster-stopped-queues"
"""In rank 0's statedir: the queues a hand-over stopped, one per line (an empty line: the default
queue), for the replacement to start again. A queue a user stopped is never in it."""
HAND_OVER_NOTE = "minicluster: rank 0's pod is stopping"
"""The reason on the queues a hand-over stops, and the note on the jobs it cancels."""
NODE_STOP_NOTE = "minicluster: the pod of rank {rank} is stopping"
"""Why a stopping worker drains its rank, and the note on the node-failure exception it raises on the
jobs that run on it ({rank}: its rank)."""
DRAIN_MARKS = "minicluster.drained"
"""KVS directory of the ranks a stopping worker drained (one key per rank), for the next pod of that
rank to undrain."""
JOB_END_WAIT = 10
"""Seconds a stopping worker waits, at most, for the jobs it raised that exception on to end here before
its broker stops: Flux sends their tasks SIGTERM, and SIGKILL [exec] kill-timeout later (5 s by
default). Beyond it, Flux holds the jobs' other nodes until it gives up on this rank (25 s)."""

READY_PERIOD = 2
"""Seconds between two runs of the readiness probe. Until the broker is up each run asks Flux
(`flux dmesg`: has it entered the run state?); after that, only whether that broker still runs (bash
and kill -0, a few ms)."""
READY_TIMEOUT = 10
"""Seconds one probe may take (`flux dmesg` connects to the local broker)."""
READY_LOOK = 0.1
"""Seconds between two looks of one probe run at a broker that runs but is not up yet."""
READY_LOOKS = 15
"""Looks one probe run takes before it answers no (about 1.5 s, within READY_PERIOD): a probe run is
then under way most of the time while the broker comes up, and the pod is Ready within about
READY_LOOK of its broker entering the run state, instead of up to READY_PERIOD later."""

LOG_PREFIX = "minicluster"
"""Every line the scripts log starts `<LOG_PREFIX>[rank N]: `."""
CALLED_OFF = 3
"""resize.sh's exit status when work still runs on the ranks that would go: the shrink is called off."""

POD_GRACE = 30
"""Seconds Kubernetes gives a stopping pod (its default terminationGracePeriodSeconds, which the broker
pods keep): how long an elastic Job's pods may take to go once Pulumi deleted it."""
DELETION_MARGIN = 60
"""Seconds beyond POD_GRACE that `pulumi destroy` (or a replacement of the Job) waits for an elastic
Job and its pods to be gone, for the Job controller and the kubelets to catch up."""

METRICS_CACHE = 2
"""Seconds the metrics server (the pods' metrics.py) keeps its readings: scrapes closer together than
this (several Prometheus replicas) cost the broker nothing more."""

PARENT_SILENCE = "60s"
"""broker.toml's [heartbeat] timeout (flux-config-heartbeat(5)): a worker that hears no heartbeat from
rank 0 for this long drops its connection to it, so its broker exits and the entrypoint starts it again,
and it joins whatever rank 0 now runs. Flux's own default is 5 minutes. A worker normally learns of a
replaced rank 0 from the replacement itself, which turns away a connection it does not know as soon as
the worker speaks (the worker's watch of its link pings rank 0 once the link is back); but a
replacement can keep a stale connection of that worker's open (a link that dropped while only the
worker had data in flight), and the worker's next connection, under the same identity, is then
ignored: the worker stays offline, and every job that needs all the nodes waits, until this timeout.
Rank 0 sends a heartbeat every 2 s, so a minute is far beyond any pause of a busy rank 0."""
REJOIN_WAIT = 300
"""Seconds a worker whose broker had joined and then lost rank 0, or was marked to rejoin (rank 0's pod, or
that of the worker above it, went away), goes on starting its broker, beyond `workerRetries` tries, until
it joins again: a replaced rank 0 may wait up to STATE_LOCK_WAIT for its
predecessor's lock, and its pod must be scheduled and its image pulled first. Before PARENT_SILENCE a
worker waited that long unawares, for Flux's 5 minutes; a worker that gives up fails its pod, and with
the default backoffLimit the Job."""

WORKER_MODULES = ("heartbeat", "content", "kvs", "kvs-watch", "resource", "job-info", "job-ingest")
"""The modules Flux's own rc1 (`flux modprobe rc1`, flux-core WORKER_RC_FLUX) loads on a rank above 0
where nothing is configured beyond Flux's own module table, in an order its dependencies allow. A
worker's rc1 (worker_rc.sh) loads these with Flux's C commands, and its rc3 removes them in reverse:
the same modules without modprobe's Python on every worker's way in and out (docs/benchmarks/sizes-and-bringup.md)."""
WORKER_RC_FLUX = "0.88."
"""The flux-core version (a prefix of `flux version`'s) whose worker plan WORKER_MODULES is; any other
Flux runs its own rc1 and rc3."""
