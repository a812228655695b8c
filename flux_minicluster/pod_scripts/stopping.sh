# shellcheck shell=bash disable=SC2154 # the entrypoint's variables
# What a broker does when its pod is told to stop, before its broker stops: rank 0 hands the instance
# over; a worker leaves it (and its next pod undoes the drain: worker.sh). Sourced by entrypoint.sh,
# whose variables it uses.

# SIGTERM (the trap): rank 0 hands the instance over, a worker leaves it (drains its rank, ends the jobs
# it runs); then the broker stops cleanly.
on_stop() {
  if [[ $stop_requested == true ]]; then return; fi
  stop_requested=true
  log "told to stop (SIGTERM)${broker_pid:+: stopping the broker}"
  end_restart_step
  [[ -n $broker_pid ]] || return 0
  if ((rank == 0)); then hand_over_rank0; else leave_instance; fi
  kill -TERM "$broker_pid" 2>/dev/null || true
}

# A worker leaves the instance in order, and with it the brokers below it in Flux's tree (tbon.topo:
# kary:32 by default, so from 34 brokers on), which Flux shuts down with it: each of those exits 0, as
# at the instance's end, so each is first marked to rejoin this rank's replacement, rather than
# complete its pod, which the Job would then never run again. Every leaving rank is drained first: the
# brokers take a moment to stop, and a job the scheduler starts there meanwhile would fail. (Only a
# broker that is up in the instance: the readiness probe said so, or, if it has not run since the
# broker started, the broker's own log.) Then the jobs on those ranks end, while this broker can still
# tell rank 0 that their shells there have: stopped with a job's shell still running, a broker leaves
# rank 0 waiting for that shell, and Flux (0.88) holds the job, and every node of it, 5 x [exec]
# kill-timeout (25 s by default) before it gives up. Each such job gets a node failure, on which Flux
# signals its tasks (SIGTERM, then SIGKILL after kill-timeout). A mark in the KVS per rank, naming the
# rank whose pod stopped, has each rank's next broker undrain it. (Killing the broker instead, a lost
# node, ends the jobs at once too, but a rank 0 stopping at the same moment then restarts with that
# rank failing the jobs it places there.)
leave_instance() {
  local -a jobs leaving marks
  local -x FLUX_URI=$local_uri
  local note=${MC_NODE_STOP_NOTE//\{rank\}/$rank} deadline ranks leaving_rank
  broker_up || in_run_state || return 0
  leaving_ranks leaving
  ranks=$(IFS=,; printf '%s' "${leaving[*]}")
  if ((${#leaving[@]} > 1)); then mark_below "${ranks#*,}"; fi
  for leaving_rank in "${leaving[@]}"; do marks+=("$(drain_mark "$leaving_rank")=$rank"); done
  # --update: a rank drained before (a shrink) keeps its reason, and stays drained after the replacement.
  if ! { bounded "$flux" kvs put "${marks[@]}" &&
    bounded "$flux" resource drain --update "$ranks" "$note"; } >/dev/null; then
    log "could not drain ranks $ranks: a job may start there as the brokers stop"
  fi
  mapfile -t jobs < <(jobs_on "${leaving[@]}")
  ((${#jobs[@]})) || return 0
  log "ending the jobs on ranks $ranks before the brokers stop, so that their other nodes are freed at once"
  bounded "$flux" job raise --type=node-failure --message="$note" "${jobs[@]}" >/dev/null 2>&1 ||
    log "could not end every one of them: Flux frees their other nodes when it gives up on these ranks"
  deadline=$((SECONDS + ${MC_JOB_END_WAIT:?}))
  while [[ -n $(jobs_on "${leaving[@]}") ]] && ((SECONDS < deadline)); do sleep 0.1; done
}

# This rank, then the ranks below it in Flux's tree that are in the instance, into the named array:
# this broker's own view of its subtree (`flux overlay status`, a C command).
leaving_ranks() {
  local -n ranks_out_=$1
  local line
  ranks_out_=("$rank")
  while IFS= read -r line; do
    if [[ $line =~ ^([0-9]+)\ .*:\ (full|partial|degraded)$ ]] && ((BASH_REMATCH[1] != rank)); then
      ranks_out_+=("${BASH_REMATCH[1]}")
    fi
  done < <(bounded "$flux" overlay status --rank="$rank" --no-pretty --no-ghost 2>/dev/null)
}

# The brokers of IDSET, below this one, are marked to rejoin its replacement (start_worker, worker.sh).
mark_below() {
  log "marking ranks $1, below this one in Flux's tree and leaving with it, to rejoin its replacement"
  bounded "$flux" exec -r "$1" touch "$rejoin_mark" >/dev/null 2>&1 ||
    log "could not mark every one of them: those that were not will complete"
}

# The jobs that hold any of RANKS (running, or ending), one ID per line: Flux's list (`flux job list`, a
# C command: JSON, one job per line), not the shells found here, which a job allocated a moment ago has
# not started yet.
jobs_on() {
  local line id held leaving_rank
  while IFS= read -r line; do
    [[ $line =~ \"id\":\ *([0-9]+) ]] || continue
    id=${BASH_REMATCH[1]}
    [[ $line =~ \"ranks\":\ *\"([^\"]*)\" ]] || continue
    held=${BASH_REMATCH[1]}
    for leaving_rank in "$@"; do
      if in_idset "$leaving_rank" "$held"; then
        printf '%s\n' "$id"
        break
      fi
    done
  done < <(bounded "$flux" job list --user=all --states=running 2>/dev/null)
}

# Whether RANK is in IDSET, as Flux writes one: 3, or [0,2-5].
in_idset() {
  local part
  local -a parts
  IFS=, read -ra parts <<<"${2//[][]/}"
  for part in "${parts[@]}"; do
    if [[ $part == *-* ]]; then
      if (($1 >= ${part%-*} && $1 <= ${part#*-})); then return 0; fi
    elif (($1 == part)); then
      return 0
    fi
  done
  return 1
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
  # Flux saves the instance as its broker stops, in its rc3. A broker that dies there (Flux's job manager
  # crashed as it unloaded, once in the soak) restarts from its last checkpoint, up to checkpointPeriod
  # old: saved here, only what comes during the broker's own stop, a second or less, is at risk.
  bounded "$flux" kvs sync >/dev/null || log "could not save the instance before its broker stops"
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
  local -a started_queues=()
  if ! listing=$(bounded "$flux" queue status 2>/dev/null); then
    log "could not read the queues' status: scheduling goes on"
    return
  fi
  while IFS= read -r line; do
    case $line in
      "Scheduling is started") started_queues+=("") ;;
      *": Scheduling is started") started_queues+=("${line%: Scheduling is started}") ;;
    esac
  done <<<"$listing"
  if ((${#started_queues[@]} == 0)); then
    rm -f "$(statedir)/${MC_STOPPED_QUEUES_FILE:?}" # an earlier hand-over's note must not start them
    log "scheduling was stopped already (flux queue stop): it stays stopped"
    return
  fi
  printf '%s\n' "${started_queues[@]}" >"$(statedir)/${MC_STOPPED_QUEUES_FILE:?}"
  log "stopping scheduling, so that no queued job starts on the nodes the cancel frees"
  for queue in "${started_queues[@]}"; do
    bounded "$flux" queue stop --quiet --message="$MC_HAND_OVER_NOTE" ${queue:+"$queue"} ||
      log "could not stop scheduling${queue:+ of queue $queue}"
  done
}
