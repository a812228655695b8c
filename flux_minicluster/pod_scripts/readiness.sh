# shellcheck shell=bash disable=SC2154 # lib.sh's variables
# The readiness probe (entrypoint.sh --ready), whether this pod's broker has entered its instance's run
# state (stopping.sh asks too), whether the probe found it so (broker_up), and the wait for that
# (await_broker). Sourced by the entrypoint after lib.sh, never run.

# The readiness probe. Until the broker is up it asks Flux, and keeps asking for a while (MC_READY_LOOKS
# times, MC_READY_LOOK apart; also while the broker has not been started yet) before it answers no, so
# that the pod is Ready a moment after its broker is, not a probe period later; then it remembers which
# broker said so, and asks only whether that broker still runs (run_broker forgets it when it exits).
# The broker's own log says when it entered the run state: `flux uptime` would say so too, but it
# crashes (flux-core 0.88) when the instance's owner has no passwd entry, as the pods' user may not have.
ready() {
  local pid="" looks=0
  while :; do
    pid=""
    if [[ -r $state/broker.pid ]]; then pid=$(<"$state/broker.pid"); fi
    if [[ -n $pid ]]; then
      kill -0 "$pid" 2>/dev/null || return 1
      if [[ -r $state/ready && $(<"$state/ready") == "$pid" ]]; then return 0; fi
      if in_run_state; then
        printf '%s\n' "$pid" >"$state/ready"
        return 0
      fi
    fi
    looks=$((looks + 1))
    ((looks < ${MC_READY_LOOKS:?})) || return 1
    sleep "${MC_READY_LOOK:?}"
  done
}

in_run_state() {
  [[ $(FLUX_URI=$local_uri "$flux" dmesg 2>/dev/null) == *" quorum->run "* ]]
}

# The readiness probe found this pod's current broker up in the instance (read with builtins only).
broker_up() {
  local ready_pid="" broker=""
  [[ -r $state/ready && -r $state/broker.pid ]] || return 1
  read -r ready_pid <"$state/ready" && read -r broker <"$state/broker.pid" && [[ $ready_pid == "$broker" ]]
}

# Until this pod's broker answers: the readiness probe found it up or, where no probe runs, its socket
# is there (looked for once a second). It waits with lib.sh's nap, not a process per look: it runs beside
# every worker's broker during bring-up.
await_broker() {
  local looks=0
  until broker_up || { ((++looks % 5 == 0)) && [[ -S ${local_uri#local://} ]]; }; do nap 0.2; done
}
