# shellcheck shell=bash disable=SC2154 # the entrypoint's variables
# A worker's broker: the loop that starts it, again and again while rank 0 is replaced
# (start_worker), and what runs beside each of its brokers once it answers: the undrain of its rank
# (undrain_rank) and the watch of its link to rank 0 (watch_parent_link). Sourced by entrypoint.sh, whose
# variables and functions (run_broker, end_restart_step, readiness.sh's await_broker) it uses.

# Workers run a broker with no program, and Flux's rc1 and rc3 through worker_rc.sh (MC_WORKER_RC: unless
# the stack names an rc of its own): the same modules without modprobe's Python where that is all Flux
# would do (MC_WORKER_MODULES: empty where the stack's broker config could change it). Where R lists no
# GPUs, a worker's broker scans its node without hwloc's I/O discovery (the PCI, OpenCL and GL plugins,
# linuxio's devices): most of its topology scan, on every worker's way into the instance, and nothing
# there uses it (R comes from rank 0; a child instance checks only cores against it). Its jobs' tasks get
# their submitters' environment, not the broker's. A worker that starts before rank 0 is reachable may
# exit early: retry with a short, bounded backoff. Exit 0 means the instance shut down, which ends this
# pod's work, unless it was marked to rejoin: by rank 0 as its pod stopped, or by the worker above it in
# Flux's tree, whose stop takes it down too (stopping.sh). The mark is for the broker that was running
# when it was written, and is taken when that broker ends, however it ends: a rank 0 killed in its
# hand-over marks the workers and never stops them, and a mark kept past that would make the worker rejoin
# when the replacement's instance shuts down for good. A broker that had joined and then fails lost its
# rank 0 (killed; or silent for [heartbeat] timeout). Either way, it starts again at once, with a fresh
# budget, and does not give up for MC_REJOIN_WAIT seconds, however many tries it takes, while the
# replacement comes (after the Job controller's back-off, which grows with each lost pod).
start_worker() {
  local -a options broker=("$flux" start)
  local attempt=1 delay=1 status rejoin_until=0 marked rejoin_wait=${MC_REJOIN_WAIT:?}
  broker_options options
  if [[ ${MC_WORKER_RC:?} == true ]]; then
    options+=("-Sbroker.rc1_path=bash $run_config/worker_rc.sh 1" "-Sbroker.rc3_path=bash $run_config/worker_rc.sh 3")
  fi
  if [[ -z $MC_GPU_IDS ]]; then broker=(env HWLOC_COMPONENTS=-linuxio HWLOC_PLUGINS_PATH=/nonexistent "${broker[@]}"); fi
  while :; do
    status=0
    # At each start (a rank 0 restarted from its last checkpoint may have the drain again), the undrain
    # beside the watch, not before it: an undrain that cannot reach rank 0 (a network cut just as the
    # broker came up) tries again until the broker ends, and the watch is what ends a broker that lost
    # its parent. Behind the undrain, the watch never started, and the broker hung, Ready (found by the
    # cut-off test on a kary:2 tree, one run in three). The step waits for its undrain, so that ending
    # the step ends the undrain too.
    { await_broker; undrain_rank & watch_parent_link; wait; } &
    # shellcheck disable=SC2034 # ended by end_restart_step (entrypoint.sh)
    restart_step_pid=$!
    run_broker "${broker[@]}" "${options[@]}" || status=$?
    end_restart_step
    marked=false
    if [[ -e $rejoin_mark ]]; then
      rm -f "$rejoin_mark"
      marked=true
    fi
    if [[ $stop_requested == true ]]; then return "$STOPPED"; fi
    if ((status == 0)) && [[ $marked == true ]]; then
      log "the pod of rank 0, or of the worker above this one in Flux's tree, went away: rejoining when its" \
        "replacement is up"
      attempt=1 delay=1 rejoin_until=$((SECONDS + rejoin_wait))
      continue
    fi
    if ((status == 0)); then
      log "the instance shut down"
      return 0
    fi
    if [[ $broker_was_ready == true ]]; then # it had joined: rank 0 went away unannounced (killed)
      log "broker exited with status $status after it had joined the instance: rejoining rank 0's replacement"
      attempt=1 delay=1 rejoin_until=$((SECONDS + rejoin_wait))
      continue # at once: most often rank 0's replacement turned it away, so it is up
    fi
    if ((attempt >= ${MC_WORKER_RETRIES:?} && SECONDS >= rejoin_until)); then
      log "broker exited with status $status; giving up after $attempt tries"
      return "$status"
    fi
    log "broker exited with status $status; try $((attempt + 1))/$MC_WORKER_RETRIES in ${delay}s"
    pause "$delay"
    if [[ $stop_requested == true ]]; then return "$STOPPED"; fi
    attempt=$((attempt + 1))
    delay=$((delay < 8 ? delay * 2 : 10))
  done
}

