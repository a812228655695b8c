# shellcheck shell=bash disable=SC2154 # the entrypoint's variables
# Rank 0's instance beyond one pod: handing it over when the pod stops, and restarting it from the
# state volume in the next pod. Sourced by entrypoint.sh, whose variables and functions it uses.

# Where rank 0 keeps the instance's state: on the state volume if there is one (a replaced rank 0
# restarts the same instance from it), else in the pod.
statedir() {
  if ((rank == 0)) && [[ -n ${MC_STATE_VOLUME?} ]]; then
    printf '%s/%s' "$MC_STATE_VOLUME" "$MC_HOST_PREFIX"
  else
    printf '%s/content' "$state"
  fi
}

# Rank 0 is going away (eviction, drain, replacement), which is not the end of the instance's work:
# every worker is marked to rejoin rank 0's replacement, scheduling stops, and the jobs running now
# are cancelled, with a note. Queued jobs stay queued, for a replacement that restarts from the state
# volume. (Running jobs cannot be kept: rank 0 runs their job shells, and Flux cannot reattach to them.)
hand_over_rank0() {
  local -x FLUX_URI=$local_uri
  if ! bounded "$flux" exec -r all touch "$rejoin_mark" >/dev/null 2>&1; then
    log "could not mark every worker to rejoin (some may be down); those that were not will complete"
  fi
  local marking
  mark_late_joiners &
  marking=$!
  stop_scheduling
  log "cancelling the running jobs: rank 0's pod is stopping"
  bounded "$flux" cancel --user=all --states=running --message="${MC_HAND_OVER_NOTE:?}" ||
    log "could not cancel the running jobs"
  wait "$marking" || true
}

# A worker that joins during the hand-over (a replaced worker, while the jobs are cancelled) was not
# there to be marked, and would complete when this broker stops. The broker marks every rank once
# more in its cleanup, its last step before it tells the workers to stop. (Asked beside the rest of
# the hand-over: `flux admin` is a Python command, slow to start.)
mark_late_joiners() {
  local mark_all
  mark_all="$(time_limit) $(printf '%q ' "$flux" exec -r all touch "$rejoin_mark")"
  bounded "$flux" admin cleanup-push "$mark_all" >/dev/null 2>&1 ||
    log "could not have the broker mark the workers that join from now on"
}

