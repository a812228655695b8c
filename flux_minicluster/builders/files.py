"""What the broker pods read: broker.toml, the entrypoint with its files, and its environment."""

from __future__ import annotations

import shlex
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

import tomli_w

from flux_minicluster.builders import restful_api
from flux_minicluster.config import lifecycle, paths, rules
from flux_minicluster.config.spec import MiniClusterSpec

POD_SCRIPTS = Path(str(resources.files("flux_minicluster").joinpath("pod_scripts")))
"""The folder of the pods' own scripts, as this package holds them (the tests run them from there too)."""
SCRIPTS = (
    paths.ENTRYPOINT_SCRIPT, "lib.sh", "readiness.sh", "hooks.sh", "saved_instance.sh", "stopping.sh",
    "worker.sh", "instance.sh", "worker_rc.sh", paths.RESTART_RC1, paths.RESIZE_SCRIPT,
    paths.READINGS_SCRIPT, paths.METRICS_SCRIPT, paths.AUTOSCALER_ENTRY, paths.AUTOSCALER_SCRIPT,
    paths.AUTOSCALING_MODULE, paths.CLUSTER_API_MODULE,
)  # fmt: skip
"""The scripts in every broker pod's run-config directory (pod_scripts/), beside config/sizing.py."""
BATCH_SCRIPT = "batch.sh"
SECRET_ENV_PREFIX = "env."
"""Keys of the config Secret that hold the Flux container's secret environment values (env.NAME)."""
BROKER_CONFIG_KEY = "broker.toml"
CURVE_CERT_KEY = "curve.cert"


def broker_toml(spec: MiniClusterSpec) -> str:
    """The broker config (flux-config-bootstrap(5)): rank = position of the hostname in `hosts`.
    A `brokerConfig` from the stack replaces it whole but for the overlay's tables (overlay_tables)
    that it lacks: its own [tbon] or [heartbeat] table wins over ours."""
    if spec.broker_config is not None:
        own = tomllib.loads(spec.broker_config)
        lacking = {name: table for name, table in overlay_tables(spec).items() if name not in own}
        return f"{spec.broker_config.rstrip()}\n\n{tomli_w.dumps(lacking)}" if lacking else spec.broker_config
    config: dict[str, Any] = {
        "bootstrap": {
            "curve_cert": paths.PRIVATE_CURVE_CERT,
            "default_port": spec.port,
            "default_bind": f"tcp://{spec.network_interface}:%p",
            "default_connect": f"tcp://%h.{spec.service}.{spec.namespace}.svc.{spec.cluster_domain}:%p",
            "hosts": [{"host": hostlist(spec)}],
        },
        # R is written at start by each pod; noverify: nodes need not match it core for core.
        "resource": {"path": paths.RESOURCE_FILE, "noverify": True},
        **overlay_tables(spec),
    }
    if spec.queue_policy:
        config["sched-fluxion-qmanager"] = {"queue-policy": spec.queue_policy}
    if spec.state_volume is not None:  # a killed rank 0 restarts from the latest checkpoint
        config["kvs"] = {"checkpoint-period": spec.state_volume.checkpoint_period}
    return tomli_w.dumps(config)


def hostlist(spec: MiniClusterSpec) -> str:
    """RFC 29 hostlist of every broker the instance may have, in rank order."""
    last = spec.largest_size - 1
    return spec.host(0) if last == 0 else f"{spec.name}-[0-{last}]"


def overlay_tables(spec: MiniClusterSpec) -> dict[str, dict[str, str | int]]:
    """How brokers reach each other and notice that rank 0 has gone: what every MiniCluster needs."""
    return {"tbon": tbon_table(spec), "heartbeat": {"timeout": lifecycle.PARENT_SILENCE}}


def tbon_table(spec: MiniClusterSpec) -> dict[str, str | int]:
    """The overlay network's settings (flux-config-tbon(5)). zmqdebug: the overlay logs its sockets'
    events (at debug level, to the broker's log only), so that a worker sees its link to rank 0 close and
    come back, and speaks to rank 0 at once (worker.sh, watch_parent_link)."""
    tbon: dict[str, str | int] = {"connect_timeout": spec.connect_timeout, "zmqdebug": 1}
    if spec.topology is not None:
        tbon["topo"] = spec.topology
    return tbon


def worker_rc(spec: MiniClusterSpec) -> bool:
    """Whether a worker's rc1 and rc3 are worker_rc.sh: everywhere but where the stack's broker attributes
    name an rc of their own, which then runs as it is."""
    return not {"broker.rc1_path", "broker.rc3_path"} & spec.broker_attributes.keys()


def worker_modules(spec: MiniClusterSpec) -> tuple[str, ...]:
    """The modules a worker's own rc loads (worker_rc.sh): none, so that Flux's own rc runs, where the
    stack could change Flux's plan for a worker: a brokerConfig with a [modules] or [systemd] table (the
    modules' options, systemd's modules), or an rc of its own (worker_rc)."""
    if spec.broker_config is not None and {"modules", "systemd"} & tomllib.loads(spec.broker_config).keys():
        return ()
    if not worker_rc(spec):
        return ()
    return lifecycle.WORKER_MODULES


