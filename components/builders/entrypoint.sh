#!/usr/bin/env bash
# MiniCluster broker entrypoint: the same script runs in every pod, for every rank and mode.
#
# It is static: the Job configures it through MC_* environment variables and through files mounted
# beside it (MC_RUN_CONFIG_DIR): command.args (one argument per line), submit.flags (one per line),
# and the optional hooks init.sh, pre.sh and post.sh.
#
# Usage: entrypoint.sh                 start this pod's broker
#        entrypoint.sh --in-instance   (internal) rank 0's initial program: batch, interactive, RESTful API
#        entrypoint.sh --ready         the readiness probe: exits 0 only while this pod's broker is up
#                                      in the instance (`flux uptime` says run)
#        entrypoint.sh --resize FROM TO POLICY TIMEOUT
#                                      (run by `pulumi up` in rank 0's container) before a resize: drain
#                                      the ranks that go, or undrain the ranks that come back
#
# The current size is not in the pod template (a resize would replace the Job): each broker reads it,
# and the quorum, at start from MC_SCALE_DIR, a ConfigMap that a resize rewrites in place.
#
# Stopping: Kubernetes sends SIGTERM to this script (the container's first process); it is passed to
# the broker at once, and the pod exits 143 (never 0: a Job does not rerun a succeeded index). When
# rank 0 is told to stop, it first marks every worker to rejoin its replacement, so that the workers'
# brokers, which exit 0 when the instance shuts down, do not complete their pods, and stops scheduling,
# so that no queued job starts on the nodes that cancelling the running jobs frees.

set -o pipefail
if [[ ${MC_STRICT:-false} == true ]]; then set -euo pipefail; fi
if [[ ${MC_DEBUG:-false} == true ]]; then set -x; fi

flux=${MC_FLUX:-flux}
run_config=${MC_RUN_CONFIG_DIR:?MC_RUN_CONFIG_DIR must name the directory of command and hook files}
state=${MC_STATE_DIR:?MC_STATE_DIR must name a writable directory}
rank=${MC_RANK:-} # set by find_rank, and inherited by rank 0's initial program (--in-instance)
rejoin_mark=$state/rejoin # written on every rank (flux exec) by a rank 0 that is going away
local_uri=local://$state/run/local # where this pod's broker listens (its FLUX_URI)
broker_pid=""
resume_pid="" # the background step that starts scheduling again after a hand-over
state_lock="" # the descriptor of the saved instance's lock (rank 0 with a state volume)
broker_was_ready=false # the last broker was up in its instance (the readiness probe said so)
stop_requested=false
readonly STOPPED=143 # 128 + SIGTERM


log() {
  if [[ ${MC_QUIET:-false} != true ]]; then printf 'minicluster[rank %s]: %s\n' "${rank:-?}" "$*" >&2; fi
}

die() {
  printf 'minicluster[rank %s]: error: %s\n' "${rank:-?}" "$*" >&2
  exit 1
}

# Lines of a mounted file into the named array; a missing file is an empty list.
# (Namerefs get names no caller uses: `local -n x=x` is a circular reference.)
read_lines() {
  local -n lines_out_=$1
  lines_out_=()
  # shellcheck disable=SC2034 # a nameref: this fills the caller's array
  if [[ -f $run_config/$2 ]]; then mapfile -t lines_out_ <"$run_config/$2"; fi
}

# Hooks are user shell snippets. Under strict logging they run strict too, and a failure stops the pod.
run_hook() {
  local hook=$run_config/$1.sh status=0
  [[ -f $hook ]] || return 0
  log "running the $1 hook"
  if [[ ${MC_STRICT:-false} == true ]]; then
    bash -euo pipefail "$hook" || status=$?
    if ((status != 0)); then die "the $1 hook failed with status $status"; fi
  else
    bash "$hook" || log "the $1 hook failed with status $? (continuing; set logging.strict to stop)"
  fi
}

# Flux copied in by the flux-view init container (MC_FLUX_VIEW): appended to the paths, so that the
# application image's own software wins where both have it.
use_flux_view() {
  local view=${MC_FLUX_VIEW:-} site
  [[ -n $view ]] || return 0
  export PATH="$PATH:$view/view/bin"
  export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$view/view/lib"
  for site in "$view"/view/lib/python3*/site-packages; do
    if [[ -d $site ]]; then export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$site"; fi
  done
  # The view's files link into /opt/software, which the init container could only copy alongside
  # (once, at the pod's start: the probe finds them there).
  if [[ ${1:-} != --paths-only && -d $view/software ]]; then
    if ! { mkdir -p /opt/software && cp -R "$view/software/." /opt/software/; }; then
      log "could not restore /opt/software from the flux view (not root?); view programs may fail"
    fi
  fi
}