# A worker watches its broker's link to rank 0 in the broker's log (`flux dmesg --follow`: one process,
# which waits for the broker to log), from when the broker is up until it ends. Three cases:
# - The link came back after it was closed (the overlay's socket events, broker.toml's tbon.zmqdebug):
#   the broker says something to rank 0 at once. A parent (rank 0, or the worker above this one in a
#   deeper tree) that was killed and replaced does not know this broker, and turns it away as soon as it
#   hears from it; the broker then exits, and the entrypoint starts it again to join the replacement.
#   Left alone, the broker says nothing until Flux's next keepalive, up to 10 s after the replacement is
#   up, while every job that needs all the nodes waits. A parent that is still the same one just answers.
# - The broker missed messages from rank 0: it is killed, to be started again as after any loss of its
#   parent. Flux's overlay logs "lost event(s)" when the TCP connection to the parent was closed during a
#   network cut of tbon.tcp_user_timeout (20 s) or more and the connection that replaced it lost what was
#   in flight: requests too, which nothing resends. A job's launch lost that way held the job, and its
#   nodes, for good (found by the soak on the real node). Once this broker is gone, rank 0 fails what it
#   still awaits from this rank.
# - The broker lost its parent (turned away by it, or no heartbeat for [heartbeat] timeout): it leaves
#   the instance, and is killed to leave at once. Flux's own way out waits, in the broker's shutdown,
#   for a goodbye from every broker below it in the tree, and one that a network cut took away never
#   sends it: a worker with workers below it then hung there for good, Ready, and turning them away
#   (found by the soak on a kary:2 tree). The brokers below see their parent gone and start again.
watch_parent_link() {
  local -x FLUX_URI=$local_uri
  local line closed=false
  while IFS= read -r line; do
    case $line in
      *"parent sockevent "*" disconnected"*) closed=true ;;
      *"parent sockevent "*" handshake succeeded"*)
        [[ $closed == true ]] || continue
        closed=false
        log "the link to the parent broker is back: pinging rank 0 through it, so that a parent that was" \
          "replaced turns this broker away at once"
        bounded "$flux" ping --count=1 0 >/dev/null 2>&1 &
        ;;
      *"overlay.err"*"lost event"*)
        kill_broker "the broker missed messages from rank 0 (${line##*: }): restarting it, so that rank 0" \
          "gives up what it still awaits from this rank"
        return 0
        ;;
      *"overlay.crit"*" sent disconnect control message"* | *"overlay.crit"*": disconnecting: "*)
        kill_broker "the broker lost its parent (${line##*: }): ending it at once, so that it does not wait" \
          "for brokers below it that are gone"
        return 0
        ;;
    esac
  done < <("$flux" dmesg --follow 2>/dev/null)
}

# The running broker killed (SIGKILL), with the log line given, and every process under it: start_worker
# starts it again. Flux runs each rc script and job shell in a process group of its own, so no group
# signal reaches them, and they outlive a killed broker. An rc3 left running talks to the next broker,
# whose socket has the same path, and removed modules that its rc1 had just loaded: without its content
# module, a worker with a worker below it left the jobs launched there unable to start (found by the
# soak on a kary:2 tree). A job shell left running keeps its tasks on a node that Flux gives to others.
kill_broker() {
  local broker
  read -r broker <"$state/broker.pid" || return 0
  log "$@"
  kill_tree "$broker"
}

# This pod's predecessor drained the rank as it stopped, or the worker above it in Flux's tree did, as
# its own pod stopped (leave_instance): undrained once this broker answers, unless it was drained for
# another reason since. Run beside each of a worker's brokers (a rank 0 restarted from its last
# checkpoint may hold the drain again); the mark is read with a C command, and Python's `flux resource`
# runs only where there is one. The read of the mark is tried again until it gets an answer: where no
# readiness probe runs, the broker's socket is there before it is in its instance; and rank 0 may be out
# of reach (a cut), until the broker ends.
undrain_rank() {
  local -x FLUX_URI=$local_uri
  local mark note said reason
  mark=$(drain_mark)
  until said=$("$flux" kvs get "$mark" 2>&1); do
    if [[ $said == *"$mark: No such file or directory"* ]]; then return 0; fi
    nap 0.2
    await_broker # asks again every 0.2 s once the probe found the broker up, else once a second
  done
  note=${MC_NODE_STOP_NOTE//\{rank\}/$said} # the mark names the rank whose pod stopped
  reason=$("$flux" resource drain -n -i "$rank" -o '{reason}') || return 1
  if [[ $reason == "$note" ]]; then
    "$flux" resource undrain "$rank" || return 1
    log "undrained this rank, drained when the previous pod of rank $said stopped"
  fi
  "$flux" kvs unlink "$mark" >/dev/null
}

# The KVS key of the drain mark of rank $1 (default: this one): written by a worker that leaves the
# instance (leave_instance, stopping.sh), read by the rank's next broker (undrain_rank).
drain_mark() {
  printf '%s.%s' "${MC_DRAIN_MARKS:?}" "${1:-$rank}"
}