def script(name: str) -> str:
    return (POD_SCRIPTS / name).read_text()


def run_config_files(spec: MiniClusterSpec) -> dict[str, str]:
    """The scripts and the files that configure them (one item per line, no templating), but for
    those that come from secret config keys (secret_run_files)."""
    files = {name: script(name) for name in SCRIPTS}
    files[paths.SIZING_MODULE] = resources.files("flux_minicluster.config").joinpath("sizing.py").read_text()
    if spec.all_submit_flags:
        files["submit.flags"] = _words(spec.all_submit_flags)
    if spec.broker_attributes:
        files["broker.attributes"] = _lines([f"{key}={value}" for key, value in spec.broker_attributes.items()])
    return {**files, **_files_of(spec, secret=False)}


def secret_run_files(spec: MiniClusterSpec) -> dict[str, str]:
    """The run files that come from secret config keys (command, hooks): they go into the config
    Secret, which the pod mounts in the same directory as the rest."""
    return _files_of(spec, secret=True)


def _files_of(spec: MiniClusterSpec, secret: bool) -> dict[str, str]:
    files: dict[str, str] = {}
    if spec.command is not None and spec.is_secret("command") == secret:
        if spec.mode == "batch":  # the script is the command's only copy: it runs nothing else
            files[BATCH_SCRIPT] = batch_script(spec)
        else:
            files["command.args"] = _words(spec.command_args)
    for hook in ("init", "pre", "post") if spec.is_secret("hooks") == secret else ():
        snippet = getattr(spec.hooks, hook)
        if snippet:
            files[f"{hook}.sh"] = snippet if snippet.endswith("\n") else snippet + "\n"
    return files


def config_secret_data(spec: MiniClusterSpec) -> dict[str, str]:
    """What the config Secret holds: the secret run files, and the secret environment values."""
    env = spec.environment if spec.is_secret("environment") else {}
    return {
        **secret_run_files(spec),
        **{f"{SECRET_ENV_PREFIX}{name}": rules.text(value) for name, value in env.items()},
    }


def batch_script(spec: MiniClusterSpec) -> str:
    """The batch job's script: every command line is submitted at once (they may run side by side),
    then each job is attached to in turn, so that every job's output reaches the log, in the lines'
    order, and the script fails if one job did. The lines are shell lines, as the user wrote them."""
    flux = shlex.quote(spec.flux_path)
    flags = "".join(f"{shlex.quote(flag)} " for flag in spec.all_submit_flags)
    submits = "".join(f'ids+=("$({flux} submit {flags}{line})")\n' for line in spec.command_lines)
    return (
        f"#!/bin/bash\nids=()\n{submits}status=0\n"
        f'for id in "${{ids[@]}}"; do {flux} job attach "$id" || status=1; done\nexit "$status"\n'
    )


def _lines(items: list[str]) -> str:
    return "".join(f"{item}\n" for item in items)


def _words(words: list[str]) -> str:
    """A word a line, as lib.sh's read_words reads them back (with printf %b): each backslash doubled and
    each line break written \\n, so that a word's own line breaks (`python3 -c` of a script) part no words."""
    return _lines([word.replace("\\", "\\\\").replace("\n", "\\n") for word in words])


def entrypoint_env(spec: MiniClusterSpec) -> list[dict[str, Any]]:
    """The Flux container's environment: the scripts' settings, and the RESTful API's credentials."""
    return script_env(spec) + restful_api.credentials(spec)


