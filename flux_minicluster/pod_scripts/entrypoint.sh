#!/usr/bin/env bash
# MiniCluster broker entrypoint: the same script runs in every pod, for every rank and mode.
#
# Usage: entrypoint.sh            start this pod's broker
#        entrypoint.sh --ready    the readiness probe: exits 0 only while this pod's broker is up in the
#                                 instance (it reached the run state)
#        entrypoint.sh --readings the instance's own view as JSON (readings.py, with Flux's Python, against
#                                 this pod's broker): what `minicluster status` asks rank 0
#
# Static: the Job configures it with MC_* variables (all required; defined in builders/files.py) and
# the files mounted beside it: command.args and submit.flags (one item per line), batch.sh, the hooks
# init.sh, pre.sh and post.sh, and the other scripts: lib.sh, readiness.sh (the readiness probe),
# hooks.sh (how the hooks run), saved_instance.sh (rank 0 across pods, with restart_rc1.py, its own step
# in Flux's rc1), stopping.sh (what a broker does before it stops), worker.sh (a worker's broker and
# what runs beside it), worker_rc.sh (a worker broker's rc1 and rc3), instance.sh (rank 0's program for
# batch, interactive, a secret command, the RESTful API), resize.sh, and the Python companion started
# beside the broker: metrics.py (metrics.enabled).
# autoscaler.sh is another container's.
# The current size and quorum are read at start from MC_SCALE_DIR, which a resize rewrites in place.
# Stopping: SIGTERM is passed to the broker, and the pod exits 143 (never 0: a Job does not rerun a
# succeeded index); rank 0 first hands the instance over, a worker first leaves it (stopping.sh).

set -o pipefail
if [[ ${MC_STRICT:?} == true ]]; then set -euo pipefail; fi
if [[ ${MC_DEBUG:?} == true ]]; then set -x; fi
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "${MC_RUN_CONFIG_DIR:?}/lib.sh"
# shellcheck source=readiness.sh source-path=SCRIPTDIR
source "$run_config/readiness.sh"
# shellcheck source=hooks.sh source-path=SCRIPTDIR
source "$run_config/hooks.sh"

rejoin_mark=${MC_REJOIN_MARK:?} # that this worker's broker is to rejoin as it ends (start_worker)
broker_pid=""
restart_step_pid="" # undoes what the previous pod's stop did, once the broker answers: rank 0 starts
                    # scheduling again (resume_scheduling), a worker undrains its rank (undrain_rank)
                    # and, beside that, watches its link to rank 0 (watch_parent_link)
state_lock="" # the descriptor of the saved instance's lock (rank 0 with a state volume)
instance_dir="" # where this broker keeps the instance's state (statedir), found once by prepare_state
broker_was_ready=false # the last broker was up in its instance (the readiness probe said so)
stop_requested=false
readonly STOPPED=143 # 128 + SIGTERM

