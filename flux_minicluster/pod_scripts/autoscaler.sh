#!/usr/bin/env bash
# The autoscaler container (autoscale.enabled): a native sidecar of every broker pod, and the only
# container of the pod that mounts the service account's token, so that no Flux job can read it.
#
# Rank 0's runs autoscaler.py with Flux's own Python; it reaches its broker through the broker's local
# socket on the pod's state volume, as the instance's owner (the pod's user). Every other rank's waits
# to be stopped: a native sidecar that ends is started again, so it must not end by itself. Kubernetes
# stops it (SIGTERM) once the broker's container has ended.
#
# Static, as the entrypoint: the Job configures it with MC_* variables (builders/files.py) and the
# files beside it; the Job controller sets JOB_COMPLETION_INDEX (the rank) in every container.

set -o pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "${MC_RUN_CONFIG_DIR:?}/lib.sh"
rank=${JOB_COMPLETION_INDEX:?}

# This shell stays the container's first process, which the kernel gives only the signals it handles:
# it takes Kubernetes' SIGTERM, stops the autoscaler, and ends with 0, at once.
trap 'exit 0' TERM
if [[ $rank != 0 ]]; then
  while :; do pause 3600; done
fi
use_flux_view
restore_view_software
"$flux" python "$run_config/autoscaler.py" </dev/null &
autoscaler=$!
trap 'kill "$autoscaler" 2>/dev/null; exit 0' TERM
wait "$autoscaler"