def script_env(spec: MiniClusterSpec) -> list[dict[str, Any]]:
    """How the scripts learn everything they need. Every MC_* variable is always set (empty: none),
    because the scripts require each one and default none."""
    settings: dict[str, object | None] = {
        "MC_FLUX": spec.flux_path,
        "MC_MODE": spec.mode,
        "MC_MAX_SIZE": spec.largest_size,
        "MC_TASKS": spec.tasks,
        "MC_GPU_IDS": gpu_ids(spec.broker_gpus),
        "MC_HOST_PREFIX": spec.name,
        "MC_HOSTLIST": hostlist(spec),
        "MC_LOG_LEVEL": spec.log_level,
        "MC_WORKER_RETRIES": spec.worker_retries,
        "MC_WORKER_RC": worker_rc(spec),
        "MC_WORKER_MODULES": " ".join(worker_modules(spec)),
        "MC_WORKER_RC_FLUX": lifecycle.WORKER_RC_FLUX,
        "MC_BROKER_CONFIG_DIR": paths.BROKER_CONFIG_DIR,
        "MC_RUN_CONFIG_DIR": paths.RUN_CONFIG_DIR,
        "MC_SCALE_DIR": paths.SCALE_DIR,
        "MC_CURVE_CERT_SOURCE": f"{paths.CURVE_DIR}/{CURVE_CERT_KEY}",
        "MC_STATE_DIR": paths.STATE_DIR,
        "MC_PRIVATE_CURVE_CERT": paths.PRIVATE_CURVE_CERT,
        "MC_RESOURCE_FILE": paths.RESOURCE_FILE,
        "MC_RUN_DIR": paths.RUN_DIR,
        "MC_LOCAL_URI": paths.LOCAL_URI,
        "MC_LOG_PREFIX": lifecycle.LOG_PREFIX,
        "MC_LOG_SINK": paths.LOG_SINK,
        "MC_QUIET": spec.logging.quiet,
        "MC_STRICT": spec.logging.strict,
        "MC_DEBUG": spec.logging.debug,
        "MC_TIMED": spec.logging.timed,
        "MC_FLUX_VIEW": spec.flux_view.path if spec.flux_view.enabled else None,
        "MC_VIEW_SOFTWARE": paths.VIEW_SOFTWARE if spec.flux_view.enabled else None,
        "MC_BATCH_SCRIPT": BATCH_SCRIPT,
        "MC_SECRET_COMMAND": spec.is_secret("command"),
        "MC_BACKOFF_LIMIT": spec.backoff_limit,
        "MC_BATCH_OUTPUT": spec.batch_output,
        "MC_STATE_VOLUME": paths.STATE_VOLUME if spec.state_volume is not None else None,
        "MC_HAND_OVER_NOTE": lifecycle.HAND_OVER_NOTE,
        "MC_NODE_STOP_NOTE": lifecycle.NODE_STOP_NOTE,
        "MC_DRAIN_MARKS": lifecycle.DRAIN_MARKS,
        "MC_REJOIN_MARK": paths.REJOIN_MARK,
        "MC_JOB_END_WAIT": lifecycle.JOB_END_WAIT,
        "MC_STOPPED_QUEUES_FILE": lifecycle.STOPPED_QUEUES_FILE,
        "MC_QUEUE_RESUME_WAIT": lifecycle.QUEUE_RESUME_WAIT,
        "MC_STATE_LOCK_WAIT": lifecycle.STATE_LOCK_WAIT,
        "MC_REJOIN_WAIT": lifecycle.REJOIN_WAIT,
        "MC_RESTART_RC1": paths.RESTART_RC1,
        "MC_READY_LOOK": lifecycle.READY_LOOK,
        "MC_READY_LOOKS": lifecycle.READY_LOOKS,
        "MC_RESTORE_TRIES": lifecycle.RESTORE_TRIES,
        "MC_RESTORE_GRACE": lifecycle.RESTORE_GRACE,
        "MC_RESTORE_PAUSE": lifecycle.RESTORE_PAUSE,
        "MC_CALLED_OFF": lifecycle.CALLED_OFF,
        "MC_RESTFUL_PORT": spec.restful_api.port if spec.restful_api.enabled else None,
        "MC_METRICS_PORT": spec.metrics.port if spec.metrics.enabled else None,
        "MC_METRICS_CACHE": lifecycle.METRICS_CACHE if spec.metrics.enabled else None,
        "MC_MIN_SIZE": spec.smallest_size if spec.metrics.enabled else None,
        **restful_api.settings(spec),
    }
    return _env(settings)


def autoscaler_env(spec: MiniClusterSpec, scale_config: Any) -> list[dict[str, Any]]:
    """What rank 0's autoscaler needs besides the scripts' settings: its rhythm, the resize's bounds,
    and the names of what it patches, as they were created (`scale_config`: an Output in Pulumi)."""
    autoscale = spec.autoscale
    settings: dict[str, object | None] = {
        "MC_AUTOSCALE_INTERVAL": autoscale.interval,
        "MC_AUTOSCALE_DOWN_AFTER": autoscale.scale_down_after,
        "MC_AUTOSCALE_COOLDOWN": autoscale.cooldown,
        "MC_AUTOSCALE_MIN_SIZE": spec.min_size,  # empty: none set (the quorum then follows the size)
        "MC_SCHEDULE_TIMEOUT": spec.schedule_timeout,
        "MC_NAMESPACE": spec.namespace,
        "MC_JOB": spec.name,
        "MC_SERVICE_ACCOUNT_DIR": paths.SERVICE_ACCOUNT_DIR,
    }
    return [*_env(settings), {"name": "MC_SCALE_CONFIG", "value": scale_config}]


def _env(settings: dict[str, object | None]) -> list[dict[str, Any]]:
    return [
        {"name": key, "value": "" if value is None else rules.text(value)}
        for key, value in settings.items()
        if value is not None or key.startswith(rules.RESERVED_ENV_PREFIX)
    ]


def gpu_ids(count: int) -> str | None:
    """The GPUs of one broker in R, as an idset: the device plugin exposes a pod's GPUs as 0..count-1."""
    return rules.idset(range(count)) or None