# Without this, the scheduler starts the next queued job on the nodes the cancel frees, and the
# broker's own shutdown cancels it. Only started queues are stopped, and they are noted in the statedir
# for the replacement to start again: a queue a user stopped stays stopped. (A stopped queue is saved
# with the instance.)
stop_scheduling() {
  local listing line queue
  local -a started=()
  if ! listing=$(bounded "$flux" queue status 2>/dev/null); then
    log "could not read the queues' status: scheduling goes on"
    return
  fi
  while IFS= read -r line; do
    case $line in
      "Scheduling is started") started+=("") ;;
      *": Scheduling is started") started+=("${line%: Scheduling is started}") ;;
    esac
  done <<<"$listing"
  if ((${#started[@]} == 0)); then
    rm -f "$(statedir)/${MC_STOPPED_QUEUES_FILE:?}" # an earlier hand-over's note must not start them
    log "scheduling was stopped already (flux queue stop): it stays stopped"
    return
  fi
  printf '%s\n' "${started[@]}" >"$(statedir)/${MC_STOPPED_QUEUES_FILE:?}"
  log "stopping scheduling, so that no queued job starts on the nodes the cancel frees"
  for queue in "${started[@]}"; do
    bounded "$flux" queue stop --quiet --message="$MC_HAND_OVER_NOTE" ${queue:+"$queue"} ||
      log "could not stop scheduling${queue:+ of queue $queue}"
  done
}

# The queues the previous rank 0 stopped when it handed over start again once this broker answers
# (its job manager has restored the saved queue by then). The note stays: Flux saves the queues'
# state with the instance only when the broker stops cleanly, so a broker killed later restarts
# with them stopped again, and its replacement must start them too. The next clean stop replaces the
# note (a hand-over) or removes it (anything else).
resume_scheduling() {
  local noted=$1/$MC_STOPPED_QUEUES_FILE queue deadline=$((SECONDS + ${MC_QUEUE_RESUME_WAIT:?}))
  local -a queues
  local -x FLUX_URI=$local_uri
  mapfile -t queues <"$noted"
  for queue in "${queues[@]}"; do
    until "$flux" queue start --quiet ${queue:+"$queue"} 2>/dev/null; do
      if ((SECONDS >= deadline)); then
        log "could not start scheduling again within ${MC_QUEUE_RESUME_WAIT}s: run 'flux queue start'"
        return 1
      fi
      sleep 1
    done
  done
  log "scheduling started again: the previous rank 0 had stopped it when its pod went away"
}

# A command that may take 5 s at most, where the image has `timeout` (the grace period bounds it anyway).
# SIGTERM is not enough: `flux exec` passes it on to its tasks and goes on waiting for a rank that is
# gone (a worker killed as rank 0 hands over), so the call is killed a second later.
bounded() {
  local -a limit
  read -ra limit <<<"$(time_limit)"
  "${limit[@]}" "$@"
}

time_limit() {
  if command -v timeout >/dev/null; then printf 'timeout -k 1 5'; fi
}

# Only one broker at a time may restart the saved instance: this pod holds its lock from before its
# broker starts until the pod ends. A saved state the broker cannot start from (it fails
# MC_RESTORE_TRIES times, each within MC_RESTORE_GRACE seconds, while this pod holds the lock) is kept
# aside for `flux start --recovery`, and a new, empty instance starts instead.
start_saved_instance() {
  local saved status tries=0 started kept
  saved=$(statedir)
  hold_saved_instance "$saved"
  if [[ $stop_requested == true ]]; then return "$STOPPED"; fi
  if [[ ! -e $saved/content.sqlite ]]; then
    start_rank0
    return
  fi
  log "restarting the instance saved in $saved: its queue and job history come back"
  while :; do
    if [[ -f $saved/$MC_STOPPED_QUEUES_FILE ]]; then
      resume_scheduling "$saved" &
      resume_pid=$!
    fi
    status=0 started=$SECONDS tries=$((tries + 1))
    start_rank0 || status=$?
    if [[ -n $resume_pid ]]; then kill "$resume_pid" 2>/dev/null || true; fi
    resume_pid=""
    if ((status == 0)) && [[ $stop_requested == false ]]; then
      rm -f "$saved/$MC_STOPPED_QUEUES_FILE" # a clean stop saved the queues as they are
    fi
    if ((status == 0 || SECONDS - started >= ${MC_RESTORE_GRACE:?})) || [[ $stop_requested == true ]]; then
      return "$status"
    fi
    ((tries < ${MC_RESTORE_TRIES:?})) || break
    log "the saved instance did not start (status $status, try $tries/$MC_RESTORE_TRIES); again in ${MC_RESTORE_PAUSE:?}s"
    pause "$MC_RESTORE_PAUSE"
    if [[ $stop_requested == true ]]; then return "$STOPPED"; fi
  done
  kept="$saved.failed-$(date +%Y%m%dT%H%M%S)"
  if ! { mv "$saved" "$kept" && mkdir -p "$saved"; }; then die "cannot move the saved state $saved aside"; fi
  log "the saved instance did not start in $tries tries (status $status); it is kept in $kept (inspect it" \
    "with 'flux start --recovery=$kept'); starting a new, empty instance"
  start_rank0
}

# The lock is a file beside the statedir (moving a broken state aside keeps it), taken with flock: the
# kernel releases it when its holders die, and NFSv4 when their lease ends. A replacement whose
# predecessor is still stopping waits for it, in the background so that SIGTERM ends the wait.
hold_saved_instance() {
  local lock=$1.lock waiter
  command -v flock >/dev/null || die "stateVolume needs the flock command (util-linux) in the image"
  exec {state_lock}>>"$lock" || die "cannot open $lock"
  flock -n "$state_lock" && return 0
  log "waiting up to ${MC_STATE_LOCK_WAIT:?}s for the broker that still holds $1 (rank 0's previous pod, still" \
    "stopping) to let go of it"
  flock -w "$MC_STATE_LOCK_WAIT" "$state_lock" &
  waiter=$!
  if ! wait "$waiter"; then
    kill "$waiter" 2>/dev/null || true
    [[ $stop_requested == true ]] && return 0
    die "another broker still holds $1 after ${MC_STATE_LOCK_WAIT}s: not starting a second one on it"
  fi
  log "the saved instance is free"
}
