# shellcheck shell=bash disable=SC2154 # the entrypoint's variables
# Rank 0's instance beyond one pod: restarting it from the state volume in the next pod (stopping.sh
# hands it over). Sourced by entrypoint.sh, whose variables and functions it uses.

# Where rank 0 keeps the instance's state: on the state volume if there is one (a replaced rank 0
# restarts the same instance from it), else in the pod.
statedir() {
  if ((rank == 0)) && [[ -n ${MC_STATE_VOLUME?} ]]; then
    printf '%s/%s' "$MC_STATE_VOLUME" "$MC_HOST_PREFIX"
  else
    printf '%s/content' "$state"
  fi
}

# The queues the previous rank 0 stopped when it handed over start again once this broker is up (its
# job manager has restored the saved queue by then). It waits for that without a process per look:
# lib.sh's nap until the broker's socket is there, then Flux's C `flux dmesg` (the readiness
# probe's own test), every 0.1 s; `flux queue start`, a Python command, runs only then. The note stays:
# Flux saves the queues' state with the instance only when the broker stops cleanly, so a broker
# killed later restarts with them stopped again, and its replacement must start them too. The next
# clean stop replaces the note (a hand-over) or removes it (anything else).
resume_scheduling() {
  local noted=$1/$MC_STOPPED_QUEUES_FILE queue deadline=$((SECONDS + ${MC_QUEUE_RESUME_WAIT:?}))
  local -a queues
  local -x FLUX_URI=$local_uri
  mapfile -t queues <"$noted"
  until [[ -S ${local_uri#local://} ]] && { broker_up || in_run_state; }; do
    if ((SECONDS >= deadline)); then break; fi
    nap "${MC_READY_LOOK:?}"
  done
  for queue in "${queues[@]}"; do
    until "$flux" queue start --quiet ${queue:+"$queue"} 2>/dev/null; do
      if ((SECONDS >= deadline)); then
        log "could not start scheduling again within ${MC_QUEUE_RESUME_WAIT}s: run 'flux queue start'"
        return 1
      fi
      nap 1
    done
  done
  log "scheduling started again: the previous rank 0 had stopped it when its pod went away"
}

# Only one broker at a time may restart the saved instance: this pod holds its lock from before its
# broker starts until the pod ends. A saved state the broker cannot start from (it fails
# MC_RESTORE_TRIES times, each within MC_RESTORE_GRACE seconds and before it is up, while this pod holds
# the lock) is kept aside for `flux start --recovery`, and a new, empty instance starts instead. A broker
# that was up and then fails is started again at once from its last checkpoint.
start_saved_instance() {
  local saved status tries=0 started ran kept crash_pause=0 saved_before
  saved=$(statedir)
  hold_saved_instance "$saved"
  if [[ $stop_requested == true ]]; then return "$STOPPED"; fi
  if [[ -e $saved/content.sqlite ]]; then
    log "restarting the instance saved in $saved: its queue and job history come back"
  fi
  while :; do
    saved_before=false
    if [[ -e $saved/content.sqlite ]]; then saved_before=true; fi
    if [[ -f $saved/$MC_STOPPED_QUEUES_FILE ]]; then
      resume_scheduling "$saved" &
      # shellcheck disable=SC2034 # ended by end_restart_step (entrypoint.sh)
      restart_step_pid=$!
    fi
    status=0 started=$SECONDS tries=$((tries + 1))
    # A saved instance had its workers online before: it takes jobs again once rank 0 alone is up
    # (quorum 1), and each worker rejoins as its broker comes back, as after a worker's restart. Waiting
    # for every worker again held the queue up to a second after a hand-over.
    start_rank0 "$saved_before" || status=$?
    end_restart_step
    if ((status == 0)) && [[ $stop_requested == false ]]; then
      rm -f "$saved/$MC_STOPPED_QUEUES_FILE" # a clean stop saved the queues as they are
    fi
    if ((status == 0)) || [[ $stop_requested == true ]]; then return "$status"; fi
    ran=$((SECONDS - started))
    if [[ $broker_was_ready == true ]] || ((ran >= ${MC_RESTORE_GRACE:?})); then
      # It had started from the saved state, so it crashed (killed, out of memory): start it again from its
      # last checkpoint in this pod, at once. A failed pod would wait for the Job's back-off (10 s, doubling
      # with each failure) and count against backoffLimit. A broker that keeps crashing within
      # MC_RESTORE_GRACE of its start is started again after a pause (1 s, doubling up to 10 s): no spin.
      if ((ran >= MC_RESTORE_GRACE)); then crash_pause=0; fi
      log "the broker exited with status $status after ${ran}s in the instance: restarting it from" \
        "its last checkpoint in $saved"
      if ((crash_pause > 0)); then
        log "it crashed again within ${MC_RESTORE_GRACE}s of its start: waiting ${crash_pause}s first"
        pause "$crash_pause"
        if [[ $stop_requested == true ]]; then return "$STOPPED"; fi
      fi
      crash_pause=$((crash_pause == 0 ? 1 : crash_pause < 8 ? crash_pause * 2 : 10))
      tries=0
      continue
    fi
    if [[ $saved_before == false ]]; then return "$status"; fi # a new instance that failed: nothing to keep aside
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

# Rank 0's own step in Flux's rc1 when it restarts the saved instance (MC_RESTART_RC1: restart_rc1.py
# says why), for the broker command in the array named $1: each start from a saved state gets it, the
# first of a pod and a restart after a crash alike. Flux's modprobe runs the *.py files of the rc1.d
# folder of each FLUX_MODPROBE_PATH_APPEND entry, after any the image or the stack set; the run-config
# volume is flat, so that folder is made here.
with_restart_rc1() {
  local -n command_out_=$1
  local folder=$state/modprobe
  if ! { mkdir -p "$folder/rc1.d" && cp "$run_config/${MC_RESTART_RC1:?}" "$folder/rc1.d/"; }; then
    die "cannot put $MC_RESTART_RC1 into $folder/rc1.d"
  fi
  command_out_=(env "FLUX_MODPROBE_PATH_APPEND=${FLUX_MODPROBE_PATH_APPEND:+$FLUX_MODPROBE_PATH_APPEND:}$folder"
    "${command_out_[@]}")
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