# The rank is this pod's position in the hostlist <prefix>-[0-(max_size-1)]: the number after the prefix.
find_rank() {
  local host=${HOSTNAME%%.*} index
  index=${host#"${MC_HOST_PREFIX:?}-"}
  if [[ $index == "$host" || ! $index =~ ^(0|[1-9][0-9]*)$ ]] || ((index >= ${MC_MAX_SIZE:?})); then
    die "hostname '$host' is not in the hostlist ${MC_HOSTLIST:?}"
  fi
  if [[ ${JOB_COMPLETION_INDEX:-} != "$index" ]]; then
    die "hostname '$host' says rank $index but JOB_COMPLETION_INDEX is '${JOB_COMPLETION_INDEX:-unset}'"
  fi
  rank=$index
  export MC_RANK=$rank
}

# The current size (MC_SIZE) and quorum (MC_QUORUM, may be empty), exported for rank 0's program.
read_scale() {
  local scale=${MC_SCALE_DIR:?}
  [[ -r $scale/size ]] || die "cannot read the current size from $scale/size"
  MC_SIZE=$(<"$scale/size") MC_QUORUM=""
  if [[ -r $scale/quorum ]]; then MC_QUORUM=$(<"$scale/quorum"); fi
  [[ $MC_SIZE =~ ^[1-9][0-9]*$ ]] || die "$scale/size holds '$MC_SIZE', not a size"
  export MC_SIZE MC_QUORUM
}

# The broker refuses a certificate others can read, and the Secret mount is read-only: copy it privately.
# (Every process here is on each pod's way to its broker: one per step, no subshells.)
prepare_state() {
  instance_dir=$(statedir)
  mkdir -p "${MC_RUN_DIR:?}" "$instance_dir" || die "cannot create $MC_RUN_DIR and $instance_dir"
  # What the container before this one in the pod left (restartPolicy OnFailure: the state volume stays)
  # is not this one's: a mark to rejoin, and its broker's pid with the readiness probe's word on it, which
  # would say Ready, and that a broker had joined, before this container's broker has.
  if [[ -e $rejoin_mark || -e $state/broker.pid || -e $state/ready ]]; then
    rm -f "$rejoin_mark" "$state/broker.pid" "$state/ready"
  fi
  install -m 0600 "${MC_CURVE_CERT_SOURCE:?}" "${MC_PRIVATE_CURVE_CERT:?}" || die "cannot copy $MC_CURVE_CERT_SOURCE"
  write_resource_set >"${MC_RESOURCE_FILE:?}" || die "flux R encode failed"
}

# R: rank 0's is the instance's, and every host gets rank 0's cores and GPUs (the nodes of one
# MiniCluster are assumed alike). hwloc in a container sees no GPU, or all of the node's, so the GPUs are
# the pod's own (MC_GPU_IDS); flux R refuses --gpus beside --local, so the cores are then hwloc's count.
# A worker's broker only parses its R and ranks it against the hostlist (noverify: it never checks it
# against its node), so a worker writes R of the same hosts with one core each, in bash: no hwloc and no
# process on every worker's way to its broker.
write_resource_set() {
  local cores
  if ((rank != 0)); then
    local ranks=0
    if ((${MC_MAX_SIZE:?} > 1)); then ranks=0-$((MC_MAX_SIZE - 1)); fi
    printf '{"version": 1, "execution": {"R_lite": [{"rank": "%s", "children": {"core": "0"}}], ' "$ranks"
    printf '"starttime": 0.0, "expiration": 0.0, "nodelist": ["%s"]}}\n' "$MC_HOSTLIST"
    return
  fi
  if [[ -z ${MC_GPU_IDS?} ]]; then
    local_resources --hosts="$MC_HOSTLIST"
    return
  fi
  cores=$(local_resources | "$flux" R decode --count=core) || return 1
  [[ $cores =~ ^[1-9][0-9]*$ ]] || return 1
  "$flux" R encode --hosts="$MC_HOSTLIST" --cores="0-$((cores - 1))" --gpus="$MC_GPU_IDS"
}

# This pod's cores, from hwloc without its I/O discovery: the plugins (PCI, OpenCL, GL) took 50 of a
# discovery's 60 ms, and the built-in linuxio component (block, network and GPU devices in /sys) half
# of the rest, on every pod's way to its broker; R takes only cores from here (GPUs: MC_GPU_IDS). An
# hwloc that does not know a component name ignores it.
local_resources() {
  HWLOC_COMPONENTS=-linuxio HWLOC_PLUGINS_PATH=/nonexistent "$flux" R encode "$@" --local
}

# $2: true for a rank 0 that restarts a saved instance (saved_instance.sh says why its quorum is 1).
broker_options() {
  local -n options_out_=$1
  local restarting_saved=${2:-false} quorum=$MC_QUORUM
  local -a attributes
  options_out_=(
    "-o,--config-path=${MC_BROKER_CONFIG_DIR:?}"
    "-Srundir=$MC_RUN_DIR"
    "-Sstatedir=${instance_dir:?}"
    "-Slocal-uri=$local_uri"
    "-Slog-stderr-level=${MC_LOG_LEVEL:?}"
    "-Slog-stderr-mode=local"
  )
  if [[ $restarting_saved == true ]]; then quorum=1; fi
  if [[ -n $quorum ]]; then options_out_+=("-Sbroker.quorum=$quorum"); fi
  read_lines attributes broker.attributes
  if ((${#attributes[@]})); then options_out_+=("${attributes[@]/#/-S}"); fi
}

# The broker runs in the background so that this shell can take SIGTERM while it works. It gets what
# a foreground command would: bash ignores SIGINT and SIGQUIT in a background command and gives it
# /dev/null as stdin, and the broker and everything it runs would inherit that. (No redirection on the
# wait: this shell is the container's first process, and resize.sh logs through its stderr meanwhile.)
# It runs in a session of its own, and whatever of that session is still running when it ends, however
# it ends, is killed: Flux runs its rc scripts, job shells and initial program in process groups of their
# own, and they outlive a broker that dies on its own (an OOM kill, a crash). A worker, or a rank 0
# restarted from its checkpoint, then starts another broker in this pod: a job's task left running holds
# the node, and its GPUs, that Flux gives to the next job (on real Flux it ran on for good), and an rc3
# left running acts on the next broker, which listens on the same socket path.
run_broker() {
  local status=0 session=()
  if command -v setsid >/dev/null; then
    session=(setsid) # the subshell leads no process group, so setsid does not fork: the pid is the broker's
  else
    log "this image has no setsid (util-linux): what the broker leaves running if it dies will not be ended"
  fi
  (
    trap - INT QUIT
    exec "${session[@]}" "$@"
  ) <&0 &
  broker_pid=$!
  printf '%s\n' "$broker_pid" >"$state/broker.pid"
  wait "$broker_pid" || status=$?
  while kill -0 "$broker_pid" 2>/dev/null; do # a signal interrupted the wait: the broker is still stopping
    status=0
    wait "$broker_pid" || status=$?
  done
  # The readiness probe's word on this broker, not on the one before it: a probe that found that one up
  # as it ended may have written its word after it was cleared.
  broker_was_ready=false
  if broker_up; then broker_was_ready=true; fi
  rm -f "$state/broker.pid" "$state/ready"
  kill_tree "$broker_pid"
  if ((${#killed[@]})); then log "ended what the broker left running: ${#killed[@]} processes"; fi
  broker_pid=""
  return "$status"
}

# The restart step ended, with all it started (a worker's undrain runs in the background of its watch),
# and reaped here, where bash's word that it was killed goes nowhere: only when kill_tree found it still
# there. A step that had ended and been reaped already made that wait hang in the SIGTERM trap (a stand-in
# test, one run in 40 to 80 on a loaded machine), and the pod's stop with it.
end_restart_step() {
  local -a killed # kill_tree's list: run_broker's own is not this one
  [[ -n $restart_step_pid ]] || return 0
  kill_tree "$restart_step_pid"
  if [[ ${killed[0]-} == "$restart_step_pid" ]]; then wait "$restart_step_pid" 2>/dev/null || true; fi
  restart_step_pid=""
}

# Beside the broker, for the pod's life (the container's end ends them): Prometheus metrics
# (metrics.enabled), whose readings say 0 while the broker is not up, niced where the image has nice so
# that they yield the CPU to it. (Rank 0's autoscaler has a container of its own: autoscaler.sh.)
start_companions() {
  local -a lower=()
  if [[ -n ${MC_METRICS_PORT?} ]]; then
    if command -v nice >/dev/null; then lower=(nice -n 19); fi
    log "serving metrics on port $MC_METRICS_PORT"
    "${lower[@]}" "$flux" python "$run_config/metrics.py" </dev/null &
  fi
}

# Rank 0: the instance's initial program decides the mode. flux start returns that program's status.
# $1: true when it restarts a saved instance (broker_options; its rc1 gets rank 0's own step then).
start_rank0() {
  local -a options command program broker=("$flux" start)
  broker_options options "${1:-false}"
  if [[ ${1:-false} == true ]]; then with_restart_rc1 broker; fi
  read_words command command.args
  if [[ -n ${MC_RESTFUL_PORT?} || ${MC_MODE:?} == batch ]]; then # batch: its command is batch.sh
    program=(bash "$run_config/instance.sh")
  elif ((${#command[@]} == 0)); then
    log "persistent instance: no initial program; stop it with 'flux shutdown'"
    program=(-Sbroker.rc2_none=1)
  elif [[ $MC_MODE == interactive || ${MC_SECRET_COMMAND:?} == true ]] || ((${MC_BACKOFF_LIMIT:?} > 0)); then
    # Flux logs its initial program's words, and a failed pod's log tail is its termination message
    # (in the pod's status, `pulumi up`'s error and Pulumi's state): a secret command runs from there.
    # So does one the Job runs again after a failure: there, a failure first marks the workers.
    program=(bash "$run_config/instance.sh")
  else
    case $MC_MODE in
      submit) submit_command program ;;
      launcher) program=("${command[@]}") ;;
      *) die "unknown MC_MODE '$MC_MODE'" ;;
    esac
  fi
  run_broker "${broker[@]}" "${options[@]}" "${program[@]}"
}

main() {
  use_flux_view
  if [[ ${1:-} == --ready ]]; then
    ready
    return
  fi
  if [[ ${1:-} == --readings ]]; then
    FLUX_URI=$local_uri exec "$flux" python "$run_config/readings.py"
  fi
  # Only now: the readiness probe, run every few seconds for the pod's life, needs none of it.
  # shellcheck source=saved_instance.sh source-path=SCRIPTDIR
  source "$run_config/saved_instance.sh"
  # shellcheck source=stopping.sh source-path=SCRIPTDIR
  source "$run_config/stopping.sh"
  # shellcheck source=worker.sh source-path=SCRIPTDIR
  source "$run_config/worker.sh"
  restore_view_software
  trap on_stop TERM INT
  run_hook init
  find_rank
  read_scale
  log "rank $rank of $MC_SIZE in $MC_HOSTLIST, mode $MC_MODE"
  if ((rank >= MC_SIZE)); then
    log "rank $rank is beyond the current size $MC_SIZE: the cluster is being resized; starting anyway" \
      "(Kubernetes removes this pod if it is shrinking)"
  fi
  prepare_state
  start_companions
  run_hook pre
  local status=0 started=$SECONDS
  if [[ $stop_requested == true ]]; then
    status=$STOPPED
  elif ((rank == 0)) && [[ -n $MC_STATE_VOLUME ]]; then
    start_saved_instance || status=$?
  elif ((rank == 0)); then
    start_rank0 || status=$?
  else
    start_worker || status=$?
  fi
  if [[ $stop_requested == true ]]; then status=$STOPPED; fi
  end_restart_step
  if [[ ${MC_TIMED:?} == true ]]; then log "the broker ran for $((SECONDS - started))s"; fi
  export MC_EXIT_STATUS=$status
  run_hook post
  log "exiting with status $status"
  return "$status"
}

main "$@"