# The rank is this pod's position in the hostlist <prefix>-[0-(max_size-1)]: the number after the prefix.
find_rank() {
  local host=${HOSTNAME%%.*} index
  index=${host#"${MC_HOST_PREFIX}-"}
  if [[ $index == "$host" || ! $index =~ ^(0|[1-9][0-9]*)$ ]] || ((index >= MC_MAX_SIZE)); then
    die "hostname '$host' is not in the hostlist $MC_HOSTLIST"
  fi
  if [[ ${JOB_COMPLETION_INDEX:-} != "$index" ]]; then
    die "hostname '$host' says rank $index but JOB_COMPLETION_INDEX is '${JOB_COMPLETION_INDEX:-unset}'"
  fi
  rank=$index
  export MC_RANK=$rank
}

# The current size (MC_SIZE) and quorum (MC_QUORUM, may be empty), exported for rank 0's program.
read_scale() {
  local scale=${MC_SCALE_DIR:?MC_SCALE_DIR must name the directory of the size and quorum files}
  [[ -r $scale/size ]] || die "cannot read the current size from $scale/size"
  MC_SIZE=$(<"$scale/size") MC_QUORUM=""
  if [[ -r $scale/quorum ]]; then MC_QUORUM=$(<"$scale/quorum"); fi
  [[ $MC_SIZE =~ ^[1-9][0-9]*$ ]] || die "$scale/size holds '$MC_SIZE', not a size"
  export MC_SIZE MC_QUORUM
}

# Flux refuses more nodes than tasks: spread over every node only when there is a task for each.
task_layout() {
  local -n layout_out_=$1
  # shellcheck disable=SC2034 # a nameref: this fills the caller's array
  if ((${MC_TASKS:-1} >= MC_SIZE)); then
    layout_out_=(-N"$MC_SIZE" -n"${MC_TASKS:-1}")
  else
    layout_out_=(-n"${MC_TASKS:-1}")
  fi
}

# The broker refuses a certificate others can read, and the Secret mount is read-only: copy it privately.
prepare_state() {
  mkdir -p "$state/run" "$(statedir)" || die "cannot create $state and $(statedir)"
  rm -f "$rejoin_mark" # a mark from this container's previous run is not for this one
  (umask 077 && cp "$MC_CURVE_CERT_SOURCE" "$state/curve.cert") || die "cannot copy $MC_CURVE_CERT_SOURCE"
  chmod 0600 "$state/curve.cert"
  # Every host gets this pod's cores and GPUs: the nodes of one MiniCluster are assumed alike.
  "$flux" R encode --hosts="$MC_HOSTLIST" --local >"$state/R" || die "flux R encode failed"
}

broker_options() {
  local -n options_out_=$1
  local -a attributes
  options_out_=(
    "-o,--config-path=$MC_BROKER_CONFIG_DIR"
    "-Stbon.connect_timeout=$MC_CONNECT_TIMEOUT"
    "-Srundir=$state/run"
    "-Sstatedir=$(statedir)"
    "-Slocal-uri=$local_uri"
    "-Slog-stderr-level=$MC_LOG_LEVEL"
    "-Slog-stderr-mode=local"
  )
  if [[ -n ${MC_QUORUM:-} ]]; then options_out_+=("-Sbroker.quorum=$MC_QUORUM"); fi
  if [[ -n ${MC_TOPOLOGY:-} ]]; then options_out_+=("-Stbon.topo=$MC_TOPOLOGY"); fi
  read_lines attributes broker.attributes
  if ((${#attributes[@]})); then options_out_+=("${attributes[@]/#/-S}"); fi
}

# Where rank 0 keeps the instance's state: on the state volume if there is one (a replaced rank 0
# restarts the same instance from it), else in the pod.
statedir() {
  if ((rank == 0)) && [[ -n ${MC_STATE_VOLUME:-} ]]; then
    printf '%s/%s' "$MC_STATE_VOLUME" "$MC_HOST_PREFIX"
  else
    printf '%s/content' "$state"
  fi
}

# The broker runs in the background so that this shell can take SIGTERM while it works. It gets what
# a foreground command would: bash ignores SIGINT and SIGQUIT in a background command and gives it
# /dev/null as stdin, and the broker and everything it runs would inherit that.
run_broker() {
  local status=0
  (
    trap - INT QUIT
    exec "$@"
  ) <&0 &
  broker_pid=$!
  printf '%s\n' "$broker_pid" >"$state/broker.pid"
  wait "$broker_pid" || status=$?
  while kill -0 "$broker_pid" 2>/dev/null; do # a signal interrupted the wait: the broker is still stopping
    status=0
    wait "$broker_pid" || status=$?
  done
  broker_was_ready=false
  if [[ -e $state/ready ]]; then broker_was_ready=true; fi
  rm -f "$state/broker.pid" "$state/ready"
  broker_pid=""
  return "$status"
}

# The readiness probe. Until the broker is up it asks Flux; then it remembers which broker said so,
# and asks only whether that broker still runs (run_broker forgets it when it exits).
ready() {
  local pid="" uptime
  if [[ -r $state/broker.pid ]]; then pid=$(<"$state/broker.pid"); fi
  [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null || return 1
  if [[ -r $state/ready && $(<"$state/ready") == "$pid" ]]; then return 0; fi
  uptime=$(FLUX_URI=$local_uri "$flux" uptime 2>/dev/null) || return 1
  [[ " $uptime " == *" run "* ]] || return 1
  printf '%s\n' "$pid" >"$state/ready"
}

on_stop() {
  if [[ $stop_requested == true ]]; then return; fi
  stop_requested=true
  log "told to stop (SIGTERM)${broker_pid:+: stopping the broker}"
  if [[ -n $broker_pid ]] && [[ $rank == 0 ]]; then hand_over_rank0; fi
  if [[ -n $resume_pid ]]; then kill "$resume_pid" 2>/dev/null || true; fi
  if [[ -n $broker_pid ]]; then kill -TERM "$broker_pid" 2>/dev/null || true; fi
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
  stop_scheduling
  log "cancelling the running jobs: rank 0's pod is stopping"
  bounded "$flux" cancel --user=all --states=running --message="$MC_HAND_OVER_NOTE" ||
    log "could not cancel the running jobs"
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
    log "scheduling was stopped already (flux queue stop): it stays stopped"
    return
  fi
  printf '%s\n' "${started[@]}" >"$(statedir)/$MC_STOPPED_QUEUES_FILE"
  log "stopping scheduling, so that no queued job starts on the nodes the cancel frees"
  for queue in "${started[@]}"; do
    bounded "$flux" queue stop --quiet --message="$MC_HAND_OVER_NOTE" ${queue:+"$queue"} ||
      log "could not stop scheduling${queue:+ of queue $queue}"
  done
}

# The queues the previous rank 0 stopped when it handed over start again once this broker answers
# (its job manager has restored the saved queue by then).
resume_scheduling() {
  local noted=$1/$MC_STOPPED_QUEUES_FILE queue deadline=$((SECONDS + MC_QUEUE_RESUME_WAIT))
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
  rm -f "$noted"
  log "scheduling started again: the previous rank 0 had stopped it when its pod went away"
}

# A command that may take 5 s at most, where the image has `timeout` (the grace period bounds it anyway).
bounded() {
  if command -v timeout >/dev/null; then timeout 5 "$@"; else "$@"; fi
}

# A sleep that SIGTERM cuts short.
pause() {
  local pid
  sleep "$1" &
  pid=$!
  wait "$pid" || kill "$pid" 2>/dev/null || true
}

# Rank 0: the instance's initial program decides the mode. flux start returns that program's status.
start_rank0() {
  local -a options command flags program layout
  broker_options options
  task_layout layout
  read_lines command command.args
  read_lines flags submit.flags
  if [[ -n ${MC_RESTFUL_PORT:-} ]]; then
    program=(bash "${BASH_SOURCE[0]}" --in-instance)
  elif ((${#command[@]} == 0)); then
    log "persistent instance: no initial program; stop it with 'flux shutdown'"
    program=(-Sbroker.rc2_none=1)
  else
    case $MC_MODE in
      submit) program=("$flux" submit --watch "${layout[@]}" "${flags[@]}" "${command[@]}") ;;
      launcher) program=("${command[@]}") ;;
      batch | interactive) program=(bash "${BASH_SOURCE[0]}" --in-instance) ;;
      *) die "unknown MC_MODE '$MC_MODE'" ;;
    esac
  fi
  run_broker "$flux" start "${options[@]}" "${program[@]}"
}

# With a state volume, rank 0 restarts the instance it finds there, and only one broker at a time
# may: this pod holds the saved instance's lock from before its broker starts until the pod ends. A
# saved state the broker cannot start from (it fails MC_RESTORE_TRIES times, each within
# MC_RESTORE_GRACE seconds, while this pod holds the lock) is kept aside for `flux start --recovery`,
# and a new, empty instance starts instead.
start_rank0_with_saved_state() {
  local saved status tries=0 started kept
  if [[ -z ${MC_STATE_VOLUME:-} ]]; then
    start_rank0
    return
  fi
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
    if ((status == 0 || SECONDS - started >= MC_RESTORE_GRACE)) || [[ $stop_requested == true ]]; then
      return "$status"
    fi
    ((tries < MC_RESTORE_TRIES)) || break
    log "the saved instance did not start (status $status, try $tries/$MC_RESTORE_TRIES); again in ${MC_RESTORE_PAUSE}s"
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
  log "waiting up to ${MC_STATE_LOCK_WAIT}s for the broker that still holds $1 (rank 0's previous pod, still" \
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

# Workers run a broker with no program. A worker that starts before rank 0 is reachable may exit
# early: retry with a short, bounded backoff. Exit 0 means the instance shut down, which ends this
# pod's work, unless rank 0 marked it to rejoin rank 0's replacement. A broker that had joined and
# then fails lost its rank 0 (killed, so it could not mark anyone): it retries with a fresh budget.
start_worker() {
  local -a options
  local attempt=1 delay=1 status
  broker_options options
  while :; do
    status=0
    run_broker "$flux" start "${options[@]}" || status=$?
    if [[ $stop_requested == true ]]; then return "$STOPPED"; fi
    if ((status == 0)) && [[ -e $rejoin_mark ]]; then
      rm -f "$rejoin_mark"
      log "rank 0's pod went away: rejoining when its replacement is up"
      attempt=1 delay=1
      continue
    fi
    if ((status == 0)); then
      log "the instance shut down"
      return 0
    fi
    if [[ $broker_was_ready == true ]]; then # it had joined: rank 0 went away unannounced (killed)
      log "broker exited with status $status after it had joined the instance: rejoining rank 0's replacement"
      attempt=0 delay=1
    fi
    if ((attempt >= MC_WORKER_RETRIES)); then
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

# The Flux RESTful API as rank 0's program: it submits into this instance until `flux shutdown`.
run_restful_api() {
  local dir=$MC_RESTFUL_DIR
  if [[ ! -f $dir/app/main.py ]]; then
    log "installing the Flux RESTful API ($MC_RESTFUL_REPOSITORY, $MC_RESTFUL_BRANCH) into $dir"
    git clone --quiet --depth 1 --branch "$MC_RESTFUL_BRANCH" "https://github.com/$MC_RESTFUL_REPOSITORY" "$dir" ||
      die "could not clone $MC_RESTFUL_REPOSITORY: use an image that has the API in $dir"
    python3 -m pip install --quiet -r "$dir/requirements.txt" || die "could not install the API's requirements"
  fi
  cd "$dir" || die "cannot enter $dir"
  # Signs the API's access tokens: private to this server, new at every start.
  FLUX_TOKEN_SIGNING_KEY=${FLUX_TOKEN_SIGNING_KEY:-$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')}
  export FLUX_TOKEN_SIGNING_KEY
  export FLUX_NUMBER_NODES=$MC_SIZE # the size when this rank 0 started
  python3 app/db/init_db.py init || die "could not create the API's user database"
  log "the Flux RESTful API listens on port $MC_RESTFUL_PORT"
  exec python3 -m uvicorn app.main:app --host=0.0.0.0 --port="$MC_RESTFUL_PORT"
}

# The batch job's script: every command line is submitted at once (they may run side by side), then
# each job is attached to in turn, so that every job's output reaches the log, in the lines' order.
# shellcheck disable=SC2016 # the $(...) and ${...} written here are the batch script's own
write_batch_script() {
  local script=$1 line quoted_flags=""
  shift
  if (($#)); then quoted_flags=$(printf '%q ' "$@"); fi
  {
    printf '#!/bin/bash\nids=()\n'
    while IFS= read -r line; do
      if [[ -n ${line// /} ]]; then printf 'ids+=("$(%q submit %s%s)")\n' "$flux" "$quoted_flags" "$line"; fi
    done <"$run_config/command.lines"
    printf 'status=0\nfor id in "${ids[@]}"; do %q job attach "$id" || status=1; done\nexit "$status"\n' "$flux"
  } >"$script"
}

# -- resizing (run in rank 0's container by `pulumi up`, through the Kubernetes exec API) -------------
# Its lines go to the caller and to rank 0's log (the stderr of the container's first process).

say() {
  local line="minicluster[rank 0]: $*"
  printf '%s\n' "$line" >&2
  local sink=${MC_LOG_SINK:-/proc/1/fd/2}
  if [[ -w $sink ]]; then printf '%s\n' "$line" >>"$sink" 2>/dev/null || true; fi
}

# An idset of the ranks FIRST..LAST.
idset() {
  if (($1 == $2)); then printf '%s' "$1"; else printf '%s-%s' "$1" "$2"; fi
}

# The ranks of the idsets given (e.g. "[2-4,7]") that fall in LO..HI, one per line.
ranks_within() {
  local lo=$1 hi=$2 idset part first last rank
  shift 2
  for idset in "$@"; do
    idset=${idset#[} idset=${idset%]}
    for part in ${idset//,/ }; do
      [[ $part =~ ^[0-9]+(-[0-9]+)?$ ]] || continue
      first=${part%-*} last=${part#*-}
      for ((rank = (first > lo ? first : lo); rank <= (last < hi ? last : hi); rank++)); do echo "$rank"; done
    done
  done
}

# The running jobs (every user's) with a rank in LO..HI, separated by spaces.
jobs_within() {
  local lo=$1 hi=$2 listing id ranks found=()
  listing=$("$flux" jobs --user=all --filter=running -n --format='{id.f58} {ranks}') || return 1
  while read -r id ranks; do
    if [[ -n $ranks && -n $(ranks_within "$lo" "$hi" "$ranks") ]]; then found+=("$id"); fi
  done <<<"$listing"
  printf '%s' "${found[*]}"
}

# The drained ranks in LO..HI, separated by commas (an idset).
drained_within() {
  local listing
  local -a ranks
  listing=$("$flux" resource drain -n -o '{ranks}') || return 1
  # shellcheck disable=SC2086 # one idset per word
  mapfile -t ranks < <(ranks_within "$1" "$2" $listing)
  local IFS=,
  printf '%s' "${ranks[*]}"
}

# The ranks in LO..HI that are not in the idset KEPT, separated by commas.
ranks_outside() {
  local -a outside=()
  local rank
  for ((rank = $1; rank <= $2; rank++)); do
    if [[ -z $(ranks_within "$rank" "$rank" "${3:-}") ]]; then outside+=("$rank"); fi
  done
  local IFS=,
  printf '%s' "${outside[*]}"
}

# Before Kubernetes removes the pods of ranks TO..FROM-1, no new work may land on them (drain), and
# the work on them ends: it finishes (POLICY wait) or is cancelled (POLICY cancel), within TIMEOUT
# seconds. If it does not, the shrink is called off: the ranks drained here are undrained (ranks
# drained before keep their reason), and the status is 3. A grow undrains the ranks that come back.
resize() {
  local from=$1 to=$2 policy=$3 timeout=$4 going fresh jobs deadline
  rank=0
  export FLUX_URI=$local_uri
  if ((to > from)); then
    going=$(drained_within "$from" "$((to - 1))") || die "cannot list the drained ranks"
    say "growing from $from to $to brokers${going:+: undraining ranks $going, drained when the cluster shrank}"
    if [[ -n $going ]]; then "$flux" resource undrain "$going" || die "cannot undrain ranks $going"; fi
    return 0
  fi
  going=$(idset "$to" "$((from - 1))")
  fresh=$(drained_within "$to" "$((from - 1))") || die "cannot list the drained ranks"
  fresh=$(ranks_outside "$to" "$((from - 1))" "$fresh")
  say "shrinking from $from to $to brokers: draining ranks $going, so that no new work starts there"
  if [[ -n $fresh ]]; then
    "$flux" resource drain "$fresh" "minicluster: shrinking to $to brokers" || die "cannot drain ranks $fresh"
  fi
  jobs=$(jobs_within "$to" "$((from - 1))") || call_off "$fresh" "cannot list the running jobs"
  if [[ -z $jobs ]]; then
    say "no job runs on ranks $going"
    return 0
  fi
  if [[ $policy == cancel ]]; then
    say "cancelling the jobs running on ranks $going (shrinkPolicy cancel): $jobs"
    # shellcheck disable=SC2086 # one argument per job id
    "$flux" cancel --message="minicluster: the cluster shrank to $to brokers" $jobs || call_off "$fresh" "cannot cancel $jobs"
  else
    say "waiting up to ${timeout}s for the jobs running on ranks $going to finish (shrinkPolicy wait): $jobs"
  fi
  deadline=$((SECONDS + timeout))
  while :; do
    jobs=$(jobs_within "$to" "$((from - 1))") || call_off "$fresh" "cannot list the running jobs"
    [[ -n $jobs ]] || break
    if ((SECONDS >= deadline)); then
      undrain_quietly "$fresh"
      say "the shrink to $to brokers is called off: after ${timeout}s these jobs still run on ranks $going: $jobs"
      return 3
    fi
    pause 2
  done
  say "the jobs on ranks $going have ended: the shrink goes ahead"
}

# A shrink that cannot go on: the ranks it drained (an idset) are undrained, and it stops with MESSAGE.
call_off() {
  undrain_quietly "$1"
  die "$2"
}

undrain_quietly() {
  if [[ -n $1 ]]; then "$flux" resource undrain "$1" || say "cannot undrain ranks $1"; fi
}

# Inside the instance (rank 0's initial program) for the modes that need more than one command.
in_instance() {
  local -a command flags
  if [[ -n ${MC_RESTFUL_PORT:-} ]]; then run_restful_api; fi
  read_lines flags submit.flags
  case $MC_MODE in
    batch)
      local script=$state/batch.sh jobid
      write_batch_script "$script" "${flags[@]}"
      # Output to the KVS, not flux-<jobid>.out: attaching streams it into this pod's log.
      jobid=$("$flux" batch --output=kvs -N"$MC_SIZE" "$script") || die "flux batch failed"
      log "batch job $jobid submitted"
      if [[ -n ${MC_BATCH_OUTPUT:-} ]]; then
        log "keeping a copy of its output in $MC_BATCH_OUTPUT"
        "$flux" job attach "$jobid" 2>&1 | tee -a "$MC_BATCH_OUTPUT"
      else
        "$flux" job attach "$jobid"
      fi
      ;;
    interactive)
      local -a layout
      read_lines command command.args
      task_layout layout
      "$flux" submit --watch "${layout[@]}" "${flags[@]}" "${command[@]}" ||
        log "the command exited with status $?"
      log "interactive: the instance stays up; stop it with 'flux shutdown'"
      while :; do sleep 3600; done
      ;;
    *) die "--in-instance is for batch and interactive modes, not '$MC_MODE'" ;;
  esac
}

main() {
  if [[ ${1:-} == --ready ]]; then
    use_flux_view --paths-only
    ready
    return
  fi
  use_flux_view
  if [[ ${1:-} == --in-instance ]]; then
    if [[ -z ${MC_SIZE:-} ]]; then read_scale; fi # inherited from rank 0's start, normally
    in_instance
    return
  fi
  if [[ ${1:-} == --resize ]]; then
    shift
    resize "$@"
    return
  fi
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
  run_hook pre
  local status=0 started=$SECONDS
  if [[ $stop_requested == true ]]; then
    status=$STOPPED
  elif ((rank == 0)); then
    start_rank0_with_saved_state || status=$?
  else
    start_worker || status=$?
  fi
  if [[ $stop_requested == true ]]; then status=$STOPPED; fi
  if [[ ${MC_TIMED:-false} == true ]]; then log "the broker ran for $((SECONDS - started))s"; fi
  export MC_EXIT_STATUS=$status
  run_hook post
  log "exiting with status $status"
  return "$status"
}

main "$@"
