#!/usr/bin/env bash
# Prepares the instance for a resize: `pulumi up` runs it in rank 0's container (the Kubernetes exec
# API) before it changes the Job (flux_minicluster/cluster/scale.py).
#
# Usage: resize.sh FROM TO POLICY TIMEOUT
#
# Shrink: before Kubernetes removes the pods of ranks TO..FROM-1, no new work may land on them
# (drain), and the work on them ends: it finishes (POLICY wait) or is cancelled (POLICY cancel), within
# TIMEOUT seconds. If it does not, the shrink is called off: the ranks drained here are undrained
# (ranks drained before keep their reason) and the status is MC_CALLED_OFF. A grow undrains the ranks
# that come back. Flux selects the ranks (`-i`); this script never parses an idset.
# Its lines go to the caller and to rank 0's log (MC_LOG_SINK, the container's own stderr).

set -o pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "${MC_RUN_CONFIG_DIR:?}/lib.sh"
rank=0
use_flux_view
export FLUX_URI=$local_uri

say() {
  local line="${MC_LOG_PREFIX:?}[rank 0]: $*"
  printf '%s\n' "$line" >&2
  if [[ -w ${MC_LOG_SINK:?} ]]; then printf '%s\n' "$line" >>"$MC_LOG_SINK" 2>/dev/null || true; fi
}

# The drained ranks among RANKS, as Flux lists them in FORMAT (one line per group it tells apart).
drained() {
  "$flux" resource drain -n -i "$1" -o "$2"
}

# The running jobs (every user's) on RANKS, separated by spaces.
jobs_on() {
  local listing
  listing=$("$flux" jobs --user=all --filter=running -n -i "$1" --format='{id.f58}') || return 1
  printf '%s' "${listing//$'\n'/ }"
}

# The ranks this shrink drained (their reason is its own) are undrained.
undrain_ours() {
  local listing ranks reason
  listing=$(drained "$going" '{ranks} {reason}') || say "cannot list the drained ranks"
  while read -r ranks reason; do
    if [[ $reason == "$why" ]]; then "$flux" resource undrain "$ranks" || say "cannot undrain ranks $ranks"; fi
  done <<<"$listing"
}

call_off() {
  undrain_ours
  die "$1"
}

grow() {
  local listing ranks
  listing=$(drained "$going" '{ranks}') || die "cannot list the drained ranks"
  say "growing from $from to $to brokers${listing:+: undraining ranks ${listing//$'\n'/,}, drained when the cluster shrank}"
  while read -r ranks; do
    if [[ -n $ranks ]]; then "$flux" resource undrain "$ranks" || die "cannot undrain ranks $ranks"; fi
  done <<<"$listing"
}

shrink() {
  local jobs deadline
  say "shrinking from $from to $to brokers: draining ranks $going, so that no new work starts there"
  # --update: a rank drained before keeps its reason, which is how call_off tells it apart.
  "$flux" resource drain --update "$going" "$why" || die "cannot drain ranks $going"
  jobs=$(jobs_on "$going") || call_off "cannot list the running jobs"
  if [[ -z $jobs ]]; then
    say "no job runs on ranks $going"
    return 0
  fi
  if [[ $policy == cancel ]]; then
    say "cancelling the jobs running on ranks $going (shrinkPolicy cancel): $jobs"
    # shellcheck disable=SC2086 # one argument per job id
    "$flux" cancel --message="minicluster: the cluster shrank to $to brokers" $jobs || call_off "cannot cancel $jobs"
  else
    say "waiting up to ${timeout}s for the jobs running on ranks $going to finish (shrinkPolicy wait): $jobs"
  fi
  deadline=$((SECONDS + timeout))
  while jobs=$(jobs_on "$going") || call_off "cannot list the running jobs"; [[ -n $jobs ]]; do
    if ((SECONDS >= deadline)); then
      undrain_ours
      say "the shrink to $to brokers is called off: after ${timeout}s these jobs still run on ranks $going: $jobs"
      return "${MC_CALLED_OFF:?}"
    fi
    pause 2
  done
  say "the jobs on ranks $going have ended: the shrink goes ahead"
}

# The idset of the ranks FIRST..LAST.
span() {
  if (($1 == $2)); then printf '%s' "$1"; else printf '%s-%s' "$1" "$2"; fi
}

from=${1:?FROM} to=${2:?TO} policy=${3:?POLICY} timeout=${4:?TIMEOUT}
if ((to > from)); then
  going=$(span "$from" "$((to - 1))")
  grow
else
  going=$(span "$to" "$((from - 1))")
  why="minicluster: shrinking to $to brokers"
  shrink
fi
